//! Following a Ray job on a cluster's dashboard (reached with
//! `launch::dashboard::dashboard_session`: the API server's port-forward, no kubectl). The
//! log is streamed into a channel so the caller can keep watching Kubernetes objects and
//! the Ctrl-C signal while it flows; spawned followers are aborted when their guard goes.

use std::io::Write;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::diag::Result;
use crate::ray::error as rerr;
use crate::ray::{FollowOptions, JobDetails, RayClient, follow_job};

/// `io::Write` into a channel of text chunks.
pub struct ChannelWriter(pub mpsc::UnboundedSender<String>);

impl Write for ChannelWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The receiver gone means nobody is reading: the follower is being shut down.
        self.0
            .send(String::from_utf8_lossy(buf).into_owned())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Follow job `id` on `client` until it is terminal, sending its log to `out`. A job Ray
/// does not know yet (submitted a moment later, as KubeRay does in HTTPMode) is retried
/// for up to `appear_within`.
pub async fn follow_into(
    client: &RayClient,
    id: &str,
    out: mpsc::UnboundedSender<String>,
    appear_within: Duration,
) -> Result<JobDetails> {
    let deadline = tokio::time::Instant::now() + appear_within;
    let mut pause = Duration::from_millis(200);
    let mut writer = ChannelWriter(out);
    loop {
        match follow_job(client, id, &mut writer, &FollowOptions::default()).await {
            Err(e) if e.code == rerr::CODE_NOT_FOUND && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(3));
            }
            other => return other,
        }
    }
}

/// A spawned task that is aborted when this guard is dropped, so no exit path (error,
/// Ctrl-C, early return) leaves a follower or its port-forward running.
pub struct TaskGuard<T>(pub tokio::task::JoinHandle<T>);

impl<T> Drop for TaskGuard<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> TaskGuard<T> {
    pub fn spawn<F>(future: F) -> TaskGuard<T>
    where
        F: std::future::Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        TaskGuard(tokio::spawn(future))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_writer_sends_chunks_and_reports_a_closed_reader() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut w = ChannelWriter(tx);
        w.write_all(b"abc").unwrap();
        assert_eq!(rx.try_recv().unwrap(), "abc");
        drop(rx);
        assert_eq!(
            w.write(b"x").unwrap_err().kind(),
            std::io::ErrorKind::BrokenPipe
        );
    }
}
