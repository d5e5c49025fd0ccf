//! Typed, read-only views of the `status` of the objects nrl waits on: KubeRay v1.5.1
//! `RayJob` and `RayCluster` (`ray-operator/apis/ray/v1/{rayjob,raycluster}_types.go`),
//! batch/v1 `Job`, core/v1 `Pod` and apps/v1 `Deployment`. Each status field is read here and nowhere else; the facts
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
    /// `reason`: why it failed (`AppFailed`, `SubmissionFailed`, `DeadlineExceeded`, …).
    pub reason: Option<String>,
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
            reason: s("reason"),
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
        // The counters are Go `int32` with `omitempty` (ray-operator v1.5.1
        // apis/ray/v1/raycluster_types.go `RayClusterStatus`): a status the controller wrote
        // without them means 0 — a cluster with no workers never shows them.
        let count = |key| int(status, key).or_else(|| status.filter(|s| s.is_object()).map(|_| 0));
        RayClusterStatus {
            state: text(status, "state"),
            ready_workers: count("readyWorkerReplicas"),
            desired_workers: count("desiredWorkerReplicas"),
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

/// How a container terminated (`state.terminated`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Terminated {
    pub exit_code: Option<i64>,
    pub reason: Option<String>,
    /// What the runtime said (`message`), when anything.
    pub message: Option<String>,
}

/// Why a container waits (`state.waiting`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Waiting {
    pub reason: Option<String>,
    pub message: Option<String>,
}

/// One entry of a pod's `containerStatuses` or `initContainerStatuses`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerStatus {
    pub name: String,
    pub ready: bool,
    /// `restartCount`; 0 when unset.
    pub restart_count: i64,
    pub waiting: Option<Waiting>,
    /// `state.running` is set.
    pub running: bool,
    pub terminated: Option<Terminated>,
    /// `lastState.terminated`: how the previous run of a restarted container ended
    /// (where an OOMKilled or crashing container's exit is while it backs off).
    pub last_terminated: Option<Terminated>,
    /// `image`, as the kubelet reports it.
    pub image: Option<String>,
}

impl ContainerStatus {
    /// Running or terminated: it has a log.
    pub fn has_started(&self) -> bool {
        self.running || self.terminated.is_some()
    }
}

fn container_statuses(status: Option<&Json>, key: &str) -> Vec<ContainerStatus> {
    let Some(list) = status.and_then(|s| s.get(key)).and_then(Json::as_array) else {
        return Vec::new();
    };
    // Every entry is kept (a malformed one as the default) so indices match the list.
    list.iter()
        .map(|c| {
            let state = c.get("state");
            let part = |name: &str| state.and_then(|s| s.get(name)).filter(|v| v.is_object());
            let terminated = |t: &Json| Terminated {
                exit_code: int(Some(t), "exitCode"),
                reason: text(Some(t), "reason"),
                message: text(Some(t), "message"),
            };
            let last = c
                .get("lastState")
                .and_then(|s| s.get("terminated"))
                .filter(|v| v.is_object());
            let c = Some(c);
            ContainerStatus {
                name: text(c, "name").unwrap_or_default(),
                ready: c.and_then(|c| c.get("ready")).and_then(Json::as_bool) == Some(true),
                restart_count: int(c, "restartCount").unwrap_or(0),
                waiting: part("waiting").map(|w| Waiting {
                    reason: text(Some(w), "reason"),
                    message: text(Some(w), "message"),
                }),
                running: part("running").is_some(),
                terminated: part("terminated").map(terminated),
                last_terminated: last.map(terminated),
                image: text(c, "image"),
            }
        })
        .collect()
}

/// core/v1 `PodStatus`, as written (an empty `phase` stays `Some("")`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodStatus {
    /// `phase`: `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    pub phase: Option<String>,
    /// `reason`: why the pod is in this phase (`Evicted`, …).
    pub reason: Option<String>,
    pub conditions: Vec<Condition>,
    /// `containerStatuses`
    pub containers: Vec<ContainerStatus>,
    /// `initContainerStatuses`
    pub init_containers: Vec<ContainerStatus>,
    /// `message`: the kubelet's words for `reason` (an eviction's cause).
    pub message: Option<String>,
    /// `resourceClaimStatuses[].resourceClaimName`: the DRA claims made for the pod.
    pub resource_claims: Vec<String>,
}

