//! `nrl gym …`: NeMo Gym benchmark runs as Kubernetes Jobs. Parsing and printing only;
//! the work is in `crate::gym`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::config::env::{Env, ProcessEnv, username};
use crate::diag::{Diag, Exit, Result};
use crate::gym::config::GymLoadRequest;
use crate::gym::names::parse_run_id;
use crate::gym::ops::apply::ApplySettings;
use crate::gym::ops::cancel::{Canceller, cancel_run};
use crate::gym::ops::logs::{LogRequest, stream_logs};
use crate::gym::ops::watch::{read_status, view_of};
use crate::gym::record::GymRecord;
use crate::gym::session::{self, Prepared, exit_of};
use crate::gym::table;
use crate::gym::view::RunView;
use crate::k8s::K8s;
use crate::launch::Progress;
use crate::launch::records::RunStatus;
use crate::render::emit;

use super::common::KubeArgs;
use super::value_parsers::parse_duration;

/// Run NeMo Gym benchmarks as Kubernetes Jobs: one Job per benchmark, vLLM sidecars plus a
/// Gym driver in each pod.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  nrl gym render gym.yaml                      # the Jobs, offline
  nrl gym submit gym.yaml driver.benchmarks.gpqa.run.num_repeats=8
  nrl gym status gym-20260901-120000-a1b2
  nrl gym logs gym-20260901-120000-a1b2 gpqa -f
  nrl gym cancel gym-20260901-120000-a1b2")]
pub struct GymArgs {
    #[command(subcommand)]
    pub command: GymCommand,
}

#[derive(Debug, Subcommand)]
pub enum GymCommand {
    /// Render and validate every benchmark's Job; never contacts a cluster.
    #[command(after_help = "\
Secret env values (host: values named *_TOKEN, *_KEY, *_SECRET, *PASSWORD, or secret:)
are rendered as references to the run's Secret; the Secret itself is not printed. A
secret whose variable is unset here is rendered as a placeholder (`<HF_TOKEN: set at
submit>`) with a note on stderr, so rendering needs no credentials; `nrl gym submit`
refuses placeholders.

Examples:
  nrl gym render gym.yaml
  nrl gym render gym.yaml --run-id gym-eval-1 -o jobs.yaml
  nrl gym render gym.yaml compute.cluster.namespace=evals otel.enabled=false")]
    Render(RenderArgs),
    /// Submit every benchmark's Job and watch them to the end (a live table).
    #[command(after_help = "\
Exit codes: 0 every benchmark succeeded (or --no-wait and every Job was created), 1 a
benchmark failed or its Job could not be created, 2 bad input, 3 cluster API failure,
130 Ctrl-C (the run keeps going).

Examples:
  nrl gym submit gym.yaml
  nrl gym submit gym.yaml --context prod --parallel 32
  nrl gym submit gym.yaml -n evals-test --kubeconfig ~/.kube/lab.yaml
  nrl gym submit gym.yaml --no-wait driver.benchmarks.gpqa.run.num_repeats=8")]
    Submit(SubmitArgs),
    /// Show the state of every benchmark of a run.
    #[command(after_help = "\
Exit codes: 0 no benchmark failed (some may still run), 1 a benchmark failed.

Examples:
  nrl gym status gym-20260901-120000-a1b2
  nrl gym status gym-20260901-120000-a1b2 -n evals --context prod
  nrl gym status gym-20260901-120000-a1b2 -n evals --kubeconfig ~/.kube/lab.yaml
  nrl gym status gym-20260901-120000-a1b2 -o json")]
    Status(StatusArgs),
    /// Print the logs of a run's driver (or of a sidecar), for one benchmark or all.
    #[command(after_help = "\
Without BENCHMARK every benchmark's log is printed, each line prefixed with `[benchmark]`.

Examples:
  nrl gym logs gym-20260901-120000-a1b2 gpqa
  nrl gym logs gym-20260901-120000-a1b2 gpqa -f
  nrl gym logs gym-20260901-120000-a1b2 gpqa --container policy --tail 100
  nrl gym logs gym-20260901-120000-a1b2 -n evals --context prod")]
    Logs(LogsArgs),
    /// Delete a run's Jobs (and pods) and its Secret; or one benchmark's Job.
    #[command(after_help = "\
Examples:
  nrl gym cancel gym-20260901-120000-a1b2
  nrl gym cancel gym-20260901-120000-a1b2 gpqa
  nrl gym cancel gym-20260901-120000-a1b2 -n evals --kubeconfig ~/.kube/lab.yaml")]
    Cancel(CancelArgs),
}

