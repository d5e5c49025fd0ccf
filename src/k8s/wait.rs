//! Waiting on objects with watches (never fixed-interval GETs) and explicit deadlines.
//!
//! One watch per wait, filtered to the object by name: the initial list tells whether it
//! exists, then only changes arrive. Transient watch failures (dropped connections, 410
//! Gone) are retried by kube-runtime's watcher with backoff, relisting when needed;
//! permission errors end the wait at once.

pub mod conditions;

use std::time::Duration;

use futures::StreamExt;
use kube::discovery::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value as Json;

use super::client::K8s;
use super::errors::{Action, human, to_diag};
use super::objects::Propagation;
use super::status::{DeploymentStatus, PodStatus, RayClusterStatus, Rollout};
use crate::diag::{Diag, Result};
use conditions::Condition;

/// What a check decides after seeing the object's current state.
pub enum Verdict<T> {
    /// Keep waiting.
    Pending,
    Done(T),
    Fail(Diag),
}

impl K8s {
    /// Watch `name` until `check` returns `Done`/`Fail` or `timeout` passes. `check` is
    /// called with every state the object goes through (`None` while it does not exist),
    /// so it can also report progress. `what` completes "waiting for <Kind> <name> to be …"
    /// in the timeout message.
    pub async fn wait_for<T>(
        &self,
        ar: &ApiResource,
        ns: &str,
        name: &str,
        timeout: Duration,
        what: &str,
        mut check: impl FnMut(Option<&Json>) -> Verdict<T>,
    ) -> Result<T> {
        let api = self.api(ar, ns);
        let cfg = watcher::Config::default()
            .fields(&format!("metadata.name={name}"))
            .timeout(self.watch_timeout_secs());
        let mut stream = Box::pin(watcher::watcher(api, cfg).default_backoff());
        let mut seen_in_init = false;
        // Whether the API has answered at all, and the last state seen.
        let mut answered = false;
        let mut last: Option<Json> = None;
        let mut last_error: Option<String> = None;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let next = tokio::time::timeout_at(deadline, stream.next()).await;
            let ev = match next {
                Err(_) => {
                    return Err(wait_timeout(
                        ar,
                        ns,
                        name,
                        timeout,
                        what,
                        answered,
                        last.as_ref(),
                        last_error,
                    ));
                }
                Ok(None) => {
                    return Err(Diag::api(
                        "nrl::k8s::watch",
                        format!("the watch on {} {name} ended unexpectedly", ar.kind),
                    ));
                }
                Ok(Some(ev)) => ev,
            };
            let state: Option<Option<Json>> = match ev {
                // Emitted before the list request is sent, so not yet an answer.
                Ok(Event::Init) => {
                    seen_in_init = false;
                    None
                }
                Ok(Event::InitApply(o)) => {
                    seen_in_init = true;
                    Some(serde_json::to_value(o).ok())
                }
                Ok(Event::InitDone) if !seen_in_init => Some(None),
                Ok(Event::InitDone) => {
                    answered = true;
                    None
                }
                Ok(Event::Apply(o)) => Some(serde_json::to_value(o).ok()),
                Ok(Event::Delete(_)) => Some(None),
                Err(e) => {
                    let (verb, ke) = match e {
                        watcher::Error::InitialListFailed(ke) => ("list", Some(ke)),
                        watcher::Error::WatchStartFailed(ke) | watcher::Error::WatchFailed(ke) => {
                            ("watch", Some(ke))
                        }
                        other => {
                            last_error = Some(other.to_string());
                            ("watch", None)
                        }
                    };
                    if let Some(ke) = ke {
                        // Refused, or an answer over the size limit: resuming cannot help.
                        if matches!(super::errors::status_code(&ke), Some(401 | 403))
                            || super::errors::is_too_large(&ke)
                        {
                            let action = Action::new(verb, &ar.plural, ns);
                            return Err(to_diag(ke, &action));
                        }
                        last_error = Some(ke.to_string());
                    }
                    // Anything else is transient: the watcher backs off, resumes from
                    // the last resourceVersion, and relists after 410 Gone.
                    tracing::debug!(error = ?last_error, "watch interrupted; resuming");
                    None
                }
            };
            if let Some(obj) = state {
                answered = true;
                last = obj.clone();
                match check(obj.as_ref()) {
                    Verdict::Pending => {}
                    Verdict::Done(t) => return Ok(t),
                    Verdict::Fail(d) => return Err(d),
                }
            }
        }
    }

    /// Watch the objects matching `labels` until `check` (called with all of them after
    /// the initial list and after every change) returns `Done`/`Fail` or `timeout`
    /// passes. `what` completes "waiting for <Kind>s `<labels>` … to be …".
    pub async fn wait_for_all<T>(
        &self,
        ar: &ApiResource,
        ns: &str,
        labels: &str,
        timeout: Duration,
        what: &str,
        mut check: impl FnMut(&[Json]) -> Verdict<T>,
    ) -> Result<T> {
        let api = self.api(ar, ns);
        let cfg = watcher::Config::default().labels(labels);
        let mut stream = Box::pin(watcher::watcher(api, cfg).default_backoff());
        let mut objects: std::collections::BTreeMap<String, Json> = Default::default();
        let mut listing: std::collections::BTreeMap<String, Json> = Default::default();
        let mut answered = false;
        let mut last_error: Option<String> = None;
        let deadline = tokio::time::Instant::now() + timeout;
        let key = |o: &Json| str_at(o, "/metadata/name").unwrap_or("").to_string();
        loop {
            let ev = match tokio::time::timeout_at(deadline, stream.next()).await {
                Err(_) => {
                    let listed: Vec<Json> = objects.values().cloned().collect();
                    let mut d = Diag::api(
                        "nrl::k8s::timeout",
                        format!(
                            "timed out after {} waiting for {}s `{labels}` in namespace `{ns}` to be {what} ({})",
                            human(timeout),
                            ar.kind,
                            if answered {
                                format!("{} seen", listed.len())
                            } else {
                                "the Kubernetes API never answered the watch".into()
                            }
                        ),
                    )
                    .help("raise --timeout, or inspect them with `nrl status`");
                    if let Some(e) = last_error {
                        d = d.note(format!("last error: {e}"));
                    }
                    return Err(d);
                }
                Ok(None) => {
                    return Err(Diag::api(
                        "nrl::k8s::watch",
                        format!("the watch on {}s `{labels}` ended unexpectedly", ar.kind),
                    ));
                }
                Ok(Some(ev)) => ev,
            };
            let changed = match ev {
                Ok(Event::Init) => {
                    listing.clear();
                    false
                }
                Ok(Event::InitApply(o)) => {
                    if let Ok(o) = serde_json::to_value(o) {
                        listing.insert(key(&o), o);
                    }
                    false
                }
                Ok(Event::InitDone) => {
                    answered = true;
                    objects = std::mem::take(&mut listing);
                    true
                }
                Ok(Event::Apply(o)) => {
                    if let Ok(o) = serde_json::to_value(o) {
                        objects.insert(key(&o), o);
                    }
                    true
                }
                Ok(Event::Delete(o)) => {
                    if let Ok(o) = serde_json::to_value(o) {
                        objects.remove(&key(&o));
                    }
                    true
                }
                Err(e) => {
                    let ke = match e {
                        watcher::Error::InitialListFailed(ke)
                        | watcher::Error::WatchStartFailed(ke)
                        | watcher::Error::WatchFailed(ke) => Some(ke),
                        other => {
                            last_error = Some(other.to_string());
                            None
                        }
                    };
                    if let Some(ke) = ke {
                        if matches!(super::errors::status_code(&ke), Some(401 | 403))
                            || super::errors::is_too_large(&ke)
                        {
                            return Err(to_diag(ke, &Action::new("watch", &ar.plural, ns)));
                        }
                        last_error = Some(ke.to_string());
                    }
                    false
                }
            };
            if changed {
                let all: Vec<Json> = objects.values().cloned().collect();
                match check(&all) {
                    Verdict::Pending => {}
                    Verdict::Done(t) => return Ok(t),
                    Verdict::Fail(d) => return Err(d),
                }
            }
        }
    }

    /// Watch `name` until `condition` holds or `timeout` passes; returns the object as it
    /// was then (`None` when it does not exist). See [`Self::wait_for`].
    pub async fn wait_until(
        &self,
        ar: &ApiResource,
        ns: &str,
        name: &str,
        timeout: Duration,
        what: &str,
        condition: impl Condition,
    ) -> Result<Option<Json>> {
        self.wait_for(ar, ns, name, timeout, what, |o| {
            if condition.matches(o) {
                Verdict::Done(o.cloned())
            } else {
                Verdict::Pending
            }
        })
        .await
    }

    /// Wait until the object is gone.
    pub async fn wait_deleted(
        &self,
        ar: &ApiResource,
        ns: &str,
        name: &str,
        timeout: Duration,
    ) -> Result<()> {
        self.wait_until(ar, ns, name, timeout, "deleted", conditions::deleted())
            .await
            .map(drop)
    }

    /// Delete with foreground propagation and wait until the object is gone, which then
    /// means its dependents (pods) are gone too. Returns whether it existed.
    pub async fn delete_and_wait(
        &self,
        ar: &ApiResource,
        ns: &str,
        name: &str,
        timeout: Duration,
    ) -> Result<bool> {
        let existed = self
            .delete_with(ar, ns, name, Propagation::Foreground)
            .await?;
        if existed {
            self.wait_deleted(ar, ns, name, timeout).await?;
        }
        Ok(existed)
    }
}

