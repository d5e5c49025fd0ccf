//! Pure rendering: configuration in, Kubernetes objects (as spanned [`Node`] trees) out,
//! the offline checks every rendered object passes before anything is applied, and the
//! serializers that print them. Nothing here touches the network or the file system.

pub mod deployment;
pub mod devpod;
pub mod dra;
pub mod emit;
pub mod meta;
pub mod raycluster;
pub mod rayjob;
pub mod summary;
pub mod targets;
pub mod validate;

use crate::config::node::Node;
use crate::config::schema::InfraConfig;
use crate::diag::Result;

/// Every object `nrl check --manifests-only` shows (ref-config-render §5.1): per declared
/// role (generation, gym, training) its DRA objects then its RayCluster; then each
/// Deployment followed by its Service.
pub fn check_manifests(infra: &InfraConfig) -> Result<Vec<Node>> {
    let mut out = Vec::new();
    for (role, cluster) in infra.kuberay.roles() {
        for (kind, name) in raycluster::dra_needed(cluster, role) {
            out.push(dra::infra_dra_object(kind, &name, infra));
        }
        out.push(raycluster::raycluster(infra, cluster, role)?);
    }
    for (key, dep) in &infra.deployments {
        out.push(deployment::deployment(infra, key, dep)?);
        if let Some(svc) = deployment::service(infra, dep)? {
            out.push(svc);
        }
    }
    Ok(out)
}
