//! `ray`: a Ray dashboard (`Dashboard`) and the jobs submitted to it (`Submission`),
//! over the same `crate::ray` client `nrl job` uses. Submitting and stopping are
//! recorded in plan mode; reads pass `Host::ray`, which refuses them in plan mode unless
//! reads are allowed.

use std::sync::Arc;
use std::time::Duration;

use rhai::plugin::*;
use rhai::{Array, Dynamic, FLOAT, FnPtr, INT, Map};

use super::stream::follow_log;
use crate::diag::Diag;
use crate::k8s::portforward::PortForward as Forward;
use crate::ray::{
    JobSpec, JobStatus, PackageOptions, RayClient, RayClientOptions, SubmitRequest, UploadSet,
    stop_job, submit_job, wait_terminal,
};
use crate::script::convert::to_dynamic;
use crate::script::errors::{RhaiResult, at, fail, usage};
use crate::script::host::{Host, ScriptRay, host};
use crate::script::output::Stream;

/// A Ray dashboard (`ray::dashboard("http://127.0.0.1:8265")`).
#[derive(Clone)]
pub struct Dashboard {
    pub client: ScriptRay,
    /// The port-forward the client goes through, kept open while a handle uses it.
    pub forward: Option<Arc<Forward>>,
}

/// A job submitted to a dashboard; `planned` in plan mode (nothing was submitted).
#[derive(Clone)]
pub struct Submission {
    pub client: ScriptRay,
    pub id: String,
    pub planned: bool,
    pub forward: Option<Arc<Forward>>,
}

const SUBMIT_KEYS: [&str; 8] = [
    "entrypoint",
    "submission_id",
    "env",
    "metadata",
    "working_dir",
    "entrypoint_num_cpus",
    "entrypoint_num_gpus",
    "entrypoint_memory",
];

#[export_module]
pub mod ray_module {
    use super::*;

    /// A client for the Ray dashboard at `address` (`http://host:port`; `host:port`
    /// means http). Every call has a 30 s deadline and retries transient failures.
    #[rhai_fn(return_raw)]
    pub fn dashboard(ctx: NativeCallContext, address: &str) -> RhaiResult<Dashboard> {
        at(ctx.call_position(), connect(address, &Map::new()))
    }

    /// A dashboard client with options: `token` (bearer token), `timeout` (seconds per
    /// call, retries included).
    #[rhai_fn(name = "dashboard", return_raw)]
    pub fn dashboard_with(
        ctx: NativeCallContext,
        address: &str,
        options: Map,
    ) -> RhaiResult<Dashboard> {
        at(ctx.call_position(), connect(address, &options))
    }

    /// The dashboard's address.
    #[rhai_fn(global, get = "address", pure)]
    pub fn address(d: &mut Dashboard) -> String {
        d.client.address().to_string()
    }

    /// `#{version, ray_version, …}` from `/api/version`.
    #[rhai_fn(global, pure, return_raw)]
    pub fn version(ctx: NativeCallContext, d: &mut Dashboard) -> RhaiResult<Dynamic> {
        let h = host(&ctx)?;
        let v = h.block_on(h.ray(&d.client)?.version())?;
        let mut m = Map::new();
        m.insert("version".into(), v.version.into());
        m.insert("ray_version".into(), v.ray_version.into());
        Ok(Dynamic::from_map(m))
    }

    /// Every job the dashboard knows: `[#{submission_id, status, entrypoint, …}, …]`.
    #[rhai_fn(global, pure, return_raw)]
    pub fn list(ctx: NativeCallContext, d: &mut Dashboard) -> RhaiResult<Array> {
        let h = host(&ctx)?;
        let jobs = h.block_on(h.ray(&d.client)?.list_jobs())?;
        Ok(jobs.iter().map(to_dynamic).collect())
    }

    /// Submit a shell command as a job (recorded in plan mode).
    #[rhai_fn(global, pure, return_raw)]
    pub fn submit(
        ctx: NativeCallContext,
        d: &mut Dashboard,
        entrypoint: &str,
    ) -> RhaiResult<Submission> {
        let mut spec = Map::new();
        spec.insert("entrypoint".into(), entrypoint.into());
        submit_spec(&ctx, d, &spec)
    }

