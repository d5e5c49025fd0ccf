//! Following a job to its end. Once the job runs, its driver log file is followed through
//! the dashboard's log API (low latency: see `driver_file`), with status polls with
//! backoff beside it to learn when the job ends (Ray has no watch API for jobs); a
//! dashboard without that API (older Ray) is followed through the job log websocket,
//! reconnecting when it drops.

use std::io::Write;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::client::RayClient;
use super::driver_file::driver_log_name;
use super::error::{self as rerr, human_duration};
use super::retry::PollBackoff;
use super::types::{JobDetails, JobStatus};
use crate::diag::{Diag, Result};

/// Code of the error returned when the log output (stdout) went away.
pub const CODE_OUTPUT_CLOSED: &str = "nrl::io::output_closed";

/// Pacing of a follow.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// Status polls while the log stream is down (backoff from `poll_initial` to `poll_max`).
    pub poll_initial: Duration,
    pub poll_max: Duration,
    /// How often the dashboard re-reads the driver log file for new bytes: a line reaches
    /// the output at most this much (plus the network) after the driver wrote it.
    pub stream_interval: Duration,
    /// The longest wait between status polls while the job is pending or its log streams
    /// (how late the end of a job, or its start, is noticed).
    pub status_max: Duration,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions {
            poll_initial: Duration::from_millis(500),
            poll_max: Duration::from_secs(10),
            stream_interval: Duration::from_millis(50),
            status_max: Duration::from_secs(2),
        }
    }
}

/// Writes only the part of the job's log not written yet.
///
/// Positions are byte offsets into the job's whole log. Every websocket connection starts
/// again from the beginning of the log, and `GET …/logs` returns all of it, so the number
/// of bytes already written is enough to skip what was printed before a reconnect.
#[derive(Debug, Default)]
pub struct LogCursor {
    written: u64,
}

impl LogCursor {
    pub fn new() -> LogCursor {
        LogCursor::default()
    }

    /// Bytes of the log written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Write `chunk`, which starts at byte `stream_pos` of the log; advances `stream_pos`.
    /// Returns whether anything new was written.
    pub fn write_chunk<W: Write + ?Sized>(
        &mut self,
        chunk: &[u8],
        stream_pos: &mut u64,
        out: &mut W,
    ) -> Result<bool> {
        let start = *stream_pos;
        let end = start + chunk.len() as u64;
        *stream_pos = end;
        if end <= self.written {
            return Ok(false);
        }
        let skip = usize::try_from(self.written.saturating_sub(start)).unwrap_or(usize::MAX);
        let fresh = chunk.get(skip..).unwrap_or_default();
        write_out(out, fresh)?;
        self.written = end;
        Ok(!fresh.is_empty())
    }

    /// Write whatever `full_log` (the whole log) has beyond what was written.
    pub fn write_full<W: Write + ?Sized>(&mut self, full_log: &[u8], out: &mut W) -> Result<bool> {
        let mut pos = 0;
        self.write_chunk(full_log, &mut pos, out)
    }
}

fn write_out<W: Write + ?Sized>(out: &mut W, bytes: &[u8]) -> Result<()> {
    out.write_all(bytes).and_then(|_| out.flush()).map_err(|e| {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Diag::new(CODE_OUTPUT_CLOSED, "the output was closed")
        } else {
            Diag::new("nrl::io", format!("cannot write the job log: {e}"))
        }
    })
}

/// Stream job `id`'s log into `out` until the job is terminal; returns its final details.
///
/// A pending job is polled (with backoff) until it runs. A running job whose driver node
/// is known is followed through its log file ([`follow_file`]); otherwise through the
/// websocket ([`follow_websocket`]). Nothing is printed twice across reconnects: every
/// source starts at the log's first byte and the cursor skips what was written. The two
/// sources are not mixed for one job (the websocket reads the file in text mode, which
/// turns `\r\n` into `\n`, so its offsets are not the file's).
pub async fn follow_job<W: Write + ?Sized>(
    client: &RayClient,
    id: &str,
    out: &mut W,
    options: &FollowOptions,
) -> Result<JobDetails> {
    let mut cursor = LogCursor::new();
    let mut pending = PollBackoff::new(Duration::from_millis(250), options.status_max);
    loop {
        let details = client.status(id).await?;
        if details.status.is_terminal() {
            catch_up(
                client,
                id,
                details.driver_node_id.as_deref(),
                &mut cursor,
                out,
            )
            .await?;
            return Ok(details);
        }
        if details.status == JobStatus::Pending {
            tokio::time::sleep(pending.next_delay()).await;
            continue;
        }
        if let Some(node) = details.driver_node_id.as_deref()
            && let Some(done) = follow_file(client, id, node, &mut cursor, out, options).await?
        {
            return Ok(done);
        }
        return follow_websocket(client, id, &mut cursor, out, options).await;
    }
}

