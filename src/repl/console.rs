//! The read-eval-print loop: the line editor on a terminal, or plain lines from a pipe.
//!
//! Terminal: a one-line banner (version, kube context and namespace, `:help`), then
//! rustyline with [`ReplHelper`], history in the state directory, prompt `nrl> `
//! (`nrl[plan]> ` in plan mode) and `...> ` while an unfinished input continues (the
//! whole input is one history entry). Ctrl-C at the prompt clears the line (and drops
//! an unfinished input); while an input runs it cancels that input and the session goes
//! on; Ctrl-D leaves (exit 0), at a continuation prompt it drops the unfinished input.
//!
//! Pipe (stdin is not a terminal): no prompt; lines are evaluated as they come, an
//! unfinished construct gathering lines until it is complete; errors go to stderr and
//! the session goes on. At the end of input (or `:quit`) the exit code is that of the
//! first input that failed (2 syntax error or bad command, 1 runtime error, 3 cluster
//! API), 0 when none did, so a script of inputs fails as a whole as a shell script with
//! `set -e` would; unfinished input at the end counts as a syntax error. `exit(n)` ends
//! the session with `n` in both modes, `:quit` on a terminal with 0; Ctrl-C on a pipe
//! ends it with 130.

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{CompletionType, Config, Editor};

use super::catalog::Catalog;
use super::helper::{ReplHelper, needs_more, parser};
use super::meta::{self, Meta};
use super::pretty::{Printer, cut};
use super::session::{LineResult, Snapshot};
use super::worker::Worker;
use crate::diag::{Diag, Exit, Result};
use crate::script::host::{Host, HostOptions};
use crate::script::output::Stream;

/// How to run a session.
pub struct ReplOptions {
    pub host: HostOptions,
    /// Scripts loaded before the first prompt (as `:load`).
    pub preload: Vec<PathBuf>,
    /// The history file; `None` keeps history in memory.
    pub history: Option<PathBuf>,
    /// A terminal: the line editor. Otherwise stdin is read line by line.
    pub interactive: bool,
    /// ANSI colours in the editor and diagnostics.
    pub color: bool,
    pub width: usize,
}

/// Run a session until Ctrl-D, `:quit`, `exit(n)` or the end of piped input.
pub fn run(mut opts: ReplOptions) -> Result<Exit> {
    let own_runtime = match opts.host.runtime {
        Some(_) => None,
        None => {
            let rt = runtime()?;
            opts.host.runtime = Some(rt.handle().clone());
            Some(rt)
        }
    };
    let handle = opts
        .host
        .runtime
        .clone()
        .ok_or_else(|| runtime_error("no runtime"))?;
    let exit = session(&opts, &handle);
    // A prompt may still be reading stdin on a blocking thread; do not wait for it.
    if let Some(rt) = own_runtime {
        rt.shutdown_background();
    }
    exit
}

