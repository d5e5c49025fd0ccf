//! `run`: `nrl run --local` and `nrl run --ray-address` from a script, through
//! `crate::launch::local` and `crate::launch::ray_run`, and the run records they keep
//! (`<cache>/nrl/runs/<id>.json` with the run directory `<id>/`).
//!
//! A local run streams its output to the script's stdout (unless `quiet`) and to its
//! `driver.log`; Ctrl-C stops it as `nrl run --local` does (interrupt, grace period,
//! kill) and records it as stopped before the script ends. A Ray run is submitted and,
//! by default, followed to its end. Both are recorded in plan mode, which neither stages
//! files nor contacts a dashboard.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use rhai::plugin::*;
use rhai::{Array, Dynamic, INT, Map};
use tokio::io::AsyncWrite;

use super::config::Config;
use super::options::Options;
use super::ray::Submission;
use crate::diag::Diag;
use crate::launch::diff::{DiffTarget, diff_launches};
use crate::launch::local;
use crate::launch::local::process::Interrupts;
use crate::launch::ray_run::{self, RayEnded, RayRun};
use crate::launch::records::context::{DRIVER_LOG, RunContext, resolve_run_id};
use crate::launch::records::listing::{RunsFilter, RunsOptions};
use crate::launch::records::{RunKind, RunRecord, RunStatus, RunStore};
use crate::launch::stage::stage;
use crate::ray::{RayClient, RayClientOptions};
use crate::script::convert::to_dynamic;
use crate::script::errors::{RhaiResult, at, fail, usage};
use crate::script::host::{Host, ScriptRay, host};
use crate::script::output::{Output, Stream};

/// A run started by `run::local` or `run::on_ray` (simulated in plan mode).
#[derive(Clone)]
pub struct Run {
    pub id: String,
    pub planned: bool,
    store: RunStore,
    /// The record as last read.
    record: RunRecord,
    /// A Ray run submitted with `follow: false`, until `follow()` takes it.
    pending: Option<Arc<Mutex<Option<RayRun>>>>,
    client: Option<ScriptRay>,
    /// Keep a followed log off stdout (`quiet: true`).
    quiet: bool,
}

#[export_module]
pub mod run_module {
    use super::*;

    /// Run the pair here as a local process — `nrl run --local`: staged into its run
    /// directory, the entrypoint's output streamed to stdout and kept in `driver.log`,
    /// the run record kept up to date. Returns when it ends (a failed run is not an
    /// error: look at `r.status` and `r.exit_code`). Recorded in plan mode.
    #[rhai_fn(return_raw)]
    pub fn local(ctx: NativeCallContext, cfg: Config) -> RhaiResult<Run> {
        at(ctx.call_position(), run_local(&ctx, &cfg, &Map::new()))
    }

    /// `local` with options: `run_id` (default generated), `repo_root` (where the upload
    /// paths are read; default the working directory), `quiet` (keep the output in
    /// `driver.log` only).
    #[rhai_fn(name = "local", return_raw)]
    pub fn local_with(ctx: NativeCallContext, cfg: Config, options: Map) -> RhaiResult<Run> {
        at(ctx.call_position(), run_local(&ctx, &cfg, &options))
    }

    /// Submit the pair to the Ray dashboard at `address` and follow it to its end —
    /// `nrl run --ray-address`: the staged tree is the job's working_dir, the run id its
    /// submission id; the followed log is copied to `driver.log`. Recorded in plan mode.
    #[rhai_fn(return_raw)]
    pub fn on_ray(ctx: NativeCallContext, cfg: Config, address: &str) -> RhaiResult<Run> {
        at(
            ctx.call_position(),
            run_on_ray(&ctx, &cfg, address, &Map::new()),
        )
    }

