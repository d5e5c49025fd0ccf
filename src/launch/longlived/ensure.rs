//! Ensuring a role's RayCluster for a long-lived run (ref-orchestration §4.2 with DESIGN
//! §3's changes): absent → DRA objects + RayCluster (server-side apply, DRA owned by the
//! cluster); present → drift by server-side dry-run apply (server-filled defaults are
//! never drift), reused as-is or, with `--recreate`, deleted and applied again; then a
//! watch until `state: ready` (a `failed` state ends the wait at once).
//!
//! A minimal version written for `nrl run --raycluster`; `launch::cluster` (cluster up)
//! owns the full one.

use std::time::Duration;

use serde_json::Value as Json;

use crate::config::env::username;
use crate::config::layers::LoadedConfig;
use crate::config::schema::Role;
use crate::diag::{Diag, Result};
use crate::k8s::resources::by_kind;
use crate::k8s::wait::{raycluster_ready, str_at};
use crate::k8s::{ApplyOptions, Drift, K8s};
use crate::launch::output::Output;
use crate::launch::owned::{apply_owned, owner_ref};
use crate::render::dra::dra_object;
use crate::render::raycluster::{dra_needed, raycluster};

/// The label naming a cluster's owner (the reference's; set it in `infra.labels`).
pub const OWNER_LABEL: &str = "nrl-k8s/owner";

/// One role's rendered objects.
#[derive(Debug, Clone)]
pub struct RoleObjects {
    pub role: Role,
    pub name: String,
    pub raycluster: Json,
    pub dra: Vec<Json>,
}

/// Render every declared role's RayCluster and DRA objects (validated by the caller).
pub fn role_objects(
    cfg: &LoadedConfig,
) -> Result<Vec<(RoleObjects, Vec<crate::config::node::Node>)>> {
    let mut out = Vec::new();
    for (role, cluster) in cfg.infra.kuberay.roles() {
        let rc = raycluster(&cfg.infra, cluster, role)?;
        let dra: Vec<_> = dra_needed(cluster, role)
            .into_iter()
            .map(|(k, n)| dra_object(k, &n, &cfg.infra.namespace))
            .collect();
        let mut nodes = dra.clone();
        nodes.push(rc.clone());
        out.push((
            RoleObjects {
                role,
                name: cluster.name.clone(),
                raycluster: rc.to_json(),
                dra: dra.iter().map(|n| n.to_json()).collect(),
            },
            nodes,
        ));
    }
    Ok(out)
}

/// What `ensure` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ensured {
    Created,
    Reused,
    /// Reused although it differs at these paths (no `--recreate`).
    Drifted(Vec<String>),
    Recreated,
}

/// Ensure `obj`'s RayCluster exists as rendered (see the module docs) and is ready.
pub async fn ensure(
    k8s: &K8s,
    cfg: &LoadedConfig,
    obj: &RoleObjects,
    recreate: bool,
    timeout: Duration,
    progress: &mut dyn Output,
) -> Result<Ensured> {
    let (ns, name, role) = (cfg.infra.namespace.as_str(), obj.name.as_str(), obj.role);
    let clusters = by_kind("RayCluster")?;
    let live = k8s.get(&clusters, ns, name).await?;
    if let Some(live) = &live {
        let me = username(cfg.env.as_ref());
        if let Some(owner) = str_at(
            live,
            &format!("/metadata/labels/{}", OWNER_LABEL.replace('/', "~1")),
        ) && !owner.is_empty()
            && owner != me
        {
            return Err(Diag::new(
                "nrl::run::not_owner",
                format!(
                    "RayCluster {name} in namespace {ns} is owned by `{owner}` (you are `{me}`)"
                ),
            )
            .help(format!(
                "use a different cluster name, or ask {owner} to take it down"
            )));
        }
    }
    let ensured = match live {
        None => {
            progress.status(&format!(
                "[{role}] applying RayCluster {name} in namespace {ns}"
            ));
            apply_fresh(k8s, obj).await?;
            Ensured::Created
        }
        Some(_) => match k8s.drift(&obj.raycluster).await? {
            Drift::Missing => {
                apply_fresh(k8s, obj).await?;
                Ensured::Created
            }
            Drift::None => {
                progress.status(&format!(
                    "[{role}] RayCluster {name} already exists and matches — reusing"
                ));
                Ensured::Reused
            }
            Drift::Changed(paths) if recreate => {
                progress.status(&format!(
                    "[{role}] --recreate: RayCluster {name} has drifted ({}); deleting and re-applying",
                    paths.join(", ")
                ));
                k8s.delete_and_wait(&clusters, ns, name, Duration::from_secs(600))
                    .await?;
                apply_fresh(k8s, obj).await?;
                Ensured::Recreated
            }
            Drift::Changed(paths) => {
                progress.status(&format!(
                    "[{role}] warning: RayCluster {name} has drifted from the rendered manifest ({}); reusing as-is (pass --recreate to replace it)",
                    paths.join(", ")
                ));
                Ensured::Drifted(paths)
            }
        },
    };
    progress.status(&format!(
        "[{role}] waiting for RayCluster {name} to be ready"
    ));
    k8s.wait_for(&clusters, ns, name, timeout, "ready", raycluster_ready)
        .await?;
    progress.status(&format!("[{role}] RayCluster {name} is ready"));
    Ok(ensured)
}

/// DRA objects, the RayCluster, then the DRA objects owned by it.
async fn apply_fresh(k8s: &K8s, obj: &RoleObjects) -> Result<()> {
    for d in &obj.dra {
        k8s.apply(d, ApplyOptions::default()).await?;
    }
    let live = k8s.apply(&obj.raycluster, ApplyOptions::default()).await?;
    if !obj.dra.is_empty() {
        apply_owned(k8s, &obj.dra, &[owner_ref(&live)?]).await?;
    }
    Ok(())
}
