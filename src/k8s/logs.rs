//! Pod log streams: follow, tail, container choice, and reconnection. When following, a
//! dropped stream is reopened from the last timestamp seen (lines at that instant are
//! de-duplicated), until the pod has terminated.

use std::ops::ControlFlow;
use std::time::Duration;

use futures::AsyncBufReadExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, LogParams};

use super::client::K8s;
use super::errors::{Action, to_diag};
use crate::diag::Result;

#[derive(Debug, Clone, Default)]
pub struct LogOptions {
    pub container: Option<String>,
    pub follow: bool,
    /// Only the last N lines (first connection only).
    pub tail: Option<i64>,
}

impl K8s {
    /// Stream a pod's log, one line (without the newline) per `sink` call. `sink` returns
    /// `Break` to stop early.
    pub async fn stream_pod_logs(
        &self,
        ns: &str,
        pod: &str,
        opts: &LogOptions,
        mut sink: impl FnMut(&str) -> ControlFlow<()>,
    ) -> Result<()> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let mut last_ts: Option<jiff::Timestamp> = None;
        let mut at_last_ts: Vec<String> = Vec::new();
        let mut backoff = Duration::from_millis(250);
        let mut first = true;
        let mut line = String::new();
        loop {
            let lp = LogParams {
                container: opts.container.clone(),
                follow: opts.follow,
                timestamps: true,
                tail_lines: if first { opts.tail } else { None },
                since_time: last_ts,
                ..LogParams::default()
            };
            first = false;
            let reader = api.log_stream(pod, &lp).await.map_err(|e| {
                to_diag(
                    e,
                    &Action {
                        verb: "get logs of",
                        resource: "pods",
                        name: Some(pod),
                        namespace: Some(ns),
                    },
                )
            });
            let mut reader = match reader {
                Ok(r) => Box::pin(r),
                Err(d) if last_ts.is_none() => return Err(d),
                Err(_) => {
                    // Reconnect after a pause; the pod may be restarting.
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                    if !self.pod_running(ns, pod).await {
                        return Ok(());
                    }
                    continue;
                }
            };
            loop {
                line.clear();
                match reader.read_line(&mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                backoff = Duration::from_millis(250);
                let text = line.trim_end_matches(['\n', '\r']);
                let (ts, body) = split_timestamp(text);
                if let Some(ts) = ts {
                    match last_ts {
                        Some(prev) if ts < prev => continue,
                        Some(prev) if ts == prev => {
                            if at_last_ts.iter().any(|l| l == body) {
                                continue;
                            }
                            at_last_ts.push(body.to_string());
                        }
                        _ => {
                            last_ts = Some(ts);
                            at_last_ts.clear();
                            at_last_ts.push(body.to_string());
                        }
                    }
                }
                if sink(body).is_break() {
                    return Ok(());
                }
            }
            if !opts.follow || !self.pod_running(ns, pod).await {
                return Ok(());
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(10));
        }
    }

    /// Whether a pod still exists and has not terminated.
    async fn pod_running(&self, ns: &str, pod: &str) -> bool {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        match api.get_opt(pod).await {
            Ok(Some(p)) => !matches!(
                p.status.and_then(|s| s.phase).as_deref(),
                Some("Succeeded" | "Failed")
            ),
            _ => false,
        }
    }
}

/// Split a `timestamps=true` log line into its RFC 3339 timestamp and text.
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
    fn timestamps_are_split_off() {
        let (ts, body) = split_timestamp("2026-11-29T20:00:00.123456789Z hello world");
        assert!(ts.is_some());
        assert_eq!(body, "hello world");
        let (ts, body) = split_timestamp("no timestamp here");
        assert!(ts.is_none());
        assert_eq!(body, "no timestamp here");
    }
}