#[allow(clippy::too_many_arguments)]
fn wait_timeout(
    ar: &ApiResource,
    ns: &str,
    name: &str,
    timeout: Duration,
    what: &str,
    answered: bool,
    last: Option<&Json>,
    last_error: Option<String>,
) -> Diag {
    let head = format!(
        "timed out after {} waiting for {} {name} in namespace `{ns}` to be {what}",
        human(timeout),
        ar.kind
    );
    if !answered {
        let mut d = Diag::api(
            "nrl::k8s::timeout",
            format!("{head}: the Kubernetes API never answered the watch"),
        )
        .help("the API server may be overloaded or unreachable; check the context (`--context`) and retry");
        if let Some(e) = last_error {
            d = d.note(format!("last error: {e}"));
        }
        return d;
    }
    let state = match last {
        None => "it does not exist".to_string(),
        Some(o) => match o.get("status") {
            Some(s) => format!("last status: {s}"),
            None => "it has no status yet".to_string(),
        },
    };
    Diag::api("nrl::k8s::timeout", format!("{head} ({state})"))
        .help("raise --timeout, or inspect it with `nrl status`")
}

/// Read a string at a JSON pointer.
pub fn str_at<'a>(o: &'a Json, ptr: &str) -> Option<&'a str> {
    o.pointer(ptr).and_then(Json::as_str)
}

