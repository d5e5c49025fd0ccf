//! `nrl run` (the default, ephemeral mode): a RayJob that brings up its own RayCluster,
//! runs the training entrypoint once, and (with shutdown) tears the cluster down.
//!
//! Order (ref-orchestration §3.3, with DESIGN §3's changes):
//! 1. [`plan`]: validate everything (entrypoint, training cluster, run id, names, schema,
//!    TTL, the working_dir) before any API call;
//! 2. same-name checks: a finished or running RayJob of the same name is reported, and
//!    `--replace` deletes it (foreground, waiting for its cluster and DRA objects);
//! 3. DRA objects, then the RayJob (server-side apply), then the DRA objects owned by
//!    the RayJob — and later by its RayCluster, so they go when KubeRay tears it down;
//! 4. InteractiveMode (`codeSource: upload`): wait for the cluster, upload the working_dir
//!    and submit through a port-forward, set `spec.jobId`;
//! 5. wait by watch for a terminal `jobDeploymentStatus` within the timeout, streaming
//!    the driver log; the exit code comes from the Ray job status;
//! 6. with shutdown, wait until the RayCluster is gone (short TTLs).
//!
//! Ctrl-C detaches (the job keeps running); before the job is submitted it removes what
//! the run created instead, since nothing would ever run on it.

mod apply;
pub mod manifest;
mod plan;
pub mod run;
mod wait;

use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use tokio_util::sync::CancellationToken;

pub use apply::{hand_dra_to_cluster, preflight, undo};
pub use plan::{RUN_ID_LABEL, RayJobPlan, UploadPlan, manifests, plan};
pub use wait::{RayJobState, Teardown, WaitEnd, Waiter, exit_for};

use crate::config::layers::LoadedConfig;
use crate::diag::{Diag, Exit, Result};
use crate::k8s::K8s;
use crate::k8s::wait::conditions::{Condition, rayjob_finished, rayjob_in};
use crate::launch::logscan::LogScan;
use crate::launch::output::Output;
use crate::ray::JobDetails;
use crate::render::rayjob::SubmissionMode;
use crate::run_id::RunId;

/// The longest TTL `nrl run` waits out to confirm the cluster is gone.
pub const TEARDOWN_WAIT_MAX: Duration = Duration::from_secs(300);

/// The reference's (and KubeRay's documented) RayJob TTL.
pub const DEFAULT_TTL_SECONDS: i64 = 3600;

/// Choices for an ephemeral run.
#[derive(Debug, Clone)]
pub struct RayJobRunOptions {
    pub run_id: RunId,
    /// RayJob name (default: the training cluster's name).
    pub name: Option<String>,
    /// `spec.shutdownAfterJobFinishes`.
    pub shutdown: bool,
    /// `spec.ttlSecondsAfterFinished`: with shutdown, KubeRay deletes the RayCluster this
    /// long after the job ends. Must be 0 without shutdown.
    pub ttl_seconds: i64,
    /// Wait for the end (streaming the driver log); otherwise return once submitted.
    pub wait: bool,
    /// Budget for the whole wait.
    pub timeout: Duration,
    /// Delete an earlier RayJob of the same name first.
    pub replace: bool,
    /// With `replace`: delete it even when it is another user's or has no owner label.
    pub force: bool,
    /// Upload paths are relative to this directory (codeSource upload).
    pub repo_root: PathBuf,
    /// Copy the driver log here (the run directory's `driver.log`).
    pub log_copy: Option<PathBuf>,
    /// Extra labels for the RayJob (the run-id label is always added).
    pub extra_labels: IndexMap<String, String>,
    /// Validate the rendered objects offline (bundled schemas, names) before anything is
    /// applied; off, only the API server checks them (`--no-validate`).
    pub validate: bool,
}

impl RayJobRunOptions {
    pub fn new(run_id: RunId) -> RayJobRunOptions {
        RayJobRunOptions {
            run_id,
            name: None,
            shutdown: true,
            ttl_seconds: DEFAULT_TTL_SECONDS,
            wait: true,
            timeout: Duration::from_secs(86400),
            replace: false,
            force: false,
            repo_root: PathBuf::from("."),
            log_copy: None,
            extra_labels: IndexMap::new(),
            validate: true,
        }
    }
}

