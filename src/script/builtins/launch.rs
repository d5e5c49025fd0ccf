//! `launch`: ephemeral RayJob runs from a script, through the launch library's steps as
//! `nrl run` takes them (`crate::launch::rayjob::run`).
//!
//! `launch::rayjob(cfg, opts)` plans the run (`rayjob::plan`: rendered and validated
//! offline) and either records the apply (plan mode, simulated handle) or starts it
//! (`start_rayjob_run`: same-name checks, DRA objects owned by the RayJob, with
//! `codeSource: upload` the working_dir upload and submit, the run record locally and on
//! the cluster) and returns a live handle. `wait()` and `follow()` are the run's wait step
//! (`RayJobRun::wait`): one watch on the RayJob, the DRA objects handed to its RayCluster,
//! with `follow()` the driver log streamed (and kept for checklists), the record updated
//! when it ends. So `nrl job logs|stop <id>` find a playbook's run as they find `nrl run`'s.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rhai::plugin::*;
use rhai::{Dynamic, INT, Map};
use serde_json::Value as Json;

use super::config::Config;
use super::ray::Dashboard;
use super::render::{Manifest, run_options};
use super::run::run_context;
use crate::config::node::Node;
use crate::diag::Diag;
use crate::k8s::K8s;
use crate::k8s::portforward::PodTarget;
use crate::k8s::resources::by_kind;
use crate::launch::Progress;
use crate::launch::output::Output as LaunchOutput;
use crate::launch::rayjob::run::{RayJobRun, RayJobStart, start_rayjob_run};
use crate::launch::rayjob::{self, RayJobRunOptions, RayJobState, RunEnd};
use crate::ray::{RayClient, RayClientOptions};
use crate::script::errors::{RhaiResult, at, fail};
use crate::script::host::{Host, ScriptRay, host};
use crate::script::output::Stream;

/// Default wait for a RayJob to finish: one day.
const DEFAULT_TIMEOUT: INT = 86_400;

/// A RayJob launched (or, in plan mode, planned) by a script.
#[derive(Clone)]
pub struct RayJob {
    pub name: String,
    pub namespace: String,
    pub run_id: String,
    pub planned: bool,
    pub manifest: Manifest,
    pub shutdown: bool,
    /// `logger.wandb_enabled` of the recipe.
    pub wandb: bool,
    /// The driver log seen by `follow()`.
    log: Arc<Mutex<String>>,
    /// The launched run between its steps (`None` in plan mode, or when it ended before
    /// its job ran).
    run: Option<Arc<Mutex<RayJobRun>>>,
}

#[export_module]
pub mod launch_module {
    use super::*;

    /// A fresh run id: `<prefix>-<UTC yyyymmdd-hhmmss>-<4 random>` (a DNS label of at
    /// most 40 characters; the prefix is cleaned and shortened as for recipe names).
    pub fn new_run_id(prefix: &str) -> String {
        crate::run_id::generate(std::path::Path::new(prefix))
    }

    /// Launch the pair as an ephemeral RayJob (training cluster; the cluster goes away
    /// when the job ends). Rendered and validated first; recorded in plan mode.
    #[rhai_fn(return_raw)]
    pub fn rayjob(ctx: NativeCallContext, cfg: Config) -> RhaiResult<RayJob> {
        at(ctx.call_position(), launch_rayjob(&ctx, &cfg, &Map::new()))
    }

    /// `rayjob` with options: `run_id`, `name` (RayJob name; default the cluster's),
    /// `ttl` (seconds the cluster stays after the job), `shutdown` (default true),
    /// `labels` (extra labels).
    #[rhai_fn(name = "rayjob", return_raw)]
    pub fn rayjob_with(ctx: NativeCallContext, cfg: Config, options: Map) -> RhaiResult<RayJob> {
        at(ctx.call_position(), launch_rayjob(&ctx, &cfg, &options))
    }

    /// The RayJob's name.
    #[rhai_fn(global, get = "name", pure)]
    pub fn name(j: &mut RayJob) -> String {
        j.name.clone()
    }

    /// The namespace it runs in.
    #[rhai_fn(global, get = "namespace", pure)]
    pub fn namespace(j: &mut RayJob) -> String {
        j.namespace.clone()
    }

    /// The run id (`NRL_RUN_ID` in the pod).
    #[rhai_fn(global, get = "run_id", pure)]
    pub fn run_id(j: &mut RayJob) -> String {
        j.run_id.clone()
    }

    /// True in plan mode: nothing was applied.
    #[rhai_fn(global, get = "planned", pure)]
    pub fn planned(j: &mut RayJob) -> bool {
        j.planned
    }