    /// Submit a job described by a map: `entrypoint` (required), `submission_id`,
    /// `env` (map), `metadata` (map), `working_dir` (a directory under the working
    /// directory, uploaded unless Ray has it), `entrypoint_num_cpus`,
    /// `entrypoint_num_gpus`, `entrypoint_memory` (bytes). Recorded in plan mode.
    #[rhai_fn(global, name = "submit", pure, return_raw)]
    pub fn submit_map(
        ctx: NativeCallContext,
        d: &mut Dashboard,
        spec: Map,
    ) -> RhaiResult<Submission> {
        submit_spec(&ctx, d, &spec)
    }

    /// A handle on an existing job.
    #[rhai_fn(global, pure)]
    pub fn job(d: &mut Dashboard, id: &str) -> Submission {
        Submission {
            client: d.client.clone(),
            id: id.to_string(),
            planned: false,
            forward: d.forward.clone(),
        }
    }

    /// A job's details: `#{status, message, start_time, end_time, driver_exit_code, …}`.
    #[rhai_fn(global, pure, return_raw)]
    pub fn status(ctx: NativeCallContext, d: &mut Dashboard, id: &str) -> RhaiResult<Dynamic> {
        details(&*host(&ctx)?, &job(d, id))
    }

    /// A job's whole log so far.
    #[rhai_fn(global, pure, return_raw)]
    pub fn logs(ctx: NativeCallContext, d: &mut Dashboard, id: &str) -> RhaiResult<String> {
        let h = host(&ctx)?;
        if let Some(text) = sim_logs(&h, id) {
            return Ok(text);
        }
        h.block_on(h.ray(&d.client)?.logs(id))
    }

    /// Follow a job's log until it ends and return its lines.
    #[rhai_fn(global, pure, return_raw)]
    pub fn tail(ctx: NativeCallContext, d: &mut Dashboard, id: &str) -> RhaiResult<Array> {
        tail_lines(&*host(&ctx)?, &job(d, id))
    }

    /// Follow a job's log, calling `callback(chunk)` for each new piece of text until the
    /// job ends (returns its details) or the callback returns `false` (returns `()`).
    #[rhai_fn(global, name = "tail", pure, return_raw)]
    pub fn tail_with(
        ctx: NativeCallContext,
        d: &mut Dashboard,
        id: &str,
        callback: FnPtr,
    ) -> RhaiResult<Dynamic> {
        tail_callback(&ctx, &job(d, id), &callback)
    }

    /// Print a job's log to stdout until it ends; returns its details.
    #[rhai_fn(global, pure, return_raw)]
    pub fn follow(ctx: NativeCallContext, d: &mut Dashboard, id: &str) -> RhaiResult<Dynamic> {
        follow_to_stdout(&*host(&ctx)?, &job(d, id))
    }

    /// Stop a job and wait (up to 60 s) until Ray reports it ended (recorded in plan mode).
    #[rhai_fn(global, pure, return_raw)]
    pub fn stop(ctx: NativeCallContext, d: &mut Dashboard, id: &str) -> RhaiResult<Dynamic> {
        stop_submission(&*host(&ctx)?, &job(d, id))
    }

    /// Wait (up to 1 hour) until a job ends; returns its details.
    #[rhai_fn(global, pure, return_raw)]
    pub fn wait(ctx: NativeCallContext, d: &mut Dashboard, id: &str) -> RhaiResult<Dynamic> {
        wait_submission(&*host(&ctx)?, &job(d, id), 3600.0)
    }

    /// Wait up to `timeout` seconds until a job ends; returns its details.
    #[rhai_fn(global, name = "wait", pure, return_raw)]
    pub fn wait_for(
        ctx: NativeCallContext,
        d: &mut Dashboard,
        id: &str,
        timeout: INT,
    ) -> RhaiResult<Dynamic> {
        wait_submission(&*host(&ctx)?, &job(d, id), timeout as FLOAT)
    }

    /// The submission id.
    #[rhai_fn(global, get = "id", pure)]
    pub fn id(s: &mut Submission) -> String {
        s.id.clone()
    }

    /// True in plan mode: the job was recorded, not submitted.
    #[rhai_fn(global, get = "planned", pure)]
    pub fn planned(s: &mut Submission) -> bool {
        s.planned
    }

    /// The dashboard the job runs on.
    #[rhai_fn(global, get = "dashboard", pure)]
    pub fn submission_dashboard(s: &mut Submission) -> Dashboard {
        Dashboard {
            client: s.client.clone(),
            forward: s.forward.clone(),
        }
    }

