//! The work behind the `gym` built-ins (`gym.rs`): options, connections, and the calls
//! into `crate::gym` that the handles make.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rhai::{Array, Dynamic, INT, Map, NativeCallContext};

use super::gym::{GymConfig, GymRun, RunState};
use crate::config::suggest::did_you_mean;
use crate::diag::Diag;
use crate::gym::config::GymLoadRequest;
use crate::gym::ops::apply::ApplySettings;
use crate::gym::ops::cancel::cancel_run;
use crate::gym::ops::logs::{LogRequest, stream_logs};
use crate::gym::ops::watch::view_of;
use crate::gym::record::GymRecord;
use crate::gym::session;
use crate::gym::state::BenchStatus;
use crate::gym::table::changes;
use crate::gym::view::RunView;
use crate::k8s::{ConnectOptions, K8s};
use crate::script::convert::string_list;
use crate::script::errors::{RhaiResult, fail};
use crate::script::host::{Host, host};
use crate::script::output::Stream;

const LOAD_OPTIONS: &[&str] = &["overrides", "run_id"];
const SUBMIT_OPTIONS: &[&str] = &["parallel", "apply_timeout", "context"];
const ATTACH_OPTIONS: &[&str] = &["namespace", "context"];
const LOG_OPTIONS: &[&str] = &["container", "tail"];

/// Refuse option keys a function does not know, with a did-you-mean.
fn check_options(what: &str, options: &Map, known: &[&str]) -> Result<(), Diag> {
    for key in options.keys() {
        if !known.contains(&key.as_str()) {
            let d = Diag::new(
                "nrl::script::option",
                format!("{what} has no option `{key}`"),
            );
            return Err(match did_you_mean(key, known.iter().copied()) {
                Some(s) => d.help(format!(
                    "did you mean `{s}`? (options: {})",
                    known.join(", ")
                )),
                None => d.help(format!("the options are: {}", known.join(", "))),
            });
        }
    }
    Ok(())
}

fn opt_str(options: &Map, key: &str) -> Option<String> {
    options
        .get(key)
        .filter(|v| !v.is_unit())
        .map(|v| v.to_string())
}

fn opt_int(options: &Map, key: &str, what: &str) -> Result<Option<INT>, Diag> {
    match options.get(key).filter(|v| !v.is_unit()) {
        None => Ok(None),
        Some(v) => v.as_int().map(Some).map_err(|_| {
            Diag::new(
                "nrl::script::option",
                format!("option `{key}` must be {what} (got {})", v.type_name()),
            )
        }),
    }
}

fn row_map(r: &BenchStatus) -> Dynamic {
    let mut m = Map::new();
    m.insert("benchmark".into(), r.benchmark.clone().into());
    m.insert("state".into(), r.phase.as_str().into());
    m.insert("job".into(), r.job.clone().into());
    m.insert("detail".into(), r.detail.clone().into());
    Dynamic::from_map(m)
}

pub(super) fn rows(view: &RunView) -> Array {
    view.rows().iter().map(row_map).collect()
}

pub(super) fn planned_rows(run: &GymRun) -> Array {
    let state = run.state.lock().unwrap_or_else(|e| e.into_inner());
    state
        .view
        .rows()
        .iter()
        .map(|r| {
            let mut m = row_map(r).cast::<Map>();
            m.insert("state".into(), "Planned".into());
            Dynamic::from_map(m)
        })
        .collect()
}

pub(super) fn live(run: &GymRun) -> RhaiResult<&K8s> {
    run.k8s.as_ref().ok_or_else(|| {
        fail(
            Diag::new(
                "nrl::script::planned",
                format!("run {} was only planned", run.run_id),
            )
            .help("check `run.planned` before reading a run's state or logs"),
        )
    })
}

/// A connection for `namespace`, with the host's kubeconfig and deadline.
fn connect(h: &Host, context: Option<String>, namespace: Option<String>) -> RhaiResult<K8s> {
    let base = h.connect_options();
    let opts = ConnectOptions {
        context: context.or(base.context.clone()),
        namespace: namespace.or(base.namespace.clone()),
        ..base
    };
    h.k8s_with(&opts)
}

