//! `nrl run --raycluster`: training on long-lived RayClusters (ref-orchestration §3.4, §4).
//!
//! 1. Everything is checked before anything is created: the training cluster and the
//!    entrypoint, the submitter/code-source resolution, the rendered clusters and DRA
//!    objects against the bundled schemas, the training job (working_dir, size).
//! 2. A RayJob named like a role's cluster is a collision (shared head Service name).
//! 3. `--replace`: the running and pending jobs are stopped, then the endpoint registry
//!    is reset (see `replace.rs`).
//! 4. Deployments (with their Services), then for each declared role, in order
//!    generation, gym, training: ensure its cluster (`launch::raycluster::ensure_cluster`:
//!    create, or reuse; drift by dry-run apply; `--recreate`), wait until ready, submit
//!    its daemon (`launch::raycluster::daemon`: idempotent on the newest `<id>[-<ts>]`;
//!    `--skip-daemons` skips the non-training ones).
//! 5. Training is submitted with the chosen submitter; the run record is written (locally
//!    and as a ConfigMap owned by the training cluster) and the follow-up commands printed.
//! 6. With waiting on, the output is followed to the end; the exit code comes from the
//!    job's status (SUCCEEDED / exit 0 → 0, else 1). Ctrl-C detaches.

pub mod replace;
pub mod training;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::env::username;
use crate::config::layers::LoadedConfig;
use crate::config::schema::CodeSource;
use crate::config::schema::Role;
use crate::diag::{Diag, Exit, Result};
use crate::k8s::K8s;
use crate::k8s::resources::by_kind;
use crate::launch::check::validate_manifests;
use crate::launch::checks::{LaunchChecks, checklist, doctor_gate};
use crate::launch::logscan::LogScan;
use crate::launch::output::Output;
use crate::launch::owned::owner_ref;
use crate::launch::raycluster::daemon::{DaemonOptions, submit_daemon};
use crate::launch::raycluster::submit::{ModeFlags, Resolved, resolve};
use crate::launch::raycluster::{
    EnsureOptions, OnDrift, check_owner, ensure_cluster, ensure_deployment,
};
use crate::launch::rayjob::manifest::{require_entrypoint, require_training};
use crate::launch::rayjob::run::detached;
use crate::launch::records::context::{DRIVER_LOG, RunContext};
use crate::launch::records::k8s::{base_record, followups, save_everywhere};
use crate::launch::records::snapshot::save_snapshot_of_k8s_run;
use crate::launch::records::{RunRecord, RunStatus};
use crate::run_id;

pub use training::{Followed, Training};

/// Choices for a long-lived run.
#[derive(Debug, Clone, Default)]
pub struct LongLivedOptions {
    pub replace: bool,
    /// With `replace`: act on clusters of another user or with no owner label.
    pub force: bool,
    pub recreate: bool,
    pub skip_daemons: bool,
    /// Budget for each cluster to become ready, and for the training to end when waiting.
    pub timeout: Duration,
    pub flags: ModeFlags,
    /// Validate the RayClusters and Deployments offline (bundled schemas, names) before
    /// anything is applied; off, only the API server checks them (`--no-validate`).
    pub validate: bool,
}

/// How a long-lived run went.
#[derive(Debug)]
pub struct LongLivedOutcome {
    pub record: RunRecord,
    pub training: Training,
    /// `None` when nrl did not wait.
    pub followed: Option<Followed>,
    /// The log as followed (for the checklist).
    pub scan: Option<LogScan>,
}

impl LongLivedOutcome {
    pub fn exit(&self) -> Exit {
        match &self.followed {
            None => Exit::Ok,
            Some(Followed::Detached) => Exit::Interrupted,
            Some(Followed::Ended { exit, .. }) => *exit,
        }
    }
}

/// A validated long-lived run (step 1 of the module docs; no cluster calls).
#[derive(Debug, Clone)]
pub struct LongLivedPlan {
    pub code: Resolved,
    /// The declared roles and their cluster names, in order.
    pub roles: Vec<(Role, String)>,
    pub training_cluster: String,
    pub training: training::TrainingPlan,
}