    /// `on_ray` with options: `run_id`, `repo_root`, `token` (dashboard bearer token),
    /// `follow` (default true; false returns once submitted: `r.follow()` later),
    /// `quiet` (do not print the log while following).
    #[rhai_fn(name = "on_ray", return_raw)]
    pub fn on_ray_with(
        ctx: NativeCallContext,
        cfg: Config,
        address: &str,
        options: Map,
    ) -> RhaiResult<Run> {
        at(
            ctx.call_position(),
            run_on_ray(&ctx, &cfg, address, &options),
        )
    }

    /// Every run record on this machine, newest first: `[#{id, kind, status, exit_code,
    /// created_at, recipe, run_dir, message, …}, …]`.
    #[rhai_fn(return_raw)]
    pub fn records(ctx: NativeCallContext) -> RhaiResult<Array> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Array> {
                let store = store_of(&*host(&ctx)?)?;
                let records = store.list().map_err(fail)?;
                Ok(records.iter().map(to_dynamic).collect())
            })(),
        )
    }

    /// The recorded runs, newest first, as `nrl runs` shows them: `[#{id, kind, status,
    /// recorded_status, status_source, detail, where, created_at, recipe, wandb_url,
    /// origin, run_dir}, …]`. A running run's status is asked of its cluster or Ray
    /// dashboard (not in plan mode: there the records are shown as they are).
    ///
    /// ```rhai
    /// for r in run::list() { print(`${r.id} ${r.status}`); }
    /// ```
    #[rhai_fn(name = "list", return_raw)]
    pub fn list(ctx: NativeCallContext) -> RhaiResult<Array> {
        at(ctx.call_position(), list_runs(&ctx, &Map::new()))
    }

    /// `list` with options, as `nrl runs` takes them: `status` (a name or a list:
    /// `["failed", "lost"]`), `recipe` (text the recipe path contains), `since` (`"2d"`,
    /// `"6h"`, or seconds), `refresh` (default true outside plan mode), `cluster` (true:
    /// also the records kept in the script's namespace, like `nrl runs -n NS`).
    ///
    /// ```rhai
    /// let failed = run::list(#{status: ["failed", "lost"], since: "2d"});
    /// ```
    #[rhai_fn(name = "list", return_raw)]
    pub fn list_with(ctx: NativeCallContext, options: Map) -> RhaiResult<Array> {
        at(ctx.call_position(), list_runs(&ctx, &options))
    }

    /// What changed between two recorded runs, as `nrl diff A B` compares them (from
    /// their launch snapshots): `#{a, b, changes: [#{section, key, a, b, a_set_by,
    /// b_set_by}]}`, `changes` empty when they are the same launch.
    ///
    /// ```rhai
    /// let d = run::diff("grpo-20261201-090000-ab12", "grpo-20261202-100000-cd34");
    /// for c in d.changes { print(`${c.key}: ${c.a} -> ${c.b}`); }
    /// ```
    #[rhai_fn(name = "diff", return_raw)]
    pub fn diff_runs(ctx: NativeCallContext, a: &str, b: &str) -> RhaiResult<Dynamic> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Dynamic> {
                let store = store_of(&*host(&ctx)?)?;
                let d = diff_launches(&store, a, &DiffTarget::Run(b)).map_err(fail)?;
                Ok(to_dynamic(&d))
            })(),
        )
    }

    /// Run `a` against a recipe as it would launch now (`nrl diff A RECIPE …`): the
    /// config's recipe, infra and overrides, its code read from the working directory.
    ///
    /// ```rhai
    /// let cfg = recipe("recipe.yaml", #{infra: "infra.yaml"});
    /// if run::diff("grpo-20261201-090000-ab12", cfg).changes.is_empty() { print("same launch"); }
    /// ```
    #[rhai_fn(name = "diff", return_raw)]
    pub fn diff_config(ctx: NativeCallContext, a: &str, cfg: Config) -> RhaiResult<Dynamic> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Dynamic> {
                let h = host(&ctx)?;
                let store = store_of(&h)?;
                let request = cfg.request();
                let target = DiffTarget::Config {
                    cfg: cfg.loaded(),
                    infra: request.infra.as_deref(),
                    overrides: &request.overrides,
                    repo_root: &h.opts.workdir,
                };
                let d = diff_launches(&store, a, &target).map_err(fail)?;
                Ok(to_dynamic(&d))
            })(),
        )
    }

    /// The record of run `id` as a map; an error when there is none.
    #[rhai_fn(return_raw)]
    pub fn record(ctx: NativeCallContext, id: &str) -> RhaiResult<Dynamic> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Dynamic> {
                let store = store_of(&*host(&ctx)?)?;
                Ok(to_dynamic(&store.load(id).map_err(fail)?))
            })(),
        )
    }

    /// The run id.
    #[rhai_fn(global, get = "id", pure)]
    pub fn id(r: &mut Run) -> String {
        r.id.clone()
    }

    /// `local` or `ray`.
    #[rhai_fn(global, get = "kind", pure)]
    pub fn kind(r: &mut Run) -> String {
        r.record.kind.as_str().to_string()
    }

    /// `running`, `succeeded`, `failed`, `stopped` (`planned` in plan mode), as last read.
    #[rhai_fn(global, get = "status", pure)]
    pub fn status(r: &mut Run) -> String {
        if r.planned {
            "planned".to_string()
        } else {
            r.record.status.as_str().to_string()
        }
    }

    /// Whether the run succeeded (true for a planned run).
    #[rhai_fn(global, get = "ok", pure)]
    pub fn ok(r: &mut Run) -> bool {
        r.planned || r.record.status == RunStatus::Succeeded
    }

    /// The entrypoint's exit code (128 + N after signal N), or `()`.
    #[rhai_fn(global, get = "exit_code", pure)]
    pub fn exit_code(r: &mut Run) -> Dynamic {
        r.record
            .exit_code
            .map(|c| Dynamic::from_int(INT::from(c)))
            .unwrap_or(Dynamic::UNIT)
    }

    /// One line on how the run ended, or `()`.
    #[rhai_fn(global, get = "message", pure)]
    pub fn message(r: &mut Run) -> Dynamic {
        r.record
            .message
            .clone()
            .map(Dynamic::from)
            .unwrap_or(Dynamic::UNIT)
    }

    /// The path of the run's `driver.log`.
    #[rhai_fn(global, get = "log_path", pure)]
    pub fn log_path(r: &mut Run) -> String {
        r.run_dir().join(DRIVER_LOG).display().to_string()
    }

    /// The run directory (staged files and `driver.log`).
    #[rhai_fn(global, get = "run_dir", pure)]
    pub fn run_dir(r: &mut Run) -> String {
        r.run_dir().display().to_string()
    }

    /// True in plan mode: nothing was run.
    #[rhai_fn(global, get = "planned", pure)]
    pub fn planned(r: &mut Run) -> bool {
        r.planned
    }

    /// The run's whole `driver.log` (empty when there is none yet, or in plan mode).
    #[rhai_fn(global, pure)]
    pub fn log(r: &mut Run) -> String {
        std::fs::read_to_string(r.run_dir().join(DRIVER_LOG)).unwrap_or_default()
    }

    /// The last `n` lines of `driver.log`.
    #[rhai_fn(global, name = "log", pure)]
    pub fn log_tail(r: &mut Run, n: INT) -> String {
        let text = log(r);
        let lines: Vec<&str> = text.lines().collect();
        let skip = lines.len().saturating_sub(usize::try_from(n).unwrap_or(0));
        let mut out = lines[skip..].join("\n");
        if !out.is_empty() {
            out.push('\n');
        }
        out
    }

    /// Read the record again (another process may have changed it); returns the status.
    #[rhai_fn(global, return_raw)]
    pub fn refresh(r: &mut Run) -> RhaiResult<String> {
        if !r.planned {
            r.record = r.store.load(&r.id).map_err(fail)?;
        }
        Ok(status(r))
    }

    /// The record as a map.
    #[rhai_fn(global, name = "record", pure)]
    pub fn record_of(r: &mut Run) -> Dynamic {
        to_dynamic(&r.record)
    }

    /// Follow a Ray run submitted with `follow: false` to its end (printing its log
    /// unless it was started `quiet`);
    /// returns the final status. A run already followed just reports its status.
    #[rhai_fn(global, return_raw)]
    pub fn follow(ctx: NativeCallContext, r: &mut Run) -> RhaiResult<String> {
        let h = host(&ctx)?;
        let taken = r
            .pending
            .as_ref()
            .and_then(|p| p.lock().ok().and_then(|mut p| p.take()));
        if let Some(ray) = taken {
            r.record = follow_ray(&h, ray, r.quiet)?;
        }
        Ok(status(r))
    }

    /// The Ray job of a Ray run (for `ray` methods: `status()`, `stop()`, `logs()`).
    #[rhai_fn(global, pure, return_raw)]
    pub fn submission(r: &mut Run) -> RhaiResult<Submission> {
        match &r.client {
            Some(client) => Ok(Submission {
                client: client.clone(),
                id: r.id.clone(),
                planned: r.planned,
                forward: None,
            }),
            None => Err(usage(
                "nrl::script::type",
                format!("run {} is a local run: it has no Ray job", r.id),
                "only runs started with run::on_ray have one",
            )),
        }
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn to_string(r: &mut Run) -> String {
        let (kind, status) = (kind(r), status(r));
        format!("Run({}, {kind}, {status})", r.id)
    }
}