/// Follow the driver's log file on `node` until the job ends (`Some(details)`), or `None`
/// when the dashboard has no log API. A stream that drops or fails is opened again after a
/// backoff; the status is polled beside it.
async fn follow_file<W: Write + ?Sized>(
    client: &RayClient,
    id: &str,
    node: &str,
    cursor: &mut LogCursor,
    out: &mut W,
    options: &FollowOptions,
) -> Result<Option<JobDetails>> {
    let file = driver_log_name(id);
    let mut reconnect = PollBackoff::new(options.poll_initial, options.poll_max);
    let mut polls = PollBackoff::new(Duration::from_millis(250), options.status_max);
    loop {
        let mut stream = match client
            .follow_file(node, &file, options.stream_interval)
            .await
        {
            Ok(Some(stream)) => Some(stream),
            Ok(None) if cursor.written() == 0 => return Ok(None),
            Ok(None) => None,
            Err(e) => {
                tracing::debug!(%e, "driver log stream unavailable");
                None
            }
        };
        let mut stream_pos = 0u64;
        let mut status_call = None;
        let wait = if stream.is_some() {
            polls.next_delay()
        } else {
            reconnect.next_delay()
        };
        let mut next_poll = tokio::time::Instant::now() + wait;
        // Reads the stream and polls the status side by side, until the job ends or the
        // stream goes away. A status call in flight is kept across loop turns, so a log
        // chunk never waits for it.
        let ended = loop {
            tokio::select! {
                chunk = async { stream.as_mut()?.next().await.transpose() }, if stream.is_some() => {
                    match chunk {
                        Some(Ok(bytes)) => {
                            if cursor.write_chunk(&bytes, &mut stream_pos, out)? {
                                reconnect.reset();
                            }
                        }
                        Some(Err(e)) => {
                            tracing::debug!(%e, "driver log stream dropped");
                            stream = None;
                        }
                        None => stream = None,
                    }
                    if stream.is_none() {
                        // Poll soon: a dropped stream often means the dashboard or the
                        // job went away.
                        next_poll = next_poll.min(
                            tokio::time::Instant::now() + reconnect.next_delay(),
                        );
                    }
                }
                details = async {
                    match status_call.as_mut() {
                        Some(call) => call.await,
                        None => std::future::pending().await,
                    }
                }, if status_call.is_some() => {
                    status_call = None;
                    let details: JobDetails = details?;
                    if details.status.is_terminal() {
                        break Some(details);
                    }
                    if stream.is_none() {
                        break None;
                    }
                    next_poll = tokio::time::Instant::now() + polls.next_delay();
                }
                _ = tokio::time::sleep_until(next_poll), if status_call.is_none() => {
                    status_call = Some(Box::pin(client.status(id)));
                }
            }
        };
        drop(stream);
        if let Some(details) = ended {
            catch_up(client, id, Some(node), cursor, out).await?;
            return Ok(Some(details));
        }
    }
}

/// After the job ended: write whatever of the log the cursor has not written. The file is
/// read through the log API (same bytes, same offsets as the stream); a dashboard without
/// it (or a file gone with its node) is read through the job API.
async fn catch_up<W: Write + ?Sized>(
    client: &RayClient,
    id: &str,
    node: Option<&str>,
    cursor: &mut LogCursor,
    out: &mut W,
) -> Result<()> {
    if let Some(node) = node {
        let mut pos = 0u64;
        let read = client
            .read_file(node, &driver_log_name(id), |chunk| {
                cursor.write_chunk(chunk, &mut pos, out).map(|_| ())
            })
            .await;
        match read {
            Ok(()) => return Ok(()),
            Err(e) if e.code == CODE_OUTPUT_CLOSED => return Err(e),
            Err(e) => tracing::debug!(%e, "driver log file unreadable; using the job API"),
        }
    }
    let full = client.logs(id).await?;
    cursor.write_full(full.as_bytes(), out)?;
    Ok(())
}

