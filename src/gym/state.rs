//! What a benchmark is doing, read from its Job (and, for detail, its pod). Pure functions
//! over the API's JSON, so the watch, `status` and the tests share one reading.

use std::fmt;

use serde_json::Value as Json;

use super::names::BENCHMARK_LABEL;
use crate::k8s::status::{ContainerStatus, JobStatus, PodStatus};

/// A benchmark's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// The Job could not be created.
    ApplyFailed,
    /// Created; no pod yet.
    Pending,
    /// A pod exists but is not ready (scheduling, image pull, sidecars loading the model).
    Starting,
    /// The pod is ready: sidecars serve and the driver runs.
    Running,
    Succeeded,
    Failed,
    /// The Job disappeared before it finished (cancelled or deleted).
    Deleted,
}

impl Phase {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            Phase::ApplyFailed | Phase::Succeeded | Phase::Failed | Phase::Deleted
        )
    }

    pub fn is_failure(self) -> bool {
        matches!(self, Phase::ApplyFailed | Phase::Failed | Phase::Deleted)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::ApplyFailed => "ApplyFailed",
            Phase::Pending => "Pending",
            Phase::Starting => "Starting",
            Phase::Running => "Running",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Deleted => "Deleted",
        }
    }
}

impl serde::Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of a run's table. Field names are `gym status -o json|yaml`'s.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BenchStatus {
    pub benchmark: String,
    pub job: String,
    pub phase: Phase,
    /// Why it failed, or what it waits for.
    pub detail: String,
}

/// The phase of a Job, and a detail for failures.
pub fn job_phase(job: &Json) -> (Phase, String) {
    let status = JobStatus::of(job);
    if status.succeeded() {
        return (Phase::Succeeded, String::new());
    }
    if let Some(c) = status.failed() {
        let reason = c.reason.as_deref().unwrap_or("Failed");
        let detail = match reason {
            "DeadlineExceeded" => "activeDeadlineSeconds exceeded".to_string(),
            "BackoffLimitExceeded" => "the pod failed".to_string(),
            other => match c.message.as_deref() {
                Some(m) if !m.is_empty() => format!("{other}: {m}"),
                _ => other.to_string(),
            },
        };
        return (Phase::Failed, detail);
    }
    if status.ready > 0 {
        (Phase::Running, String::new())
    } else if status.active > 0 {
        (Phase::Starting, String::new())
    } else {
        (Phase::Pending, String::new())
    }
}

/// The benchmark label of a Job or pod.
pub fn benchmark_label(obj: &Json) -> Option<&str> {
    obj.pointer(&format!("/metadata/labels/{}", BENCHMARK_LABEL))
        .and_then(Json::as_str)
}

/// What a pod's containers say: the first waiting reason or failed termination, e.g.
/// `policy: ImagePullBackOff`, `driver exited 1 (Error)`, `Unschedulable: 0/3 nodes …`.
pub fn pod_detail(pod: &Json) -> Option<String> {
    let status = PodStatus::of(pod);
    if let Some(c) = status.unschedulable() {
        let reason = c.reason.as_deref().unwrap_or("Unschedulable");
        return Some(match c.message.as_deref() {
            Some(m) if !m.is_empty() => format!("{reason}: {m}"),
            _ => reason.to_string(),
        });
    }
    let name = |c: &ContainerStatus| {
        if c.name.is_empty() {
            "?".to_string()
        } else {
            c.name.clone()
        }
    };
    // A failed main container explains a failed pod best; then anything stuck waiting.
    for c in status.all_containers() {
        if let Some(t) = &c.terminated
            && let Some(code) = t.exit_code.filter(|code| *code != 0)
        {
            let reason = t.reason.as_deref().unwrap_or("Error");
            return Some(format!("{} exited {code} ({reason})", name(c)));
        }
    }
    for c in status.all_containers() {
        if let Some(reason) = c.waiting.as_ref().and_then(|w| w.reason.as_deref())
            && !matches!(reason, "ContainerCreating" | "PodInitializing")
        {
            let more = if c.restart_count > 0 {
                format!(", {} restarts", c.restart_count)
            } else {
                String::new()
            };
            return Some(format!("{}: {reason}{more}", name(c)));
        }
    }
    status.reason
}

/// Counts per phase, for summary lines (`3 Succeeded, 1 Failed`).
pub fn summary(rows: &[BenchStatus]) -> String {
    let mut counts: Vec<(Phase, usize)> = Vec::new();
    for r in rows {
        match counts.iter_mut().find(|(p, _)| *p == r.phase) {
            Some((_, n)) => *n += 1,
            None => counts.push((r.phase, 1)),
        }
    }
    counts.sort();
    counts
        .iter()
        .map(|(p, n)| format!("{n} {p}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn phases_from_job_status() {
        assert_eq!(job_phase(&json!({})).0, Phase::Pending);
        assert_eq!(
            job_phase(&json!({"status": {"active": 1, "ready": 0}})).0,
            Phase::Starting
        );
        assert_eq!(
            job_phase(&json!({"status": {"active": 1, "ready": 1}})).0,
            Phase::Running
        );
        let done = json!({"status": {"conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}});
        assert_eq!(job_phase(&done).0, Phase::Succeeded);
        let failed = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}});
        assert_eq!(job_phase(&failed), (Phase::Failed, "the pod failed".into()));
        let deadline = json!({"status": {"conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]}});
        assert_eq!(job_phase(&deadline).1, "activeDeadlineSeconds exceeded");
        let not_yet =
            json!({"status": {"conditions": [{"type": "Failed", "status": "False"}], "active": 1}});
        assert_eq!(job_phase(&not_yet).0, Phase::Starting);
    }

    #[test]
    fn pod_details() {
        let failed = json!({"status": {"phase": "Failed",
            "initContainerStatuses": [{"name": "policy", "state": {"terminated": {"exitCode": 0}}}],
            "containerStatuses": [{"name": "driver", "state": {"terminated": {"exitCode": 3, "reason": "Error"}}}]}});
        assert_eq!(
            pod_detail(&failed).as_deref(),
            Some("driver exited 3 (Error)")
        );
        let pulling = json!({"status": {"phase": "Pending",
            "initContainerStatuses": [{"name": "policy", "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff"}}}],
            "containerStatuses": [{"name": "driver", "state": {"waiting": {"reason": "PodInitializing"}}}]}});
        assert_eq!(
            pod_detail(&pulling).as_deref(),
            Some("policy: ImagePullBackOff")
        );
        let crash = json!({"status": {"initContainerStatuses": [{"name": "policy", "restartCount": 4, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        assert_eq!(
            pod_detail(&crash).as_deref(),
            Some("policy: CrashLoopBackOff, 4 restarts")
        );
        let unsched = json!({"status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available"}]}});
        assert_eq!(
            pod_detail(&unsched).as_deref(),
            Some("Unschedulable: 0/1 nodes are available")
        );
        assert_eq!(pod_detail(&json!({"status": {"phase": "Running"}})), None);
    }

    #[test]
    fn summaries() {
        let row = |p| BenchStatus {
            benchmark: "b".into(),
            job: "j".into(),
            phase: p,
            detail: String::new(),
        };
        let rows = [
            row(Phase::Failed),
            row(Phase::Succeeded),
            row(Phase::Succeeded),
            row(Phase::Running),
        ];
        assert_eq!(summary(&rows), "1 Running, 2 Succeeded, 1 Failed");
        assert!(Phase::Deleted.is_failure() && Phase::Deleted.is_terminal());
        assert!(!Phase::Running.is_terminal());
    }
}