/// How an ephemeral run ended (from nrl's point of view).
#[derive(Debug)]
pub enum RunEnd {
    /// `--no-wait`: created and submitted; nrl did not wait.
    Submitted,
    /// Ctrl-C while waiting: the job keeps running.
    Detached,
    /// Ctrl-C before the job was submitted: what the run had created was deleted.
    Cancelled,
    /// The RayJob reached a terminal state.
    Finished {
        state: RayJobState,
        /// Ray's final details, when the log was followed to the end.
        ray: Option<Box<JobDetails>>,
        teardown: Teardown,
    },
}

/// The result of [`run_rayjob`].
#[derive(Debug)]
pub struct RunOutcome {
    pub run_id: RunId,
    pub rayjob: String,
    pub namespace: String,
    /// The RayJob's RayCluster, once KubeRay named it.
    pub cluster: Option<String>,
    pub end: RunEnd,
    /// What the launch checklist needs from the driver log.
    pub scan: LogScan,
}

impl RunOutcome {
    /// DESIGN §7: Ray job SUCCEEDED 0; FAILED/STOPPED (or a failed deployment) 1;
    /// detached 130.
    pub fn exit(&self) -> Exit {
        match &self.end {
            RunEnd::Submitted => Exit::Ok,
            RunEnd::Detached | RunEnd::Cancelled => Exit::Interrupted,
            RunEnd::Finished { state, ray, .. } => exit_for(state, ray.as_deref()),
        }
    }

    /// The Ray job status in words (`SUCCEEDED`), when known.
    pub fn job_status(&self) -> Option<String> {
        match &self.end {
            RunEnd::Finished { ray: Some(d), .. } => Some(d.status.to_string()),
            RunEnd::Finished { state, .. } => state.job.clone(),
            _ => None,
        }
    }
}

