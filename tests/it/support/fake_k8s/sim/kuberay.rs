//! The simulated KubeRay operator, RayCluster half: a head pod `<rc>-head-<rand>`, worker pods
//! `<rc>-<group>-worker-<rand>` (`replicas × numOfHosts` per group), a head Service, and the
//! status KubeRay reports (`state: ready` once every pod runs, `readyWorkerReplicas`,
//! `head.podName`, endpoints, conditions).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Requeue, SimCtx, condition, pods_matching, update_status};
use crate::support::fake_k8s::config::ClusterFate;
use crate::support::fake_k8s::meta::{name_of, owner_ref, random_suffix};
use crate::support::fake_k8s::resources::{PODS, RAYCLUSTERS, SERVICES};
use crate::support::fake_k8s::state::{State, WriteOpts};

pub const MANAGER: &str = "kuberay-operator";

/// The RayCluster's head Service: `headGroupSpec.headService.metadata.name`, else
/// `<cluster>-head-svc`, for RayJob-created clusters too (`utils/util.go:
/// GenerateHeadServiceName`). The RayJob's own `<rayjob>-head-svc` is another Service
/// (sim/rayjob.rs `ensure_rayjob_service`).
pub fn head_service_name(rc: &Value) -> String {
    rc.pointer("/spec/headGroupSpec/headService/metadata/name")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("{}-head-svc", name_of(rc)))
}

fn group_labels(rc_name: &str, node_type: &str, group: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("ray.io/cluster".into(), json!(rc_name));
    m.insert("ray.io/node-type".into(), json!(node_type));
    m.insert("ray.io/group".into(), json!(group));
    m
}

fn make_pod(rc: &Value, template: &Value, name: String, mut labels: Map<String, Value>) -> Value {
    let ns = rc
        .pointer("/metadata/namespace")
        .cloned()
        .unwrap_or(Value::Null);
    let mut tmeta_labels = template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert("ray.io/is-ray-node".into(), json!("yes"));
    labels.insert(
        "app.kubernetes.io/created-by".into(),
        json!("kuberay-operator"),
    );
    labels.insert("app.kubernetes.io/name".into(), json!("kuberay"));
    tmeta_labels.extend(labels);
    let annotations = template
        .pointer("/metadata/annotations")
        .cloned()
        .unwrap_or_else(|| json!({}));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "labels": tmeta_labels,
            "annotations": annotations,
            "ownerReferences": [owner_ref(rc, true)],
        },
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Container ports of the head, or KubeRay's defaults.
fn head_ports(rc: &Value) -> Vec<(String, i64)> {
    let ports: Vec<(String, i64)> = rc
        .pointer("/spec/headGroupSpec/template/spec/containers/0/ports")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    Some((
                        p.get("name")?.as_str()?.to_string(),
                        p.get("containerPort")?.as_i64()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    if ports.is_empty() {
        vec![
            ("client".into(), 10001),
            ("dashboard".into(), 8265),
            ("gcs-server".into(), 6379),
            ("metrics".into(), 8080),
        ]
    } else {
        ports
    }
}

fn ensure_service(state: &State, rc: &Value) {
    let ns = rc
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = head_service_name(rc);
    if state.get(&SERVICES, ns, &name).is_ok() {
        return;
    }
    let rc_name = name_of(rc);
    let ports: Vec<Value> = head_ports(rc)
        .into_iter()
        .map(|(n, p)| json!({"name": n, "port": p, "targetPort": p}))
        .collect();
    let mut svc = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name, "namespace": ns,
            "labels": {"ray.io/cluster": rc_name, "ray.io/node-type": "head", "app.kubernetes.io/created-by": "kuberay-operator"},
            "ownerReferences": [owner_ref(rc, true)],
        },
        "spec": {"selector": {"ray.io/cluster": rc_name, "ray.io/node-type": "head"}, "ports": ports},
    });
    // Headless by default when the type is empty or ClusterIP, "because a RayCluster
    // should have at most one head Pod" (common/service.go: BuildServiceForHeadPod; the
    // operator env ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE is off).
    let service_type = rc
        .pointer("/spec/headGroupSpec/serviceType")
        .and_then(Value::as_str)
        .unwrap_or("");
    if matches!(service_type, "" | "ClusterIP") {
        svc["spec"]["clusterIP"] = json!("None");
        svc["spec"]["publishNotReadyAddresses"] = json!(true);
    } else {
        svc["spec"]["type"] = json!(service_type);
    }
    let _ = state.create(&SERVICES, ns, svc, &WriteOpts::manager(MANAGER));
}

/// Phase Running and condition Ready True (`ray-operator/controllers/ray/utils/util.go:
/// IsRunningAndReady`).
fn running_and_ready(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
        && pod_condition(pod, "Ready")
            .and_then(|c| c.get("status"))
            .and_then(Value::as_str)
            == Some("True")
}

