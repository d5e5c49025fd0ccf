//! Long-lived RayClusters (ref-orchestration §4.2-§4.4, §8.3-§8.4 with DESIGN §3):
//! [`ensure_cluster`] (used by `cluster up` and `run --raycluster`), DRA objects owned by
//! their RayCluster, Deployments with their Services, `cluster up` / `cluster down` over
//! targets, and the owner guard.
//!
//! Everything is applied with server-side apply (field manager `nrl`); drift is what a
//! server-side dry-run apply would change, so server-filled defaults are never drift.

pub mod daemon;
pub mod deploy;
pub mod dra;
pub mod owner;
pub mod run;
pub mod submit;
pub mod updown;

use std::time::Duration;

use serde_json::Value as Json;

use crate::config::env::username;
use crate::config::layers::LoadedConfig;
use crate::config::schema::{ClusterSpec, Role};
use crate::diag::{Diag, Result};
use crate::k8s::Verdict;
use crate::k8s::resources::by_kind;
use crate::k8s::wait::{
    desired_workers, raycluster_pods_settled, raycluster_progress, raycluster_ready,
};
use crate::k8s::{ApplyOptions, Drift, K8s};
use crate::render::raycluster::raycluster;

use super::progress::Progress;
pub use deploy::{DeployOutcome, delete_deployment, ensure_deployment};
pub use dra::{delete_dra, dra_objects, ensure_dra, own_dra};
pub use owner::{OWNER_LABEL, check_owner, owner_of, stamp_owner};
pub use updown::{DownOptions, UpOptions, UpOutcome, cluster_down, cluster_up, up_objects};

/// Default readiness budget of a RayCluster (the reference's 900 s).
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(900);

/// What to do when the live RayCluster differs from the rendered one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDrift {
    /// Warn and reuse it as is (`run --raycluster` without `--recreate`).
    Warn,
    /// Apply the rendered manifest over it; KubeRay reconciles in place (`cluster up`).
    Apply,
    /// Delete it, wait until it is gone, and create it again (`--recreate`).
    Recreate,
}

/// Options of [`ensure_cluster`].
#[derive(Debug, Clone, Copy)]
pub struct EnsureOptions {
    pub on_drift: OnDrift,
    /// Wait until the RayCluster is ready (a watch with a deadline).
    pub wait: bool,
    pub timeout: Duration,
    /// Act on a RayCluster owned by another user.
    pub force: bool,
    /// Apply even where another field manager owns fields (server-side apply with
    /// `force`, kubectl's `--force-conflicts`); drift is then judged the same way.
    pub force_conflicts: bool,
}

impl Default for EnsureOptions {
    fn default() -> Self {
        EnsureOptions {
            on_drift: OnDrift::Warn,
            wait: true,
            timeout: DEFAULT_READY_TIMEOUT,
            force: false,
            force_conflicts: false,
        }
    }
}

/// What [`ensure_cluster`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnsureAction {
    Created,
    /// Live and rendered agree.
    Unchanged,
    /// Drift (these paths) applied in place.
    Updated(Vec<String>),
    /// Drift (these paths) left alone ([`OnDrift::Warn`]).
    DriftIgnored(Vec<String>),
    /// Drift (these paths); deleted and created again.
    Recreated(Vec<String>),
}

/// The result of [`ensure_cluster`].
#[derive(Debug, Clone)]
pub struct EnsureOutcome {
    pub role: Role,
    pub name: String,
    pub namespace: String,
    pub action: EnsureAction,
    /// The RayCluster when it was seen ready (`None` without `wait`).
    pub ready: Option<Json>,
    /// Pod-template paths that differ from the rendered manifest and were left alone:
    /// KubeRay never rolls template edits into existing pods, so only `--recreate`
    /// applies them (nothing waits for them).
    pub template_drift: Vec<String>,
}

/// `<cluster>-head-svc`: KubeRay's head Service (dashboard on 8265).
pub fn head_service(cluster: &str) -> String {
    format!("{cluster}-head-svc")
}

/// The role's cluster block, or an error naming the declared roles.
pub fn cluster_of(cfg: &LoadedConfig, role: Role) -> Result<&ClusterSpec> {
    cfg.infra.kuberay.get(role).ok_or_else(|| {
        let declared: Vec<_> = cfg.infra.kuberay.roles().map(|(r, _)| r.as_str()).collect();
        Diag::new(
            "nrl::cluster::role",
            format!(
                "infra.kuberay.{} is not defined in the recipe",
                role.as_str()
            ),
        )
        .help(if declared.is_empty() {
            "declare infra.kuberay.<role> (name + spec)".to_string()
        } else {
            format!("declared roles: {}", declared.join(", "))
        })
    })
}

/// The RayCluster manifest of a role as nrl applies it: rendered, owner-labelled.
pub fn raycluster_manifest(cfg: &LoadedConfig, role: Role) -> Result<Json> {
    let cluster = cluster_of(cfg, role)?;
    let mut node = raycluster(&cfg.infra, cluster, role)?;
    stamp_owner(&mut node, &username(&*cfg.env));
    Ok(node.to_json())
}

