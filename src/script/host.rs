//! The state one script run shares with its built-ins: options, output, the plan, the
//! cancellation token, the async runtime, the Kubernetes connection and the sources of
//! every compiled script (for error rendering).
//!
//! Plugin functions cannot capture state, so the engine's default tag carries a
//! [`HostRef`]; built-ins reach it through [`host`] from their `NativeCallContext`.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rhai::{EvalAltResult, NativeCallContext};
use tokio_util::sync::CancellationToken;

use super::errors::{RhaiResult, cancelled, fail};
use super::output::{Output, StdOutput, Stream};
use super::plan::Plan;
use crate::config::env::{Env, ProcessEnv};
use crate::config::source::SrcId;
use crate::diag::Diag;
use crate::k8s::{ConnectOptions, K8s};
use crate::ray::RayClient;

/// Sandbox limits of the engine.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Operations per run (a simple expression is ~5–10); stops `loop {}`.
    pub max_operations: u64,
    pub max_call_levels: usize,
    /// Nesting of expressions at the top level and inside functions.
    pub max_expr_depth: usize,
    pub max_fn_expr_depth: usize,
    pub max_string_size: usize,
    pub max_array_size: usize,
    pub max_map_size: usize,
    /// Modules loaded per run (guards against recursive imports).
    pub max_modules: usize,
    /// Wall-clock time per run (`--max-seconds`), built-ins' waits included; `None`: no
    /// limit (a playbook may wait hours for a training run).
    pub max_duration: Option<std::time::Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_operations: 50_000_000,
            max_call_levels: 64,
            max_expr_depth: 64,
            max_fn_expr_depth: 32,
            max_string_size: 64 << 20,
            max_array_size: 1_000_000,
            max_map_size: 100_000,
            max_modules: 64,
            max_duration: None,
        }
    }
}

/// How to run scripts.
#[derive(Clone)]
pub struct HostOptions {
    /// Plan mode at the start: record cluster-changing actions instead of doing them
    /// (the REPL switches it with [`Host::set_dry_run`]).
    pub dry_run: bool,
    /// In plan mode, let built-ins read a cluster or a Ray dashboard (`--allow-reads`);
    /// otherwise such a read is refused (a plan touches nothing, the network included).
    pub live_reads: bool,
    /// Files read and written by scripts must lie under this directory; relative paths
    /// (recipes, `read_file`) are taken from here.
    pub workdir: PathBuf,
    /// Environment for `env()`, `${oc.env:…}` and `${user:}`.
    pub env: Arc<dyn Env>,
    /// Directories searched for `import "x"` after the importing script's own (`NRL_PATH`).
    pub search_path: Vec<PathBuf>,
    pub output: Arc<dyn Output>,
    /// Whether stdin is a terminal (`prompt`/`confirm` ask; otherwise they take the default).
    pub interactive: bool,
    /// Runtime for I/O built-ins; `None` starts a small one on first use.
    pub runtime: Option<tokio::runtime::Handle>,
    /// Cancelled by Ctrl-C; stops the script and any built-in waiting on I/O. The REPL
    /// replaces a cancelled token with [`Host::renew_cancel`] before its next line.
    pub cancel: CancellationToken,
    pub limits: Limits,
    /// Kubernetes context / namespace / kubeconfig for the `k8s` built-ins.
    pub connect: ConnectOptions,
}

impl HostOptions {
    /// Defaults for `workdir`: the real environment, stdout/stderr, `NRL_PATH`.
    pub fn new(workdir: impl Into<PathBuf>) -> HostOptions {
        let env: Arc<dyn Env> = Arc::new(ProcessEnv);
        let search_path = env
            .var("NRL_PATH")
            .map(|p| std::env::split_paths(&p).collect())
            .unwrap_or_default();
        HostOptions {
            dry_run: false,
            live_reads: false,
            workdir: workdir.into(),
            env,
            search_path,
            output: Arc::new(StdOutput),
            interactive: false,
            runtime: None,
            cancel: CancellationToken::new(),
            limits: Limits::default(),
            connect: ConnectOptions::default(),
        }
    }
}

