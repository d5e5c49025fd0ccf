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

/// The head Service name: KubeRay names it after the RayJob for clusters a RayJob created.
pub fn head_service_name(rc: &Value) -> String {
    let labels = rc.pointer("/metadata/labels");
    let origin = labels
        .and_then(|l| l.get("ray.io/originated-from-crd"))
        .and_then(Value::as_str);
    let origin_name = labels
        .and_then(|l| l.get("ray.io/originated-from-cr-name"))
        .and_then(Value::as_str);
    match (origin, origin_name) {
        (Some("RayJob"), Some(n)) => format!("{n}-head-svc"),
        _ => format!("{}-head-svc", name_of(rc)),
    }
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
    let svc = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name, "namespace": ns,
            "labels": {"ray.io/cluster": rc_name, "ray.io/node-type": "head", "app.kubernetes.io/created-by": "kuberay-operator"},
            "ownerReferences": [owner_ref(rc, true)],
        },
        "spec": {"selector": {"ray.io/cluster": rc_name, "ray.io/node-type": "head"}, "ports": ports},
    });
    let _ = state.create(&SERVICES, ns, svc, &WriteOpts::manager(MANAGER));
}

fn is_running(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
        && pod.pointer("/metadata/deletionTimestamp").is_none()
        && pod
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
            .is_none_or(|cs| {
                cs.iter()
                    .all(|c| c.get("ready").and_then(Value::as_bool) != Some(false))
            })
}

fn alive(pods: Vec<Value>) -> Vec<Value> {
    pods.into_iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .collect()
}

fn int(v: Option<&Value>, default: i64) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(default)
}