    /// The job's status: `PENDING`, `RUNNING`, `SUCCEEDED`, `FAILED`, `STOPPED`
    /// (`PLANNED` in plan mode).
    #[rhai_fn(global, name = "status", pure, return_raw)]
    pub fn submission_status(ctx: NativeCallContext, s: &mut Submission) -> RhaiResult<String> {
        let d = details(&*host(&ctx)?, s)?;
        Ok(d.read_lock::<Map>()
            .and_then(|m| m.get("status").map(|v| v.to_string()))
            .unwrap_or_default())
    }

    /// The job's details as a map.
    #[rhai_fn(global, name = "details", pure, return_raw)]
    pub fn submission_details(ctx: NativeCallContext, s: &mut Submission) -> RhaiResult<Dynamic> {
        details(&*host(&ctx)?, s)
    }

    /// The job's whole log so far.
    #[rhai_fn(global, name = "logs", pure, return_raw)]
    pub fn submission_logs(ctx: NativeCallContext, s: &mut Submission) -> RhaiResult<String> {
        let h = host(&ctx)?;
        if s.planned {
            return Ok(String::new());
        }
        if let Some(text) = sim_logs(&h, &s.id) {
            return Ok(text);
        }
        h.block_on(h.ray(&s.client)?.logs(&s.id))
    }

    /// Follow the log until the job ends and return its lines.
    #[rhai_fn(global, name = "tail", pure, return_raw)]
    pub fn submission_tail(ctx: NativeCallContext, s: &mut Submission) -> RhaiResult<Array> {
        tail_lines(&*host(&ctx)?, s)
    }

    /// Follow the log calling `callback(chunk)`; `false` from the callback stops.
    #[rhai_fn(global, name = "tail", pure, return_raw)]
    pub fn submission_tail_with(
        ctx: NativeCallContext,
        s: &mut Submission,
        callback: FnPtr,
    ) -> RhaiResult<Dynamic> {
        tail_callback(&ctx, s, &callback)
    }

    /// Print the log to stdout until the job ends; returns its details.
    #[rhai_fn(global, name = "follow", pure, return_raw)]
    pub fn submission_follow(ctx: NativeCallContext, s: &mut Submission) -> RhaiResult<Dynamic> {
        follow_to_stdout(&*host(&ctx)?, s)
    }

    /// Stop the job (recorded in plan mode).
    #[rhai_fn(global, name = "stop", pure, return_raw)]
    pub fn submission_stop(ctx: NativeCallContext, s: &mut Submission) -> RhaiResult<Dynamic> {
        stop_submission(&*host(&ctx)?, s)
    }

    /// Wait (up to 1 hour) until the job ends.
    #[rhai_fn(global, name = "wait", pure, return_raw)]
    pub fn submission_wait(ctx: NativeCallContext, s: &mut Submission) -> RhaiResult<Dynamic> {
        wait_submission(&*host(&ctx)?, s, 3600.0)
    }

