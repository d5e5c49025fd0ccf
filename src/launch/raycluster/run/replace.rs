//! `--replace` for long-lived runs (ref-orchestration §4.6, fixing ref §11 B7): first stop
//! the running *and pending* jobs on the role clusters (Ray jobs through the dashboard;
//! exec runs that nrl recorded on the cluster, each by its own process group — never other
//! users' processes), wait until they ended, and only then reset the endpoint-registry
//! ConfigMap, once, so stopped jobs cannot re-publish stale endpoints.

use std::time::Duration;

use regex::Regex;

use crate::diag::Result;
use crate::k8s::K8s;
use crate::k8s::resources::by_kind;
use crate::launch::dashboard::dashboard_session;
use crate::launch::output::Output;
use crate::launch::raycluster::submit::exec::{self, ExecRun, ExecState};
use crate::launch::records::cluster_copy::{RECORD_KEY, RUN_KIND_LABEL};
use crate::launch::records::{RunKind, RunRecord};
use crate::ray::{JobStatus, stop_job};

/// `nemo-rl-endpoints-<job id>`
pub fn registry_name(job_id: &str) -> String {
    format!("nemo-rl-endpoints-{job_id}")
}

/// The `--job-id` of the gym daemon's entrypoint (`--job-id X` or `--job-id=X`), quotes
/// removed. `None` when absent or when it is a shell expression (`$VAR`), which nrl
/// cannot evaluate.
pub fn registry_job_id(gym_entrypoint: &str) -> Option<String> {
    let re = Regex::new(r"--job-id(?:=|\s+)(\S+)").ok()?;
    let raw = re.captures(gym_entrypoint)?.get(1)?.as_str();
    let id = raw.trim_matches(|c| c == '"' || c == '\'');
    if id.is_empty() || id.contains('$') || id.contains('`') {
        return None;
    }
    Some(id.to_string())
}

/// Stop every RUNNING or PENDING Ray job with a submission id on `cluster` (if it
/// exists), waiting for each to end. Returns the ids stopped.
pub async fn stop_ray_jobs(
    k8s: &K8s,
    ns: &str,
    cluster: &str,
    progress: &mut dyn Output,
) -> Result<Vec<String>> {
    if k8s
        .get(&by_kind("RayCluster")?, ns, cluster)
        .await?
        .is_none()
    {
        return Ok(Vec::new());
    }
    let dash = dashboard_session(k8s, ns, cluster).await?;
    let mut stopped = Vec::new();
    for job in dash.client.list_jobs().await? {
        let Some(id) = job.submission_id.clone() else {
            continue;
        };
        if !matches!(job.status, JobStatus::Running | JobStatus::Pending) {
            continue;
        }
        progress.status(&format!(
            "[replace] stopping {id} ({}) on {cluster}",
            job.status
        ));
        match stop_job(&dash.client, &id, Duration::from_secs(60)).await {
            Ok(out) => progress.status(&format!("[replace] {id} → {}", out.details.status)),
            Err(e) => progress.status(&format!("[replace] warning: {id}: {}", e.message)),
        }
        stopped.push(id);
    }
    Ok(stopped)
}

/// Stop the exec runs nrl recorded on `cluster` that are still running (TERM to each
/// run's own process group), waiting up to a minute for each.
pub async fn stop_exec_runs(
    k8s: &K8s,
    ns: &str,
    cluster: &str,
    progress: &mut dyn Output,
) -> Result<Vec<String>> {
    let selector = format!("{RUN_KIND_LABEL}={}", RunKind::RayclusterExec.as_str());
    let cms = k8s
        .list(&by_kind("ConfigMap")?, ns, Some(&selector))
        .await?;
    let mut stopped = Vec::new();
    for cm in cms {
        let Some(record) = cm
            .pointer(&format!("/data/{RECORD_KEY}"))
            .and_then(|v| v.as_str())
            .and_then(|t| serde_json::from_str::<RunRecord>(t).ok())
        else {
            continue;
        };
        let kr = record.k8s.clone().unwrap_or_default();
        let (Some(pod), Some(dir)) = (kr.pod, kr.exec_dir) else {
            continue;
        };
        if record.cluster.as_deref() != Some(cluster) {
            continue;
        }
        let run = ExecRun {
            run_id: record.id.clone(),
            namespace: ns.to_string(),
            cluster: cluster.to_string(),
            pod,
            dir,
        };
        if !matches!(exec::status(k8s, &run).await, Ok(ExecState::Running)) {
            continue;
        }
        progress.status(&format!(
            "[replace] stopping exec run {} on {}",
            run.run_id, run.pod
        ));
        exec::stop(k8s, &run, false).await?;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let state = exec::status(k8s, &run).await?;
            if state != ExecState::Running {
                progress.status(&format!("[replace] {} → {}", run.run_id, state.describe()));
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                progress.status(&format!(
                    "[replace] warning: {} still running after 60s",
                    run.run_id
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        stopped.push(run.run_id);
    }
    Ok(stopped)
}

/// Delete the endpoint registry of `job_id`; returns whether it existed.
pub async fn reset_registry(
    k8s: &K8s,
    ns: &str,
    job_id: &str,
    progress: &mut dyn Output,
) -> Result<bool> {
    let name = registry_name(job_id);
    let deleted = k8s.delete(&by_kind("ConfigMap")?, ns, &name).await?;
    if deleted {
        progress.status(&format!(
            "[replace] deleted endpoint registry ConfigMap {name}"
        ));
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ref §10.2 InferDisaggJobId cases, and quotes/expansions (ref §11 B7).
    #[test]
    fn registry_job_ids() {
        assert_eq!(
            registry_job_id("python gym.py --job-id=run-xyz --other").as_deref(),
            Some("run-xyz")
        );
        assert_eq!(
            registry_job_id("python gym.py --job-id run-abc --other").as_deref(),
            Some("run-abc")
        );
        assert_eq!(registry_job_id("python gym.py --cluster x"), None);
        assert_eq!(
            registry_job_id("x --job-id \"run-q\"").as_deref(),
            Some("run-q")
        );
        assert_eq!(registry_job_id("x --job-id ${JOB_ID}"), None);
        assert_eq!(registry_name("run-k"), "nemo-rl-endpoints-run-k");
    }
}
