//! Port-forward to a pod over the API's `pods/portforward` subresource: a local listener
//! on 127.0.0.1 (free port), one tunnel per accepted connection, the target pod re-resolved
//! per connection (so a restarted head pod is followed), shared per target in a process.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::client::K8s;
use crate::diag::{Diag, Result};

/// Which pod to forward to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PodTarget {
    Name(String),
    /// A label selector; the first Running pod is used (e.g. a RayCluster's head).
    Selector(String),
}

/// A running forward; stops when the last handle is dropped.
#[derive(Debug)]
pub struct PortForward {
    pub local: SocketAddr,
    accept: JoinHandle<()>,
}

impl PortForward {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.local)
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

type Key = (String, String, PodTarget, u16);

fn registry() -> &'static Mutex<HashMap<Key, Weak<PortForward>>> {
    static R: OnceLock<Mutex<HashMap<Key, Weak<PortForward>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

impl K8s {
    /// Forward `port` of the target pod, reusing a live forward to the same target.
    pub async fn port_forward(
        &self,
        ns: &str,
        target: PodTarget,
        port: u16,
    ) -> Result<Arc<PortForward>> {
        let key = (self.server.clone(), ns.to_string(), target.clone(), port);
        if let Some(existing) = registry()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .and_then(Weak::upgrade)
        {
            return Ok(existing);
        }
        // Resolve once up front so a wrong target fails here, not on first use.
        self.resolve_pod(ns, &target).await?;
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| {
            Diag::api(
                "nrl::k8s::portforward",
                format!("cannot listen on 127.0.0.1: {e}"),
            )
        })?;
        let local = listener
            .local_addr()
            .map_err(|e| Diag::api("nrl::k8s::portforward", e.to_string()))?;
        let k = self.clone();
        let ns_owned = ns.to_string();
        let accept = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                let k = k.clone();
                let ns = ns_owned.clone();
                let target = target.clone();
                conns.spawn(async move {
                    if let Err(e) = k.tunnel(&ns, &target, port, sock).await {
                        tracing::warn!("port-forward connection failed: {e}");
                    }
                });
                while conns.try_join_next().is_some() {}
            }
        });
        let pf = Arc::new(PortForward { local, accept });
        registry()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, Arc::downgrade(&pf));
        Ok(pf)
    }

    async fn resolve_pod(&self, ns: &str, target: &PodTarget) -> Result<String> {
        match target {
            PodTarget::Name(n) => Ok(n.clone()),
            PodTarget::Selector(sel) => {
                let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
                let pods = api
                    .list(&ListParams::default().labels(sel))
                    .await
                    .map_err(|e| {
                        super::errors::to_diag(
                            e,
                            &super::errors::Action {
                                verb: "list",
                                resource: "pods",
                                name: None,
                                namespace: Some(ns),
                            },
                        )
                    })?;
                pods.items
                    .iter()
                    .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                    .and_then(|p| p.metadata.name.clone())
                    .ok_or_else(|| {
                        Diag::api(
                            "nrl::k8s::portforward",
                            format!("no Running pod matches `{sel}` in namespace `{ns}`"),
                        )
                        .help("is the cluster up? `nrl status` shows its pods")
                    })
            }
        }
    }

    async fn tunnel(
        &self,
        ns: &str,
        target: &PodTarget,
        port: u16,
        mut sock: TcpStream,
    ) -> Result<()> {
        let pod = self.resolve_pod(ns, target).await?;
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let mut pf = api.portforward(&pod, &[port]).await.map_err(|e| {
            Diag::api(
                "nrl::k8s::portforward",
                format!("port-forward to {pod}:{port} failed: {e}"),
            )
        })?;
        let Some(mut upstream) = pf.take_stream(port) else {
            return Err(Diag::api(
                "nrl::k8s::portforward",
                "port-forward stream missing",
            ));
        };
        let _ = tokio::io::copy_bidirectional(&mut sock, &mut upstream).await;
        drop(upstream);
        let _ = pf.join().await;
        Ok(())
    }
}
