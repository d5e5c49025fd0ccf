//! An ephemeral run with its records, in the steps `nrl run` and a script's
//! `launch::rayjob` share: start (the RayJob, then the local record and its cluster copy,
//! then the follow-up commands), and wait (the end, recorded).

use std::time::Duration;

use serde_json::Value as Json;
use tokio_util::sync::CancellationToken;

use crate::config::layers::LoadedConfig;
use crate::diag::{Exit, Result};
use crate::k8s::K8s;
use crate::launch::checks::{LaunchChecks, checklist, doctor_gate};
use crate::launch::output::Output;
use crate::launch::owned::owner_ref;
use crate::launch::rayjob::{self, RayJobRunOptions, RayJobState, RunEnd, RunOutcome, Teardown};
use crate::launch::records::context::{DRIVER_LOG, RunContext};
use crate::launch::records::k8s::{base_record, followups, save_everywhere};
use crate::launch::records::snapshot::save_snapshot_of_k8s_run;
use crate::launch::records::{RunKind, RunRecord, RunStatus};

/// The record status for an outcome.
pub fn status_of(outcome: &RunOutcome) -> (RunStatus, Option<String>) {
    match &outcome.end {
        RunEnd::Submitted | RunEnd::Detached => (RunStatus::Running, None),
        RunEnd::Cancelled => (
            RunStatus::Stopped,
            Some("interrupted before the job was submitted".into()),
        ),
        RunEnd::Finished { state, .. } => {
            let status = match outcome.job_status().as_deref() {
                Some("SUCCEEDED") => RunStatus::Succeeded,
                Some("STOPPED") => RunStatus::Stopped,
                _ if outcome.exit() == Exit::Ok => RunStatus::Succeeded,
                _ => RunStatus::Failed,
            };
            (status, state.message.clone())
        }
    }
}

/// An ephemeral run whose RayJob exists and whose job is submitted (or will be, by
/// KubeRay): what [`RayJobRun::wait`] needs, kept by `nrl run` between its steps and by a
/// script's `RayJob` handle between `launch::rayjob` and `wait()` / `follow()`.
#[derive(Debug)]
pub struct RayJobRun {
    pub plan: rayjob::RayJobPlan,
    pub opts: RayJobRunOptions,
    pub ctx: RunContext,
    /// The run record as last saved.
    pub record: RunRecord,
    /// The RayJob, as owner of the record's cluster copy.
    owners: Vec<Json>,
    /// What the last step saw of the RayJob.
    state: RayJobState,
}

/// Where [`start_rayjob_run`] left a run.
#[derive(Debug)]
pub enum RayJobStart {
    /// Submitted: the records are saved and the follow-up commands printed.
    Running(Box<RayJobRun>),
    /// It ended before the job ran: interrupted (what it created is gone), or KubeRay
    /// gave up on the cluster (recorded).
    Ended(Box<RunOutcome>, Box<RunRecord>),
}

