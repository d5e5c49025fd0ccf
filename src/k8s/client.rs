//! Connecting: kubeconfig (`--context`, `KUBECONFIG`, exec credential plugins) or the
//! in-cluster service account, through kube-rs. No kubectl.

use std::time::Duration;

use kube::config::KubeConfigOptions;

use super::body_limit::{BodyLimitLayer, BodyLimits};
use super::context::{ClusterContext, ContextSource};
use crate::config::env::Env;

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
    /// Largest answers held in memory (default [`BodyLimits::default`]: 64 MiB per
    /// answer, 64 MiB per watch event); over them a call fails with
    /// `nrl::k8s::response_too_large`.
    pub body_limits: Option<BodyLimits>,
}

/// `nrl/<version>`, sent with every request.
pub const USER_AGENT: &str = concat!("nrl/", env!("CARGO_PKG_VERSION"));

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
    /// Resolve the cluster context (see [`super::context`]) and build a client. Fails fast
    /// with a diagnostic naming what was tried.
    pub async fn connect(opts: &ConnectOptions) -> Result<K8s> {
        K8s::connect_in(opts, &crate::config::env::ProcessEnv).await
    }

    /// [`K8s::connect`] with the environment the caller also infers namespaces from.
    pub async fn connect_in(opts: &ConnectOptions, env: &dyn Env) -> Result<K8s> {
        let ctx = super::context::resolve(opts, env)?;
        K8s::connect_to(&ctx, opts).await
    }

    /// Build a client for an already resolved context, acting in its namespace, with the
    /// timeouts of `opts`.
    pub async fn connect_to(ctx: &ClusterContext, opts: &ConnectOptions) -> Result<K8s> {
        let mut config = match &ctx.source {
            ContextSource::InCluster => kube::Config::incluster().map_err(|e| {
                Diag::api(
                    "nrl::k8s::config",
                    format!("cannot use the pod's service account: {e}"),
                )
                .help("pass --kubeconfig FILE to use a kubeconfig instead")
            })?,
            ContextSource::Kubeconfig { config, .. } => {
                let kopts = KubeConfigOptions {
                    context: Some(ctx.context.clone()),
                    cluster: None,
                    user: None,
                };
                kube::Config::from_custom_kubeconfig((**config).clone(), &kopts)
                    .await
                    .map_err(kubeconfig_error)?
            }
        };
        // Our own retry wrapper decides what is safe to retry (idempotent calls only).
        config.default_retry = false;
        config.connect_timeout = Some(Duration::from_secs(10));
        config.default_namespace = ctx.namespace.clone();
        // Audit logs and `managedFields` tooling name the client by its User-Agent.
        config.headers.push((
            http::header::USER_AGENT,
            http::HeaderValue::from_static(USER_AGENT),
        ));
        let server = config.cluster_url.to_string();
        let watch_timeout = opts
            .watch_timeout
            .unwrap_or(DEFAULT_WATCH_TIMEOUT)
            .max(Duration::from_secs(1));
        let limits = BodyLimitLayer {
            limits: opts.body_limits.unwrap_or_default(),
        };
        let build = |config: kube::Config| {
            kube::client::ClientBuilder::try_from(config)
                .map(|builder| builder.with_layer(&limits).build())
                .map_err(|e| {
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
            namespace: ctx.namespace.clone(),
            context: ctx.context.clone(),
            server,
            request_timeout: opts.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT),
            watch_timeout,
            in_cluster: ctx.in_cluster(),
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

fn kubeconfig_error(e: kube::config::KubeconfigError) -> Diag {
    Diag::api("nrl::k8s::kubeconfig", format!("kubeconfig problem: {e}")).help(
        "check `--context` names a context in your kubeconfig (`kubectl config get-contexts`)",
    )
}
