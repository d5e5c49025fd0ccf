//! Exec in a pod over the API's `pods/exec` subresource: run a command, feed stdin,
//! collect stdout/stderr and the exit code from the status channel ([`K8s::exec`]), or
//! attach the local terminal to it ([`K8s::exec_interactive`]).

use futures::SinkExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, TerminalSize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::signal::unix::{SignalKind, signal};

use super::client::K8s;
use super::terminal::{RawMode, StdinReader, window_size};
use crate::diag::{Diag, Result};

/// Output of a finished exec.
#[derive(Debug, Clone, Default)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

impl ExecOutput {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

impl K8s {
    /// Run `cmd` in `pod` (container optional), optionally writing `stdin`, and wait.
    pub async fn exec(
        &self,
        ns: &str,
        pod: &str,
        container: Option<&str>,
        cmd: &[&str],
        stdin: Option<&[u8]>,
    ) -> Result<ExecOutput> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let mut ap = AttachParams::default()
            .stdin(stdin.is_some())
            .stdout(true)
            .stderr(true);
        if let Some(c) = container {
            ap = ap.container(c);
        }
        let mut proc = api
            .exec(pod, cmd.iter().copied(), &ap)
            .await
            .map_err(|e| exec_error(pod, cmd, e))?;
        if let (Some(data), Some(mut w)) = (stdin, proc.stdin()) {
            w.write_all(data)
                .await
                .map_err(|e| Diag::api("nrl::k8s::exec", format!("writing stdin: {e}")))?;
            w.shutdown().await.ok();
        }
        let mut out = ExecOutput::default();
        let mut so = proc.stdout();
        let mut se = proc.stderr();
        let status = proc.take_status();
        let read_out = async {
            if let Some(s) = so.as_mut() {
                let _ = s.read_to_end(&mut out.stdout).await;
            }
        };
        let mut err_buf = Vec::new();
        let read_err = async {
            if let Some(s) = se.as_mut() {
                let _ = s.read_to_end(&mut err_buf).await;
            }
        };
        tokio::join!(read_out, read_err);
        out.stderr = err_buf;
        let status = match status {
            Some(f) => f.await,
            None => None,
        };
        out.exit_code = exit_code_of(status.as_ref());
        let _ = proc.join().await;
        Ok(out)
    }
}

impl K8s {
    /// Run `cmd` in `pod` with the local stdin, stdout and stderr attached, and return its
    /// exit code. With `tty`, the remote side gets a terminal: the local one is put in raw
    /// mode (restored on every way out), its size is sent at the start and on every
    /// SIGWINCH, and stderr arrives merged into stdout, as with `kubectl exec -it`.
    /// Without it, stdin is forwarded until end of input and then closed.
    ///
    /// SIGINT, SIGTERM and SIGHUP end the session locally and give `128 + signal`; in raw
    /// mode Ctrl-C is not a signal but a byte for the remote program.
    pub async fn exec_interactive(
        &self,
        ns: &str,
        pod: &str,
        container: Option<&str>,
        cmd: &[&str],
        tty: bool,
    ) -> Result<i32> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let mut ap = AttachParams::default()
            .stdin(true)
            .stdout(true)
            .stderr(!tty)
            .tty(tty);
        if let Some(c) = container {
            ap = ap.container(c);
        }
        let mut proc = api
            .exec(pod, cmd.iter().copied(), &ap)
            .await
            .map_err(|e| exec_error(pod, cmd, e))?;
        let session = Session {
            stdin: proc.stdin(),
            stdout: proc.stdout(),
            stderr: proc.stderr(),
            resize: proc.terminal_size(),
            status: proc.take_status(),
        };
        let outcome = session.run(tty).await;
        // The session is over either way; do not wait long for the socket to close.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), proc.join()).await;
        match outcome? {
            Ended::Signal(n) => Ok(128 + n),
            Ended::Status(status) => status_to_code(pod, cmd, status.map(|s| *s)),
        }
    }
}

enum Ended {
    Status(Option<Box<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>>),
    Signal(i32),
}

struct Session<I, O, E, S> {
    stdin: Option<I>,
    stdout: Option<O>,
    stderr: Option<E>,
    resize: Option<futures::channel::mpsc::Sender<TerminalSize>>,
    status: Option<S>,
}

