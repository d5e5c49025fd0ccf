//! The launch checklist (`nrl run … --verify`, `nrl verify RUN_ID`): each point is
//! reported pass, fail or skip (not applicable), with what was seen.
//!
//! 1. the run's objects are present (the RayJob, or the RayCluster it was submitted to);
//! 2. the Ray job is RUNNING or SUCCEEDED;
//! 3. with W&B on (`logger.wandb_enabled`), the W&B run URL is in the log (and printed);
//! 4. at least one `Processed prompts: 100%` line is in the log;
//! 5. after a RayJob with shutdown, no RayCluster is left (once its TTL has passed).

use std::fmt;

use super::dashboard::dashboard_session;
use super::logscan::{LogScan, PROMPTS_DONE};
use super::raycluster::submit::exec::{self, ExecRun, ExecState};
use super::records::context::DRIVER_LOG;
use super::records::{RunKind, RunRecord};
use crate::config::layers::LoadedConfig;
use crate::k8s::K8s;
use crate::k8s::resources::by_kind;
use crate::k8s::status::{RayClusterStatus, RayJobStatus};

/// The outcome of one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckStatus {
    Pass,
    Fail,
    /// Not applicable to this run (W&B off, no shutdown, job still running).
    Skip,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "FAIL",
            CheckStatus::Skip => "skip",
        }
    }
}

/// One point of the checklist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckItem {
    pub name: &'static str,
    pub status: CheckStatus,
    pub detail: String,
}

/// The whole checklist for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub run_id: String,
    pub items: Vec<CheckItem>,
    /// The W&B run URL, when found.
    pub wandb_url: Option<String>,
}

impl Report {
    /// No point failed.
    pub fn ok(&self) -> bool {
        self.items.iter().all(|i| i.status != CheckStatus::Fail)
    }

    fn count(&self, s: CheckStatus) -> usize {
        self.items.iter().filter(|i| i.status == s).count()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "checklist for run {}:", self.run_id)?;
        for i in &self.items {
            writeln!(f, "  {:<4}  {:<22} {}", i.status.as_str(), i.name, i.detail)?;
        }
        let (pass, fail, skip) = (
            self.count(CheckStatus::Pass),
            self.count(CheckStatus::Fail),
            self.count(CheckStatus::Skip),
        );
        if fail == 0 {
            writeln!(f, "checklist: {pass} passed, {skip} not applicable")
        } else {
            writeln!(
                f,
                "checklist: {fail} FAILED, {pass} passed, {skip} not applicable"
            )
        }
    }
}

fn item(name: &'static str, status: CheckStatus, detail: impl Into<String>) -> CheckItem {
    CheckItem {
        name,
        status,
        detail: detail.into(),
    }
}

/// The recipe's `logger.wandb_enabled`, resolved (false when unset or unresolvable).
pub fn wandb_enabled(cfg: &LoadedConfig) -> bool {
    crate::config::interp::resolve_path(&cfg.recipe, "logger.wandb_enabled", cfg.env.as_ref())
        .ok()
        .and_then(|n| n.as_bool())
        .unwrap_or(false)
}

/// What the checklist knows about the run's Ray job.
#[derive(Debug, Clone, Default)]
struct JobView {
    /// RUNNING, SUCCEEDED, … (None: unknown).
    status: Option<String>,
    detail: String,
    /// The RayJob finished (deployment terminal), with its end time.
    finished: bool,
    end_time: Option<String>,
    /// The RayJob's cluster, when it had one.
    cluster: Option<String>,
    objects: Option<CheckItem>,
}