/// Make the role's RayCluster exist and match the rendered manifest, idempotently:
/// owner guard, head-Service collision check, DRA objects (owned by the RayCluster),
/// create / reuse / update / recreate by drift, then optionally wait until ready.
pub async fn ensure_cluster(
    k8s: &K8s,
    cfg: &LoadedConfig,
    role: Role,
    opts: &EnsureOptions,
    progress: &Progress,
) -> Result<EnsureOutcome> {
    let cluster = cluster_of(cfg, role)?;
    let manifest = raycluster_manifest(cfg, role)?;
    let (name, ns) = (cluster.name.as_str(), cfg.infra.namespace.as_str());
    let tag = role.as_str();
    let rcs = by_kind("RayCluster")?;
    check_head_service_collision(k8s, ns, name).await?;
    let mut live = k8s.get(&rcs, ns, name).await?;
    if let Some(l) = &live {
        check_owner(l, &username(&*cfg.env), opts.force, progress)?;
    }
    // Still going away (a `cluster down --no-wait` just before): let it go, then create.
    if live
        .as_ref()
        .is_some_and(|l| l.pointer("/metadata/deletionTimestamp").is_some())
    {
        let step = progress.step(format!(
            "[{tag}] waiting for the previous RayCluster {name} to finish deleting"
        ));
        k8s.wait_deleted(&rcs, ns, name, opts.timeout).await?;
        drop(step);
        live = None;
    }
    let apply_opts = ApplyOptions {
        dry_run: false,
        force: opts.force_conflicts,
    };
    // Drift is judged with the options of the apply it leads to, so a conflict shows before
    // anything changes. Only `Apply` applies over the live object; `Warn` leaves it and
    // `Recreate` creates it anew, where nobody else owns anything: forced dry runs.
    let drift_force = opts.force_conflicts || opts.on_drift != OnDrift::Apply;
    let drift = match &live {
        Some(l) => k8s.drift_from(l, &manifest, drift_force).await?,
        None => Drift::Missing,
    };
    let mut changed = match &drift {
        Drift::Changed(paths) => paths.clone(),
        Drift::Conflict(conflicts) => return Err(k8s.conflict_diag(&manifest, conflicts)?),
        _ => Vec::new(),
    };
    // In place, only counts and the like take effect; pod templates would reach only
    // pods created later (ray-operator/controllers/ray/raycluster_controller.go:
    // reconcilePods compares pod counts, never templates). They stay drift.
    let mut template_drift = Vec::new();
    let mut manifest = manifest;
    if opts.on_drift == OnDrift::Apply
        && let Some(l) = &live
        && changed.iter().any(|p| is_template_path(p))
    {
        (template_drift, changed) = changed.into_iter().partition(|p| is_template_path(p));
        manifest = with_live_templates(&manifest, l);
        progress.line(format!(
            "[{tag}] warning: the pod templates of RayCluster {name} differ from the rendered manifest ({}); KubeRay does not roll template changes into running pods, so they are left as they are: pass --recreate to delete and re-create the cluster with them",
            template_drift.join(", ")
        ));
    }
    if !changed.is_empty() && opts.on_drift == OnDrift::Recreate {
        progress.line(format!(
            "[{tag}] --recreate: RayCluster {name} has drifted ({}); deleting and re-applying",
            changed.join(", ")
        ));
        let step = progress.step(format!(
            "[{tag}] waiting for RayCluster {name} to be deleted"
        ));
        k8s.delete_and_wait(&rcs, ns, name, opts.timeout).await?;
        step.finish(format!("[{tag}] RayCluster {name} deleted"));
        live = None;
    }
    let dra = ensure_dra(
        k8s,
        &cfg.infra,
        cluster,
        role,
        live.as_ref(),
        &username(&*cfg.env),
        progress,
    )
    .await?;
    let action = match (&live, opts.on_drift) {
        (None, _) if changed.is_empty() => {
            progress.line(format!(
                "[{tag}] applying RayCluster {name} in namespace `{ns}`"
            ));
            let created = k8s.apply(&manifest, apply_opts).await?;
            own_dra(k8s, &dra, &created).await?;
            EnsureAction::Created
        }
        (None, _) => {
            let created = k8s.apply(&manifest, apply_opts).await?;
            own_dra(k8s, &dra, &created).await?;
            EnsureAction::Recreated(changed)
        }
        (Some(_), _) if changed.is_empty() && template_drift.is_empty() => {
            progress.line(format!(
                "[{tag}] RayCluster {name} already exists and matches — reusing"
            ));
            EnsureAction::Unchanged
        }
        (Some(_), _) if changed.is_empty() => EnsureAction::Unchanged,
        (Some(_), OnDrift::Apply | OnDrift::Recreate) => {
            progress.line(format!(
                "[{tag}] RayCluster {name} differs from the rendered manifest ({}); applying",
                changed.join(", ")
            ));
            k8s.apply(&manifest, apply_opts).await?;
            EnsureAction::Updated(changed)
        }
        (Some(_), OnDrift::Warn) => {
            progress.line(format!(
                "[{tag}] warning: live RayCluster {name} has drifted from the rendered manifest ({}); reusing as-is (pass --recreate to replace)",
                changed.join(", ")
            ));
            EnsureAction::DriftIgnored(changed)
        }
    };
    let ready = if opts.wait {
        Some(wait_ready(k8s, ns, name, role, opts.timeout, progress).await?)
    } else {
        None
    };
    Ok(EnsureOutcome {
        role,
        name: name.to_string(),
        namespace: ns.to_string(),
        action,
        ready,
        template_drift,
    })
}

