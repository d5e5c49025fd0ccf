//! `RayClient`: the Ray Job Submission REST API over reqwest.
//!
//! Every call has a deadline (`RayClientOptions::timeout`, shared by all attempts of
//! the call). Idempotent calls retry transient failures with backoff and jitter
//! (see [`super::retry`]); submissions, stops, deletes and uploads are sent once.

use std::time::{Duration, Instant};

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Method, RequestBuilder, StatusCode, Url};
use serde::de::DeserializeOwned;

use super::error::{self as rerr, CODE_ADDRESS};
use super::retry::{Failure, Idempotency, RetryPolicy};
use super::types::{
    DeleteResponse, JobDetails, LogsResponse, NodeInfo, NodeLogFile, RayVersion, StopResponse,
    SubmitRequest, SubmitResponse,
};
use crate::diag::{Diag, Result};

/// Largest JSON answer buffered from the dashboard (64 MiB). A job list of thousands of
/// jobs is a few MiB; a server streaming an endless body must not grow nrl without bound.
pub const MAX_RESPONSE_BYTES: u64 = 64 << 20;

/// Largest `GET /api/jobs/{id}/logs` answer (256 MiB): Ray returns the whole driver log
/// in one JSON string, so this is the log size past which `nrl job logs -f` (the log
/// websocket, streamed) is the way to read it.
pub const MAX_LOGS_RESPONSE_BYTES: u64 = 256 << 20;

/// How to talk to one dashboard.
#[derive(Debug, Clone)]
pub struct RayClientOptions {
    /// Sent as `Authorization: Bearer <token>` (Ray's `RAY_AUTH_MODE=token`).
    pub token: Option<String>,
    /// Deadline for one API call, all retries included.
    pub timeout: Duration,
    /// Deadline for a package upload (large bodies over slow port-forwards).
    pub upload_timeout: Duration,
    pub retry: RetryPolicy,
    /// Largest response body read for an API call ([`MAX_RESPONSE_BYTES`]); over it the
    /// call fails with `nrl::ray::response_too_large`.
    pub max_response_bytes: u64,
    /// The same for the whole-log fetch ([`MAX_LOGS_RESPONSE_BYTES`]).
    pub max_logs_bytes: u64,
}

impl Default for RayClientOptions {
    fn default() -> Self {
        RayClientOptions {
            token: None,
            timeout: Duration::from_secs(30),
            upload_timeout: Duration::from_secs(600),
            retry: RetryPolicy::default(),
            max_response_bytes: MAX_RESPONSE_BYTES,
            max_logs_bytes: MAX_LOGS_RESPONSE_BYTES,
        }
    }
}

/// A client for one Ray dashboard (cheap to clone).
#[derive(Debug, Clone)]
pub struct RayClient {
    http: reqwest::Client,
    base: Url,
    address: String,
    options: RayClientOptions,
}

/// One finished HTTP exchange (any status).
pub(crate) struct Reply {
    pub status: StatusCode,
    pub body: String,
}

impl Reply {
    /// The concise server message, or the status text for an empty body.
    pub fn detail(&self) -> String {
        rerr::concise_error_body(&self.body).unwrap_or_else(|| {
            self.status
                .canonical_reason()
                .unwrap_or("no message")
                .to_string()
        })
    }
}

