//! Exec in a pod over the API's `pods/exec` subresource (no kubectl): run a command, feed
//! stdin, collect stdout/stderr and the exit code from the status channel; or attach it
//! to caller-supplied streams ([`K8s::exec_attached`]) or to this process's terminal
//! ([`K8s::exec_interactive`], in `terminal.rs`).

use futures::SinkExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, AttachedProcess, TerminalSize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::client::K8s;
use super::errors::{Action, timeout_diag, to_diag};
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
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// The local side of an attached exec ([`K8s::exec_attached`]).
pub struct AttachedIo {
    /// Copied to the command's stdin; its EOF closes the command's stdin.
    pub stdin: Option<Box<dyn AsyncRead + Send + Unpin>>,
    /// Receives the command's stdout (with a tty: the terminal's whole output).
    pub stdout: Box<dyn AsyncWrite + Send + Unpin>,
    /// Receives the command's stderr; unused with a tty (the terminal merges it).
    pub stderr: Option<Box<dyn AsyncWrite + Send + Unpin>>,
    /// Terminal sizes `(columns, rows)`, the first sent at once; only used with a tty.
    pub resize: Option<tokio::sync::mpsc::Receiver<(u16, u16)>>,
}

/// `cmd` behind a reader of exactly `len` bytes of stdin: `sh -c 'head -c LEN | CMD'`.
///
/// The command then sees the end of its input after the data, whether or not the end of
/// the stream reaches the pod: the `v4.channel.k8s.io` exec protocol (API servers before
/// the `v5` one, which kube-rs falls back to) has no way to close stdin, and kubelets differ
/// (kwok v0.8.0's `utils/exec.Command` copies stdin into the process and never closes the
/// pipe; seen on the testbed, where `cat > file` never ended).
fn length_delimited(cmd: &[&str], len: usize) -> Vec<String> {
    let mut framed: Vec<String> = ["sh", "-c", "n=$1; shift; head -c \"$n\" | \"$@\"", "sh"]
        .map(String::from)
        .to_vec();
    framed.push(len.to_string());
    framed.extend(cmd.iter().map(|s| s.to_string()));
    framed
}

impl K8s {
    /// Run `cmd` in `pod` (container optional), optionally writing `stdin`, and wait for
    /// it to finish. A non-zero exit is not an error: see `exit_code`.
    pub async fn exec(
        &self,
        ns: &str,
        pod: &str,
        container: Option<&str>,
        cmd: &[&str],
        stdin: Option<&[u8]>,
    ) -> Result<ExecOutput> {
        let ap = AttachParams::default()
            .stdin(stdin.is_some())
            .stdout(true)
            .stderr(true);
        let framed;
        let sent = match stdin {
            Some(data) => {
                framed = length_delimited(cmd, data.len());
                framed.iter().map(String::as_str).collect::<Vec<_>>()
            }
            None => cmd.to_vec(),
        };
        let mut proc = self.open_exec(ns, pod, container, &sent, ap).await?;
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
        let mut err_buf = Vec::new();
        let read_out = async {
            if let Some(s) = so.as_mut() {
                let _ = s.read_to_end(&mut out.stdout).await;
            }
        };
        let read_err = async {
            if let Some(s) = se.as_mut() {
                let _ = s.read_to_end(&mut err_buf).await;
            }
        };
        tokio::join!(read_out, read_err);
        out.stderr = err_buf;
        out.exit_code = finish(proc, status, pod, cmd).await?;
        Ok(out)
    }

    /// Run `cmd` in `pod` wired to the given streams until it exits; returns its exit
    /// code. With `tty` the pod allocates a terminal (stdout and stderr merged) and
    /// `io.resize` drives its size.
    pub async fn exec_attached(
        &self,
        ns: &str,
        pod: &str,
        container: Option<&str>,
        cmd: &[&str],
        tty: bool,
        io: AttachedIo,
    ) -> Result<i32> {
        let AttachedIo {
            stdin,
            mut stdout,
            stderr,
            resize,
        } = io;
        let ap = AttachParams::default()
            .stdin(stdin.is_some())
            .stdout(true)
            .stderr(!tty)
            .tty(tty);
        let mut proc = self.open_exec(ns, pod, container, cmd, ap).await?;
        let status = proc.take_status();
        let mut tasks = tokio::task::JoinSet::new();
        if let (Some(mut local), Some(mut remote)) = (stdin, proc.stdin()) {
            tasks.spawn(async move {
                let _ = tokio::io::copy(&mut local, &mut remote).await;
                let _ = remote.shutdown().await;
            });
        }
        if let (Some(mut sizes), Some(mut tx)) = (resize, proc.terminal_size()) {
            tasks.spawn(async move {
                while let Some((width, height)) = sizes.recv().await {
                    if tx.send(TerminalSize { width, height }).await.is_err() {
                        break;
                    }
                }
            });
        }
        let mut remote_out = proc.stdout();
        let mut remote_err = proc.stderr();
        let copy_out = async {
            if let Some(r) = remote_out.as_mut() {
                let _ = tokio::io::copy(r, &mut stdout).await;
                let _ = stdout.flush().await;
            }
        };
        let copy_err = async {
            if let (Some(r), Some(mut w)) = (remote_err.as_mut(), stderr) {
                let _ = tokio::io::copy(r, &mut w).await;
                let _ = w.flush().await;
            }
        };
        tokio::join!(copy_out, copy_err);
        // The command has exited; an interactive stdin reader may still be waiting.
        tasks.abort_all();
        finish(proc, status, pod, cmd).await
    }