impl PodStatus {
    pub fn of(obj: &Json) -> PodStatus {
        let status = obj.get("status");
        let resource_claims = status
            .and_then(|s| s.get("resourceClaimStatuses"))
            .and_then(Json::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|c| c.get("resourceClaimName").and_then(Json::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        PodStatus {
            phase: text(status, "phase"),
            reason: text(status, "reason"),
            conditions: conditions(status),
            containers: container_statuses(status, "containerStatuses"),
            init_containers: container_statuses(status, "initContainerStatuses"),
            message: text(status, "message"),
            resource_claims,
        }
    }

    pub fn is_running(&self) -> bool {
        self.phase.as_deref() == Some("Running")
    }

    /// `Succeeded` or `Failed`: its containers will not run again.
    pub fn is_finished(&self) -> bool {
        matches!(self.phase.as_deref(), Some("Succeeded" | "Failed"))
    }

    /// Running with condition `Ready` True (KubeRay `utils/util.go: IsRunningAndReady`).
    pub fn is_ready(&self) -> bool {
        self.is_running() && find(&self.conditions, "Ready").is_some_and(Condition::is_true)
    }

    /// The `PodScheduled=False` condition: the scheduler found no node (its reason and
    /// message say why).
    pub fn unschedulable(&self) -> Option<&Condition> {
        self.conditions
            .iter()
            .find(|c| c.kind == "PodScheduled" && c.status == "False")
    }

    /// The status of the (main) container `name`.
    pub fn container(&self, name: &str) -> Option<&ContainerStatus> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// Main containers, then init containers.
    pub fn all_containers(&self) -> impl Iterator<Item = &ContainerStatus> {
        self.containers.iter().chain(&self.init_containers)
    }

    /// Whether the main or init container `name` has started (so it has a log).
    pub fn container_started(&self, name: &str) -> bool {
        self.all_containers()
            .any(|c| c.name == name && c.has_started())
    }

    /// How the first listed main container terminated, if it did.
    pub fn first_container_terminated(&self) -> Option<&Terminated> {
        self.containers.first()?.terminated.as_ref()
    }

    /// The first waiting reason among the main containers.
    pub fn waiting_reason(&self) -> Option<&str> {
        self.containers
            .iter()
            .find_map(|c| c.waiting.as_ref()?.reason.as_deref())
    }

    /// Restarts of the main containers, summed.
    pub fn restarts(&self) -> i64 {
        self.containers.iter().map(|c| c.restart_count).sum()
    }
}

/// apps/v1 `DeploymentStatus`; counts are 0 when unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeploymentStatus {
    pub observed_generation: i64,
    /// Pods of any template (old and new).
    pub replicas: i64,
    /// Pods of the current template.
    pub updated_replicas: i64,
    pub available_replicas: i64,
    pub conditions: Vec<Condition>,
}

/// Where a Deployment's rollout stands ([`DeploymentStatus::rollout`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rollout {
    /// The controller has not observed the current `metadata.generation` yet.
    SpecNotObserved,
    /// `Progressing` has reason `ProgressDeadlineExceeded`: it will not finish by itself.
    DeadlineExceeded,
    /// Fewer pods of the new template than `spec.replicas`.
    Updating {
        updated: i64,
        want: i64,
    },
    /// Old pods still running.
    OldReplicasLeft(i64),
    /// New pods not yet available.
    Unavailable {
        available: i64,
        updated: i64,
    },
    Complete,
}

impl DeploymentStatus {
    pub fn of(obj: &Json) -> DeploymentStatus {
        let status = obj.get("status");
        let count = |key: &str| int(status, key).unwrap_or(0);
        DeploymentStatus {
            observed_generation: count("observedGeneration"),
            replicas: count("replicas"),
            updated_replicas: count("updatedReplicas"),
            available_replicas: count("availableReplicas"),
            conditions: conditions(status),
        }
    }

