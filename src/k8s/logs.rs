//! Pod log streams: follow, tail, container choice, and reconnection. When following, a
//! dropped stream is reopened from the last timestamp seen (lines at that instant are
//! de-duplicated), until the pod has terminated.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::ops::ControlFlow;
use std::time::Duration;

use futures::AsyncBufReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

use super::client::K8s;
use serde_json::Value as Json;

use super::errors::Action;
use super::status::PodStatus;
use crate::diag::{Diag, Result};

#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    /// Container; default: the pod's `kubectl.kubernetes.io/default-container`
    /// annotation, else its first container.
    pub container: Option<String>,
    /// Keep streaming (reconnecting when the stream drops) until the pod terminates.
    pub follow: bool,
    /// Only the last N lines (first connection only).
    pub tail: Option<i64>,
    /// The log of the previous (terminated) run of a restarted container
    /// (`previous=true`; never followed).
    pub previous: bool,
}

/// Lines already delivered at the newest timestamp, so a reconnect that replays that
/// instant (the API's `sinceTime` has one-second precision) prints nothing twice.
#[derive(Default)]
struct Seen {
    last_ts: Option<jiff::Timestamp>,
    at_last_ts: Vec<u64>,
}

impl Seen {
    /// Whether a line is new; records it.
    fn admit(&mut self, ts: Option<jiff::Timestamp>, body: &str) -> bool {
        let Some(ts) = ts else {
            return true;
        };
        let h = {
            let mut h = DefaultHasher::new();
            body.hash(&mut h);
            h.finish()
        };
        match self.last_ts {
            Some(prev) if ts < prev => false,
            Some(prev) if ts == prev => {
                if self.at_last_ts.contains(&h) {
                    return false;
                }
                self.at_last_ts.push(h);
                true
            }
            _ => {
                self.last_ts = Some(ts);
                self.at_last_ts.clear();
                self.at_last_ts.push(h);
                true
            }
        }
    }
}

impl K8s {
    /// Stream a pod's log, one line (without the newline) per `sink` call; `sink` returns
    /// `Break` to stop early. When following, a dropped stream is reopened from the last
    /// timestamp seen, with backoff, until the pod has terminated or is gone.
    pub async fn stream_pod_logs(
        &self,
        ns: &str,
        pod: &str,
        opts: &LogOptions,
        mut sink: impl FnMut(&str) -> ControlFlow<()>,
    ) -> Result<()> {
        let api: Api<Pod> = Api::namespaced(self.stream_client.clone(), ns);
        let container = match &opts.container {
            Some(c) => Some(c.clone()),
            None => self.default_container(ns, pod).await?,
        };
        let action = Action::new("get", "pods/log", ns).named(pod);
        let mut seen = Seen::default();
        let mut backoff = Duration::from_millis(250);
        let mut first = true;
        let mut line = Vec::new();
        loop {
            let lp = LogParams {
                container: container.clone(),
                follow: opts.follow,
                timestamps: true,
                tail_lines: if first { opts.tail } else { None },
                since_time: seen.last_ts,
                previous: opts.previous,
                ..LogParams::default()
            };
            let opened = self.call(action, || api.log_stream(pod, &lp)).await;
            let mut reader = match opened {
                Ok(r) => Box::pin(r),
                Err(d) if first => return Err(d),
                Err(d) => {
                    // The pod may be restarting; try again while it lives.
                    tracing::debug!(error = %d.message, "log stream did not reopen");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                    if !self.pod_alive(ns, pod).await {
                        return Ok(());
                    }
                    continue;
                }
            };
            first = false;
            loop {
                match read_line_capped(&mut reader, &mut line, MAX_LOG_LINE_BYTES).await {
                    Ok(0) => break,
                    Err(e) => {
                        tracing::debug!(error = %e, "log stream dropped");
                        break;
                    }
                    Ok(_) => {}
                }
                backoff = Duration::from_millis(250);
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end_matches(['\n', '\r']);
                let (ts, body) = split_timestamp(text);
                if seen.admit(ts, body) && sink(body).is_break() {
                    return Ok(());
                }
            }
            if !opts.follow || !self.pod_alive(ns, pod).await {
                return Ok(());
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(10));
        }
    }