/// `CONFIG [OVERRIDES…] [--run-id ID]`
#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// The Gym submit config (YAML; its `defaults:` chain is followed).
    pub config: PathBuf,
    /// Hydra-style overrides: `a.b=v` (creates missing keys), `+a.b=v`, `++a.b=v`, `~a.b`.
    #[arg(value_name = "OVERRIDES", add = super::completions::gym_overrides())]
    pub overrides: Vec<String>,
    /// The run id (default: gym-<UTC yyyymmdd-hhmmss>-<4 random>); names the Jobs and the run's
    /// directory on the PVC.
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
}

impl ConfigArgs {
    fn request(&self, env: Arc<dyn Env>) -> GymLoadRequest {
        let mut req = GymLoadRequest::new(self.config.clone(), env);
        req.overrides = self.overrides.clone();
        req
    }
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Write the Jobs to FILE instead of stdout (its directory must exist; never the config).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// `--context` (default: the config's `compute.<name>.context`, else the current one),
    /// `-n` (instead of the config's `compute.<name>.namespace`), `--kubeconfig`.
    #[command(flatten)]
    pub kube: KubeArgs,
    /// How many Jobs are applied at once.
    #[arg(long, value_name = "N", default_value_t = 16)]
    pub parallel: usize,
    /// Deadline for applying one Job (retries included), e.g. 60s.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub apply_timeout: Duration,
    /// Return once the Jobs exist instead of watching them to the end.
    #[arg(long)]
    pub no_wait: bool,
}

/// Where a run lives; defaults come from its local record.
#[derive(Debug, Clone, Args)]
pub struct RunTarget {
    /// The run id (`gym-20260901-120000-a1b2`), as `nrl gym submit` printed it.
    #[arg(add = super::completions::gym_run_ids())]
    pub run: String,
    /// `--context` and `-n` default to the run's local record, then to the kubeconfig's
    /// current context and its namespace; `--kubeconfig` as for every cluster command.
    #[command(flatten)]
    pub kube: KubeArgs,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub target: RunTarget,
    /// Output format; json and yaml: `{run, context, namespace, benchmarks: [{benchmark,
    /// job, phase, detail}]}`.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: super::common::Output,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    #[command(flatten)]
    pub target: RunTarget,
    /// One benchmark (as named in the config); default: all of them.
    pub benchmark: Option<String>,
    /// Keep following until the pods end (waits for a pod that has not started).
    #[arg(short, long)]
    pub follow: bool,
    /// `driver` (the default) or a service name, for that sidecar's vLLM log.
    #[arg(short, long, value_name = "NAME")]
    pub container: Option<String>,
    /// Only the last N lines.
    #[arg(long, value_name = "N")]
    pub tail: Option<i64>,
}

#[derive(Debug, Args)]
pub struct CancelArgs {
    #[command(flatten)]
    pub target: RunTarget,
    /// Only this benchmark's Job (the run's Secret stays).
    pub benchmark: Option<String>,
    /// Return without waiting for the Jobs to be gone.
    #[arg(long)]
    pub no_wait: bool,
    /// Delete Jobs and the Secret even when they are labelled `nrl-k8s/owner` as another
    /// user's, or have no such label (made by kubectl or another tool).
    #[arg(long)]
    pub force: bool,
    /// How long to wait for the Jobs to be gone.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,
}

/// Run `nrl gym …`.
pub fn run(args: GymArgs) -> Result<Exit> {
    let env: Arc<dyn Env> = Arc::new(ProcessEnv);
    if let GymCommand::Render(a) = &args.command {
        return render(a, env);
    }
    super::common::block_on(async move {
        let interrupt = super::common::cancel_on_signals()?;
        match args.command {
            GymCommand::Render(_) => Ok(Exit::Ok),
            GymCommand::Submit(a) => submit(a, env, &interrupt).await,
            GymCommand::Status(a) => status(a, env).await,
            GymCommand::Logs(a) => logs(a, env, &interrupt).await,
            GymCommand::Cancel(a) => cancel(a, env).await,
        }
    })
}

fn color() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}

fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100)
}

fn warn(d: &Diag) {
    crate::errln!("{}", d.render(color(), width()));
}

fn prepare(args: &ConfigArgs, env: Arc<dyn Env>) -> Result<Prepared> {
    prepare_request(&args.request(env), args)
}

fn prepare_request(req: &GymLoadRequest, args: &ConfigArgs) -> Result<Prepared> {
    let p = session::prepare(req, args.run_id.as_deref())?;
    for w in &p.loaded.warnings {
        warn(w);
    }
    Ok(p)
}