impl RayClient {
    /// `base_url` is the dashboard URL (`http://127.0.0.1:8265`); a bare `host:port`
    /// means `http://host:port`.
    pub fn new(base_url: &str, options: RayClientOptions) -> Result<RayClient> {
        // reqwest is built without a default crypto provider; make sure one exists so a
        // library caller that forgot cannot hit reqwest's panic. Already installed: no-op.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = normalize_address(base_url)?;
        let address = base.as_str().trim_end_matches('/').to_string();
        let mut headers = HeaderMap::new();
        if let Some(token) = options.token.as_deref().filter(|t| !t.is_empty()) {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                Diag::new(
                    "nrl::ray::token",
                    "the Ray token contains characters not allowed in an HTTP header",
                )
                .help("pass the token exactly as Ray printed it (printable ASCII)")
            })?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let http = reqwest::Client::builder()
            .user_agent(concat!("nrl/", env!("CARGO_PKG_VERSION")))
            .default_headers(headers)
            .connect_timeout(options.timeout.min(Duration::from_secs(10)))
            .tcp_nodelay(true)
            .build()
            .map_err(|e| Diag::api(CODE_ADDRESS, format!("cannot build an HTTP client: {e}")))?;
        Ok(RayClient {
            http,
            base,
            address,
            options,
        })
    }

    /// The normalised dashboard address (no trailing slash), for messages.
    pub fn address(&self) -> &str {
        &self.address
    }

    pub fn options(&self) -> &RayClientOptions {
        &self.options
    }

    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// `base` + path segments (percent-encoded); `trailing_slash` for Ray's `/api/jobs/`.
    pub(crate) fn url(&self, segments: &[&str], trailing_slash: bool) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty();
            path.extend(segments);
            if trailing_slash {
                path.push("");
            }
        }
        url
    }

    /// `GET /api/version`.
    pub async fn version(&self) -> Result<RayVersion> {
        let what = "GET /api/version";
        let reply = self.get(&["api", "version"], false, what).await?;
        if !reply.status.is_success() {
            return Err(self.failure(what, &reply));
        }
        self.parse(what, &reply)
    }

    /// `GET /api/jobs/`: submission jobs first, then driver jobs; no pagination.
    pub async fn list_jobs(&self) -> Result<Vec<JobDetails>> {
        let what = "GET /api/jobs/";
        let reply = self.get(&["api", "jobs"], true, what).await?;
        if !reply.status.is_success() {
            return Err(self.failure(what, &reply));
        }
        self.parse(what, &reply)
    }

    /// `POST /api/jobs/`. Never retried: Ray may have started the job even when the
    /// answer is lost.
    pub async fn submit(&self, request: &SubmitRequest) -> Result<SubmitResponse> {
        let what = "POST /api/jobs/";
        let url = self.url(&["api", "jobs"], true);
        let reply = self
            .execute(what, Idempotency::Once, self.options.timeout, || {
                self.http.request(Method::POST, url.clone()).json(request)
            })
            .await?;
        if !reply.status.is_success() {
            return Err(rerr::submit_refused(
                &self.address,
                reply.status.as_u16(),
                &reply.detail(),
            ));
        }
        self.parse(what, &reply)
    }

    /// `GET /api/jobs/{id}`: the job's details, including its status.
    pub async fn status(&self, id: &str) -> Result<JobDetails> {
        let what = "GET /api/jobs/{id}";
        let reply = self.get(&["api", "jobs", id], false, what).await?;
        self.job_reply(id, what, reply)
    }

    /// `GET /api/jobs/{id}/logs`: the whole driver log so far.
    pub async fn logs(&self, id: &str) -> Result<String> {
        let what = "GET /api/jobs/{id}/logs";
        let url = self.url(&["api", "jobs", id, "logs"], false);
        let reply = self
            .execute_capped(
                what,
                Idempotency::Idempotent,
                self.options.timeout,
                self.options.max_logs_bytes,
                || self.http.request(Method::GET, url.clone()),
            )
            .await?;
        let logs: LogsResponse = self.job_reply(id, what, reply)?;
        Ok(logs.logs)
    }

    /// `GET /api/jobs/{id}/logs` written to `out` as it arrives: the `logs` string is
    /// decoded chunk by chunk, so memory stays at a chunk whatever the log's size.
    /// Retries happen only before the first byte is written. Returns the bytes written.
    pub async fn logs_to(
        &self,
        id: &str,
        out: &mut (dyn tokio::io::AsyncWrite + Unpin + Send),
    ) -> Result<u64> {
        use tokio::io::AsyncWriteExt;
        let what = "GET /api/jobs/{id}/logs";
        let url = self.url(&["api", "jobs", id, "logs"], false);
        let answer = self
            .execute_answer(
                what,
                Idempotency::Idempotent,
                self.options.timeout,
                self.options.max_response_bytes,
                true,
                || self.http.request(Method::GET, url.clone()),
            )
            .await?;
        let mut response = match answer {
            Answer::Open(response) => response,
            Answer::Read(reply) if reply.status == StatusCode::NOT_FOUND => {
                return Err(rerr::job_not_found(&self.address, id));
            }
            Answer::Read(reply) => return Err(self.failure(what, &reply)),
        };
        let mut decoder = super::logs_stream::LogsDecoder::default();
        let mut text = Vec::new();
        let mut written = 0u64;
        let mut received = 0u64;
        let limit = self.options.max_logs_bytes;
        loop {
            let chunk = response.chunk().await.map_err(|e| {
                let (_, cause) = transport_failure(e);
                rerr::unreachable(&self.address, self.options.timeout, &cause, 1)
            })?;
            let Some(chunk) = chunk else { break };
            received += chunk.len() as u64;
            if received > limit {
                return Err(rerr::response_too_large(&self.address, what, limit, None));
            }
            text.clear();
            decoder
                .feed(&chunk, &mut text)
                .map_err(|e| rerr::bad_response(&self.address, what, e))?;
            match out.write_all(&text).await {
                // A reader that went away (`| head`) has what it wanted.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(written),
                Err(e) => return Err(Diag::from(e)),
                Ok(()) => written += text.len() as u64,
            }
        }
        decoder
            .finish()
            .map_err(|e| rerr::bad_response(&self.address, what, e))?;
        match out.flush().await {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Diag::from(e)),
            _ => Ok(written),
        }
    }

    /// `POST /api/jobs/{id}/stop`: `true` if a running job was asked to stop, `false`
    /// if it had already finished.
    pub async fn stop(&self, id: &str) -> Result<bool> {
        let what = "POST /api/jobs/{id}/stop";
        let url = self.url(&["api", "jobs", id, "stop"], false);
        let reply = self
            .execute(what, Idempotency::Once, self.options.timeout, || {
                self.http.request(Method::POST, url.clone())
            })
            .await?;
        let stop: StopResponse = self.job_reply(id, what, reply)?;
        Ok(stop.stopped)
    }

    /// `DELETE /api/jobs/{id}`: removes a finished job's record (Ray refuses running
    /// jobs with a 500).
    pub async fn delete(&self, id: &str) -> Result<bool> {
        let what = "DELETE /api/jobs/{id}";
        let url = self.url(&["api", "jobs", id], false);
        let reply = self
            .execute(what, Idempotency::Once, self.options.timeout, || {
                self.http.request(Method::DELETE, url.clone())
            })
            .await?;
        let deleted: DeleteResponse = self.job_reply(id, what, reply)?;
        Ok(deleted.deleted)
    }

    /// `GET /api/packages/{protocol}/{name}`: whether the cluster already holds the
    /// package. The GET also pins the URI on the cluster for a while, so call it right
    /// before submitting.
    pub async fn package_exists(&self, uri: &str) -> Result<bool> {
        let what = "GET /api/packages/…";
        let (protocol, name) = split_package_uri(uri)?;
        let reply = self
            .get(&["api", "packages", protocol, name], false, what)
            .await?;
        match reply.status {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(self.failure(what, &reply)),
        }
    }

    /// `PUT /api/packages/{protocol}/{name}` with the archive as the body. Sent once,
    /// with [`RayClientOptions::upload_timeout`].
    pub async fn upload_package(
        &self,
        uri: &str,
        body: reqwest::Body,
        content_length: Option<u64>,
    ) -> Result<()> {
        let what = "PUT /api/packages/…";
        let (protocol, name) = split_package_uri(uri)?;
        let url = self.url(&["api", "packages", protocol, name], false);
        let mut body = Some(body);
        let reply = self
            .execute(what, Idempotency::Once, self.options.upload_timeout, || {
                let mut req = self
                    .http
                    .request(Method::PUT, url.clone())
                    .header("content-type", "application/octet-stream");
                if let Some(len) = content_length {
                    req = req.header("content-length", len);
                }
                req.body(
                    body.take()
                        .unwrap_or_else(|| reqwest::Body::from(Vec::new())),
                )
            })
            .await?;
        if !reply.status.is_success() {
            return Err(self.failure(what, &reply));
        }
        Ok(())
    }

    /// `GET /api/v0/nodes` (Ray's state API; `ray list nodes`): every node the GCS
    /// knows, alive or dead.
    pub async fn list_nodes(&self) -> Result<Vec<NodeInfo>> {
        let what = "GET /api/v0/nodes";
        let mut url = self.url(&["api", "v0", "nodes"], false);
        // The state API truncates at 100 rows unless asked for more (its `limit`).
        url.query_pairs_mut().append_pair("limit", "10000");
        let reply = self
            .execute(what, Idempotency::Idempotent, self.options.timeout, || {
                self.http.request(Method::GET, url.clone())
            })
            .await?;
        let body: serde_json::Value = self.state_reply(what, &reply)?;
        // `{result: true, msg, data: {result: {total, result: [NodeState…], …}}}`
        let rows = body
            .pointer("/data/result/result")
            .cloned()
            .unwrap_or_default();
        serde_json::from_value(rows).map_err(|e| rerr::bad_response(&self.address, what, e))
    }

    /// `GET /api/v0/logs?node_id=…`: the files under the node's
    /// `/tmp/ray/session_latest/logs`, relative to it, in Ray's order within its
    /// categories (`raylet`, `gcs_server`, `worker_out`, …).
    pub async fn list_node_logs(&self, node_id: &str) -> Result<Vec<String>> {
        let what = "GET /api/v0/logs";
        let mut url = self.url(&["api", "v0", "logs"], false);
        url.query_pairs_mut().append_pair("node_id", node_id);
        let reply = self
            .execute(what, Idempotency::Idempotent, self.options.timeout, || {
                self.http.request(Method::GET, url.clone())
            })
            .await?;
        let body: serde_json::Value = self.state_reply(what, &reply)?;
        // `{result: true, msg, data: {result: {category: [file…]}}}`
        let mut files = Vec::new();
        if let Some(categories) = body.pointer("/data/result").and_then(|v| v.as_object()) {
            for list in categories.values() {
                for f in list.as_array().into_iter().flatten() {
                    if let Some(f) = f.as_str()
                        && !files.iter().any(|x: &String| x == f)
                    {
                        files.push(f.to_string());
                    }
                }
            }
        }
        Ok(files)
    }

    /// `GET /api/v0/logs/file?node_id=…&filename=…&lines=N`: the last `lines` lines of a
    /// node's log file (Ray's only tail unit), of which at most the last `keep_bytes` are
    /// kept while reading, so memory stays bounded whatever the file's size. One attempt
    /// within the call deadline (a partly read stream cannot be resumed).
    pub async fn node_log_file(
        &self,
        node_id: &str,
        filename: &str,
        lines: u64,
        keep_bytes: usize,
    ) -> Result<NodeLogFile> {
        let what = "GET /api/v0/logs/file";
        let mut url = self.url(&["api", "v0", "logs", "file"], false);
        url.query_pairs_mut()
            .append_pair("node_id", node_id)
            .append_pair("filename", filename)
            .append_pair("lines", &lines.to_string());
        let timeout = self.options.timeout;
        let cause = |e: reqwest::Error| transport_failure(e).1;
        let response = self
            .http
            .request(Method::GET, url)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| rerr::unreachable(&self.address, timeout, &cause(e), 1))?;
        let status = response.status();
        if !status.is_success() {
            let body = read_body(response, 1 << 20).await.unwrap_or_default();
            return Err(self.failure(what, &Reply { status, body }));
        }
        let mut response = response;
        let mut kept: Vec<u8> = Vec::new();
        let mut received = 0u64;
        let mut newlines = 0u64;
        let mut dropped = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| rerr::unreachable(&self.address, timeout, &cause(e), 1))?
        {
            received += chunk.len() as u64;
            newlines += chunk.iter().filter(|b| **b == b'\n').count() as u64;
            kept.extend_from_slice(&chunk);
            // Drop the front in large steps, not per chunk.
            if kept.len() > keep_bytes.saturating_mul(2).max(1 << 16) {
                let cut = kept.len() - keep_bytes;
                kept.drain(..cut);
                dropped = true;
            }
        }
        if kept.len() > keep_bytes {
            let cut = kept.len() - keep_bytes;
            kept.drain(..cut);
            dropped = true;
        }
        if dropped {
            // Start at a whole line.
            if let Some(nl) = kept.iter().position(|b| *b == b'\n') {
                kept.drain(..=nl);
            }
        }
        Ok(NodeLogFile {
            bytes: kept,
            received,
            truncated: dropped || newlines >= lines,
        })
    }

    /// A state API reply: non-success statuses and `result: false` are failures with
    /// Ray's `msg`.
    fn state_reply(&self, what: &str, reply: &Reply) -> Result<serde_json::Value> {
        if !reply.status.is_success() {
            return Err(self.failure(what, reply));
        }
        let body: serde_json::Value = self.parse(what, reply)?;
        if body.get("result") == Some(&serde_json::Value::Bool(false)) {
            let msg = body.get("msg").and_then(|m| m.as_str()).unwrap_or("failed");
            return Err(rerr::api_failure(
                &self.address,
                what,
                reply.status.as_u16(),
                msg,
            ));
        }
        Ok(body)
    }

    async fn get(&self, segments: &[&str], trailing_slash: bool, what: &str) -> Result<Reply> {
        let url = self.url(segments, trailing_slash);
        self.execute(what, Idempotency::Idempotent, self.options.timeout, || {
            self.http.request(Method::GET, url.clone())
        })
        .await
    }

    /// Map a job-scoped reply: 404 is "no such job", other failures are API errors.
    fn job_reply<T: DeserializeOwned>(&self, id: &str, what: &str, reply: Reply) -> Result<T> {
        if reply.status == StatusCode::NOT_FOUND {
            return Err(rerr::job_not_found(&self.address, id));
        }
        if !reply.status.is_success() {
            return Err(self.failure(what, &reply));
        }
        self.parse(what, &reply)
    }

    fn failure(&self, what: &str, reply: &Reply) -> Diag {
        rerr::api_failure(&self.address, what, reply.status.as_u16(), &reply.detail())
    }

    fn parse<T: DeserializeOwned>(&self, what: &str, reply: &Reply) -> Result<T> {
        serde_json::from_str(&reply.body).map_err(|e| rerr::bad_response(&self.address, what, e))
    }

    /// Send a request until it succeeds, fails for good, or the deadline passes.
    /// `build` makes a fresh request per attempt. Non-success statuses that are not
    /// retried are returned as a `Reply` for the caller to interpret.
    pub(crate) async fn execute(
        &self,
        what: &str,
        idempotency: Idempotency,
        timeout: Duration,
        build: impl FnMut() -> RequestBuilder,
    ) -> Result<Reply> {
        let limit = self.options.max_response_bytes;
        self.execute_capped(what, idempotency, timeout, limit, build)
            .await
    }

    /// [`RayClient::execute`] reading at most `limit` bytes of body. An answer over the
    /// limit is not retried: the same server would send it again.
    async fn execute_capped(
        &self,
        what: &str,
        idempotency: Idempotency,
        timeout: Duration,
        limit: u64,
        build: impl FnMut() -> RequestBuilder,
    ) -> Result<Reply> {
        match self
            .execute_answer(what, idempotency, timeout, limit, false, build)
            .await?
        {
            Answer::Read(reply) => Ok(reply),
            Answer::Open(response) => Ok(Reply {
                status: response.status(),
                body: String::new(),
            }),
        }
    }

    /// The retry loop of every call. With `open`, a successful answer comes back unread
    /// (its body to be streamed); everything else is read, at most `limit` bytes.
    async fn execute_answer(
        &self,
        what: &str,
        idempotency: Idempotency,
        timeout: Duration,
        limit: u64,
        open: bool,
        mut build: impl FnMut() -> RequestBuilder,
    ) -> Result<Answer> {
        let deadline = Instant::now() + timeout;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let remaining = deadline.saturating_duration_since(Instant::now());
            let outcome = send_once(build().timeout(remaining), limit, open).await;
            let (failure, retry_after, last) = match outcome {
                Ok((Answer::Open(response), _)) => return Ok(Answer::Open(response)),
                Ok((Answer::Read(reply), _)) if reply.status.is_success() => {
                    return Ok(Answer::Read(reply));
                }
                Ok((Answer::Read(reply), retry_after)) => (
                    Failure::Status(reply.status.as_u16()),
                    retry_after,
                    Ok(reply),
                ),
                Err(Attempt::TooLarge(declared)) => {
                    return Err(rerr::response_too_large(
                        &self.address,
                        what,
                        limit,
                        declared,
                    ));
                }
                Err(Attempt::Failed(failure, cause)) => (failure, None, Err(cause)),
            };
            let mut wait = self.options.retry.delay(attempt);
            if let Some(server_wait) = retry_after {
                wait = wait.max(server_wait);
            }
            let retry = self
                .options
                .retry
                .should_retry(idempotency, failure, attempt)
                && Instant::now() + wait < deadline;
            if !retry {
                return match last {
                    Ok(reply) => Ok(Answer::Read(reply)),
                    Err(cause) => {
                        tracing::debug!(what, attempt, %cause, "Ray call failed");
                        Err(rerr::unreachable(&self.address, timeout, &cause, attempt))
                    }
                };
            }
            tracing::debug!(what, attempt, ?failure, ?wait, "retrying Ray call");
            tokio::time::sleep(wait).await;
        }
    }
}