/// A compiled script or module, for mapping Rhai positions back to text.
#[derive(Debug, Default)]
pub(crate) struct Sources {
    /// Rhai source name (what `AST::set_source` got) → registered source.
    pub by_name: HashMap<String, SrcId>,
    /// Import path as written (`"nrl/checklist"`, `"lib/x"`) → Rhai source name.
    pub by_import: HashMap<String, String>,
}

/// The current cancellation token, replaceable: a REPL session outlives a Ctrl-C.
#[derive(Debug)]
pub struct CancelSlot(Mutex<CancellationToken>);

impl CancelSlot {
    pub fn token(&self) -> CancellationToken {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn is_cancelled(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_cancelled()
    }
}

/// Shared state of one run (or of one REPL session).
pub struct Host {
    pub opts: HostOptions,
    pub plan: Plan,
    cancel: Arc<CancelSlot>,
    dry_run: AtomicBool,
    live_reads: AtomicBool,
    exit_code: Mutex<Option<u8>>,
    own_runtime: OnceLock<Result<tokio::runtime::Runtime, String>>,
    k8s: tokio::sync::Mutex<Option<K8s>>,
    connect: Mutex<ConnectOptions>,
    announced: Mutex<Option<String>>,
    pub(crate) sources: Mutex<Sources>,
    regexes: Mutex<HashMap<String, regex::Regex>>,
    /// Set when `limits.max_duration` ran out.
    out_of_time: AtomicBool,
    invocation: Mutex<Option<Invocation>>,
    /// Set when `cli(…)` printed the script's `--help` and stopped it.
    help_shown: AtomicBool,
    /// What the script declared with `cli(…)` (for `nrl script doc`).
    declaration: Mutex<Option<super::declared::Declaration>>,
}

/// The script `nrl script` runs and the words after its `--`, for `cli(…)`; a REPL
/// session has none (its `cli(…)` parses no words).
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    /// The script as named on the command line (`scripts/launch.rhai`).
    pub script: String,
    pub words: Vec<String>,
    /// The script's leading comment block, the description its `--help` shows.
    pub header: String,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("dry_run", &self.dry_run())
            .field("workdir", &self.opts.workdir)
            .finish_non_exhaustive()
    }
}

impl Host {
    pub fn new(opts: HostOptions) -> Arc<Host> {
        let connect = opts.connect.clone();
        Arc::new(Host {
            cancel: Arc::new(CancelSlot(Mutex::new(opts.cancel.clone()))),
            dry_run: AtomicBool::new(opts.dry_run),
            live_reads: AtomicBool::new(opts.live_reads),
            opts,
            plan: Plan::new(),
            exit_code: Mutex::new(None),
            own_runtime: OnceLock::new(),
            k8s: tokio::sync::Mutex::new(None),
            connect: Mutex::new(connect),
            announced: Mutex::new(None),
            sources: Mutex::new(Sources::default()),
            regexes: Mutex::new(HashMap::new()),
            out_of_time: AtomicBool::new(false),
            invocation: Mutex::new(None),
            help_shown: AtomicBool::new(false),
            declaration: Mutex::new(None),
        })
    }

    /// Stop the run (as Ctrl-C does) and remember that the time limit did it, so the
    /// error says so.
    pub fn stop_for_time_limit(&self) {
        self.out_of_time.store(true, Ordering::Relaxed);
        self.cancel();
    }

    /// Record the script being run and its arguments (before it starts).
    pub fn set_invocation(&self, invocation: Invocation) {
        *self.invocation.lock().unwrap_or_else(|e| e.into_inner()) = Some(invocation);
    }