impl Run {
    fn run_dir(&self) -> PathBuf {
        self.store.run_dir(&self.id)
    }

    fn planned(store: RunStore, ctx: &RunContext, kind: RunKind) -> Run {
        let mut record = RunRecord::new(ctx.run_id.clone(), kind);
        record.run_dir = Some(ctx.run_dir().display().to_string());
        Run {
            id: ctx.run_id.to_string(),
            planned: true,
            store,
            record,
            pending: None,
            client: None,
            quiet: false,
        }
    }
}

/// `run::list`: the options mapped onto `nrl runs`' and the same library call.
fn list_runs(ctx: &NativeCallContext, options: &Map) -> RhaiResult<Array> {
    let o = Options::new(
        "run::list",
        options,
        &["status", "recipe", "since", "refresh", "cluster"],
    )?;
    let h = host(ctx)?;
    let store = store_of(&h)?;
    let statuses = o
        .strings("status")?
        .unwrap_or_default()
        .iter()
        .map(|name| {
            RunStatus::parse(name).ok_or_else(|| {
                let names: Vec<&str> = RunStatus::KNOWN.iter().map(|s| s.as_str()).collect();
                usage(
                    super::options::CODE_OPTION,
                    format!("run::list(): `{name}` is not a run status"),
                    &format!("use one of {}", names.join(", ")),
                )
            })
        })
        .collect::<RhaiResult<Vec<_>>>()?;
    let since = match o.value("since") {
        None => None,
        Some(v) => match v.as_int() {
            Ok(secs) if secs >= 0 => Some(std::time::Duration::from_secs(secs as u64)),
            _ => Some(crate::durations::parse_age(&v.to_string()).map_err(|e| {
                usage(
                    super::options::CODE_OPTION,
                    format!("run::list(): option `since`: {e}"),
                    "e.g. #{since: \"2d\"} or #{since: 3600}",
                )
            })?),
        },
    };
    let refresh = o.bool("refresh", !h.dry_run())?;
    let cluster = if o.bool("cluster", false)? {
        Some(h.k8s()?)
    } else {
        None
    };
    if refresh {
        h.live_read("the clusters and Ray dashboards of the running runs")?;
    }
    let connect = h.connect_options();
    let opts = RunsOptions {
        filter: RunsFilter {
            statuses,
            recipe: o.str("recipe"),
            since,
        },
        refresh,
        cluster,
        ray_timeout: connect
            .request_timeout
            .unwrap_or(crate::k8s::client::DEFAULT_REQUEST_TIMEOUT)
            .min(std::time::Duration::from_secs(10)),
        connect,
    };
    let rows = h.block_on(crate::launch::records::listing::list_runs(&store, &opts))?;
    Ok(rows.iter().map(to_dynamic).collect())
}

