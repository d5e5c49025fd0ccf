//! Waiting for an ephemeral run: one watch on the RayJob (status changes are printed,
//! the DRA objects are handed to the cluster once it exists), the driver log followed
//! through a port-forward to the head's dashboard, and Ctrl-C, all at once.

use std::time::Duration;

use serde_json::Value as Json;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use super::apply::hand_dra_to_cluster;
use super::plan::RayJobPlan;
use crate::diag::{Diag, Exit, Result};
use crate::k8s::resources::by_kind;
use crate::k8s::wait::conditions::{Condition, rayjob_finished};
use crate::k8s::{K8s, Verdict};
use crate::launch::dashboard::dashboard_session;
use crate::launch::follow::{TaskGuard, follow_into};
use crate::launch::logscan::LogScan;
use crate::launch::output::Output;
use crate::ray::JobDetails;
use crate::render::rayjob::SubmissionMode;

/// After the RayJob is terminal, how long the log stream may take to deliver the rest.
const LOG_GRACE: Duration = Duration::from_secs(20);
/// After Ray reports the job terminal, how long KubeRay may take to say so too.
const STATUS_GRACE: Duration = Duration::from_secs(30);
/// How long a job may be unknown to Ray after KubeRay reports it Running (HTTPMode
/// submits on its next reconcile).
const APPEAR_WITHIN: Duration = Duration::from_secs(120);
/// Backoff between attempts to reopen a failed log stream.
const FOLLOW_RETRY_FIRST: Duration = Duration::from_secs(5);
const FOLLOW_RETRY_MAX: Duration = Duration::from_secs(60);

/// The RayJob's state as a user reads it: the k8s layer's typed view of its status.
pub use crate::k8s::status::RayJobStatus as RayJobState;

/// How a wait ended.
#[derive(Debug)]
pub enum WaitEnd {
    /// The RayJob is terminal; `ray` is Ray's own final word on the job when the log was
    /// followed to its end.
    Terminal {
        state: RayJobState,
        ray: Option<Box<JobDetails>>,
    },
    /// Ctrl-C: nrl stopped waiting; the job keeps running.
    Detached { state: RayJobState },
}

/// Watches one RayJob and follows its driver log.
pub struct Waiter<'a> {
    pub k8s: &'a K8s,
    pub plan: &'a RayJobPlan,
    pub progress: &'a mut dyn Output,
    pub cancel: &'a CancellationToken,
    /// Stream the driver log (`--wait`); otherwise only the status is watched.
    pub follow_log: bool,
    pub log_copy: Option<std::fs::File>,
    pub scan: LogScan,
    pub state: RayJobState,
    /// The DRA objects were handed to the cluster (or there are none).
    pub dra_with_cluster: bool,
}

