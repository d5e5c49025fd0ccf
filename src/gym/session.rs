//! The steps of `nrl gym submit`, shared by the command and the Rhai built-ins: prepare
//! (load + render + validate, no cluster), connect, start (record + apply), follow (watch
//! to the end, explain failures, record the outcome).

use std::path::PathBuf;

use crate::config::env::{Env, username};
use crate::diag::{Diag, Exit, Result};
use crate::k8s::{ConnectOptions, K8s};
use crate::launch::records::RunStatus;

use super::config::{GymLoadRequest, LoadedGym, load};
use super::names::{new_run_id, parse_run_id, secret_name};
use super::ops::apply::{Applied, ApplySettings, apply_run};
use super::ops::watch::{explain_from_pods, watch_run};
use super::plan::{RunMeta, RunPlan, plan};
use super::record::{GymPart, GymRecord, RecordBenchmark};
use super::state::summary;
use super::view::RunView;

/// A loaded config and its rendered run.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub loaded: LoadedGym,
    pub plan: RunPlan,
    pub meta: RunMeta,
    /// The config path and overrides as given (for the record).
    pub config: PathBuf,
    pub overrides: Vec<String>,
}

fn now_seconds() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// Load, render and validate; never contacts a cluster. `run_id` (checked like `nrl run
/// --run-id`) defaults to a new `gym-<UTC yyyymmdd-hhmmss>-<4 random>`.
pub fn prepare(req: &GymLoadRequest, run_id: Option<&str>) -> Result<Prepared> {
    let loaded = load(req)?;
    let run_id = match run_id {
        Some(id) => parse_run_id(id)?.into(),
        None => new_run_id(jiff::Timestamp::now()),
    };
    let meta = RunMeta {
        run_id,
        submitted_at: now_seconds(),
        submitted_by: username(req.env.as_ref()),
    };
    let plan = plan(&loaded.config, &meta)?;
    Ok(Prepared {
        loaded,
        plan,
        meta,
        config: req.config.clone(),
        overrides: req.overrides.clone(),
    })
}

impl Prepared {
    /// Secrets rendered with a placeholder because their variable is unset here; a
    /// render says so, a submit refuses them.
    pub fn placeholder_secrets(&self) -> Vec<String> {
        self.loaded.config.placeholder_vars()
    }

    /// Refuse a run whose Secret would hold placeholders (before anything is applied).
    pub fn require_secret_values(&self) -> Result<()> {
        self.loaded.config.require_secret_values()
    }

    /// The note a render prints about placeholder secrets, if any.
    pub fn placeholder_note(&self) -> Option<String> {
        let vars = self.placeholder_secrets();
        if vars.is_empty() {
            return None;
        }
        let list = vars
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", ");
        Some(format!(
            "note: {list} not set here; the run's Secret holds placeholders such as `{}` (submitting needs the real values: export them first)",
            super::config::placeholder(&vars[0])
        ))
    }
}

/// Connect to the run's cluster: `context` (else the config's `compute.context`, else the
/// kubeconfig's current one) and the config's namespace.
pub async fn connect(
    plan: &RunPlan,
    context: Option<&str>,
    kubeconfig: Option<PathBuf>,
) -> Result<K8s> {
    let base = ConnectOptions {
        context: context.map(str::to_string),
        kubeconfig,
        ..ConnectOptions::default()
    };
    connect_with(plan, &base).await
}

/// [`connect`] with every cluster flag (`--context`, `--kubeconfig`, timeouts): the
/// flags' context, else the config's; always the run's namespace.
pub async fn connect_with(plan: &RunPlan, base: &ConnectOptions) -> Result<K8s> {
    K8s::connect(&ConnectOptions {
        context: base.context.clone().or(plan.context.clone()),
        namespace: Some(plan.namespace.clone()),
        ..base.clone()
    })
    .await
}

/// A submitted run.
#[derive(Debug, Clone)]
pub struct Started {
    pub record: GymRecord,
    pub view: RunView,
    pub applied: Vec<Applied>,
}