/// Check and render everything a long-lived run needs before any cluster call.
pub fn plan(
    cfg: &LoadedConfig,
    ctx: &RunContext,
    opts: &LongLivedOptions,
) -> Result<LongLivedPlan> {
    require_entrypoint(cfg)?;
    let train_spec = require_training(cfg)?;
    run_id::validate(&ctx.run_id)?;
    let code = resolve(cfg, &opts.flags)?;
    let manifests = crate::render::check_manifests(&cfg.infra)?;
    if opts.validate {
        validate_manifests(&manifests)?;
    }
    let training = training::plan(cfg, &ctx.run_id, &code, &ctx.repo_root)?;
    Ok(LongLivedPlan {
        code,
        roles: cfg
            .infra
            .kuberay
            .roles()
            .map(|(r, c)| (r, c.name.clone()))
            .collect(),
        training_cluster: train_spec.name.clone(),
        training,
    })
}

/// Run `cfg` on its long-lived clusters as `ctx.run_id` (steps 2-6 of the module docs).
pub async fn run(
    k8s: &K8s,
    cfg: &LoadedConfig,
    ctx: &RunContext,
    plan: &LongLivedPlan,
    opts: &LongLivedOptions,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<LongLivedOutcome> {
    if let training::TrainingPlan::PortForward(job) = &plan.training {
        for w in &job.warnings {
            progress.status(&format!("warning: {w}"));
        }
    }
    let ns = cfg.infra.namespace.clone();
    progress.status(&format!("[run] {}", k8s.banner()));
    progress.status(&format!("[run] {}", plan.code.describe()));
    refuse_rayjob_collisions(k8s, &ns, &plan.roles).await?;
    if opts.replace {
        replace_previous(k8s, cfg, plan, opts, progress).await?;
    }
    bring_up(k8s, cfg, ctx, plan, opts, progress, cancel).await?;
    let mut submitted = submit_training(k8s, cfg, ctx, plan, progress).await?;
    if !plan.code.wait {
        return Ok(LongLivedOutcome {
            record: submitted.record,
            training: submitted.training,
            followed: None,
            scan: None,
        });
    }
    let (followed, scan) =
        follow_to_end(k8s, cfg, ctx, opts, &mut submitted, progress, cancel).await?;
    Ok(LongLivedOutcome {
        record: submitted.record,
        training: submitted.training,
        followed: Some(followed),
        scan: Some(scan),
    })
}

/// `nrl run --raycluster`, whole: the doctor gate, [`run`], the commands to re-attach or
/// stop the run when nrl stopped following it, and the checklist. Returns the exit code
/// (DESIGN §7).
#[allow(clippy::too_many_arguments)]
pub async fn launch(
    k8s: &K8s,
    cfg: &LoadedConfig,
    ctx: &RunContext,
    plan: &LongLivedPlan,
    opts: &LongLivedOptions,
    checks: &LaunchChecks,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<Exit> {
    doctor_gate(k8s, cfg, &[], checks).await?;
    let outcome = run(k8s, cfg, ctx, plan, opts, progress, cancel).await?;
    let exit = outcome.exit();
    if exit == Exit::Interrupted {
        detached(&outcome.record.id, "it keeps running", progress);
        return Ok(exit);
    }
    let scan = outcome.scan.clone();
    Ok(checklist(k8s, &outcome.record, scan, checks, exit, progress).await)
}

/// Step 2: KubeRay names the head Service `<name>-head-svc` for a RayJob and a RayCluster
/// alike, so a RayJob of a cluster's name would collide with it.
async fn refuse_rayjob_collisions(k8s: &K8s, ns: &str, roles: &[(Role, String)]) -> Result<()> {
    let rayjobs = by_kind("RayJob")?;
    for (role, name) in roles {
        if k8s.get(&rayjobs, ns, name).await?.is_some() {
            return Err(Diag::new(
                "nrl::run::name_collision",
                format!(
                    "a RayJob named `{name}` exists in namespace `{ns}`; KubeRay names the head \
                     Service `{name}-head-svc` for both, so the {role} RayCluster would collide with it"
                ),
            )
            .help(format!(
                "delete it (`kubectl delete rayjob {name} -n {ns}`) or rename the cluster"
            )));
        }
    }
    Ok(())
}

/// Step 3, `--replace`: the owner check for every cluster first (nothing is stopped if
/// one is another user's), then stop the earlier jobs, then reset the endpoint registry.
async fn replace_previous(
    k8s: &K8s,
    cfg: &LoadedConfig,
    plan: &LongLivedPlan,
    opts: &LongLivedOptions,
    progress: &mut dyn Output,
) -> Result<()> {
    let ns = cfg.infra.namespace.as_str();
    let (rcs, me) = (by_kind("RayCluster")?, username(&*cfg.env));
    for (_, name) in &plan.roles {
        if let Some(live) = k8s.get(&rcs, ns, name).await? {
            check_owner(&live, &me, opts.force, progress.progress())?;
        }
    }
    for (_, name) in &plan.roles {
        replace::stop_ray_jobs(k8s, ns, name, progress).await?;
    }
    replace::stop_exec_runs(k8s, ns, &plan.training_cluster, progress).await?;
    let gym = cfg
        .infra
        .kuberay
        .get(Role::Gym)
        .and_then(|c| c.daemon.as_ref());
    match gym.map(|d| replace::registry_job_id(&d.entrypoint)) {
        Some(Some(job_id)) => {
            replace::reset_registry(k8s, ns, &job_id, progress).await?;
        }
        Some(None) => progress.status(
            "[replace] the gym daemon's --job-id is missing or a shell expression; no endpoint registry reset",
        ),
        None => {}
    }
    Ok(())
}

/// Step 4: Deployments, then clusters and their daemons in role order. Ctrl-C stops the
/// bring-up; what exists stays and is reused by the next run.
async fn bring_up(
    k8s: &K8s,
    cfg: &LoadedConfig,
    ctx: &RunContext,
    plan: &LongLivedPlan,
    opts: &LongLivedOptions,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<()> {
    let ensure_opts = EnsureOptions {
        on_drift: if opts.recreate {
            OnDrift::Recreate
        } else {
            OnDrift::Warn
        },
        wait: true,
        timeout: opts.timeout,
        force: opts.force,
        // A conflict only matters when applying; Warn reports it, Recreate replaces.
        force_conflicts: false,
    };
    let daemon_opts = DaemonOptions {
        replace: opts.replace,
        repo_root: ctx.repo_root.clone(),
        code_path: match plan.code.code_source {
            CodeSource::Upload => None,
            _ => plan.code.code_path.clone(),
        },
    };
    let steps = async {
        for key in cfg.infra.deployments.keys() {
            ensure_deployment(
                k8s,
                cfg,
                key,
                Some(opts.timeout),
                false,
                progress.progress(),
            )
            .await?;
        }
        for (role, _) in &plan.roles {
            ensure_cluster(k8s, cfg, *role, &ensure_opts, progress.progress()).await?;
            if opts.skip_daemons && *role != Role::Training {
                if cfg
                    .infra
                    .kuberay
                    .get(*role)
                    .is_some_and(|c| c.daemon.is_some())
                {
                    progress.status(&format!(
                        "[{role}] --skip-daemons: not submitting the daemon"
                    ));
                }
                continue;
            }
            submit_daemon(k8s, cfg, *role, &daemon_opts, progress.progress()).await?;
        }
        Ok::<(), Diag>(())
    };
    tokio::select! {
        r = steps => r,
        _ = cancel.cancelled() => Err(Diag::new(
            "nrl::run::interrupted",
            "interrupted before training was submitted; the clusters brought up so far stay",
        )
        .with_exit(Exit::Interrupted)
        .help("re-run the same command to continue (ready clusters are reused)")),
    }
}

/// The submitted training with its record and the record's owners.
struct Submitted {
    training: Training,
    record: RunRecord,
    /// The training RayCluster, so the record's cluster copy goes with it.
    owners: Vec<serde_json::Value>,
}

/// Step 5: submit the training, save the record (owned by the training cluster) and print
/// the follow-up commands.
async fn submit_training(
    k8s: &K8s,
    cfg: &LoadedConfig,
    ctx: &RunContext,
    plan: &LongLivedPlan,
    progress: &mut dyn Output,
) -> Result<Submitted> {
    let (ns, train_name) = (&cfg.infra.namespace, plan.training_cluster.as_str());
    let train = training::submit(
        k8s,
        cfg,
        &ctx.run_id,
        train_name,
        &plan.training,
        &plan.code,
        progress,
    )
    .await?;
    let mut record = base_record(cfg, ctx, k8s, train.kind());
    record.cluster = Some(train_name.to_string());
    if let Some(k) = record.k8s.as_mut() {
        train.describe_into(k);
    }
    let owners = match k8s.get(&by_kind("RayCluster")?, ns, train_name).await? {
        Some(rc) => owner_ref(&rc).into_iter().collect(),
        None => Vec::new(),
    };
    let saved = save_everywhere(k8s, ctx, &record, &owners, &username(&*cfg.env), progress).await;
    let upload = match &plan.training {
        training::TrainingPlan::PortForward(job) => job.files.as_ref(),
        training::TrainingPlan::Exec { .. } => None,
    };
    save_snapshot_of_k8s_run(cfg, ctx, upload, progress).await;
    for line in followups(
        &ctx.run_id,
        ctx,
        k8s,
        ns,
        &format!("RayCluster {train_name}"),
        saved,
    ) {
        progress.status(&line);
    }
    Ok(Submitted {
        training: train,
        record,
        owners,
    })
}

/// Step 6: follow the training to its end within the timeout (the log copied to the run
/// directory's `driver.log` and scanned for the checklist), then record how it ended.
async fn follow_to_end(
    k8s: &K8s,
    cfg: &LoadedConfig,
    ctx: &RunContext,
    opts: &LongLivedOptions,
    submitted: &mut Submitted,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<(Followed, LogScan)> {
    let ns = &cfg.infra.namespace;
    tokio::fs::create_dir_all(ctx.run_dir()).await.ok();
    let copy = std::fs::File::create(ctx.run_dir().join(DRIVER_LOG)).ok();
    let mut scan = LogScan::new();
    let follow = training::follow(
        k8s,
        ns,
        &submitted.training,
        progress,
        cancel,
        copy,
        &mut scan,
    );
    let followed = match tokio::time::timeout(opts.timeout, follow).await {
        Ok(r) => r?,
        Err(_) => {
            return Err(Diag::new(
                "nrl::run::timeout",
                format!(
                    "run {} did not finish within {}s (--timeout); it keeps running",
                    ctx.run_id,
                    opts.timeout.as_secs()
                ),
            )
            .with_exit(Exit::Failed)
            .help(format!(
                "follow it: nrl job logs {id} -f; stop it: nrl job stop {id}",
                id = ctx.run_id
            )));
        }
    };
    if let Followed::Ended { status, exit, code } = &followed {
        progress.status(&format!("run {} {status}", ctx.run_id));
        let st = if *exit == Exit::Ok {
            RunStatus::Succeeded
        } else if status == "STOPPED" {
            RunStatus::Stopped
        } else {
            RunStatus::Failed
        };
        let code = code.unwrap_or(if *exit == Exit::Ok { 0 } else { 1 });
        submitted
            .record
            .set_status(st, Some(code), Some(status.clone()));
        let owner = username(&*cfg.env);
        save_everywhere(
            k8s,
            ctx,
            &submitted.record,
            &submitted.owners,
            &owner,
            progress,
        )
        .await;
    }
    Ok((followed, scan))
}
