//! Following a job to its end: the log websocket first, reconnecting when it drops, and
//! status polls with backoff in between (Ray has no watch API for jobs).

use std::io::Write;
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::client::RayClient;
use super::error::{self as rerr, human_duration};
use super::retry::PollBackoff;
use super::types::{JobDetails, JobStatus};
use crate::diag::{Diag, Result};

/// Code of the error returned when the log output (stdout) went away.
pub const CODE_OUTPUT_CLOSED: &str = "nrl::io::output_closed";

/// Pacing of status polls while the log stream is down or the job has not started.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    pub poll_initial: Duration,
    pub poll_max: Duration,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions {
            poll_initial: Duration::from_millis(500),
            poll_max: Duration::from_secs(10),
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
        chunk: &str,
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
        let fresh = chunk.as_bytes().get(skip..).unwrap_or_default();
        write_out(out, fresh)?;
        self.written = end;
        Ok(!fresh.is_empty())
    }

    /// Write whatever `full_log` (the whole log) has beyond what was written.
    pub fn write_full<W: Write + ?Sized>(&mut self, full_log: &str, out: &mut W) -> Result<bool> {
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
/// The websocket is preferred. If it drops before the job ends (port-forward restart,
/// dashboard restart), the log is caught up through `GET …/logs`, the status is polled
/// with backoff, and the websocket is opened again; nothing is printed twice.
pub async fn follow_job<W: Write + ?Sized>(
    client: &RayClient,
    id: &str,
    out: &mut W,
    options: &FollowOptions,
) -> Result<JobDetails> {
    let mut cursor = LogCursor::new();
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
                            if cursor.write_chunk(&chunk, &mut stream_pos, out)? {
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
                cursor.write_full(&full, out)?;
            }
            return Ok(details);
        }
        // Still running (or not started) and the socket is gone: catch up by polling so
        // output keeps flowing even if websockets never work on this path.
        if cursor.write_full(&client.logs(id).await?, out)? {
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
                .write_chunk("line 0\nline 1\n", &mut pos, &mut out)
                .unwrap()
        );
        assert!(cursor.write_chunk("line 2\n", &mut pos, &mut out).unwrap());
        // Second connection replays from the start, in different frame boundaries.
        let mut pos = 0;
        assert!(!cursor.write_chunk("line 0\n", &mut pos, &mut out).unwrap());
        assert!(
            cursor
                .write_chunk("line 1\nline 2\nline 3\n", &mut pos, &mut out)
                .unwrap()
        );
        assert!(cursor.write_chunk("line 4\n", &mut pos, &mut out).unwrap());
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
        cursor.write_chunk("a\nb\n", &mut pos, &mut out).unwrap();
        assert!(cursor.write_full("a\nb\nc\n", &mut out).unwrap());
        assert!(!cursor.write_full("a\nb\nc\n", &mut out).unwrap());
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
            .write_chunk("x", &mut pos, &mut Closed)
            .unwrap_err();
        assert_eq!(err.code, CODE_OUTPUT_CLOSED);
    }
}