    /// The script being run and its arguments; `None` in a REPL session.
    pub fn invocation(&self) -> Option<Invocation> {
        self.invocation
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Remember that the script showed its `--help` and stopped (no plan to print).
    pub fn mark_help_shown(&self) {
        self.help_shown.store(true, Ordering::Relaxed);
    }

    /// Keep what `cli(…)` declared.
    pub fn set_declaration(&self, declaration: super::declared::Declaration) {
        *self.declaration.lock().unwrap_or_else(|e| e.into_inner()) = Some(declaration);
    }

    /// What the script declared with `cli(…)`, once it has called it.
    pub fn declaration(&self) -> Option<super::declared::Declaration> {
        self.declaration
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn help_shown(&self) -> bool {
        self.help_shown.load(Ordering::Relaxed)
    }

    /// Whether [`Host::stop_for_time_limit`] stopped the run.
    pub fn out_of_time(&self) -> bool {
        self.out_of_time.load(Ordering::Relaxed)
    }

    pub fn dry_run(&self) -> bool {
        self.dry_run.load(Ordering::Relaxed)
    }

    /// Switch plan mode (REPL `:plan on|off`); takes effect at the next built-in call.
    pub fn set_dry_run(&self, on: bool) {
        self.dry_run.store(on, Ordering::Relaxed);
    }

    /// Whether plan mode lets built-ins read a cluster or a dashboard.
    pub fn live_reads(&self) -> bool {
        self.live_reads.load(Ordering::Relaxed)
    }

    /// Allow or refuse live reads in plan mode (`--allow-reads`,
    /// `plan_options(#{live_reads: true})`).
    pub fn set_live_reads(&self, on: bool) {
        self.live_reads.store(on, Ordering::Relaxed);
    }

    /// The one door from a built-in to the network: every call that reaches a cluster or
    /// a Ray dashboard passes here first ([`Host::k8s`], [`Host::ray`]). Outside plan
    /// mode it lets everything through. In plan mode a read is refused unless live reads
    /// are allowed, and then it is recorded as a `read` step (once per target), so a plan
    /// says what it looked at. Changes never get here in plan mode: they are recorded and
    /// answered from a simulated handle before any client is asked for.
    pub fn live_read(&self, target: &str) -> RhaiResult<()> {
        if !self.dry_run() {
            return Ok(());
        }
        if self.plan.is_simulated() {
            // A test never reaches a real cluster, whatever `plan_options` says.
            return Err(fail(
                Diag::new(
                    CODE_SIM_READ,
                    format!("in a test this call would read {target}, and the simulated cluster does not answer it"),
                )
                .help(
                    "the simulation answers k8s::get/list/wait/logs, a planned RayJob's status/wait/follow/log and a dashboard's status/logs/wait; script them with sim::object, sim::rayjob_ends and sim::log",
                ),
            ));
        }
        if !self.live_reads() {
            return Err(fail(
                Diag::new(
                    CODE_PLAN_LIVE_READ,
                    format!("plan mode: this call would read {target}, and a plan touches nothing"),
                )
                .help(
                    "guard it with `if !dry_run() { … }`, or allow reads in plan mode: `nrl script --dry-run --allow-reads`, or `plan_options(#{live_reads: true})` in the script",
                ),
            ));
        }
        if !self
            .plan
            .steps()
            .iter()
            .any(|s| s.action == "read" && s.target == target)
        {
            self.plan
                .record("read", target, "live read (reads are allowed in this plan)");
        }
        Ok(())
    }

    /// In a test (plan mode over a simulated cluster), the object `kind`/`name` as the
    /// simulation holds it after this plan's steps (`Some(None)`: absent); `None`:
    /// not a test, ask the cluster.
    pub fn sim_object(
        &self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Option<serde_json::Value>> {
        if !self.dry_run() {
            return None;
        }
        self.plan.read_object(kind, namespace, name)
    }

    /// In a test, the objects of `kind` the simulation lists; `None`: not a test.
    pub fn sim_list(
        &self,
        kind: &str,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Option<Result<Vec<serde_json::Value>, Diag>> {
        if !self.dry_run() {
            return None;
        }
        self.plan.read_list(kind, namespace, selector)
    }

    /// In a test, the log the simulation has for a RayJob, Ray job or pod `name`
    /// (`Some(None)`: none scripted); `None`: not a test.
    pub fn sim_log(&self, name: &str) -> Option<Option<String>> {
        if !self.dry_run() {
            return None;
        }
        self.plan.with_simulation(|s| s.log(name))
    }

    /// In a test, how job `name` ends if the test said (`Some(None)`: it did not);
    /// `None`: not a test.
    pub fn sim_job_end(&self, name: &str) -> Option<Option<super::sim::JobEnd>> {
        if !self.dry_run() {
            return None;
        }
        self.plan.with_simulation(|s| s.job_end(name))
    }

    /// The Ray client behind a script handle, through [`Host::live_read`].
    pub fn ray<'c>(&self, client: &'c ScriptRay) -> RhaiResult<&'c RayClient> {
        self.live_read(&format!("the Ray dashboard at {}", client.address()))?;
        Ok(&client.0)
    }

    /// The current cancellation token.
    pub fn cancel_token(&self) -> CancellationToken {
        self.cancel.token()
    }

    /// The slot holding the current token, for checks that must follow renewals
    /// (the engine's `on_progress`).
    pub fn cancel_slot(&self) -> Arc<CancelSlot> {
        self.cancel.clone()
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Cancel whatever runs now (Ctrl-C).
    pub fn cancel(&self) {
        self.cancel.token().cancel();
    }

    /// After a cancelled line, a fresh token so the next one can run.
    pub fn renew_cancel(&self) {
        let mut slot = self.cancel.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_cancelled() {
            *slot = CancellationToken::new();
        }
    }

    /// The code set by `exit(n)`, if the script called it.
    pub fn exit_code(&self) -> Option<u8> {
        *self.exit_code.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn set_exit_code(&self, code: u8) {
        *self.exit_code.lock().unwrap_or_else(|e| e.into_inner()) = Some(code);
    }

    pub fn print(&self, stream: Stream, text: &str) {
        self.opts.output.write(stream, text);
    }

    /// Write `text` and a newline to `stream`.
    pub fn line(&self, stream: Stream, text: &str) {
        let mut s = String::with_capacity(text.len() + 1);
        s.push_str(text);
        s.push('\n');
        self.opts.output.write(stream, &s);
    }

    fn runtime_handle(&self) -> Result<tokio::runtime::Handle, Diag> {
        if let Some(h) = &self.opts.runtime {
            return Ok(h.clone());
        }
        let rt = self.own_runtime.get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("nrl-script-io")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        });
        match rt {
            Ok(rt) => Ok(rt.handle().clone()),
            Err(e) => Err(Diag::new(
                "nrl::runtime",
                format!("cannot start the async runtime: {e}"),
            )),
        }
    }

    /// Run `fut` to completion on the runtime from the engine thread; Ctrl-C cancels it.
    ///
    /// Must not be called from inside the runtime (a callback running within another
    /// `block_on`); that is reported as an error instead of tokio's panic.
    pub fn block_on<T>(&self, fut: impl Future<Output = Result<T, Diag>>) -> RhaiResult<T> {
        if self.is_cancelled() {
            return Err(cancelled());
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(fail(
                Diag::new(
                    "nrl::script::nested_io",
                    "a built-in that waits on I/O was called from inside another one",
                )
                .help("call it after the enclosing built-in has returned"),
            ));
        }
        let handle = self.runtime_handle().map_err(fail)?;
        let token = self.cancel_token();
        let outcome = handle.block_on(async move {
            tokio::select! {
                biased;
                _ = token.cancelled() => None,
                r = fut => Some(r),
            }
        });
        match outcome {
            None => Err(cancelled()),
            Some(r) => r.map_err(fail),
        }
    }

    /// Run `fut` to completion without watching Ctrl-C: for the bounded clean-up a
    /// built-in does after an interrupt (stopping a local run gracefully, writing its
    /// record), which must not be cut short by the same interrupt.
    pub fn block_on_to_end<T>(&self, fut: impl Future<Output = Result<T, Diag>>) -> RhaiResult<T> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(fail(Diag::new(
                "nrl::script::nested_io",
                "a built-in that waits on I/O was called from inside another one",
            )));
        }
        let handle = self.runtime_handle().map_err(fail)?;
        handle.block_on(fut).map_err(fail)
    }