/// `spec.headGroupSpec.template…` or `spec.workerGroupSpecs[i].template…`: a pod template.
fn is_template_path(p: &str) -> bool {
    let rest = if let Some(r) = p.strip_prefix("spec.headGroupSpec.") {
        r
    } else if let Some(r) = p.strip_prefix("spec.workerGroupSpecs[") {
        match r.split_once("].") {
            Some((i, r)) if i.bytes().all(|b| b.is_ascii_digit()) => r,
            _ => return false,
        }
    } else {
        return false;
    };
    rest == "template" || rest.starts_with("template.")
}

/// `manifest` with the pod templates of `live` (the head's, and each worker group's by
/// `groupName`; new groups keep the rendered one): an in-place apply that changes counts
/// but leaves the templates, which stay visible as drift.
fn with_live_templates(manifest: &Json, live: &Json) -> Json {
    let mut out = manifest.clone();
    if let (Some(t), Some(head)) = (
        live.pointer("/spec/headGroupSpec/template"),
        out.pointer_mut("/spec/headGroupSpec"),
    ) {
        head["template"] = t.clone();
    }
    let live_groups = live
        .pointer("/spec/workerGroupSpecs")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(groups) = out
        .pointer_mut("/spec/workerGroupSpecs")
        .and_then(Json::as_array_mut)
    {
        for g in groups {
            let live_t = live_groups
                .iter()
                .find(|l| l.get("groupName").is_some() && l.get("groupName") == g.get("groupName"))
                .and_then(|l| l.get("template"));
            if let Some(t) = live_t {
                g["template"] = t.clone();
            }
        }
    }
    out
}

/// A RayJob named like the cluster owns the head Service `<name>-head-svc` KubeRay
/// would create for it: refuse instead of fighting over it.
async fn check_head_service_collision(k8s: &K8s, ns: &str, name: &str) -> Result<()> {
    if k8s.get(&by_kind("RayJob")?, ns, name).await?.is_some() {
        return Err(Diag::new(
            "nrl::cluster::collision",
            format!(
                "a RayJob named {name} exists in namespace `{ns}`; its head Service `{}` would collide with this RayCluster's",
                head_service(name)
            ),
        )
        .help("delete the RayJob first, or give the RayCluster another name"));
    }
    Ok(())
}

/// Watch the RayCluster until it is ready for its current spec (see [`raycluster_ready`]:
/// `status.state` alone is sticky), showing its state and ready workers as it goes, then
/// watch its pods until exactly the wanted ones run (after a scale-down the status
/// counters still include terminating pods). On timeout the pods' states are added.
pub async fn wait_ready(
    k8s: &K8s,
    ns: &str,
    name: &str,
    role: Role,
    timeout: Duration,
    progress: &Progress,
) -> Result<Json> {
    let tag = role.as_str();
    let deadline = tokio::time::Instant::now() + timeout;
    let step = progress.step(format!(
        "[{tag}] waiting for RayCluster {name} to be ready with its desired workers"
    ));
    let rcs = by_kind("RayCluster")?;
    let res = async {
        let rc = k8s
            .wait_for(&rcs, ns, name, timeout, "ready", |o| {
                if let Some(o) = o {
                    step.update(format!(
                        "[{tag}] waiting for RayCluster {name}: {}",
                        raycluster_progress(o)
                    ));
                }
                raycluster_ready(o)
            })
            .await?;
        let workers = desired_workers(&rc);
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        k8s.wait_for_all(
            &by_kind("Pod")?,
            ns,
            &format!("ray.io/cluster={name}"),
            left,
            &format!("exactly 1 head and {workers} workers, running and ready"),
            |pods| {
                let terminating = pods
                    .iter()
                    .filter(|p| p.pointer("/metadata/deletionTimestamp").is_some())
                    .count();
                step.update(format!(
                    "[{tag}] waiting for RayCluster {name}: {} pods, {terminating} terminating",
                    pods.len()
                ));
                if raycluster_pods_settled(pods, workers) {
                    Verdict::Done(())
                } else {
                    Verdict::Pending
                }
            },
        )
        .await?;
        Ok::<_, Diag>(rc)
    }
    .await;
    match res {
        Ok(rc) => {
            step.finish(format!("[{tag}] RayCluster {name} is ready."));
            Ok(rc)
        }
        Err(d) if d.code == "nrl::k8s::timeout" => {
            drop(step);
            Err(match super::inspect::cluster_pods(k8s, ns, name).await {
                Ok(pods) => d.note(pods.summary()),
                Err(_) => d,
            })
        }
        Err(d) => Err(d),
    }
}