/// Plan and launch an ephemeral run of `cfg` (see the module docs): [`plan`], [`start`],
/// then (with `opts.wait`) [`wait`].
pub async fn run_rayjob(
    k8s: &K8s,
    cfg: &LoadedConfig,
    opts: &RayJobRunOptions,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<RunOutcome> {
    let plan = plan(cfg, opts)?;
    match start(k8s, &plan, opts, progress, cancel).await? {
        Start::Ended(outcome) => Ok(outcome),
        Start::Running { .. } if !opts.wait => Ok(submitted(&plan, None)),
        Start::Running { state, .. } => wait(k8s, &plan, opts, state, true, progress, cancel).await,
    }
}

/// Where [`start`] left the run.
#[derive(Debug)]
pub enum Start {
    /// The RayJob exists and its job is submitted (or KubeRay will submit it).
    Running {
        /// The live RayJob (for ownerReferences to it).
        live: serde_json::Value,
        state: RayJobState,
    },
    /// It ended before the job ran: interrupted, or KubeRay gave up on the cluster.
    Ended(RunOutcome),
}

/// The outcome of a run nrl did not wait for.
pub fn submitted(plan: &RayJobPlan, cluster: Option<String>) -> RunOutcome {
    outcome(plan, RunEnd::Submitted, cluster, LogScan::new())
}

fn outcome(plan: &RayJobPlan, end: RunEnd, cluster: Option<String>, scan: LogScan) -> RunOutcome {
    RunOutcome {
        run_id: plan.run_id.clone(),
        rayjob: plan.name.clone(),
        namespace: plan.namespace.clone(),
        cluster,
        end,
        scan,
    }
}

/// Steps 2-4: same-name checks, DRA objects, the RayJob, ownership; in InteractiveMode
/// also the wait for the cluster and the upload and submit.
pub async fn start(
    k8s: &K8s,
    plan: &RayJobPlan,
    opts: &RayJobRunOptions,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<Start> {
    progress.status(&format!("[rayjob] {}", k8s.banner()));
    // Nothing is created yet: Ctrl-C (e.g. while --replace waits) just stops.
    tokio::select! {
        r = preflight(k8s, plan, opts.replace, opts.force, &mut *progress) => r?,
        _ = cancel.cancelled() => {
            return Ok(Start::Ended(outcome(plan, RunEnd::Cancelled, None, LogScan::new())));
        }
    }
    let live = apply::create(k8s, plan, progress).await?;
    let (SubmissionMode::Interactive, Some(upload)) = (plan.mode, &plan.upload) else {
        return Ok(Start::Running {
            live,
            state: RayJobState::default(),
        });
    };
    let mut waiter = Waiter::new(k8s, plan, progress, cancel);
    waiter.progress.status(
        "[rayjob] waiting for the RayCluster to come up (KubeRay: Waiting) to upload the working_dir",
    );
    let ready = waiter
        .until(
            opts.timeout,
            "in state Waiting (its RayCluster ready for the upload)",
            rayjob_finished().or(rayjob_in("Waiting")),
        )
        .await;
    let state = match ready {
        Ok(Some(state)) => state,
        Ok(None) => {
            // Nothing runs yet; a RayJob left Waiting would hold its cluster forever.
            waiter
                .progress
                .status("[rayjob] interrupted before the job was submitted; deleting the RayJob");
            undo(k8s, plan).await;
            return Ok(Start::Ended(outcome(
                plan,
                RunEnd::Cancelled,
                None,
                LogScan::new(),
            )));
        }
        Err(e) => {
            undo(k8s, plan).await;
            return Err(e.context("waiting for the RayJob's cluster"));
        }
    };
    if state.is_terminal() {
        let cluster = state.cluster.clone();
        let end = RunEnd::Finished {
            state,
            ray: None,
            teardown: Teardown::Deleted,
        };
        return Ok(Start::Ended(outcome(plan, end, cluster, LogScan::new())));
    }
    let cluster = state.cluster.clone().unwrap_or_default();
    let submitted = tokio::select! {
        r = apply::submit_upload(k8s, plan, upload, &cluster, &mut *waiter.progress) => r.map(Some),
        _ = cancel.cancelled() => Ok(None),
    };
    match submitted {
        Ok(Some(())) => Ok(Start::Running { live, state }),
        other => {
            waiter
                .progress
                .status("[rayjob] the job was not submitted; deleting the RayJob");
            undo(k8s, plan).await;
            other?;
            Ok(Start::Ended(outcome(
                plan,
                RunEnd::Cancelled,
                Some(cluster),
                LogScan::new(),
            )))
        }
    }
}

/// Steps 5-6: wait for the end (with `follow_log`, streaming the driver log, copied to
/// `opts.log_copy`), then check the teardown. `state` is what [`start`] saw.
pub async fn wait(
    k8s: &K8s,
    plan: &RayJobPlan,
    opts: &RayJobRunOptions,
    state: RayJobState,
    follow_log: bool,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<RunOutcome> {
    let log_copy = match &opts.log_copy {
        Some(path) => Some(std::fs::File::create(path).map_err(|e| {
            Diag::new(
                "nrl::run::log_copy",
                format!("cannot write {}: {e}", path.display()),
            )
        })?),
        None => None,
    };
    let mut waiter = Waiter::new(k8s, plan, progress, cancel);
    waiter.follow_log = follow_log;
    waiter.log_copy = log_copy;
    // start() already saw the cluster (InteractiveMode) and handed the DRA objects over.
    waiter.dra_with_cluster |= state.cluster.is_some();
    waiter.state = state;
    match waiter.to_the_end(opts.timeout).await {
        Ok(WaitEnd::Detached { state }) => {
            let scan = std::mem::take(&mut waiter.scan);
            Ok(outcome(plan, RunEnd::Detached, state.cluster, scan))
        }
        Ok(WaitEnd::Terminal { state, ray }) => {
            let mut line = format!("[rayjob] {} finished: {}", plan.name, state.pair());
            if let Some(d) = &ray {
                line.push_str(&format!(" (Ray: {})", d.status));
            }
            waiter.progress.status(&line);
            if let Some(m) = state.message.as_deref().filter(|m| !m.is_empty()) {
                let first = m.lines().next().unwrap_or("");
                waiter
                    .progress
                    .status(&format!("[rayjob] message: {first}"));
            }
            let teardown = waiter.teardown(TEARDOWN_WAIT_MAX).await;
            let scan = std::mem::take(&mut waiter.scan);
            let cluster = state.cluster.clone();
            let end = RunEnd::Finished {
                state,
                ray,
                teardown,
            };
            Ok(outcome(plan, end, cluster, scan))
        }
        Err(e) if e.code == "nrl::k8s::timeout" => Err(Diag::new(
            "nrl::run::timeout",
            format!(
                "RayJob {} did not finish within {}s (--timeout); it keeps running",
                plan.name,
                opts.timeout.as_secs()
            ),
        )
        .with_exit(Exit::Failed)
        .help(format!(
            "follow it: nrl job logs {} -f; stop it: nrl job stop {}",
            plan.run_id, plan.run_id
        ))),
        Err(e) => Err(e),
    }
}