    /// Where the library's progress lines go: a spinner when stderr is a terminal, else
    /// plain lines on the script's stderr (captured with the rest of its output).
    pub fn progress(&self) -> crate::launch::Progress {
        if self.opts.output.is_terminal(Stream::Stderr) {
            return crate::launch::Progress::terminal();
        }
        let out = self.opts.output.clone();
        crate::launch::Progress::lines_to(move |line| {
            let mut text = String::with_capacity(line.len() + 1);
            text.push_str(line);
            text.push('\n');
            out.write(Stream::Stderr, &text);
        })
    }

    /// Colour and width for diagnostics a script prints on stdout: colour on a terminal
    /// unless NO_COLOR is set, width from COLUMNS (default 100).
    pub fn diag_style(&self) -> (bool, usize) {
        let color =
            self.opts.output.is_terminal(Stream::Stdout) && self.opts.env.var("NO_COLOR").is_none();
        let width = self
            .opts
            .env
            .var("COLUMNS")
            .and_then(|c| c.parse().ok())
            .unwrap_or(100);
        (color, width)
    }

    /// Spawn `fut` on the runtime (for streams feeding callbacks on the engine thread).
    pub fn spawn<F>(&self, fut: F) -> RhaiResult<tokio::task::JoinHandle<F::Output>>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let handle = self.runtime_handle().map_err(fail)?;
        Ok(handle.spawn(fut))
    }

    /// The Kubernetes client, connected on first use with the current options, for a
    /// call that reaches the API server (through [`Host::live_read`]).
    pub fn k8s(&self) -> RhaiResult<K8s> {
        self.live_read(&self.cluster_target())?;
        self.k8s_offline()
    }

    /// A Kubernetes client for `opts` (another context or namespace than the host's),
    /// through [`Host::live_read`].
    pub fn k8s_with(&self, opts: &ConnectOptions) -> RhaiResult<K8s> {
        self.live_read(&self.cluster_target())?;
        self.block_on(K8s::connect_in(opts, self.opts.env.as_ref()))
    }

    fn cluster_target(&self) -> String {
        match self.connect_options().context {
            Some(c) => format!("the Kubernetes API of context `{c}`"),
            None => "the Kubernetes API".to_string(),
        }
    }

    /// The client without a request: its context, namespace and server name come from
    /// the kubeconfig, so plan mode may ask for them.
    pub fn k8s_offline(&self) -> RhaiResult<K8s> {
        let opts = self.connect_options();
        self.block_on(async {
            let mut slot = self.k8s.lock().await;
            if let Some(k) = slot.as_ref() {
                return Ok(k.clone());
            }
            let k = K8s::connect_in(&opts, self.opts.env.as_ref()).await?;
            *slot = Some(k.clone());
            Ok(k)
        })
    }

    pub fn connect_options(&self) -> ConnectOptions {
        self.connect.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Change context or namespace; the next `k8s` call reconnects.
    pub fn set_connect(&self, f: impl FnOnce(&mut ConnectOptions)) {
        if let Ok(mut c) = self.connect.lock() {
            f(&mut c);
        }
        if let Ok(mut slot) = self.k8s.try_lock() {
            *slot = None;
        }
    }

    /// Print "acting on context `x`, namespace `y`" before the first change to a cluster
    /// (once per context and namespace).
    pub fn announce(&self, k: &K8s, namespace: &str) {
        let banner = format!("context `{}`, namespace `{namespace}`", k.context);
        let mut last = self.announced.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_deref() != Some(banner.as_str()) {
            self.line(Stream::Stderr, &format!("acting on {banner}"));
            *last = Some(banner);
        }
    }

    /// A path from a script: absolute as is; relative ones are taken from the working
    /// directory (kept relative when that is the process's directory, so messages and
    /// provenance show paths as the user wrote them).
    pub fn path(&self, p: &str) -> PathBuf {
        let path = PathBuf::from(p);
        if path.is_absolute() {
            return path;
        }
        let same = std::env::current_dir()
            .ok()
            .zip(std::fs::canonicalize(&self.opts.workdir).ok())
            .is_some_and(|(cwd, wd)| std::fs::canonicalize(cwd).ok() == Some(wd));
        if same {
            path
        } else {
            self.opts.workdir.join(path)
        }
    }

    /// A compiled regex (cached: scripts call the same patterns in loops).
    pub fn regex(&self, pattern: &str) -> Result<regex::Regex, Diag> {
        let mut cache = self.regexes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(re) = cache.get(pattern) {
            return Ok(re.clone());
        }
        let re = regex::Regex::new(pattern).map_err(|e| {
            Diag::new(
                "nrl::script::regex",
                format!("invalid regular expression `{pattern}`: {e}"),
            )
            .help("the syntax is Rust's `regex` crate (no look-around or back-references)")
        })?;
        if cache.len() >= 256 {
            cache.clear();
        }
        cache.insert(pattern.to_string(), re.clone());
        Ok(re)
    }

    /// Record the Rhai source name of a compiled text.
    pub(crate) fn add_source(&self, rhai_name: &str, id: SrcId) {
        if let Ok(mut s) = self.sources.lock() {
            s.by_name.insert(rhai_name.to_string(), id);
        }
    }

    pub(crate) fn add_import(&self, import_path: &str, rhai_name: &str) {
        if let Ok(mut s) = self.sources.lock() {
            s.by_import
                .insert(import_path.to_string(), rhai_name.to_string());
        }
    }

    pub(crate) fn source_id(&self, rhai_name: &str) -> Option<SrcId> {
        self.sources
            .lock()
            .ok()
            .and_then(|s| s.by_name.get(rhai_name).copied())
    }

    pub(crate) fn import_source(&self, import_path: &str) -> Option<String> {
        self.sources
            .lock()
            .ok()
            .and_then(|s| s.by_import.get(import_path).cloned())
    }
}