/// Why one attempt gave no reply.
enum Attempt {
    /// Transport failure with a human-readable cause.
    Failed(Failure, String),
    /// The body was over the limit (its declared length, if any).
    TooLarge(Option<u64>),
}

/// One attempt: the reply (any status) plus a `Retry-After` hint.
/// One attempt's answer: read whole, or (a success asked to be streamed) still open.
enum Answer {
    Read(Reply),
    Open(reqwest::Response),
}

async fn send_once(
    request: RequestBuilder,
    limit: u64,
    open: bool,
) -> std::result::Result<(Answer, Option<Duration>), Attempt> {
    let failed = |e| {
        let (failure, cause) = transport_failure(e);
        Attempt::Failed(failure, cause)
    };
    let response = request.send().await.map_err(failed)?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    if open && status.is_success() {
        return Ok((Answer::Open(response), retry_after));
    }
    let body = match read_body(response, limit).await {
        Ok(body) => body,
        Err(BodyError::Read(e)) => return Err(failed(e)),
        Err(BodyError::TooLarge(declared)) => return Err(Attempt::TooLarge(declared)),
    };
    Ok((Answer::Read(Reply { status, body }), retry_after))
}

/// Why a body could not be read whole.
pub(crate) enum BodyError {
    Read(reqwest::Error),
    /// Over the limit: the declared Content-Length, or `None` when counting found it.
    TooLarge(Option<u64>),
}

