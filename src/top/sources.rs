//! Where `nrl top`'s data comes from: one watch per resource kind in the namespace
//! (re-established by kube-runtime's watcher, nothing polled), and the selected run's log
//! (a RayJob's or RayCluster's driver log through the dashboard's shared port-forward, a
//! Gym run's pod log through the API server).

use std::io::Write;
use std::ops::ControlFlow;

use futures::StreamExt;
use tokio::sync::mpsc::UnboundedSender;

use super::state::Watched;
use crate::diag::{Diag, Result};
use crate::gym::names::{MANAGED_BY, MANAGED_BY_KEY, RUN_LABEL as GYM_RUN_LABEL};
use kube::discovery::ApiResource;

use crate::k8s::resources::{by_kind, core_v1};
use crate::k8s::watch::WatchItem;
use crate::k8s::{K8s, LogOptions};
use crate::launch::dashboard::dashboard_session;
use crate::launch::raycluster::owner::OWNER_LABEL;
use crate::ray::{FollowOptions, JobStatus, follow_job};

/// Something the session learns.
#[derive(Debug)]
pub enum Input {
    Watch(Watched, WatchItem),
    /// A watch ended for good (no permission to watch this kind).
    WatchFailed(Watched, Diag),
    /// More of a run's log.
    Log {
        run: String,
        text: String,
    },
    /// Where a run's log comes from, or why it stopped or is not there.
    LogSource {
        run: String,
        source: Option<String>,
        note: Option<String>,
    },
    /// An action's outcome, for the screen.
    Notice {
        title: String,
        body: String,
        error: bool,
    },
}

/// The resource and label selector of each watch; `user` narrows RayJobs to the user's
/// (`nrl-k8s/owner`) on the server. RayClusters are watched whole: KubeRay does not always
/// copy a RayJob's labels to the cluster it makes, and the view needs those clusters too.
/// Events cannot be selected by the objects they are about; they are filtered here.
pub fn selector(what: Watched, user: Option<&str>) -> Result<(ApiResource, String)> {
    Ok(match what {
        Watched::RayJobs => (
            by_kind("RayJob")?,
            user.map(|u| format!("{OWNER_LABEL}={u}"))
                .unwrap_or_default(),
        ),
        Watched::RayClusters => (by_kind("RayCluster")?, String::new()),
        Watched::RayPods => (by_kind("Pod")?, "ray.io/cluster".to_string()),
        Watched::GymJobs => (by_kind("Job")?, format!("{MANAGED_BY_KEY}={MANAGED_BY}")),
        Watched::GymPods => (by_kind("Pod")?, GYM_RUN_LABEL.to_string()),
        Watched::Events => (core_v1("Event", "events"), String::new()),
    })
}

/// Start the watch of `what`; its changes go to `tx` until the receiver is gone.
pub fn spawn_watch(
    k8s: &K8s,
    ns: &str,
    what: Watched,
    user: Option<&str>,
    tx: UnboundedSender<Input>,
) -> Result<tokio::task::JoinHandle<()>> {
    let (ar, selector) = selector(what, user)?;
    let mut stream = Box::pin(k8s.watch_with_health(&ar, ns, &selector));
    Ok(tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            let input = match item {
                Ok(item) => Input::Watch(what, item),
                Err(e) => Input::WatchFailed(what, e),
            };
            if tx.send(input).is_err() {
                return;
            }
        }
    }))
}

/// Bytes of a log as text chunks on the session's channel (a chunk may end inside a UTF-8
/// character; the rest waits for the next write).
struct LogWriter {
    run: String,
    tx: UnboundedSender<Input>,
    carry: Vec<u8>,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.carry.extend_from_slice(buf);
        let valid = match std::str::from_utf8(&self.carry) {
            Ok(_) => self.carry.len(),
            // An incomplete character at the end waits; invalid bytes are replaced.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.carry.len(),
        };
        let text = String::from_utf8_lossy(&self.carry[..valid]).into_owned();
        self.carry.drain(..valid);
        if !text.is_empty() {
            let input = Input::Log {
                run: self.run.clone(),
                text,
            };
            self.tx
                .send(input)
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a run's log is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogTarget {
    /// A Ray job on a cluster's dashboard (a RayJob's driver).
    RayJob { cluster: String, job_id: String },
    /// The newest job on a long-lived cluster's dashboard.
    ClusterJobs { cluster: String },
    /// A Gym Job's pod.
    Pod { pod: String },
}

fn source(tx: &UnboundedSender<Input>, run: &str, source: Option<String>, note: Option<String>) {
    let _ = tx.send(Input::LogSource {
        run: run.to_string(),
        source,
        note,
    });
}

/// Follow `run`'s log from `target` into `tx` until it ends or the task is aborted.
pub async fn follow_log(
    k8s: K8s,
    ns: String,
    run: String,
    target: LogTarget,
    tx: UnboundedSender<Input>,
) {
    match target {
        LogTarget::Pod { pod } => {
            source(&tx, &run, Some(format!("pod {pod}")), None);
            let opts = LogOptions {
                follow: true,
                tail: Some(super::state::LOG_KEPT as i64),
                ..LogOptions::default()
            };
            let sink = |line: &str| {
                let input = Input::Log {
                    run: run.clone(),
                    text: format!("{line}\n"),
                };
                match tx.send(input) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                }
            };
            let note = match k8s.stream_pod_logs(&ns, &pod, &opts, sink).await {
                Ok(()) => "the pod ended".to_string(),
                Err(e) => e.message.clone(),
            };
            source(&tx, &run, None, Some(note));
        }
        LogTarget::RayJob { cluster, job_id } => {
            follow_ray(&k8s, &ns, &run, &cluster, Some(job_id), &tx).await;
        }
        LogTarget::ClusterJobs { cluster } => {
            follow_ray(&k8s, &ns, &run, &cluster, None, &tx).await;
        }
    }
}

async fn follow_ray(
    k8s: &K8s,
    ns: &str,
    run: &str,
    cluster: &str,
    job_id: Option<String>,
    tx: &UnboundedSender<Input>,
) {
    let note = |text: String| source(tx, run, None, Some(text));
    note(format!("connecting to the dashboard of {cluster}…"));
    let dash = match dashboard_session(k8s, ns, cluster).await {
        Ok(d) => d,
        Err(e) => return note(e.message.clone()),
    };
    let id = match job_id {
        Some(id) => id,
        // A long-lived cluster: its running job, else its newest.
        None => match dash.client.list_jobs().await {
            Err(e) => return note(e.message.clone()),
            Ok(mut jobs) => {
                jobs.sort_by_key(|j| (j.status == JobStatus::Running, j.start_time));
                match jobs.last().and_then(|j| j.id()) {
                    Some(id) => id.to_string(),
                    None => return note(format!("no Ray jobs on {cluster} yet")),
                }
            }
        },
    };
    source(tx, run, Some(format!("driver log of {id}")), None);
    let mut out = LogWriter {
        run: run.to_string(),
        tx: tx.clone(),
        carry: Vec::new(),
    };
    match follow_job(&dash.client, &id, &mut out, &FollowOptions::default()).await {
        Ok(job) => note(format!("job {id} {}", job.status)),
        Err(e) => note(e.message.clone()),
    }
}