fn int_at(o: &Json, ptr: &str) -> Option<i64> {
    o.pointer(ptr).and_then(Json::as_i64)
}

/// The worker count KubeRay wants for a RayCluster spec: per group `replicas` clamped to
/// `[minReplicas, maxReplicas]` (`maxReplicas` when min > max), times `numOfHosts`; a
/// suspended group counts 0. KubeRay v1.5.1 `ray-operator/controllers/ray/utils/util.go`:
/// `GetWorkerGroupDesiredReplicas`, `CalculateDesiredReplicas`; CRD defaults 0 /
/// 2147483647 / 1 (`ray.io_rayclusters.yaml`).
pub fn desired_workers(rc: &Json) -> i64 {
    let Some(groups) = rc
        .pointer("/spec/workerGroupSpecs")
        .and_then(Json::as_array)
    else {
        return 0;
    };
    groups
        .iter()
        .map(|g| {
            if g.get("suspend").and_then(Json::as_bool) == Some(true) {
                return 0;
            }
            let min = int_at(g, "/minReplicas").unwrap_or(0);
            let max = int_at(g, "/maxReplicas").unwrap_or(i64::from(i32::MAX));
            let replicas = int_at(g, "/replicas").unwrap_or(min);
            let n = if min > max {
                max
            } else if replicas < min {
                min
            } else {
                replicas.min(max)
            };
            n.saturating_mul(int_at(g, "/numOfHosts").unwrap_or(1))
        })
        .sum()
}

