//! The simulated KubeRay operator, RayJob half, after v1.5.1
//! `ray-operator/controllers/ray/rayjob_controller.go: Reconcile` (one transition per pass):
//! `jobDeploymentStatus` `""` → Initializing (finalizer `ray.io/rayjob-finalizer` first;
//! a RayCluster `<rayjob>-<rand>`) → Running once the cluster is `ready` (InteractiveMode:
//! Waiting until `spec.jobId` is set) → Complete / Failed; Retrying (a failed attempt with
//! retries left: the cluster goes, then `""` again with a new cluster and job id);
//! Suspending → Suspended (the cluster goes) and back to `""` on `suspend: false`;
//! ValidationFailed, which is never left. With `shutdownAfterJobFinishes` the cluster is
//! deleted `ttlSecondsAfterFinished × Timings::ttl_scale` after the end.
//!
//! The job runner (scripted, or a real Ray dashboard) plays Ray and the dashboard polling:
//! it mirrors the Ray job status into the RayJob while it is Running.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Controller, Requeue, SimCtx, emit_event, update_status};
use crate::support::fake_k8s::config::{RayJobEnd, RayJobScript};
use crate::support::fake_k8s::logs;
use crate::support::fake_k8s::meta::{name_of, now_rfc3339, owner_ref, random_suffix, uid_of};
use crate::support::fake_k8s::resources::{RAYCLUSTERS, RAYJOBS, SERVICES};
use crate::support::fake_k8s::state::{State, WriteOpts};

pub const MANAGER: &str = "kuberay-operator";

/// `ray-operator/controllers/ray/utils/constant.go: RayJobStopJobFinalizer`.
pub const FINALIZER: &str = "ray.io/rayjob-finalizer";