impl<I, O, E, S> Session<I, O, E, S>
where
    I: AsyncWrite + Unpin,
    O: AsyncRead + Unpin,
    E: AsyncRead + Unpin,
    S: std::future::Future<Output = Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>>,
{
    async fn run(mut self, tty: bool) -> Result<Ended> {
        let signal_error = |e: std::io::Error| {
            Diag::api("nrl::k8s::exec", format!("cannot watch for signals: {e}"))
        };
        let mut winch = signal(SignalKind::window_change()).map_err(signal_error)?;
        let mut sigint = signal(SignalKind::interrupt()).map_err(signal_error)?;
        let mut sigterm = signal(SignalKind::terminate()).map_err(signal_error)?;
        let mut sighup = signal(SignalKind::hangup()).map_err(signal_error)?;

        // Restored when this function returns, whichever way.
        let _raw = if tty {
            RawMode::enable(libc::STDIN_FILENO)
        } else {
            None
        };
        if let (Some(tx), Some((width, height))) = (self.resize.as_mut(), window_size()) {
            let _ = tx.send(TerminalSize { width, height }).await;
        }
        let (reader, mut input) = StdinReader::start();

        let stdin = self.stdin.take();
        let pump = async move {
            let Some(mut w) = stdin else {
                return;
            };
            while let Some(Some(chunk)) = input.recv().await {
                if w.write_all(&chunk).await.is_err() || w.flush().await.is_err() {
                    return;
                }
            }
            // End of local input: the remote side sees end of input too.
            let _ = w.shutdown().await;
        };
        let (stdout, stderr, status) = (self.stdout.take(), self.stderr.take(), self.status.take());
        let output = async move {
            tokio::join!(
                copy_out(stdout, tokio::io::stdout()),
                copy_out(stderr, tokio::io::stderr())
            );
            match status {
                Some(s) => s.await,
                None => None,
            }
        };
        tokio::pin!(pump, output);
        let mut pump_done = false;
        let ended = loop {
            tokio::select! {
                status = &mut output => break Ended::Status(status.map(Box::new)),
                _ = &mut pump, if !pump_done => pump_done = true,
                Some(()) = winch.recv() => {
                    if let (Some(tx), Some((width, height))) = (self.resize.as_mut(), window_size()) {
                        let _ = tx.send(TerminalSize { width, height }).await;
                    }
                }
                Some(()) = sigint.recv() => break Ended::Signal(libc::SIGINT),
                Some(()) = sigterm.recv() => break Ended::Signal(libc::SIGTERM),
                Some(()) = sighup.recv() => break Ended::Signal(libc::SIGHUP),
            }
        };
        reader.stop();
        Ok(ended)
    }
}

/// Copy a remote stream to a local one, flushing every chunk (interactive output).
async fn copy_out(from: Option<impl AsyncRead + Unpin>, mut to: impl AsyncWrite + Unpin) {
    let Some(mut from) = from else {
        return;
    };
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).await.is_err() || to.flush().await.is_err() {
                    break;
                }
            }
        }
    }
}

/// The exit code from the status channel; a failure to start the command is an error.
fn status_to_code(
    pod: &str,
    cmd: &[&str],
    status: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
) -> Result<i32> {
    let Some(s) = status else {
        return Err(Diag::api(
            "nrl::k8s::exec",
            format!("the session with pod {pod} ended without an exit status (connection lost?)"),
        )
        .help("check the pod is still Running and retry"));
    };
    let has_exit_code = s
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.reason.as_deref() == Some("ExitCode")));
    if s.status.as_deref() != Some("Success") && !has_exit_code {
        return Err(Diag::api(
            "nrl::k8s::exec",
            format!(
                "cannot run `{}` in pod {pod}: {}",
                cmd.join(" "),
                s.message.as_deref().unwrap_or("no reason given")
            ),
        )
        .help("check the command exists in the container's image"));
    }
    Ok(exit_code_of(Some(&s)))
}

fn exec_error(pod: &str, cmd: &[&str], e: kube::Error) -> Diag {
    Diag::api(
        "nrl::k8s::exec",
        format!("exec `{}` in pod {pod} failed: {e}", cmd.join(" ")),
    )
    .help("check the pod is Running and you may `create pods/exec` in its namespace")
}

/// Exit code from the exec status: Success → 0, NonZeroExitCode → its `ExitCode` cause.
pub fn exit_code_of(
    status: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
) -> i32 {
    let Some(s) = status else {
        return -1;
    };
    if s.status.as_deref() == Some("Success") {
        return 0;
    }
    s.details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
                .and_then(|c| c.message.as_deref())
                .and_then(|m| m.trim().parse().ok())
        })
        .unwrap_or(1)
}