    /// The container `kubectl logs` would pick: the default-container annotation, else
    /// the first container (`None` if the pod has no containers listed).
    pub async fn default_container(&self, ns: &str, pod: &str) -> Result<Option<String>> {
        let Some(p) = self.get(&pods_resource(), ns, pod).await? else {
            return Err(Diag::api(
                "nrl::k8s::not_found",
                format!("pod {pod} not found in namespace `{ns}`"),
            )
            .help("list the pods with `nrl status`"));
        };
        let annotated = p
            .pointer("/metadata/annotations/kubectl.kubernetes.io~1default-container")
            .and_then(Json::as_str);
        let first = p.pointer("/spec/containers/0/name").and_then(Json::as_str);
        Ok(annotated.or(first).map(str::to_string))
    }

    /// Whether a pod still exists and has not terminated.
    async fn pod_alive(&self, ns: &str, pod: &str) -> bool {
        match self.get(&pods_resource(), ns, pod).await {
            Ok(Some(p)) => !PodStatus::of(&p).is_finished(),
            _ => false,
        }
    }
}

fn pods_resource() -> kube::discovery::ApiResource {
    kube::discovery::ApiResource::erase::<Pod>(&())
}

/// Split a `timestamps=true` log line into its RFC 3339 timestamp and text.
/// Longest piece of a log line handed to the sink at once (1 MiB): a container that
/// never writes a newline (a progress bar redrawn with `\r` for days) must not grow nrl
/// without bound; a longer line arrives in pieces of this size.
pub const MAX_LOG_LINE_BYTES: usize = 1 << 20;

/// Read up to and including the next `\n` into `line` (cleared first), but stop after
/// `max` bytes. Returns the bytes read (0 at the end of the stream). Bytes, not `String`:
/// a line that is not UTF-8 is shown with replacement characters instead of ending the
/// stream.
async fn read_line_capped<R: futures::AsyncBufRead + Unpin + ?Sized>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<usize> {
    line.clear();
    while line.len() < max {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            break;
        }
        let room = max - line.len();
        let (take, done) = match buf.iter().take(room).position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len().min(room), false),
        };
        line.extend_from_slice(&buf[..take]);
        reader.consume_unpin(take);
        if done {
            break;
        }
    }
    Ok(line.len())
}

fn split_timestamp(line: &str) -> (Option<jiff::Timestamp>, &str) {
    match line.split_once(' ') {
        Some((ts, rest)) => match ts.parse::<jiff::Timestamp>() {
            Ok(t) => (Some(t), rest),
            Err(_) => (None, line),
        },
        None => match line.parse::<jiff::Timestamp>() {
            Ok(t) => (Some(t), ""),
            Err(_) => (None, line),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_read_in_pieces_of_at_most_the_cap() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut input = b"short\n".to_vec();
        input.extend(std::iter::repeat_n(b'a', 25));
        input.extend(b"\nlast");
        let mut reader = futures::io::BufReader::with_capacity(7, &input[..]);
        let mut line = Vec::new();
        let mut pieces = Vec::new();
        rt.block_on(async {
            while read_line_capped(&mut reader, &mut line, 10).await.unwrap() > 0 {
                pieces.push(String::from_utf8(line.clone()).unwrap());
            }
        });
        let a = |n| "a".repeat(n);
        assert_eq!(
            pieces,
            [
                "short\n".to_string(),
                a(10),
                a(10),
                a(5) + "\n",
                "last".to_string()
            ]
        );
    }

    #[test]
    fn replayed_lines_are_dropped_once_each() {
        let t1: jiff::Timestamp = "2026-11-29T20:00:00Z".parse().unwrap();
        let t2: jiff::Timestamp = "2026-11-29T20:00:01Z".parse().unwrap();
        let mut seen = Seen::default();
        assert!(seen.admit(Some(t1), "a"));
        assert!(seen.admit(Some(t1), "b"));
        assert!(seen.admit(Some(t2), "c"));
        // A reconnect replays from t1's second: everything up to c is old.
        assert!(!seen.admit(Some(t1), "a"));
        assert!(!seen.admit(Some(t2), "c"));
        assert!(seen.admit(Some(t2), "d"));
        assert!(seen.admit(None, "untimed"));
    }

    #[test]
    fn timestamps_are_split_off() {
        let (ts, body) = split_timestamp("2026-11-29T20:00:00.123456789Z hello world");
        assert!(ts.is_some());
        assert_eq!(body, "hello world");
        let (ts, body) = split_timestamp("no timestamp here");
        assert!(ts.is_none());
        assert_eq!(body, "no timestamp here");
    }
}
