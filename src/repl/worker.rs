//! The engine thread. The session (engine, scope, definitions) lives on its own thread
//! with a large stack, as `nrl script` runs scripts; the line editor sends it work and
//! waits for the result. Built-ins block on the tokio runtime from this thread, so
//! Ctrl-C (which cancels the host's token) stops them as it stops a script.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};

use super::catalog::Catalog;
use super::pretty::Printer;
use super::session::{LineResult, Session, Snapshot};
use crate::diag::{Diag, Exit, Result};
use crate::script::host::Host;

type Job = Box<dyn FnOnce(&mut Session) -> LineResult + Send>;

/// A handle on the engine thread; dropping it ends the thread.
pub struct Worker {
    host: Arc<Host>,
    busy: Arc<AtomicBool>,
    jobs: Option<Sender<Job>>,
    replies: Receiver<(LineResult, Snapshot)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    /// Start the thread; the engine is built there, while the caller sets up the editor.
    /// `warm_catalog`: then build the completion catalog in the background too.
    pub fn start(host: Arc<Host>, printer: Printer, warm_catalog: bool) -> Result<Worker> {
        let (jobs, inbox) = channel::<Job>();
        let (outbox, replies) = channel();
        let session_host = host.clone();
        let thread = std::thread::Builder::new()
            .name("nrl-repl".into())
            .stack_size(16 << 20)
            .spawn(move || {
                let mut session = Session::new(session_host, printer);
                // The completion catalog (tens of ms in a debug build) is built once the
                // engine is ready, so it does not delay the first input; the prompt
                // waits for neither (a Tab pressed before it is ready waits).
                if warm_catalog {
                    std::thread::spawn(|| {
                        Catalog::builtins();
                    });
                }
                while let Ok(job) = inbox.recv() {
                    let result = job(&mut session);
                    if outbox.send((result, session.snapshot())).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| {
                Diag::new(
                    "nrl::repl::thread",
                    format!("cannot start the engine thread: {e}"),
                )
            })?;
        Ok(Worker {
            host,
            busy: Arc::new(AtomicBool::new(false)),
            jobs: Some(jobs),
            replies,
            thread: Some(thread),
        })
    }

    /// Set while a job runs: Ctrl-C then cancels it.
    pub fn busy(&self) -> Arc<AtomicBool> {
        self.busy.clone()
    }

    /// Run `job` on the session with a fresh cancellation token; returns its result
    /// and the session's new snapshot.
    pub fn run(
        &self,
        job: impl FnOnce(&mut Session) -> LineResult + Send + 'static,
    ) -> Result<(LineResult, Snapshot)> {
        self.host.renew_cancel();
        self.busy.store(true, Ordering::SeqCst);
        let sent = self
            .jobs
            .as_ref()
            .is_some_and(|tx| tx.send(Box::new(job)).is_ok());
        let reply = sent.then(|| self.replies.recv().ok()).flatten();
        self.busy.store(false, Ordering::SeqCst);
        reply.ok_or_else(crashed)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn crashed() -> Diag {
    Diag::new("nrl::repl::panic", "the script engine crashed")
        .with_exit(Exit::Failed)
        .help("this is a bug in nrl; please report it with the input that caused it")
}