    /// The RayJob manifest that was (or would be) applied.
    #[rhai_fn(global, get = "manifest", pure)]
    pub fn manifest(j: &mut RayJob) -> Manifest {
        j.manifest.clone()
    }

    /// Whether KubeRay deletes the cluster when the job ends.
    #[rhai_fn(global, get = "shutdown", pure)]
    pub fn shutdown(j: &mut RayJob) -> bool {
        j.shutdown
    }

    /// Whether the recipe logs to Weights & Biases (`logger.wandb_enabled`).
    #[rhai_fn(global, get = "wandb", pure)]
    pub fn wandb(j: &mut RayJob) -> bool {
        j.wandb
    }

    /// `#{deployment, job, cluster, job_id, message, exists, planned}` from the RayJob's
    /// status (`deployment` is KubeRay's jobDeploymentStatus, `job` the Ray job status).
    #[rhai_fn(global, pure, return_raw)]
    pub fn status(ctx: NativeCallContext, j: &mut RayJob) -> RhaiResult<Map> {
        let h = host(&ctx)?;
        if j.planned {
            return Ok(planned_status(&h, &j.name));
        }
        let (k, ar) = (h.k8s()?, by_kind("RayJob").map_err(fail)?);
        let obj = h.block_on(k.get(&ar, &j.namespace, &j.name))?;
        Ok(status_map(obj.as_ref()))
    }

    /// Wait (up to a day) until the RayJob finishes, printing each state change; the run
    /// record says how it ended.
    /// Returns the final status map. Example: `let st = job.wait(); print(st.job);`
    #[rhai_fn(global, pure, return_raw)]
    pub fn wait(ctx: NativeCallContext, j: &mut RayJob) -> RhaiResult<Map> {
        wait_for_end(&host(&ctx)?, j, DEFAULT_TIMEOUT, false)
    }

    /// Wait up to `timeout` seconds until the RayJob finishes.
    #[rhai_fn(global, name = "wait", pure, return_raw)]
    pub fn wait_for(ctx: NativeCallContext, j: &mut RayJob, timeout: INT) -> RhaiResult<Map> {
        wait_for_end(&host(&ctx)?, j, timeout, false)
    }

    /// Print the driver log until the job ends (kept for `log()`, copied to the run's
    /// `driver.log`) while waiting for the RayJob to finish, as `nrl run` does; returns
    /// its final status. Example: `let st = launch::rayjob(cfg).follow();`
    #[rhai_fn(global, pure, return_raw)]
    pub fn follow(ctx: NativeCallContext, j: &mut RayJob) -> RhaiResult<Map> {
        wait_for_end(&host(&ctx)?, j, DEFAULT_TIMEOUT, true)
    }

