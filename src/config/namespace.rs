//! Where an inferred namespace comes from. The inference itself is done once, with the
//! cluster context (`k8s::context::resolve`), and handed to the loader, so the namespace
//! objects are rendered for and the client that applies them always agree.

use std::path::PathBuf;

/// Where an inferred namespace came from (shown by `--explain infra.namespace`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceOrigin {
    /// The in-cluster service account's namespace file.
    ServiceAccount(PathBuf),
    /// `POD_NAMESPACE`, which client-go's in-cluster configuration reads first.
    PodNamespaceEnv,
    /// The selected kubeconfig context's `namespace`; `file` is the first kubeconfig file
    /// that defines the context.
    KubeContext { context: String, file: PathBuf },
    /// Nothing names a namespace: `default`.
    Default,
}

impl std::fmt::Display for NamespaceOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NamespaceOrigin::ServiceAccount(p) => write!(f, "service-account file {}", p.display()),
            NamespaceOrigin::PodNamespaceEnv => write!(f, "POD_NAMESPACE (in-cluster)"),
            NamespaceOrigin::KubeContext { context, file } => {
                write!(f, "kubeconfig context `{context}` ({})", file.display())
            }
            NamespaceOrigin::Default => write!(f, "no namespace configured anywhere: `default`"),
        }
    }
}

/// The namespace a missing `infra.namespace` becomes, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InferredNamespace {
    pub namespace: String,
    pub origin: NamespaceOrigin,
}

impl Default for InferredNamespace {
    /// No cluster context could be resolved (no kubeconfig, not in a pod): `default`, as
    /// the reference falls through to it when its probes fail (ref-config-render §3.8).
    fn default() -> InferredNamespace {
        InferredNamespace {
            namespace: "default".to_string(),
            origin: NamespaceOrigin::Default,
        }
    }
}
