//! Running a script: compile with `args` in scope, evaluate, map the outcome.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rhai::{EvalAltResult, Scope};

use super::args::script_args;
use super::declared::header_comment;
use super::engine::new_engine;
use super::errors::{eval_error, parse_error};
use super::host::{Host, Invocation};
use super::plan::PlanStep;
use crate::config::source::{SourceKind, add_source};
use crate::diag::{Diag, Exit, Result};

/// How a script ended without an uncaught error.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `Exit::Ok`, or `Exit::Code(n)` after `exit(n)`.
    pub exit: Exit,
    /// What plan mode recorded (empty outside plan mode unless the script recorded).
    pub plan: Vec<PlanStep>,
    /// The script printed its `--help` (from `cli(…)`) and stopped.
    pub help_shown: bool,
}

/// Read and run a script file.
pub fn run_file(host: &Arc<Host>, path: &Path, args: &[String]) -> Result<Outcome> {
    let text = crate::config::input::read_text(path).map_err(|e| {
        Diag::new(
            "nrl::script::not_found",
            format!("cannot read script {}: {e}", path.display()),
        )
        .help("pass the path of a .rhai file, e.g. `nrl script scripts/launch.rhai`")
    })?;
    run_source(host, &path.display().to_string(), Some(path), &text, args)
}

/// Run script `text`, named `name` in messages (relative imports resolve next to it).
pub fn run_source(
    host: &Arc<Host>,
    name: &str,
    path: Option<&Path>,
    text: &str,
    args: &[String],
) -> Result<Outcome> {
    let id = add_source(name.to_string(), path, text.to_string(), SourceKind::Text);
    host.add_source(name, id);
    host.set_invocation(Invocation {
        script: name.to_string(),
        words: args.to_vec(),
        header: header_comment(text),
    });
    let engine = new_engine(host);
    let mut scope = Scope::new();
    scope.push_constant("args", script_args(args)?);
    let mut ast = engine
        .compile_with_scope(&scope, without_shebang(text))
        .map_err(|e| parse_error(host, name, &e))?;
    ast.set_source(name);
    let _watchdog = host
        .opts
        .limits
        .max_duration
        .map(|d| Watchdog::start(host, d));
    match engine.run_ast_with_scope(&mut scope, &ast) {
        Ok(()) => {}
        Err(e) if matches!(*e, EvalAltResult::Exit(..)) => {}
        Err(e) => return Err(eval_error(host, name, &e)),
    }
    let exit = match host.exit_code() {
        None | Some(0) => Exit::Ok,
        Some(n) => Exit::Code(i32::from(n)),
    };
    Ok(Outcome {
        exit,
        plan: host.plan.steps(),
        help_shown: host.help_shown(),
    })
}

/// Stops the run when its time limit passes; dropping it (the run ended) ends its thread.
struct Watchdog {
    _done: std::sync::mpsc::Sender<()>,
}

impl Watchdog {
    fn start(host: &Arc<Host>, limit: std::time::Duration) -> Watchdog {
        let (done, ended) = std::sync::mpsc::channel::<()>();
        let host = Arc::downgrade(host);
        let spawned = std::thread::Builder::new()
            .name("nrl-script-watchdog".into())
            .spawn(move || {
                if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = ended.recv_timeout(limit)
                    && let Some(h) = host.upgrade()
                {
                    h.stop_for_time_limit();
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "no watchdog thread: the time limit is not enforced");
        }
        Watchdog { _done: done }
    }
}

/// Run a script file on its own thread (a large stack for deep call chains), so built-ins
/// can block on the async runtime; returns when the script ends.
pub fn run_on_thread(host: Arc<Host>, path: PathBuf, args: Vec<String>) -> Result<Outcome> {
    on_engine_thread("nrl-script", move || run_file(&host, &path, &args))
}

/// Run `work` on a thread with the stack the engine's deep call chains need (scripts and
/// `nrl script test` alike); a panic becomes an error naming it a bug.
pub(crate) fn on_engine_thread<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let thread = std::thread::Builder::new()
        .name(name.into())
        .stack_size(16 << 20)
        .spawn(work)
        .map_err(|e| {
            Diag::new(
                "nrl::script::thread",
                format!("cannot start the script thread: {e}"),
            )
        })?;
    thread.join().unwrap_or_else(|_| {
        Err(Diag::new("nrl::script::panic", "the script engine crashed")
            .with_exit(Exit::Failed)
            .help("this is a bug in nrl; please report it with the script"))
    })
}

/// A `#!` first line is blanked (not removed) so line numbers stay right.
fn without_shebang(text: &str) -> std::borrow::Cow<'_, str> {
    match text.strip_prefix("#!") {
        Some(rest) => {
            let end = rest.find('\n').unwrap_or(rest.len());
            let mut s = " ".repeat(end + 2);
            s.push_str(&rest[end..]);
            std::borrow::Cow::Owned(s)
        }
        None => std::borrow::Cow::Borrowed(text),
    }
}