fn render(args: &RenderArgs, env: Arc<dyn Env>) -> Result<Exit> {
    let p = prepare(&args.config, env)?;
    let jobs = p.plan.jobs.len();
    let text = emit::to_yaml_docs(p.plan.jobs.iter().map(|j| &j.manifest));
    match &args.output {
        Some(path) => {
            let inputs: Vec<PathBuf> = p.loaded.files.iter().map(|f| f.path.clone()).collect();
            crate::launch::output_file::write_output(path, &text, &inputs)?;
            crate::errln!("wrote {jobs} Job(s) to {}", path.display());
        }
        None => crate::out!("{text}"),
    }
    crate::errln!(
        "run {}: {jobs} benchmark Job(s) in namespace `{}`",
        p.plan.run_id,
        p.plan.namespace
    );
    if let (Some(name), Some(secret)) = (p.plan.secret_name(), &p.plan.secret) {
        let keys: Vec<String> = secret
            .get("data")
            .and_then(|d| d.as_map())
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        crate::errln!(
            "plus Secret `{name}` with {} (values not shown)",
            keys.join(", ")
        );
    }
    if let Some(note) = p.placeholder_note() {
        crate::errln!("{note}");
    }
    Ok(Exit::Ok)
}

/// The live table on a terminal, transition lines otherwise (both on stderr).
struct Live {
    tty: bool,
    drawn_lines: usize,
    /// When the table was last drawn: redraws are at most every [`REDRAW`], so a run of
    /// thousands of benchmarks is not drawn whole on every Job's change.
    drawn_at: Option<std::time::Instant>,
    /// Whether the first view (every row) was printed.
    started: bool,
}

/// The shortest time between two draws of the live table.
const REDRAW: std::time::Duration = std::time::Duration::from_millis(100);

impl Live {
    fn new() -> Live {
        Live {
            tty: std::io::stderr().is_terminal(),
            drawn_lines: 0,
            drawn_at: None,
            started: false,
        }
    }

    fn show(&mut self, view: &RunView) {
        let mut err = std::io::stderr().lock();
        if self.tty {
            let now = std::time::Instant::now();
            let recent = self.drawn_at.is_some_and(|t| now - t < REDRAW);
            if recent && !view.all_terminal() {
                return;
            }
            let text = table::render(view.rows(), Some(width() as u16));
            if self.drawn_lines > 0 {
                let _ = write!(err, "\x1b[{}F\x1b[J", self.drawn_lines);
            }
            let _ = write!(err, "{text}");
            self.drawn_lines = text.lines().count();
            self.drawn_at = Some(now);
        } else {
            // Every row once, then only the rows each change touched.
            let lines = if self.started {
                table::changes(view)
            } else {
                table::transitions(&[], view.rows())
            };
            self.started = true;
            for line in lines {
                let _ = writeln!(err, "{line}");
            }
        }
    }

    fn clear(&mut self) {
        if self.tty && self.drawn_lines > 0 {
            let _ = write!(std::io::stderr(), "\x1b[{}F\x1b[J", self.drawn_lines);
            self.drawn_lines = 0;
        }
    }
}

fn reattach_hint(run: &str) -> String {
    format!(
        "follow it with `nrl gym status {run}`, `nrl gym logs {run} -f`; stop it with `nrl gym cancel {run}`"
    )
}

async fn submit(args: SubmitArgs, env: Arc<dyn Env>, cancel: &CancellationToken) -> Result<Exit> {
    let mut req = args.config.request(env.clone());
    req.namespace = args.kube.namespace.clone();
    let p = prepare_request(&req, &args.config)?;
    p.require_secret_values()?;
    let k8s = session::connect_with(&p.plan, &args.kube.connect_options()).await?;
    crate::errln!(
        "submitting run {} ({} benchmark(s)) to context `{}`, namespace `{}`",
        p.plan.run_id,
        p.plan.jobs.len(),
        k8s.context,
        p.plan.namespace
    );
    let settings = ApplySettings {
        parallel: args.parallel,
        timeout: args.apply_timeout,
    };
    let mut warn_fn = |d: Diag| warn(&d);
    let on_applied = |a: &crate::gym::ops::apply::Applied| {
        if let Some(e) = &a.error {
            crate::errln!("could not create the Job of `{}`: {e}", a.benchmark);
        }
    };
    let mut started =
        session::start(&k8s, &p, &settings, env.as_ref(), on_applied, &mut warn_fn).await?;
    let run = p.plan.run_id.clone();
    // The rendered Jobs are applied; following needs only the record and the view.
    drop(p);
    if args.no_wait {
        let failed = started.applied.iter().filter(|a| a.error.is_some()).count();
        crate::errln!(
            "{} Job(s) created; {}",
            started.applied.len() - failed,
            reattach_hint(&run)
        );
        crate::outln!("{run}");
        return Ok(if failed > 0 { Exit::Failed } else { Exit::Ok });
    }
    let mut live = Live::new();
    let outcome = {
        let follow = session::follow(
            &k8s,
            &mut started,
            env.as_ref(),
            |v| live.show(v),
            &mut warn_fn,
        );
        tokio::select! {
            r = follow => Some(r),
            _ = cancel.cancelled() => None,
        }
    };
    live.clear();
    match outcome {
        None => {
            crate::errln!("detached; run {run} keeps going: {}", reattach_hint(&run));
            Ok(Exit::Interrupted)
        }
        Some(r) => {
            let exit = r?;
            crate::out!("{}", table::render(started.view.rows(), None));
            if exit != Exit::Ok {
                crate::errln!("see why with `nrl gym logs {run} <benchmark>`");
            }
            Ok(exit)
        }
    }
}

