//! `cluster up` over a RayCluster that exists (issue 14 item 4): ready means the change
//! took effect. KubeRay keeps `state: ready` through scale-ups and scale-downs, counts
//! terminating pods, and never rolls pod-template edits into running pods, and the fake
//! does the same (tests/it/support/fake_k8s/sim/kuberay.rs).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::common::*;

/// The test infra with the training role's worker group edited by `f` (on its YAML text).
fn training_infra(dir: &Path, f: impl Fn(&str) -> String) -> PathBuf {
    let text = std::fs::read_to_string(infra()).unwrap();
    let start = text.find("  training:").unwrap();
    let end = text.find("\ndeployments:").unwrap();
    let edited = format!("{}{}{}", &text[..start], f(&text[start..end]), &text[end..]);
    let path = dir.join("infra.yaml");
    std::fs::write(&path, edited).unwrap();
    path
}

fn replicas(n: i64) -> impl Fn(&str) -> String {
    move |t: &str| {
        t.replace("replicas: 1\n", &format!("replicas: {n}\n"))
            .replace("maxReplicas: 1\n", "maxReplicas: 4\n")
            .replace("minReplicas: 1\n", "minReplicas: 0\n")
    }
}

fn up(fake: &FakeK8s, infra: &Path, extra: &[&str]) -> (String, String) {
    let mut c = nrl(fake);
    c.args(["cluster", "up"])
        .arg(recipe())
        .arg("--infra")
        .arg(infra)
        .args(["--role", "training", "--timeout", "60s"])
        .args(extra);
    ok(c)
}

fn live_pods(fake: &FakeK8s) -> Vec<Value> {
    fake.pods("default", "ray.io/cluster=rc-train")
        .into_iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .collect()
}

fn running_and_ready(p: &Value) -> bool {
    p["status"]["phase"] == "Running"
        && p["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn status(fake: &FakeK8s, field: &str) -> Option<Value> {
    fake.field(
        "ray.io/v1",
        "RayCluster",
        "default",
        "rc-train",
        &format!("status.{field}"),
    )
}

/// Scale 1 -> 2 -> 1: `cluster up` prints "ready" only once exactly the wanted workers
/// run (before the fix it printed "updated, ready" at once, with 1/1 workers, because
/// `state` stays `ready`).
#[test]
fn up_after_a_scale_change_is_ready_only_when_the_workers_are() {
    let fake = FakeK8s::start();
    let d = tempfile::tempdir().unwrap();
    let (out, _) = up(&fake, &training_infra(d.path(), replicas(1)), &[]);
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train created, ready"
    );
    // Slow pods: a new worker takes a while to start, a removed one to terminate.
    fake.set_timings(|t| {
        t.pod_start = Duration::from_millis(700);
        t.pod_termination = Duration::from_millis(900);
    });

    let (out, err) = up(&fake, &training_infra(d.path(), replicas(2)), &[]);
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train updated (spec.workerGroupSpecs[0].replicas), ready"
    );
    assert!(err.contains("RayCluster rc-train is ready."), "{err}");
    let pods = live_pods(&fake);
    assert_eq!(pods.len(), 3, "{pods:#?}");
    assert!(pods.iter().all(running_and_ready), "{pods:#?}");
    assert_eq!(status(&fake, "readyWorkerReplicas"), Some(json!(2)));
    assert_eq!(status(&fake, "desiredWorkerReplicas"), Some(json!(2)));

    let (out, _) = up(&fake, &training_infra(d.path(), replicas(1)), &[]);
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train updated (spec.workerGroupSpecs[0].replicas), ready"
    );
    // The removed worker is gone from KubeRay's counters (they include terminating pods)
    // and exactly one head and one worker are left.
    assert_eq!(status(&fake, "readyWorkerReplicas"), Some(json!(1)));
    let pods = live_pods(&fake);
    assert_eq!(pods.len(), 2, "{pods:#?}");
    assert!(pods.iter().all(running_and_ready), "{pods:#?}");
    // KubeRay kept `state: ready` all along.
    assert_eq!(status(&fake, "state"), Some(json!("ready")));
}

