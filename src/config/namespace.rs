//! Namespace inference without contacting a cluster (ref-config-render §3.8): the
//! in-cluster service-account file, else the current kubeconfig context's namespace,
//! else `default`. Probe failures are not errors; they fall through to the next source.

use std::path::PathBuf;

use super::env::Env;
use super::node::{Node, Value};
use super::source::{SourceKind, add_source};
use super::yaml::parse_source;

/// Where an inferred namespace came from (shown by `--explain infra.namespace`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceOrigin {
    ServiceAccount(PathBuf),
    KubeContext { context: String, file: PathBuf },
    Default,
}

impl std::fmt::Display for NamespaceOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NamespaceOrigin::ServiceAccount(p) => write!(f, "service-account file {}", p.display()),
            NamespaceOrigin::KubeContext { context, file } => {
                write!(f, "kubeconfig context `{context}` ({})", file.display())
            }
            NamespaceOrigin::Default => write!(f, "no namespace configured anywhere: `default`"),
        }
    }
}

/// Infer a namespace. `context` selects a kubeconfig context other than the current one.
pub fn infer_namespace(env: &dyn Env, context: Option<&str>) -> (String, NamespaceOrigin) {
    let sa = env.service_account_namespace_file();
    if let Ok(text) = std::fs::read_to_string(&sa) {
        let ns = text.trim();
        if !ns.is_empty() {
            return (ns.to_string(), NamespaceOrigin::ServiceAccount(sa));
        }
    }
    if let Some((ns, ctx, file)) = kubeconfig_namespace(env, context) {
        return (ns, NamespaceOrigin::KubeContext { context: ctx, file });
    }
    ("default".to_string(), NamespaceOrigin::Default)
}

/// Kubeconfig files in merge order: `$KUBECONFIG` (colon-separated) else `~/.kube/config`.
pub fn kubeconfig_paths(env: &dyn Env) -> Vec<PathBuf> {
    match env.var("KUBECONFIG") {
        Some(v) if !v.is_empty() => std::env::split_paths(&v)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        _ => env
            .home()
            .map(|h| vec![h.join(".kube").join("config")])
            .unwrap_or_default(),
    }
}

/// The namespace of the selected (or current) context, following kubectl's merge rule:
/// the first file that sets `current-context` wins, and the first definition of a
/// context name wins.
fn kubeconfig_namespace(env: &dyn Env, context: Option<&str>) -> Option<(String, String, PathBuf)> {
    let mut docs: Vec<(PathBuf, Node)> = Vec::new();
    for p in kubeconfig_paths(env) {
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let id = add_source(p.display().to_string(), Some(&p), text, SourceKind::Text);
        if let Ok(n) = parse_source(id) {
            docs.push((p, n));
        }
    }
    let current = match context {
        Some(c) => c.to_string(),
        None => docs.iter().find_map(|(_, d)| {
            d.get("current-context")
                .and_then(Node::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        })?,
    };
    for (path, d) in &docs {
        let Some(list) = d.get("contexts").and_then(Node::as_list) else {
            continue;
        };
        for c in list {
            if c.get("name").and_then(Node::as_str) == Some(current.as_str()) {
                let ns = c
                    .get("context")
                    .and_then(|x| x.get("namespace"))
                    .map(|n| &n.value);
                return match ns {
                    Some(Value::Str(s)) if !s.trim().is_empty() => {
                        Some((s.trim().to_string(), current, path.clone()))
                    }
                    _ => None,
                };
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::MapEnv;

    const KCFG: &str = "apiVersion: v1\nkind: Config\ncurrent-context: dev\ncontexts:\n- name: dev\n  context: {cluster: c, user: u, namespace: team-a}\n- name: prod\n  context: {cluster: c, user: u}\n";

    #[test]
    fn service_account_file_wins() {
        let d = tempfile::tempdir().unwrap();
        let sa = d.path().join("ns");
        std::fs::write(&sa, "  from-sa\n").unwrap();
        let env = MapEnv {
            sa_namespace_file: Some(sa),
            ..MapEnv::default()
        };
        let (ns, o) = infer_namespace(&env, None);
        assert_eq!(ns, "from-sa");
        assert!(matches!(o, NamespaceOrigin::ServiceAccount(_)));
    }

    #[test]
    fn kube_context_namespace_then_default() {
        let d = tempfile::tempdir().unwrap();
        let k = d.path().join("config");
        std::fs::write(&k, KCFG).unwrap();
        let env = MapEnv::new([("KUBECONFIG", k.to_str().unwrap())]);
        assert_eq!(infer_namespace(&env, None).0, "team-a");
        // A context without a namespace falls through to `default`.
        let (ns, o) = infer_namespace(&env, Some("prod"));
        assert_eq!(ns, "default");
        assert_eq!(o, NamespaceOrigin::Default);
    }

    #[test]
    fn broken_kubeconfig_is_not_an_error() {
        let d = tempfile::tempdir().unwrap();
        let k = d.path().join("config");
        std::fs::write(&k, "{{{ not yaml").unwrap();
        let env = MapEnv::new([("KUBECONFIG", k.to_str().unwrap())]);
        assert_eq!(infer_namespace(&env, None).0, "default");
    }
}