    /// Wait up to `timeout` seconds until the job ends.
    #[rhai_fn(global, name = "wait", pure, return_raw)]
    pub fn submission_wait_for(
        ctx: NativeCallContext,
        s: &mut Submission,
        timeout: INT,
    ) -> RhaiResult<Dynamic> {
        wait_submission(&*host(&ctx)?, s, timeout as FLOAT)
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn dashboard_string(d: &mut Dashboard) -> String {
        format!("Dashboard({})", d.client.address())
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn submission_string(s: &mut Submission) -> String {
        let planned = if s.planned { ", planned" } else { "" };
        format!("Submission({}{planned})", s.id)
    }
}

fn connect(address: &str, options: &Map) -> RhaiResult<Dashboard> {
    let mut opts = RayClientOptions::default();
    for (key, value) in options {
        match key.as_str() {
            "token" => opts.token = Some(value.to_string()),
            "timeout" => {
                let secs = value
                    .as_float()
                    .or_else(|_| value.as_int().map(|i| i as FLOAT))
                    .ok()
                    .and_then(|s| Duration::try_from_secs_f64(s).ok());
                opts.timeout = secs.ok_or_else(|| {
                    usage(
                        "nrl::script::option",
                        "`timeout` must be a number of seconds",
                        "e.g. #{timeout: 10}",
                    )
                })?;
            }
            other => {
                return Err(usage(
                    "nrl::script::option",
                    format!("dashboard() has no option `{other}`"),
                    "the options are `token` and `timeout`",
                ));
            }
        }
    }
    Ok(Dashboard {
        client: ScriptRay::new(RayClient::new(address, opts).map_err(fail)?),
        forward: None,
    })
}

fn submit_spec(ctx: &NativeCallContext, d: &Dashboard, spec: &Map) -> RhaiResult<Submission> {
    let h = host(ctx)?;
    for key in spec.keys() {
        if !SUBMIT_KEYS.contains(&key.as_str()) {
            return Err(usage(
                "nrl::script::option",
                format!("submit() has no key `{key}`"),
                "the keys are entrypoint, submission_id, env, metadata, working_dir, entrypoint_num_cpus, entrypoint_num_gpus, entrypoint_memory",
            ));
        }
    }
    let entrypoint = spec
        .get("entrypoint")
        .map(|v| v.to_string())
        .unwrap_or_default();
    let mut request = SubmitRequest::new(entrypoint.clone());
    request.submission_id = spec.get("submission_id").map(|v| v.to_string());
    let pairs = |key: &str| -> Vec<(String, String)> {
        spec.get(key)
            .and_then(|v| {
                v.read_lock::<Map>().map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                })
            })
            .unwrap_or_default()
    };
    for (k, v) in pairs("env") {
        let (k, v) = crate::ray::submit::parse_env_pair(&format!("{k}={v}")).map_err(fail)?;
        request.runtime_env.env_vars.insert(k, v);
    }
    request.metadata.extend(pairs("metadata"));
    let number = |key: &str| {
        spec.get(key).and_then(|v| {
            v.as_float()
                .ok()
                .or_else(|| v.as_int().ok().map(|i| i as FLOAT))
        })
    };
    request.entrypoint_num_cpus = number("entrypoint_num_cpus");
    request.entrypoint_num_gpus = number("entrypoint_num_gpus");
    request.entrypoint_memory = number("entrypoint_memory").map(|m| m.max(0.0) as u64);
    let working_dir = match spec.get("working_dir") {
        Some(dir) => {
            let path = super::util::confined(&h, &dir.to_string()).map_err(fail)?;
            Some(UploadSet::from_directory(&path).map_err(fail)?)
        }
        None => None,
    };
    if h.dry_run() {
        let n = h.plan.record(
            "submit",
            format!("ray job at {}", d.client.address()),
            first_line(&entrypoint),
        );
        let id = request
            .submission_id
            .clone()
            .unwrap_or_else(|| format!("planned-{n}"));
        return Ok(Submission {
            client: d.client.clone(),
            id,
            planned: true,
            forward: d.forward.clone(),
        });
    }
    let job = JobSpec {
        request,
        working_dir,
        package: PackageOptions {
            progress: h.opts.output.is_terminal(Stream::Stderr),
            ..PackageOptions::default()
        },
    };
    let submitted = h.block_on(submit_job(h.ray(&d.client)?, job))?;
    h.line(
        Stream::Stderr,
        &format!(
            "submitted job {} to {}",
            submitted.submission_id,
            d.client.address()
        ),
    );
    Ok(Submission {
        client: d.client.clone(),
        id: submitted.submission_id,
        planned: false,
        forward: d.forward.clone(),
    })
}

