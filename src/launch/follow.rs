//! Reaching a RayCluster's head dashboard from the laptop and following a Ray job there.
//!
//! The dashboard is reached through the API server's `pods/portforward` subresource
//! (no kubectl): one forward per cluster per process, re-resolving the head pod per
//! connection, dropped when the last handle goes. The log is streamed into a channel so
//! the caller can keep watching Kubernetes objects and the Ctrl-C signal while it flows.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::diag::{Diag, Result};
use crate::k8s::K8s;
use crate::k8s::portforward::{PodTarget, PortForward};
use crate::ray::error as rerr;
use crate::ray::{FollowOptions, JobDetails, RayClient, RayClientOptions, follow_job};

/// The Ray dashboard port on a head pod.
pub const DASHBOARD_PORT: u16 = 8265;

/// Label selector of a RayCluster's head pod.
pub fn head_selector(cluster: &str) -> String {
    format!("ray.io/cluster={cluster},ray.io/node-type=head")
}

/// A forward to a cluster's head dashboard and a Ray client that uses it. The forward
/// stops when this (and every other handle to it) is dropped.
#[derive(Debug, Clone)]
pub struct HeadDashboard {
    pub forward: Arc<PortForward>,
    pub client: RayClient,
}

/// Open (or reuse) the forward to `cluster`'s head dashboard in `ns`.
pub async fn head_dashboard(k8s: &K8s, ns: &str, cluster: &str) -> Result<HeadDashboard> {
    let forward = k8s
        .port_forward(
            ns,
            PodTarget::Selector(head_selector(cluster)),
            DASHBOARD_PORT,
        )
        .await
        .map_err(|d| {
            let msg = format!(
                "cannot reach the Ray dashboard of RayCluster `{cluster}`: {}",
                d.message
            );
            Diag::api("nrl::run::dashboard", msg).help(format!(
                "is the cluster up? `kubectl get pods -n {ns} -l {}`",
                head_selector(cluster)
            ))
        })?;
    let client = RayClient::new(&forward.url(), RayClientOptions::default())?;
    Ok(HeadDashboard { forward, client })
}

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
    fn head_selector_names_the_cluster_head() {
        assert_eq!(
            head_selector("rc-1"),
            "ray.io/cluster=rc-1,ray.io/node-type=head"
        );
    }

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
