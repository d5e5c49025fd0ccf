//! The simulated KubeRay operator, RayJob half: `jobDeploymentStatus` New → Initializing
//! (a RayCluster `<rayjob>-<rand>` is created, head Service `<rayjob>-head-svc`) → Running (the
//! job runner starts once the cluster is ready) → Complete / Failed; ValidationFailed and
//! Suspended; with `shutdownAfterJobFinishes` the cluster is deleted
//! `ttlSecondsAfterFinished × Timings::ttl_scale` after the end.
//!
//! `InteractiveMode` as KubeRay does it: once the cluster is ready the RayJob waits
//! (`Waiting`) until the user submits the Ray job and sets `spec.jobId`; then it is Running
//! and the job runner only watches that job (with a real Ray dashboard) instead of
//! submitting the entrypoint.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Controller, Requeue, SimCtx, update_status};
use crate::support::fake_k8s::config::{RayJobEnd, RayJobScript};
use crate::support::fake_k8s::logs;
use crate::support::fake_k8s::meta::{name_of, now_rfc3339, owner_ref, random_suffix, uid_of};
use crate::support::fake_k8s::resources::{RAYCLUSTERS, RAYJOBS};
use crate::support::fake_k8s::state::{State, WriteOpts};

pub const MANAGER: &str = "kuberay-operator";

fn status_str<'a>(rj: &'a Value, key: &str) -> &'a str {
    rj.pointer(&format!("/status/{key}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Set fields of the RayJob status (merged into the current one).
pub fn set_status(state: &State, ns: &str, name: &str, fields: Value) {
    let _ = update_status(state, &RAYJOBS, ns, name, MANAGER, |o| {
        let mut s = o.get("status").cloned().unwrap_or_else(|| json!({}));
        if let (Some(m), Some(f)) = (s.as_object_mut(), fields.as_object()) {
            for (k, v) in f {
                m.insert(k.clone(), v.clone());
            }
        }
        s
    });
}

/// The end of a job: jobStatus, jobDeploymentStatus and the counters, as KubeRay records it.
pub fn finish(state: &State, ns: &str, name: &str, job_status: &str, message: &str) {
    let failed = job_status == "FAILED";
    let mut fields = json!({
        "jobStatus": job_status,
        "jobDeploymentStatus": if failed { "Failed" } else { "Complete" },
        "endTime": now_rfc3339(),
        "message": message,
        "rayJobInfo": {"endTime": now_rfc3339()},
    });
    if failed {
        fields["reason"] = json!("AppFailed");
        fields["failed"] = json!(1);
    } else {
        fields["succeeded"] = json!(1);
    }
    set_status(state, ns, name, fields);
}

fn head_pod(state: &State, ns: &str, cluster: &str) -> Option<(String, String)> {
    let mut labels = serde_json::Map::new();
    labels.insert("ray.io/cluster".into(), json!(cluster));
    labels.insert("ray.io/node-type".into(), json!("head"));
    let pod = super::pods_matching(state, ns, &labels)
        .into_iter()
        .next()?;
    let container = pod
        .pointer("/spec/containers/0/name")
        .and_then(Value::as_str)?
        .to_string();
    Some((name_of(&pod).to_string(), container))
}

/// The fake runner: RUNNING, the scripted log lines on the head pod, then the scripted end.
async fn run_scripted(
    state: Arc<State>,
    ns: String,
    name: String,
    cluster: String,
    script: RayJobScript,
) {
    let run_time = script.run_time.unwrap_or(state.timings().ray_job_run);
    tokio::time::sleep(Duration::from_millis(20)).await;
    if state.get(&RAYJOBS, &ns, &name).is_err() {
        return;
    }
    set_status(
        &state,
        &ns,
        &name,
        json!({"jobStatus": "RUNNING", "rayJobInfo": {"startTime": now_rfc3339()}}),
    );
    if let Some((pod, container)) = head_pod(&state, &ns, &cluster) {
        logs::append(&state, &ns, &pod, &container, &script.logs);
    }
    tokio::time::sleep(run_time).await;
    if state.get(&RAYJOBS, &ns, &name).is_err() {
        return;
    }
    match &script.end {
        RayJobEnd::Succeeded => finish(
            &state,
            &ns,
            &name,
            "SUCCEEDED",
            "Job finished successfully.",
        ),
        RayJobEnd::Failed(m) => finish(&state, &ns, &name, "FAILED", m),
        RayJobEnd::Stopped => finish(
            &state,
            &ns,
            &name,
            "STOPPED",
            "Job was intentionally stopped.",
        ),
    }
}

fn validate(rj: &Value) -> Option<String> {
    let spec = rj.get("spec")?;
    let has_cluster = spec.get("rayClusterSpec").is_some() || spec.get("clusterSelector").is_some();
    if !has_cluster {
        return Some("one of RayClusterSpec or ClusterSelector must be set".into());
    }
    let mode = spec
        .get("submissionMode")
        .and_then(Value::as_str)
        .unwrap_or("K8sJobMode");
    let entrypoint = spec.get("entrypoint").and_then(Value::as_str).unwrap_or("");
    if entrypoint.is_empty() && mode != "InteractiveMode" {
        return Some(format!(
            "The RayJob spec is invalid: entrypoint must be set for submissionMode {mode}"
        ));
    }
    let shutdown = spec
        .get("shutdownAfterJobFinishes")
        .and_then(Value::as_bool)
        == Some(true);
    let ttl = spec
        .get("ttlSecondsAfterFinished")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if !shutdown && ttl > 0 {
        return Some("The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished".into());
    }
    if name_of(rj).len() > 47 {
        return Some(format!(
            "The RayJob metadata is invalid: RayJob name should be no more than 47 characters: {}",
            name_of(rj)
        ));
    }
    None
}

fn create_cluster(state: &State, rj: &Value, ns: &str, cluster: &str) {
    if state.get(&RAYCLUSTERS, ns, cluster).is_ok() {
        return;
    }
    let mut labels = rj
        .pointer("/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    labels["ray.io/originated-from-crd"] = json!("RayJob");
    labels["ray.io/originated-from-cr-name"] = json!(name_of(rj));
    let rc = json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": cluster, "namespace": ns, "labels": labels,
            "ownerReferences": [owner_ref(rj, true)],
        },
        "spec": rj.pointer("/spec/rayClusterSpec").cloned().unwrap_or_else(|| json!({})),
    });
    let _ = state.create(&RAYCLUSTERS, ns, rc, &WriteOpts::manager(MANAGER));
}

