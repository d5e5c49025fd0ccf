//! Connecting: kubeconfig (`--context`, `KUBECONFIG`, exec credential plugins) or the
//! in-cluster service account, through kube-rs. No kubectl.

use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::diag::{Diag, Result};

/// How to connect.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Kubeconfig context (default: the current context).
    pub context: Option<String>,
    /// Namespace to act in (default: the context's namespace, else `default`).
    pub namespace: Option<String>,
    /// Explicit kubeconfig file (default: `KUBECONFIG`, then `~/.kube/config`, then in-cluster).
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Deadline of one API call, retries included (default [`DEFAULT_REQUEST_TIMEOUT`]).
    /// Waits and streams have their own deadlines.
    pub request_timeout: Option<Duration>,
    /// Server-side limit of each watch request (default [`DEFAULT_WATCH_TIMEOUT`]); see
    /// [`K8s::watch_timeout`].
    pub watch_timeout: Option<Duration>,
}

/// Deadline of one API call when none is configured.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// `timeoutSeconds` of each watch request when none is configured.
pub const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(60);

/// How much longer than the watch timeout a response may stay silent before the
/// connection counts as dead (the server closes a watch at its `timeoutSeconds`).
const READ_TIMEOUT_MARGIN: Duration = Duration::from_secs(15);

/// A connected client plus where it points.
#[derive(Clone)]
pub struct K8s {
    /// API calls and watches: a response silent for longer than the watch timeout plus a
    /// margin fails (read timeout), so a list or watch that stops answering is retried
    /// instead of holding a wait until its deadline.
    pub client: kube::Client,
    /// Long-lived streams that may rightly stay silent (log follow, exec, port-forward):
    /// no read timeout.
    pub stream_client: kube::Client,
    pub namespace: String,
    /// The context name, or `in-cluster`.
    pub context: String,
    pub server: String,
    /// Deadline of one API call, retries included.
    pub request_timeout: Duration,
    /// `timeoutSeconds` of every watch: the server ends each watch after it and the watcher
    /// resumes from the last resourceVersion; a watch that sends nothing for this long plus
    /// 5 s is taken for dead and re-established (kube-runtime `watcher`
    /// `next_with_idle_timeout`), so a stalled watch costs about a minute, never the
    /// whole wait (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes).
    pub watch_timeout: Duration,
    /// Connected through the in-cluster service account: cluster DNS names resolve, so
    /// Services can be reached directly instead of through a port-forward.
    pub in_cluster: bool,
}

impl std::fmt::Debug for K8s {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("K8s")
            .field("context", &self.context)
            .field("namespace", &self.namespace)
            .field("server", &self.server)
            .field("in_cluster", &self.in_cluster)
            .finish()
    }
}