fn session(opts: &ReplOptions, handle: &tokio::runtime::Handle) -> Result<Exit> {
    let host = Host::new(opts.host.clone());
    let worker = Worker::start(
        host.clone(),
        Printer { width: opts.width },
        opts.interactive,
    )?;
    watch_ctrl_c(handle, &host, worker.busy(), opts.interactive)?;
    let mut console = Console {
        host,
        worker,
        snapshot: Snapshot::default(),
        width: opts.width,
        color: opts.color,
    };
    if opts.interactive {
        let width = opts.width;
        console.job(move |s| {
            let line = cut(&s.banner(), width.saturating_sub(1));
            s.host().line(Stream::Stdout, &line);
            LineResult::Ok
        });
    }
    for file in &opts.preload {
        let file = file.clone();
        if let Step::End(exit) = console.job(move |s| s.load(&file)) {
            return Ok(exit);
        }
    }
    if opts.interactive {
        console.interactive(opts)
    } else {
        console.piped()
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("nrl-io")
        .enable_all()
        .build()
        .map_err(|e| runtime_error(&e.to_string()))
}

fn runtime_error(e: &str) -> Diag {
    Diag::new(
        "nrl::runtime",
        format!("cannot start the async runtime: {e}"),
    )
}

/// SIGINT: cancel the running input. On a terminal the editor reads Ctrl-C as a key
/// (raw mode), so a signal only comes while an input runs; on a pipe, a Ctrl-C while
/// waiting for input ends the session (130).
fn watch_ctrl_c(
    handle: &tokio::runtime::Handle,
    host: &Arc<Host>,
    busy: Arc<AtomicBool>,
    interactive: bool,
) -> Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut sigint = handle
            .block_on(async { signal(SignalKind::interrupt()) })
            .map_err(|e| Diag::new("nrl::runtime", format!("cannot watch Ctrl-C: {e}")))?;
        let host = host.clone();
        handle.spawn(async move {
            while sigint.recv().await.is_some() {
                if busy.load(Ordering::SeqCst) {
                    host.cancel();
                } else if !interactive {
                    std::process::exit(Exit::Interrupted.code());
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = (handle, host, busy, interactive);
    Ok(())
}

enum Step {
    Next(LineResult),
    End(Exit),
}

struct Console {
    host: Arc<Host>,
    worker: Worker,
    snapshot: Snapshot,
    width: usize,
    color: bool,
}

impl Console {
    fn interactive(&mut self, opts: &ReplOptions) -> Result<Exit> {
        let config = Config::builder()
            .max_history_size(2000)
            .map_err(editor_error)?
            .history_ignore_dups(true)
            .map_err(editor_error)?
            .history_ignore_space(true)
            .completion_type(CompletionType::List)
            .auto_add_history(false)
            .build();
        let mut editor: Editor<ReplHelper, FileHistory> =
            Editor::with_config(config).map_err(editor_error)?;
        editor.set_helper(Some(ReplHelper::new(
            opts.host.workdir.clone(),
            opts.host.search_path.clone(),
            self.color,
            self.width,
        )));
        if let Some(path) = &opts.history {
            // A first session has no file yet.
            let _ = editor.load_history(path);
        }
        let parser = parser();
        // Lines of an input that is not finished yet.
        let mut pending = String::new();
        loop {
            let prompt = match (pending.is_empty(), self.snapshot.dry_run) {
                (true, false) => "nrl> ",
                (true, true) => "nrl[plan]> ",
                (false, false) => "...> ",
                (false, true) => "........> ",
            };
            if let Some(h) = editor.helper_mut() {
                h.prompt_width = prompt.chars().count();
            }
            let line = match editor.readline(prompt) {
                Ok(line) => line,
                Err(ReadlineError::Interrupted) => {
                    pending.clear();
                    continue;
                }
                Err(ReadlineError::Eof) if !pending.is_empty() => {
                    pending.clear();
                    self.host.line(Stream::Stderr, "unfinished input dropped");
                    continue;
                }
                Err(ReadlineError::Eof) => return Ok(Exit::Ok),
                Err(e) => return Err(editor_error(e)),
            };
            if pending.is_empty() && line.trim().is_empty() {
                continue;
            }
            if !pending.is_empty() {
                pending.push('\n');
            }
            pending.push_str(&line);
            if needs_more(&parser, &pending) {
                continue;
            }
            let input = std::mem::take(&mut pending);
            if editor.add_history_entry(input.as_str()).unwrap_or(false)
                && let Some(path) = &opts.history
            {
                save_history(&mut editor, path);
            }
            let step = self.dispatch(&input);
            if let Some(h) = editor.helper_mut() {
                h.session = self.snapshot.clone();
            }
            if let Step::End(exit) = step {
                return Ok(exit);
            }
        }
    }

    fn piped(&mut self) -> Result<Exit> {
        let parser = parser();
        let mut pending = String::new();
        let mut first_failure: Option<Exit> = None;
        for line in std::io::stdin().lock().lines() {
            let line =
                line.map_err(|e| Diag::new("nrl::repl::stdin", format!("cannot read stdin: {e}")))?;
            if pending.is_empty() && line.trim().is_empty() {
                continue;
            }
            if !pending.is_empty() {
                pending.push('\n');
            }
            pending.push_str(&line);
            if needs_more(&parser, &pending) {
                continue;
            }
            let input = std::mem::take(&mut pending);
            if is_quit(&input) {
                break;
            }
            match self.dispatch(&input) {
                Step::End(exit) => return Ok(exit),
                Step::Next(LineResult::Interrupted) => return Ok(Exit::Interrupted),
                Step::Next(LineResult::Failed(exit)) => {
                    first_failure.get_or_insert(exit);
                }
                Step::Next(_) => {}
            }
        }
        if !pending.trim().is_empty() {
            // Unfinished at the end: Rhai says what is missing.
            match self.dispatch(&pending) {
                Step::End(exit) => return Ok(exit),
                Step::Next(LineResult::Failed(exit)) => {
                    first_failure.get_or_insert(exit);
                }
                Step::Next(_) => {}
            }
        }
        Ok(first_failure.unwrap_or(Exit::Ok))
    }

    fn dispatch(&mut self, input: &str) -> Step {
        let trimmed = input.trim();
        if !trimmed.starts_with(':') {
            let text = input.to_string();
            return self.job(move |s| s.eval(&text));
        }
        match meta::parse(trimmed) {
            Ok(m) => self.meta(m),
            Err(d) => {
                self.error(&d);
                Step::Next(LineResult::Failed(d.exit))
            }
        }
    }

    fn meta(&mut self, m: Meta) -> Step {
        match m {
            Meta::Quit => Step::End(Exit::Ok),
            Meta::Help(None) => {
                self.host.print(Stream::Stdout, &meta::overview());
                Step::Next(LineResult::Ok)
            }
            Meta::Help(Some(name)) => self.describe(&name, false),
            Meta::Doc(name) => self.describe(&name, true),
            Meta::Load(path) => self.job(move |s| s.load(&path)),
            Meta::Vars => self.job(|s| {
                let text = s.vars();
                s.host().print(Stream::Stdout, &text);
                LineResult::Ok
            }),
            Meta::Clear => self.job(|s| {
                s.clear();
                s.host().line(Stream::Stderr, "session cleared");
                LineResult::Ok
            }),
            Meta::Plan(on) => self.job(move |s| s.plan(on)),
            Meta::Ctx(context) => self.job(move |s| s.kube(context, None)),
            Meta::Ns(namespace) => self.job(move |s| s.kube(None, namespace)),
        }
    }

    fn describe(&mut self, name: &str, full: bool) -> Step {
        let catalogs = [&self.snapshot.catalog, Catalog::builtins()];
        match meta::describe(&catalogs, name, full, self.color) {
            Ok(text) => {
                self.host.print(Stream::Stdout, &text);
                Step::Next(LineResult::Ok)
            }
            Err(d) => {
                self.error(&d);
                Step::Next(LineResult::Failed(d.exit))
            }
        }
    }

    fn job(
        &mut self,
        job: impl FnOnce(&mut super::session::Session) -> LineResult + Send + 'static,
    ) -> Step {
        match self.worker.run(job) {
            Ok((result, snapshot)) => {
                self.snapshot = snapshot;
                match result {
                    LineResult::Exit(code) => Step::End(Exit::Code(code)),
                    r => Step::Next(r),
                }
            }
            Err(d) => {
                self.error(&d);
                Step::End(d.exit)
            }
        }
    }

    fn error(&self, d: &Diag) {
        let mut text = d.render(self.color, self.width);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        self.host.print(Stream::Stderr, &text);
    }
}

/// `:quit` (or an alias): on a pipe it ends the input, not the exit code.
fn is_quit(input: &str) -> bool {
    let trimmed = input.trim();
    trimmed.starts_with(':') && meta::parse(trimmed).is_ok_and(|m| m == Meta::Quit)
}

/// Append the new entry to the history file (created with its directory on first use),
/// so a session that is killed keeps what it had.
fn save_history(editor: &mut Editor<ReplHelper, FileHistory>, path: &std::path::Path) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = editor.append_history(path) {
        tracing::debug!(error = %e, path = %path.display(), "cannot save the REPL history");
    }
}

fn editor_error(e: ReadlineError) -> Diag {
    Diag::new(
        "nrl::repl::terminal",
        format!("the line editor failed: {e}"),
    )
    .help("if the terminal is unusual, pipe the input instead: `nrl repl < inputs.rhai`")
}