/// A Ray client held by a script handle (a dashboard, a submission, a run). Its only way
/// to the network is [`Host::ray`], so plan mode decides every dashboard call in one place.
#[derive(Clone)]
pub struct ScriptRay(RayClient);

impl ScriptRay {
    pub fn new(client: RayClient) -> ScriptRay {
        ScriptRay(client)
    }

    pub fn address(&self) -> &str {
        self.0.address()
    }
}

/// Code of a read refused in plan mode.
pub const CODE_PLAN_LIVE_READ: &str = "nrl::script::plan_live_read";

/// Code of a read the simulated cluster of a test cannot answer.
pub const CODE_SIM_READ: &str = "nrl::script::sim_read";

/// The engine tag that carries the host to plugin functions.
#[derive(Clone)]
pub struct HostRef(pub Arc<Host>);

/// The host of the running script.
pub fn host(ctx: &NativeCallContext) -> Result<Arc<Host>, Box<EvalAltResult>> {
    ctx.tag()
        .and_then(|t| t.read_lock::<HostRef>().map(|h| h.0.clone()))
        .ok_or_else(|| {
            fail(Diag::new(
                "nrl::script::host",
                format!(
                    "`{}` needs the nrl script host (engine built by script::engine::new_engine)",
                    ctx.fn_name()
                ),
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_token_is_renewed_and_plan_mode_switches() {
        let host = Host::new(HostOptions::new("."));
        let first = host.cancel_token();
        host.cancel();
        assert!(first.is_cancelled() && host.is_cancelled());
        host.renew_cancel();
        assert!(!host.is_cancelled());
        assert!(!host.cancel_token().is_cancelled());
        // A token that was not cancelled is kept (a watcher may hold it).
        let current = host.cancel_token();
        host.renew_cancel();
        current.cancel();
        assert!(host.is_cancelled());

        assert!(!host.dry_run());
        host.set_dry_run(true);
        assert!(host.dry_run());
    }
}
