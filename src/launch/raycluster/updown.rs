//! `cluster up` and `cluster down` over targets (ref-orchestration §8.3-§8.4 with DESIGN
//! §3): roles in order, then Deployments; daemons after their cluster is ready; deletion
//! waits until objects (and their pods) are gone; the owner guard runs for every target
//! before anything is deleted.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::env::username;
use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::diag::Result;
use crate::k8s::resources::by_kind;
use crate::k8s::{K8s, ObjectRef};
use crate::render::deployment;
use crate::render::targets::{Target, up_manifests};

use super::{
    DeployOutcome, EnsureOptions, EnsureOutcome, OnDrift, check_owner, cluster_of,
    delete_deployment, delete_dra, dra_objects, ensure_cluster, ensure_deployment, stamp_owner,
};
use crate::launch::progress::Progress;
use crate::launch::raycluster::daemon::{DaemonOptions, DaemonOutcome, submit_daemon};

/// Options of [`cluster_up`].
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// Wait for RayClusters to be ready and Deployments to be available.
    pub wait: bool,
    pub timeout: Duration,
    pub force: bool,
    /// Delete and re-create a RayCluster that drifted (the only way pod-template
    /// changes reach its pods); otherwise the drift is applied in place.
    pub recreate: bool,
    /// Server-side apply with `force`: take over fields other field managers own.
    pub force_conflicts: bool,
    /// Submit daemons (needs `wait`: a daemon goes to a ready cluster).
    pub daemons: bool,
    /// Where daemons' `rayUploadPaths` are taken from.
    pub repo_root: PathBuf,
}

/// What `cluster up` did for one target.
#[derive(Debug, Clone)]
pub enum UpOutcome {
    Cluster {
        cluster: EnsureOutcome,
        daemon: Option<DaemonOutcome>,
    },
    Deployment(DeployOutcome),
}

/// Every object `cluster up` applies for the targets, owner-labelled as `owner`: each
/// role's DRA objects and each Deployment's Service, then the RayClusters and
/// Deployments: what `nrl cluster up` and the script built-in `cluster::up` validate
/// offline before contacting the cluster.
pub fn up_objects(cfg: &LoadedConfig, targets: &[Target], owner: &str) -> Result<Vec<Node>> {
    let mut out = Vec::new();
    for t in targets {
        if let Target::Role(role) = t
            && let Some(c) = cfg.infra.kuberay.get(*role)
        {
            out.extend(
                dra_objects(&cfg.infra, c, *role, owner)
                    .iter()
                    .map(Node::from_json),
            );
        }
        if let Target::Deployment(key) = t
            && let Some(d) = cfg.infra.deployments.get(key)
            && let Some(svc) = deployment::service(&cfg.infra, d)?
        {
            out.push(svc);
        }
    }
    let mut main = up_manifests(&cfg.infra, targets)?;
    for m in &mut main {
        stamp_owner(m, owner);
    }
    out.extend(main);
    Ok(out)
}

/// Bring up each target in order; stops at the first failure (the error names the
/// target). An existing RayCluster that differs is updated in place.
pub async fn cluster_up(
    k8s: &K8s,
    cfg: &LoadedConfig,
    targets: &[Target],
    opts: &UpOptions,
    progress: &Progress,
) -> Result<Vec<UpOutcome>> {
    let mut out = Vec::new();
    for t in targets {
        let one = async {
            match t {
                Target::Role(role) => {
                    let ensure = EnsureOptions {
                        on_drift: if opts.recreate {
                            OnDrift::Recreate
                        } else {
                            OnDrift::Apply
                        },
                        wait: opts.wait,
                        timeout: opts.timeout,
                        force: opts.force,
                        force_conflicts: opts.force_conflicts,
                    };
                    let cluster = ensure_cluster(k8s, cfg, *role, &ensure, progress).await?;
                    let has_daemon = cluster_of(cfg, *role)?.daemon.is_some();
                    let daemon = if !has_daemon || !opts.daemons {
                        None
                    } else if !opts.wait {
                        progress.line(format!(
                            "[{}] --no-wait: daemon not submitted (it needs a ready cluster; run `cluster up` again with --wait)",
                            role.as_str()
                        ));
                        None
                    } else {
                        let d = DaemonOptions {
                            replace: false,
                            repo_root: opts.repo_root.clone(),
                            code_path: crate::launch::raycluster::daemon::code_path_of(cfg),
                        };
                        submit_daemon(k8s, cfg, *role, &d, progress).await?
                    };
                    Ok(UpOutcome::Cluster { cluster, daemon })
                }
                Target::Deployment(key) => {
                    let wait = opts.wait.then_some(opts.timeout);
                    ensure_deployment(k8s, cfg, key, wait, opts.force, progress)
                        .await
                        .map(UpOutcome::Deployment)
                }
            }
        };
        let r: Result<UpOutcome> = one.await;
        out.push(r.map_err(|e| e.context(format!("cluster up ({})", t.label())))?);
    }
    Ok(out)
}