impl<'a> Waiter<'a> {
    pub fn new(
        k8s: &'a K8s,
        plan: &'a RayJobPlan,
        progress: &'a mut dyn Output,
        cancel: &'a CancellationToken,
    ) -> Waiter<'a> {
        Waiter {
            k8s,
            plan,
            progress,
            cancel,
            follow_log: true,
            log_copy: None,
            scan: LogScan::new(),
            state: RayJobState::default(),
            dra_with_cluster: plan.dra.is_empty(),
        }
    }

    fn log(&mut self, chunk: &str) {
        use std::io::Write;
        self.progress.log(chunk);
        self.scan.feed(chunk);
        if let Some(f) = self.log_copy.as_mut() {
            let _ = f.write_all(chunk.as_bytes());
        }
    }

    /// A new RayJob state: report it, and hand the DRA objects to the cluster once it
    /// exists.
    async fn observe(&mut self, obj: &Json) {
        let next = RayJobState::of(obj);
        if next.cluster.is_some() && next.cluster != self.state.cluster {
            let rc = next.cluster.clone().unwrap_or_default();
            self.progress.status(&format!(
                "[rayjob] RayCluster {rc} (pods: kubectl get pods -n {} -l ray.io/cluster={rc})",
                self.plan.namespace
            ));
        }
        if (next.deployment.as_deref(), next.job.as_deref())
            != (self.state.deployment.as_deref(), self.state.job.as_deref())
        {
            self.progress
                .status(&format!("[rayjob] {} {}", self.plan.name, next.pair()));
            // Under Kueue the RayJob is created suspended and resumed on admission
            // (KubeRay: Suspended -> "" -> Initializing); it is not over.
            if next.deployment.as_deref() == Some("Suspended") {
                self.progress.status(&format!(
                    "[rayjob] {} waiting for admission (suspended)",
                    self.plan.name
                ));
            }
        }
        self.state = next;
        if !self.dra_with_cluster
            && let Some(rc) = self.state.cluster.clone()
        {
            match hand_dra_to_cluster(self.k8s, self.plan, &rc).await {
                Ok(true) => {
                    self.dra_with_cluster = true;
                    self.progress.status(&format!(
                        "[rayjob] DRA objects now belong to RayCluster {rc} (deleted with it)"
                    ));
                }
                Ok(false) => {}
                Err(e) => {
                    self.dra_with_cluster = true;
                    self.progress.status(&format!(
                        "[rayjob] warning: DRA objects stay with the RayJob: {}",
                        e.message
                    ));
                }
            }
        }
    }

    /// Wait until the RayJob reaches `until` (or a terminal state), reporting changes.
    /// `what` names the awaited state in the timeout message ("… to be `what`").
    /// Returns `None` on Ctrl-C.
    pub async fn until(
        &mut self,
        timeout: Duration,
        what: &str,
        until: impl Condition + Send + 'static,
    ) -> Result<Option<RayJobState>> {
        let (tx, mut rx) = watch::channel::<Option<Json>>(None);
        let watcher = spawn_watch(self.k8s, self.plan, timeout, what, tx, until);
        let mut watcher = Some(watcher);
        loop {
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return Ok(None),
                changed = rx.changed() => {
                    if changed.is_err() {
                        // The watch ended; its result comes from the task.
                        if let Some(w) = watcher.take() {
                            return finish_watch(w).await.map(|_| Some(self.state.clone()));
                        }
                        continue;
                    }
                    let obj = rx.borrow_and_update().clone();
                    if let Some(obj) = obj {
                        self.observe(&obj).await;
                    }
                }
            }
        }
    }

    /// Wait for the end: the RayJob terminal (and, when following, the log to its end).
    pub async fn to_the_end(&mut self, timeout: Duration) -> Result<WaitEnd> {
        let (tx, mut rx) = watch::channel::<Option<Json>>(None);
        let mut watcher = Some(spawn_watch(
            self.k8s,
            self.plan,
            timeout,
            "finished",
            tx,
            rayjob_finished(),
        ));
        let (log_tx, mut log_rx) = mpsc::unbounded_channel::<String>();
        let mut follower: Option<TaskGuard<Result<JobDetails>>> = None;
        let mut ray: Option<Box<JobDetails>> = None;
        let mut terminal = false;
        let mut grace: Option<tokio::time::Instant> = None;
        // A log stream that failed is retried with backoff (the status watch goes on).
        let mut retry_at: Option<tokio::time::Instant> = None;
        let mut retry_pause = FOLLOW_RETRY_FIRST;
        // The stream broke after the job ended (the cluster is going away): do not restart it.
        let mut log_gone = false;
        let far = tokio::time::Instant::now() + Duration::from_secs(86400 * 365);
        loop {
            if terminal && follower.is_none() {
                break;
            }
            if ray.is_some() && watcher.is_none() {
                break;
            }
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    self.drain(&mut log_rx);
                    return Ok(WaitEnd::Detached { state: self.state.clone() });
                }
                Some(chunk) = log_rx.recv() => self.log(&chunk),
                changed = rx.changed(), if watcher.is_some() => {
                    if changed.is_ok() {
                        let obj = rx.borrow_and_update().clone();
                        if let Some(obj) = obj {
                            self.observe(&obj).await;
                        }
                    } else if let Some(w) = watcher.take() {
                        finish_watch(w).await?;
                        terminal = true;
                        if follower.is_some() {
                            grace = Some(tokio::time::Instant::now() + LOG_GRACE);
                        }
                    }
                }
                done = join_opt(&mut follower), if follower.is_some() => {
                    follower = None;
                    self.drain(&mut log_rx);
                    match done {
                        Ok(Ok(details)) => {
                            ray = Some(Box::new(details));
                            if watcher.is_some() {
                                grace = Some(tokio::time::Instant::now() + STATUS_GRACE);
                            }
                        }
                        Ok(Err(e)) if terminal || self.state.is_terminal() => {
                            // KubeRay tore the cluster down under the stream: no retry.
                            log_gone = true;
                            self.progress.status(&format!(
                                "[rayjob] the driver log stream ended with the cluster: {}",
                                e.message
                            ));
                        }
                        Ok(Err(e)) => {
                            self.progress.status(&format!(
                                "[rayjob] warning: the driver log stream ended: {} (retrying in {}s; the status is still watched)",
                                e.message,
                                retry_pause.as_secs()
                            ));
                            retry_at = Some(tokio::time::Instant::now() + retry_pause);
                            retry_pause = (retry_pause * 2).min(FOLLOW_RETRY_MAX);
                        }
                        Err(_) => {}
                    }
                }
                _ = tokio::time::sleep_until(retry_at.unwrap_or(far)), if retry_at.is_some() => {
                    retry_at = None;
                }
                _ = tokio::time::sleep_until(grace.unwrap_or(far)), if grace.is_some() => {
                    grace = None;
                    if terminal {
                        follower = None;
                        self.drain(&mut log_rx);
                    } else {
                        // Ray says the job ended; KubeRay has not caught up. Ray's word
                        // decides the outcome.
                        watcher = None;
                    }
                }
            }
            if self.follow_log
                && !log_gone
                && follower.is_none()
                && retry_at.is_none()
                && ray.is_none()
                && !terminal
                && let Some((cluster, id)) = self.ready_to_follow()
            {
                follower = Some(spawn_follower(
                    self.k8s,
                    &self.plan.namespace,
                    &cluster,
                    &id,
                    log_tx.clone(),
                ));
            }
        }
        self.drain(&mut log_rx);
        self.scan.finish();
        Ok(WaitEnd::Terminal {
            state: self.state.clone(),
            ray,
        })
    }

    fn drain(&mut self, rx: &mut mpsc::UnboundedReceiver<String>) {
        while let Ok(chunk) = rx.try_recv() {
            self.log(&chunk);
        }
    }

    /// The cluster and Ray job id once the job has been submitted.
    fn ready_to_follow(&self) -> Option<(String, String)> {
        let cluster = self.state.cluster.clone()?;
        let submitted = match self.plan.mode {
            // nrl submitted it before waiting.
            SubmissionMode::Interactive => self.state.job_id.is_some(),
            SubmissionMode::Http => self.state.deployment.as_deref() == Some("Running"),
        };
        if !submitted {
            return None;
        }
        let id = self
            .state
            .job_id
            .clone()
            .unwrap_or_else(|| self.plan.run_id.to_string());
        Some((cluster, id))
    }

    /// With shutdown on, wait for KubeRay to delete the RayCluster (when its TTL is
    /// short enough to wait for).
    pub async fn teardown(&mut self, max_wait: Duration) -> Teardown {
        if !self.plan.shutdown {
            return Teardown::Kept;
        }
        let Some(rc) = self.state.cluster.clone() else {
            return Teardown::Deleted;
        };
        let ttl = Duration::from_secs(self.plan.ttl_seconds.max(0) as u64);
        if ttl > max_wait {
            self.progress.status(&format!(
                "[rayjob] KubeRay deletes RayCluster {rc} {}s after the job ended \
                 (ttlSecondsAfterFinished); its resources stay allocated until then",
                self.plan.ttl_seconds
            ));
            return Teardown::Scheduled {
                seconds: self.plan.ttl_seconds,
            };
        }
        let Ok(clusters) = by_kind("RayCluster") else {
            return Teardown::Unknown;
        };
        self.progress.status(&format!(
            "[rayjob] waiting for KubeRay to delete RayCluster {rc}"
        ));
        let wait = self.k8s.wait_deleted(
            &clusters,
            &self.plan.namespace,
            &rc,
            ttl + Duration::from_secs(120),
        );
        tokio::select! {
            _ = self.cancel.cancelled() => Teardown::Unknown,
            r = wait => match r {
                Ok(()) => {
                    self.progress.status(&format!("[rayjob] RayCluster {rc} deleted"));
                    Teardown::Deleted
                }
                Err(e) => {
                    self.progress.status(&format!("[rayjob] warning: {}", e.message));
                    Teardown::StillPresent
                }
            }
        }
    }
}

