//! `launch`: ephemeral RayJob runs from a script.
//!
//! `launch::rayjob(cfg, opts)` renders the run's RayJob (`crate::launch::rayjob`),
//! validates it offline, and then either records the apply (plan mode, simulated handle)
//! or applies it and returns a live handle. The handle waits on the RayJob with one watch,
//! follows the driver log through a port-forward to the head's dashboard, and keeps that
//! log for checklists. The start is the launch library's (`launch::ephemeral::start`, as
//! `nrl run`): same-name checks, DRA objects owned by the RayJob, and with `codeSource:
//! upload` the working_dir upload and submit through the head's dashboard.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rhai::plugin::*;
use rhai::{Dynamic, INT, Map};
use serde_json::Value as Json;

use super::config::Config;
use super::ray::Dashboard;
use super::render::{Manifest, rayjob_of, run_options};
use super::stream::follow_log;
use crate::config::node::Node;
use crate::diag::Diag;
use crate::k8s::K8s;
use crate::k8s::portforward::PodTarget;
use crate::k8s::resources::by_kind;
use crate::k8s::wait::{Verdict, rayjob_terminal_state, str_at};
use crate::launch::Progress;
use crate::launch::check::validate_manifests;
use crate::launch::ephemeral::{self, RayJobRunOptions, RunEnd, Start};
use crate::launch::output::Output as LaunchOutput;
use crate::ray::error::{CODE_NOT_FOUND, CODE_UNREACHABLE};
use crate::ray::{RayClient, RayClientOptions};
use crate::script::errors::{RhaiResult, at, error_code, fail};
use crate::script::host::{Host, ScriptRay, host};
use crate::script::output::Stream;

/// Default wait for a RayJob to finish: one day.
const DEFAULT_TIMEOUT: INT = 86_400;

/// Half-second retries while KubeRay has not yet submitted a Running RayJob's job.
const SUBMIT_WAIT_TRIES: u32 = 120;

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
}

#[export_module]
pub mod launch_module {
    use super::*;

