//! Running an entrypoint as a local child process: in its own process group, output
//! streamed live and teed to a log file, interrupts forwarded to the whole group, and
//! nothing of the group left running however the run ends.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use indexmap::IndexMap;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::diag::{Diag, Result};
use crate::launch::local::reaper::{RunProcesses, Subreaper, TAG_VAR, new_tag};

/// How long the group gets to exit after the interrupt is forwarded, before SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// How long output is still read after the entrypoint ended (processes that left the
/// group may hold the pipes open).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// A command to run.
#[derive(Debug, Clone)]
pub struct LocalCommand {
    /// Shell source, run with `<shell> -c`.
    pub script: String,
    pub shell: PathBuf,
    pub cwd: PathBuf,
    /// Added to (and overriding) nrl's own environment.
    pub env: IndexMap<String, String>,
    /// The combined stdout + stderr copy.
    pub log: PathBuf,
    pub stop_grace: Duration,
}

/// How the entrypoint ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this code.
    Exited(i32),
    /// A signal it did not get from nrl ended it.
    Signalled(i32),
    /// nrl was interrupted and stopped it; its own exit code or 128+signal.
    Interrupted(i32),
}

impl Ended {
    /// The shell convention: the exit code, or 128 + the signal.
    pub fn code(self) -> i32 {
        match self {
            Ended::Exited(c) | Ended::Signalled(c) | Ended::Interrupted(c) => c,
        }
    }
}

/// Where interrupts come from: the process's signals, or a channel (tests, scripts).
pub struct Interrupts {
    inner: InterruptSource,
}

enum InterruptSource {
    #[cfg(unix)]
    Signals(Vec<tokio::signal::unix::Signal>),
    #[cfg(not(unix))]
    CtrlC,
    Channel(mpsc::UnboundedReceiver<()>),
}

