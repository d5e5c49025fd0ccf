//! `gym`: NeMo Gym benchmark runs from a script, on the code paths of `nrl gym`.
//!
//! `gym::load(path, opts)` loads, renders and validates a submit config (a `GymConfig`:
//! its run id, benchmarks, warnings, the Jobs as Manifests). `gym::submit(cfg)` records
//! the run and applies its Secret and Jobs (plan mode: records the applies and returns a
//! planned handle); `gym::attach(run_id)` finds an earlier run. The `GymRun` handle reads
//! the run's table (`status`, `wait`), its logs, and cancels it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rhai::plugin::*;
use rhai::{Array, Dynamic, INT, Map};

use super::gym_run::{
    attach_run, cancel_benchmarks, live, load_config, planned_rows, read_logs, rows, submit_run,
    wait_run,
};
use super::render::Manifest;
use crate::gym::ops::watch::read_status;
use crate::gym::record::GymRecord;
use crate::gym::session::Prepared;
use crate::gym::view::RunView;
use crate::k8s::K8s;
use crate::script::errors::{RhaiResult, at};
use crate::script::host::host;

/// A loaded, rendered and validated Gym submit config.
#[derive(Clone)]
pub struct GymConfig {
    pub(super) prepared: Arc<Prepared>,
}

/// A submitted (or, in plan mode, planned) Gym run.
#[derive(Clone)]
pub struct GymRun {
    pub run_id: String,
    pub namespace: String,
    pub planned: bool,
    pub(super) k8s: Option<K8s>,
    pub(super) state: Arc<Mutex<RunState>>,
}

pub(super) struct RunState {
    pub(super) view: RunView,
    pub(super) record: Option<GymRecord>,
}

#[export_module]
pub mod gym_module {
    use super::*;

    /// Load, render and validate a Gym submit config (never contacts a cluster).
    #[rhai_fn(return_raw)]
    pub fn load(ctx: NativeCallContext, path: &str) -> RhaiResult<GymConfig> {
        at(ctx.call_position(), load_config(&ctx, path, &Map::new()))
    }

    /// `load` with options: `overrides` (array of Hydra overrides, e.g.
    /// `["driver.benchmarks.gpqa.run.num_repeats=8"]`), `run_id`.
    #[rhai_fn(name = "load", return_raw)]
    pub fn load_with(ctx: NativeCallContext, path: &str, options: Map) -> RhaiResult<GymConfig> {
        at(ctx.call_position(), load_config(&ctx, path, &options))
    }

    /// The run id the Jobs are named after.
    #[rhai_fn(global, get = "run_id", pure)]
    pub fn config_run_id(c: &mut GymConfig) -> String {
        c.prepared.plan.run_id.clone()
    }

    /// The namespace the Jobs go to.
    #[rhai_fn(global, get = "namespace", pure)]
    pub fn config_namespace(c: &mut GymConfig) -> String {
        c.prepared.plan.namespace.clone()
    }

    /// The benchmarks, in config order.
    #[rhai_fn(global, get = "benchmarks", pure)]
    pub fn config_benchmarks(c: &mut GymConfig) -> Array {
        c.prepared
            .plan
            .jobs
            .iter()
            .map(|j| j.benchmark.clone().into())
            .collect()
    }

    /// Advice from validation (idle GPUs, a short startup budget), one message each.
    #[rhai_fn(global, get = "warnings", pure)]
    pub fn config_warnings(c: &mut GymConfig) -> Array {
        c.prepared
            .loaded
            .warnings
            .iter()
            .map(|w| w.message.clone().into())
            .collect()
    }

    /// The rendered Job of every benchmark.
    #[rhai_fn(global, pure)]
    pub fn jobs(c: &mut GymConfig) -> Array {
        c.prepared
            .plan
            .jobs
            .iter()
            .map(|j| Dynamic::from(Manifest::new(j.manifest.clone())))
            .collect()
    }