pub fn reconcile(state: &Arc<State>, ctx: &mut SimCtx, requeue: &Requeue, ns: &str, name: &str) {
    let Ok(rj) = state.get(&RAYJOBS, ns, name) else {
        return;
    };
    if rj.pointer("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let deployment = status_str(&rj, "jobDeploymentStatus").to_string();
    let suspend = rj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    match deployment.as_str() {
        "" => {
            if let Some(msg) = validate(&rj) {
                set_status(
                    state,
                    ns,
                    name,
                    json!({"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed", "message": msg}),
                );
                return;
            }
            if suspend {
                set_status(state, ns, name, json!({"jobDeploymentStatus": "Suspended"}));
                return;
            }
            let job_id = rj
                .pointer("/spec/jobId")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("{name}-{}", random_suffix()));
            let cluster = match rj
                .pointer("/spec/clusterSelector/ray.io~1cluster")
                .and_then(Value::as_str)
            {
                Some(existing) => existing.to_string(),
                None => format!("{name}-{}", random_suffix()),
            };
            set_status(
                state,
                ns,
                name,
                json!({
                    "jobDeploymentStatus": "New",
                    "jobId": job_id,
                    "rayClusterName": cluster,
                    "startTime": now_rfc3339(),
                }),
            );
        }
        "New" => {
            let cluster = status_str(&rj, "rayClusterName").to_string();
            if rj.pointer("/spec/rayClusterSpec").is_some() {
                create_cluster(state, &rj, ns, &cluster);
            }
            set_status(
                state,
                ns,
                name,
                json!({
                    "jobDeploymentStatus": "Initializing",
                    "dashboardURL": format!("{name}-head-svc.{ns}.svc.cluster.local:8265"),
                }),
            );
        }
        "Initializing" => {
            let cluster = status_str(&rj, "rayClusterName").to_string();
            let Ok(rc) = state.get(&RAYCLUSTERS, ns, &cluster) else {
                return;
            };
            let rc_status = rc.get("status").cloned().unwrap_or_else(|| json!({}));
            let interactive = rj.pointer("/spec/submissionMode").and_then(Value::as_str)
                == Some("InteractiveMode");
            match rc_status.get("state").and_then(Value::as_str) {
                Some("ready") if interactive => {
                    set_status(
                        state,
                        ns,
                        name,
                        json!({"jobDeploymentStatus": "Waiting", "rayClusterStatus": rc_status}),
                    );
                }
                Some("ready") => {
                    set_status(
                        state,
                        ns,
                        name,
                        json!({
                            "jobDeploymentStatus": "Running",
                            "jobStatus": "PENDING",
                            "rayClusterStatus": rc_status,
                        }),
                    );
                }
                Some("failed") => {
                    let reason = rc_status
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("the RayCluster failed");
                    set_status(
                        state,
                        ns,
                        name,
                        json!({
                            "jobDeploymentStatus": "Failed",
                            "reason": "RayClusterFailed",
                            "message": reason,
                            "endTime": now_rfc3339(),
                            "failed": 1,
                        }),
                    );
                }
                _ => {}
            }
        }
        "Waiting" => {
            let job_id = rj
                .pointer("/spec/jobId")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !job_id.is_empty() {
                set_status(
                    state,
                    ns,
                    name,
                    json!({"jobDeploymentStatus": "Running", "jobId": job_id, "jobStatus": "PENDING"}),
                );
            }
        }
        "Running" => {
            let uid = uid_of(&rj).to_string();
            if ctx.runners.insert(uid) {
                let cluster = status_str(&rj, "rayClusterName").to_string();
                let rules = state.rules();
                let task_state = state.clone();
                let (ns, name) = (ns.to_string(), name.to_string());
                match rules.ray_dashboard {
                    Some(url) => {
                        let job_id = status_str(&rj, "jobId").to_string();
                        let spec = rj.get("spec").cloned().unwrap_or_else(|| json!({}));
                        let submit = spec.get("submissionMode").and_then(Value::as_str)
                            != Some("InteractiveMode");
                        state.handle.spawn(super::ray_runner::run(
                            task_state, ns, name, url, job_id, spec, submit,
                        ));
                    }
                    None => {
                        let script = rules.ray_jobs.get(&name);
                        state
                            .handle
                            .spawn(run_scripted(task_state, ns, name, cluster, script));
                    }
                }
            }
        }
        "Complete" | "Failed" => {
            let shutdown = rj
                .pointer("/spec/shutdownAfterJobFinishes")
                .and_then(Value::as_bool)
                == Some(true);
            let cluster = status_str(&rj, "rayClusterName").to_string();
            let selector_mode = rj.pointer("/spec/clusterSelector").is_some();
            if !shutdown || selector_mode || state.get(&RAYCLUSTERS, ns, &cluster).is_err() {
                return;
            }
            let ttl = rj
                .pointer("/spec/ttlSecondsAfterFinished")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let ttl = Duration::from_secs_f64((ttl * state.timings().ttl_scale).max(0.0));
            let ended = *ctx
                .ended
                .entry(uid_of(&rj).to_string())
                .or_insert_with(std::time::Instant::now);
            let since_end = ended.elapsed();
            if since_end >= ttl {
                let _ = state.delete(&RAYCLUSTERS, ns, &cluster, &Default::default());
            } else {
                requeue.after(Controller::RayJob, ns, name, ttl - since_end);
            }
        }
        _ => {}
    }
}