/// Options of [`cluster_down`].
#[derive(Debug, Clone, Copy)]
pub struct DownOptions {
    /// Wait until each object and its pods are gone.
    pub wait: bool,
    pub timeout: Duration,
    pub force: bool,
}

/// Delete each target: RayClusters (then their DRA objects) and Deployments with their
/// Services. Every target's owner is checked before anything is deleted. Returns the
/// labels of targets that existed.
pub async fn cluster_down(
    k8s: &K8s,
    cfg: &LoadedConfig,
    targets: &[Target],
    opts: &DownOptions,
    progress: &Progress,
) -> Result<Vec<String>> {
    let ns = cfg.infra.namespace.as_str();
    let me = username(&*cfg.env);
    let (rcs, deployments) = (by_kind("RayCluster")?, by_kind("Deployment")?);
    for t in targets {
        let live = match t {
            Target::Role(role) => k8s.get(&rcs, ns, &cluster_of(cfg, *role)?.name).await?,
            Target::Deployment(key) => match cfg.infra.deployments.get(key) {
                Some(d) => k8s.get(&deployments, ns, &d.name).await?,
                None => None,
            },
        };
        if let Some(l) = &live {
            check_owner(l, &me, opts.force, progress)?;
        }
        // The DRA objects are deleted too: the same check.
        if let Target::Role(role) = t
            && let Some(c) = cfg.infra.kuberay.get(*role)
        {
            for obj in dra_objects(&cfg.infra, c, *role, &me) {
                let r = ObjectRef::of(&obj, ns)?;
                if let Some(l) = k8s.get(&r.resource, &r.namespace, &r.name).await? {
                    check_owner(&l, &me, opts.force, progress)?;
                }
            }
        }
    }
    let wait = opts.wait.then_some(opts.timeout);
    let mut gone = Vec::new();
    for t in targets {
        match t {
            Target::Role(role) => {
                let cluster = cluster_of(cfg, *role)?;
                let (tag, name) = (role.as_str(), cluster.name.as_str());
                let existed = match wait {
                    Some(timeout) => {
                        let step = progress.step(format!(
                            "[{tag}] deleting RayCluster {name} in namespace `{ns}` (waiting for its pods)"
                        ));
                        let e = k8s.delete_and_wait(&rcs, ns, name, timeout).await?;
                        drop(step);
                        e
                    }
                    None => {
                        progress.line(format!(
                            "[{tag}] deleting RayCluster {name} in namespace `{ns}`"
                        ));
                        k8s.delete(&rcs, ns, name).await?
                    }
                };
                progress.line(if existed {
                    format!("[{tag}] RayCluster {name} deleted.")
                } else {
                    format!("[{tag}] RayCluster {name} not found (already gone)")
                });
                delete_dra(k8s, &cfg.infra, cluster, *role, wait, progress).await?;
                if existed {
                    gone.push(t.label());
                }
            }
            Target::Deployment(key) => {
                if delete_deployment(k8s, cfg, key, wait, progress).await? {
                    gone.push(t.label());
                }
            }
        }
    }
    Ok(gone)
}
