//! Port-forward over the API's `pods/portforward` subresource (no kubectl): a local
//! listener on 127.0.0.1, one websocket tunnel per accepted connection. The target is a
//! pod, the first Running pod of a label selector, or a Service (its selector and
//! `targetPort`, as `kubectl port-forward svc/…` does). The resolved pod is cached and
//! re-resolved when a tunnel cannot be opened, so a restarted head pod is followed.
//! Forwards on a free port are shared per (server, namespace, target, port) within the
//! process and stop when the last handle is dropped.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::Api;
use kube::discovery::ApiResource;
use serde_json::Value as Json;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use super::client::K8s;
use super::errors::Action;
use super::status::PodStatus;
use crate::diag::{Diag, Result};

const CODE: &str = "nrl::k8s::portforward";

/// What to forward to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PodTarget {
    /// A pod by name.
    Name(String),
    /// A label selector; the first Running pod is used (e.g. a RayCluster's head).
    Selector(String),
    /// A Service by name: its selector picks the pod, its `targetPort` the pod port.
    Service(String),
}

impl std::fmt::Display for PodTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PodTarget::Name(n) => write!(f, "pod/{n}"),
            PodTarget::Selector(s) => write!(f, "pods matching `{s}`"),
            PodTarget::Service(s) => write!(f, "svc/{s}"),
        }
    }
}

/// A running forward; stops when the last handle is dropped.
#[derive(Debug)]
pub struct PortForward {
    pub local: SocketAddr,
    pub target: PodTarget,
    pub port: u16,
    accept: JoinHandle<()>,
    health: Arc<Health>,
}

#[derive(Debug, Default)]
struct Health {
    last_error: Mutex<Option<String>>,
}

impl PortForward {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.local)
    }

    /// Why the most recent tunnel failed, if one did.
    pub fn last_error(&self) -> Option<String> {
        self.health
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for PortForward {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every open tunnel.
        self.accept.abort();
    }
}

type Key = (String, String, PodTarget, u16);

fn registry() -> &'static Mutex<HashMap<Key, Weak<PortForward>>> {
    static R: OnceLock<Mutex<HashMap<Key, Weak<PortForward>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Serialises creation so two concurrent callers get one forward, not two.
fn creation_lock() -> &'static tokio::sync::Mutex<()> {
    static L: OnceLock<tokio::sync::Mutex<()>> = OnceLock::new();
    L.get_or_init(|| tokio::sync::Mutex::new(()))
}

/// The pod and pod port a connection goes to.
type Resolved = (String, u16);

impl K8s {
    /// Forward `port` of the target on a free local port, reusing a live forward to the
    /// same target. Fails at once when the target cannot be resolved.
    pub async fn port_forward(
        &self,
        ns: &str,
        target: PodTarget,
        port: u16,
    ) -> Result<Arc<PortForward>> {
        let key = (self.server.clone(), ns.to_string(), target.clone(), port);
        let _guard = creation_lock().lock().await;
        if let Some(existing) = registry()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .and_then(Weak::upgrade)
        {
            return Ok(existing);
        }
        let pf = self.port_forward_at(ns, target, port, 0).await?;
        let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
        reg.retain(|_, w| w.strong_count() > 0);
        reg.insert(key, Arc::downgrade(&pf));
        Ok(pf)
    }