    async fn open_exec(
        &self,
        ns: &str,
        pod: &str,
        container: Option<&str>,
        cmd: &[&str],
        mut ap: AttachParams,
    ) -> Result<AttachedProcess> {
        if let Some(c) = container {
            ap = ap.container(c);
        }
        let api: Api<Pod> = Api::namespaced(self.stream_client.clone(), ns);
        let action = Action::new("create", "pods/exec", ns).named(pod);
        // Not retried: the command may have started.
        match tokio::time::timeout(
            self.request_timeout,
            api.exec(pod, cmd.iter().copied(), &ap),
        )
        .await
        {
            Ok(Ok(p)) => Ok(p),
            Ok(Err(e @ kube::Error::Api(_))) => Err(to_diag(e, &action)),
            Ok(Err(e)) => Err(Diag::api(
                "nrl::k8s::exec",
                format!("exec `{}` in pod {pod} failed: {e}", cmd.join(" ")),
            )
            .help("check the pod is Running and you may `create pods/exec` in its namespace")),
            Err(_) => Err(timeout_diag(&action, self.request_timeout)),
        }
    }
}

/// Wait for the status channel and the connection; the exit code.
async fn finish(
    proc: AttachedProcess,
    status: Option<
        impl std::future::Future<
            Output = Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
        >,
    >,
    pod: &str,
    cmd: &[&str],
) -> Result<i32> {
    let status = match status {
        Some(f) => f.await,
        None => None,
    };
    let _ = proc.join().await;
    if let Some(d) = failure_diag(status.as_ref(), pod, cmd) {
        return Err(d);
    }
    match status {
        Some(s) => Ok(exit_code_of(Some(&s))),
        None => Err(Diag::api(
            "nrl::k8s::exec",
            format!(
                "lost the connection to pod {pod} before `{}` reported its exit status",
                cmd.join(" ")
            ),
        )
        .help("the pod may have restarted or the API server closed the stream; run it again")),
    }
}

/// The diagnostic for an exec that failed without the command reporting an exit code:
/// a `Failure` status with no `ExitCode` cause. The API server sends one when it cannot
/// reach the kubelet or the kubelet cannot run the command (container not found, no such
/// executable): apiserver `pkg/util/proxy/streamtranslator.go`
/// `StreamTranslatorHandler.ServeHTTP` writes a non-exit error of the kubelet stream as
/// `InternalError`. The status message is the only account of what went wrong.
pub fn failure_diag(
    status: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
    pod: &str,
    cmd: &[&str],
) -> Option<Diag> {
    let s = status?;
    if s.status.as_deref() != Some("Failure") {
        return None;
    }
    let has_exit_code = s
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.reason.as_deref() == Some("ExitCode")));
    if has_exit_code || s.reason.as_deref() == Some("NonZeroExitCode") {
        return None;
    }
    let message = s
        .message
        .clone()
        .filter(|m| !m.is_empty())
        .or_else(|| s.reason.clone())
        .unwrap_or_else(|| "no reason given".to_string());
    let lower = message.to_lowercase();
    let help = if lower.contains("executable file not found") || lower.contains("no such file") {
        "the command does not exist in the container image; check its name and PATH"
    } else if message.contains("container not found") {
        "the container is not running (yet, or any more); check the pod with `nrl status` and the container name"
    } else {
        "the API server could not reach the pod's kubelet, or the kubelet could not run the command; check the node and the pod (`nrl status`) and run it again"
    };
    Some(
        Diag::api(
            "nrl::k8s::exec_failed",
            format!("exec `{}` in pod {pod} failed: {message}", cmd.join(" ")),
        )
        .help(help),
    )
}

/// Exit code from the exec status: Success → 0, NonZeroExitCode → its `ExitCode` cause;
/// other failures (command not found) → 127 when the message says so, else 1.
pub fn exit_code_of(
    status: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
) -> i32 {
    let Some(s) = status else {
        return -1;
    };
    if s.status.as_deref() == Some("Success") {
        return 0;
    }
    let from_cause = s
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
                .and_then(|c| c.message.as_deref())
                .and_then(|m| m.trim().parse().ok())
        });
    match from_cause {
        Some(code) => code,
        None if s
            .message
            .as_deref()
            .is_some_and(|m| m.contains("not found") || m.contains("no such file")) =>
        {
            127
        }
        None => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The framed command ends after the data although its stdin stays open, as it does
    /// where the runtime never closes it; and the command's exit code is what it returns.
    #[test]
    fn length_delimited_stdin_ends_without_eof() {
        use std::io::{Read, Write};
        let data = "line one\nline two with 'quotes' and $dollars\n";
        let cmd = length_delimited(&["sh", "-c", "cat; exit 7"], data.len());
        let mut child = std::process::Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh runs");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(data.as_bytes()).expect("write");
        // Keep `stdin` open: the command must not wait for its end.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "still waiting for stdin's end"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut out = String::new();
        child
            .stdout
            .take()
            .expect("stdout")
            .read_to_string(&mut out)
            .expect("read");
        assert_eq!(out, data);
        assert_eq!(status.code(), Some(7));
        drop(stdin);
    }
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

    #[test]
    fn exit_codes_from_status() {
        assert_eq!(exit_code_of(None), -1);
        let ok = Status {
            status: Some("Success".into()),
            ..Default::default()
        };
        assert_eq!(exit_code_of(Some(&ok)), 0);
        let three = Status {
            status: Some("Failure".into()),
            details: Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    reason: Some("ExitCode".into()),
                    message: Some("3".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(exit_code_of(Some(&three)), 3);
        let missing = Status {
            status: Some("Failure".into()),
            message: Some("exec: \"nope\": executable file not found in $PATH".into()),
            ..Default::default()
        };
        assert_eq!(exit_code_of(Some(&missing)), 127);
    }
}