    /// A fresh run id: `<prefix>-<UTC yyyymmdd-hhmmss>-<4 random>` (a DNS label of at
    /// most 40 characters; the prefix is cleaned and shortened as for recipe names).
    pub fn new_run_id(prefix: &str) -> String {
        crate::launch::runid::generate(std::path::Path::new(prefix))
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
            return Ok(planned_status());
        }
        let (k, ar) = (h.k8s()?, by_kind("RayJob").map_err(fail)?);
        let obj = h.block_on(k.get(&ar, &j.namespace, &j.name))?;
        Ok(status_map(obj.as_ref()))
    }

    /// Wait (up to a day) until the RayJob finishes, printing each state change.
    #[rhai_fn(global, pure, return_raw)]
    pub fn wait(ctx: NativeCallContext, j: &mut RayJob) -> RhaiResult<Map> {
        wait_terminal(&*host(&ctx)?, j, DEFAULT_TIMEOUT)
    }

    /// Wait up to `timeout` seconds until the RayJob finishes.
    #[rhai_fn(global, name = "wait", pure, return_raw)]
    pub fn wait_for(ctx: NativeCallContext, j: &mut RayJob, timeout: INT) -> RhaiResult<Map> {
        wait_terminal(&*host(&ctx)?, j, timeout)
    }

    /// Print the driver log until the job ends (kept for `log()`), then wait for the
    /// RayJob to finish; returns its final status.
    #[rhai_fn(global, pure, return_raw)]
    pub fn follow(ctx: NativeCallContext, j: &mut RayJob) -> RhaiResult<Map> {
        follow_driver(&*host(&ctx)?, j)
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
            .and_then(|o| str_at(o, "/status/rayClusterName"))
            .unwrap_or("");
        head_dashboard(&h, &k, &j.namespace, cluster)
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
    let (run_id, manifest) = rayjob_of(cfg, &opts).map_err(fail)?;
    validate_manifests(std::slice::from_ref(manifest.node())).map_err(fail)?;
    let wandb = cfg
        .value("logger.wandb_enabled")
        .ok()
        .and_then(|n| n.as_bool())
        .unwrap_or(false);
    let job = RayJob {
        name: manifest.name(),
        namespace: manifest.namespace(),
        run_id: run_id.clone(),
        planned: h.dry_run(),
        shutdown: opts.rayjob.shutdown_after_finishes,
        wandb,
        manifest: manifest.clone(),
        log: Arc::new(Mutex::new(String::new())),
    };
    let details = format!(
        "namespace {}; run {run_id}; shutdownAfterJobFinishes={}, ttlSecondsAfterFinished={}",
        job.namespace, opts.rayjob.shutdown_after_finishes, opts.rayjob.ttl_seconds_after_finished
    );
    if h.dry_run() {
        h.plan.record("apply", manifest.describe(), details);
        return Ok(job);
    }
    let k = h.k8s()?;
    h.announce(&k, &job.namespace);
    // The same start as `nrl run`: same-name checks, DRA objects owned by the RayJob,
    // the RayJob, and with `codeSource: upload` the working_dir upload and submit.
    let mut run = RayJobRunOptions::new(run_id.clone());
    run.name = opts.rayjob.name.clone();
    run.shutdown = opts.rayjob.shutdown_after_finishes;
    // KubeRay refuses a TTL without shutdown: unless given, it follows the choice.
    run.ttl_seconds = match (run.shutdown, options.contains_key("ttl")) {
        (false, false) => 0,
        _ => opts.rayjob.ttl_seconds_after_finished,
    };
    run.extra_labels = opts.rayjob.extra_labels.clone();
    run.wait = false;
    run.repo_root = h.path(".");
    let plan = ephemeral::plan(cfg.loaded(), &run).map_err(fail)?;
    let mut out = HostOutput {
        host: h.clone(),
        quiet: Progress::quiet(),
    };
    let cancel = h.cancel_token();
    let started = h.block_on(ephemeral::start(&k, &plan, &run, &mut out, &cancel))?;
    if let Start::Ended(o) = &started
        && matches!(o.end, RunEnd::Cancelled | RunEnd::Detached)
    {
        return Err(fail(Diag::new(
            "nrl::script::interrupted",
            "interrupted before the RayJob's job was submitted; its objects were deleted",
        )));
    }
    h.line(
        Stream::Stderr,
        &format!("applied {} ({details})", manifest.describe()),
    );
    Ok(RayJob {
        manifest: Manifest::new(Node::from_json(&plan.manifest)),
        ..job
    })
}

/// The launch library's status lines into the script's output.
struct HostOutput {
    host: Arc<Host>,
    quiet: Progress,
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
    }
}

fn planned_status() -> Map {
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
    let field = |p: &str| {
        obj.and_then(|o| str_at(o, p))
            .map(|s| Dynamic::from(s.to_string()))
            .unwrap_or(Dynamic::UNIT)
    };
    let mut m = Map::new();
    m.insert("deployment".into(), field("/status/jobDeploymentStatus"));
    m.insert("job".into(), field("/status/jobStatus"));
    m.insert("cluster".into(), field("/status/rayClusterName"));
    m.insert("job_id".into(), field("/status/jobId"));
    m.insert("message".into(), field("/status/message"));
    m.insert("exists".into(), Dynamic::from_bool(obj.is_some()));
    m.insert("planned".into(), Dynamic::FALSE);
    m
}

fn disappeared(j: &RayJob) -> Diag {
    Diag::api(
        "nrl::run::rayjob_gone",
        format!(
            "RayJob {} disappeared from {} before it finished",
            j.name, j.namespace
        ),
    )
    .help("someone deleted it, or KubeRay removed it after its TTL")
}

