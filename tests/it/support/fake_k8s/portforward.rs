//! `pods/{name}/portforward` over a websocket (`v4.channel.k8s.io`, as kube-rs requires):
//! for the i-th requested port, channel 2i carries data and 2i+1 errors; each channel first
//! sends its port number (two bytes, little endian). Data goes to the local TCP address a
//! forward rule names for that pod and port (see `FakeK8s::forward_port`).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::http_util::Query;
use super::meta::{ApiError, ApiResult, glob_match, name_of};
use super::resources::PODS;
use super::state::{State, lock};

/// The local address forwards to `port` of this pod go to, if a rule covers it.
pub fn target_for(state: &State, pod: &Value, port: u16) -> Option<SocketAddr> {
    let ns = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let rules = lock(&state.forwards).clone();
    rules
        .iter()
        .find(|r| {
            r.port == port
                && r.namespace == ns
                && r.pod_name
                    .as_deref()
                    .is_none_or(|g| glob_match(g, name_of(pod)))
                && r.selector.as_ref().is_none_or(|s| s.matches(pod))
        })
        .map(|r| r.target)
        .or_else(|| ray_dashboard_target(state, pod, port))
}

/// With a real Ray dashboard configured, every Ray head pod's 8265 goes to it.
fn ray_dashboard_target(state: &State, pod: &Value, port: u16) -> Option<SocketAddr> {
    let is_head = pod
        .pointer("/metadata/labels/ray.io~1node-type")
        .and_then(Value::as_str)
        == Some("head");
    if port != 8265 || !is_head {
        return None;
    }
    let url = state.rules().ray_dashboard?;
    let host_port = url.trim_start_matches("http://").trim_end_matches('/');
    host_port.parse().ok()
}

fn frame(channel: u8, data: &[u8]) -> Message {
    let mut v = Vec::with_capacity(data.len() + 1);
    v.push(channel);
    v.extend_from_slice(data);
    Message::Binary(Bytes::from(v))
}

pub fn respond(
    state: Arc<State>,
    ws: WebSocketUpgrade,
    ns: &str,
    name: &str,
    q: &Query,
) -> ApiResult<Response> {
    let pod = state.get(&PODS, ns, name)?;
    let mut ports: Vec<u16> = Vec::new();
    for spec in q.all("ports") {
        for p in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let port = p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                ApiError::bad_request(format!("unable to parse \"{p}\" as a port"))
            })?;
            ports.push(port);
        }
    }
    if ports.is_empty() {
        return Err(ApiError::bad_request(
            "query parameter \"port\" is required",
        ));
    }
    if pod.pointer("/status/phase").and_then(Value::as_str) != Some("Running") {
        return Err(ApiError::bad_request(format!("pod {name} is not running")));
    }
    let targets: Vec<(u16, Option<SocketAddr>)> = ports
        .iter()
        .map(|p| (*p, target_for(&state, &pod, *p)))
        .collect();
    let (ns, name) = (ns.to_string(), name.to_string());
    Ok(ws
        .protocols(["v4.channel.k8s.io", "portforward.k8s.io"])
        .on_upgrade(move |socket| run(socket, ns, name, targets)))
}

async fn run(socket: WebSocket, ns: String, pod: String, targets: Vec<(u16, Option<SocketAddr>)>) {
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

    // Port-number preamble on every channel.
    for (i, (port, _)) in targets.iter().enumerate() {
        let le = port.to_le_bytes();
        let _ = out_tx.send(frame((2 * i) as u8, &le)).await;
        let _ = out_tx.send(frame((2 * i + 1) as u8, &le)).await;
    }

    let mut to_upstream: Vec<Option<tokio::net::tcp::OwnedWriteHalf>> = Vec::new();
    let (done_tx, mut done_rx) = mpsc::channel::<usize>(targets.len().max(1));
    let mut open = 0usize;
    for (i, (port, target)) in targets.iter().enumerate() {
        let conn = match target {
            Some(addr) => TcpStream::connect(addr).await.map_err(|e| e.to_string()),
            None => Err("connection refused".to_string()),
        };
        match conn {
            Ok(stream) => {
                let (mut r, w) = stream.into_split();
                to_upstream.push(Some(w));
                open += 1;
                let out = out_tx.clone();
                let done = done_tx.clone();
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    loop {
                        match r.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                if out.send(frame((2 * i) as u8, &buf[..n])).await.is_err() {
                                    break;
                                }
                            }
                        }
                    }
                    let _ = done.send(i).await;
                });
            }
            Err(e) => {
                to_upstream.push(None);
                let msg = format!(
                    "error forwarding port {port} to pod {pod}, uid : failed to connect to localhost:{port} inside namespace {ns}: {e}"
                );
                let _ = out_tx.send(frame((2 * i + 1) as u8, msg.as_bytes())).await;
            }
        }
    }
    drop(done_tx);

    if open == 0 {
        let _ = out_tx.send(Message::Close(None)).await;
    } else {
        loop {
            tokio::select! {
                msg = incoming.next() => match msg {
                    Some(Ok(Message::Binary(data))) if data.len() > 1 => {
                        let ch = data[0] as usize;
                        if ch.is_multiple_of(2)
                            && let Some(Some(w)) = to_upstream.get_mut(ch / 2)
                            && w.write_all(&data[1..]).await.is_err()
                        {
                            to_upstream[ch / 2] = None;
                        }
                    }
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                    Some(Ok(_)) => {}
                },
                finished = done_rx.recv() => {
                    if finished.is_some() {
                        open -= 1;
                    }
                    if open == 0 || finished.is_none() {
                        // Every upstream closed: end the session so the client sees EOF.
                        let _ = out_tx.send(Message::Close(None)).await;
                        break;
                    }
                }
            }
        }
    }
    for w in to_upstream.iter_mut().flatten() {
        let _ = w.shutdown().await;
    }
    drop(out_tx);
    let _ = writer.await;
}