fn record_for(p: &Prepared, k8s: &K8s) -> GymRecord {
    let gym = GymPart {
        config: p.config.display().to_string(),
        base_run_dir: p.plan.base_run_dir.clone(),
        submitted_by: Some(p.meta.submitted_by.clone()),
        secret: p.plan.secret.as_ref().map(|_| secret_name(&p.plan.run_id)),
        benchmarks: p
            .plan
            .jobs
            .iter()
            .map(|j| RecordBenchmark {
                benchmark: j.benchmark.clone(),
                job: j.name.clone(),
                run_dir: j.run_dir.clone(),
                error: None,
                phase: None,
                detail: None,
            })
            .collect(),
    };
    let mut rec = GymRecord::new(&p.plan.run_id, gym);
    rec.run.overrides = p.overrides.clone();
    rec.run.context = Some(k8s.context.clone());
    rec.run.namespace = Some(p.plan.namespace.clone());
    rec
}

/// Save the record, warning (not failing) when the cache is not writable: the Jobs are
/// already on the cluster and findable by label.
fn save_record(rec: &GymRecord, env: &dyn Env, warn: &mut dyn FnMut(Diag)) {
    if let Err(e) = rec.save(env) {
        warn(e.warning());
    }
}

/// Record the run, then apply its Secret and Jobs.
pub async fn start(
    k8s: &K8s,
    p: &Prepared,
    settings: &ApplySettings,
    env: &dyn Env,
    on_applied: impl FnMut(&Applied),
    warn: &mut dyn FnMut(Diag),
) -> Result<Started> {
    p.require_secret_values()?;
    let mut record = record_for(p, k8s);
    save_record(&record, env, warn);
    let applied = match apply_run(k8s, &p.plan, settings, &username(env), on_applied).await {
        Ok(a) => a,
        Err(e) => {
            record
                .run
                .set_status(RunStatus::Failed, None, Some(e.message.clone()));
            save_record(&record, env, warn);
            return Err(e);
        }
    };
    let mut view = RunView::new(
        p.plan
            .jobs
            .iter()
            .map(|j| (j.benchmark.clone(), j.name.clone())),
    );
    for (a, b) in applied.iter().zip(record.gym.benchmarks.iter_mut()) {
        if let Some(err) = &a.error {
            view.apply_failed(&a.job, err);
            b.error = Some(err.clone());
        }
    }
    save_record(&record, env, warn);
    Ok(Started {
        record,
        view,
        applied,
    })
}

/// The exit code a run's rows give: 0 when every benchmark succeeded, else 1.
pub fn exit_of(view: &RunView) -> Exit {
    if view.any_failed() {
        Exit::Failed
    } else {
        Exit::Ok
    }
}

/// Write the rows' last states into the record.
pub fn update_record(record: &mut GymRecord, view: &RunView) {
    for (b, r) in record.gym.benchmarks.iter_mut().zip(view.rows()) {
        b.phase = Some(r.phase.to_string());
        b.detail = (!r.detail.is_empty()).then(|| r.detail.clone());
    }
    if view.all_terminal() {
        let status = if view.any_failed() {
            RunStatus::Failed
        } else {
            RunStatus::Succeeded
        };
        record
            .run
            .set_status(status, None, Some(summary(view.rows())));
    }
}

/// Watch until every benchmark finished, explain failures from their pods, record it.
pub async fn follow(
    k8s: &K8s,
    started: &mut Started,
    env: &dyn Env,
    on_change: impl FnMut(&RunView),
    warn: &mut dyn FnMut(Diag),
) -> Result<Exit> {
    let ns = started.record.run.namespace.clone().unwrap_or_default();
    let id = started.record.run.id.clone();
    follow_run(
        k8s,
        &ns,
        &id,
        &mut started.view,
        Some(&mut started.record),
        env,
        on_change,
        warn,
    )
    .await
}

/// [`follow`] for any view of a run (one attached to later, perhaps without a record).
#[allow(clippy::too_many_arguments)]
pub async fn follow_run(
    k8s: &K8s,
    ns: &str,
    run_id: &str,
    view: &mut RunView,
    record: Option<&mut GymRecord>,
    env: &dyn Env,
    on_change: impl FnMut(&RunView),
    warn: &mut dyn FnMut(Diag),
) -> Result<Exit> {
    watch_run(k8s, ns, run_id, view, on_change).await?;
    if let Err(e) = explain_from_pods(k8s, ns, run_id, view).await {
        warn(e.warning());
    }
    if let Some(record) = record {
        update_record(record, view);
        save_record(record, env, warn);
    }
    Ok(exit_of(view))
}
