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
}

/// A connected client plus where it points.
#[derive(Clone)]
pub struct K8s {
    pub client: kube::Client,
    pub namespace: String,
    /// The context name, or `in-cluster`.
    pub context: String,
    pub server: String,
}

impl std::fmt::Debug for K8s {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("K8s")
            .field("context", &self.context)
            .field("namespace", &self.namespace)
            .field("server", &self.server)
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
        let (mut config, context) = match &opts.kubeconfig {
            Some(path) => {
                let kc = Kubeconfig::read_from(path).map_err(|e| {
                    Diag::new(
                        "nrl::k8s::kubeconfig",
                        format!("cannot read kubeconfig {}: {e}", path.display()),
                    )
                })?;
                let ctx = opts.context.clone().or(kc.current_context.clone());
                let cfg = kube::Config::from_custom_kubeconfig(kc, &kopts)
                    .await
                    .map_err(kubeconfig_error)?;
                (cfg, ctx.unwrap_or_default())
            }
            None if opts.context.is_some() => {
                let cfg = kube::Config::from_kubeconfig(&kopts)
                    .await
                    .map_err(kubeconfig_error)?;
                (cfg, opts.context.clone().unwrap_or_default())
            }
            None => {
                let ctx = Kubeconfig::read().ok().and_then(|k| k.current_context);
                let cfg = kube::Config::infer().await.map_err(|e| {
                    Diag::api(
                        "nrl::k8s::config",
                        format!("no Kubernetes configuration found: {e}"),
                    )
                    .help("set KUBECONFIG or pass --context; inside a pod the service account is used")
                })?;
                (cfg, ctx.unwrap_or_else(|| "in-cluster".to_string()))
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
        let client = kube::Client::try_from(config).map_err(|e| {
            Diag::api(
                "nrl::k8s::config",
                format!("cannot build a Kubernetes client: {e}"),
            )
        })?;
        Ok(K8s {
            client,
            namespace,
            context,
            server,
        })
    }

    /// "context `x`, namespace `y`" — printed by every mutating command before it acts.
    pub fn banner(&self) -> String {
        format!("context `{}`, namespace `{}`", self.context, self.namespace)
    }
}

fn kubeconfig_error(e: kube::config::KubeconfigError) -> Diag {
    Diag::api("nrl::k8s::kubeconfig", format!("kubeconfig problem: {e}")).help(
        "check `--context` names a context in your kubeconfig (`kubectl config get-contexts`)",
    )
}
