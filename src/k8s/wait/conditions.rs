//! Named wait conditions, in the style of kube-runtime's `wait::conditions`: each tests
//! only the watched object's state (`None` while it does not exist), through the typed
//! status views of [`crate::k8s::status`]. Combine them with [`Condition::or`]; wait on
//! one with [`K8s::wait_until`](crate::k8s::K8s::wait_until). Waits that can also fail
//! (a suspended RayCluster, a terminated pod) are verdict functions in `k8s::wait`.

use serde_json::Value as Json;

use crate::k8s::status::{JobStatus, PodStatus, RayJobStatus};

/// A test of a watched object's state.
pub trait Condition {
    fn matches(&self, obj: Option<&Json>) -> bool;

    /// Either condition holds.
    fn or<C: Condition>(self, other: C) -> Or<Self, C>
    where
        Self: Sized,
    {
        Or(self, other)
    }
}

impl<F: Fn(Option<&Json>) -> bool> Condition for F {
    fn matches(&self, obj: Option<&Json>) -> bool {
        self(obj)
    }
}

/// See [`Condition::or`].
pub struct Or<A, B>(A, B);

impl<A: Condition, B: Condition> Condition for Or<A, B> {
    fn matches(&self, obj: Option<&Json>) -> bool {
        self.0.matches(obj) || self.1.matches(obj)
    }
}

/// The object exists.
pub fn exists() -> impl Condition + Clone + Send + 'static {
    |o: Option<&Json>| o.is_some()
}

/// The object is gone.
pub fn deleted() -> impl Condition + Clone + Send + 'static {
    |o: Option<&Json>| o.is_none()
}

/// RayJob: its `jobDeploymentStatus` is terminal ([`RayJobStatus::is_terminal`]).
pub fn rayjob_finished() -> impl Condition + Clone + Send + 'static {
    |o: Option<&Json>| o.is_some_and(|o| RayJobStatus::of(o).is_terminal())
}

/// RayJob: its `jobDeploymentStatus` is `deployment`.
pub fn rayjob_in(deployment: &'static str) -> impl Condition + Clone + Send + 'static {
    move |o: Option<&Json>| o.is_some_and(|o| RayJobStatus::of(o).is_in(deployment))
}

/// batch/v1 Job: `Complete` or `Failed` ([`JobStatus::is_finished`]).
pub fn job_finished() -> impl Condition + Clone + Send + 'static {
    |o: Option<&Json>| o.is_some_and(|o| JobStatus::of(o).is_finished())
}

/// batch/v1 Job: it has active pods, or a condition (finished, suspended): either way
/// its pods can be looked for.
pub fn job_started() -> impl Condition + Clone + Send + 'static {
    |o: Option<&Json>| {
        o.is_some_and(|o| {
            let s = JobStatus::of(o);
            s.active > 0 || !s.conditions.is_empty()
        })
    }
}

/// Pod: phase `Running` ([`PodStatus::is_running`]).
pub fn pod_running() -> impl Condition + Clone + Send + 'static {
    |o: Option<&Json>| o.is_some_and(|o| PodStatus::of(o).is_running())
}

/// Pod: phase `Succeeded` or `Failed` ([`PodStatus::is_finished`]).
pub fn pod_finished() -> impl Condition + Clone + Send + 'static {
    |o: Option<&Json>| o.is_some_and(|o| PodStatus::of(o).is_finished())
}

/// Pod: Running and `Ready=True` ([`PodStatus::is_ready`]).
pub fn pod_ready() -> impl Condition + Clone + Send + 'static {
    |o: Option<&Json>| o.is_some_and(|o| PodStatus::of(o).is_ready())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rayjob(deployment: &str) -> Json {
        json!({"status": {"jobDeploymentStatus": deployment}})
    }

    #[test]
    fn rayjob_conditions() {
        let finished = rayjob_finished();
        for s in ["Complete", "Failed", "ValidationFailed"] {
            assert!(finished.matches(Some(&rayjob(s))), "{s}");
        }
        for s in ["Running", "Suspended", "Waiting", "Unknown", ""] {
            assert!(!finished.matches(Some(&rayjob(s))), "{s}");
        }
        assert!(!finished.matches(None));
        assert!(!finished.matches(Some(&json!({}))));
        let waiting = rayjob_finished().or(rayjob_in("Waiting"));
        assert!(waiting.matches(Some(&rayjob("Waiting"))));
        assert!(waiting.matches(Some(&rayjob("Failed"))));
        assert!(!waiting.matches(Some(&rayjob("Initializing"))));
        assert!(!waiting.matches(None));
    }

    #[test]
    fn existence_conditions() {
        let o = json!({});
        assert!(exists().matches(Some(&o)) && !exists().matches(None));
        assert!(deleted().matches(None) && !deleted().matches(Some(&o)));
        assert!(deleted().or(rayjob_in("Running")).matches(None));
    }

    #[test]
    fn job_conditions() {
        let job = |status: Json| json!({"status": status});
        let complete = job(json!({"conditions": [{"type": "Complete", "status": "True"}]}));
        let failed = job(json!({"conditions": [{"type": "Failed", "status": "True"}]}));
        let active = job(json!({"active": 1}));
        assert!(job_finished().matches(Some(&complete)));
        assert!(job_finished().matches(Some(&failed)));
        assert!(!job_finished().matches(Some(&active)));
        assert!(!job_finished().matches(None));
        assert!(job_started().matches(Some(&active)));
        assert!(job_started().matches(Some(&failed)));
        assert!(!job_started().matches(Some(&job(json!({"active": 0})))));
        assert!(!job_started().matches(None));
    }

    #[test]
    fn pod_conditions() {
        let pod = |phase: &str, ready: &str| json!({"status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]}});
        assert!(pod_running().matches(Some(&pod("Running", "False"))));
        assert!(!pod_running().matches(Some(&pod("Pending", "False"))));
        assert!(pod_ready().matches(Some(&pod("Running", "True"))));
        assert!(!pod_ready().matches(Some(&pod("Running", "False"))));
        assert!(!pod_ready().matches(Some(&pod("Succeeded", "True"))));
        for p in ["Succeeded", "Failed"] {
            assert!(pod_finished().matches(Some(&pod(p, "False"))), "{p}");
        }
        for p in ["Running", "Pending", "Unknown", ""] {
            assert!(!pod_finished().matches(Some(&pod(p, "False"))), "{p}");
        }
        let no_status = json!({"metadata": {"name": "p"}});
        for c in [
            pod_running().matches(Some(&no_status)),
            pod_ready().matches(Some(&no_status)),
            pod_finished().matches(Some(&no_status)),
        ] {
            assert!(!c);
        }
        assert!(!pod_running().matches(None) && !pod_finished().matches(None));
        assert!(
            pod_running()
                .or(pod_finished())
                .matches(Some(&pod("Failed", "False")))
        );
    }
}