impl Interrupts {
    /// SIGINT, SIGTERM and SIGHUP, registered now so that none arriving after this call
    /// can kill nrl and leave the child's group behind.
    pub fn from_signals() -> Result<Interrupts> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let kinds = [
                SignalKind::interrupt(),
                SignalKind::terminate(),
                SignalKind::hangup(),
            ];
            let signals = kinds
                .into_iter()
                .map(signal)
                .collect::<std::io::Result<Vec<_>>>()
                .map_err(|e| {
                    Diag::new(
                        "nrl::runtime",
                        format!("cannot install signal handlers: {e}"),
                    )
                })?;
            Ok(Interrupts {
                inner: InterruptSource::Signals(signals),
            })
        }
        #[cfg(not(unix))]
        Ok(Interrupts {
            inner: InterruptSource::CtrlC,
        })
    }

    /// Interrupts sent through the returned sender.
    pub fn channel() -> (mpsc::UnboundedSender<()>, Interrupts) {
        let (tx, rx) = mpsc::unbounded_channel();
        let inner = InterruptSource::Channel(rx);
        (tx, Interrupts { inner })
    }

    /// The next interrupt; pending forever once the source is gone.
    pub async fn recv(&mut self) {
        match &mut self.inner {
            #[cfg(unix)]
            InterruptSource::Signals(signals) => {
                let next = signals.iter_mut().map(|s| Box::pin(s.recv()));
                let _ = futures::future::select_all(next).await;
            }
            #[cfg(not(unix))]
            InterruptSource::CtrlC => {
                let _ = tokio::signal::ctrl_c().await;
            }
            InterruptSource::Channel(rx) => {
                if rx.recv().await.is_none() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// `bash` from `PATH`, else `sh` (from `PATH`, else `/bin/sh`).
pub fn find_shell(path_var: Option<&std::ffi::OsStr>) -> PathBuf {
    let dirs: Vec<PathBuf> = path_var
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    for name in ["bash", "sh"] {
        if let Some(found) = dirs.iter().map(|d| d.join(name)).find(|p| is_executable(p)) {
            return found;
        }
    }
    PathBuf::from("/bin/sh")
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// How the entrypoint ended, and what could not be ended of what it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub ended: Ended,
    /// Pids of the run's processes still running after SIGKILL (normally none).
    pub survivors: Vec<u32>,
}

/// A started entrypoint.
pub struct RunningChild {
    child: tokio::process::Child,
    group: GroupGuard,
    procs: RunProcesses,
    _subreaper: Subreaper,
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
    log: tokio::fs::File,
    stop_grace: Duration,
}

impl LocalCommand {
    /// Start the command in a new process group, stdin closed, output piped.
    pub async fn spawn(&self) -> Result<RunningChild> {
        let log = tokio::fs::File::create(&self.log).await.map_err(|e| {
            Diag::new(
                "nrl::run::log",
                format!("cannot create {}: {e}", self.log.display()),
            )
        })?;
        // Before the spawn: whatever the entrypoint orphans reparents to nrl from the start.
        let subreaper = Subreaper::enable();
        let tag = new_tag();
        let mut command = tokio::process::Command::new(&self.shell);
        command
            .arg("-c")
            .arg(&self.script)
            .current_dir(&self.cwd)
            .envs(&self.env)
            .env(TAG_VAR, &tag)
            // A background group reading the terminal would be stopped by SIGTTIN.
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|e| {
            Diag::new(
                "nrl::run::spawn",
                format!("cannot start {}: {e}", self.shell.display()),
            )
            .help("check that a POSIX shell (bash or sh) is installed and on PATH")
        })?;
        let pid = child.id().unwrap_or(0);
        let group = GroupGuard { pgid: pid };
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(Diag::new(
                "nrl::run::spawn",
                "the child's output pipes are missing",
            ));
        };
        Ok(RunningChild {
            child,
            group,
            procs: RunProcesses::new(tag, pid),
            _subreaper: subreaper,
            stdout,
            stderr,
            log,
            stop_grace: self.stop_grace,
        })
    }
}

impl RunningChild {
    /// The child's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.group.pgid
    }

    /// Copy output to `out`/`err` and the log until the entrypoint ends. On an interrupt
    /// the group gets SIGINT, then SIGKILL after the grace period (or a second
    /// interrupt). Whatever is left of the group when the entrypoint ends is killed.
    pub async fn stream_until_exit<O, E>(
        self,
        out: &mut O,
        err: &mut E,
        interrupts: &mut Interrupts,
    ) -> Result<Ended>
    where
        O: AsyncWrite + Unpin + ?Sized,
        E: AsyncWrite + Unpin + ?Sized,
    {
        Ok(self.run_to_end(out, err, interrupts).await?.ended)
    }

    /// [`Self::stream_until_exit`], and then every other process of the run (those that
    /// left the group or the session too) gets SIGTERM, then SIGKILL after the grace
    /// period, and is reaped.
    pub async fn run_to_end<O, E>(
        mut self,
        out: &mut O,
        err: &mut E,
        interrupts: &mut Interrupts,
    ) -> Result<Finished>
    where
        O: AsyncWrite + Unpin + ?Sized,
        E: AsyncWrite + Unpin + ?Sized,
    {
        let mut out_sink = Sink::new(out);
        let mut err_sink = Sink::new(err);
        let mut log = LogFile::new(&mut self.log);
        let (mut out_buf, mut err_buf) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
        let (mut out_open, mut err_open) = (true, true);
        let mut status: Option<ExitStatus> = None;
        let mut interrupted = false;
        let mut kill_at: Option<Instant> = None;
        let mut drain_until: Option<Instant> = None;
        let far = || Instant::now() + Duration::from_secs(86400 * 365);
        let grace = self.stop_grace;
        let mut procs = Some(&mut self.procs);
        let mut sweep: Option<std::pin::Pin<Box<dyn Future<Output = Vec<u32>> + Send + '_>>> = None;
        let mut survivors: Option<Vec<u32>> = None;
        loop {
            if status.is_some() && survivors.is_some() && !out_open && !err_open {
                break;
            }
            tokio::select! {
                n = read_chunk(&mut self.stdout, &mut out_buf), if out_open => match n {
                    Some(n) => {
                        log.write(&out_buf[..n]).await;
                        out_sink.write(&out_buf[..n]).await;
                    }
                    None => out_open = false,
                },
                n = read_chunk(&mut self.stderr, &mut err_buf), if err_open => match n {
                    Some(n) => {
                        log.write(&err_buf[..n]).await;
                        err_sink.write(&err_buf[..n]).await;
                    }
                    None => err_open = false,
                },
                exit = self.child.wait(), if status.is_none() => {
                    let exit = exit.map_err(|e| {
                        Diag::new("nrl::run::wait", format!("cannot wait for the entrypoint: {e}"))
                    })?;
                    status = Some(exit);
                    // Leftovers of the group (background jobs) go with the entrypoint,
                    // and so does everything else the run started.
                    self.group.signal(GroupSignal::Kill);
                    if let Some(p) = procs.take() {
                        sweep = Some(Box::pin(p.end_all(grace)));
                    }
                }
                left = async { sweep.as_mut().map(|s| s.as_mut()).expect("a sweep").await }, if sweep.is_some() && survivors.is_none() => {
                    survivors = Some(left);
                    drain_until = Some(Instant::now() + DRAIN_AFTER_EXIT);
                }
                _ = interrupts.recv(), if status.is_none() => {
                    if interrupted {
                        self.group.signal(GroupSignal::Kill);
                    } else {
                        interrupted = true;
                        self.group.signal(GroupSignal::Interrupt);
                        kill_at = Some(Instant::now() + self.stop_grace);
                    }
                }
                _ = tokio::time::sleep_until(kill_at.unwrap_or_else(far)), if kill_at.is_some() && status.is_none() => {
                    self.group.signal(GroupSignal::Kill);
                    kill_at = None;
                }
                _ = tokio::time::sleep_until(drain_until.unwrap_or_else(far)), if drain_until.is_some() => {
                    tracing::debug!("output still open after the entrypoint ended; not waiting for it");
                    break;
                }
            }
        }
        drop(sweep);
        log.flush().await;
        self.group.disarm();
        let Some(status) = status else {
            return Err(Diag::new(
                "nrl::run::wait",
                "the entrypoint's status was lost",
            ));
        };
        let code = status_code(status);
        let ended = match (interrupted, status.code()) {
            (true, _) => Ended::Interrupted(code),
            (false, Some(c)) => Ended::Exited(c),
            (false, None) => Ended::Signalled(code),
        };
        Ok(Finished {
            ended,
            survivors: survivors.unwrap_or_default(),
        })
    }
}

