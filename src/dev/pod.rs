//! The dev pod as the dev commands see it: rendered from the infra (the one place that
//! calls the renderer), and its state while waiting for it to run.

use serde_json::Value as Json;

use crate::config::infra_only::LoadedInfra;
use crate::config::node::Node;
use crate::diag::{Diag, Result};
use crate::k8s::Verdict;
use crate::k8s::status::PodStatus;

/// The rendered dev pod and the facts the commands need, read back from the manifest so
/// that they always agree with what is applied.
#[derive(Debug, Clone)]
pub struct DevPod {
    pub manifest: Json,
    pub name: String,
    pub namespace: String,
    /// The container to exec into.
    pub container: String,
    pub image: String,
    /// Whether `image` was configured at all (`--image`, `dev.image` or `image`).
    pub image_configured: bool,
    /// The Secret whose keys become the pod's environment.
    pub secret_name: String,
    /// The identity the pod runs as.
    pub service_account: String,
    pub owner_label: String,
    pub user: String,
}

/// Render the dev pod for `user` from the loaded infra and validate it offline.
pub fn resolve(loaded: &LoadedInfra, user: &str) -> Result<DevPod> {
    let node = render(loaded, user)?;
    let problems = crate::render::validate::validate_object(&node);
    if let Some(d) = Diag::aggregate(problems) {
        return Err(d);
    }
    let manifest = node.to_json();
    let s = |p: &str| {
        manifest
            .pointer(p)
            .and_then(Json::as_str)
            .map(str::to_string)
    };
    let containers = manifest
        .pointer("/spec/containers")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let first = containers.first().cloned().unwrap_or(Json::Null);
    let secret_name = first
        .get("envFrom")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .find_map(|e| e.pointer("/secretRef/name").and_then(Json::as_str))
        .map(str::to_string)
        .unwrap_or_else(|| format!("{user}-secrets"));
    Ok(DevPod {
        name: s("/metadata/name").unwrap_or_default(),
        namespace: s("/metadata/namespace").unwrap_or_else(|| loaded.infra.namespace.clone()),
        container: first
            .get("name")
            .and_then(Json::as_str)
            .unwrap_or(crate::render::devpod::DEV_CONTAINER)
            .to_string(),
        image: first
            .get("image")
            .and_then(Json::as_str)
            .unwrap_or("")
            .to_string(),
        image_configured: loaded.image_configured,
        secret_name,
        service_account: s("/spec/serviceAccountName").unwrap_or_else(|| "default".into()),
        owner_label: owner_label(loaded),
        user: user.to_string(),
        manifest,
    })
}

/// The label key whose value names the pod's owner (`dev.ownerLabel`).
fn owner_label(loaded: &LoadedInfra) -> String {
    loaded
        .infra
        .dev
        .as_ref()
        .map(|d| d.owner_label.clone())
        .unwrap_or_else(|| crate::config::schema::DevSpec::default().owner_label)
}

/// The one call into the renderer.
fn render(loaded: &LoadedInfra, user: &str) -> Result<Node> {
    crate::render::devpod::dev_pod(&loaded.infra, user)
}

/// Where a pod is on its way to Running, as one line for progress output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodState {
    Missing,
    Terminating,
    /// Pending, with the most telling reason (`ContainerCreating`, `Unschedulable: …`).
    Pending(String),
    Running,
    /// Succeeded or Failed, with what ended it.
    Ended {
        phase: String,
        reason: String,
    },
}

impl PodState {
    pub fn describe(&self) -> String {
        match self {
            PodState::Missing => "not there".into(),
            PodState::Terminating => "terminating".into(),
            PodState::Pending(r) if r.is_empty() => "Pending".into(),
            PodState::Pending(r) => format!("Pending ({r})"),
            PodState::Running => "Running".into(),
            PodState::Ended { phase, reason } if reason.is_empty() => phase.clone(),
            PodState::Ended { phase, reason } => format!("{phase} ({reason})"),
        }
    }
}

/// Waiting reasons that do not go away by waiting.
const HOPELESS: &[&str] = &[
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "CreateContainerConfigError",
];

