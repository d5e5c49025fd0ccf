//! Named wait conditions of `k8s::wait` (`"exists"`, `"deleted"`, `"ready"`,
//! `"terminal"`) as verdict functions over the watched object.

use rhai::EvalAltResult;
use serde_json::Value as Json;

use crate::diag::Diag;
use crate::k8s::status::{JobStatus, PodStatus};
use crate::k8s::wait::conditions::{
    Condition, deleted, exists, job_finished, pod_finished, rayjob_finished,
};
use crate::k8s::wait::{Verdict, deployment_available, raycluster_ready};
use crate::script::errors::{RhaiResult, usage};

pub type Check = Box<dyn FnMut(Option<&Json>) -> Verdict<Option<Json>> + Send>;

/// The verdict function for a named condition on a kind.
pub fn condition_check(kind: &str, condition: &str) -> RhaiResult<Check> {
    let done = |o: Option<&Json>| Verdict::Done(o.cloned());
    let check: Check = match condition {
        "exists" => when(exists()),
        "deleted" => when(deleted()),
        "ready" => match kind {
            "RayCluster" => Box::new(|o| map_verdict(raycluster_ready(o))),
            "Deployment" => Box::new(|o| map_verdict(deployment_available(o))),
            "Pod" => {
                Box::new(
                    move |o| match o.map(PodStatus::of).and_then(|s| s.phase).as_deref() {
                        Some("Running" | "Succeeded") => done(o),
                        Some("Failed") => {
                            Verdict::Fail(Diag::api("nrl::k8s::pod_failed", "the pod failed"))
                        }
                        _ => Verdict::Pending,
                    },
                )
            }
            "Job" => Box::new(job_complete),
            _ => return Err(no_condition(kind, condition)),
        },
        "terminal" => match kind {
            "RayJob" => when(rayjob_finished()),
            "Job" => when(job_finished()),
            "Pod" => when(pod_finished()),
            _ => return Err(no_condition(kind, condition)),
        },
        _ => {
            return Err(usage(
                "nrl::script::condition",
                format!("unknown wait condition `{condition}`"),
                "the conditions are \"exists\", \"deleted\", \"ready\", \"terminal\", or pass a closure |obj| -> bool",
            ));
        }
    };
    Ok(check)
}

fn map_verdict(v: Verdict<Json>) -> Verdict<Option<Json>> {
    match v {
        Verdict::Pending => Verdict::Pending,
        Verdict::Done(o) => Verdict::Done(Some(o)),
        Verdict::Fail(d) => Verdict::Fail(d),
    }
}

/// A check that is done (with the object) once `condition` holds.
fn when(condition: impl Condition + Send + 'static) -> Check {
    Box::new(move |o| {
        if condition.matches(o) {
            Verdict::Done(o.cloned())
        } else {
            Verdict::Pending
        }
    })
}

/// batch/v1 Job: complete; a failed Job fails the wait.
fn job_complete(o: Option<&Json>) -> Verdict<Option<Json>> {
    let Some(obj) = o else {
        return Verdict::Pending;
    };
    let status = JobStatus::of(obj);
    if status.succeeded() {
        Verdict::Done(Some(obj.clone()))
    } else if status.failed().is_some() {
        Verdict::Fail(Diag::api("nrl::k8s::job_failed", "the Job failed"))
    } else {
        Verdict::Pending
    }
}

fn no_condition(kind: &str, condition: &str) -> Box<EvalAltResult> {
    usage(
        "nrl::script::condition",
        format!("`{condition}` is not defined for {kind}"),
        "\"ready\": RayCluster, Deployment, Pod, Job; \"terminal\": RayJob, Job, Pod; or pass a closure",
    )
}