fn status_str<'a>(rj: &'a Value, key: &str) -> &'a str {
    rj.pointer(&format!("/status/{key}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Set fields of the RayJob status (merged into the current one). Empty strings are
/// dropped: every `RayJobStatus` field is `omitempty` (`apis/ray/v1/rayjob_types.go`), so
/// KubeRay's `""` (New, or a cleared jobStatus) is an absent field on the wire.
pub fn set_status(state: &State, ns: &str, name: &str, fields: Value) {
    let _ = update_status(state, &RAYJOBS, ns, name, MANAGER, |o| {
        let mut s = o.get("status").cloned().unwrap_or_else(|| json!({}));
        if let (Some(m), Some(f)) = (s.as_object_mut(), fields.as_object()) {
            for (k, v) in f {
                m.insert(k.clone(), v.clone());
            }
        }
        omit_empty(&mut s);
        s
    });
}

fn omit_empty(s: &mut Value) {
    if let Some(m) = s.as_object_mut() {
        m.retain(|_, v| v.as_str() != Some(""));
    }
}

/// Mirror the Ray job into a Running RayJob (the Running case polls the dashboard); a
/// runner of an attempt that is over (suspended, retried, deleted) changes nothing.
pub fn mirror(state: &State, ns: &str, name: &str, job_id: &str, fields: Value) -> bool {
    let Ok(rj) = state.get(&RAYJOBS, ns, name) else {
        return false;
    };
    if status_str(&rj, "jobDeploymentStatus") != "Running" || status_str(&rj, "jobId") != job_id {
        return false;
    }
    set_status(state, ns, name, fields);
    true
}

/// The end of a Ray job, as the Running case records it: SUCCEEDED or STOPPED →
/// Complete; FAILED → Failed (reason AppFailed), which
/// `checkBackoffLimitAndUpdateStatusIfNeeded` turns into Retrying while attempts are left
/// (`failed < backoffLimit + 1`); the counters `failed`/`succeeded` as it keeps them.
pub fn finish(state: &State, ns: &str, name: &str, job_id: &str, job_status: &str, message: &str) {
    let Ok(rj) = state.get(&RAYJOBS, ns, name) else {
        return;
    };
    let failed = job_status == "FAILED";
    let count = |k: &str| {
        rj.pointer(&format!("/status/{k}"))
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    let failed_count = count("failed") + i64::from(failed);
    let succeeded_count = count("succeeded") + i64::from(job_status == "SUCCEEDED");
    let backoff = rj.pointer("/spec/backoffLimit").and_then(Value::as_i64);
    let retry = failed && backoff.is_some_and(|b| failed_count < b + 1);
    let deployment = match (failed, retry) {
        (true, true) => "Retrying",
        (true, false) => "Failed",
        _ => "Complete",
    };
    let mut fields = json!({
        "jobStatus": job_status,
        "jobDeploymentStatus": deployment,
        "message": message,
        "rayJobInfo": {"endTime": now_rfc3339()},
        "failed": failed_count,
        "succeeded": succeeded_count,
    });
    // updateRayJobStatus: endTime only when the write moves to Complete or Failed.
    if !retry {
        fields["endTime"] = json!(now_rfc3339());
    }
    if failed {
        fields["reason"] = json!("AppFailed");
    }
    mirror(state, ns, name, job_id, fields);
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
    job_id: String,
    script: RayJobScript,
) {
    let run_time = script.run_time.unwrap_or(state.timings().ray_job_run);
    tokio::time::sleep(Duration::from_millis(20)).await;
    if state.get(&RAYJOBS, &ns, &name).is_err() {
        return;
    }
    if !mirror(
        &state,
        &ns,
        &name,
        &job_id,
        json!({"jobStatus": "RUNNING", "rayJobInfo": {"startTime": now_rfc3339()}}),
    ) {
        return;
    }
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
            &job_id,
            "SUCCEEDED",
            "Job finished successfully.",
        ),
        RayJobEnd::Failed(m) => finish(&state, &ns, &name, &job_id, "FAILED", m),
        RayJobEnd::Stopped => finish(
            &state,
            &ns,
            &name,
            &job_id,
            "STOPPED",
            "Job was intentionally stopped.",
        ),
    }
}

/// `utils/validation.go`, the rules the fake checks, in KubeRay's order
/// (`ValidateRayJobMetadata`, `ValidateRayJobSpec`); `entrypoint` is optional in v1.
/// Returns the event reason and the message.
fn validate(rj: &Value) -> Option<(&'static str, String)> {
    if name_of(rj).len() > 47 {
        return Some((
            "InvalidRayJobMetadata",
            format!(
                "The RayJob metadata is invalid: RayJob name should be no more than 47 characters: {}",
                name_of(rj)
            ),
        ));
    }
    let spec = rj.get("spec")?;
    let invalid = |m: &str| {
        Some((
            "InvalidRayJobSpec",
            format!("The RayJob spec is invalid: {m}"),
        ))
    };
    let shutdown = spec
        .get("shutdownAfterJobFinishes")
        .and_then(Value::as_bool)
        == Some(true);
    let suspend = spec.get("suspend").and_then(Value::as_bool) == Some(true);
    if suspend && !shutdown {
        return invalid(
            "a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended",
        );
    }
    let ttl = spec
        .get("ttlSecondsAfterFinished")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if ttl < 0 {
        return invalid("TTLSecondsAfterFinished must be a non-negative integer");
    }
    if !shutdown && ttl > 0 {
        return invalid(
            "a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished",
        );
    }
    let selector = spec.get("clusterSelector").is_some();
    if suspend && selector {
        return invalid("the ClusterSelector mode doesn't support the suspend operation");
    }
    if spec.get("rayClusterSpec").is_none() && !selector {
        return invalid("one of RayClusterSpec or ClusterSelector must be set");
    }
    let interactive = spec.get("submissionMode").and_then(Value::as_str) == Some("InteractiveMode");
    if interactive
        && spec
            .get("backoffLimit")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            > 0
    {
        return invalid("BackoffLimit is incompatible with InteractiveMode");
    }
    if spec
        .get("activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|d| d <= 0)
    {
        return invalid("activeDeadlineSeconds must be a positive integer");
    }
    if spec
        .get("backoffLimit")
        .and_then(Value::as_i64)
        .is_some_and(|b| b < 0)
    {
        return invalid("backoffLimit must be a positive integer");
    }
    None
}

/// `utils/util.go: FetchHeadServiceURL`: `<head svc>.<ns>.svc.cluster.local:<dashboard
/// port>` of the RayCluster's head Service, no scheme; `None` while it or the port is missing.
fn dashboard_url(state: &State, ns: &str, rc: &Value) -> Option<String> {
    let svc_name = super::kuberay::head_service_name(rc);
    let svc = state.get(&SERVICES, ns, &svc_name).ok()?;
    let port = svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)?
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some("dashboard"))?
        .get("port")?
        .as_i64()?;
    Some(format!("{svc_name}.{ns}.svc.cluster.local:{port}"))
}