    /// Forward `port` of the target on local port `local_port` (0: a free one). Not
    /// shared; a busy local port is an error (never a silent connection to whoever holds
    /// it).
    pub async fn port_forward_at(
        &self,
        ns: &str,
        target: PodTarget,
        port: u16,
        local_port: u16,
    ) -> Result<Arc<PortForward>> {
        // Resolve once up front so a wrong target fails here, not on first use.
        let first = self.resolve_target(ns, &target, port).await?;
        // And open one tunnel: a refused `pods/portforward` (403) is an access denial to
        // report now, not a reset connection for whoever uses the local port later.
        self.probe_tunnel(ns, &first).await?;
        let listener = TcpListener::bind(("127.0.0.1", local_port))
            .await
            .map_err(|e| {
                let d = Diag::api(CODE, format!("cannot listen on 127.0.0.1:{local_port}: {e}"));
                if local_port == 0 {
                    d
                } else {
                    d.help("another program uses that port; pick another with --port, or --port 0 for a free one")
                }
            })?;
        let local = listener
            .local_addr()
            .map_err(|e| Diag::api(CODE, e.to_string()))?;
        let health = Arc::new(Health::default());
        let cache = Arc::new(Mutex::new(Some(first)));
        let k = self.clone();
        let ns_owned = ns.to_string();
        let target_owned = target.clone();
        let h = health.clone();
        let accept = tokio::spawn(async move {
            let mut conns = tokio::task::JoinSet::new();
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                let _ = sock.set_nodelay(true);
                let (k, ns, target, cache, h) = (
                    k.clone(),
                    ns_owned.clone(),
                    target_owned.clone(),
                    cache.clone(),
                    h.clone(),
                );
                conns.spawn(async move {
                    if let Err(e) = k.tunnel(&ns, &target, port, &cache, sock).await {
                        tracing::debug!("port-forward connection failed: {}", e.message);
                        *h.last_error.lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(e.message.clone());
                    }
                });
                while conns.try_join_next().is_some() {}
            }
        });
        Ok(Arc::new(PortForward {
            local,
            target,
            port,
            accept,
            health,
        }))
    }

    /// The pod (and its port) a connection to `port` of `target` reaches now.
    pub async fn resolve_target(
        &self,
        ns: &str,
        target: &PodTarget,
        port: u16,
    ) -> Result<(String, u16)> {
        match target {
            PodTarget::Name(n) => Ok((n.clone(), port)),
            PodTarget::Selector(sel) => {
                let pod = self.running_pod(ns, sel).await?.ok_or_else(|| {
                    Diag::api(
                        CODE,
                        format!("no Running pod matches `{sel}` in namespace `{ns}`"),
                    )
                    .help("is it up? `nrl status` shows the pods")
                })?;
                Ok((name_of(&pod), port))
            }
            PodTarget::Service(svc) => self.resolve_service(ns, svc, port).await,
        }
    }

    async fn resolve_service(&self, ns: &str, svc: &str, port: u16) -> Result<(String, u16)> {
        let ar = ApiResource::erase::<Service>(&());
        let Some(s) = self.get(&ar, ns, svc).await? else {
            return Err(
                Diag::api(CODE, format!("service {svc} not found in namespace `{ns}`")).help(
                    "check the name and namespace (`-n`); `nrl cluster list` shows RayClusters",
                ),
            );
        };
        let selector = s
            .pointer("/spec/selector")
            .and_then(Json::as_object)
            .filter(|m| !m.is_empty())
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .ok_or_else(|| {
                Diag::api(
                    CODE,
                    format!("service {svc} has no selector, so no pod to forward to"),
                )
            })?;
        let target_port = s
            .pointer("/spec/ports")
            .and_then(Json::as_array)
            .and_then(|ps| {
                ps.iter()
                    .find(|p| p.get("port").and_then(Json::as_u64) == Some(u64::from(port)))
            })
            .map(|p| p.get("targetPort").cloned().unwrap_or(Json::from(port)))
            .ok_or_else(|| {
                Diag::api(CODE, format!("service {svc} has no port {port}"))
                    .help("check the port number against the Service's ports")
            })?;
        let pod = self.running_pod(ns, &selector).await?.ok_or_else(|| {
            Diag::api(
                CODE,
                format!(
                    "service {svc} in namespace `{ns}` has no Running pod (selector `{selector}`)"
                ),
            )
            .help("is it up? `nrl status` shows the pods")
        })?;
        let pod_port = match &target_port {
            Json::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
            Json::String(name) => named_port(&pod, name),
            _ => None,
        }
        .ok_or_else(|| {
            Diag::api(
                CODE,
                format!(
                    "service {svc}: target port {target_port} is not a port of pod {}",
                    name_of(&pod)
                ),
            )
        })?;
        Ok((name_of(&pod), pod_port))
    }

    /// The first Running, not terminating pod matching `selector`.
    pub async fn running_pod(&self, ns: &str, selector: &str) -> Result<Option<Json>> {
        let ar = ApiResource::erase::<Pod>(&());
        let pods = self.list(&ar, ns, Some(selector)).await?;
        Ok(pods.into_iter().find(|p| {
            PodStatus::of(p).is_running() && p.pointer("/metadata/deletionTimestamp").is_none()
        }))
    }

    /// Open and close a tunnel to `pod`: errors are the API server's answer to
    /// `create pods/portforward` (denied, pod gone, kubelet unreachable).
    async fn probe_tunnel(&self, ns: &str, (pod, pod_port): &Resolved) -> Result<()> {
        let api: Api<Pod> = Api::namespaced(self.stream_client.clone(), ns);
        let action = Action::new("create", "pods/portforward", ns).named(pod);
        match tokio::time::timeout(self.request_timeout, api.portforward(pod, &[*pod_port])).await {
            Ok(Ok(pf)) => {
                pf.abort();
                Ok(())
            }
            Ok(Err(e)) => Err(super::errors::to_diag(e, &action)),
            Err(_) => Err(super::errors::timeout_diag(&action, self.request_timeout)),
        }
    }

    async fn tunnel(
        &self,
        ns: &str,
        target: &PodTarget,
        port: u16,
        cache: &Mutex<Option<Resolved>>,
        mut sock: TcpStream,
    ) -> Result<()> {
        let api: Api<Pod> = Api::namespaced(self.stream_client.clone(), ns);
        let cached = cache.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut attempt = 0;
        let (mut pf, pod_port) = loop {
            let (pod, pod_port) = match (&cached, attempt) {
                (Some(r), 0) => r.clone(),
                _ => {
                    let r = self.resolve_target(ns, target, port).await?;
                    *cache.lock().unwrap_or_else(|e| e.into_inner()) = Some(r.clone());
                    r
                }
            };
            match api.portforward(&pod, &[pod_port]).await {
                Ok(pf) => break (pf, pod_port),
                // The cached pod may be gone: resolve again, once.
                Err(_) if attempt == 0 => attempt += 1,
                Err(e) => {
                    let action = Action::new("create", "pods/portforward", ns).named(&pod);
                    return Err(super::errors::to_diag(e, &action));
                }
            }
        };
        let Some(mut upstream) = pf.take_stream(pod_port) else {
            return Err(Diag::api(CODE, "port-forward stream missing"));
        };
        let errors = pf.take_error(pod_port);
        let copied = tokio::io::copy_bidirectional(&mut sock, &mut upstream).await;
        drop(upstream);
        let _ = pf.join().await;
        if let Err(e) = copied {
            let remote = match errors {
                Some(f) => f.await,
                None => None,
            };
            return Err(Diag::api(
                CODE,
                format!(
                    "port-forward to {target}:{port} broke: {}",
                    remote.unwrap_or_else(|| e.to_string())
                ),
            ));
        }
        Ok(())
    }
}

fn name_of(o: &Json) -> String {
    o.pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A container port by name.
fn named_port(pod: &Json, name: &str) -> Option<u16> {
    pod.pointer("/spec/containers")?
        .as_array()?
        .iter()
        .filter_map(|c| c.get("ports").and_then(Json::as_array))
        .flatten()
        .find(|p| p.get("name").and_then(Json::as_str) == Some(name))
        .and_then(|p| p.get("containerPort")?.as_u64())
        .and_then(|n| u16::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn named_ports_resolve_through_containers() {
        let pod = json!({"spec": {"containers": [
            {"name": "a"},
            {"name": "b", "ports": [{"name": "dashboard", "containerPort": 8265}]}
        ]}});
        assert_eq!(named_port(&pod, "dashboard"), Some(8265));
        assert_eq!(named_port(&pod, "gcs"), None);
    }

    #[test]
    fn targets_display_like_kubectl() {
        assert_eq!(
            PodTarget::Service("rc-head-svc".into()).to_string(),
            "svc/rc-head-svc"
        );
        assert_eq!(PodTarget::Name("p".into()).to_string(), "pod/p");
    }
}
