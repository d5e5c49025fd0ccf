//! The simulated Job controller: pods `<job>-<rand>` (Indexed: `<job>-<index>-<rand>`) with
//! the controller's labels, run for the scripted time and exit with the scripted code per
//! attempt; retries up to `backoffLimit`; status `active/ready/succeeded/failed`,
//! `startTime/completionTime`, conditions SuccessCriteriaMet+Complete or
//! FailureTarget+Failed. Native sidecars (initContainers with `restartPolicy: Always`) keep
//! running until the main containers exit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Controller, Requeue, SimCtx, condition, kubelet, update_status};
use crate::support::fake_k8s::logs;
use crate::support::fake_k8s::meta::{name_of, now_rfc3339, owner_ref, random_suffix, uid_of};
use crate::support::fake_k8s::resources::{JOBS, PODS};
use crate::support::fake_k8s::state::{State, WriteOpts};

const MANAGER: &str = "kube-controller-manager";
const ATTEMPT: &str = "fake-k8s.nrl.dev/attempt";

fn phase(p: &Value) -> &str {
    p.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn int(v: Option<&Value>, d: i64) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(d)
}

fn new_pod(job: &Value, attempt: usize, index: Option<i64>) -> Value {
    let name = name_of(job);
    let tmpl = job
        .pointer("/spec/template")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut labels = tmpl
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut annotations = tmpl
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.insert(ATTEMPT.into(), json!(attempt.to_string()));
    let pod_name = match index {
        Some(i) => {
            labels.insert(
                "batch.kubernetes.io/job-completion-index".into(),
                json!(i.to_string()),
            );
            annotations.insert(
                "batch.kubernetes.io/job-completion-index".into(),
                json!(i.to_string()),
            );
            format!("{name}-{i}-{}", random_suffix())
        }
        None => format!("{name}-{}", random_suffix()),
    };
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name,
            "namespace": job.pointer("/metadata/namespace"),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_ref(job, true)],
        },
        "spec": tmpl.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Container names of a pod (main and init).