/// Connect for a run, with the record's context and namespace as defaults.
async fn connect_run(t: &RunTarget, env: &dyn Env) -> Result<(K8s, Option<GymRecord>)> {
    parse_run_id(&t.run)?;
    let record = GymRecord::load(env, &t.run)?;
    let mut opts = t.kube.connect_options();
    opts.context = opts
        .context
        .or_else(|| record.as_ref().and_then(|r| r.run.context.clone()));
    opts.namespace = opts
        .namespace
        .or_else(|| record.as_ref().and_then(|r| r.run.namespace.clone()));
    let k8s = K8s::connect(&opts).await?;
    Ok((k8s, record))
}

async fn status(args: StatusArgs, env: Arc<dyn Env>) -> Result<Exit> {
    let (k8s, record) = connect_run(&args.target, env.as_ref()).await?;
    let ns = k8s.namespace.clone();
    let run = &args.target.run;
    let mut view = view_of(record.as_ref());
    read_status(&k8s, &ns, run, record.as_ref(), &mut view).await?;
    if view.rows().is_empty() {
        return Err(Diag::new("nrl::gym::no_run", format!("no Jobs of run `{run}` in namespace `{ns}`"))
            .help("check the run id and --namespace/--context (runs submitted here are remembered in ~/.cache/nrl/runs)"));
    }
    let data = serde_json::json!({
        "run": run, "context": k8s.context, "namespace": ns, "benchmarks": view.rows(),
    });
    if let Some(text) = args.output.data(&data) {
        crate::outln!("{text}");
        return Ok(exit_of(&view));
    }
    crate::outln!("run {run} (context `{}`, namespace `{ns}`)", k8s.context);
    crate::out!(
        "{}",
        table::render(
            view.rows(),
            std::io::stdout().is_terminal().then(|| width() as u16)
        )
    );
    Ok(exit_of(&view))
}

async fn logs(args: LogsArgs, env: Arc<dyn Env>, cancel: &CancellationToken) -> Result<Exit> {
    let (k8s, _) = connect_run(&args.target, env.as_ref()).await?;
    let ns = k8s.namespace.clone();
    let req = LogRequest {
        run_id: args.target.run.clone(),
        benchmark: args.benchmark.clone(),
        container: args.container.clone(),
        follow: args.follow,
        tail: args.tail,
        start_timeout: None,
    };
    let prefix = args.benchmark.is_none();
    let mut out = std::io::stdout().lock();
    let stream = stream_logs(&k8s, &ns, &req, |bench, line| {
        let _ = if prefix {
            writeln!(out, "[{bench}] {line}")
        } else {
            writeln!(out, "{line}")
        };
    });
    tokio::select! {
        r = stream => r.map(|_| Exit::Ok),
        _ = cancel.cancelled() => Ok(Exit::Interrupted),
    }
}

async fn cancel(args: CancelArgs, env: Arc<dyn Env>) -> Result<Exit> {
    let (k8s, record) = connect_run(&args.target, env.as_ref()).await?;
    let ns = k8s.namespace.clone();
    let run = &args.target.run;
    crate::errln!(
        "cancelling run {run} in context `{}`, namespace `{ns}`",
        k8s.context
    );
    let wait = (!args.no_wait).then_some(args.timeout);
    let (me, progress) = (username(env.as_ref()), Progress::auto());
    let by = Canceller {
        me: &me,
        force: args.force,
        progress: &progress,
    };
    let done = cancel_run(&k8s, &ns, run, args.benchmark.as_deref(), wait, &by).await?;
    if done.jobs.is_empty() && done.secret.is_none() {
        crate::errln!("nothing to delete: no Jobs of run `{run}` are left");
    }
    for j in &done.jobs {
        crate::outln!("deleted Job {j}");
    }
    if let Some(s) = &done.secret {
        crate::outln!("deleted Secret {s}");
    }
    if let Some(mut r) = record
        && args.benchmark.is_none()
    {
        r.run
            .set_status(RunStatus::Stopped, None, Some("cancelled".into()));
        if let Err(e) = r.save(env.as_ref()) {
            warn(&e.warning());
        }
    }
    Ok(Exit::Ok)
}