/// `rayjob_controller.go: reconcileServices` (Running, not in selector mode): a Service
/// `<rayjob>-head-svc` selecting the current cluster's head, owned by the RayJob
/// (`common/job.go: BuildHeadServiceForRayJob`).
fn ensure_rayjob_service(state: &State, rj: &Value, ns: &str, cluster: &str) {
    let name = format!("{}-head-svc", name_of(rj));
    if state.get(&SERVICES, ns, &name).is_ok() {
        return;
    }
    let Ok(rc) = state.get(&RAYCLUSTERS, ns, cluster) else {
        return;
    };
    let Ok(head) = state.get(&SERVICES, ns, &super::kuberay::head_service_name(&rc)) else {
        return;
    };
    let svc = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"ray.io/originated-from-cr-name": name_of(rj),
                                "ray.io/originated-from-crd": "RayJob"},
                     "ownerReferences": [owner_ref(rj, true)]},
        "spec": {"selector": {"ray.io/cluster": cluster, "ray.io/node-type": "head"},
                 "ports": head.pointer("/spec/ports").cloned().unwrap_or_else(|| json!([])),
                 // Built by the same BuildServiceForHeadPod: headless like the cluster's.
                 "clusterIP": head.pointer("/spec/clusterIP").cloned().unwrap_or(Value::Null),
                 "publishNotReadyAddresses": true},
    });
    let _ = state.create(&SERVICES, ns, svc, &WriteOpts::manager(MANAGER));
}

fn has_finalizer(rj: &Value) -> bool {
    rj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|v| v == FINALIZER))
}

/// `checkActiveDeadlineAndUpdateStatusIfNeeded`: past `startTime + activeDeadlineSeconds`
/// the RayJob fails with DeadlineExceeded (never retried).
fn deadline_passed(rj: &Value) -> bool {
    let Some(d) = rj
        .pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
    else {
        return false;
    };
    rj.pointer("/status/startTime")
        .and_then(Value::as_str)
        .and_then(crate::support::fake_k8s::meta::age_seconds)
        .is_some_and(|age| age >= d as f64)
}