impl K8s {
    /// Build a client. Fails fast with a diagnostic naming what was tried.
    pub async fn connect(opts: &ConnectOptions) -> Result<K8s> {
        let kopts = KubeConfigOptions {
            context: opts.context.clone(),
            cluster: None,
            user: None,
        };
        let source = choose_source(
            opts,
            std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty()),
            std::env::var_os("KUBERNETES_SERVICE_HOST").is_some(),
        );
        let in_cluster_config = match source {
            Source::InCluster => match kube::Config::incluster() {
                Ok(cfg) => Some(cfg),
                // Not really usable (no token file, say): try the kubeconfig instead.
                Err(e) => {
                    tracing::debug!(error = %e, "in-cluster configuration unusable");
                    None
                }
            },
            _ => None,
        };
        let (mut config, context) = match in_cluster_config {
            Some(cfg) => (cfg, "in-cluster".to_string()),
            None => {
                let kc = match &opts.kubeconfig {
                    Some(path) => Kubeconfig::read_from(path).map_err(|e| {
                        Diag::api(
                            "nrl::k8s::kubeconfig",
                            format!("cannot read kubeconfig {}: {e}", path.display()),
                        )
                    })?,
                    // `KUBECONFIG` (several files are merged) or `~/.kube/config`.
                    None => Kubeconfig::read().map_err(|e| {
                        Diag::api(
                            "nrl::k8s::config",
                            format!("no Kubernetes configuration found: {e}"),
                        )
                        .help("set KUBECONFIG, pass --kubeconfig FILE, or run inside a pod with a service account")
                    })?,
                };
                let ctx = opts
                    .context
                    .clone()
                    .or(kc.current_context.clone())
                    .unwrap_or_default();
                let cfg = kube::Config::from_custom_kubeconfig(kc, &kopts)
                    .await
                    .map_err(kubeconfig_error)?;
                (cfg, ctx)
            }
        };
        // Our own retry wrapper decides what is safe to retry (idempotent calls only).
        config.default_retry = false;
        config.connect_timeout = Some(Duration::from_secs(10));
        if let Some(ns) = &opts.namespace {
            config.default_namespace = ns.clone();
        }
        let namespace = config.default_namespace.clone();
        let server = config.cluster_url.to_string();
        let in_cluster = context == "in-cluster";
        let watch_timeout = opts
            .watch_timeout
            .unwrap_or(DEFAULT_WATCH_TIMEOUT)
            .max(Duration::from_secs(1));
        let build = |config: kube::Config| {
            kube::Client::try_from(config).map_err(|e| {
                Diag::api(
                    "nrl::k8s::config",
                    format!("cannot build a Kubernetes client: {e}"),
                )
            })
        };
        // kube-rs sets no read timeout by default (it would cut exec and port-forward
        // sessions): only the streams' client goes without one.
        let stream_client = build(config.clone())?;
        config.read_timeout = Some(watch_timeout + READ_TIMEOUT_MARGIN);
        // Count from when a request is sent, not from when its pooled connection went idle.
        config.reset_reader_on_write = true;
        let client = build(config)?;
        Ok(K8s {
            client,
            stream_client,
            namespace,
            context,
            server,
            request_timeout: opts.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT),
            watch_timeout,
            in_cluster,
        })
    }

    /// "context `x`, namespace `y`" — printed by every mutating command before it acts.
    pub fn banner(&self) -> String {
        format!("context `{}`, namespace `{}`", self.context, self.namespace)
    }

    /// `timeoutSeconds` for watcher configurations.
    pub fn watch_timeout_secs(&self) -> u32 {
        u32::try_from(self.watch_timeout.as_secs()).unwrap_or(u32::MAX)
    }

    /// The same client acting in another namespace.
    pub fn in_namespace(&self, ns: &str) -> K8s {
        K8s {
            namespace: ns.to_string(),
            ..self.clone()
        }
    }
}

/// Where the configuration comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Kubeconfig,
    InCluster,
}

/// An explicit kubeconfig (`--kubeconfig`, `--context`, `KUBECONFIG`) wins; otherwise
/// inside a pod the service account is used (as the reference does), falling back to
/// `~/.kube/config` when it is not usable.
fn choose_source(opts: &ConnectOptions, kubeconfig_env: bool, in_pod: bool) -> Source {
    let explicit = opts.kubeconfig.is_some() || opts.context.is_some() || kubeconfig_env;
    if in_pod && !explicit {
        Source::InCluster
    } else {
        Source::Kubeconfig
    }
}

fn kubeconfig_error(e: kube::config::KubeconfigError) -> Diag {
    Diag::api("nrl::k8s::kubeconfig", format!("kubeconfig problem: {e}")).help(
        "check `--context` names a context in your kubeconfig (`kubectl config get-contexts`)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uses_incluster_when_available() {
        // ref-orchestration §10.5 #1: in a pod, with nothing explicit, the service account.
        assert_eq!(
            choose_source(&ConnectOptions::default(), false, true),
            Source::InCluster
        );
    }

    #[test]
    fn falls_back_to_kubeconfig() {
        // ref-orchestration §10.5 #2: outside a pod (and, at connect time, when the
        // in-cluster configuration is unusable) the kubeconfig is read.
        assert_eq!(
            choose_source(&ConnectOptions::default(), false, false),
            Source::Kubeconfig
        );
        // Explicit choices win over the service account.
        let ctx = ConnectOptions {
            context: Some("prod".into()),
            ..ConnectOptions::default()
        };
        assert_eq!(choose_source(&ctx, false, true), Source::Kubeconfig);
        assert_eq!(
            choose_source(&ConnectOptions::default(), true, true),
            Source::Kubeconfig
        );
    }
}