fn store_of(h: &Host) -> RhaiResult<RunStore> {
    RunStore::from_env(&*h.opts.env).map_err(fail)
}

/// Run id, store and repo root of a new run from its options.
fn context(h: &Host, cfg: &Config, o: &Options) -> RhaiResult<RunContext> {
    run_context(
        h,
        cfg,
        o.str("run_id").as_deref(),
        o.str("repo_root").as_deref(),
    )
}

/// The context of a new run of `cfg` (as `nrl run` makes it): the given run id (validated,
/// unused on this machine) or a fresh one, the run store of the script's environment, the
/// repo root (default the working directory), the pair's infra file and overrides.
pub(super) fn run_context(
    h: &Host,
    cfg: &Config,
    run_id: Option<&str>,
    repo_root: Option<&str>,
) -> RhaiResult<RunContext> {
    let store = store_of(h)?;
    let request = cfg.request();
    let run_id = resolve_run_id(run_id, &request.recipe, &store).map_err(fail)?;
    // The staged files are read from here: it stays inside the working directory.
    let repo_root = match repo_root {
        Some(p) => super::util::confined(h, p).map_err(fail)?,
        None => h.opts.workdir.clone(),
    };
    Ok(RunContext {
        run_id,
        store,
        repo_root,
        infra: request.infra.clone(),
        overrides: request.overrides.clone(),
    })
}