/// Every pod Running, none with a Ready condition that is not True, and at least one pod
/// (`utils/util.go: CheckAllPodsRunning`): a Running pod without conditions counts.
fn all_pods_running(pods: &[Value]) -> bool {
    !pods.is_empty()
        && pods.iter().all(|p| {
            p.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
                && pod_condition(p, "Ready")
                    .is_none_or(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        })
}

fn pod_condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a Value> {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))
}

fn alive(pods: Vec<Value>) -> Vec<Value> {
    pods.into_iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .collect()
}

fn int(v: Option<&Value>, default: i64) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(default)
}

fn group_suspended(g: &Value) -> bool {
    g.get("suspend").and_then(Value::as_bool) == Some(true)
}

/// Pods a worker group wants: `utils/util.go: GetWorkerGroupDesiredReplicas` (suspended
/// group 0; min > max uses max; replicas clamped into [min, max]; times numOfHosts, which
/// `reconcilePods` raises to at least 1).
fn group_desired(g: &Value) -> i64 {
    if group_suspended(g) {
        return 0;
    }
    let min = int(g.get("minReplicas"), 0);
    let max = int(g.get("maxReplicas"), i64::from(i32::MAX));
    let replicas = int(g.get("replicas"), min);
    let n = if min > max {
        max
    } else if replicas < min {
        min
    } else {
        replicas.min(max)
    };
    n * int(g.get("numOfHosts"), 1).max(1)
}

/// The head Pod Ready condition as KubeRay mirrors it into `HeadPodReady`
/// (`utils/util.go: FindHeadPodReadyCondition`, `firstNotReadyContainerStatus`).
fn head_pod_ready(head: Option<&Value>) -> Value {
    let Some(head) = head else {
        return condition(
            "HeadPodReady",
            false,
            "HeadPodNotFound",
            "Head Pod not found",
        );
    };
    let Some(ready) = pod_condition(head, "Ready") else {
        return condition("HeadPodReady", false, "Unknown", "");
    };
    let s = |k: &str| {
        ready
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let is_true = s("status") == "True";
    let mut reason = s("reason");
    let mut message = s("message");
    if is_true && reason.is_empty() {
        reason = "HeadPodRunningAndReady".into();
    }
    if reason.is_empty() {
        reason = "Unknown".into();
    }
    if reason == "ContainersNotReady"
        && let Some(first) = head
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter().find_map(|c| {
                    let st = c.get("state")?;
                    let inner = st.get("waiting").or_else(|| st.get("terminated"))?;
                    Some((
                        inner
                            .get("reason")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        format!(
                            "{}: {}",
                            c.get("name").and_then(Value::as_str).unwrap_or(""),
                            inner.get("message").and_then(Value::as_str).unwrap_or("")
                        ),
                    ))
                })
            })
    {
        if !message.is_empty() {
            message.push_str("; ");
        }
        message.push_str(&first.1);
        reason = first.0;
    }
    condition("HeadPodReady", is_true, &reason, &message)
}

/// The status fields whose change makes KubeRay write the status
/// (`utils/consistency.go: InconsistentRayClusterStatus`): not `observedGeneration`,
/// `lastUpdateTime` or the desired resources.
fn inconsistent(old: &Value, new: &Value) -> bool {
    let conds = |s: &Value| {
        super::without_volatile(
            &json!({"conditions": s.get("conditions").cloned().unwrap_or(Value::Null)}),
        )
    };
    [
        "state",
        "reason",
        "readyWorkerReplicas",
        "availableWorkerReplicas",
        "desiredWorkerReplicas",
        "minWorkerReplicas",
        "maxWorkerReplicas",
        "endpoints",
        "head",
    ]
    .iter()
    .any(|k| old.get(*k) != new.get(*k))
        || conds(old) != conds(new)
}