pub(super) fn load_config(
    ctx: &NativeCallContext,
    path: &str,
    options: &Map,
) -> RhaiResult<GymConfig> {
    let h = host(ctx)?;
    check_options("gym::load()", options, LOAD_OPTIONS).map_err(fail)?;
    let mut req = GymLoadRequest::new(h.path(path), h.opts.env.clone());
    if let Some(ovs) = options.get("overrides").filter(|v| !v.is_unit()) {
        req.overrides = string_list(ovs, "`overrides`").map_err(fail)?;
    }
    let prepared = session::prepare(&req, opt_str(options, "run_id").as_deref()).map_err(fail)?;
    Ok(GymConfig {
        prepared: Arc::new(prepared),
    })
}

pub(super) fn submit_run(
    ctx: &NativeCallContext,
    cfg: &GymConfig,
    options: &Map,
) -> RhaiResult<GymRun> {
    let h = host(ctx)?;
    check_options("gym::submit()", options, SUBMIT_OPTIONS).map_err(fail)?;
    let mut settings = ApplySettings::default();
    if let Some(n) = opt_int(options, "parallel", "a number").map_err(fail)? {
        settings.parallel = usize::try_from(n).unwrap_or(1).max(1);
    }
    if let Some(s) = opt_int(options, "apply_timeout", "a number of seconds").map_err(fail)? {
        settings.timeout = Duration::from_secs(u64::try_from(s).unwrap_or(0));
    }
    let p = &cfg.prepared;
    let plan = &p.plan;
    let expected = plan
        .jobs
        .iter()
        .map(|j| (j.benchmark.clone(), j.name.clone()));
    let mut run = GymRun {
        run_id: plan.run_id.clone(),
        namespace: plan.namespace.clone(),
        planned: h.dry_run(),
        k8s: None,
        state: Arc::new(Mutex::new(RunState {
            view: RunView::new(expected),
            record: None,
        })),
    };
    if h.dry_run() {
        if let Some(note) = p.placeholder_note() {
            h.line(Stream::Stderr, &note);
        }
        if let Some(name) = plan.secret_name() {
            h.plan.record(
                "apply",
                format!("Secret/{name}"),
                format!("namespace {}; run {}", plan.namespace, plan.run_id),
            );
        }
        for j in &plan.jobs {
            h.plan.record(
                "apply",
                format!("Job/{}", j.name),
                format!("namespace {}; benchmark {}", plan.namespace, j.benchmark),
            );
        }
        return Ok(run);
    }
    p.require_secret_values().map_err(fail)?;
    let context = opt_str(options, "context").or(plan.context.clone());
    let k = connect(&h, context, Some(plan.namespace.clone()))?;
    h.announce(&k, &plan.namespace);
    let env = h.opts.env.clone();
    let started = h.block_on(async {
        let mut warn = |d: Diag| h.line(Stream::Stderr, &format!("warning: {}", d.message));
        let on_applied = |a: &crate::gym::ops::apply::Applied| {
            if let Some(e) = &a.error {
                h.line(
                    Stream::Stderr,
                    &format!("could not create the Job of `{}`: {e}", a.benchmark),
                );
            }
        };
        session::start(&k, p, &settings, env.as_ref(), on_applied, &mut warn).await
    })?;
    h.line(
        Stream::Stderr,
        &format!(
            "submitted run {} ({} benchmark Job(s))",
            plan.run_id,
            plan.jobs.len()
        ),
    );
    run.k8s = Some(k);
    run.state = Arc::new(Mutex::new(RunState {
        view: started.view,
        record: Some(started.record),
    }));
    Ok(run)
}

pub(super) fn attach_run(
    ctx: &NativeCallContext,
    run_id: &str,
    options: &Map,
) -> RhaiResult<GymRun> {
    let h = host(ctx)?;
    check_options("gym::attach()", options, ATTACH_OPTIONS).map_err(fail)?;
    crate::gym::names::parse_run_id(run_id).map_err(fail)?;
    let record = GymRecord::load(h.opts.env.as_ref(), run_id).map_err(fail)?;
    let namespace = opt_str(options, "namespace")
        .or_else(|| record.as_ref().and_then(|r| r.run.namespace.clone()));
    let context =
        opt_str(options, "context").or_else(|| record.as_ref().and_then(|r| r.run.context.clone()));
    let k = connect(&h, context, namespace)?;
    let view = view_of(record.as_ref());
    Ok(GymRun {
        run_id: run_id.to_string(),
        namespace: k.namespace.clone(),
        planned: false,
        k8s: Some(k),
        state: Arc::new(Mutex::new(RunState { view, record })),
    })
}

