//! Waiting on objects with watches (never fixed-interval GETs) and explicit deadlines.
//!
//! One watch per wait, filtered to the object by name: the initial list tells whether it
//! exists, then only changes arrive. Transient watch failures (dropped connections, 410
//! Gone) are retried by kube-runtime's watcher with backoff, relisting when needed;
//! permission errors end the wait at once.

use std::time::Duration;

use futures::StreamExt;
use kube::discovery::ApiResource;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value as Json;

use super::client::K8s;
use super::errors::{Action, human, to_diag};
use super::objects::Propagation;
use crate::diag::{Diag, Result};

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
                        if matches!(super::errors::status_code(&ke), Some(401 | 403)) {
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

    /// Wait until the object is gone.
    pub async fn wait_deleted(
        &self,
        ar: &ApiResource,
        ns: &str,
        name: &str,
        timeout: Duration,
    ) -> Result<()> {
        self.wait_for(ar, ns, name, timeout, "deleted", |o| match o {
            None => Verdict::Done(()),
            Some(_) => Verdict::Pending,
        })
        .await
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

/// RayCluster: ready, or failed with KubeRay's reason.
pub fn raycluster_ready(o: Option<&Json>) -> Verdict<Json> {
    let Some(o) = o else {
        return Verdict::Pending;
    };
    match str_at(o, "/status/state") {
        Some("ready") => Verdict::Done(o.clone()),
        // Suspended clusters have no pods and will not become ready by themselves.
        Some("suspended") => Verdict::Fail(
            Diag::api(
                "nrl::k8s::raycluster_suspended",
                format!(
                    "RayCluster {} is suspended",
                    str_at(o, "/metadata/name").unwrap_or("?")
                ),
            )
            .help("set `spec.suspend: false` on it (or delete it) and run again"),
        ),
        Some("failed") => Verdict::Fail(
            Diag::api(
                "nrl::k8s::raycluster_failed",
                format!(
                    "RayCluster {} failed: {}",
                    str_at(o, "/metadata/name").unwrap_or("?"),
                    str_at(o, "/status/reason").unwrap_or("no reason given")
                ),
            )
            .help("inspect the head pod (`nrl logs … --source head`) and events"),
        ),
        _ => Verdict::Pending,
    }
}

/// Deployment available (readyReplicas ≥ spec.replicas, default 1).
pub fn deployment_available(o: Option<&Json>) -> Verdict<Json> {
    let Some(o) = o else {
        return Verdict::Pending;
    };
    let want = o
        .pointer("/spec/replicas")
        .and_then(Json::as_i64)
        .unwrap_or(1);
    let ready = o
        .pointer("/status/readyReplicas")
        .and_then(Json::as_i64)
        .unwrap_or(0);
    if ready >= want {
        Verdict::Done(o.clone())
    } else {
        Verdict::Pending
    }
}

/// RayJob deployment states KubeRay never leaves on its own.
pub fn rayjob_terminal_state(s: &str) -> bool {
    matches!(s, "Complete" | "Failed" | "ValidationFailed" | "Suspended")
}

/// RayJob: done once `status.jobDeploymentStatus` is terminal (`Complete`, `Failed`,
/// `ValidationFailed`, `Suspended`); the caller maps the outcome (and `jobStatus`) to an
/// exit code.
pub fn rayjob_terminal(o: Option<&Json>) -> Verdict<Json> {
    match o.and_then(|o| str_at(o, "/status/jobDeploymentStatus")) {
        Some(s) if rayjob_terminal_state(s) => Verdict::Done(o.cloned().unwrap_or_default()),
        _ => Verdict::Pending,
    }
}

/// Pod: done when Running; a pod that terminated (Succeeded/Failed) fails the wait with
/// its container's reason and exit code.
pub fn pod_running(o: Option<&Json>) -> Verdict<Json> {
    let Some(o) = o else {
        return Verdict::Pending;
    };
    match str_at(o, "/status/phase") {
        Some("Running") => Verdict::Done(o.clone()),
        Some(phase @ ("Succeeded" | "Failed")) => {
            let term = o.pointer("/status/containerStatuses/0/state/terminated");
            let detail = term
                .map(|t| {
                    format!(
                        " ({}, exit code {})",
                        t.get("reason")
                            .and_then(Json::as_str)
                            .unwrap_or("terminated"),
                        t.get("exitCode").and_then(Json::as_i64).unwrap_or(-1)
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
        _ => Verdict::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn raycluster_verdicts() {
        assert!(matches!(raycluster_ready(None), Verdict::Pending));
        let ready = json!({"status": {"state": "ready"}});
        assert!(matches!(raycluster_ready(Some(&ready)), Verdict::Done(_)));
        let failed =
            json!({"metadata": {"name": "rc"}, "status": {"state": "failed", "reason": "boom"}});
        match raycluster_ready(Some(&failed)) {
            Verdict::Fail(d) => assert!(d.message.contains("boom")),
            _ => panic!("expected failure"),
        }
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
        for s in ["Complete", "Failed", "ValidationFailed", "Suspended"] {
            let o = json!({"status": {"jobDeploymentStatus": s}});
            assert!(matches!(rayjob_terminal(Some(&o)), Verdict::Done(_)), "{s}");
        }
        let running = json!({"status": {"jobDeploymentStatus": "Running"}});
        assert!(matches!(rayjob_terminal(Some(&running)), Verdict::Pending));
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

    #[test]
    fn terminal_states() {
        for s in ["Complete", "Failed", "ValidationFailed", "Suspended"] {
            assert!(rayjob_terminal_state(s));
        }
        assert!(!rayjob_terminal_state("Running"));
    }
}