fn warn_all(h: &Host, warnings: &[String]) {
    for w in warnings {
        h.line(Stream::Stderr, &format!("warning: {w}"));
    }
}

fn run_local(ctx: &NativeCallContext, cfg: &Config, options: &Map) -> RhaiResult<Run> {
    let h = host(ctx)?;
    let o = Options::new("run::local", options, &["run_id", "repo_root", "quiet"])?;
    let quiet = o.bool("quiet", false)?;
    let rc = context(&h, cfg, &o)?;
    if h.dry_run() {
        let staged = stage(cfg.loaded(), &rc.run_id, &rc.repo_root).map_err(fail)?;
        h.plan.record(
            "run",
            format!("local run {}", rc.run_id),
            format!("{} files; {}", staged.files.file_count(), staged.entrypoint),
        );
        return Ok(Run::planned(rc.store.clone(), &rc, RunKind::Local));
    }
    let store = rc.store.clone();
    let prepared = local::prepare(cfg.loaded(), rc).map_err(fail)?;
    warn_all(&h, &prepared.staged.warnings);
    let id = prepared.ctx.run_id.to_string();
    h.line(
        Stream::Stderr,
        &format!("run {id}: log {}", prepared.log_path().display()),
    );
    let (tx, mut interrupts) = Interrupts::channel();
    let output = h.opts.output.clone();
    let mut task = h.spawn(async move {
        let mut out = ScriptWriter::new(output.clone(), Stream::Stdout, quiet);
        let mut err = ScriptWriter::new(output, Stream::Stderr, quiet);
        prepared.execute(&mut out, &mut err, &mut interrupts).await
    })?;
    let joined = |r: Result<_, tokio::task::JoinError>| {
        r.map_err(|e| Diag::new("nrl::runtime", format!("the local run's task failed: {e}")))
    };
    let outcome = match h.block_on(async { joined((&mut task).await)? }) {
        Ok(outcome) => outcome,
        Err(e) if h.is_cancelled() => {
            // Ctrl-C: stop the run as `nrl run --local` does and record it, then end.
            let _ = tx.send(());
            h.block_on_to_end(async { joined(task.await)?.map(|_| ()) })?;
            h.line(Stream::Stderr, &format!("interrupted: run {id} stopped"));
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    Ok(Run {
        id,
        planned: false,
        store,
        record: outcome.record,
        pending: None,
        client: None,
        quiet,
    })
}

fn run_on_ray(
    ctx: &NativeCallContext,
    cfg: &Config,
    address: &str,
    options: &Map,
) -> RhaiResult<Run> {
    let h = host(ctx)?;
    let o = Options::new(
        "run::on_ray",
        options,
        &["run_id", "repo_root", "token", "follow", "quiet"],
    )?;
    let (follow, quiet) = (o.bool("follow", true)?, o.bool("quiet", false)?);
    let client = ScriptRay::new(
        RayClient::new(
            address,
            RayClientOptions {
                token: o.str("token"),
                ..RayClientOptions::default()
            },
        )
        .map_err(fail)?,
    );
    let rc = context(&h, cfg, &o)?;
    if h.dry_run() {
        let staged = stage(cfg.loaded(), &rc.run_id, &rc.repo_root).map_err(fail)?;
        h.plan.record(
            "submit",
            format!("run {}", rc.run_id),
            format!(
                "to {}; {} files; {}",
                client.address(),
                staged.files.file_count(),
                staged.entrypoint
            ),
        );
        let mut run = Run::planned(rc.store.clone(), &rc, RunKind::Ray);
        run.client = Some(client);
        return Ok(run);
    }
    let store = rc.store.clone();
    let mut prepared = ray_run::prepare(cfg.loaded(), rc, h.ray(&client)?.clone()).map_err(fail)?;
    warn_all(&h, &prepared.staged.warnings);
    let id = prepared.ctx.run_id.to_string();
    h.block_on(prepared.submit())?;
    h.line(
        Stream::Stderr,
        &format!("submitted run {id} to {}", client.address()),
    );
    let mut run = Run {
        id,
        planned: false,
        store,
        record: prepared.record.clone(),
        pending: None,
        client: Some(client),
        quiet,
    };
    if follow {
        run.record = follow_ray(&h, prepared, quiet)?;
    } else {
        run.pending = Some(Arc::new(Mutex::new(Some(prepared))));
    }
    Ok(run)
}

/// Follow a submitted Ray run to its end; the record gets its final status. Ctrl-C stops
/// following (the job keeps running) and ends the script.
fn follow_ray(h: &Host, mut ray: RayRun, quiet: bool) -> RhaiResult<RunRecord> {
    let (_tx, mut interrupts) = Interrupts::channel();
    let mut out = LogWriter {
        output: h.opts.output.clone(),
        quiet,
        pending: Vec::new(),
    };
    let ended = h.block_on(ray.follow(&mut out, &mut interrupts))?;
    if let RayEnded::Detached = ended {
        h.block_on(ray.save())?;
    }
    Ok(ray.record)
}

/// The longest prefix of `bytes` that is whole UTF-8 (a split character waits).
fn whole_utf8(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

/// A followed Ray log to the script's stdout.
struct LogWriter {
    output: Arc<dyn Output>,
    quiet: bool,
    pending: Vec<u8>,
}

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.quiet {
            self.pending.extend_from_slice(buf);
            let n = whole_utf8(&self.pending);
            if n > 0 {
                let text: Vec<u8> = self.pending.drain(..n).collect();
                self.output
                    .write(Stream::Stdout, &String::from_utf8_lossy(&text));
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A local run's stdout or stderr to the script's output.
struct ScriptWriter {
    output: Arc<dyn Output>,
    stream: Stream,
    quiet: bool,
    pending: Vec<u8>,
}

impl ScriptWriter {
    fn new(output: Arc<dyn Output>, stream: Stream, quiet: bool) -> ScriptWriter {
        ScriptWriter {
            output,
            stream,
            quiet,
            pending: Vec::new(),
        }
    }
}

impl AsyncWrite for ScriptWriter {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if !this.quiet {
            this.pending.extend_from_slice(buf);
            let n = whole_utf8(&this.pending);
            if n > 0 {
                let text: Vec<u8> = this.pending.drain(..n).collect();
                this.output
                    .write(this.stream, &String::from_utf8_lossy(&text));
            }
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