pub(super) fn wait_run(h: &Host, r: &GymRun, timeout: Option<Duration>) -> RhaiResult<Array> {
    if r.planned {
        h.line(
            Stream::Stderr,
            &format!("(plan) would watch run {} to the end", r.run_id),
        );
        return Ok(planned_rows(r));
    }
    let k = live(r)?.clone();
    let (mut view, mut record) = {
        let s = r.state.lock().unwrap_or_else(|e| e.into_inner());
        (s.view.clone(), s.record.clone())
    };
    let env = h.opts.env.clone();
    let follow = async {
        let mut warn = |d: Diag| h.line(Stream::Stderr, &format!("warning: {}", d.message));
        let on_change = |v: &RunView| {
            for line in changes(v) {
                h.line(Stream::Stderr, &format!("[gym] {line}"));
            }
        };
        session::follow_run(
            &k,
            &r.namespace,
            &r.run_id,
            &mut view,
            record.as_mut(),
            env.as_ref(),
            on_change,
            &mut warn,
        )
        .await
    };
    h.block_on(async {
        match timeout {
            None => follow.await,
            Some(t) => tokio::time::timeout(t, follow).await.unwrap_or_else(|_| {
                Err(Diag::api(
                    "nrl::k8s::timeout",
                    format!("run {} did not finish within {}s", r.run_id, t.as_secs()),
                )
                .help("wait longer, or look at `run.status()`"))
            }),
        }
    })?;
    let out = rows(&view);
    let mut s = r.state.lock().unwrap_or_else(|e| e.into_inner());
    s.view = view;
    s.record = record;
    Ok(out)
}

pub(super) fn read_logs(
    h: &Host,
    r: &GymRun,
    benchmark: &str,
    options: &Map,
    follow: bool,
) -> RhaiResult<String> {
    check_options("logs()", options, LOG_OPTIONS).map_err(fail)?;
    let k = live(r)?.clone();
    let req = LogRequest {
        run_id: r.run_id.clone(),
        benchmark: Some(benchmark.to_string()),
        container: opt_str(options, "container"),
        follow,
        tail: opt_int(options, "tail", "a number of lines").map_err(fail)?,
        start_timeout: None,
    };
    let mut text = String::new();
    h.block_on(stream_logs(&k, &r.namespace, &req, |_, line| {
        if follow {
            h.line(Stream::Stdout, line);
        }
        text.push_str(line);
        text.push('\n');
    }))?;
    Ok(text)
}

pub(super) fn cancel_benchmarks(h: &Host, r: &GymRun, benchmark: Option<&str>) -> RhaiResult<Map> {
    let mut out = Map::new();
    if h.dry_run() || r.planned {
        let target = match benchmark {
            Some(b) => format!("Jobs of benchmark {b} of run {}", r.run_id),
            None => format!("Jobs and Secret of run {}", r.run_id),
        };
        h.plan
            .record("delete", target, format!("namespace {}", r.namespace));
        out.insert("jobs".into(), Dynamic::from_array(Array::new()));
        out.insert("secret".into(), Dynamic::UNIT);
        return Ok(out);
    }
    let k = live(r)?.clone();
    h.announce(&k, &r.namespace);
    let (me, progress) = (
        crate::config::env::username(h.opts.env.as_ref()),
        h.progress(),
    );
    let by = crate::gym::ops::cancel::Canceller {
        me: &me,
        force: false,
        progress: &progress,
    };
    let done = h.block_on(cancel_run(
        &k,
        &r.namespace,
        &r.run_id,
        benchmark,
        Some(Duration::from_secs(120)),
        &by,
    ))?;
    if benchmark.is_none() {
        let mut state = r.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rec) = state.record.as_mut() {
            rec.run.set_status(
                crate::launch::records::RunStatus::Stopped,
                None,
                Some("cancelled".into()),
            );
            if let Err(e) = rec.save(h.opts.env.as_ref()) {
                h.line(Stream::Stderr, &format!("warning: {}", e.message));
            }
        }
    }
    out.insert(
        "jobs".into(),
        Dynamic::from_array(done.jobs.into_iter().map(Into::into).collect()),
    );
    out.insert(
        "secret".into(),
        done.secret.map_or(Dynamic::UNIT, Into::into),
    );
    Ok(out)
}
