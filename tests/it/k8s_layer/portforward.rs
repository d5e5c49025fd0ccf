//! Port-forward over the API: bytes both ways, sharing per target, Services resolved to a
//! Running pod, busy local ports refused, and a restarted pod followed.

use std::time::Duration;

use nrl::k8s::PodTarget;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::common::*;

/// Whether connecting to `addr` is refused before `timeout`: a listener closes
/// asynchronously after its last handle is dropped.
async fn refused_within(addr: std::net::SocketAddr, timeout: Duration) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if TcpStream::connect(addr).await.is_err() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn roundtrip(addr: std::net::SocketAddr, payload: &[u8]) -> Vec<u8> {
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let (mut rd, mut wr) = sock.split();
    let mut back = vec![0u8; payload.len()];
    let send = async { wr.write_all(payload).await.unwrap() };
    let recv = async {
        tokio::time::timeout(Duration::from_secs(10), rd.read_exact(&mut back))
            .await
            .expect("echo in time")
            .unwrap();
    };
    tokio::join!(send, recv);
    back
}

#[tokio::test]
async fn bytes_go_both_ways_and_forwards_are_shared() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "web", json!({"app": "web"}), &["main"]).await;
    let echo = echo_server().await;
    fake.forward_port("default", "web", 8080, echo);
    let pf = k8s
        .port_forward("default", PodTarget::Name("web".into()), 8080)
        .await
        .unwrap();
    assert!(pf.url().starts_with("http://127.0.0.1:"));
    let payload: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(roundtrip(pf.local, &payload).await, payload);
    // Several connections at once, each its own tunnel.
    let (a, b) = tokio::join!(roundtrip(pf.local, b"one"), roundtrip(pf.local, b"two"));
    assert_eq!((a.as_slice(), b.as_slice()), (&b"one"[..], &b"two"[..]));

    let again = k8s
        .port_forward("default", PodTarget::Name("web".into()), 8080)
        .await
        .unwrap();
    assert!(
        std::sync::Arc::ptr_eq(&pf, &again),
        "one listener per target"
    );
    let local = pf.local;
    drop(pf);
    drop(again);
    assert!(
        refused_within(local, Duration::from_secs(5)).await,
        "the listener stops with the last handle"
    );
}

#[tokio::test]
async fn a_service_forwards_to_a_running_pod_of_its_selector() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "api-1", json!({"app": "api"}), &["main"]).await;
    let echo = echo_server().await;
    fake.forward_port("default", "api-*", 8080, echo);
    fake.put(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "api", "namespace": "default"},
        "spec": {"selector": {"app": "api"},
                 "ports": [{"name": "http", "port": 80, "targetPort": "web"}]}}));
    let pf = k8s
        .port_forward("default", PodTarget::Service("api".into()), 80)
        .await
        .unwrap();
    assert_eq!(roundtrip(pf.local, b"via service").await, b"via service");
    let tunnels = fake.requests(|r| r.resource.as_deref() == Some("pods/portforward"));
    assert_eq!(tunnels[0].name.as_deref(), Some("api-1"));
    assert_eq!(tunnels[0].query_param("ports").as_deref(), Some("8080"));

    let err = k8s
        .port_forward("default", PodTarget::Service("api".into()), 81)
        .await
        .unwrap_err();
    assert!(
        err.message.contains("service api has no port 81"),
        "{}",
        err.message
    );
    let err = k8s
        .port_forward("default", PodTarget::Service("nope".into()), 80)
        .await
        .unwrap_err();
    assert!(
        err.message.contains("service nope not found"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_restarted_pod_is_followed() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "head-a", json!({"role": "head"}), &["main"]).await;
    let echo = echo_server().await;
    fake.forward_port("default", "head-*", 8080, echo);
    let pf = k8s
        .port_forward("default", PodTarget::Selector("role=head".into()), 8080)
        .await
        .unwrap();
    assert_eq!(roundtrip(pf.local, b"a").await, b"a");
    fake.delete("v1", "Pod", "default", "head-a", None);
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| f
            .get("v1", "Pod", "default", "head-a")
            .is_none())
            .await
    );
    running_pod(&fake, "head-b", json!({"role": "head"}), &["main"]).await;
    assert_eq!(roundtrip(pf.local, b"b").await, b"b");
    let last = fake.requests(|r| r.resource.as_deref() == Some("pods/portforward"));
    assert_eq!(last.last().unwrap().name.as_deref(), Some("head-b"));
}

#[tokio::test]
async fn a_busy_local_port_is_an_error_and_no_running_pod_is_explained() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "web", json!({"app": "web"}), &["main"]).await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let err = k8s
        .port_forward_at("default", PodTarget::Name("web".into()), 8080, port)
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains(&format!("cannot listen on 127.0.0.1:{port}"))
    );
    assert!(err.help.as_deref().unwrap().contains("--port"));
    let err = k8s
        .port_forward("default", PodTarget::Selector("app=absent".into()), 8080)
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "no Running pod matches `app=absent` in namespace `default`"
    );
}

/// Issue 14 item 7: a 403 on `pods/portforward` is an access denial naming the
/// subresource, reported when the forward is set up, instead of a reset connection the
/// Ray client would blame on RAY_ADDRESS.
#[tokio::test]
async fn a_denied_port_forward_is_an_access_denial_at_setup() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "head", json!({"role": "head"}), &["main"]).await;
    fake.deny("create", "pods/portforward", "default");
    let err = k8s
        .port_forward("default", PodTarget::Selector("role=head".into()), 8265)
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::forbidden");
    assert!(
        err.message
            .starts_with("forbidden: cannot create pods/portforward/head in namespace `default`"),
        "{}",
        err.message
    );
    assert!(
        err.help
            .as_deref()
            .unwrap()
            .contains("verb `create` on resource `pods/portforward`"),
        "{:?}",
        err.help
    );
}