/// The state of the pod object `o`, looking at `container`.
pub fn pod_state(o: Option<&Json>, container: &str) -> PodState {
    let Some(o) = o else {
        return PodState::Missing;
    };
    if o.pointer("/metadata/deletionTimestamp").is_some() {
        return PodState::Terminating;
    }
    let pod = PodStatus::of(o);
    let phase = pod.phase.as_deref().unwrap_or("Pending");
    let status = pod.container(container);
    let waiting = status.and_then(|c| c.waiting.as_ref());
    let terminated = status.and_then(|c| c.terminated.as_ref());
    let text = |v: Option<&String>| v.cloned().unwrap_or_default();
    match phase {
        "Running" if status.is_some_and(|c| c.running) => PodState::Running,
        "Succeeded" | "Failed" => {
            let reason = match terminated {
                Some(t) => {
                    let code = t.exit_code.unwrap_or(0);
                    let why = text(t.reason.as_ref());
                    format!(
                        "container exited with code {code}{}",
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!(": {why}")
                        }
                    )
                }
                None => text(pod.reason.as_ref()),
            };
            PodState::Ended {
                phase: phase.to_string(),
                reason,
            }
        }
        _ => {
            if let Some(w) = waiting {
                let reason = text(w.reason.as_ref());
                let msg = text(w.message.as_ref());
                return PodState::Pending(if msg.is_empty() {
                    reason
                } else {
                    format!("{reason}: {msg}")
                });
            }
            match pod.unschedulable() {
                Some(c) => PodState::Pending(format!(
                    "{}: {}",
                    text(c.reason.as_ref()),
                    text(c.message.as_ref())
                )),
                None => PodState::Pending(String::new()),
            }
        }
    }
}

/// The verdict for `wait_for`: Running is done; ended or stuck for good is a failure.
pub fn running_verdict(state: &PodState, pod: &str, ns: &str) -> Verdict<()> {
    match state {
        PodState::Running => Verdict::Done(()),
        PodState::Ended { .. } => Verdict::Fail(ended_error(state, pod, ns)),
        PodState::Missing | PodState::Terminating => Verdict::Fail(
            Diag::api(
                "nrl::dev::pod_gone",
                format!("dev pod {pod} was deleted while waiting for it to run"),
            )
            .help(format!("someone ran `nrl dev stop`? Run `nrl dev connect -n {ns}` again")),
        ),
        PodState::Pending(reason) if HOPELESS.iter().any(|h| reason.starts_with(h)) => {
            Verdict::Fail(
                Diag::api(
                    "nrl::dev::pod_stuck",
                    format!("dev pod {pod} cannot start: {reason}"),
                )
                .help(format!(
                    "check the image name and pull secrets (`dev.image`, `dev.imagePullSecrets`), then `nrl dev connect --recreate -n {ns}`"
                )),
            )
        }
        _ => Verdict::Pending,
    }
}

/// The dev pod ended (restartPolicy Never): it has to be recreated.
pub fn ended_error(state: &PodState, pod: &str, ns: &str) -> Diag {
    Diag::api(
        "nrl::dev::pod_ended",
        format!("dev pod {pod} has ended: {}", state.describe()),
    )
    .help(format!(
        "`nrl dev connect --recreate -n {ns}` replaces it (the workspace volume is kept)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn states_from_pod_status() {
        assert_eq!(pod_state(None, "dev"), PodState::Missing);
        let running = json!({"status": {"phase": "Running", "containerStatuses": [
            {"name": "dev", "state": {"running": {}}}]}});
        assert_eq!(pod_state(Some(&running), "dev"), PodState::Running);
        let pulling = json!({"status": {"phase": "Pending", "containerStatuses": [
            {"name": "dev", "state": {"waiting": {"reason": "ImagePullBackOff", "message": "no such image"}}}]}});
        let st = pod_state(Some(&pulling), "dev");
        assert_eq!(
            st,
            PodState::Pending("ImagePullBackOff: no such image".into())
        );
        assert!(
            matches!(running_verdict(&st, "p", "ns"), Verdict::Fail(d) if d.code == "nrl::dev::pod_stuck")
        );
        let unsched = json!({"status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}]}});
        let st = pod_state(Some(&unsched), "dev");
        assert_eq!(st.describe(), "Pending (Unschedulable: 0/3 nodes)");
        assert!(matches!(running_verdict(&st, "p", "ns"), Verdict::Pending));
        let failed = json!({"status": {"phase": "Failed", "containerStatuses": [
            {"name": "dev", "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}});
        let st = pod_state(Some(&failed), "dev");
        assert_eq!(
            st.describe(),
            "Failed (container exited with code 137: OOMKilled)"
        );
        let gone = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}});
        assert_eq!(pod_state(Some(&gone), "dev"), PodState::Terminating);
        for st in [PodState::Terminating, PodState::Missing] {
            assert!(
                matches!(running_verdict(&st, "p", "ns"), Verdict::Fail(d) if d.code == "nrl::dev::pod_gone")
            );
        }
    }
}