/// "state=ready, workers ready 1/2 (head: ContainersNotReady)": a RayCluster's progress
/// towards [`raycluster_ready`], against the worker count its spec asks for.
pub fn raycluster_progress(o: &Json) -> String {
    let status = RayClusterStatus::of(o);
    let mut s = format!(
        "state={}, workers ready {}/{}",
        status
            .state
            .as_deref()
            .filter(|s| !s.is_empty())
            .unwrap_or("pending"),
        status.ready_workers.unwrap_or(0),
        desired_workers(o),
    );
    if let Some(c) = status.head_pod_ready()
        && !c.is_true()
        && let Some(r) = c.reason.as_deref().filter(|r| !r.is_empty())
    {
        s.push_str(&format!(" (head: {r})"));
    }
    s
}

/// RayCluster: ready *for its current spec*. `status.state` alone proves nothing after an
/// update: KubeRay v1.5.1 never clears `ready` once set, and writes `observedGeneration`
/// only together with another status change (`raycluster_controller.go: calculateStatus`;
/// `utils/consistency.go: InconsistentRayClusterStatus`). So, as
/// kuberay-and-apiserver-semantics §2.7 derives: state `ready`, `desiredWorkerReplicas`
/// equal to the count computed from the spec ([`desired_workers`]), `readyWorkerReplicas`
/// equal to that, and condition `HeadPodReady` True ([`RayClusterStatus::ready_for`]).
/// The counters include terminating pods: after a scale-down also check the pods
/// ([`raycluster_pods_settled`]).
pub fn raycluster_ready(o: Option<&Json>) -> Verdict<Json> {
    let Some(o) = o else {
        return Verdict::Pending;
    };
    let status = RayClusterStatus::of(o);
    if status.is_suspended() {
        // Suspended clusters have no pods and will not become ready by themselves.
        return Verdict::Fail(
            Diag::api(
                "nrl::k8s::raycluster_suspended",
                format!(
                    "RayCluster {} is suspended",
                    str_at(o, "/metadata/name").unwrap_or("?")
                ),
            )
            .help("set `spec.suspend: false` on it (or delete it) and run again"),
        );
    }
    if status.ready_for(desired_workers(o)) {
        Verdict::Done(o.clone())
    } else {
        Verdict::Pending
    }
}

/// The pods of a RayCluster (`ray.io/cluster=<name>`) match a ready cluster of `workers`
/// workers: exactly `workers + 1` pods without a `deletionTimestamp`, all Running with
/// `Ready=True` (`utils/util.go: IsRunningAndReady`). Needed after a scale-down, since
/// KubeRay's counters include terminating pods (`utils/util.go: CalculateReadyReplicas`).
pub fn raycluster_pods_settled(pods: &[Json], workers: i64) -> bool {
    let live: Vec<&Json> = pods
        .iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .collect();
    live.len() as i64 == workers + 1
        && live
            .iter()
            .all(|p| conditions::pod_ready().matches(Some(p)))
}

/// Deployment rolled out, as `kubectl rollout status` decides it
/// (kubectl `pkg/polymorphichelpers/rollout_status.go: DeploymentStatusViewer.Status`):
/// the controller observed the current generation, the progress deadline has not been
/// exceeded (that fails the wait), every replica runs the new template
/// (`updatedReplicas ≥ spec.replicas`, default 1), no old replicas are left
/// (`replicas ≤ updatedReplicas`) and the updated ones are available.
pub fn deployment_available(o: Option<&Json>) -> Verdict<Json> {
    let Some(o) = o else {
        return Verdict::Pending;
    };
    match deployment_rollout(o) {
        Ok(None) => Verdict::Done(o.clone()),
        Ok(Some(_)) => Verdict::Pending,
        Err(d) => Verdict::Fail(d),
    }
}

