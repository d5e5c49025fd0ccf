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
    let (current, old): (Vec<Value>, Vec<Value>) = owned.into_iter().partition(|p| {
        p.pointer("/metadata/labels/pod-template-hash")
            .and_then(Value::as_str)
            == Some(hash.as_str())
    });
    for p in &old {
        let _ = state.delete(&PODS, ns, name_of(p), &Default::default());
    }
    let mut current = current;
    while (current.len() as i64) < replicas {
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
    let ready_after = state.timings().deployment_ready;
    let running: Vec<&Value> = current
        .iter()
        .filter(|p| p.pointer("/status/phase").and_then(Value::as_str) == Some("Running"))
        .filter(|p| {
            p.pointer("/status/containerStatuses/0/ready")
                .and_then(Value::as_bool)
                != Some(false)
        })
        .collect();
    let mut available = 0i64;
    for p in &running {
        let since = *ctx
            .pod_running
            .entry(uid_of(p).to_string())
            .or_insert_with(Instant::now);
        if since.elapsed() >= ready_after {
            available += 1;
        } else {
            requeue.after(
                Controller::Deployment,
                ns,
                name,
                ready_after - since.elapsed(),
            );
        }
    }
    let generation = d
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    let is_available = available >= replicas;
    let _ = update_status(state, &DEPLOYMENTS, ns, name, MANAGER, |_| {
        let mut s = json!({
            "observedGeneration": generation,
            "replicas": current.len(),
            "updatedReplicas": current.len(),
            "readyReplicas": running.len(),
            "availableReplicas": available,
            "conditions": [
                condition("Available", is_available,
                    if is_available { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" },
                    if is_available { "Deployment has minimum availability." } else { "Deployment does not have minimum availability." }),
                if is_available {
                    condition("Progressing", true, "NewReplicaSetAvailable",
                        &format!("ReplicaSet \"{name}-{hash}\" has successfully progressed."))
                } else {
                    condition("Progressing", true, "ReplicaSetUpdated",
                        &format!("ReplicaSet \"{name}-{hash}\" is progressing."))
                },
            ],
        });
        let unavailable = replicas - available;
        if unavailable > 0 {
            s["unavailableReplicas"] = json!(unavailable);
        }
        s
    });
}
