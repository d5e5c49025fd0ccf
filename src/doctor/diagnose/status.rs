//! The RayJob's and RayCluster's own states (kuberay-and-apiserver-semantics §1.2, §1.3,
//! §2.2, §2.3): `ValidationFailed` (never left), `Failed` with its reason, `Suspended`, and
//! a RayCluster that is not ready.

use serde_json::Value as Json;

use super::{Evidence, Snapshot};
use crate::doctor::Finding;
use crate::doctor::rules::{
    RAYCLUSTER_NOT_READY, RAYJOB_FAILED, RAYJOB_NOT_FOUND, RAYJOB_SUSPENDED,
    RAYJOB_VALIDATION_FAILED,
};
use crate::k8s::status::{PodStatus, RayClusterStatus, RayJobStatus};
use crate::launch::inspect::ClusterPods;

/// Events KubeRay writes about the object itself (`Invalid…`, `RayClusterNotFound`, …).
fn object_events(snap: &Snapshot, kind: &str, name: &str) -> Vec<String> {
    snap.events_of(kind, name, None)
        .into_iter()
        .filter(|e| e.warning)
        .map(|e| e.note(kind, name))
        .collect()
}

pub(super) fn rayjob(snap: &Snapshot, out: &mut Vec<Finding>) {
    let Some(name) = &snap.rayjob_name else {
        return;
    };
    let ns = &snap.namespace;
    let Some(rj) = &snap.rayjob else {
        out.push(
            Finding::new(
                RAYJOB_NOT_FOUND,
                format!("RayJob {name} does not exist in namespace `{ns}`"),
            )
            .fix("check the namespace and context (`--context`, `-n`); a RayJob deleted by its TTL takes its cluster and pods with it")
            .note(format!("looked for: RayJob {name} in namespace `{ns}`")),
        );
        return;
    };
    let s = RayJobStatus::of(rj);
    let reason = s.reason.as_deref();
    let message = s.message.clone().unwrap_or_default();
    let events = object_events(snap, "RayJob", name);
    let finding = match s.deployment.as_deref() {
        Some("ValidationFailed") => Some(
            Finding::new(
                RAYJOB_VALIDATION_FAILED,
                format!("KubeRay refused RayJob {name}: {message}"),
            )
            .fix("fix the spec, then delete and re-create the RayJob: KubeRay never leaves ValidationFailed, even after the spec is fixed (`nrl check` runs the same validation before launch)"),
        ),
        Some("Failed") => {
            let why = match reason {
                Some("DeadlineExceeded") => {
                    "activeDeadlineSeconds passed before the job ended".to_string()
                }
                Some("SubmissionFailed") => "the job submission failed".to_string(),
                Some("AppFailed") => "the Ray job failed".to_string(),
                Some(r) => r.to_string(),
                None => "no reason given".to_string(),
            };
            let mut f = Finding::new(
                RAYJOB_FAILED,
                format!(
                    "RayJob {name} failed ({why}){}",
                    if message.is_empty() {
                        String::new()
                    } else {
                        format!(": {message}")
                    }
                ),
            )
            .fix("the driver log says why the job failed (`nrl job logs RUN_ID`); findings from it are listed here when it is reachable");
            if let Some(r) = reason {
                f = f.note(format!("status.reason: {r}, status.jobStatus: {}", s.job.as_deref().unwrap_or("None")));
            }
            Some(f)
        }
        Some("Suspended" | "Suspending") => Some(
            Finding::new(
                RAYJOB_SUSPENDED,
                format!("RayJob {name} is {} (spec.suspend: true): no cluster runs until it is resumed", s.deployment.as_deref().unwrap_or("")),
            )
            .fix("under Kueue it waits for admission (`kubectl get workloads`); otherwise set `spec.suspend: false`"),
        ),
        _ => None,
    };
    if let Some(mut f) = finding {
        f = f.note(format!("RayJob {name}: {}", s.pair()));
        for e in events {
            f = f.note(e);
        }
        out.push(f);
    }
}

/// Whether the RayJob is over (its cluster may be gone on purpose).
pub(super) fn rayjob_over(snap: &Snapshot) -> bool {
    snap.rayjob
        .as_ref()
        .is_some_and(|rj| RayJobStatus::of(rj).is_terminal())
}

pub(super) fn cluster(snap: &Snapshot, c: &super::ClusterData, out: &mut Vec<Finding>) {
    let ns = &snap.namespace;
    let Some(rc) = &c.object else {
        if !rayjob_over(snap) && !snap.suspended() {
            out.push(
                Finding::new(
                    RAYJOB_NOT_FOUND,
                    format!("RayCluster {} does not exist in namespace `{ns}`", c.name),
                )
                .fix("bring it up (`nrl cluster up`), or check the namespace and context"),
            );
        }
        return;
    };
    let status = RayClusterStatus::of(rc);
    let desired = status
        .desired_workers
        .unwrap_or_else(|| crate::k8s::wait::desired_workers(rc));
    let alive: Vec<&Json> = c
        .pods
        .iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .collect();
    let pods_ready =
        alive.len() as i64 == desired + 1 && alive.iter().all(|p| PodStatus::of(p).is_ready());
    if status.ready_for(desired) && pods_ready {
        return;
    }
    if rayjob_over(snap) {
        return;
    }
    let split = ClusterPods::split(&c.pods);
    let ready_workers = alive
        .iter()
        .filter(|p| {
            p.pointer("/metadata/labels/ray.io~1node-type")
                .and_then(Json::as_str)
                != Some("head")
                && PodStatus::of(p).is_ready()
        })
        .count();
    let mut f = Finding::new(
        RAYCLUSTER_NOT_READY,
        format!(
            "RayCluster {} is not ready: {ready_workers} of {desired} workers ready{}",
            c.name,
            match status.head_pod_ready() {
                Some(h) if h.is_true() => ", head ready".to_string(),
                Some(h) => format!(
                    ", head not ready ({})",
                    h.reason.as_deref().unwrap_or("no reason")
                ),
                None => ", no head status yet".to_string(),
            }
        ),
    )
    .fix("the findings about its pods say why; a cluster whose pods all run but never turns ready has a failing readiness probe or Ray start (see the head's log: `nrl logs`)")
    .note(format!("pods: {}", split.summary()))
    .note(format!(
        "status.state: {}",
        status.state.as_deref().filter(|s| !s.is_empty()).unwrap_or("(none)")
    ));
    if let Some(h) = status.head_pod_ready()
        && !h.is_true()
        && let Some(m) = h.message.as_deref().filter(|m| !m.is_empty())
    {
        f = f.note(format!("condition HeadPodReady=False: {m}"));
    }
    if let Some(rf) = status
        .conditions
        .iter()
        .find(|c| c.kind == "ReplicaFailure" && c.is_true())
    {
        f = f.note(format!(
            "condition ReplicaFailure ({}): {}",
            rf.reason.as_deref().unwrap_or(""),
            rf.message.as_deref().unwrap_or("")
        ));
    }
    // KubeRay writes no status for an invalid RayCluster: only its events say so (§2.1).
    for e in object_events(snap, "RayCluster", &c.name) {
        f = f.note(e);
    }
    out.push(f);
}

impl Evidence {
    /// `event FailedScheduling on pod rc-worker-0 (x12): …`
    pub fn note(&self, kind: &str, name: &str) -> String {
        let times = if self.count > 1 {
            format!(" (x{})", self.count)
        } else {
            String::new()
        };
        format!(
            "event {} on {} {name}{times}: {}",
            self.reason,
            kind.to_ascii_lowercase(),
            self.message
        )
    }
}
