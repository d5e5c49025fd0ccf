//! The simulated scheduler + kubelet: pods are bound to `fake-node-1`, go Pending → Running
//! after `Timings::pod_start`, and report container states the way the real kubelet does.
//! Pod fates (Unschedulable, ImagePullBackOff, CrashLoopBackOff) come from `SimRules::pods`
//! and the KubeRay cluster fate.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use super::{Controller, Requeue, SimCtx, condition, emit_event};
use crate::support::fake_k8s::config::{ClusterFate, PodFate};
use crate::support::fake_k8s::meta::{now_rfc3339, uid_of};
use crate::support::fake_k8s::resources::PODS;
use crate::support::fake_k8s::state::State;

pub const NODE: &str = "fake-node-1";

/// The state of an init container, given its spec.
type InitState = Box<dyn Fn(&Value) -> Value>;
const MANAGER: &str = "kubelet";

fn containers(pod: &Value, key: &str) -> Vec<Value> {
    pod.pointer(&format!("/spec/{key}"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn is_sidecar(c: &Value) -> bool {
    c.get("restartPolicy").and_then(Value::as_str) == Some("Always")
}

fn fate_of(state: &State, pod: &Value) -> PodFate {
    let rules = state.rules();
    if let Some((_, f)) = rules.pods.iter().find(|(sel, _)| sel.matches(pod)) {
        return f.clone();
    }
    if let Some(cluster) = pod
        .pointer("/metadata/labels/ray.io~1cluster")
        .and_then(Value::as_str)
    {
        match rules.clusters.get(cluster) {
            ClusterFate::StuckPending => {
                return PodFate::Unschedulable(
                    "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.".into(),
                );
            }
            ClusterFate::HeadCrashLoop
                if pod
                    .pointer("/metadata/labels/ray.io~1node-type")
                    .and_then(Value::as_str)
                    == Some("head") =>
            {
                return PodFate::CrashLoopBackOff;
            }
            _ => {}
        }
    }
    PodFate::Run
}

fn status_entry(c: &Value, state_obj: Value, ready: bool, restarts: i64) -> Value {
    let name = c.get("name").and_then(Value::as_str).unwrap_or("");
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let running = state_obj.get("running").is_some();
    json!({
        "name": name,
        "image": image,
        "imageID": format!("{image}@sha256:{}", "0".repeat(64)),
        "containerID": format!("containerd://{name}-{}", "f".repeat(12)),
        "ready": ready,
        "started": running,
        "restartCount": restarts,
        "state": state_obj,
    })
}

fn waiting(reason: &str, message: Option<&str>) -> Value {
    match message {
        Some(m) => json!({"waiting": {"reason": reason, "message": m}}),
        None => json!({"waiting": {"reason": reason}}),
    }
}

fn terminated(code: i32, started: &str) -> Value {
    json!({"terminated": {
        "exitCode": code,
        "reason": if code == 0 { "Completed" } else { "Error" },
        "startedAt": started,
        "finishedAt": now_rfc3339(),
        "containerID": "containerd://terminated",
    }})
}

/// The status of a pod in `phase`, with container states to match. `exit_code` is used for
/// terminal phases (main containers; sidecars are stopped with 0).
pub fn status_for_phase(state: &State, pod: &Value, phase: &str, exit_code: i32) -> Value {
    let old = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    let started = old
        .get("startTime")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(now_rfc3339);
    let main = containers(pod, "containers");
    let init = containers(pod, "initContainers");
    let (main_state, init_state, ready): (Value, InitState, bool) = match phase {
        "Running" => (
            json!({"running": {"startedAt": started}}),
            Box::new(|c: &Value| {
                if is_sidecar(c) {
                    json!({"running": {"startedAt": now_rfc3339()}})
                } else {
                    terminated(0, &now_rfc3339())
                }
            }),
            true,
        ),
        "Succeeded" | "Failed" => {
            let code = if phase == "Succeeded" {
                0
            } else if exit_code == 0 {
                1
            } else {
                exit_code
            };
            (
                terminated(code, &started),
                Box::new(|_: &Value| terminated(0, &now_rfc3339())),
                false,
            )
        }
        _ => (
            waiting("ContainerCreating", None),
            Box::new(|_: &Value| waiting("PodInitializing", None)),
            false,
        ),
    };
    let pod_ip = old
        .get("podIP")
        .cloned()
        .unwrap_or_else(|| json!(state.next_ip("10.244")));
    let mut status = json!({
        "phase": phase,
        "conditions": [
            condition("PodReadyToStartContainers", phase != "Pending", "", ""),
            condition("Initialized", phase != "Pending", "", ""),
            condition("Ready", ready, if ready { "" } else if phase == "Pending" { "ContainersNotReady" } else { "PodCompleted" }, ""),
            condition("ContainersReady", ready, if ready { "" } else if phase == "Pending" { "ContainersNotReady" } else { "PodCompleted" }, ""),
            condition("PodScheduled", true, "", ""),
        ],
        "hostIP": "172.18.0.2",
        "hostIPs": [{"ip": "172.18.0.2"}],
        "startTime": started,
        "qosClass": "BestEffort",
        "containerStatuses": main.iter().map(|c| status_entry(c, main_state.clone(), ready, 0)).collect::<Vec<_>>(),
    });
    if phase != "Pending" {
        status["podIP"] = pod_ip.clone();
        status["podIPs"] = json!([{"ip": pod_ip}]);
    }
    if !init.is_empty() {
        status["initContainerStatuses"] = json!(
            init.iter()
                .map(|c| {
                    let s = init_state(c);
                    let r = is_sidecar(c) && s.get("running").is_some();
                    status_entry(c, s, r, 0)
                })
                .collect::<Vec<_>>()
        );
    }
    status
}

/// Finish a running pod: main containers exit with `exit_code`, sidecars are stopped.
pub fn terminate(state: &State, ns: &str, name: &str, exit_code: i32) {
    let Ok(pod) = state.get_shared(&PODS, ns, name) else {
        return;
    };
    let phase = if exit_code == 0 {
        "Succeeded"
    } else {
        "Failed"
    };
    let status = status_for_phase(state, &pod, phase, exit_code);
    let _ = state.mutate(&PODS, ns, name, MANAGER, |o| o["status"] = status);
}

/// Pending with a scheduling failure.
fn unschedulable_status(message: &str) -> Value {
    json!({
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}],
        "qosClass": "BestEffort",
    })
}

pub fn reconcile(state: &Arc<State>, ctx: &mut SimCtx, requeue: &Requeue, ns: &str, name: &str) {
    let Ok(pod) = state.get_shared(&PODS, ns, name) else {
        return;
    };
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let uid = uid_of(&pod).to_string();
    let seen = *ctx.pod_seen.entry(uid.clone()).or_insert_with(Instant::now);
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    if matches!(phase, "Succeeded" | "Failed") {
        return;
    }
    let fate = fate_of(state, &pod);
    let raw = match &fate {
        PodFate::Unschedulable(msg) => Some(format!("0/1 nodes are available: {msg}")),
        PodFate::FailedScheduling(msg) => Some(msg.clone()),
        _ => None,
    };
    if let Some(msg) = raw {
        let _ = state.mutate(&PODS, ns, name, "kube-scheduler", |o| {
            o["status"] = unschedulable_status(&msg)
        });
        emit_event(
            state,
            ctx,
            &pod,
            "Warning",
            "FailedScheduling",
            &msg,
            "default-scheduler",
        );
        return;
    }
    if pod.pointer("/spec/nodeName").is_none() {
        let _ = state.mutate(&PODS, ns, name, "kube-scheduler", |o| {
            o["spec"]["nodeName"] = json!(NODE);
        });
        return;
    }
    if phase.is_empty() {
        let status = status_for_phase(state, &pod, "Pending", 0);
        let _ = state.mutate(&PODS, ns, name, MANAGER, |o| o["status"] = status);
        return;
    }
    let due = seen + state.timings().pod_start;
    let now = Instant::now();
    if phase == "Pending" && now < due {
        requeue.after(Controller::Kubelet, ns, name, due - now);
        return;
    }
    match fate {
        PodFate::ImagePullBackOff => {
            let image = pod
                .pointer("/spec/containers/0/image")
                .and_then(Value::as_str)
                .unwrap_or("");
            let msg = format!("Back-off pulling image \"{image}\"");
            let mut status = status_for_phase(state, &pod, "Pending", 0);
            if let Some(cs) = status["containerStatuses"].as_array_mut() {
                for c in cs {
                    c["state"] = waiting("ImagePullBackOff", Some(&msg));
                }
            }
            let _ = state.mutate(&PODS, ns, name, MANAGER, |o| o["status"] = status);
            emit_event(
                state,
                ctx,
                &pod,
                "Warning",
                "Failed",
                &format!("Failed to pull image \"{image}\": not found"),
                "kubelet",
            );
        }
        PodFate::Evicted(msg) => {
            // Eviction by the kubelet under node pressure: the pod fails with reason
            // Evicted and the message (core/v1 PodStatus `reason`, `message`).
            let mut status = status_for_phase(state, &pod, "Failed", 137);
            status["reason"] = json!("Evicted");
            status["message"] = json!(msg.clone());
            let _ = state.mutate(&PODS, ns, name, MANAGER, |o| o["status"] = status);
            emit_event(state, ctx, &pod, "Warning", "Evicted", &msg, "kubelet");
        }
        PodFate::CrashLoopBackOff | PodFate::OomKilled => {
            let oom = fate == PodFate::OomKilled;
            let restarts = pod
                .pointer("/status/containerStatuses/0/restartCount")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                + 1;
            let mut status = status_for_phase(state, &pod, "Running", 0);
            for key in ["containerStatuses", "initContainerStatuses"] {
                if let Some(cs) = status[key].as_array_mut() {
                    for c in cs {
                        c["state"] = waiting(
                            "CrashLoopBackOff",
                            Some("back-off restarting failed container"),
                        );
                        c["ready"] = json!(false);
                        c["started"] = json!(false);
                        c["restartCount"] = json!(restarts);
                        c["lastState"] = if oom {
                            // semantics §6: OOMKilled, typically exit 137 (128+SIGKILL).
                            json!({"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                "startedAt": now_rfc3339(), "finishedAt": now_rfc3339()}})
                        } else {
                            terminated(1, &now_rfc3339())
                        };
                    }
                }
            }
            status["conditions"][2] = condition("Ready", false, "ContainersNotReady", "");
            status["conditions"][3] = condition("ContainersReady", false, "ContainersNotReady", "");
            let _ = state.mutate(&PODS, ns, name, MANAGER, |o| o["status"] = status);
            requeue.after(
                Controller::Kubelet,
                ns,
                name,
                state
                    .timings()
                    .pod_start
                    .max(std::time::Duration::from_millis(200)),
            );
        }
        PodFate::Run if phase == "Pending" => {
            let status = status_for_phase(state, &pod, "Running", 0);
            ctx.pod_running.insert(uid, Instant::now());
            let _ = state.mutate(&PODS, ns, name, MANAGER, |o| o["status"] = status);
        }
        _ => {
            ctx.pod_running.entry(uid).or_insert_with(Instant::now);
        }
    }
}