    /// The rollout of the spec at `generation` asking for `want` replicas, in the order
    /// `kubectl rollout status` checks (kubectl `pkg/polymorphichelpers/rollout_status.go:
    /// DeploymentStatusViewer.Status`): generation observed, progress deadline, updated,
    /// old replicas gone, updated available. Complete is what
    /// <https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#complete-deployment>
    /// defines: all replicas updated and available, no old ones running.
    pub fn rollout(&self, generation: i64, want: i64) -> Rollout {
        if generation > self.observed_generation {
            return Rollout::SpecNotObserved;
        }
        if find(&self.conditions, "Progressing").and_then(|c| c.reason.as_deref())
            == Some("ProgressDeadlineExceeded")
        {
            return Rollout::DeadlineExceeded;
        }
        let (updated, replicas, available) = (
            self.updated_replicas,
            self.replicas,
            self.available_replicas,
        );
        if updated < want {
            Rollout::Updating { updated, want }
        } else if replicas > updated {
            Rollout::OldReplicasLeft(replicas - updated)
        } else if available < updated {
            Rollout::Unavailable { available, updated }
        } else {
            Rollout::Complete
        }
    }
}

/// A Node's `status.allocatable`: what the scheduler may place on it, by resource name.
pub fn node_allocatable(obj: &Json) -> serde_json::Map<String, Json> {
    obj.get("status")
        .and_then(|s| s.get("allocatable"))
        .and_then(Json::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Whether a DRA ResourceClaim has been allocated (`status.allocation` is set).
pub fn claim_is_allocated(obj: &Json) -> bool {
    obj.get("status")
        .and_then(|s| s.get("allocation"))
        .is_some_and(|a| !a.is_null())
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
            "jobId": "", "message": "m", "reason": "AppFailed", "endTime": "2026-01-01T00:00:00Z"}}));
        assert_eq!(
            s,
            RayJobStatus {
                deployment: Some("Running".into()),
                job: Some("RUNNING".into()),
                cluster: Some("rc".into()),
                job_id: None,
                message: Some("m".into()),
                reason: Some("AppFailed".into()),
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

    /// The operator omits zero counters (Go `omitempty`): a ready cluster without workers
    /// has none of them, and is ready for 0 workers (it waited forever on the testbed).
    #[test]
    fn raycluster_without_workers_omits_the_counts_and_is_ready() {
        let rc = RayClusterStatus::of(&json!({"status": {"state": "ready",
            "conditions": [{"type": "HeadPodReady", "status": "True"}]}}));
        assert_eq!((rc.desired_workers, rc.ready_workers), (Some(0), Some(0)));
        assert!(rc.ready_for(0));
        assert!(!rc.ready_for(1));
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

    #[test]
    fn pod_phase_facts() {
        let pod = |phase: Json| PodStatus::of(&json!({"status": {"phase": phase}}));
        assert!(pod(json!("Running")).is_running());
        for p in ["Succeeded", "Failed"] {
            assert!(
                pod(json!(p)).is_finished() && !pod(json!(p)).is_running(),
                "{p}"
            );
        }
        // Unknown, empty or wrongly typed phases decide nothing.
        for p in [
            json!("Unknown"),
            json!("Evicting"),
            json!(""),
            json!(1),
            json!(null),
        ] {
            let s = pod(p.clone());
            assert!(!s.is_running() && !s.is_finished() && !s.is_ready(), "{p}");
        }
        assert_eq!(pod(json!("")).phase.as_deref(), Some(""));
        assert_eq!(pod(json!(1)).phase, None);
        let none = PodStatus::of(&json!({"metadata": {"name": "p"}}));
        assert_eq!(none, PodStatus::default());
        assert!(none.unschedulable().is_none() && none.first_container_terminated().is_none());
        assert_eq!((none.restarts(), none.waiting_reason()), (0, None));
        assert_eq!(
            PodStatus::of(&json!({"status": "Running"})),
            PodStatus::default()
        );
    }

    #[test]
    fn pod_ready_needs_running_and_the_ready_condition() {
        let pod = |phase: &str, ready: &str| {
            PodStatus::of(&json!({"status": {"phase": phase,
                "conditions": [{"type": "Ready", "status": ready}]}}))
        };
        assert!(pod("Running", "True").is_ready());
        assert!(!pod("Running", "False").is_ready());
        assert!(!pod("Running", "Unknown").is_ready());
        assert!(!pod("Pending", "True").is_ready());
        assert!(!PodStatus::of(&json!({"status": {"phase": "Running"}})).is_ready());
    }

    #[test]
    fn unschedulable_pods_say_why() {
        let s = PodStatus::of(&json!({"status": {"phase": "Pending", "conditions": [
            {"type": "Ready", "status": "False"},
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}}));
        let c = s
            .unschedulable()
            .map(|c| (c.reason.as_deref(), c.message.as_deref()));
        assert_eq!(
            c,
            Some((
                Some("Unschedulable"),
                Some("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")
            ))
        );
        let scheduled = PodStatus::of(&json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "True"}]}}));
        assert!(scheduled.unschedulable().is_none());
    }

    #[test]
    fn container_statuses() {
        let s = PodStatus::of(&json!({"status": {"phase": "Failed",
            "initContainerStatuses": [{"name": "init", "state": {"terminated": {"exitCode": 0}}}],
            "containerStatuses": [
                {"name": "main", "ready": false, "restartCount": 2,
                 "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}},
                {"name": "side", "ready": true, "restartCount": "x",
                 "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}}},
                {"name": "up", "state": {"running": {"startedAt": "t"}}},
                "not an object"]}}));
        assert_eq!(
            s.first_container_terminated(),
            Some(&Terminated {
                exit_code: Some(137),
                reason: Some("OOMKilled".into()),
                message: None,
            })
        );
        assert_eq!(s.restarts(), 2);
        assert_eq!(s.waiting_reason(), Some("CrashLoopBackOff"));
        let side = s.container("side").cloned().unwrap_or_default();
        assert!(side.ready && !side.has_started());
        assert_eq!(
            side.waiting.and_then(|w| w.message).as_deref(),
            Some("back-off")
        );
        assert!(s.container_started("main") && s.container_started("up"));
        assert!(s.container_started("init") && !s.container_started("side"));
        assert!(!s.container_started("nope"));
        // The malformed entry is kept, so indices match the list.
        assert_eq!(s.containers.len(), 4);
        assert_eq!(s.containers[3], ContainerStatus::default());
        assert_eq!(
            s.all_containers()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["main", "side", "up", "", "init"]
        );
    }

    fn deployment(status: Json) -> DeploymentStatus {
        DeploymentStatus::of(&json!({"status": status}))
    }

    #[test]
    fn deployment_rollout_edge_cases() {
        let full = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                          "availableReplicas": 2});
        assert_eq!(deployment(full.clone()).rollout(2, 2), Rollout::Complete);
        // observedGeneration behind generation: the counts describe the old spec.
        assert_eq!(
            deployment(full.clone()).rollout(3, 2),
            Rollout::SpecNotObserved
        );
        assert_eq!(
            deployment(
                json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 1,
                              "availableReplicas": 3})
            )
            .rollout(2, 2),
            Rollout::Updating {
                updated: 1,
                want: 2
            }
        );
        assert_eq!(
            deployment(
                json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 2,
                              "availableReplicas": 3})
            )
            .rollout(2, 2),
            Rollout::OldReplicasLeft(1)
        );
        assert_eq!(
            deployment(
                json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                              "availableReplicas": 1})
            )
            .rollout(2, 2),
            Rollout::Unavailable {
                available: 1,
                updated: 2
            }
        );
        let stuck = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
            "availableReplicas": 2, "conditions": [
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]});
        assert_eq!(deployment(stuck).rollout(2, 2), Rollout::DeadlineExceeded);
        // Scaled to zero: complete with nothing running.
        assert_eq!(
            deployment(json!({"observedGeneration": 1})).rollout(1, 0),
            Rollout::Complete
        );
        // No status yet (or counts of the wrong type): nothing observed, nothing updated.
        assert_eq!(deployment(json!(null)), DeploymentStatus::default());
        assert_eq!(
            DeploymentStatus::of(&json!({})).rollout(1, 1),
            Rollout::SpecNotObserved
        );
        assert_eq!(
            deployment(json!({"observedGeneration": "1", "updatedReplicas": "1"})).rollout(0, 1),
            Rollout::Updating {
                updated: 0,
                want: 1
            }
        );
    }
}