/// A pod-template edit is drift that KubeRay never applies to running pods: `cluster up`
/// says so and points at --recreate instead of waiting for it; --recreate applies it.
#[test]
fn a_template_edit_is_reported_as_drift_with_recreate_advice() {
    let fake = FakeK8s::start();
    let d = tempfile::tempdir().unwrap();
    up(&fake, &training_infra(d.path(), |t| t.to_string()), &[]);
    let before: Vec<String> = live_pods(&fake)
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let edited = training_infra(d.path(), |t| {
        t.replace(
            "                - name: ray-worker\n",
            "                - name: ray-worker\n                  env: [{name: NCCL_DEBUG, value: INFO}]\n",
        )
    });
    let (out, err) = up(&fake, &edited, &[]);
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train unchanged, ready; pod templates drifted, not applied (spec.workerGroupSpecs[0].template.spec.containers[0].env): run with --recreate to apply them"
    );
    assert!(
        err.contains("KubeRay does not roll template changes into running pods"),
        "{err}"
    );
    let live = fake
        .get("ray.io/v1", "RayCluster", "default", "rc-train")
        .unwrap();
    assert!(
        live["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
            .get("env")
            .is_none(),
        "{live:#?}"
    );
    let after: Vec<String> = live_pods(&fake)
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(before, after, "no pod was replaced");

    let (out, _) = up(&fake, &edited, &["--recreate"]);
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train recreated (spec.workerGroupSpecs[0].template.spec.containers[0].env), ready"
    );
    let worker = fake
        .pods("default", "ray.io/cluster=rc-train,ray.io/node-type=worker")
        .into_iter()
        .find(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .unwrap();
    assert_eq!(
        worker["spec"]["containers"][0]["env"],
        json!([{"name": "NCCL_DEBUG", "value": "INFO"}])
    );
}

/// A Deployment whose template changed is "available" only once rolled out, as
/// `kubectl rollout status` decides (spec observed, every replica new and available, no
/// old one left); before the fix the old pod's readiness ended the wait at once.
#[test]
fn up_after_a_deployment_template_change_waits_for_the_rollout() {
    let fake = FakeK8s::start();
    let d = tempfile::tempdir().unwrap();
    let infra_with = |image: &str| {
        let text = std::fs::read_to_string(infra())
            .unwrap()
            .replace("vllm/vllm-openai:v0.9.0", image);
        let path = d.path().join("infra.yaml");
        std::fs::write(&path, text).unwrap();
        path
    };
    let up_vllm = |infra: &Path| {
        let mut c = nrl(&fake);
        c.args(["cluster", "up"])
            .arg(recipe())
            .arg("--infra")
            .arg(infra)
            .args(["--target", "deployments.vllm", "--timeout", "60s"]);
        ok(c)
    };
    up_vllm(&infra_with("vllm/vllm-openai:v0.9.0"));
    let old: Vec<String> = fake
        .pods("default", "app=vllm")
        .iter()
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(old.len(), 1);
    fake.set_timings(|t| t.pod_start = Duration::from_millis(800));
    let (out, _) = up_vllm(&infra_with("vllm/vllm-openai:v0.9.1"));
    assert!(out.contains("Deployment vllm applied, available"), "{out}");
    let dep = fake
        .get("apps/v1", "Deployment", "default", "vllm")
        .unwrap();
    assert_eq!(
        dep["status"]["observedGeneration"],
        dep["metadata"]["generation"]
    );
    assert_eq!(dep["status"]["updatedReplicas"], 1);
    assert_eq!(dep["status"]["replicas"], 1);
    assert_eq!(dep["status"]["availableReplicas"], 1);
    let live: Vec<Value> = fake
        .pods("default", "app=vllm")
        .into_iter()
        .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none())
        .collect();
    assert_eq!(live.len(), 1, "{live:#?}");
    assert_eq!(
        live[0]["spec"]["containers"][0]["image"],
        "vllm/vllm-openai:v0.9.1"
    );
    assert!(!old.contains(&live[0]["metadata"]["name"].as_str().unwrap().to_string()));
}