fn fail_deadline(state: &State, ns: &str, name: &str) {
    let rj = state.get(&RAYJOBS, ns, name).ok();
    let failed = rj
        .as_ref()
        .and_then(|r| r.pointer("/status/failed"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
        + 1;
    set_status(
        state,
        ns,
        name,
        json!({"jobDeploymentStatus": "Failed", "reason": "DeadlineExceeded",
               "message": "The RayJob has passed the activeDeadlineSeconds.",
               "endTime": now_rfc3339(), "failed": failed}),
    );
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
    // Reconcile, deletion branch: StopJob is best effort, then the finalizer goes
    // "whether StopJob succeeds or not"; the runner sees the RayJob gone and stops.
    if rj.pointer("/metadata/deletionTimestamp").is_some() {
        if has_finalizer(&rj) {
            let _ = state.mutate(&RAYJOBS, ns, name, MANAGER, |o| {
                if let Some(f) = o
                    .pointer_mut("/metadata/finalizers")
                    .and_then(Value::as_array_mut)
                {
                    f.retain(|v| v != FINALIZER);
                }
            });
        }
        return;
    }
    // Kueue (not KubeRay): its webhook creates queued jobs suspended; admission sets
    // `suspend: false` (kuberay PR #1809 "Kueue happy-path scenario";
    // https://kueue.sigs.k8s.io/docs/tasks/run/rayjobs/).
    let uid = uid_of(&rj).to_string();
    if let Some(admit_after) = state.rules().kueue.get(name)
        && ctx.queued.insert(uid.clone())
    {
        let _ = state.mutate(&RAYJOBS, ns, name, "kueue", |o| {
            o["spec"]["suspend"] = json!(true);
        });
        if admit_after != Duration::MAX {
            let (st, ns2, name2) = (state.clone(), ns.to_string(), name.to_string());
            state.handle.spawn(async move {
                tokio::time::sleep(admit_after).await;
                let _ = st.mutate(&RAYJOBS, &ns2, &name2, "kueue", |o| {
                    o["spec"]["suspend"] = json!(false);
                });
            });
        }
        return;
    }
    let deployment = status_str(&rj, "jobDeploymentStatus").to_string();
    // Validation runs first on every pass and makes the RayJob ValidationFailed, which
    // the switch has no case for (`Reconcile`, `validateRayJob`): it is final.
    if let Some((reason, msg)) = validate(&rj) {
        if deployment != "ValidationFailed" {
            emit_event(
                state,
                ctx,
                &rj,
                "Warning",
                reason,
                &format!("{ns}/{name}: {msg}"),
                MANAGER,
            );
            set_status(
                state,
                ns,
                name,
                json!({"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed", "message": msg}),
            );
        }
        return;
    }
    let suspend = rj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let interactive =
        rj.pointer("/spec/submissionMode").and_then(Value::as_str) == Some("InteractiveMode");
    let cluster = status_str(&rj, "rayClusterName").to_string();
    match deployment.as_str() {
        "" => {
            // The finalizer first, by an update of the whole object.
            if !has_finalizer(&rj) {
                let _ = state.mutate(&RAYJOBS, ns, name, MANAGER, |o| {
                    let meta = &mut o["metadata"];
                    match meta.get_mut("finalizers").and_then(Value::as_array_mut) {
                        Some(f) => f.push(json!(FINALIZER)),
                        None => meta["finalizers"] = json!([FINALIZER]),
                    }
                });
                return;
            }
            // initRayJobStatusIfNeed: the job id (not in InteractiveMode, where it stays
            // unset until Waiting copies spec.jobId), the cluster name, startTime.
            let mut fields = json!({
                "jobDeploymentStatus": "Initializing",
                "jobStatus": "",
                "startTime": now_rfc3339(),
                "failed": rj.pointer("/status/failed").and_then(Value::as_i64).unwrap_or(0),
                "succeeded": rj.pointer("/status/succeeded").and_then(Value::as_i64).unwrap_or(0),
            });
            if !interactive && status_str(&rj, "jobId").is_empty() {
                fields["jobId"] = json!(
                    rj.pointer("/spec/jobId")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("{name}-{}", random_suffix()))
                );
            }
            if cluster.is_empty() {
                fields["rayClusterName"] = json!(match rj
                    .pointer("/spec/clusterSelector/ray.io~1cluster")
                    .and_then(Value::as_str)
                {
                    Some(existing) => existing.to_string(),
                    None => format!("{name}-{}", random_suffix()),
                });
            }
            set_status(state, ns, name, fields);
        }
        "Initializing" => {
            if suspend {
                set_status(
                    state,
                    ns,
                    name,
                    json!({"jobDeploymentStatus": "Suspending"}),
                );
                return;
            }
            if deadline_passed(&rj) {
                fail_deadline(state, ns, name);
                return;
            }
            // getOrCreateRayClusterInstance
            if rj.pointer("/spec/rayClusterSpec").is_some() {
                create_cluster(state, &rj, ns, &cluster);
            }
            let Ok(rc) = state.get(&RAYCLUSTERS, ns, &cluster) else {
                emit_event(
                    state,
                    ctx,
                    &rj,
                    "Warning",
                    "RayClusterNotFound",
                    &format!("RayCluster {ns}/{cluster} set in the clusterSelector is not found."),
                    MANAGER,
                );
                return;
            };
            let rc_status = rc.get("status").cloned().unwrap_or_else(|| json!({}));
            if status_str(&rj, "dashboardURL").is_empty()
                && rc_status.get("state").and_then(Value::as_str) != Some("ready")
            {
                set_status(state, ns, name, json!({"rayClusterStatus": rc_status}));
                if let Some(d) = rj
                    .pointer("/spec/activeDeadlineSeconds")
                    .and_then(Value::as_u64)
                {
                    requeue.after(Controller::RayJob, ns, name, Duration::from_secs(d));
                }
                return;
            }
            let Some(url) = dashboard_url(state, ns, &rc) else {
                return;
            };
            let next = if interactive { "Waiting" } else { "Running" };
            set_status(
                state,
                ns,
                name,
                json!({"jobDeploymentStatus": next, "dashboardURL": url, "rayClusterStatus": rc_status}),
            );
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
                    json!({"jobDeploymentStatus": "Running", "jobId": job_id}),
                );
            }
        }
        "Running" => {
            if suspend {
                set_status(
                    state,
                    ns,
                    name,
                    json!({"jobDeploymentStatus": "Suspending"}),
                );
                return;
            }
            if deadline_passed(&rj) {
                fail_deadline(state, ns, name);
                return;
            }
            // A missing cluster is re-created with the same name.
            if rj.pointer("/spec/rayClusterSpec").is_some() {
                create_cluster(state, &rj, ns, &cluster);
                ensure_rayjob_service(state, &rj, ns, &cluster);
            }
            let job_id = status_str(&rj, "jobId").to_string();
            if ctx.runners.insert(format!("{uid}/{job_id}")) {
                let rules = state.rules();
                let task_state = state.clone();
                let (ns, name) = (ns.to_string(), name.to_string());
                match rules.ray_dashboard {
                    Some(url) => {
                        let spec = rj.get("spec").cloned().unwrap_or_else(|| json!({}));
                        state.handle.spawn(super::ray_runner::run(
                            task_state,
                            ns,
                            name,
                            url,
                            job_id,
                            spec,
                            !interactive,
                        ));
                    }
                    None => {
                        let script = rules.ray_jobs.get(&name);
                        state
                            .handle
                            .spawn(run_scripted(task_state, ns, name, cluster, job_id, script));
                    }
                }
            }
        }
        "Suspending" | "Retrying" => {
            // deleteClusterResources: delete the cluster, and report only once it is gone.
            if !cluster.is_empty()
                && rj.pointer("/spec/clusterSelector").is_none()
                && let Ok(rc) = state.get(&RAYCLUSTERS, ns, &cluster)
            {
                if rc.pointer("/metadata/deletionTimestamp").is_none() {
                    let _ = state.delete(&RAYCLUSTERS, ns, &cluster, &Default::default());
                }
                return;
            }
            let next = if deployment == "Suspending" {
                "Suspended"
            } else {
                ""
            };
            let _ = update_status(state, &RAYJOBS, ns, name, MANAGER, |o| {
                let mut s = o.get("status").cloned().unwrap_or_else(|| json!({}));
                if let Some(m) = s.as_object_mut() {
                    for k in [
                        "rayClusterStatus",
                        "rayClusterName",
                        "dashboardURL",
                        "jobId",
                        "message",
                        "reason",
                        "rayJobInfo",
                    ] {
                        m.remove(k);
                    }
                }
                s["jobStatus"] = json!("");
                s["jobDeploymentStatus"] = json!(next);
                omit_empty(&mut s);
                s
            });
        }
        "Suspended" if !suspend => {
            set_status(state, ns, name, json!({"jobDeploymentStatus": ""}));
        }
        "Complete" | "Failed" => {
            let shutdown = rj
                .pointer("/spec/shutdownAfterJobFinishes")
                .and_then(Value::as_bool)
                == Some(true);
            let selector_mode = rj.pointer("/spec/clusterSelector").is_some();
            if !shutdown || selector_mode || state.get(&RAYCLUSTERS, ns, &cluster).is_err() {
                return;
            }
            let ttl = rj
                .pointer("/spec/ttlSecondsAfterFinished")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let ttl = Duration::from_secs_f64((ttl * state.timings().ttl_scale).max(0.0));
            let ended = *ctx.ended.entry(uid).or_insert_with(std::time::Instant::now);
            let since_end = ended.elapsed();
            if since_end >= ttl {
                let _ = state.delete(&RAYCLUSTERS, ns, &cluster, &Default::default());
            } else {
                requeue.after(Controller::RayJob, ns, name, ttl - since_end);
            }
        }
        // ValidationFailed and anything unknown: the default case only requeues.
        _ => {}
    }
}
