//! The simulated Deployment controller: `replicas` pods `<deploy>-<hash>-<rand>` (labelled
//! with `pod-template-hash`, replaced when the template changes), and the status a real
//! Deployment reports (`readyReplicas`, `availableReplicas` once pods ran for
//! `Timings::deployment_ready`, conditions Available and Progressing).

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use super::{Controller, Requeue, SimCtx, condition, pods_matching, update_status};
use crate::support::fake_k8s::meta::{name_of, owner_ref, random_suffix, uid_of};
use crate::support::fake_k8s::resources::{DEPLOYMENTS, PODS};
use crate::support::fake_k8s::state::{State, WriteOpts};

const MANAGER: &str = "kube-controller-manager";

/// A stable 10-character hash of the pod template, like `pod-template-hash`.
fn template_hash(template: &Value) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf29ce484222325;
    for b in template.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    (0..10)
        .map(|i| ALPHABET[((h >> (i * 6)) % ALPHABET.len() as u64) as usize] as char)
        .collect()
}

pub fn reconcile(state: &Arc<State>, ctx: &mut SimCtx, requeue: &Requeue, ns: &str, name: &str) {
    let Ok(d) = state.get(&DEPLOYMENTS, ns, name) else {
        return;
    };
    if d.pointer("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let replicas = d
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
        .max(0);
    let template = d
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let hash = template_hash(&template);
    let Some(match_labels) = d
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .cloned()
    else {
        return;
    };
    let uid = uid_of(&d).to_string();
    let owned: Vec<Value> = pods_matching(state, ns, &match_labels)
        .into_iter()
        .filter(|p| crate::support::fake_k8s::meta::owner_uids(p).contains(&uid))
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .collect();
    let (mut current, mut old): (Vec<Value>, Vec<Value>) = owned.into_iter().partition(|p| {
        p.pointer("/metadata/labels/pod-template-hash")
            .and_then(Value::as_str)
            == Some(hash.as_str())
    });
    // A pod is available once Running and ready for `Timings::deployment_ready`
    // (standing in for minReadySeconds and the readiness probe).
    let ready_after = state.timings().deployment_ready;
    let mut available_of = |p: &Value| -> bool {
        let running = p.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
            && p.pointer("/status/containerStatuses/0/ready")
                .and_then(Value::as_bool)
                != Some(false);
        if !running {
            return false;
        }
        let since = *ctx
            .pod_running
            .entry(uid_of(p).to_string())
            .or_insert_with(Instant::now);
        if since.elapsed() >= ready_after {
            true
        } else {
            requeue.after(
                Controller::Deployment,
                ns,
                name,
                ready_after - since.elapsed(),
            );
            false
        }
    };
    // RollingUpdate with the defaults maxSurge 25% (rounded up) and maxUnavailable 25%
    // (rounded down): new pods are added up to replicas + maxSurge in total, and old pods
    // are removed only while replicas - maxUnavailable stay available, so old pods keep
    // serving until new ones are ready. https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment
    // (kubernetes pkg/controller/deployment/rolling.go: reconcileNewReplicaSet,
    // reconcileOldReplicaSets).
    let max_surge = (replicas + 3) / 4;
    let max_unavailable = replicas / 4;
    let (max_surge, max_unavailable) = if max_surge == 0 && max_unavailable == 0 {
        (1, 0)
    } else {
        (max_surge, max_unavailable)
    };
    while (current.len() as i64) < replicas
        && ((current.len() + old.len()) as i64) < replicas + max_surge
    {
        let mut labels = template
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        labels.insert("pod-template-hash".into(), json!(hash));
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": format!("{name}-{hash}-{}", random_suffix()),
                "namespace": ns,
                "labels": labels,
                "annotations": template.pointer("/metadata/annotations").cloned().unwrap_or_else(|| json!({})),
                "ownerReferences": [owner_ref(&d, true)],
            },
            "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
        });
        match state.create(&PODS, ns, pod, &WriteOpts::manager(MANAGER)) {
            Ok(p) => current.push(p),
            Err(_) => break,
        }
    }
    while (current.len() as i64) > replicas {
        if let Some(p) = current.pop() {
            let _ = state.delete(&PODS, ns, name_of(&p), &Default::default());
        }
    }
    let new_available = current.iter().filter(|p| available_of(p)).count() as i64;
    let old_flags: Vec<bool> = old.iter().map(&mut available_of).collect();
    let mut total_available = new_available + old_flags.iter().filter(|a| **a).count() as i64;
    // Old pods that are not available go first; available ones while the floor holds.
    let mut order: Vec<usize> = (0..old.len()).collect();
    order.sort_by_key(|i| old_flags[*i]);
    let mut removed = Vec::new();
    for i in order {
        if old_flags[i] {
            if total_available - 1 < replicas - max_unavailable {
                continue;
            }
            total_available -= 1;
        }
        let _ = state.delete(&PODS, ns, name_of(&old[i]), &Default::default());
        removed.push(i);
    }
    let old_left: Vec<Value> = old
        .drain(..)
        .enumerate()
        .filter(|(i, _)| !removed.contains(i))
        .map(|(_, p)| p)
        .collect();
    let ready_count = current
        .iter()
        .chain(old_left.iter())
        .filter(|p| p.pointer("/status/phase").and_then(Value::as_str) == Some("Running"))
        .filter(|p| {
            p.pointer("/status/containerStatuses/0/ready")
                .and_then(Value::as_bool)
                != Some(false)
        })
        .count();
    let total = current.len() + old_left.len();
    let updated = current.len();
    let available = total_available;
    let generation = d
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    // The status the deployment controller writes (pkg/controller/deployment/sync.go:
    // calculateStatus): replicas counts old and new pods, updatedReplicas the new ones.
    let is_available = available >= replicas - max_unavailable;
    let complete = updated as i64 == replicas && total as i64 == replicas && available >= replicas;
    let _ = update_status(state, &DEPLOYMENTS, ns, name, MANAGER, |_| {
        let mut s = json!({
            "observedGeneration": generation,
            "replicas": total,
            "updatedReplicas": updated,
            "readyReplicas": ready_count,
            "availableReplicas": available,
            "conditions": [
                condition("Available", is_available,
                    if is_available { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" },
                    if is_available { "Deployment has minimum availability." } else { "Deployment does not have minimum availability." }),
                if complete {
                    condition("Progressing", true, "NewReplicaSetAvailable",
                        &format!("ReplicaSet \"{name}-{hash}\" has successfully progressed."))
                } else {
                    condition("Progressing", true, "ReplicaSetUpdated",
                        &format!("ReplicaSet \"{name}-{hash}\" is progressing."))
                },
            ],
        });
        let unavailable = total as i64 - available;
        if unavailable > 0 {
            s["unavailableReplicas"] = json!(unavailable);
        }
        s
    });
}