/// What happened to the RayJob's cluster after the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Teardown {
    /// `--no-shutdown`: the cluster stays.
    Kept,
    /// Gone (or never created).
    Deleted,
    /// KubeRay deletes it `seconds` after the job ended (a long TTL).
    Scheduled { seconds: i64 },
    /// Still there after the TTL and a grace period.
    StillPresent,
    /// Not checked (interrupted).
    Unknown,
}

/// The exit code for a terminal RayJob: Ray's status when known (SUCCEEDED 0; FAILED and
/// STOPPED 1, even though KubeRay reports a stopped job as `Complete`), else 1 for a
/// deployment that failed (`Failed`, `ValidationFailed`).
pub fn exit_for(state: &RayJobState, ray: Option<&JobDetails>) -> Exit {
    if let Some(details) = ray {
        return details.status.exit();
    }
    match state.job.as_deref() {
        Some("SUCCEEDED") => Exit::Ok,
        Some(_) => Exit::Failed,
        None if state.deployment.as_deref() == Some("Complete") => Exit::Ok,
        None => Exit::Failed,
    }
}

fn spawn_watch(
    k8s: &K8s,
    plan: &RayJobPlan,
    timeout: Duration,
    what: &str,
    tx: watch::Sender<Option<Json>>,
    until: impl Condition + Send + 'static,
) -> TaskGuard<Result<()>> {
    let (k8s, ns, name) = (k8s.clone(), plan.namespace.clone(), plan.name.clone());
    let what = what.to_string();
    TaskGuard::spawn(async move {
        let rayjobs = by_kind("RayJob")?;
        let mut seen = false;
        let gone_name = name.clone();
        k8s.wait_for(&rayjobs, &ns, &name, timeout, &what, move |o| match o {
            None if seen => Verdict::Fail(
                Diag::api(
                    "nrl::run::rayjob_gone",
                    format!("RayJob {gone_name} was deleted before it finished"),
                )
                .help("someone (or KubeRay's DELETE_RAYJOB_CR_AFTER_JOB_FINISHES) deleted it; the run's Ray job ended with it"),
            ),
            None => Verdict::Pending,
            Some(obj) => {
                seen = true;
                let _ = tx.send(Some(obj.clone()));
                if until.matches(Some(obj)) {
                    Verdict::Done(())
                } else {
                    Verdict::Pending
                }
            }
        })
        .await
    })
}