pub fn reconcile(state: &Arc<State>, _ctx: &mut SimCtx, _requeue: &Requeue, ns: &str, name: &str) {
    let Ok(rc) = state.get(&RAYCLUSTERS, ns, name) else {
        return;
    };
    if rc.pointer("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let fate = state.rules().clusters.get(name);
    if fate == ClusterFate::Unmanaged {
        return;
    }
    let suspended = rc.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let opts = WriteOpts::manager(MANAGER);

    let head_sel = group_labels(name, "head", "headgroup");
    let mut heads = alive(pods_matching(state, ns, &head_sel));
    let mut desired_workers = 0i64;
    let (mut min_w, mut max_w) = (0i64, 0i64);
    let mut workers_running = 0i64;
    let mut all_workers: Vec<Value> = Vec::new();
    let groups = rc
        .pointer("/spec/workerGroupSpecs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();

    if suspended {
        for p in heads.iter().chain(all_workers.iter()) {
            let _ = state.delete(&PODS, ns, name_of(p), &Default::default());
        }
        for g in &groups {
            let gname = g
                .get("groupName")
                .and_then(Value::as_str)
                .unwrap_or("workers");
            for p in alive(pods_matching(
                state,
                ns,
                &group_labels(name, "worker", gname),
            )) {
                let _ = state.delete(&PODS, ns, name_of(&p), &Default::default());
            }
        }
        let _ = update_status(state, &RAYCLUSTERS, ns, name, MANAGER, |o| {
            let mut s = o.get("status").cloned().unwrap_or_else(|| json!({}));
            s["state"] = json!("suspended");
            s["readyWorkerReplicas"] = json!(0);
            s
        });
        return;
    }

    ensure_service(state, &rc);
    if heads.is_empty()
        && let Some(tmpl) = rc.pointer("/spec/headGroupSpec/template")
    {
        let pod = make_pod(
            &rc,
            tmpl,
            format!("{name}-head-{}", random_suffix()),
            head_sel.clone(),
        );
        match state.create(&PODS, ns, pod, &opts) {
            Ok(p) => heads.push(p),
            Err(e) => {
                let msg = e
                    .status
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let _ = update_status(state, &RAYCLUSTERS, ns, name, MANAGER, |o| {
                    let mut s = o.get("status").cloned().unwrap_or_else(|| json!({}));
                    s["reason"] = json!(msg);
                    s
                });
                return;
            }
        }
    }

    for g in &groups {
        let gname = g
            .get("groupName")
            .and_then(Value::as_str)
            .unwrap_or("workers");
        let (min, max) = (
            int(g.get("minReplicas"), 0),
            int(g.get("maxReplicas"), i64::from(i32::MAX)),
        );
        let hosts = int(g.get("numOfHosts"), 1).max(1);
        let replicas = int(g.get("replicas"), min).clamp(min, max.max(min));
        let want = replicas * hosts;
        desired_workers += replicas;
        min_w += min;
        max_w = max_w.saturating_add(max);
        let sel = group_labels(name, "worker", gname);
        let mut pods = alive(pods_matching(state, ns, &sel));
        while (pods.len() as i64) < want {
            let Some(tmpl) = g.get("template") else { break };
            let pod = make_pod(
                &rc,
                tmpl,
                format!("{name}-{gname}-worker-{}", random_suffix()),
                sel.clone(),
            );
            match state.create(&PODS, ns, pod, &opts) {
                Ok(p) => pods.push(p),
                Err(_) => break,
            }
        }
        while (pods.len() as i64) > want {
            if let Some(p) = pods.pop() {
                let _ = state.delete(&PODS, ns, name_of(&p), &Default::default());
            }
        }
        // A multi-host replica is ready when all its hosts run.
        let running = pods.iter().filter(|p| is_running(p)).count() as i64;
        workers_running += running / hosts;
        all_workers.extend(pods);
    }

    let head = heads.first().cloned();
    let head_ready = head.as_ref().is_some_and(is_running);
    let all_ready = head_ready && workers_running >= desired_workers;
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
    let _ = update_status(state, &RAYCLUSTERS, ns, name, MANAGER, |o| {
        let old = o.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut s = json!({
            "desiredWorkerReplicas": desired_workers,
            "minWorkerReplicas": min_w,
            "maxWorkerReplicas": max_w,
            "readyWorkerReplicas": workers_running,
            "availableWorkerReplicas": workers_running,
            "desiredCPU": "0", "desiredMemory": "0", "desiredGPU": "0", "desiredTPU": "0",
            "endpoints": endpoints,
            "observedGeneration": generation,
        });
        let mut head_status = json!({"serviceName": svc_name, "serviceIP": svc_ip});
        if let Some(h) = &head {
            head_status["podName"] = json!(name_of(h));
            if let Some(ip) = h.pointer("/status/podIP") {
                head_status["podIP"] = ip.clone();
            }
        }
        s["head"] = head_status;
        let (state_str, reason) = match &fate {
            ClusterFate::Failed(r) => (Some("failed"), Some(r.clone())),
            _ if all_ready => (Some("ready"), None),
            _ => (None, None),
        };
        if let Some(st) = state_str {
            s["state"] = json!(st);
            let mut times = old
                .get("stateTransitionTimes")
                .cloned()
                .unwrap_or_else(|| json!({}));
            if old.get("state").and_then(Value::as_str) != Some(st) {
                times[st] = json!(crate::support::fake_k8s::meta::now_rfc3339());
            }
            s["stateTransitionTimes"] = times;
        }
        if let Some(r) = reason {
            s["reason"] = json!(r);
        }
        s["conditions"] = json!([
            condition(
                "HeadPodReady",
                head_ready,
                if head_ready {
                    "HeadPodRunningAndReady"
                } else {
                    "HeadPodNotFound"
                },
                ""
            ),
            condition(
                "RayClusterProvisioned",
                all_ready,
                if all_ready {
                    "AllPodRunningAndReadyFirstTime"
                } else {
                    "RayClusterPodsProvisioning"
                },
                ""
            ),
        ]);
        s["lastUpdateTime"] = json!(crate::support::fake_k8s::meta::now_rfc3339());
        s
    });
}
