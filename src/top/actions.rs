//! What `nrl top`'s keys do to a run, through the library functions the commands use:
//! stop (`nrl job stop` / `nrl gym cancel`, each with its owner check), diagnose (`nrl
//! diagnose`), and the dashboard port-forward (`nrl cluster dashboard`). Each returns the
//! text of a notice for the screen.

use std::collections::HashMap;

use serde_json::Value as Json;

use super::model::RunKind;
use crate::diag::{Diag, Result};
use crate::doctor::diagnose::{Target, diagnose};
use crate::gym::ops::cancel::{Canceller, cancel_run};
use crate::k8s::K8s;
use crate::launch::attach::{Stopped, stop_and_record};
use crate::launch::dashboard::{DashboardSession, dashboard_session};
use crate::launch::progress::Progress;
use crate::launch::raycluster::check_owner;
use crate::launch::records::RunStore;
use crate::launch::records::cluster_copy::{RUN_ID_LABEL, find_run};
use crate::ray::{JobStatus, stop_job};

/// The outcome of an action: a title and a body.
pub struct Notice {
    pub title: String,
    pub body: String,
}

/// Stop `run` as `me`. A RayJob is stopped as `nrl job stop` stops the run it belongs to
/// (its `nrl/run-id` label; the record is updated); a long-lived RayCluster's running Ray
/// job is stopped (the cluster stays); a Gym run is cancelled. The owner check comes first.
pub async fn stop(
    k8s: &K8s,
    ns: &str,
    run: &str,
    kind: RunKind,
    object: Option<&Json>,
    me: &str,
) -> Result<Notice> {
    let progress = Progress::capture();
    let object = object
        .ok_or_else(|| Diag::new("nrl::top::gone", format!("{} {run} is gone", kind.as_str())))?;
    let title = format!("stop {} {run}", kind.as_str());
    let body = match kind {
        RunKind::RayJob => {
            check_owner(object, me, false, &progress)?;
            let id = object
                .pointer(&format!(
                    "/metadata/labels/{}",
                    RUN_ID_LABEL.replace('/', "~1")
                ))
                .and_then(Json::as_str)
                .ok_or_else(|| {
                    Diag::new(
                        "nrl::top::not_a_run",
                        format!(
                            "RayJob {run} was not launched by `nrl run` (no {RUN_ID_LABEL} label)"
                        ),
                    )
                    .help(format!(
                        "delete it yourself: kubectl delete rayjob {run} -n {ns}"
                    ))
                })?;
            let store = RunStore::from_env(&crate::config::env::ProcessEnv)?;
            let mut record = find_run(&store, Some(k8s), ns, id).await?;
            match stop_and_record(Some(k8s), &mut record, &store, me, false, &progress).await? {
                Stopped::Stopped(state) => format!("stopped run {id}: {state}"),
                Stopped::AlreadyEnded(state) => format!("run {id} had already ended: {state}"),
            }
        }
        RunKind::RayCluster => {
            check_owner(object, me, false, &progress)?;
            let dash = dashboard_session(k8s, ns, run).await?;
            let jobs = dash.client.list_jobs().await?;
            let running: Vec<String> = jobs
                .iter()
                .filter(|j| j.status == JobStatus::Running)
                .filter_map(|j| j.id().map(str::to_string))
                .collect();
            if running.is_empty() {
                format!(
                    "no Ray job is running on {run}; the cluster stays (nrl cluster down tears it down)"
                )
            } else {
                let mut lines = Vec::new();
                for id in running {
                    let out =
                        stop_job(&dash.client, &id, std::time::Duration::from_secs(60)).await?;
                    lines.push(format!("stopped Ray job {id}: {}", out.details.status));
                }
                lines.push(format!(
                    "the cluster {run} stays (nrl cluster down tears it down)"
                ));
                lines.join("\n")
            }
        }
        RunKind::GymRun => {
            let by = Canceller {
                me,
                force: false,
                progress: &progress,
            };
            let done = cancel_run(k8s, ns, run, None, None, &by).await?;
            format!("cancelled Gym run {run}: deleted {} Jobs", done.jobs.len())
        }
    };
    let mut lines = progress.lines();
    lines.push(body);
    Ok(Notice {
        title,
        body: lines.join("\n"),
    })
}

/// `nrl diagnose` on a RayJob or RayCluster run, rendered `width` wide without colour.
pub async fn diagnose_run(
    k8s: &K8s,
    ns: &str,
    run: &str,
    kind: RunKind,
    width: usize,
) -> Result<Notice> {
    let target = match kind {
        RunKind::RayJob => Target {
            subject: format!("RayJob {run}"),
            namespace: ns.to_string(),
            rayjob: Some(run.to_string()),
            clusters: Vec::new(),
            record: None,
        },
        RunKind::RayCluster => Target {
            subject: format!("RayCluster {run}"),
            namespace: ns.to_string(),
            rayjob: None,
            clusters: vec![run.to_string()],
            record: None,
        },
        RunKind::GymRun => {
            return Err(Diag::new(
                "nrl::top::diagnose_gym",
                "diagnose reads RayJobs and RayClusters; a Gym run's Jobs are in `nrl gym status`",
            )
            .help(format!("nrl gym status {run} -n {ns}")));
        }
    };
    let report = diagnose(k8s, &target).await?;
    Ok(Notice {
        title: format!("diagnose {} {run}", kind.as_str()),
        body: report.render(false, width),
    })
}

/// The port-forwards opened for the dashboard key, kept for the session's life.
#[derive(Default)]
pub struct Dashboards {
    open: HashMap<String, DashboardSession>,
}

impl Dashboards {
    /// The dashboard URL of `cluster` (opening its port-forward once).
    pub async fn open(&mut self, k8s: &K8s, ns: &str, cluster: &str) -> Result<Notice> {
        if !self.open.contains_key(cluster) {
            let session = dashboard_session(k8s, ns, cluster).await?;
            self.open.insert(cluster.to_string(), session);
        }
        let url = self
            .open
            .get(cluster)
            .map(|s| s.url.clone())
            .unwrap_or_default();
        Ok(Notice {
            title: format!("dashboard of {cluster}"),
            body: format!("{url}\n(open while nrl top runs)"),
        })
    }
}
