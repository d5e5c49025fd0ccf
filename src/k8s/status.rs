//! Typed, read-only views of the `status` of the objects nrl waits on: KubeRay v1.5.1
//! `RayJob` and `RayCluster` (`ray-operator/apis/ray/v1/{rayjob,raycluster}_types.go`)
//! and batch/v1 `Job`. Each status field is read here and nowhere else; the facts
//! callers decide from them (terminal, suspended, ready, finished) are methods.
//!
//! A view of an object without a status (or of a field of the wrong JSON type) is the
//! default: every field `None`/0/empty, as the controller has not written it yet.

use serde_json::Value as Json;

fn text(status: Option<&Json>, key: &str) -> Option<String> {
    status?.get(key)?.as_str().map(str::to_string)
}

fn int(status: Option<&Json>, key: &str) -> Option<i64> {
    status?.get(key)?.as_i64()
}

/// One entry of `status.conditions` (metav1.Condition, or batch/v1 JobCondition).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Condition {
    pub kind: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
}

impl Condition {
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

fn conditions(status: Option<&Json>) -> Vec<Condition> {
    let Some(list) = status
        .and_then(|s| s.get("conditions"))
        .and_then(Json::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .map(|c| {
            let c = Some(c);
            Condition {
                kind: text(c, "type").unwrap_or_default(),
                status: text(c, "status").unwrap_or_default(),
                reason: text(c, "reason"),
                message: text(c, "message"),
            }
        })
        .collect()
}

/// The first condition of `kind`.
fn find<'a>(conditions: &'a [Condition], kind: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.kind == kind)
}

/// KubeRay `RayJobStatus`. Empty strings read as `None`: KubeRay's `JobDeploymentStatusNew`
/// is `""`, and the other fields are `""` until the controller fills them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RayJobStatus {
    /// `jobDeploymentStatus`: KubeRay's state of the RayJob (`Initializing`, `Waiting`,
    /// `Running`, `Complete`, `Failed`, `Suspended`, `ValidationFailed`, …).
    pub deployment: Option<String>,
    /// `jobStatus`: Ray's status of the job (`PENDING`, `RUNNING`, `SUCCEEDED`, …).
    pub job: Option<String>,
    /// `rayClusterName`
    pub cluster: Option<String>,
    /// `jobId`: the Ray submission id.
    pub job_id: Option<String>,
    pub message: Option<String>,
    /// `endTime` (RFC 3339).
    pub end_time: Option<String>,
}

impl RayJobStatus {
    pub fn of(obj: &Json) -> RayJobStatus {
        let status = obj.get("status");
        let s = |key: &str| text(status, key).filter(|v| !v.is_empty());
        RayJobStatus {
            deployment: s("jobDeploymentStatus"),
            job: s("jobStatus"),
            cluster: s("rayClusterName"),
            job_id: s("jobId"),
            message: s("message"),
            end_time: s("endTime"),
        }
    }

    /// Deployment states KubeRay never leaves on its own: `Complete`, `Failed`
    /// (`apis/ray/v1/rayjob_types.go: IsJobDeploymentTerminal`) and `ValidationFailed`
    /// (the `Reconcile` switch of `rayjob_controller.go` has no way out of it).
    /// `Suspended` is not one: under Kueue a RayJob waits there for admission and resumes
    /// on `suspend: false`.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.deployment.as_deref(),
            Some("Complete" | "Failed" | "ValidationFailed")
        )
    }

    /// Suspended (by `spec.suspend`, e.g. Kueue waiting for admission).
    pub fn is_suspended(&self) -> bool {
        self.is_in("Suspended")
    }

    /// Whether `jobDeploymentStatus` is `deployment`.
    pub fn is_in(&self, deployment: &str) -> bool {
        self.deployment.as_deref() == Some(deployment)
    }

    /// `deployment=Running job=RUNNING`
    pub fn pair(&self) -> String {
        format!(
            "deployment={} job={}",
            self.deployment.as_deref().unwrap_or("None"),
            self.job.as_deref().unwrap_or("None")
        )
    }
}

/// KubeRay `RayClusterStatus`, as written (an empty `state` stays `Some("")`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RayClusterStatus {
    /// `state`: `ready`, `suspended`, `failed` (deprecated upstream but still written).
    pub state: Option<String>,
    /// `readyWorkerReplicas`; counts terminating pods too.
    pub ready_workers: Option<i64>,
    /// `desiredWorkerReplicas`, for the spec the controller last reconciled.
    pub desired_workers: Option<i64>,
    pub conditions: Vec<Condition>,
}

impl RayClusterStatus {
    pub fn of(obj: &Json) -> RayClusterStatus {
        let status = obj.get("status");
        RayClusterStatus {
            state: text(status, "state"),
            ready_workers: int(status, "readyWorkerReplicas"),
            desired_workers: int(status, "desiredWorkerReplicas"),
            conditions: conditions(status),
        }
    }

    pub fn is_suspended(&self) -> bool {
        self.state.as_deref() == Some("suspended")
    }

    /// `state: ready`, which KubeRay never clears once set: see [`Self::ready_for`].
    pub fn says_ready(&self) -> bool {
        self.state.as_deref() == Some("ready")
    }

    /// Ready for a spec that asks for `workers` workers: state `ready`, desired and
    /// ready counts equal to `workers`, and the head pod ready
    /// (kuberay-and-apiserver-semantics §2.7).
    pub fn ready_for(&self, workers: i64) -> bool {
        self.says_ready()
            && self.desired_workers == Some(workers)
            && self.ready_workers == Some(workers)
            && self.head_pod_ready().is_some_and(Condition::is_true)
    }

