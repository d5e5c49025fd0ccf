//! A job's driver log read as the file it is (`job-driver-<id>.log` on the driver's node),
//! through the dashboard's log API: followed (`GET /api/v0/logs/stream`) or read whole
//! (`GET /api/v0/logs/file`). Both give the file's raw bytes, so byte offsets agree
//! between the two and a follower can resume from either.
//!
//! Why not only the job API's log websocket: Ray's tail loop (`job_manager.py`
//! `tail_job_logs`, `utils.py` `file_tail_iterator`) sleeps a whole second at the end of
//! the file, so a line reaches the client 0-2 s after it is written. The log API's stream
//! re-reads the file every `interval` seconds (`log_agent.py` `_stream_log_in_chunk`,
//! `keep_alive_interval_sec`), which the client chooses. The stream never ends on its own;
//! the follower decides when the job is over.

use std::time::Duration;

use bytes::Bytes;
use reqwest::{Method, StatusCode, Url};

use super::client::{RayClient, innermost_cause, read_body};
use super::error as rerr;
use crate::diag::Result;

/// The driver log's file name on its node (Ray's `JOB_LOGS_PATH_TEMPLATE`).
pub fn driver_log_name(submission_id: &str) -> String {
    format!("job-driver-{submission_id}.log")
}

/// A followed log file: its bytes from the start of the file, then as they are written.
pub struct FileStream {
    response: reqwest::Response,
    address: String,
}

impl FileStream {
    /// The next bytes of the file; `Ok(None)` when the dashboard closed the stream.
    pub async fn next(&mut self) -> Result<Option<Bytes>> {
        self.response.chunk().await.map_err(|e| {
            rerr::unreachable(&self.address, Duration::ZERO, &innermost_cause(&e), 1)
                .note("the driver log stream dropped")
        })
    }
}

impl RayClient {
    fn log_api_url(&self, what: &str, node_id: &str, filename: &str) -> Url {
        let mut url = self.url(&["api", "v0", "logs", what], false);
        url.query_pairs_mut()
            .append_pair("node_id", node_id)
            .append_pair("filename", filename)
            .append_pair("lines", "-1");
        url
    }

    /// Send a log API request and wait for its headers (the call timeout bounds that wait,
    /// not the body, which may last as long as the job). `Ok(None)` for a 404: this
    /// dashboard has no log API (a Ray older than the state API, or a stand-in that serves
    /// only the job API).
    async fn open_log_api(&self, url: Url, what: &str) -> Result<Option<reqwest::Response>> {
        let timeout = self.options().timeout;
        let send = self.http().request(Method::GET, url).send();
        let response = match tokio::time::timeout(timeout, send).await {
            Err(_) => {
                let cause = "no answer in time";
                return Err(rerr::unreachable(self.address(), timeout, cause, 1));
            }
            Ok(Err(e)) => {
                let cause = innermost_cause(&e);
                return Err(rerr::unreachable(self.address(), timeout, &cause, 1));
            }
            Ok(Ok(response)) => response,
        };
        let status = response.status();
        if status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !status.is_success() {
            let body = read_body(response, 1 << 20).await.unwrap_or_default();
            let detail = rerr::concise_error_body(&body)
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("").to_string());
            let code = status.as_u16();
            return Err(rerr::api_failure(self.address(), what, code, &detail));
        }
        Ok(Some(response))
    }

    /// Follow `filename` on node `node_id` from its first byte, the dashboard re-reading
    /// the file every `interval`. `Ok(None)`: this dashboard has no log API.
    pub async fn follow_file(
        &self,
        node_id: &str,
        filename: &str,
        interval: Duration,
    ) -> Result<Option<FileStream>> {
        let mut url = self.log_api_url("stream", node_id, filename);
        url.query_pairs_mut()
            .append_pair("interval", &format!("{:.3}", interval.as_secs_f64()));
        let response = self.open_log_api(url, "GET /api/v0/logs/stream").await?;
        Ok(response.map(|response| FileStream {
            response,
            address: self.address().to_string(),
        }))
    }

    /// Read `filename` on node `node_id` whole, handing each chunk to `sink` as it
    /// arrives (memory stays at a chunk). One attempt.
    pub async fn read_file(
        &self,
        node_id: &str,
        filename: &str,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let what = "GET /api/v0/logs/file";
        let url = self.log_api_url("file", node_id, filename);
        let Some(mut response) = self.open_log_api(url, what).await? else {
            let detail = "this dashboard has no log API";
            return Err(rerr::api_failure(self.address(), what, 404, detail));
        };
        let timeout = self.options().timeout;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| rerr::unreachable(self.address(), timeout, &innermost_cause(&e), 1))?
        {
            sink(&chunk)?;
        }
        Ok(())
    }
}