    /// The driver log `follow()` saw.
    #[rhai_fn(global, pure)]
    pub fn log(j: &mut RayJob) -> String {
        j.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// A dashboard client through a port-forward to the job's head pod.
    #[rhai_fn(global, pure, return_raw)]
    pub fn dashboard(ctx: NativeCallContext, j: &mut RayJob) -> RhaiResult<Dashboard> {
        let h = host(&ctx)?;
        if j.planned {
            return Err(fail(
                Diag::new("nrl::script::planned", "a planned RayJob has no dashboard")
                    .help("check `dry_run()` before talking to the job's cluster"),
            ));
        }
        let (k, ar) = (h.k8s()?, by_kind("RayJob").map_err(fail)?);
        let obj = h.block_on(k.get(&ar, &j.namespace, &j.name))?;
        let cluster = obj
            .as_ref()
            .and_then(|o| RayJobState::of(o).cluster)
            .unwrap_or_default();
        head_dashboard(&h, &k, &j.namespace, &cluster)
    }

    /// Delete the RayJob (recorded in plan mode); returns whether it existed.
    #[rhai_fn(global, pure, return_raw)]
    pub fn delete(ctx: NativeCallContext, j: &mut RayJob) -> RhaiResult<bool> {
        let h = host(&ctx)?;
        if h.dry_run() || j.planned {
            h.plan.record(
                "delete",
                format!("RayJob/{}", j.name),
                format!("namespace {}", j.namespace),
            );
            return Ok(true);
        }
        let (k, ar) = (h.k8s()?, by_kind("RayJob").map_err(fail)?);
        h.announce(&k, &j.namespace);
        h.block_on(k.delete(&ar, &j.namespace, &j.name))
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn to_string(j: &mut RayJob) -> String {
        let planned = if j.planned { ", planned" } else { "" };
        format!(
            "RayJob({}/{}, run {}{planned})",
            j.namespace, j.name, j.run_id
        )
    }
}

fn launch_rayjob(ctx: &NativeCallContext, cfg: &Config, options: &Map) -> RhaiResult<RayJob> {
    let h = host(ctx)?;
    let opts = run_options(options, &[]).map_err(fail)?;
    // The run as `nrl run` makes it: its id unused on this machine, a record in the
    // script's run store, the upload paths read from the working directory.
    let rc = run_context(&h, cfg, opts.run_id.as_deref(), None)?;
    let mut run = RayJobRunOptions::new(rc.run_id.clone());
    run.name = opts.rayjob.name.clone();
    run.shutdown = opts.rayjob.shutdown_after_finishes;
    run.ttl_seconds = opts.rayjob.ttl_seconds_after_finished;
    run.extra_labels = opts.rayjob.extra_labels.clone();
    run.wait = false;
    run.repo_root = rc.repo_root.clone();
    // Validated here, in plan mode too: a plan shows the RayJob the launch would apply.
    let plan = rayjob::plan(cfg.loaded(), &run).map_err(fail)?;
    let wandb = cfg
        .value("logger.wandb_enabled")
        .ok()
        .and_then(|n| n.as_bool())
        .unwrap_or(false);
    let mut job = RayJob {
        name: plan.name.clone(),
        namespace: plan.namespace.clone(),
        run_id: plan.run_id.to_string(),
        planned: h.dry_run(),
        shutdown: plan.shutdown,
        wandb,
        manifest: Manifest::new(Node::from_json(&plan.manifest)),
        log: Arc::new(Mutex::new(String::new())),
        run: None,
    };
    let details = format!(
        "namespace {}; run {}; shutdownAfterJobFinishes={}, ttlSecondsAfterFinished={}",
        job.namespace, job.run_id, plan.shutdown, plan.ttl_seconds
    );
    if h.dry_run() {
        h.plan
            .record_apply(job.manifest.describe(), details, plan.manifest.clone());
        return Ok(job);
    }
    let k = h.k8s()?;
    h.announce(&k, &job.namespace);
    let mut out = HostOutput::new(&h, None);
    let cancel = h.cancel_token();
    let started = h.block_on(start_rayjob_run(
        &k,
        cfg.loaded(),
        rc,
        plan,
        run,
        &mut out,
        &cancel,
    ))?;
    match started {
        RayJobStart::Ended(o, _) if matches!(o.end, RunEnd::Cancelled | RunEnd::Detached) => {
            return Err(fail(Diag::new(
                "nrl::script::interrupted",
                "interrupted before the RayJob's job was submitted; its objects were deleted",
            )));
        }
        // KubeRay gave up before the job ran (recorded): `wait()` reports the RayJob.
        RayJobStart::Ended(..) => {}
        RayJobStart::Running(r) => job.run = Some(Arc::new(Mutex::new(*r))),
    }
    h.line(
        Stream::Stderr,
        &format!("applied {} ({details})", job.manifest.describe()),
    );
    Ok(job)
}

/// The launch library's status lines into the script's output; the driver log to its
/// stdout and, when following, into the handle's `log()`.
struct HostOutput {
    host: Arc<Host>,
    quiet: Progress,
    kept: Option<Arc<Mutex<String>>>,
}

impl HostOutput {
    fn new(host: &Arc<Host>, kept: Option<Arc<Mutex<String>>>) -> HostOutput {
        HostOutput {
            host: host.clone(),
            quiet: Progress::quiet(),
            kept,
        }
    }
}

impl LaunchOutput for HostOutput {
    fn progress(&self) -> &Progress {
        &self.quiet
    }

    fn status(&mut self, line: &str) {
        self.host.line(Stream::Stderr, line);
    }

    fn log(&mut self, chunk: &str) {
        self.host.print(Stream::Stdout, chunk);
        if let Some(mut kept) = self.kept.as_ref().and_then(|k| k.lock().ok()) {
            kept.push_str(chunk);
        }
    }
}

/// A planned RayJob's status: how the test's simulation says it ends
/// (`sim::rayjob_ends`), else `Planned`/`PLANNED`.
fn planned_status(h: &Host, name: &str) -> Map {
    let Some(Some(end)) = h.sim_job_end(name) else {
        return plan_only_status();
    };
    // KubeRay's jobDeploymentStatus for the Ray job's status.
    let deployment = match end.status.as_str() {
        "SUCCEEDED" | "STOPPED" => "Complete",
        "FAILED" => "Failed",
        _ => "Running",
    };
    let mut m = plan_only_status();
    m.insert("deployment".into(), deployment.into());
    m.insert("job".into(), end.status.into());
    m.insert(
        "message".into(),
        end.message.map(Dynamic::from).unwrap_or(Dynamic::UNIT),
    );
    m.insert("exists".into(), Dynamic::TRUE);
    m
}

fn plan_only_status() -> Map {
    let mut m = Map::new();
    m.insert("deployment".into(), "Planned".into());
    m.insert("job".into(), "PLANNED".into());
    m.insert("cluster".into(), Dynamic::UNIT);
    m.insert("job_id".into(), Dynamic::UNIT);
    m.insert("message".into(), Dynamic::UNIT);
    m.insert("exists".into(), Dynamic::FALSE);
    m.insert("planned".into(), Dynamic::TRUE);
    m
}

fn status_map(obj: Option<&Json>) -> Map {
    match obj {
        Some(o) => state_map(&RayJobState::of(o)),
        None => {
            let mut m = state_map(&RayJobState::default());
            m.insert("exists".into(), Dynamic::FALSE);
            m
        }
    }
}

/// What a RayJob's status says, as the script sees it (`()` for what it does not say).
fn state_map(state: &RayJobState) -> Map {
    let field = |v: &Option<String>| v.clone().map(Dynamic::from).unwrap_or(Dynamic::UNIT);
    let mut m = Map::new();
    m.insert("deployment".into(), field(&state.deployment));
    m.insert("job".into(), field(&state.job));
    m.insert("cluster".into(), field(&state.cluster));
    m.insert("job_id".into(), field(&state.job_id));
    m.insert("message".into(), field(&state.message));
    m.insert("exists".into(), Dynamic::TRUE);
    m.insert("planned".into(), Dynamic::FALSE);
    m
}

/// `wait()` / `follow()`: the launch library's wait step ([`RayJobRun::wait`], as `nrl
/// run`), which watches the RayJob, hands its DRA objects to the RayCluster, follows the
/// driver log when asked, and keeps the run record up to date.
fn wait_for_end(h: &Arc<Host>, j: &RayJob, timeout: INT, follow_log: bool) -> RhaiResult<Map> {
    if j.planned {
        if follow_log {
            match h.sim_log(&j.name) {
                // A test's scripted driver log: printed and kept as a followed one is.
                Some(Some(text)) => {
                    h.print(Stream::Stdout, &text);
                    if let Ok(mut log) = j.log.lock() {
                        *log = text;
                    }
                }
                _ => h.line(
                    Stream::Stderr,
                    &format!("(plan) would follow the driver log of RayJob {}", j.name),
                ),
            }
        }
        return Ok(planned_status(h, &j.name));
    }
    let k = h.k8s()?;
    let Some(run) = &j.run else {
        // It ended before its job ran: the RayJob's status says how.
        let ar = by_kind("RayJob").map_err(fail)?;
        let obj = h.block_on(k.get(&ar, &j.namespace, &j.name))?;
        return Ok(status_map(obj.as_ref()));
    };
    let kept = follow_log.then(|| {
        // A new follow reads the log from its start.
        if let Ok(mut log) = j.log.lock() {
            log.clear();
        }
        j.log.clone()
    });
    let mut out = HostOutput::new(h, kept);
    let cancel = h.cancel_token();
    let timeout = Duration::from_secs(u64::try_from(timeout).unwrap_or(0));
    let mut run = run.lock().map_err(|_| {
        fail(Diag::new(
            "nrl::script::state",
            format!(
                "the handle of RayJob {} is unusable after an earlier failure",
                j.name
            ),
        ))
    })?;
    let outcome = h.block_on(run.wait(&k, follow_log, timeout, &mut out, &cancel))?;
    match outcome.end {
        RunEnd::Finished { state, .. } => Ok(state_map(&state)),
        _ => Err(fail(Diag::new(
            "nrl::script::interrupted",
            format!(
                "interrupted while waiting for RayJob {}; it keeps running",
                j.name
            ),
        ))),
    }
}

/// A Ray client through a port-forward to the head pod of `cluster`; the forward stays
/// open while the returned handle (or a clone) lives.
fn head_dashboard(h: &Host, k: &K8s, namespace: &str, cluster: &str) -> RhaiResult<Dashboard> {
    if cluster.is_empty() {
        return Err(fail(
            Diag::api("nrl::run::no_cluster", "the RayJob has no RayCluster yet")
                .help("wait until its status names a cluster (`job.status().cluster`)"),
        ));
    }
    let target = PodTarget::Selector(format!("ray.io/cluster={cluster},ray.io/node-type=head"));
    let fwd = h.block_on(k.port_forward(namespace, target, 8265))?;
    Ok(Dashboard {
        client: ScriptRay::new(
            RayClient::new(&fwd.url(), RayClientOptions::default()).map_err(fail)?,
        ),
        forward: Some(fwd),
    })
}