/// Run the checklist for `record`. `scan` is the log as the run streamed it; without it
/// the log is read from the run directory's copy, Ray, or the head pod.
pub async fn verify(k8s: &K8s, record: &RunRecord, scan: Option<LogScan>) -> Report {
    let ns = record
        .namespace
        .clone()
        .unwrap_or_else(|| k8s.namespace.clone());
    let kr = record.k8s.clone().unwrap_or_default();
    let id = record.id.clone();
    let mut items = Vec::new();
    let view = match record.kind {
        RunKind::Rayjob => rayjob_view(k8s, &ns, kr.rayjob.as_deref().unwrap_or("")).await,
        RunKind::RayclusterPortforward => {
            cluster_job_view(k8s, &ns, record.cluster.as_deref().unwrap_or(""), &id).await
        }
        RunKind::RayclusterExec => exec_view(k8s, &ns, record).await,
        other => JobView {
            objects: Some(item(
                "objects present",
                CheckStatus::Skip,
                format!("a {} run has no cluster objects", other.as_str()),
            )),
            ..JobView::default()
        },
    };
    if let Some(o) = view.objects.clone() {
        items.push(o);
    }
    items.push(match view.status.as_deref() {
        Some(s @ ("RUNNING" | "SUCCEEDED")) => item("Ray job status", CheckStatus::Pass, s),
        Some(s) => item(
            "Ray job status",
            CheckStatus::Fail,
            format!("{s} {}", view.detail).trim().to_string(),
        ),
        None => item(
            "Ray job status",
            CheckStatus::Fail,
            format!("unknown: {}", view.detail),
        ),
    });

    let scan = match scan {
        Some(s) => Some(s),
        None => read_log(k8s, &ns, record, &view).await,
    };
    let wandb_url = scan.as_ref().and_then(|s| s.wandb_url.clone());
    items.push(match (kr.wandb, &scan) {
        (false, _) => item(
            "W&B run URL",
            CheckStatus::Skip,
            "W&B is off (logger.wandb_enabled)",
        ),
        (true, Some(s)) => match &s.wandb_url {
            Some(url) => item("W&B run URL", CheckStatus::Pass, url.clone()),
            None => item(
                "W&B run URL",
                CheckStatus::Fail,
                "W&B is on but no run URL is in the log",
            ),
        },
        (true, None) => item("W&B run URL", CheckStatus::Fail, "the log is not available"),
    });
    items.push(match &scan {
        Some(s) if s.prompts_done > 0 => item(
            "generation finished",
            CheckStatus::Pass,
            format!("{} line(s) with `{PROMPTS_DONE}`", s.prompts_done),
        ),
        Some(s) => item(
            "generation finished",
            CheckStatus::Fail,
            format!("no `{PROMPTS_DONE}` line in {} bytes of log", s.bytes),
        ),
        None => item(
            "generation finished",
            CheckStatus::Fail,
            "the log is not available",
        ),
    });
    items.push(teardown_item(k8s, &ns, record, &view).await);
    Report {
        run_id: id,
        items,
        wandb_url,
    }
}

async fn rayjob_view(k8s: &K8s, ns: &str, name: &str) -> JobView {
    let rj = match by_kind("RayJob") {
        Ok(ar) => k8s.get(&ar, ns, name).await,
        Err(e) => Err(e),
    };
    match rj {
        Ok(Some(obj)) => {
            let status = RayJobStatus::of(&obj);
            let deployment = status.deployment.as_deref().unwrap_or("New");
            JobView {
                finished: status.is_terminal(),
                detail: status.message.clone().unwrap_or_default(),
                status: status.job,
                end_time: status.end_time,
                cluster: status.cluster,
                objects: Some(item(
                    "objects present",
                    CheckStatus::Pass,
                    format!("RayJob {name} (deployment={deployment})"),
                )),
            }
        }
        Ok(None) => JobView {
            detail: format!("RayJob {name} not found"),
            objects: Some(item(
                "objects present",
                CheckStatus::Fail,
                format!("RayJob {name} not found in {ns}"),
            )),
            ..JobView::default()
        },
        Err(e) => JobView {
            detail: e.message.clone(),
            objects: Some(item(
                "objects present",
                CheckStatus::Fail,
                e.message.clone(),
            )),
            ..JobView::default()
        },
    }
}

async fn cluster_present(k8s: &K8s, ns: &str, cluster: &str) -> CheckItem {
    let rc = match by_kind("RayCluster") {
        Ok(ar) => k8s.get(&ar, ns, cluster).await,
        Err(e) => Err(e),
    };
    match rc {
        Ok(Some(obj)) => item(
            "objects present",
            CheckStatus::Pass,
            format!(
                "RayCluster {cluster} (state={})",
                RayClusterStatus::of(&obj).state.as_deref().unwrap_or("?")
            ),
        ),
        Ok(None) => item(
            "objects present",
            CheckStatus::Fail,
            format!("RayCluster {cluster} not found in {ns}"),
        ),
        Err(e) => item("objects present", CheckStatus::Fail, e.message.clone()),
    }
}

async fn cluster_job_view(k8s: &K8s, ns: &str, cluster: &str, id: &str) -> JobView {
    let objects = cluster_present(k8s, ns, cluster).await;
    let mut view = JobView {
        cluster: Some(cluster.to_string()),
        ..JobView::default()
    };
    if objects.status == CheckStatus::Pass {
        match dashboard_session(k8s, ns, cluster).await {
            Ok(dash) => match dash.client.status(id).await {
                Ok(d) => {
                    view.status = Some(d.status.to_string());
                    view.detail = d
                        .message
                        .unwrap_or_default()
                        .lines()
                        .next()
                        .unwrap_or("")
                        .to_string();
                }
                Err(e) => view.detail = e.message.clone(),
            },
            Err(e) => view.detail = e.message.clone(),
        }
    } else {
        view.detail = objects.detail.clone();
    }
    view.objects = Some(objects);
    view
}