/// The body as text, read chunk by chunk and never more than `limit` bytes: a declared
/// length over it fails before reading, and a chunked body that never ends fails as soon
/// as it passes the limit. Invalid UTF-8 is replaced, as `Response::text` would.
pub(crate) async fn read_body(
    mut response: reqwest::Response,
    limit: u64,
) -> std::result::Result<String, BodyError> {
    if let Some(declared) = response.content_length().filter(|n| *n > limit) {
        return Err(BodyError::TooLarge(Some(declared)));
    }
    let hint = response.content_length().unwrap_or(0).min(1 << 20);
    let mut body = Vec::with_capacity(usize::try_from(hint).unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(BodyError::Read)? {
        if (body.len() + chunk.len()) as u64 > limit {
            return Err(BodyError::TooLarge(None));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(match String::from_utf8(body) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

fn transport_failure(e: reqwest::Error) -> (Failure, String) {
    let failure = if e.is_timeout() {
        Failure::Timeout
    } else if e.is_decode() || e.is_builder() || e.is_redirect() {
        Failure::Other
    } else {
        Failure::Connect
    };
    let cause = if e.is_timeout() {
        "no answer in time".to_string()
    } else {
        innermost_cause(&e)
    };
    (failure, cause)
}

/// The deepest error in the chain says what happened ("Connection refused (os error
/// 111)"); reqwest's own top line only says "error sending request".
pub(crate) fn innermost_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut current: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = current.source() {
        current = next;
    }
    let text = current.to_string();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => "unknown error".to_string(),
    }
}

/// Parse a dashboard address: `http(s)://host[:port][/prefix]`, or `host:port`.
pub fn normalize_address(address: &str) -> Result<Url> {
    let trimmed = address.trim();
    if trimmed.is_empty() {
        return Err(
            Diag::new(CODE_ADDRESS, "the Ray dashboard address is empty")
                .help("pass --address http://HOST:8265 or set RAY_ADDRESS"),
        );
    }
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_string()
    } else {
        format!("http://{trimmed}")
    };
    let url = Url::parse(&with_scheme).map_err(|e| {
        Diag::new(
            CODE_ADDRESS,
            format!("`{trimmed}` is not a usable Ray dashboard address: {e}"),
        )
        .help("use the dashboard URL, e.g. http://127.0.0.1:8265")
    })?;
    match url.scheme() {
        "http" | "https" => {}
        "ray" => {
            return Err(Diag::new(
                CODE_ADDRESS,
                format!(
                    "`{trimmed}` is a Ray Client address; the Job API is served by the dashboard"
                ),
            )
            .help("use the dashboard URL instead, e.g. http://HOST:8265"));
        }
        other => {
            return Err(Diag::new(
                CODE_ADDRESS,
                format!("unsupported scheme `{other}` in Ray address `{trimmed}`"),
            )
            .help("use http:// or https://, e.g. http://127.0.0.1:8265"));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Diag::new(CODE_ADDRESS, format!("`{trimmed}` has no host"))
            .help("use the dashboard URL, e.g. http://127.0.0.1:8265"));
    }
    let mut url = url;
    url.set_query(None);
    url.set_fragment(None);
    let path = url.path().trim_end_matches('/').to_string();
    url.set_path(&path);
    Ok(url)
}

/// `gcs://_ray_pkg_x.zip` → (`gcs`, `_ray_pkg_x.zip`).
pub fn split_package_uri(uri: &str) -> Result<(&str, &str)> {
    match uri.split_once("://") {
        Some((protocol, name))
            if !protocol.is_empty() && !name.is_empty() && !name.contains('/') =>
        {
            Ok((protocol, name))
        }
        _ => Err(
            Diag::new("nrl::ray::package", format!("`{uri}` is not a package URI"))
                .help("package URIs look like gcs://_ray_pkg_<16 hex>.zip"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_normalised() {
        let url = |s: &str| normalize_address(s).map(|u| u.to_string());
        assert_eq!(url("127.0.0.1:8265").unwrap(), "http://127.0.0.1:8265/");
        assert_eq!(url("http://h:8265/").unwrap(), "http://h:8265/");
        assert_eq!(url(" https://h/ray/ ").unwrap(), "https://h/ray");
        for bad in ["", "ray://h:10001", "ftp://h", "http://"] {
            let err = normalize_address(bad).unwrap_err();
            assert_eq!(err.code, CODE_ADDRESS, "{bad}");
            assert!(err.help.is_some(), "{bad}");
        }
    }

    #[test]
    fn urls_encode_ids_and_keep_prefixes() {
        let client = RayClient::new("http://h:1/prefix/", RayClientOptions::default()).unwrap();
        assert_eq!(client.address(), "http://h:1/prefix");
        assert_eq!(
            client.url(&["api", "jobs"], true).as_str(),
            "http://h:1/prefix/api/jobs/"
        );
        assert_eq!(
            client
                .url(&["api", "jobs", "a/b c", "logs"], false)
                .as_str(),
            "http://h:1/prefix/api/jobs/a%2Fb%20c/logs"
        );
        let root = RayClient::new("h:1", RayClientOptions::default()).unwrap();
        assert_eq!(
            root.url(&["api", "version"], false).as_str(),
            "http://h:1/api/version"
        );
    }

    #[test]
    fn package_uris_split() {
        assert_eq!(
            split_package_uri("gcs://_ray_pkg_0123.zip").unwrap(),
            ("gcs", "_ray_pkg_0123.zip")
        );
        assert!(split_package_uri("_ray_pkg.zip").is_err());
        assert!(split_package_uri("gcs://a/b.zip").is_err());
    }

    #[test]
    fn bad_token_is_an_input_error() {
        let opts = RayClientOptions {
            token: Some("bad\ntoken".into()),
            ..RayClientOptions::default()
        };
        let err = RayClient::new("http://h:1", opts).unwrap_err();
        assert_eq!(err.code, "nrl::ray::token");
    }
}
