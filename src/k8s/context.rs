//! The cluster context, resolved once: which configuration (kubeconfig files or the
//! in-cluster service account), which context, which namespace, and why. The loader takes
//! its inferred namespace from here and the client is built from the same result, so
//! objects are never rendered for one namespace and applied through a client built from
//! another configuration.
//!
//! The rules are client-go's (`clientcmd.ClientConfigLoadingRules`, documented in
//! <https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/>):
//! - `--kubeconfig FILE`: that file only, and it must exist;
//! - else `KUBECONFIG`: its files merged in order (the first to set a value wins: the first
//!   `current-context`, the first context/cluster/user of each name); files that do not
//!   exist are skipped, as client-go skips them;
//! - else `~/.kube/config`.
//!
//! The context is `--context`, else the merged `current-context`. The namespace is `-n`,
//! else the context's `namespace`, else `default`.
//!
//! In a pod (`KUBERNETES_SERVICE_HOST`/`_PORT` set and a service-account token present)
//! with nothing explicit (`--kubeconfig`, `--context`, `KUBECONFIG`), the service account is
//! used, as the reference does (ref-orchestration §10.5 #1), and its namespace is
//! `POD_NAMESPACE`, else the service account's namespace file (client-go's
//! `inClusterClientConfig.Namespace`), else `default`.

use std::path::{Path, PathBuf};

use kube::config::Kubeconfig;

use super::client::ConnectOptions;
use crate::config::env::Env;
use crate::config::namespace::{InferredNamespace, NamespaceOrigin};
use crate::diag::{Diag, Result};

/// A resolved cluster context: everything needed to build a client, and where each part
/// came from.
#[derive(Debug, Clone)]
pub struct ClusterContext {
    /// The context name, or `in-cluster`.
    pub context: String,
    /// Where to act (`-n`, else inferred).
    pub namespace: String,
    /// The namespace when `-n` is not given, and why.
    pub inferred: InferredNamespace,
    pub source: ContextSource,
}

/// Where the credentials come from.
#[derive(Debug, Clone)]
pub enum ContextSource {
    /// Kubeconfig files (in merge order) and their merged content.
    Kubeconfig {
        files: Vec<PathBuf>,
        config: Box<Kubeconfig>,
    },
    /// The pod's service account.
    InCluster,
}

impl ClusterContext {
    pub fn in_cluster(&self) -> bool {
        matches!(self.source, ContextSource::InCluster)
    }
}

/// Resolve `opts` (`--kubeconfig`, `--context`, `-n`) against the environment.
pub fn resolve(opts: &ConnectOptions, env: &dyn Env) -> Result<ClusterContext> {
    let explicit = opts.kubeconfig.is_some()
        || opts.context.is_some()
        || env.var("KUBECONFIG").is_some_and(|v| !v.is_empty());
    if !explicit && in_pod(env) {
        let inferred = in_cluster_namespace(env);
        return Ok(ClusterContext {
            context: "in-cluster".to_string(),
            namespace: opts
                .namespace
                .clone()
                .unwrap_or_else(|| inferred.namespace.clone()),
            inferred,
            source: ContextSource::InCluster,
        });
    }
    let (files, config) = read_kubeconfigs(opts.kubeconfig.as_deref(), env)?;
    let context = match opts.context.clone().or(config.current_context.clone()) {
        Some(c) if !c.is_empty() => c,
        _ => {
            return Err(Diag::api(
                "nrl::k8s::kubeconfig",
                format!(
                    "no context selected: {} set no `current-context`",
                    list_files(&files)
                ),
            )
            .help("pass --context NAME (`kubectl config get-contexts` lists them) or run `kubectl config use-context NAME`"));
        }
    };
    let Some(named) = config.contexts.iter().find(|c| c.name == context) else {
        let known: Vec<&str> = config.contexts.iter().map(|c| c.name.as_str()).collect();
        return Err(Diag::api(
            "nrl::k8s::kubeconfig",
            format!(
                "context `{context}` is not defined in {}",
                list_files(&files)
            ),
        )
        .help(if known.is_empty() {
            "the kubeconfig defines no contexts".to_string()
        } else {
            format!("the contexts there: {}", known.join(", "))
        }));
    };
    let inferred = match named
        .context
        .as_ref()
        .and_then(|c| c.namespace.as_deref())
        .map(str::trim)
        .filter(|ns| !ns.is_empty())
    {
        Some(ns) => InferredNamespace {
            namespace: ns.to_string(),
            origin: NamespaceOrigin::KubeContext {
                context: context.clone(),
                file: defining_file(&files, &context).unwrap_or_else(|| files[0].clone()),
            },
        },
        None => InferredNamespace::default(),
    };
    Ok(ClusterContext {
        namespace: opts
            .namespace
            .clone()
            .unwrap_or_else(|| inferred.namespace.clone()),
        context,
        inferred,
        source: ContextSource::Kubeconfig {
            files,
            config: Box::new(config),
        },
    })
}

