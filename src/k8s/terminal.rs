//! [`K8s::exec_interactive`]: a command in a pod attached to this process's terminal, as
//! `kubectl exec -it` does. Raw mode comes from crossterm (already in the build through
//! comfy-table); stdin is read on a small thread that polls fd 0, so it stops reading as
//! soon as the session ends instead of swallowing the next keystroke meant for the caller.

use std::io::{IsTerminal, Read};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::client::K8s;
use super::exec::AttachedIo;
use crate::diag::{Diag, Result};

/// Puts the terminal in raw mode; restores it when dropped (on every exit path).
struct RawMode;

impl RawMode {
    fn enable() -> Result<RawMode> {
        crossterm::terminal::enable_raw_mode().map_err(|e| {
            Diag::new(
                "nrl::k8s::terminal",
                format!("cannot put the terminal in raw mode: {e}"),
            )
        })?;
        Ok(RawMode)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

impl K8s {
    /// Run `cmd` in `pod` attached to this process's stdin/stdout/stderr and return its
    /// exit code (the caller decides whether to exit with it).
    ///
    /// With `tty` (and a terminal on stdin) the local terminal is switched to raw mode for
    /// the session and restored afterwards, the pod gets a terminal of the same size, and
    /// window resizes (SIGWINCH) are forwarded. Without a terminal it behaves like
    /// `kubectl exec -i`: bytes in, bytes out, stderr kept separate.
    ///
    /// Signature kept stable for `nrl dev connect` and the Rhai built-ins.
    pub async fn exec_interactive(
        &self,
        ns: &str,
        pod: &str,
        container: Option<&str>,
        cmd: &[&str],
        tty: bool,
    ) -> Result<i32> {
        let tty = tty && std::io::stdin().is_terminal();
        let stop = Arc::new(AtomicBool::new(false));
        let (stdin_reader, stdin_writer) = tokio::io::simplex(64 * 1024);
        spawn_stdin_pump(stdin_writer, stop.clone());
        let resize = if tty {
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            if let Ok(size) = crossterm::terminal::size() {
                let _ = tx.try_send(size);
            }
            tokio::spawn(forward_resizes(tx));
            Some(rx)
        } else {
            None
        };
        let _raw = if tty { Some(RawMode::enable()?) } else { None };
        let io = AttachedIo {
            stdin: Some(Box::new(stdin_reader)),
            stdout: Box::new(tokio::io::stdout()),
            stderr: Some(Box::new(tokio::io::stderr())),
            resize,
        };
        let code = self.exec_attached(ns, pod, container, cmd, tty, io).await;
        stop.store(true, Ordering::SeqCst);
        code
    }
}

/// Window-size changes of the controlling terminal, until the receiver goes away.
async fn forward_resizes(tx: tokio::sync::mpsc::Sender<(u16, u16)>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut winch) = signal(SignalKind::window_change()) else {
        return;
    };
    while winch.recv().await.is_some() {
        let Ok(size) = crossterm::terminal::size() else {
            continue;
        };
        if tx.send(size).await.is_err() {
            return;
        }
    }
}

/// Copy this process's stdin into `w` from a thread that checks `stop` every 100 ms.
fn spawn_stdin_pump(mut w: tokio::io::WriteHalf<tokio::io::SimplexStream>, stop: Arc<AtomicBool>) {
    let handle = tokio::runtime::Handle::current();
    let _ = std::thread::Builder::new()
        .name("nrl-exec-stdin".into())
        .spawn(move || {
            let mut buf = [0u8; 8192];
            let mut stdin = std::io::stdin();
            while !stop.load(Ordering::SeqCst) {
                if !stdin_readable(Duration::from_millis(100)) {
                    continue;
                }
                let n = match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if handle.block_on(w.write_all(&buf[..n])).is_err() {
                    return;
                }
            }
            let _ = handle.block_on(w.shutdown());
        });
}

/// Whether fd 0 has input (or EOF) within `wait`.
fn stdin_readable(wait: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let timeout = Timespec::try_from(wait).ok();
    match poll(&mut fds, timeout.as_ref()) {
        Ok(n) => {
            n > 0
                && fds[0]
                    .revents()
                    .intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR)
        }
        Err(_) => false,
    }
}