/// Follow through the job log websocket (dashboards without the log API). If it drops
/// before the job ends, the log is caught up through `GET …/logs`, the status is polled
/// with backoff, and the websocket is opened again.
async fn follow_websocket<W: Write + ?Sized>(
    client: &RayClient,
    id: &str,
    cursor: &mut LogCursor,
    out: &mut W,
    options: &FollowOptions,
) -> Result<JobDetails> {
    let mut backoff = PollBackoff::new(options.poll_initial, options.poll_max);
    loop {
        // Whether this connection delivered the log and then closed normally.
        let mut complete_stream = false;
        match client.tail(id).await {
            Ok(mut tail) => {
                let mut stream_pos = 0u64;
                let mut dropped = false;
                while let Some(item) = tail.next().await {
                    match item {
                        Ok(chunk) => {
                            if cursor.write_chunk(chunk.as_bytes(), &mut stream_pos, out)? {
                                backoff.reset();
                            }
                        }
                        Err(e) => {
                            tracing::debug!(%e, "log websocket dropped");
                            dropped = true;
                        }
                    }
                }
                complete_stream = !dropped && stream_pos > 0;
            }
            Err(e) if e.code == rerr::CODE_NOT_FOUND => return Err(e),
            Err(e) => tracing::debug!(%e, "log websocket unavailable"),
        }
        let details = client.status(id).await?;
        if details.status.is_terminal() {
            // A normal close after the end means the socket delivered everything. After a
            // drop, or a socket Ray closed at once, fetch the rest once.
            if !complete_stream {
                let full = client.logs(id).await?;
                cursor.write_full(full.as_bytes(), out)?;
            }
            return Ok(details);
        }
        // Still running (or not started) and the socket is gone: catch up by polling so
        // output keeps flowing even if websockets never work on this path.
        if cursor.write_full(client.logs(id).await?.as_bytes(), out)? {
            backoff.reset();
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

/// What `stop_job` saw.
#[derive(Debug, Clone)]
pub struct StopOutcome {
    /// Ray accepted a stop request for a job in flight (`false`: it had already ended).
    pub was_running: bool,
    pub details: JobDetails,
}

/// Ask Ray to stop job `id` and wait, polling with backoff, until it is terminal.
pub async fn stop_job(client: &RayClient, id: &str, timeout: Duration) -> Result<StopOutcome> {
    let was_running = client.stop(id).await?;
    let details = match wait_terminal(client, id, timeout).await {
        Ok(details) => details,
        Err(e) if e.code == CODE_WAIT_TIMEOUT => {
            let mut diag = Diag::api(
                CODE_WAIT_TIMEOUT,
                format!(
                    "job `{id}` did not stop within {} (Ray accepted the stop request)",
                    human_duration(timeout)
                ),
            )
            .help(format!(
                "it may still be shutting down: check `nrl job status {id} --address {}`",
                client.address()
            ));
            if let Ok(job) = client.status(id).await
                && job.status == JobStatus::Pending
            {
                diag = diag.note(
                    "the job is still PENDING: Ray delivers the stop when the job's supervisor \
                     starts, which waits for the resources the job asked for",
                );
            }
            return Err(diag);
        }
        Err(e) => return Err(e),
    };
    Ok(StopOutcome {
        was_running,
        details,
    })
}

/// Code of the error returned when a wait's deadline passes.
pub const CODE_WAIT_TIMEOUT: &str = "nrl::ray::wait_timeout";

/// Poll job `id` with backoff until it is terminal or `timeout` passes.
pub async fn wait_terminal(client: &RayClient, id: &str, timeout: Duration) -> Result<JobDetails> {
    let deadline = Instant::now() + timeout;
    let mut backoff = PollBackoff::new(Duration::from_millis(250), Duration::from_secs(5));
    loop {
        let details = client.status(id).await?;
        if details.status.is_terminal() {
            return Ok(details);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Diag::api(
                CODE_WAIT_TIMEOUT,
                format!(
                    "job `{id}` is still {} after {}",
                    details.status,
                    human_duration(timeout)
                ),
            ));
        }
        let wait = backoff.next_delay().min(deadline - now);
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_written_once_across_reconnects() {
        let mut cursor = LogCursor::new();
        let mut out = Vec::new();
        // First connection: two frames, then it drops.
        let mut pos = 0;
        assert!(
            cursor
                .write_chunk(b"line 0\nline 1\n", &mut pos, &mut out)
                .unwrap()
        );
        assert!(cursor.write_chunk(b"line 2\n", &mut pos, &mut out).unwrap());
        // Second connection replays from the start, in different frame boundaries.
        let mut pos = 0;
        assert!(!cursor.write_chunk(b"line 0\n", &mut pos, &mut out).unwrap());
        assert!(
            cursor
                .write_chunk(b"line 1\nline 2\nline 3\n", &mut pos, &mut out)
                .unwrap()
        );
        assert!(cursor.write_chunk(b"line 4\n", &mut pos, &mut out).unwrap());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "line 0\nline 1\nline 2\nline 3\nline 4\n"
        );
        assert_eq!(cursor.written(), 35);
    }

    #[test]
    fn full_log_catch_up_writes_only_the_tail() {
        let mut cursor = LogCursor::new();
        let mut out = Vec::new();
        let mut pos = 0;
        cursor.write_chunk(b"a\nb\n", &mut pos, &mut out).unwrap();
        assert!(cursor.write_full(b"a\nb\nc\n", &mut out).unwrap());
        assert!(!cursor.write_full(b"a\nb\nc\n", &mut out).unwrap());
        assert_eq!(String::from_utf8(out).unwrap(), "a\nb\nc\n");
    }

    #[test]
    fn closed_output_is_reported_distinctly() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut pos = 0;
        let err = LogCursor::new()
            .write_chunk(b"x", &mut pos, &mut Closed)
            .unwrap_err();
        assert_eq!(err.code, CODE_OUTPUT_CLOSED);
    }
}