/// One pass of `raycluster_controller.go: rayClusterReconcile`: pods by count
/// (`reconcilePods`: no rolling update, templates reach only new pods), then
/// `calculateStatus`, written only when [`inconsistent`].
pub fn reconcile(state: &Arc<State>, _ctx: &mut SimCtx, _requeue: &Requeue, ns: &str, name: &str) {
    let Ok(rc) = state.get(&RAYCLUSTERS, ns, name) else {
        return;
    };
    // rayClusterReconcile: a cluster being deleted is left to the garbage collector.
    if rc.pointer("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let fate = state.rules().clusters.get(name);
    if fate == ClusterFate::Unmanaged {
        return;
    }
    let suspend = rc.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let opts = WriteOpts::manager(MANAGER);
    let groups = rc
        .pointer("/spec/workerGroupSpecs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut all_sel = Map::new();
    all_sel.insert("ray.io/cluster".into(), json!(name));
    // (reason, message) of a failed pod operation: `ReplicaFailure` condition
    // (`utils/constant.go`, `RayClusterReplicaFailureReason`).
    let mut reconcile_err: Option<(&str, String)> = None;

    ensure_service(state, &rc);
    if suspend {
        // reconcilePods: a suspending cluster has all its pods deleted (DeleteCollection).
        for p in alive(pods_matching(state, ns, &all_sel)) {
            let _ = state.delete(&PODS, ns, name_of(&p), &Default::default());
        }
    } else {
        let head_sel = group_labels(name, "head", "headgroup");
        if alive(pods_matching(state, ns, &head_sel)).is_empty()
            && let Some(tmpl) = rc.pointer("/spec/headGroupSpec/template")
        {
            let pod = make_pod(
                &rc,
                tmpl,
                format!("{name}-head-{}", random_suffix()),
                head_sel.clone(),
            );
            if let Err(e) = state.create(&PODS, ns, pod, &opts) {
                let msg = e
                    .status
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                reconcile_err = Some(("FailedCreateHeadPod", msg));
            }
        }
        for g in &groups {
            let gname = g
                .get("groupName")
                .and_then(Value::as_str)
                .unwrap_or("workers");
            let want = group_desired(g);
            let sel = group_labels(name, "worker", gname);
            let mut pods = alive(pods_matching(state, ns, &sel));
            while (pods.len() as i64) < want && reconcile_err.is_none() {
                let Some(tmpl) = g.get("template") else { break };
                let pod = make_pod(
                    &rc,
                    tmpl,
                    format!("{name}-{gname}-worker-{}", random_suffix()),
                    sel.clone(),
                );
                match state.create(&PODS, ns, pod, &opts) {
                    Ok(p) => pods.push(p),
                    Err(e) => {
                        let msg = e
                            .status
                            .get("message")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string();
                        reconcile_err = Some(("FailedCreateWorkerPod", msg));
                    }
                }
            }
            // Surplus pods without autoscaling: arbitrary ones go (reconcilePods,
            // "randomlyRemovedWorkers").
            while (pods.len() as i64) > want {
                if let Some(p) = pods.pop() {
                    let _ = state.delete(&PODS, ns, name_of(&p), &Default::default());
                }
            }
        }
    }

    // calculateStatus: the pods labelled with the cluster, terminating ones included.
    let pods = pods_matching(state, ns, &all_sel);
    let is_worker = |p: &&Value| {
        p.pointer("/metadata/labels/ray.io~1node-type")
            .and_then(Value::as_str)
            == Some("worker")
    };
    let ready_workers = pods
        .iter()
        .filter(is_worker)
        .filter(|p| running_and_ready(p))
        .count();
    let available_workers = pods
        .iter()
        .filter(is_worker)
        .filter(|p| p.pointer("/status/phase").and_then(Value::as_str) == Some("Running"))
        .count();
    let desired: i64 = groups.iter().map(group_desired).sum();
    let active = || groups.iter().filter(|g| !group_suspended(g));
    let min_w: i64 = active()
        .map(|g| int(g.get("minReplicas"), 0) * int(g.get("numOfHosts"), 1).max(1))
        .sum();
    let max_w: i64 = active()
        .map(|g| {
            int(g.get("maxReplicas"), i64::from(i32::MAX)) * int(g.get("numOfHosts"), 1).max(1)
        })
        .sum::<i64>()
        .min(i64::from(i32::MAX));
    // common.GetRayClusterHeadPod: the pod labelled head (terminating or not).
    let head = pods
        .iter()
        .find(|p| {
            p.pointer("/metadata/labels/ray.io~1node-type")
                .and_then(Value::as_str)
                == Some("head")
        })
        .cloned();
    let all_running = all_pods_running(&pods);
    let svc_name = head_service_name(&rc);
    let svc_ip = state
        .get(&SERVICES, ns, &svc_name)
        .ok()
        .and_then(|s| s.pointer("/spec/clusterIP").cloned())
        .unwrap_or(Value::Null);
    let generation = rc
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    let endpoints: Map<String, Value> = head_ports(&rc)
        .into_iter()
        .map(|(n, p)| (n, json!(p.to_string())))
        .collect();
    let now = crate::support::fake_k8s::meta::now_rfc3339();
    let old = rc.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut s = old.clone();
    s["observedGeneration"] = generation;
    // Go `int32` with `omitempty` (apis/ray/v1/raycluster_types.go `RayClusterStatus`):
    // a zero count is absent from the JSON, as the real operator writes it (seen on the
    // testbed: a RayCluster without workers has none of these).
    for (key, n) in [
        ("readyWorkerReplicas", ready_workers as i64),
        ("availableWorkerReplicas", available_workers as i64),
        ("desiredWorkerReplicas", desired),
        ("minWorkerReplicas", min_w),
        ("maxWorkerReplicas", max_w),
    ] {
        match s.as_object_mut() {
            Some(m) if n == 0 => {
                m.remove(key);
            }
            _ => s[key] = json!(n),
        }
    }
    for k in ["desiredCPU", "desiredMemory", "desiredGPU", "desiredTPU"] {
        s[k] = json!("0");
    }
    // `state: ready` when the pod count matches and every pod runs; it is never
    // cleared afterwards (calculateStatus only ever sets it), and there is no `failed`.
    if reconcile_err.is_none() && pods.len() as i64 == desired + 1 && all_running {
        s["state"] = json!("ready");
        if let Some(m) = s.as_object_mut() {
            m.remove("reason");
        }
    }
    if suspend && pods.is_empty() {
        s["state"] = json!("suspended");
    }
    let old_conds: Vec<Value> = old
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let cond_true = |kind: &str| {
        old_conds.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(kind)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    };
    let mut conds: Vec<Value> = old_conds
        .iter()
        .filter(|c| {
            !matches!(
                c.get("type").and_then(Value::as_str),
                Some("ReplicaFailure" | "HeadPodReady")
            )
        })
        .cloned()
        .collect();
    let mut set = |c: Value| {
        let kind = c.get("type").cloned();
        match conds.iter_mut().find(|o| o.get("type") == kind.as_ref()) {
            Some(o) => *o = c,
            None => conds.push(c),
        }
    };
    if let Some((reason, msg)) = &reconcile_err {
        set(condition("ReplicaFailure", true, reason, msg));
    }
    set(head_pod_ready(head.as_ref()));
    // FindRayClusterSuspendStatus, then the Provisioned / Suspending / Suspended rules.
    let suspend_status = if cond_true("RayClusterSuspending") {
        "Suspending"
    } else if cond_true("RayClusterSuspended") {
        "Suspended"
    } else {
        ""
    };
    if !cond_true("RayClusterProvisioned") && suspend_status != "Suspended" {
        set(if all_running {
            condition(
                "RayClusterProvisioned",
                true,
                "AllPodRunningAndReadyFirstTime",
                "All Ray Pods are ready for the first time",
            )
        } else {
            condition(
                "RayClusterProvisioned",
                false,
                "RayClusterPodsProvisioning",
                "RayCluster Pods are being provisioned for first time",
            )
        });
    }
    match suspend_status {
        "Suspending" => {
            if pods.is_empty() {
                set(condition(
                    "RayClusterProvisioned",
                    false,
                    "RayClusterPodsProvisioning",
                    "RayCluster has been suspended",
                ));
                set(condition(
                    "RayClusterSuspending",
                    false,
                    "RayClusterSuspending",
                    "",
                ));
                set(condition(
                    "RayClusterSuspended",
                    true,
                    "RayClusterSuspended",
                    "",
                ));
            }
        }
        "Suspended" => {
            if !suspend {
                set(condition(
                    "RayClusterSuspended",
                    false,
                    "RayClusterSuspended",
                    "",
                ));
            }
        }
        _ => {
            set(condition(
                "RayClusterSuspended",
                false,
                "RayClusterSuspended",
                "",
            ));
            set(condition(
                "RayClusterSuspending",
                suspend,
                "RayClusterSuspending",
                "",
            ));
        }
    }
    s["conditions"] = json!(conds);
    s["endpoints"] = json!(endpoints);
    // getHeadServiceIPAndName: a headless head Service reports the head pod's IP.
    let svc_ip = if svc_ip == json!("None") {
        head.as_ref()
            .and_then(|h| h.pointer("/status/podIP").cloned())
            .unwrap_or(json!(""))
    } else {
        svc_ip
    };
    let mut head_status = json!({"serviceName": svc_name, "serviceIP": svc_ip});
    if let Some(h) = &head {
        head_status["podName"] = json!(name_of(h));
        if let Some(ip) = h.pointer("/status/podIP") {
            head_status["podIP"] = ip.clone();
        }
    }
    s["head"] = head_status;
    s["lastUpdateTime"] = json!(now);
    if old.get("state") != s.get("state")
        && let Some(st) = s.get("state").and_then(Value::as_str)
    {
        let mut times = old
            .get("stateTransitionTimes")
            .cloned()
            .unwrap_or_else(|| json!({}));
        times[st] = json!(now);
        s["stateTransitionTimes"] = times;
    }
    if !inconsistent(&old, &s) {
        return;
    }
    let _ = update_status(state, &RAYCLUSTERS, ns, name, MANAGER, |_| s);
}