/// Start an ephemeral run of `cfg` as `ctx.run_id` ([`rayjob::plan`] is done before
/// connecting, so bad input fails without a cluster): the RayJob and its DRA objects
/// ([`rayjob::start`]), the records (local, and on the cluster owned by the RayJob),
/// and the commands that follow, stop and verify the run.
pub async fn start_rayjob_run(
    k8s: &K8s,
    cfg: &LoadedConfig,
    ctx: RunContext,
    plan: rayjob::RayJobPlan,
    opts: RayJobRunOptions,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<RayJobStart> {
    if let Some(up) = &plan.upload {
        for w in &up.warnings {
            progress.status(&format!("warning: {w}"));
        }
    }
    let mut record = base_record(cfg, &ctx, k8s, RunKind::Rayjob);
    record.cluster = Some(plan.name.clone());
    if let Some(kr) = record.k8s.as_mut() {
        kr.rayjob = Some(plan.name.clone());
        kr.shutdown = plan.shutdown;
        kr.ttl_seconds = Some(plan.ttl_seconds);
    }
    let (live, state) = match rayjob::start(k8s, &plan, &opts, progress, cancel).await? {
        rayjob::Start::Running { live, state } => (live, state),
        rayjob::Start::Ended(outcome) => {
            // KubeRay gave up before the job ran: keep a local record of that.
            if let RunEnd::Finished { .. } = outcome.end {
                let (status, message) = status_of(&outcome);
                record.set_status(status, Some(1), message);
                if let Err(e) =
                    crate::launch::records::context::save_record(&ctx.store, &record).await
                {
                    progress.status(&format!("warning: {}", e.message));
                }
            }
            return Ok(RayJobStart::Ended(Box::new(outcome), Box::new(record)));
        }
    };
    let owners: Vec<Json> = owner_ref(&live).into_iter().collect();
    let saved = save_everywhere(k8s, &ctx, &record, &owners, &plan.owner, progress).await;
    let upload = plan.upload.as_ref().map(|u| &u.files);
    save_snapshot_of_k8s_run(cfg, &ctx, upload, progress).await;
    for line in followups(
        &plan.run_id,
        &ctx,
        k8s,
        &plan.namespace,
        &format!("RayJob {}", plan.name),
        saved,
    ) {
        progress.status(&line);
    }
    Ok(RayJobStart::Running(Box::new(RayJobRun {
        plan,
        opts,
        ctx,
        record,
        owners,
        state,
    })))
}

impl RayJobRun {
    /// The outcome of a run nobody waited for (yet).
    pub fn submitted(&self) -> RunOutcome {
        rayjob::submitted(&self.plan, self.state.cluster.clone())
    }

    /// Wait up to `timeout` for the end ([`rayjob::wait`]: with `follow_log` the driver
    /// log streams into `progress` and the run directory's `driver.log`), then record how
    /// the run ended, locally and on the cluster. Callable again: a later wait starts
    /// from what this one saw.
    pub async fn wait(
        &mut self,
        k8s: &K8s,
        follow_log: bool,
        timeout: Duration,
        progress: &mut dyn Output,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome> {
        let mut opts = self.opts.clone();
        opts.timeout = timeout;
        if follow_log && opts.log_copy.is_none() {
            let dir = self.ctx.run_dir();
            opts.log_copy = tokio::fs::create_dir_all(&dir)
                .await
                .ok()
                .map(|()| dir.join(DRIVER_LOG));
        }
        let state = self.state.clone();
        let outcome =
            rayjob::wait(k8s, &self.plan, &opts, state, follow_log, progress, cancel).await?;
        if let Some(rc) = &outcome.cluster {
            // The cluster is known and the DRA objects were handed to it.
            self.state.cluster = Some(rc.clone());
            if let Some(kr) = self.record.k8s.as_mut() {
                kr.raycluster = Some(rc.clone());
            }
        }
        let (status, message) = status_of(&outcome);
        if status != RunStatus::Running {
            let code = if outcome.exit() == Exit::Ok { 0 } else { 1 };
            self.record.set_status(status, Some(code), message);
        }
        let (ctx, record, owners) = (&self.ctx, &self.record, &self.owners);
        save_everywhere(k8s, ctx, record, owners, &self.plan.owner, progress).await;
        Ok(outcome)
    }
}

/// `nrl run`'s ephemeral run: [`start_rayjob_run`], then (unless `opts.wait` is off)
/// [`RayJobRun::wait`] following the driver log. Returns the outcome and the record.
pub async fn rayjob_run(
    k8s: &K8s,
    cfg: &LoadedConfig,
    ctx: RunContext,
    plan: rayjob::RayJobPlan,
    opts: RayJobRunOptions,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<(RunOutcome, RunRecord)> {
    let (wait, timeout) = (opts.wait, opts.timeout);
    match start_rayjob_run(k8s, cfg, ctx, plan, opts, progress, cancel).await? {
        RayJobStart::Ended(outcome, record) => Ok((*outcome, *record)),
        RayJobStart::Running(run) if !wait => Ok((run.submitted(), run.record)),
        RayJobStart::Running(mut run) => {
            let outcome = run.wait(k8s, true, timeout, progress, cancel).await?;
            Ok((outcome, run.record))
        }
    }
}

/// `nrl run` (ephemeral), whole: the doctor gate over what the run applies, [`rayjob_run`],
/// how it ended in words (with the commands to re-attach or stop it when nrl stopped
/// following), and the checklist. Returns the exit code (DESIGN §7).
#[allow(clippy::too_many_arguments)]
pub async fn launch_rayjob(
    k8s: &K8s,
    cfg: &LoadedConfig,
    ctx: RunContext,
    plan: rayjob::RayJobPlan,
    opts: RayJobRunOptions,
    checks: &LaunchChecks,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<Exit> {
    doctor_gate(k8s, cfg, &plan.manifests_as_nodes(), checks).await?;
    let (outcome, record) = rayjob_run(k8s, cfg, ctx, plan, opts, progress, cancel).await?;
    let id = &outcome.run_id;
    match &outcome.end {
        RunEnd::Submitted => progress.status(&format!(
            "run {id} submitted; nrl is not waiting (--no-wait)"
        )),
        RunEnd::Cancelled => {
            progress.status(&format!(
                "\ninterrupted: run {id} was not started; what it had created was removed"
            ));
            return Ok(Exit::Interrupted);
        }
        RunEnd::Detached => {
            detached(id, "the job keeps running", progress);
            return Ok(Exit::Interrupted);
        }
        RunEnd::Finished { teardown, .. } => {
            let status = outcome.job_status().unwrap_or_else(|| "failed".to_string());
            progress.status(&format!("run {id} {status}"));
            if *teardown == Teardown::StillPresent {
                progress.status("warning: the RayCluster is still there after its TTL");
            }
        }
    }
    let scan = match outcome.end {
        RunEnd::Finished { .. } => Some(outcome.scan.clone()),
        _ => None,
    };
    Ok(checklist(k8s, &record, scan, checks, outcome.exit(), progress).await)
}

/// What nrl says when Ctrl-C stops it following run `id` (which goes on).
pub fn detached(id: &str, goes_on: &str, progress: &mut dyn Output) {
    progress.status(&format!(
        "\ninterrupted: stopped following run {id}; {goes_on}."
    ));
    progress.status(&format!("re-attach: nrl job logs {id} -f"));
    progress.status(&format!("stop it:   nrl job stop {id}"));
}