    /// The env variables the run's Secret holds (names only; values are never exposed).
    #[rhai_fn(global, pure)]
    pub fn secret_keys(c: &mut GymConfig) -> Array {
        c.prepared
            .plan
            .secret
            .as_ref()
            .and_then(|s| s.get("data"))
            .and_then(|d| d.as_map())
            .map(|m| m.keys().map(|k| k.clone().into()).collect())
            .unwrap_or_default()
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn config_to_string(c: &mut GymConfig) -> String {
        let p = &c.prepared.plan;
        format!(
            "GymConfig(run {}, {} benchmark(s), namespace {})",
            p.run_id,
            p.jobs.len(),
            p.namespace
        )
    }

    /// Record the run and apply its Secret and Jobs (recorded in plan mode).
    #[rhai_fn(return_raw)]
    pub fn submit(ctx: NativeCallContext, cfg: GymConfig) -> RhaiResult<GymRun> {
        at(ctx.call_position(), submit_run(&ctx, &cfg, &Map::new()))
    }

    /// `submit` with options: `parallel` (Jobs applied at once, default 16),
    /// `apply_timeout` (seconds per Job, default 60), `context` (kube context).
    #[rhai_fn(name = "submit", return_raw)]
    pub fn submit_with(ctx: NativeCallContext, cfg: GymConfig, options: Map) -> RhaiResult<GymRun> {
        at(ctx.call_position(), submit_run(&ctx, &cfg, &options))
    }

    /// An earlier run by id: from its local record, else by label in the namespace.
    #[rhai_fn(return_raw)]
    pub fn attach(ctx: NativeCallContext, run_id: &str) -> RhaiResult<GymRun> {
        at(ctx.call_position(), attach_run(&ctx, run_id, &Map::new()))
    }

    /// `attach` with options: `namespace`, `context`.
    #[rhai_fn(name = "attach", return_raw)]
    pub fn attach_with(ctx: NativeCallContext, run_id: &str, options: Map) -> RhaiResult<GymRun> {
        at(ctx.call_position(), attach_run(&ctx, run_id, &options))
    }

    /// The run id.
    #[rhai_fn(global, get = "run_id", pure)]
    pub fn run_run_id(r: &mut GymRun) -> String {
        r.run_id.clone()
    }

    /// The namespace its Jobs are in.
    #[rhai_fn(global, get = "namespace", pure)]
    pub fn run_namespace(r: &mut GymRun) -> String {
        r.namespace.clone()
    }

    /// True in plan mode: nothing was applied.
    #[rhai_fn(global, get = "planned", pure)]
    pub fn run_planned(r: &mut GymRun) -> bool {
        r.planned
    }

    /// One row per benchmark, now: `#{benchmark, state, job, detail}` (one list of Jobs,
    /// one of pods).
    #[rhai_fn(global, pure, return_raw)]
    pub fn status(ctx: NativeCallContext, r: &mut GymRun) -> RhaiResult<Array> {
        if r.planned {
            return Ok(planned_rows(r));
        }
        let h = host(&ctx)?;
        let k = live(r)?.clone();
        let (mut view, record) = {
            let s = r.state.lock().unwrap_or_else(|e| e.into_inner());
            (s.view.clone(), s.record.clone())
        };
        h.block_on(read_status(
            &k,
            &r.namespace,
            &r.run_id,
            record.as_ref(),
            &mut view,
        ))?;
        let out = rows(&view);
        r.state.lock().unwrap_or_else(|e| e.into_inner()).view = view;
        Ok(out)
    }

    /// Watch every benchmark to the end (one watch), printing each change; returns the
    /// final rows and records the outcome.
    #[rhai_fn(global, pure, return_raw)]
    pub fn wait(ctx: NativeCallContext, r: &mut GymRun) -> RhaiResult<Array> {
        wait_run(&*host(&ctx)?, r, None)
    }

    /// `wait` for at most `timeout` seconds (an error when it runs out).
    #[rhai_fn(global, name = "wait", pure, return_raw)]
    pub fn wait_timeout(ctx: NativeCallContext, r: &mut GymRun, timeout: INT) -> RhaiResult<Array> {
        let secs = u64::try_from(timeout).unwrap_or(0);
        wait_run(&*host(&ctx)?, r, Some(Duration::from_secs(secs)))
    }

    /// Whether every benchmark succeeded, as last seen (`wait` or `status`); true when
    /// planned.
    #[rhai_fn(global, pure)]
    pub fn ok(r: &mut GymRun) -> bool {
        let state = r.state.lock().unwrap_or_else(|e| e.into_inner());
        r.planned
            || state
                .view
                .rows()
                .iter()
                .all(|row| row.phase == crate::gym::state::Phase::Succeeded)
    }

    /// A benchmark's driver log so far.
    #[rhai_fn(global, pure, return_raw)]
    pub fn logs(ctx: NativeCallContext, r: &mut GymRun, benchmark: &str) -> RhaiResult<String> {
        read_logs(&*host(&ctx)?, r, benchmark, &Map::new(), false)
    }

    /// `logs` with options: `container` (a service name for its vLLM sidecar), `tail`.
    #[rhai_fn(global, name = "logs", pure, return_raw)]
    pub fn logs_with(
        ctx: NativeCallContext,
        r: &mut GymRun,
        benchmark: &str,
        options: Map,
    ) -> RhaiResult<String> {
        read_logs(&*host(&ctx)?, r, benchmark, &options, false)
    }

    /// Print a benchmark's driver log as it comes, until its pod ends; returns it too.
    #[rhai_fn(global, pure, return_raw)]
    pub fn follow(ctx: NativeCallContext, r: &mut GymRun, benchmark: &str) -> RhaiResult<String> {
        read_logs(&*host(&ctx)?, r, benchmark, &Map::new(), true)
    }

    /// Delete the run's Jobs (their pods first) and its Secret; recorded in plan mode.
    /// Returns `#{jobs, secret}`.
    #[rhai_fn(global, pure, return_raw)]
    pub fn cancel(ctx: NativeCallContext, r: &mut GymRun) -> RhaiResult<Map> {
        cancel_benchmarks(&*host(&ctx)?, r, None)
    }

    /// Delete one benchmark's Job (the run's Secret stays).
    #[rhai_fn(global, name = "cancel", pure, return_raw)]
    pub fn cancel_one(ctx: NativeCallContext, r: &mut GymRun, benchmark: &str) -> RhaiResult<Map> {
        cancel_benchmarks(&*host(&ctx)?, r, Some(benchmark))
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn run_to_string(r: &mut GymRun) -> String {
        let planned = if r.planned { ", planned" } else { "" };
        format!("GymRun({} in {}{planned})", r.run_id, r.namespace)
    }
}
