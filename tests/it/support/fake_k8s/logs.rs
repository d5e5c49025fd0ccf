//! Pod logs: per-container line buffers that tests and simulations append to, and the
//! `pods/{name}/log` endpoint (`container`, `follow`, `tailLines`, `sinceSeconds`,
//! `timestamps`, `limitBytes`), which streams new lines while following and ends when the
//! container or pod terminates.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::mpsc;

use super::http_util::Query;
use super::meta::{ApiError, ApiResult};
use super::resources::PODS;
use super::state::{State, lock};

#[derive(Debug, Clone)]
pub struct LogLine {
    pub time: jiff::Timestamp,
    pub text: String,
}

#[derive(Default)]
pub struct LogStore {
    lines: HashMap<(String, String, String), Vec<LogLine>>,
}

impl LogStore {
    pub fn lines(&self, ns: &str, pod: &str, container: &str) -> &[LogLine] {
        self.lines
            .get(&(ns.to_string(), pod.to_string(), container.to_string()))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    pub fn clear_pod(&mut self, ns: &str, pod: &str) {
        self.lines.retain(|(n, p, _), _| !(n == ns && p == pod));
    }
}

fn container_names(pod: &Value, key: &str) -> Vec<String> {
    pod.pointer(&format!("/spec/{key}"))
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The container a request means, with the real server's errors for ambiguous or unknown names.
pub fn resolve_container(pod: &Value, requested: Option<&str>) -> ApiResult<String> {
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let main = container_names(pod, "containers");
    let init = container_names(pod, "initContainers");
    match requested {
        Some(c) if main.iter().chain(init.iter()).any(|n| n == c) => Ok(c.to_string()),
        Some(c) => Err(ApiError::bad_request(format!(
            "container {c} is not valid for pod {pod_name}"
        ))),
        None if main.len() == 1 => Ok(main[0].clone()),
        None => {
            let mut msg = format!(
                "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                main.join(" ")
            );
            if !init.is_empty() {
                msg.push_str(&format!(
                    " or one of the init containers: [{}]",
                    init.join(" ")
                ));
            }
            Err(ApiError::bad_request(msg))
        }
    }
}

/// The container's status entry (regular or init).
pub fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    ["containerStatuses", "initContainerStatuses"]
        .iter()
        .find_map(|k| {
            pod.pointer(&format!("/status/{k}"))
                .and_then(Value::as_array)?
                .iter()
                .find(|s| s.get("name").and_then(Value::as_str) == Some(container))
        })
}

/// Whether the container can have logs yet; the real kubelet refuses before it starts.
fn check_started(pod: &Value, container: &str) -> ApiResult<()> {
    let pod_name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let waiting_reason = match container_status(pod, container) {
        Some(s)
            if s.pointer("/state/waiting").is_some()
                && s.get("restartCount").and_then(Value::as_i64).unwrap_or(0) == 0 =>
        {
            s.pointer("/state/waiting/reason")
                .and_then(Value::as_str)
                .unwrap_or("ContainerCreating")
                .to_string()
        }
        Some(_) => return Ok(()),
        None => "ContainerCreating".to_string(),
    };
    Err(ApiError::bad_request(format!(
        "container \"{container}\" in pod \"{pod_name}\" is waiting to start: {waiting_reason}"
    )))
}

/// Whether no more lines will come: the pod is gone, finished, or the container terminated.
fn finished(state: &State, ns: &str, pod: &str, container: &str) -> bool {
    let Ok(obj) = state.get(&PODS, ns, pod) else {
        return true;
    };
    let phase = obj
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if matches!(phase, "Succeeded" | "Failed")
        || obj.pointer("/metadata/deletionTimestamp").is_some()
    {
        return true;
    }
    container_status(&obj, container).is_some_and(|s| s.pointer("/state/terminated").is_some())
}

fn render(line: &LogLine, timestamps: bool) -> String {
    if timestamps {
        format!(
            "{} {}\n",
            line.time.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            line.text
        )
    } else {
        format!("{}\n", line.text)
    }
}

/// GET /api/v1/namespaces/{ns}/pods/{name}/log
pub fn respond(state: Arc<State>, ns: &str, pod_name: &str, q: &Query) -> ApiResult<Response> {
    let pod = state.get(&PODS, ns, pod_name)?;
    let container = resolve_container(&pod, q.get("container"))?;
    if q.flag("previous") {
        // The previous run's log is kept under `<container>/previous`
        // (`FakeK8s::append_previous_log`); without one the API answers 400 as a real one.
        let key = previous_key(&container);
        let lines: Vec<LogLine> = lock(&state.logs).lines(ns, pod_name, &key).to_vec();
        if lines.is_empty() {
            return Err(ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{pod_name}\" not found"
            )));
        }
        let tail = q.number("tailLines")?.map(|t| t.max(0) as usize);
        let skip = tail.map_or(0, |t| lines.len().saturating_sub(t));
        let timestamps = q.flag("timestamps");
        let text: String = lines[skip..]
            .iter()
            .map(|l| render(l, timestamps))
            .collect();
        let mut resp = Response::new(Body::from(text));
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        return Ok(resp);
    }
    check_started(&pod, &container)?;
    let follow = q.flag("follow");
    let timestamps = q.flag("timestamps");
    let tail = q.number("tailLines")?;
    let since = q.number("sinceSeconds")?;
    let limit = q.number("limitBytes")?.map(|n| n.max(0) as usize);

    let all: Vec<LogLine> = lock(&state.logs).lines(ns, pod_name, &container).to_vec();
    let mut cursor = all.len();
    let mut first: Vec<&LogLine> = all.iter().collect();
    if let Some(s) = since {
        let cutoff = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(s);
        first.retain(|l| l.time >= cutoff);
    }
    if let Some(t) = tail {
        let t = t.max(0) as usize;
        let skip = first.len().saturating_sub(t);
        first.drain(..skip);
    }
    let mut text: String = first.iter().map(|l| render(l, timestamps)).collect();
    if let Some(limit) = limit {
        text.truncate(limit);
    }

    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    let (ns, pod_name) = (ns.to_string(), pod_name.to_string());
    let st = state.clone();
    state.handle.spawn(async move {
        let mut budget = limit.map(|l| l.saturating_sub(text.len()));
        if !text.is_empty() && tx.send(Ok(Bytes::from(text))).await.is_err() {
            return;
        }
        if !follow {
            return;
        }
        let mut log_rx = st.log_tx.subscribe();
        let mut rv_rx = st.rv_rx.clone();
        loop {
            log_rx.borrow_and_update();
            rv_rx.borrow_and_update();
            let new: Vec<LogLine> = {
                let logs = lock(&st.logs);
                let lines = logs.lines(&ns, &pod_name, &container);
                let out = lines
                    .get(cursor..)
                    .map(<[LogLine]>::to_vec)
                    .unwrap_or_default();
                cursor = lines.len().max(cursor);
                out
            };
            for l in new {
                let mut chunk = render(&l, timestamps);
                if let Some(b) = budget.as_mut() {
                    chunk.truncate(*b);
                    *b -= chunk.len();
                }
                if !chunk.is_empty() && tx.send(Ok(Bytes::from(chunk))).await.is_err() {
                    return;
                }
                if budget == Some(0) {
                    return;
                }
            }
            if finished(&st, &ns, &pod_name, &container) {
                // Lines written in the same instant as the termination still go out.
                let rest = lock(&st.logs)
                    .lines(&ns, &pod_name, &container)
                    .get(cursor..)
                    .map(<[LogLine]>::to_vec)
                    .unwrap_or_default();
                for l in rest {
                    let _ = tx.send(Ok(Bytes::from(render(&l, timestamps)))).await;
                }
                return;
            }
            tokio::select! {
                r = log_rx.changed() => if r.is_err() { return },
                r = rv_rx.changed() => if r.is_err() { return },
                _ = tx.closed() => return,
            }
        }
    });
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(resp)
}

/// Where the previous run of `container`'s log is kept.
pub fn previous_key(container: &str) -> String {
    format!("{container}/previous")
}

/// Append lines to a container's log and wake followers.
pub fn append(state: &State, ns: &str, pod: &str, container: &str, lines: &[String]) {
    {
        let mut logs = lock(&state.logs);
        let buf = logs
            .lines
            .entry((ns.to_string(), pod.to_string(), container.to_string()))
            .or_default();
        for l in lines {
            for part in l.strip_suffix('\n').unwrap_or(l).split('\n') {
                buf.push(LogLine {
                    time: jiff::Timestamp::now(),
                    text: part.to_string(),
                });
            }
        }
    }
    state.log_tx.send_modify(|v| *v += 1);
}