/// The namespace a recipe without `infra.namespace` gets under `opts`: resolution
/// problems (no kubeconfig at all, say, for an offline `nrl check`) are not errors here;
/// they fall through to `default` as the reference's probes do (ref-config-render §3.8).
/// Commands that connect report them when they connect.
pub fn inferred_namespace(opts: &ConnectOptions, env: &dyn Env) -> InferredNamespace {
    match resolve(opts, env) {
        Ok(ctx) => ctx.inferred,
        Err(e) => {
            tracing::debug!(error = %e.message, "no cluster context; namespace `default`");
            InferredNamespace::default()
        }
    }
}

/// The contexts the kubeconfig defines (`--kubeconfig FILE`, else the merged `KUBECONFIG`,
/// else `~/.kube/config`), in merge order, each with its namespace; read the way
/// [`resolve`] reads them, for shell completion of `--context`.
pub fn context_names(
    kubeconfig: Option<&Path>,
    env: &dyn Env,
) -> Result<Vec<(String, Option<String>)>> {
    let (_, config) = read_kubeconfigs(kubeconfig, env)?;
    Ok(config
        .contexts
        .into_iter()
        .map(|c| {
            let ns = c.context.and_then(|c| c.namespace);
            (c.name, ns)
        })
        .collect())
}

/// client-go's `rest.InClusterConfig` test: both service variables and a token.
fn in_pod(env: &dyn Env) -> bool {
    let set = |k: &str| env.var(k).is_some_and(|v| !v.is_empty());
    set("KUBERNETES_SERVICE_HOST")
        && set("KUBERNETES_SERVICE_PORT")
        && env.service_account_dir().join("token").is_file()
}

fn in_cluster_namespace(env: &dyn Env) -> InferredNamespace {
    if let Some(ns) = env.var("POD_NAMESPACE").filter(|v| !v.trim().is_empty()) {
        return InferredNamespace {
            namespace: ns.trim().to_string(),
            origin: NamespaceOrigin::PodNamespaceEnv,
        };
    }
    let file = env.service_account_dir().join("namespace");
    match std::fs::read_to_string(&file) {
        Ok(text) if !text.trim().is_empty() => InferredNamespace {
            namespace: text.trim().to_string(),
            origin: NamespaceOrigin::ServiceAccount(file),
        },
        _ => InferredNamespace::default(),
    }
}

/// The kubeconfig files in use, in merge order, and their merged content.
fn read_kubeconfigs(explicit: Option<&Path>, env: &dyn Env) -> Result<(Vec<PathBuf>, Kubeconfig)> {
    if let Some(path) = explicit {
        // An explicit file must exist (client-go: ExplicitPath is required).
        let config = Kubeconfig::read_from(path).map_err(|e| {
            Diag::api(
                "nrl::k8s::kubeconfig",
                format!("cannot read kubeconfig {}: {e}", path.display()),
            )
            .help("check the --kubeconfig path")
        })?;
        return Ok((vec![path.to_path_buf()], config));
    }
    let candidates: Vec<PathBuf> = match env.var("KUBECONFIG").filter(|v| !v.is_empty()) {
        Some(list) => std::env::split_paths(&list)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        None => env
            .home()
            .map(|h| vec![h.join(".kube").join("config")])
            .unwrap_or_default(),
    };
    let mut files = Vec::new();
    let mut merged = Kubeconfig::default();
    for path in &candidates {
        if !path.exists() {
            continue;
        }
        let config = Kubeconfig::read_from(path).map_err(|e| {
            Diag::api(
                "nrl::k8s::kubeconfig",
                format!("cannot read kubeconfig {}: {e}", path.display()),
            )
        })?;
        merged = merged.merge(config).map_err(|e| {
            Diag::api(
                "nrl::k8s::kubeconfig",
                format!("cannot merge kubeconfig {}: {e}", path.display()),
            )
        })?;
        files.push(path.clone());
    }
    if files.is_empty() {
        let tried = if candidates.is_empty() {
            "no home directory to find ~/.kube/config in".to_string()
        } else {
            format!("none of {} exists", list_files(&candidates))
        };
        return Err(Diag::api(
            "nrl::k8s::config",
            format!("no Kubernetes configuration found: {tried}"),
        )
        .help(
            "set KUBECONFIG, pass --kubeconfig FILE, or run inside a pod with a service account",
        ));
    }
    Ok((files, merged))
}

/// The first file that defines context `name` (the one whose definition wins the merge).
fn defining_file(files: &[PathBuf], name: &str) -> Option<PathBuf> {
    files.iter().find_map(|f| {
        let config = Kubeconfig::read_from(f).ok()?;
        config
            .contexts
            .iter()
            .any(|c| c.name == name)
            .then(|| f.clone())
    })
}

fn list_files(files: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| f.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
#[path = "context_tests.rs"]
mod tests;