fn container_names(pod: &Value) -> Vec<String> {
    ["containers", "initContainers"]
        .iter()
        .flat_map(|k| {
            pod.pointer(&format!("/spec/{k}"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

pub fn reconcile(state: &Arc<State>, ctx: &mut SimCtx, requeue: &Requeue, ns: &str, name: &str) {
    let Ok(job) = state.get_shared(&JOBS, ns, name) else {
        return;
    };
    if job.pointer("/metadata/deletionTimestamp").is_some() {
        return;
    }
    let uid = uid_of(&job).to_string();
    // The pods this Job owns (the real controller matches its selector and adopts; the
    // fake's Job pods always carry the ownerReference, so the owner index gives the same set).
    let pods = state.owned(&PODS, &uid);
    let script = state.rules().jobs.get(name);
    let run_time = script.run_time.unwrap_or(state.timings().job_pod_run);

    let finished_cond = job
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                matches!(
                    c.get("type").and_then(Value::as_str),
                    Some("Complete" | "Failed")
                ) && c.get("status").and_then(Value::as_str) == Some("True")
            })
        });

    // Running pods: write their scripted logs once, end them when their time is up.
    for p in &pods {
        let puid = uid_of(p).to_string();
        if phase(p) == "Running" && p.pointer("/metadata/deletionTimestamp").is_none() {
            let started = *ctx
                .pod_running
                .entry(puid.clone())
                .or_insert_with(Instant::now);
            if ctx.logs_written.insert(puid.clone()) {
                let names = container_names(p);
                for (c, line) in script.logs.iter().filter(|(c, _)| names.contains(c)) {
                    logs::append(state, ns, name_of(p), c, std::slice::from_ref(line));
                }
            }
            let end = started + run_time;
            if Instant::now() >= end {
                let attempt = p
                    .pointer(&format!(
                        "/metadata/annotations/{}",
                        ATTEMPT.replace('/', "~1")
                    ))
                    .and_then(Value::as_str)
                    .and_then(|a| a.parse().ok())
                    .unwrap_or(0);
                kubelet::terminate(state, ns, name_of(p), script.exit_code_for_attempt(attempt));
            } else {
                requeue.after(
                    Controller::Job,
                    ns,
                    name,
                    end - Instant::now() + Duration::from_millis(5),
                );
            }
        }
    }

    let pods = state.owned(&PODS, &uid);
    let succeeded = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
    let failed = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
    let active: Vec<&Value> = pods
        .iter()
        .map(|p| &**p)
        .filter(|p| {
            !matches!(phase(p), "Succeeded" | "Failed")
                && p.pointer("/metadata/deletionTimestamp").is_none()
        })
        .collect();
    let ready = active.iter().filter(|p| phase(p) == "Running").count() as i64;
    let completions = int(job.pointer("/spec/completions"), 1);
    let parallelism = int(job.pointer("/spec/parallelism"), 1);
    let backoff_limit = int(job.pointer("/spec/backoffLimit"), 6);
    let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    let indexed = job.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");

    let complete = succeeded >= completions;
    let failed_out = failed > backoff_limit;
    let mut active_count = active.len() as i64;
    if !finished_cond && !suspended && !complete && !failed_out {
        let mut to_create = (parallelism.min(completions - succeeded) - active_count).max(0);
        let mut attempt = pods.len();
        let used_indexes: Vec<i64> = pods
            .iter()
            .filter(|p| phase(p) != "Failed")
            .filter_map(|p| {
                p.pointer("/metadata/labels/batch.kubernetes.io~1job-completion-index")?
                    .as_str()?
                    .parse()
                    .ok()
            })
            .collect();
        let mut next_index = (0..completions).filter(|i| !used_indexes.contains(i));
        while to_create > 0 {
            let index = if indexed { next_index.next() } else { None };
            let _ = state.create(
                &PODS,
                ns,
                new_pod(&job, attempt, index),
                &WriteOpts::manager(MANAGER),
            );
            attempt += 1;
            to_create -= 1;
            active_count += 1;
        }
    }
    if failed_out && !finished_cond {
        for p in &active {
            let _ = state.delete(&PODS, ns, name_of(p), &Default::default());
        }
        active_count = 0;
    }

    let _ = update_status(state, &JOBS, ns, name, MANAGER, |o| {
        let old = o.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut s = json!({
            "active": active_count,
            "ready": ready,
            "succeeded": succeeded,
            "failed": failed,
            "terminating": 0,
            "uncountedTerminatedPods": {},
        });
        if !suspended {
            s["startTime"] = old
                .get("startTime")
                .cloned()
                .unwrap_or_else(|| json!(now_rfc3339()));
        }
        let mut conds: Vec<Value> = old
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if complete && !finished_cond {
            conds.push(condition(
                "SuccessCriteriaMet",
                true,
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            ));
            conds.push(condition(
                "Complete",
                true,
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            ));
            s["completionTime"] = json!(now_rfc3339());
            s["active"] = json!(0);
        } else if failed_out && !finished_cond {
            conds.push(condition(
                "FailureTarget",
                true,
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ));
            conds.push(condition(
                "Failed",
                true,
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ));
        } else if let Some(t) = old.get("completionTime") {
            s["completionTime"] = t.clone();
        }
        if suspended {
            conds.retain(|c| c.get("type").and_then(Value::as_str) != Some("Suspended"));
            conds.push(condition(
                "Suspended",
                true,
                "JobSuspended",
                "Job suspended",
            ));
        }
        if !conds.is_empty() {
            s["conditions"] = json!(conds);
        }
        if indexed {
            let done: Vec<String> = pods
                .iter()
                .filter(|p| phase(p) == "Succeeded")
                .filter_map(|p| {
                    p.pointer("/metadata/labels/batch.kubernetes.io~1job-completion-index")?
                        .as_str()
                        .map(str::to_string)
                })
                .collect();
            if !done.is_empty() {
                s["completedIndexes"] = json!(done.join(","));
            }
        }
        s
    });
}
