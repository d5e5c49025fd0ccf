//! Pod log streams: tail, container choice, follow, and reconnecting after a dropped
//! connection without losing or repeating lines.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nrl::k8s::{ConnectOptions, K8s, LogOptions};
use serde_json::json;

use super::common::*;

#[tokio::test]
async fn tail_and_default_container() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "p", json!({"app": "x"}), &["main", "side"]).await;
    for i in 0..5 {
        fake.append_pod_log("default", "p", Some("main"), &format!("main {i}"));
    }
    fake.append_pod_log("default", "p", Some("side"), "side 0");
    let mut lines = Vec::new();
    k8s.stream_pod_logs(
        "default",
        "p",
        &LogOptions {
            tail: Some(2),
            ..LogOptions::default()
        },
        |l| {
            lines.push(l.to_string());
            ControlFlow::Continue(())
        },
    )
    .await
    .unwrap();
    // Two containers and none named: the first one, like kubectl.
    assert_eq!(lines, ["main 3", "main 4"]);

    let mut side = Vec::new();
    k8s.stream_pod_logs(
        "default",
        "p",
        &LogOptions {
            container: Some("side".into()),
            ..LogOptions::default()
        },
        |l| {
            side.push(l.to_string());
            ControlFlow::Continue(())
        },
    )
    .await
    .unwrap();
    assert_eq!(side, ["side 0"]);

    let err = k8s
        .stream_pod_logs("default", "nope", &LogOptions::default(), |_| {
            ControlFlow::Continue(())
        })
        .await
        .unwrap_err();
    assert!(
        err.message.contains("pod nope not found"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn follow_streams_until_the_pod_ends_and_sink_can_stop_early() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "p", json!({"app": "x"}), &["main"]).await;
    fake.append_pod_log("default", "p", None, "first");
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let l2 = lines.clone();
    let k = k8s.clone();
    let follow = tokio::spawn(async move {
        k.stream_pod_logs(
            "default",
            "p",
            &LogOptions {
                follow: true,
                ..LogOptions::default()
            },
            |l| {
                l2.lock().unwrap().push(l.to_string());
                ControlFlow::Continue(())
            },
        )
        .await
    });
    assert!(
        fake.wait_until(Duration::from_secs(5), |_| lines.lock().unwrap().len() == 1)
            .await
    );
    fake.append_pod_log("default", "p", None, "second");
    assert!(
        fake.wait_until(Duration::from_secs(5), |_| lines.lock().unwrap().len() == 2)
            .await
    );
    fake.set_pod_phase("default", "p", "Succeeded");
    tokio::time::timeout(Duration::from_secs(10), follow)
        .await
        .expect("follow ends with the pod")
        .unwrap()
        .unwrap();
    assert_eq!(*lines.lock().unwrap(), ["first", "second"]);

    let mut n = 0;
    k8s.stream_pod_logs("default", "p", &LogOptions::default(), |_| {
        n += 1;
        ControlFlow::Break(())
    })
    .await
    .unwrap();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn a_dropped_follow_reconnects_without_losing_or_repeating_lines() {
    let fake = FakeK8s::start();
    running_pod(&fake, "p", json!({"app": "x"}), &["main"]).await;
    let proxy = CuttableProxy::start(fake.addr()).await;
    let dir = tempfile::tempdir().unwrap();
    let k8s = K8s::connect(&ConnectOptions {
        kubeconfig: Some(proxy.kubeconfig(&fake, dir.path())),
        ..ConnectOptions::default()
    })
    .await
    .unwrap();
    for i in 0..3 {
        fake.append_pod_log("default", "p", None, &format!("before {i}"));
    }
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let l2 = lines.clone();
    let follow = tokio::spawn(async move {
        k8s.stream_pod_logs(
            "default",
            "p",
            &LogOptions {
                follow: true,
                ..LogOptions::default()
            },
            |l| {
                l2.lock().unwrap().push(l.to_string());
                ControlFlow::Continue(())
            },
        )
        .await
    });
    assert!(
        fake.wait_until(Duration::from_secs(5), |_| lines.lock().unwrap().len() == 3)
            .await
    );
    proxy.cut();
    // Written while the stream is down: must arrive after the reconnect.
    fake.append_pod_log("default", "p", None, "during");
    assert!(
        fake.wait_until(Duration::from_secs(10), |f| {
            f.requests(|r| r.resource.as_deref() == Some("pods/log"))
                .len()
                >= 2
        })
        .await,
        "the stream was reopened"
    );
    fake.append_pod_log("default", "p", None, "after");
    assert!(
        fake.wait_until(Duration::from_secs(10), |_| lines.lock().unwrap().len()
            >= 5)
            .await
    );
    fake.set_pod_phase("default", "p", "Succeeded");
    tokio::time::timeout(Duration::from_secs(10), follow)
        .await
        .expect("follow ends")
        .unwrap()
        .unwrap();
    assert_eq!(
        *lines.lock().unwrap(),
        ["before 0", "before 1", "before 2", "during", "after"]
    );
}
