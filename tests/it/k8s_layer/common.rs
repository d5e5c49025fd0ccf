//! Shared helpers: a fake server with an `nrl::k8s::K8s` connected to it, objects to
//! apply, and a TCP proxy that can cut every open connection (to drop streams).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::discovery::ApiResource;
use nrl::k8s::resources::by_kind;
use nrl::k8s::{ConnectOptions, K8s};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

pub use crate::support::fake_k8s::*;

/// A fake and a client connected through its kubeconfig.
pub async fn setup() -> (FakeK8s, K8s) {
    let fake = FakeK8s::start();
    let k8s = connect(&fake, None).await;
    (fake, k8s)
}

pub async fn connect(fake: &FakeK8s, request_timeout: Option<Duration>) -> K8s {
    K8s::connect(&ConnectOptions {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        request_timeout,
        ..ConnectOptions::default()
    })
    .await
    .expect("connect to the fake")
}

pub fn ar(kind: &str) -> ApiResource {
    by_kind(kind).expect("a kind nrl manages")
}

pub fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": {"app": "nrl-test", "name": name}},
           "data": data})
}

/// A RayCluster as `nrl` renders one (no server defaults filled in).
pub fn raycluster(name: &str, workers: i64) -> Value {
    json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "nrl-k8s"}},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "rayproject/ray:2.60.0",
                 "ports": [{"containerPort": 8265, "name": "dashboard"}]}]}}},
            "workerGroupSpecs": [{"groupName": "w", "replicas": workers, "rayStartParams": {},
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.60.0"}]}}}]
        }
    })
}

/// The status KubeRay writes for a RayCluster of `workers` workers that is ready
/// (`raycluster_controller.go: calculateStatus`), for tests that drive it by hand.
pub fn ready_status(workers: i64) -> Value {
    json!({"state": "ready", "desiredWorkerReplicas": workers, "readyWorkerReplicas": workers,
           "conditions": [{"type": "HeadPodReady", "status": "True",
                           "reason": "HeadPodRunningAndReady", "message": ""}]})
}

/// A TCP proxy in front of an address; `cut()` closes every open connection (new ones
/// are still accepted), as a flaky network or a restarting load balancer would.
pub struct CuttableProxy {
    pub addr: SocketAddr,
    conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl CuttableProxy {
    pub async fn start(upstream: SocketAddr) -> CuttableProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let conns: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let c = conns.clone();
        tokio::spawn(async move {
            while let Ok((mut down, _)) = listener.accept().await {
                let task = tokio::spawn(async move {
                    if let Ok(mut up) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut down, &mut up).await;
                    }
                });
                c.lock().unwrap().push(task.abort_handle());
            }
        });
        CuttableProxy { addr, conns }
    }

    pub fn cut(&self) {
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }

    /// A kubeconfig like the fake's, pointing at this proxy.
    pub fn kubeconfig(&self, fake: &FakeK8s, dir: &std::path::Path) -> std::path::PathBuf {
        let text = std::fs::read_to_string(fake.kubeconfig_path()).unwrap();
        let text = text.replace(&fake.url(), &format!("http://{}", self.addr));
        let path = dir.join("kubeconfig-proxy");
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// An echo server on 127.0.0.1.
pub async fn echo_server() -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                while let Ok(n) = sock.read(&mut buf).await {
                    if n == 0 || sock.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// Create a pod and wait until the fake's kubelet runs it.
pub async fn running_pod(fake: &FakeK8s, name: &str, labels: Value, containers: &[&str]) {
    let cs: Vec<_> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "busybox:1.36", "ports": [{"name": "web", "containerPort": 8080}]}))
        .collect();
    fake.put(json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": "default", "labels": labels},
                    "spec": {"containers": cs}}));
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| f.field(
            "v1",
            "Pod",
            "default",
            name,
            "status.phase"
        ) == Some(json!("Running")))
            .await,
        "pod {name} did not start"
    );
}