fn wait_terminal(h: &Host, j: &RayJob, timeout: INT) -> RhaiResult<Map> {
    if j.planned {
        return Ok(planned_status());
    }
    let (k, ar) = (h.k8s()?, by_kind("RayJob").map_err(fail)?);
    let secs = u64::try_from(timeout).unwrap_or(0);
    let mut last: Option<(String, String)> = None;
    let obj = h.block_on(k.wait_for(
        &ar,
        &j.namespace,
        &j.name,
        Duration::from_secs(secs),
        "finished",
        |o| {
            let Some(o) = o else {
                return Verdict::Fail(disappeared(j));
            };
            let d = str_at(o, "/status/jobDeploymentStatus")
                .unwrap_or("None")
                .to_string();
            let s = str_at(o, "/status/jobStatus").unwrap_or("None").to_string();
            if last.as_ref() != Some(&(d.clone(), s.clone())) {
                h.line(
                    Stream::Stderr,
                    &format!("[rayjob] {} deployment={d} job={s}", j.name),
                );
                // Under Kueue: suspended until admitted, then KubeRay resumes it.
                if d == "Suspended" {
                    h.line(
                        Stream::Stderr,
                        &format!("[rayjob] {} waiting for admission (suspended)", j.name),
                    );
                }
                last = Some((d.clone(), s));
            }
            if rayjob_terminal_state(&d) {
                Verdict::Done(o.clone())
            } else {
                Verdict::Pending
            }
        },
    ))?;
    Ok(status_map(Some(&obj)))
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

fn follow_driver(h: &Host, j: &RayJob) -> RhaiResult<Map> {
    if j.planned {
        h.line(
            Stream::Stderr,
            &format!("(plan) would follow the driver log of RayJob {}", j.name),
        );
        return Ok(planned_status());
    }
    let (k, ar) = (h.k8s()?, by_kind("RayJob").map_err(fail)?);
    // The driver exists once KubeRay names the cluster and the job id, or it is over.
    let timeout = Duration::from_secs(DEFAULT_TIMEOUT as u64);
    let obj = h.block_on(
        k.wait_for(&ar, &j.namespace, &j.name, timeout, "running", |o| {
            let Some(o) = o else {
                return Verdict::Fail(disappeared(j));
            };
            let d = str_at(o, "/status/jobDeploymentStatus").unwrap_or("");
            let started = str_at(o, "/status/jobId").is_some()
                && str_at(o, "/status/rayClusterName").is_some();
            if rayjob_terminal_state(d) || (started && d == "Running") {
                Verdict::Done(o.clone())
            } else {
                Verdict::Pending
            }
        }),
    )?;
    let st = status_map(Some(&obj));
    let get = |key: &str| st.get(key).filter(|v| !v.is_unit()).map(|v| v.to_string());
    let (Some(cluster), Some(job_id)) = (get("cluster"), get("job_id")) else {
        let note = format!(
            "RayJob {} ended before its driver log could be read",
            j.name
        );
        h.line(Stream::Stderr, &format!("warning: {note}"));
        return wait_terminal(h, j, DEFAULT_TIMEOUT);
    };
    let dashboard = match head_dashboard(h, &k, &j.namespace, &cluster) {
        Ok(d) => d,
        Err(e) => {
            let note = format!("cannot reach the driver log: {e}");
            h.line(Stream::Stderr, &format!("warning: {note}"));
            return wait_terminal(h, j, DEFAULT_TIMEOUT);
        }
    };
    // KubeRay submits the job after it reports Running; until Ray knows the id, retry.
    let mut tries = 0;
    loop {
        let followed = follow_log(h, &dashboard.client, &job_id, |chunk| {
            h.print(Stream::Stdout, chunk);
            if let Ok(mut log) = j.log.lock() {
                log.push_str(chunk);
            }
            Ok(true)
        });
        match followed {
            Ok(_) => break,
            Err(e)
                if error_code(&e).as_deref() == Some(CODE_NOT_FOUND)
                    && tries < SUBMIT_WAIT_TRIES =>
            {
                tries += 1;
                h.block_on(async {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    Ok(())
                })?;
            }
            // With shutdownAfterJobFinishes the head goes away right after the job ends.
            Err(e) if error_code(&e).as_deref() == Some(CODE_UNREACHABLE) => {
                h.line(
                    Stream::Stderr,
                    "note: the Ray dashboard went away (the cluster shuts down when the job \
                     ends); the RayJob's status has the outcome",
                );
                break;
            }
            Err(e) => return Err(e),
        }
    }
    wait_terminal(h, j, DEFAULT_TIMEOUT)
}