async fn read_chunk<R: AsyncRead + Unpin>(r: &mut R, buf: &mut [u8]) -> Option<usize> {
    match r.read(buf).await {
        Ok(0) | Err(_) => None,
        Ok(n) => Some(n),
    }
}

fn status_code(status: ExitStatus) -> i32 {
    if let Some(c) = status.code() {
        return c;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return 128 + sig;
        }
    }
    1
}

/// A terminal stream: when the reader goes away (`| head`), the run goes on; its output
/// still reaches the log.
struct Sink<'a, W: AsyncWrite + Unpin + ?Sized> {
    w: &'a mut W,
    open: bool,
}

impl<'a, W: AsyncWrite + Unpin + ?Sized> Sink<'a, W> {
    fn new(w: &'a mut W) -> Self {
        Sink { w, open: true }
    }

    async fn write(&mut self, bytes: &[u8]) {
        if self.open && (self.w.write_all(bytes).await.is_err() || self.w.flush().await.is_err()) {
            self.open = false;
        }
    }
}

/// The log copy: a failing disk is reported once and does not stop the run.
struct LogFile<'a> {
    file: &'a mut tokio::fs::File,
    ok: bool,
}

impl<'a> LogFile<'a> {
    fn new(file: &'a mut tokio::fs::File) -> Self {
        LogFile { file, ok: true }
    }

    async fn write(&mut self, bytes: &[u8]) {
        if self.ok
            && let Err(e) = self.file.write_all(bytes).await
        {
            tracing::warn!(%e, "cannot write the run log; output continues on the terminal only");
            self.ok = false;
        }
    }

    async fn flush(&mut self) {
        if self.ok {
            let _ = self.file.flush().await;
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum GroupSignal {
    Interrupt,
    Kill,
}

/// The child's process group; killed when dropped unless disarmed (an error or panic in
/// nrl must not leave the run behind).
struct GroupGuard {
    pgid: u32,
}

impl GroupGuard {
    fn signal(&self, sig: GroupSignal) {
        #[cfg(unix)]
        {
            use rustix::process::{Pid, Signal, kill_process_group};
            let Some(pid) = i32::try_from(self.pgid).ok().and_then(Pid::from_raw) else {
                return;
            };
            let sig = match sig {
                GroupSignal::Interrupt => Signal::INT,
                GroupSignal::Kill => Signal::KILL,
            };
            // ESRCH: the group is already gone.
            let _ = kill_process_group(pid, sig);
        }
        #[cfg(not(unix))]
        let _ = sig;
    }

    fn disarm(&mut self) {
        self.pgid = 0;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.pgid != 0 {
            self.signal(GroupSignal::Kill);
        }
    }
}

#[cfg(test)]
#[path = "process_tests.rs"]
mod tests;