    /// The `HeadPodReady` condition.
    pub fn head_pod_ready(&self) -> Option<&Condition> {
        find(&self.conditions, "HeadPodReady")
    }
}

/// batch/v1 `JobStatus`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobStatus {
    /// Pods running (or pending); 0 when unset.
    pub active: i64,
    /// Pods with `Ready=True`; 0 when unset.
    pub ready: i64,
    pub conditions: Vec<Condition>,
}

impl JobStatus {
    pub fn of(obj: &Json) -> JobStatus {
        let status = obj.get("status");
        JobStatus {
            active: int(status, "active").unwrap_or(0),
            ready: int(status, "ready").unwrap_or(0),
            conditions: conditions(status),
        }
    }

    /// The condition `kind` when it is `True`.
    fn true_condition(&self, kind: &str) -> Option<&Condition> {
        self.conditions
            .iter()
            .find(|c| c.kind == kind && c.is_true())
    }

    /// `Complete=True`.
    pub fn succeeded(&self) -> bool {
        self.true_condition("Complete").is_some()
    }

    /// The `Failed=True` condition (its reason says why).
    pub fn failed(&self) -> Option<&Condition> {
        self.true_condition("Failed")
    }

    /// Succeeded or failed: the Job controller starts no more pods.
    pub fn is_finished(&self) -> bool {
        self.succeeded() || self.failed().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rayjob(deployment: &str) -> RayJobStatus {
        RayJobStatus::of(&json!({"status": {"jobDeploymentStatus": deployment}}))
    }

    #[test]
    fn rayjob_terminal_set_is_kuberays() {
        for s in ["Complete", "Failed", "ValidationFailed"] {
            assert!(rayjob(s).is_terminal(), "{s}");
        }
        // Issue 14 item 5: under Kueue a RayJob waits in Suspended for admission.
        for s in [
            "New",
            "Initializing",
            "Waiting",
            "Running",
            "Suspending",
            "Suspended",
            "Retrying",
            "Something we do not know",
            "",
        ] {
            assert!(!rayjob(s).is_terminal(), "{s}");
        }
        assert!(rayjob("Suspended").is_suspended());
        assert!(!rayjob("Suspending").is_suspended());
    }

    #[test]
    fn rayjob_fields_and_missing_status() {
        let s = RayJobStatus::of(&json!({"status": {
            "jobDeploymentStatus": "Running", "jobStatus": "RUNNING", "rayClusterName": "rc",
            "jobId": "", "message": "m", "endTime": "2026-01-01T00:00:00Z"}}));
        assert_eq!(
            s,
            RayJobStatus {
                deployment: Some("Running".into()),
                job: Some("RUNNING".into()),
                cluster: Some("rc".into()),
                job_id: None,
                message: Some("m".into()),
                end_time: Some("2026-01-01T00:00:00Z".into()),
            }
        );
        assert_eq!(s.pair(), "deployment=Running job=RUNNING");
        assert!(s.is_in("Running"));
        let none = RayJobStatus::of(&json!({"metadata": {"name": "j"}}));
        assert_eq!(none, RayJobStatus::default());
        assert!(!none.is_terminal() && !none.is_suspended());
        assert_eq!(none.pair(), "deployment=None job=None");
        // A field of the wrong type reads as unset.
        let odd = RayJobStatus::of(&json!({"status": {"jobDeploymentStatus": 3}}));
        assert_eq!(odd.deployment, None);
    }

    #[test]
    fn raycluster_ready_needs_the_counts_and_the_head() {
        let rc = |state: &str, desired: i64, ready: i64, head: &str| {
            RayClusterStatus::of(&json!({"status": {"state": state,
                "desiredWorkerReplicas": desired, "readyWorkerReplicas": ready,
                "conditions": [{"type": "HeadPodReady", "status": head, "reason": "R"}]}}))
        };
        assert!(rc("ready", 2, 2, "True").ready_for(2));
        assert!(!rc("ready", 1, 1, "True").ready_for(2));
        assert!(!rc("ready", 2, 2, "False").ready_for(2));
        assert!(!rc("", 2, 2, "True").ready_for(2));
        assert!(rc("suspended", 0, 0, "False").is_suspended());
        let head = rc("ready", 0, 0, "False");
        assert_eq!(
            head.head_pod_ready().and_then(|c| c.reason.as_deref()),
            Some("R")
        );
        let none = RayClusterStatus::of(&json!({}));
        assert_eq!(none, RayClusterStatus::default());
        assert!(!none.ready_for(0) && !none.is_suspended());
    }

    #[test]
    fn job_outcomes() {
        let job =
            |conds: Json| JobStatus::of(&json!({"status": {"active": 1, "conditions": conds}}));
        let done = job(json!([{"type": "Complete", "status": "True"}]));
        assert!(done.succeeded() && done.is_finished() && done.failed().is_none());
        let failed =
            job(json!([{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]));
        assert!(!failed.succeeded() && failed.is_finished());
        assert_eq!(
            failed.failed().and_then(|c| c.reason.as_deref()),
            Some("BackoffLimitExceeded")
        );
        // A condition that is not True, or one we do not know, decides nothing.
        let pending =
            job(json!([{"type": "Failed", "status": "False"}, {"type": "Odd", "status": "True"}]));
        assert!(!pending.is_finished());
        assert_eq!(pending.active, 1);
        let none = JobStatus::of(&json!({"metadata": {}}));
        assert_eq!(none, JobStatus::default());
        assert!(!none.is_finished());
    }
}