fn first_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or("");
    if s.lines().nth(1).is_some() {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

fn planned_details(s: &Submission) -> Dynamic {
    let mut m = Map::new();
    m.insert("submission_id".into(), s.id.clone().into());
    m.insert("status".into(), "PLANNED".into());
    m.insert("planned".into(), Dynamic::TRUE);
    Dynamic::from_map(m)
}

/// In a test, a Ray job's log as the simulation has it (empty when none was scripted);
/// `None`: not a test.
fn sim_logs(h: &Host, id: &str) -> Option<String> {
    h.sim_log(id).map(Option::unwrap_or_default)
}

/// In a test, a Ray job's details as the simulation says (`sim::rayjob_ends`; a job
/// with only a log is `RUNNING`); `None`: not a test.
fn sim_details(h: &Host, id: &str) -> Option<RhaiResult<Dynamic>> {
    let end = h.sim_job_end(id)?;
    let (status, message) = match end {
        Some(e) => (e.status, e.message),
        None if matches!(h.sim_log(id), Some(Some(_))) => ("RUNNING".to_string(), None),
        None => {
            return Some(Err(fail(
                Diag::api(
                    "nrl::ray::not_found",
                    format!("the simulated dashboard has no job {id}"),
                )
                .help("script it with sim::rayjob_ends(id, status) or sim::log(id, text)"),
            )));
        }
    };
    let mut m = Map::new();
    m.insert("submission_id".into(), id.into());
    m.insert("status".into(), status.into());
    m.insert(
        "message".into(),
        message.map(Dynamic::from).unwrap_or(Dynamic::UNIT),
    );
    Some(Ok(Dynamic::from_map(m)))
}

fn details(h: &Host, s: &Submission) -> RhaiResult<Dynamic> {
    if s.planned {
        return Ok(planned_details(s));
    }
    if let Some(d) = sim_details(h, &s.id) {
        return d;
    }
    Ok(to_dynamic(&h.block_on(h.ray(&s.client)?.status(&s.id))?))
}

fn tail_lines(h: &Host, s: &Submission) -> RhaiResult<Array> {
    if s.planned {
        return Ok(Array::new());
    }
    if let Some(text) = sim_logs(h, &s.id) {
        return Ok(text.lines().map(|l| Dynamic::from(l.to_string())).collect());
    }
    let mut text = String::new();
    follow_log(h, &s.client, &s.id, |chunk| {
        text.push_str(chunk);
        Ok(true)
    })?;
    Ok(text.lines().map(|l| Dynamic::from(l.to_string())).collect())
}

fn tail_callback(ctx: &NativeCallContext, s: &Submission, callback: &FnPtr) -> RhaiResult<Dynamic> {
    let h = host(ctx)?;
    if s.planned {
        return Ok(planned_details(s));
    }
    if let Some(text) = sim_logs(&h, &s.id) {
        if !text.is_empty() {
            let more: Dynamic = callback.call_within_context(ctx, (text,))?;
            if !more.as_bool().unwrap_or(true) {
                return Ok(Dynamic::UNIT);
            }
        }
        return sim_details(&h, &s.id).unwrap_or(Ok(Dynamic::UNIT));
    }
    let done = follow_log(&h, &s.client, &s.id, |chunk| {
        let r: Dynamic = callback.call_within_context(ctx, (chunk.to_string(),))?;
        Ok(r.as_bool().unwrap_or(true))
    })?;
    Ok(done.map(|d| to_dynamic(&d)).unwrap_or(Dynamic::UNIT))
}

fn follow_to_stdout(h: &Host, s: &Submission) -> RhaiResult<Dynamic> {
    if s.planned {
        h.line(
            Stream::Stderr,
            &format!("(plan) would follow the log of job {}", s.id),
        );
        return Ok(planned_details(s));
    }
    if let Some(text) = sim_logs(h, &s.id) {
        h.print(Stream::Stdout, &text);
        return sim_details(h, &s.id).unwrap_or(Ok(Dynamic::UNIT));
    }
    let done = follow_log(h, &s.client, &s.id, |chunk| {
        h.print(Stream::Stdout, chunk);
        Ok(true)
    })?;
    Ok(done.map(|d| to_dynamic(&d)).unwrap_or(Dynamic::UNIT))
}

fn stop_submission(h: &Host, s: &Submission) -> RhaiResult<Dynamic> {
    if h.dry_run() || s.planned {
        h.plan.record(
            "stop",
            format!("ray job {}", s.id),
            format!("at {}", s.client.address()),
        );
        let mut m = Map::new();
        m.insert("submission_id".into(), s.id.clone().into());
        m.insert("status".into(), JobStatus::Stopped.as_str().into());
        m.insert("planned".into(), Dynamic::TRUE);
        return Ok(Dynamic::from_map(m));
    }
    let outcome = h.block_on(stop_job(h.ray(&s.client)?, &s.id, Duration::from_secs(60)))?;
    Ok(to_dynamic(&outcome.details))
}

fn wait_submission(h: &Host, s: &Submission, timeout: FLOAT) -> RhaiResult<Dynamic> {
    if s.planned {
        return Ok(planned_details(s));
    }
    if let Some(d) = sim_details(h, &s.id) {
        return d;
    }
    let Ok(t) = Duration::try_from_secs_f64(timeout) else {
        return Err(fail(Diag::new(
            "nrl::script::option",
            format!("invalid timeout {timeout}"),
        )));
    };
    Ok(to_dynamic(&h.block_on(wait_terminal(
        h.ray(&s.client)?,
        &s.id,
        t,
    ))?))
}
