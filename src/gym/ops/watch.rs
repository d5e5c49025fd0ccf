//! Following a run: one label-selected watch on its Jobs drives the table; pod details
//! (exit codes, waiting reasons) come from one label-selected pod list when needed.

use futures::StreamExt;
use serde_json::Value as Json;

use crate::diag::{Diag, Result};
use crate::k8s::K8s;
use crate::k8s::watch::LabelledEvent;

use crate::gym::names::run_selector;
use crate::gym::record::GymRecord;
use crate::gym::state::{Phase, pod_detail};
use crate::gym::view::RunView;

/// Watch the run's Jobs until every benchmark is finished; `on_change` sees the view
/// after each change (and once at the start).
pub async fn watch_run(
    k8s: &K8s,
    ns: &str,
    run_id: &str,
    view: &mut RunView,
    mut on_change: impl FnMut(&RunView),
) -> Result<()> {
    on_change(view);
    if view.all_terminal() {
        return Ok(());
    }
    let ar = super::jobs()?;
    let mut stream = Box::pin(k8s.watch_labelled(&ar, ns, &run_selector(run_id)));
    while let Some(ev) = stream.next().await {
        if view.apply(&ev?) {
            on_change(view);
        }
        if view.all_terminal() {
            return Ok(());
        }
    }
    Err(Diag::api(
        "nrl::k8s::watch",
        format!("the watch on the Jobs of run {run_id} ended unexpectedly"),
    ))
}

/// Where a view of a run starts: its record's benchmarks and the failures recorded when
/// they were applied, or (no record on this machine) discovery by label.
pub fn view_of(record: Option<&GymRecord>) -> RunView {
    let Some(r) = record else {
        return RunView::discovering();
    };
    let mut v = RunView::new(
        r.gym
            .benchmarks
            .iter()
            .map(|b| (b.benchmark.clone(), b.job.clone())),
    );
    for b in &r.gym.benchmarks {
        if let Some(e) = &b.error {
            v.apply_failed(&b.job, e);
        }
    }
    v
}

/// A run's status now, as `nrl gym status` and `GymRun.status()` show it: one list of
/// its Jobs, the recorded outcome of Jobs their TTL removed since, then pod details (exit
/// codes, waiting reasons) from one list of its pods.
pub async fn read_status(
    k8s: &K8s,
    ns: &str,
    run_id: &str,
    record: Option<&GymRecord>,
    view: &mut RunView,
) -> Result<()> {
    read_run(k8s, ns, run_id, view).await?;
    if let Some(r) = record {
        keep_recorded_outcomes(r, view);
    }
    if view.rows().is_empty() {
        return Ok(());
    }
    explain_from_pods(k8s, ns, run_id, view).await
}

/// Jobs removed by their TTL read as Pending (not found); they keep the outcome the
/// record saw.
fn keep_recorded_outcomes(record: &GymRecord, view: &mut RunView) {
    for b in &record.gym.benchmarks {
        let phase = match b.phase.as_deref() {
            Some("Succeeded") => Phase::Succeeded,
            Some("Failed") => Phase::Failed,
            Some("Deleted") => Phase::Deleted,
            _ => continue,
        };
        if let Some(row) = view.row_mut(&b.job)
            && row.phase == Phase::Pending
        {
            row.phase = phase;
            row.detail = format!(
                "{} (Job no longer on the cluster)",
                b.detail.clone().unwrap_or_default()
            )
            .trim()
            .to_string();
        }
    }
}

/// The run's current state from one list of its Jobs (no watch).
pub async fn read_run(k8s: &K8s, ns: &str, run_id: &str, view: &mut RunView) -> Result<()> {
    let ar = super::jobs()?;
    let jobs = k8s.list(&ar, ns, Some(&run_selector(run_id))).await?;
    view.apply(&LabelledEvent::Reset(jobs));
    Ok(())
}

fn job_of_pod(pod: &Json) -> Option<&str> {
    let labels = pod.pointer("/metadata/labels")?;
    labels
        .get("batch.kubernetes.io/job-name")
        .or_else(|| labels.get("job-name"))
        .and_then(Json::as_str)
}

/// Explain unfinished and failed rows from their pods (one list for the whole run).
pub async fn explain_from_pods(
    k8s: &K8s,
    ns: &str,
    run_id: &str,
    view: &mut RunView,
) -> Result<()> {
    let wanted = |p: Phase| matches!(p, Phase::Pending | Phase::Starting | Phase::Failed);
    if !view.rows().iter().any(|r| wanted(r.phase)) {
        return Ok(());
    }
    let ar = super::pods()?;
    let pods = k8s.list(&ar, ns, Some(&run_selector(run_id))).await?;
    for pod in &pods {
        let (Some(job), Some(detail)) = (job_of_pod(pod), pod_detail(pod)) else {
            continue;
        };
        if let Some(row) = view.row_mut(job)
            && wanted(row.phase)
        {
            row.detail = detail;
        }
    }
    Ok(())
}