/// Await a guarded task if there is one (pending forever otherwise).
async fn join_opt<T>(
    task: &mut Option<TaskGuard<T>>,
) -> std::result::Result<T, tokio::task::JoinError> {
    match task {
        Some(t) => (&mut t.0).await,
        None => std::future::pending().await,
    }
}

async fn finish_watch(w: TaskGuard<Result<()>>) -> Result<()> {
    let mut w = w;
    match (&mut w.0).await {
        Ok(r) => r,
        Err(e) => Err(Diag::api(
            "nrl::runtime",
            format!("the RayJob watch stopped: {e}"),
        )),
    }
}

fn spawn_follower(
    k8s: &K8s,
    ns: &str,
    cluster: &str,
    id: &str,
    out: mpsc::UnboundedSender<String>,
) -> TaskGuard<Result<JobDetails>> {
    let (k8s, ns, cluster, id) = (
        k8s.clone(),
        ns.to_string(),
        cluster.to_string(),
        id.to_string(),
    );
    TaskGuard::spawn(async move {
        let dash = dashboard_session(&k8s, &ns, &cluster).await?;
        follow_into(&dash.client, &id, out, APPEAR_WITHIN).await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(deployment: &str, job: Option<&str>) -> RayJobState {
        RayJobState {
            deployment: Some(deployment.into()),
            job: job.map(str::to_string),
            ..RayJobState::default()
        }
    }

    /// Regressions of ref §11 C1/C2: ValidationFailed is terminal and fails; a STOPPED
    /// job fails although KubeRay reports it `Complete`. Issue 14 item 5: Suspended is
    /// not terminal (Kueue admits the RayJob later).
    #[test]
    fn exit_codes_come_from_the_ray_job_status() {
        assert_eq!(
            exit_for(&state("Complete", Some("SUCCEEDED")), None),
            Exit::Ok
        );
        assert_eq!(
            exit_for(&state("Complete", Some("STOPPED")), None),
            Exit::Failed
        );
        assert_eq!(
            exit_for(&state("Failed", Some("FAILED")), None),
            Exit::Failed
        );
        for d in ["ValidationFailed", "Failed"] {
            assert!(state(d, None).is_terminal());
            assert_eq!(exit_for(&state(d, None), None), Exit::Failed, "{d}");
        }
        assert!(!state("Suspended", None).is_terminal());
        assert!(!state("Running", Some("RUNNING")).is_terminal());
        // Ray's own final word wins over a RayJob that has not caught up.
        let ray: JobDetails = serde_json::from_str(r#"{"status": "FAILED"}"#).unwrap();
        assert_eq!(
            exit_for(&state("Running", Some("RUNNING")), Some(&ray)),
            Exit::Failed
        );
        assert_eq!(state("Running", None).pair(), "deployment=Running job=None");
    }
}