fn exec_run(ns: &str, record: &RunRecord) -> Option<ExecRun> {
    let kr = record.k8s.as_ref()?;
    Some(ExecRun {
        run_id: record.id.clone(),
        namespace: ns.to_string(),
        cluster: record.cluster.clone().unwrap_or_default(),
        pod: kr.pod.clone()?,
        dir: kr.exec_dir.clone()?,
    })
}

async fn exec_view(k8s: &K8s, ns: &str, record: &RunRecord) -> JobView {
    let objects = cluster_present(k8s, ns, record.cluster.as_deref().unwrap_or("")).await;
    let mut view = JobView::default();
    match exec_run(ns, record) {
        Some(run) => match exec::status(k8s, &run).await {
            Ok(state) => {
                view.status = Some(match state {
                    ExecState::Running => "RUNNING".into(),
                    ExecState::Exited(0) => "SUCCEEDED".into(),
                    ExecState::Exited(_) | ExecState::Killed => "FAILED".into(),
                    ExecState::Missing => "UNKNOWN".into(),
                });
                view.detail = format!("(exec: {})", state.describe());
            }
            Err(e) => view.detail = e.message.clone(),
        },
        None => view.detail = "the record has no exec pod/directory".into(),
    }
    view.objects = Some(objects);
    view
}

/// The log from the run directory's copy, else Ray (cluster alive), else the head pod.
async fn read_log(k8s: &K8s, ns: &str, record: &RunRecord, view: &JobView) -> Option<LogScan> {
    if let Some(dir) = &record.run_dir
        && let Ok(text) = std::fs::read_to_string(std::path::Path::new(dir).join(DRIVER_LOG))
        && !text.is_empty()
    {
        return Some(LogScan::of(&text));
    }
    match record.kind {
        RunKind::RayclusterExec => {
            let run = exec_run(ns, record)?;
            exec::log_text(k8s, &run)
                .await
                .ok()
                .map(|t| LogScan::of(&t))
        }
        _ => {
            let cluster = view.cluster.as_deref()?;
            let dash = dashboard_session(k8s, ns, cluster).await.ok()?;
            let sid = record
                .k8s
                .as_ref()
                .and_then(|k| k.submission_id.clone())
                .unwrap_or_else(|| record.id.clone());
            dash.client.logs(&sid).await.ok().map(|t| LogScan::of(&t))
        }
    }
}

async fn teardown_item(k8s: &K8s, ns: &str, record: &RunRecord, view: &JobView) -> CheckItem {
    const NAME: &str = "cluster torn down";
    let kr = record.k8s.clone().unwrap_or_default();
    if record.kind != RunKind::Rayjob || !kr.shutdown {
        return item(NAME, CheckStatus::Skip, "not a RayJob with shutdown");
    }
    if !view.finished {
        return item(NAME, CheckStatus::Skip, "the job has not finished");
    }
    let Some(rc) = view.cluster.clone().or(kr.raycluster.clone()) else {
        return item(NAME, CheckStatus::Pass, "no RayCluster was created");
    };
    let live = match by_kind("RayCluster") {
        Ok(ar) => k8s.get(&ar, ns, &rc).await,
        Err(e) => Err(e),
    };
    match live {
        Ok(None) => item(NAME, CheckStatus::Pass, format!("RayCluster {rc} is gone")),
        Ok(Some(_)) => {
            let ttl = kr.ttl_seconds.unwrap_or(0);
            let since_end = view
                .end_time
                .as_deref()
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| jiff::Timestamp::now().as_second() - t.as_second());
            match since_end {
                Some(s) if s < ttl => item(
                    NAME,
                    CheckStatus::Skip,
                    format!(
                        "RayCluster {rc} is due for deletion in {}s (ttlSecondsAfterFinished {ttl})",
                        ttl - s
                    ),
                ),
                _ => item(
                    NAME,
                    CheckStatus::Fail,
                    format!("RayCluster {rc} still exists after its TTL ({ttl}s)"),
                ),
            }
        }
        Err(e) => item(NAME, CheckStatus::Fail, e.message.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_renders_each_point_and_the_verdict() {
        let r = Report {
            run_id: "r1".into(),
            items: vec![
                item("objects present", CheckStatus::Pass, "RayJob rj"),
                item("W&B run URL", CheckStatus::Skip, "W&B is off"),
                item("generation finished", CheckStatus::Fail, "no line"),
            ],
            wandb_url: None,
        };
        assert!(!r.ok());
        let text = r.to_string();
        assert!(
            text.contains("  pass  objects present        RayJob rj\n"),
            "{text}"
        );
        assert!(text.contains("  FAIL  generation finished    no line\n"));
        assert!(text.ends_with("checklist: 1 FAILED, 1 passed, 1 not applicable\n"));
        let ok = Report {
            items: vec![item("x", CheckStatus::Pass, "")],
            ..r
        };
        assert!(ok.ok());
    }
}