/// What a Deployment's rollout waits for (kubectl's wording), `None` once rolled out, or
/// the error of an exceeded progress deadline. Same rules as [`deployment_available`].
pub fn deployment_rollout(o: &Json) -> Result<Option<String>> {
    let name = str_at(o, "/metadata/name").unwrap_or("?");
    let generation = int_at(o, "/metadata/generation").unwrap_or(0);
    let want = int_at(o, "/spec/replicas").unwrap_or(1);
    Ok(match DeploymentStatus::of(o).rollout(generation, want) {
        Rollout::SpecNotObserved => {
            Some("waiting for the deployment spec update to be observed".into())
        }
        Rollout::DeadlineExceeded => {
            return Err(Diag::api(
                "nrl::k8s::deployment_deadline",
                format!("deployment \"{name}\" exceeded its progress deadline"),
            )
            .help(
                "look at its pods' events (`kubectl describe deployment`); fix and apply again",
            ));
        }
        Rollout::Updating { updated, want } => Some(format!(
            "{updated} out of {want} new replicas have been updated"
        )),
        Rollout::OldReplicasLeft(old) => {
            Some(format!("{old} old replicas are pending termination"))
        }
        Rollout::Unavailable { available, updated } => Some(format!(
            "{available} of {updated} updated replicas are available"
        )),
        Rollout::Complete => None,
    })
}

/// RayJob: done once `status.jobDeploymentStatus` is terminal
/// ([`conditions::rayjob_finished`]); the caller maps the outcome (and `jobStatus`) to an
/// exit code.
pub fn rayjob_terminal(o: Option<&Json>) -> Verdict<Json> {
    match o {
        Some(o) if conditions::rayjob_finished().matches(Some(o)) => Verdict::Done(o.clone()),
        _ => Verdict::Pending,
    }
}

