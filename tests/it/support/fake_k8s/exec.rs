//! `pods/{name}/exec` over a websocket, as kube-rs speaks it (`v5.channel.k8s.io`, else
//! `v4.channel.k8s.io`): binary frames whose first byte is the channel — 0 stdin, 1 stdout,
//! 2 stderr, 3 status (a `Status` object), 4 resize, 255 close (v5).
//!
//! The command really runs, as a local process in the pod's own working directory under the
//! server's temp dir, with the container's environment, in its own process group (killed
//! when the pod goes away).

use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::http_util::Query;
use super::logs::resolve_container;
use super::meta::{ApiError, ApiResult};
use super::resources::{CONFIGMAPS, PODS, SECRETS};
use super::state::{State, lock};

const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const STATUS: u8 = 3;

/// The working directory of a pod's processes (created on first use).
pub fn pod_dir(state: &State, ns: &str, pod: &str) -> PathBuf {
    state.root.join("pods").join(ns).join(pod)
}

/// The container's environment: literal values, and `valueFrom` config map / secret keys and
/// pod fields resolved from the store.
fn container_env(state: &State, pod: &Value, container: &str) -> Vec<(String, String)> {
    let ns = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let spec_c = ["containers", "initContainers"].iter().find_map(|k| {
        pod.pointer(&format!("/spec/{k}"))
            .and_then(Value::as_array)?
            .iter()
            .find(|c| c.get("name").and_then(Value::as_str) == Some(container))
            .cloned()
    });
    let mut out = Vec::new();
    let Some(env) = spec_c
        .as_ref()
        .and_then(|c| c.get("env"))
        .and_then(Value::as_array)
    else {
        return out;
    };
    for e in env {
        let Some(name) = e.get("name").and_then(Value::as_str) else {
            continue;
        };
        let value = if let Some(v) = e.get("value").and_then(Value::as_str) {
            Some(v.to_string())
        } else if let Some(r) = e.pointer("/valueFrom/configMapKeyRef") {
            let cm = state
                .get(
                    &CONFIGMAPS,
                    ns,
                    r.get("name").and_then(Value::as_str).unwrap_or(""),
                )
                .ok();
            let key = r.get("key").and_then(Value::as_str).unwrap_or("");
            cm.and_then(|c| {
                c.pointer(&format!("/data/{key}"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
        } else if let Some(r) = e.pointer("/valueFrom/secretKeyRef") {
            use base64::Engine;
            let s = state
                .get(
                    &SECRETS,
                    ns,
                    r.get("name").and_then(Value::as_str).unwrap_or(""),
                )
                .ok();
            let key = r.get("key").and_then(Value::as_str).unwrap_or("");
            s.and_then(|s| {
                s.pointer(&format!("/data/{key}"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok())
        } else if let Some(path) = e
            .pointer("/valueFrom/fieldRef/fieldPath")
            .and_then(Value::as_str)
        {
            super::meta::get_path(pod, path)
                .and_then(Value::as_str)
                .map(str::to_string)
        } else {
            None
        };
        if let Some(v) = value {
            out.push((name.to_string(), v));
        }
    }
    out
}

/// What the status channel says when the command ends.
fn exit_status(command: &[String], code: i32) -> Value {
    if code == 0 {
        return json!({"metadata": {}, "status": "Success"});
    }
    json!({
        "metadata": {},
        "status": "Failure",
        "message": format!("command terminated with non-zero exit code: error executing command [{}], exit code {code}", command.join(" ")),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": code.to_string()}]}
    })
}

fn spawn_failure(command: &[String], err: &std::io::Error) -> Value {
    let message = format!(
        "failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: unable to start container process: exec: \"{}\": {err}: unknown",
        command.first().map(String::as_str).unwrap_or("")
    );
    json!({"metadata": {}, "status": "Failure", "message": message, "reason": "InternalError",
           "details": {"causes": [{"message": message}]}, "code": 500})
}

fn frame(channel: u8, data: &[u8]) -> Message {
    let mut v = Vec::with_capacity(data.len() + 1);
    v.push(channel);
    v.extend_from_slice(data);
    Message::Binary(Bytes::from(v))
}

/// Validate and upgrade.
pub fn respond(
    state: Arc<State>,
    ws: WebSocketUpgrade,
    ns: &str,
    name: &str,
    q: &Query,
    fails: Option<String>,
) -> ApiResult<Response> {
    let pod = state.get(&PODS, ns, name)?;
    let container = resolve_container(&pod, q.get("container"))?;
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending");
    if phase != "Running" {
        return Err(ApiError::bad_request(format!(
            "unable to upgrade connection: container not found (\"{container}\")"
        )));
    }
    let command: Vec<String> = q.all("command").into_iter().map(str::to_string).collect();
    if command.is_empty() {
        return Err(ApiError::bad_request("you must specify at least 1 command"));
    }
    if let Some(message) = fails {
        let status = json!({"metadata": {}, "status": "Failure",
            "message": format!("Internal error occurred: {message}"), "reason": "InternalError",
            "details": {"causes": [{"message": message}]}, "code": 500});
        return Ok(ws
            .protocols(["v5.channel.k8s.io", "v4.channel.k8s.io"])
            .on_upgrade(move |mut socket| async move {
                let _ = socket
                    .send(frame(STATUS, status.to_string().as_bytes()))
                    .await;
                let _ = socket.send(Message::Close(None)).await;
            }));
    }
    let session = ExecSession {
        state: state.clone(),
        ns: ns.to_string(),
        pod: name.to_string(),
        env: container_env(&state, &pod, &container),
        command,
        stdin: q.flag("stdin"),
        stdout: q.flag("stdout"),
        stderr: q.flag("stderr"),
        tty: q.flag("tty"),
    };
    Ok(ws
        .protocols(["v5.channel.k8s.io", "v4.channel.k8s.io"])
        .on_upgrade(move |socket| session.run(socket)))
}

struct ExecSession {
    state: Arc<State>,
    ns: String,
    pod: String,
    env: Vec<(String, String)>,
    command: Vec<String>,
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
}

type Reader = Box<dyn AsyncRead + Unpin + Send>;
type Writer = Box<dyn AsyncWrite + Unpin + Send>;

fn pump(
    mut reader: Reader,
    channel: u8,
    out: mpsc::Sender<Message>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if out.send(frame(channel, &buf[..n])).await.is_err() {
                        return;
                    }
                }
            }
        }
    })
}

impl ExecSession {
    fn command(&self) -> std::io::Result<tokio::process::Command> {
        let dir = pod_dir(&self.state, &self.ns, &self.pod);
        std::fs::create_dir_all(dir.join("tmp"))?;
        let mut cmd = tokio::process::Command::new(&self.command[0]);
        cmd.args(&self.command[1..])
            .current_dir(&dir)
            .env_clear()
            .env(
                "PATH",
                std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
            )
            .env("HOME", &dir)
            .env("TMPDIR", dir.join("tmp"))
            .env("HOSTNAME", &self.pod);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        // A container's processes start with every signal at its default action; the test
        // runner's may not (a shell's background job ignores SIGINT and SIGQUIT, and
        // ignored signals survive exec — a shell cannot even trap them then).
        // SAFETY: signal() is async-signal-safe, fit for pre_exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGQUIT, libc::SIG_DFL);
                Ok(())
            });
        }
        Ok(cmd)
    }

    async fn run(self, socket: WebSocket) {
        let (mut sink, mut incoming) = socket.split();
        let (out_tx, mut out_rx) = mpsc::channel::<Message>(64);
        let writer = tokio::spawn(async move {
            while let Some(m) = out_rx.recv().await {
                let close = matches!(m, Message::Close(_));
                if sink.send(m).await.is_err() || close {
                    break;
                }
            }
            let _ = sink.close().await;
        });

        let mut pty_fd = None;
        let spawned = self.command().and_then(|mut cmd| {
            let mut readers: Vec<(Reader, u8)> = Vec::new();
            let mut stdin_writer: Option<Writer> = None;
            let child = if self.tty {
                let pty = super::pty::open()?;
                let follower = pty.follower;
                cmd.stdin(Stdio::from(follower.try_clone()?))
                    .stdout(Stdio::from(follower.try_clone()?))
                    .stderr(Stdio::from(follower));
                // SAFETY: the closure only calls async-signal-safe functions.
                unsafe {
                    cmd.pre_exec(super::pty::make_controlling_terminal);
                }
                let child = cmd.spawn()?;
                pty_fd = Some(pty.leader.as_raw_fd());
                let leader = std::fs::File::from(pty.leader);
                let leader_w = leader.try_clone()?;
                readers.push((Box::new(tokio::fs::File::from_std(leader)), STDOUT));
                stdin_writer = Some(Box::new(tokio::fs::File::from_std(leader_w)));
                child
            } else {
                cmd.process_group(0)
                    .stdin(if self.stdin {
                        Stdio::piped()
                    } else {
                        Stdio::null()
                    })
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                let mut child = cmd.spawn()?;
                if let Some(o) = child.stdout.take() {
                    readers.push((Box::new(o), STDOUT));
                }
                if let Some(e) = child.stderr.take() {
                    readers.push((Box::new(e), STDERR));
                }
                if let Some(i) = child.stdin.take() {
                    stdin_writer = Some(Box::new(i));
                }
                child
            };
            Ok((child, readers, stdin_writer))
        });
        let (mut child, readers, stdin_writer) = match spawned {
            Ok(x) => x,
            Err(e) => {
                let status = spawn_failure(&self.command, &e);
                let _ = out_tx
                    .send(frame(STATUS, status.to_string().as_bytes()))
                    .await;
                let _ = out_tx.send(Message::Close(None)).await;
                let _ = writer.await;
                return;
            }
        };
        if let Some(pid) = child.id() {
            lock(&self.state.processes)
                .entry((self.ns.clone(), self.pod.clone()))
                .or_default()
                .push(pid as i32);
        }
        let pumps: Vec<_> = readers
            .into_iter()
            .filter(|(_, ch)| {
                (*ch == STDOUT && (self.stdout || self.tty)) || (*ch == STDERR && self.stderr)
            })
            .map(|(r, ch)| pump(r, ch, out_tx.clone()))
            .collect();

        // Client -> process: stdin, resize, close of stdin.
        let input = tokio::spawn(async move {
            let mut stdin = stdin_writer;
            while let Some(Ok(msg)) = incoming.next().await {
                let data = match msg {
                    Message::Binary(b) => b,
                    Message::Close(_) => break,
                    _ => continue,
                };
                match data.first() {
                    Some(0) => {
                        if let Some(w) = stdin.as_mut()
                            && w.write_all(&data[1..]).await.is_err()
                        {
                            stdin = None;
                        }
                    }
                    Some(4) => {
                        let size: HashMap<String, u16> =
                            serde_json::from_slice(&data[1..]).unwrap_or_default();
                        if let (Some(fd), Some(w), Some(h)) =
                            (pty_fd, size.get("Width"), size.get("Height"))
                        {
                            super::pty::resize(fd, *w, *h);
                        }
                    }
                    Some(255) if data.get(1) == Some(&0) => {
                        if let Some(mut w) = stdin.take() {
                            let _ = w.shutdown().await;
                        }
                    }
                    _ => {}
                }
            }
            // The client is gone (v4 closes the socket when its stdin ends).
            if let Some(mut w) = stdin.take() {
                let _ = w.shutdown().await;
            }
        });

        let code = match child.wait().await {
            Ok(status) => {
                use std::os::unix::process::ExitStatusExt;
                status
                    .code()
                    .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
            }
            Err(_) => 1,
        };
        // The exec ends when its output does: a background process still holding stdout or
        // stderr keeps it open, as in real runtimes (kwok v0.8.0 `utils/exec.Command` and
        // containerd wait for the copying to end; Go's `exec.Cmd.Wait`). The fake used to
        // give up after two seconds, which hid a launcher that held the exec for the whole
        // run (found on the testbed).
        for p in pumps {
            let _ = p.await;
        }
        let status = exit_status(&self.command, code);
        let _ = out_tx
            .send(frame(STATUS, status.to_string().as_bytes()))
            .await;
        let _ = out_tx.send(Message::Close(None)).await;
        drop(out_tx);
        let _ = writer.await;
        // Finish the close handshake: read until the client's Close. Dropping the socket with
        // client frames still unread makes the kernel reset the connection, and a reset can
        // discard output the client has not read yet.
        let abort = input.abort_handle();
        if tokio::time::timeout(Duration::from_secs(2), input)
            .await
            .is_err()
        {
            abort.abort();
        }
    }
}

/// Kill every process group exec started in a pod.
pub fn kill_pod_processes(state: &State, ns: &str, pod: &str) {
    let pids = lock(&state.processes)
        .remove(&(ns.to_string(), pod.to_string()))
        .unwrap_or_default();
    for pid in pids {
        // SAFETY: kill(2) with a negative pid signals that process group; a stale group id
        // only makes the call fail with ESRCH.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// Kill every process group exec started (server shutdown).
pub fn kill_all(state: &State) {
    let all: Vec<(String, String)> = lock(&state.processes).keys().cloned().collect();
    for (ns, pod) in all {
        kill_pod_processes(state, &ns, &pod);
    }
}