/// Pod: done when Running; a pod that terminated (Succeeded/Failed) fails the wait with
/// its container's reason and exit code.
pub fn pod_running(o: Option<&Json>) -> Verdict<Json> {
    let Some(o) = o else {
        return Verdict::Pending;
    };
    if conditions::pod_running().matches(Some(o)) {
        return Verdict::Done(o.clone());
    }
    let status = PodStatus::of(o);
    if !status.is_finished() {
        return Verdict::Pending;
    }
    let phase = status.phase.as_deref().unwrap_or("?");
    let detail = status
        .first_container_terminated()
        .map(|t| {
            format!(
                " ({}, exit code {})",
                t.reason.as_deref().unwrap_or("terminated"),
                t.exit_code.unwrap_or(-1)
            )
        })
        .unwrap_or_default();
    Verdict::Fail(
        Diag::api(
            "nrl::k8s::pod_terminated",
            format!(
                "pod {} is {phase}{detail}, not Running",
                str_at(o, "/metadata/name").unwrap_or("?")
            ),
        )
        .help("look at its log (`nrl logs`) or events; delete it to start again"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rc(spec_replicas: i64, status: Json) -> Json {
        json!({"metadata": {"name": "rc"},
               "spec": {"workerGroupSpecs": [{"groupName": "w", "replicas": spec_replicas,
                                              "minReplicas": 0, "maxReplicas": 4}]},
               "status": status})
    }

    fn head_ready(ok: bool) -> Json {
        json!([{"type": "HeadPodReady", "status": if ok { "True" } else { "False" }}])
    }

    /// Regression of issue 14 item 4: `state: ready` is sticky in KubeRay, so it alone
    /// must not end the wait after an update.
    #[test]
    fn raycluster_verdicts() {
        assert!(matches!(raycluster_ready(None), Verdict::Pending));
        let ready = |want: i64, desired: i64, ready: i64, head: bool| {
            rc(
                want,
                json!({"state": "ready", "desiredWorkerReplicas": desired,
                       "readyWorkerReplicas": ready, "conditions": head_ready(head)}),
            )
        };
        assert!(matches!(
            raycluster_ready(Some(&ready(2, 2, 2, true))),
            Verdict::Done(_)
        ));
        // Scaled 1 -> 2: the status still describes the old spec.
        assert!(matches!(
            raycluster_ready(Some(&ready(2, 1, 1, true))),
            Verdict::Pending
        ));
        // Desired updated, the new worker not ready yet.
        assert!(matches!(
            raycluster_ready(Some(&ready(2, 2, 1, true))),
            Verdict::Pending
        ));
        // Scaled 2 -> 1: the terminating worker still counts as ready.
        assert!(matches!(
            raycluster_ready(Some(&ready(1, 1, 2, true))),
            Verdict::Pending
        ));
        assert!(matches!(
            raycluster_ready(Some(&ready(2, 2, 2, false))),
            Verdict::Pending
        ));
        let provisioning = rc(
            2,
            json!({"desiredWorkerReplicas": 2, "readyWorkerReplicas": 2,
                                        "conditions": head_ready(true)}),
        );
        assert!(matches!(
            raycluster_ready(Some(&provisioning)),
            Verdict::Pending
        ));
        assert_eq!(
            raycluster_progress(&ready(2, 1, 1, false)),
            "state=ready, workers ready 1/2"
        );
    }

    #[test]
    fn desired_workers_follow_kuberay() {
        let spec = |groups: Json| json!({"spec": {"workerGroupSpecs": groups}});
        assert_eq!(desired_workers(&json!({"spec": {}})), 0);
        // Clamped into [min, max]; min > max uses max; times numOfHosts; suspended 0.
        let s = spec(json!([
            {"replicas": 5, "minReplicas": 1, "maxReplicas": 3},
            {"replicas": 0, "minReplicas": 2, "maxReplicas": 4, "numOfHosts": 2},
            {"replicas": 1, "minReplicas": 3, "maxReplicas": 2},
            {"replicas": 4, "suspend": true},
            {"replicas": 2},
        ]));
        assert_eq!(desired_workers(&s), 3 + 4 + 2 + 2);
    }

    #[test]
    fn pods_settle_only_without_terminating_extras() {
        let pod = |ready: bool, terminating: bool| {
            let mut p = json!({"metadata": {}, "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}});
            if terminating {
                p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
            }
            p
        };
        assert!(raycluster_pods_settled(
            &[pod(true, false), pod(true, false)],
            1
        ));
        assert!(raycluster_pods_settled(
            &[pod(true, false), pod(true, false), pod(true, true)],
            1
        ));
        assert!(!raycluster_pods_settled(
            &[pod(true, false), pod(true, false), pod(true, false)],
            1
        ));
        assert!(!raycluster_pods_settled(
            &[pod(true, false), pod(false, false)],
            1
        ));
    }

    #[test]
    fn suspended_clusters_fail_the_wait() {
        let o = json!({"metadata": {"name": "rc"}, "status": {"state": "suspended"}});
        match raycluster_ready(Some(&o)) {
            Verdict::Fail(d) => assert_eq!(d.message, "RayCluster rc is suspended"),
            _ => panic!("expected failure"),
        }
    }

    #[test]
    fn rayjob_and_pod_verdicts() {
        for s in ["Complete", "Failed", "ValidationFailed"] {
            let o = json!({"status": {"jobDeploymentStatus": s}});
            assert!(matches!(rayjob_terminal(Some(&o)), Verdict::Done(_)), "{s}");
        }
        for s in ["Running", "Suspended", "Suspending", "Retrying", ""] {
            let o = json!({"status": {"jobDeploymentStatus": s}});
            assert!(matches!(rayjob_terminal(Some(&o)), Verdict::Pending), "{s}");
        }
        assert!(matches!(rayjob_terminal(None), Verdict::Pending));
        let pod = |phase: &str| {
            json!({"metadata": {"name": "p"}, "status": {"phase": phase,
            "containerStatuses": [{"state": {"terminated": {"reason": "Error", "exitCode": 2}}}]}})
        };
        assert!(matches!(
            pod_running(Some(&pod("Pending"))),
            Verdict::Pending
        ));
        assert!(matches!(
            pod_running(Some(&pod("Running"))),
            Verdict::Done(_)
        ));
        match pod_running(Some(&pod("Failed"))) {
            Verdict::Fail(d) => assert_eq!(
                d.message,
                "pod p is Failed (Error, exit code 2), not Running"
            ),
            _ => panic!("expected failure"),
        }
    }
}
