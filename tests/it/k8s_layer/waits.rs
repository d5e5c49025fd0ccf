//! Watch-based waits: verdicts, deadlines, a constant request count, and resuming after a
//! dropped watch or 410 Gone without missing the event waited for.

use std::time::Duration;

use nrl::k8s::ApplyOptions;
use nrl::k8s::wait::{
    Verdict, deployment_available, pod_running, raycluster_ready, rayjob_terminal,
};
use serde_json::json;

use super::common::*;

#[tokio::test]
async fn waits_for_a_raycluster_to_become_ready() {
    let (fake, k8s) = setup().await;
    k8s.apply(&raycluster("rc", 2), ApplyOptions::default())
        .await
        .unwrap();
    let ready = k8s
        .wait_for(
            &ar("RayCluster"),
            "default",
            "rc",
            Duration::from_secs(20),
            "ready",
            raycluster_ready,
        )
        .await
        .unwrap();
    assert_eq!(ready["status"]["state"], "ready");
    assert_eq!(ready["status"]["readyWorkerReplicas"], 2);
    assert_eq!(fake.requests(|r| r.watch).len(), 1);
}

/// KubeRay v1.5.1 never sets `state: failed` (the constant is deprecated): a head that
/// keeps crashing leaves the cluster not ready, and the timeout shows HeadPodReady's
/// reason from the last status.
#[tokio::test]
async fn a_crash_looping_head_times_out_with_head_pod_ready_in_the_status() {
    let (fake, k8s) = setup().await;
    fake.set_cluster_fate("rc", ClusterFate::HeadCrashLoop);
    k8s.apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap();
    let err = k8s
        .wait_for(
            &ar("RayCluster"),
            "default",
            "rc",
            Duration::from_secs(2),
            "ready",
            raycluster_ready,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::timeout");
    assert!(err.message.contains("CrashLoopBackOff"), "{}", err.message);
    assert!(
        !err.message.contains("\"state\":\"failed\""),
        "{}",
        err.message
    );
}

/// Regression of issue 14 item 4: `state` stays `ready` through a scale-up, so the wait
/// must hold until the new spec's workers are ready.
#[tokio::test]
async fn raycluster_ready_after_a_scale_up_means_the_new_workers_are_ready() {
    let (fake, k8s) = setup().await;
    fake.set_timings(|t| t.pod_start = Duration::from_millis(600));
    let rcs = ar("RayCluster");
    let wait = || {
        k8s.wait_for(
            &rcs,
            "default",
            "rc",
            Duration::from_secs(20),
            "ready",
            raycluster_ready,
        )
    };
    k8s.apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap();
    wait().await.unwrap();
    k8s.apply(&raycluster("rc", 2), ApplyOptions::default())
        .await
        .unwrap();
    let ready = wait().await.unwrap();
    assert_eq!(ready["status"]["state"], "ready");
    assert_eq!(ready["status"]["desiredWorkerReplicas"], 2);
    assert_eq!(ready["status"]["readyWorkerReplicas"], 2);
    // The fake keeps `state` sticky, as KubeRay does: it never went back to "".
    assert_eq!(
        fake.field("ray.io/v1", "RayCluster", "default", "rc", "status.state"),
        Some(json!("ready"))
    );
}

#[tokio::test]
async fn a_wait_that_times_out_reports_the_last_status() {
    let (fake, k8s) = setup().await;
    fake.set_cluster_fate("rc", ClusterFate::StuckPending);
    k8s.apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap();
    let err = k8s
        .wait_for(
            &ar("RayCluster"),
            "default",
            "rc",
            Duration::from_secs(2),
            "ready",
            raycluster_ready,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::timeout");
    assert!(
        err.message
            .starts_with("timed out after 2s waiting for RayCluster rc in namespace `default` to be ready (last status: "),
        "{}",
        err.message
    );
    // An object that never appears is reported as such.
    let err = k8s
        .wait_for(
            &ar("RayCluster"),
            "default",
            "never",
            Duration::from_millis(500),
            "ready",
            raycluster_ready,
        )
        .await
        .unwrap_err();
    assert!(
        err.message.ends_with("(it does not exist)"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn the_check_sees_every_state_and_can_fail_the_wait() {
    let (fake, k8s) = setup().await;
    fake.set_cluster_fate("rc", ClusterFate::Unmanaged);
    let seen = std::sync::Mutex::new(Vec::new());
    let rcs = ar("RayCluster");
    let wait = k8s.wait_for(
        &rcs,
        "default",
        "rc",
        Duration::from_secs(10),
        "ready",
        |o| {
            let state = o.and_then(|o| o.pointer("/status/state")).cloned();
            seen.lock().unwrap().push(state.clone());
            match state.as_ref().and_then(|s| s.as_str()) {
                Some("suspended") => {
                    Verdict::<()>::Fail(nrl::diag::Diag::api("test::suspended", "suspended"))
                }
                _ => Verdict::Pending,
            }
        },
    );
    let drive = async {
        // Create the cluster only after the check has seen it absent.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while seen.lock().unwrap().is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "the check ran on the absent object"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        k8s.apply(&raycluster("rc", 1), ApplyOptions::default())
            .await
            .unwrap();
        fake.patch_status(
            "ray.io/v1",
            "RayCluster",
            "default",
            "rc",
            json!({"state": "suspended"}),
        );
    };
    let (res, ()) = tokio::join!(wait, drive);
    assert_eq!(res.unwrap_err().code, "test::suspended");
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.first(), Some(&None), "absent first: {seen:?}");
    assert_eq!(seen.last(), Some(&Some(json!("suspended"))));
}

#[tokio::test]
async fn deployment_availability() {
    let (_fake, k8s) = setup().await;
    let dep = |image: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "vllm"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "vllm"}},
                 "template": {"metadata": {"labels": {"app": "vllm"}},
                              "spec": {"containers": [{"name": "vllm", "image": image}]}}}})
    };
    let deployments = ar("Deployment");
    let wait = || {
        k8s.wait_for(
            &deployments,
            "default",
            "vllm",
            Duration::from_secs(20),
            "available",
            deployment_available,
        )
    };
    k8s.apply(&dep("vllm:1"), ApplyOptions::default())
        .await
        .unwrap();
    let d = wait().await.unwrap();
    assert_eq!(d["status"]["readyReplicas"], 2);
    // Regression of issue 14 item 4: after a template change the old pods stay ready
    // while the new ones start; rolled out means every replica is new and available and
    // the old ones are gone (`kubectl rollout status`).
    k8s.apply(&dep("vllm:2"), ApplyOptions::default())
        .await
        .unwrap();
    let d = wait().await.unwrap();
    assert_eq!(
        d["status"]["observedGeneration"],
        d["metadata"]["generation"]
    );
    assert_eq!(d["status"]["updatedReplicas"], 2);
    assert_eq!(d["status"]["replicas"], 2);
    assert_eq!(d["status"]["availableReplicas"], 2);
}

#[test]
fn deployment_rollout_follows_kubectl() {
    use nrl::k8s::wait::deployment_rollout;
    let d = |generation: i64, status: serde_json::Value| {
        json!({"metadata": {"name": "web", "generation": generation},
               "spec": {"replicas": 2}, "status": status})
    };
    let pending = |o: &serde_json::Value| deployment_rollout(o).unwrap();
    let full = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                      "availableReplicas": 2, "readyReplicas": 2});
    assert_eq!(pending(&d(2, full.clone())), None);
    assert_eq!(
        pending(&d(3, full.clone())).as_deref(),
        Some("waiting for the deployment spec update to be observed")
    );
    let s = json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 1,
                   "availableReplicas": 3, "readyReplicas": 3});
    assert_eq!(
        pending(&d(2, s)).as_deref(),
        Some("1 out of 2 new replicas have been updated")
    );
    let s = json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 2,
                   "availableReplicas": 3, "readyReplicas": 3});
    assert_eq!(
        pending(&d(2, s)).as_deref(),
        Some("1 old replicas are pending termination")
    );
    let s = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2,
                   "availableReplicas": 1, "readyReplicas": 2});
    assert_eq!(
        pending(&d(2, s)).as_deref(),
        Some("1 of 2 updated replicas are available")
    );
    let s = json!({"observedGeneration": 2, "conditions": [
        {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}]});
    let err = deployment_rollout(&d(2, s)).unwrap_err();
    assert_eq!(
        err.message,
        "deployment \"web\" exceeded its progress deadline"
    );
}

#[tokio::test]
async fn a_dropped_watch_resumes_without_missing_the_ready_event() {
    let (fake, k8s) = setup().await;
    fake.set_cluster_fate("rc", ClusterFate::Unmanaged);
    k8s.apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap();
    // The first watch connection drops after one event; the watch that replaces it is
    // held back until the history has been compacted, so it gets 410 Gone (an ERROR
    // event) and the watcher must relist to see the ready state it missed.
    fake.inject(
        FaultMatch::any().watch(true),
        FaultAction::DropWatchAfter(1),
        Some(1),
    );
    let rcs = ar("RayCluster");
    let wait = k8s.wait_for(
        &rcs,
        "default",
        "rc",
        Duration::from_secs(20),
        "ready",
        raycluster_ready,
    );
    let drive = async {
        assert!(
            fake.wait_until(Duration::from_secs(5), |f| !f
                .requests(|r| r.watch)
                .is_empty())
                .await
        );
        fake.inject(
            FaultMatch::any().watch(true),
            FaultAction::Delay(Duration::from_millis(500)),
            Some(1),
        );
        fake.patch_status(
            "ray.io/v1",
            "RayCluster",
            "default",
            "rc",
            json!({"state": "provisioning"}),
        );
        // The ready event lands while the watch is down, then its history is gone.
        fake.patch_status("ray.io/v1", "RayCluster", "default", "rc", ready_status(1));
        fake.compact_history();
    };
    let (res, ()) = tokio::join!(wait, drive);
    assert_eq!(res.unwrap()["status"]["state"], "ready");
    let log: Vec<(String, u16)> = fake
        .requests(|r| r.resource.as_deref() == Some("rayclusters") && r.verb != "patch")
        .iter()
        .map(|r| (r.verb.clone(), r.status))
        .collect();
    // kube-runtime either relists at once after the drop or re-watches, gets 410 and
    // then relists; either way the state comes from a second list.
    let lists = log.iter().filter(|(v, _)| v == "list").count();
    assert!(lists >= 2, "relisted: {log:?}");
}

#[tokio::test]
async fn a_long_wait_costs_one_list_and_one_watch() {
    let (fake, k8s) = setup().await;
    fake.set_cluster_fate("rc", ClusterFate::Unmanaged);
    k8s.apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap();
    fake.clear_request_log();
    let rcs = ar("RayCluster");
    let wait = k8s.wait_for(
        &rcs,
        "default",
        "rc",
        Duration::from_secs(60),
        "ready",
        raycluster_ready,
    );
    // Many status changes while waiting: each arrives on the one watch.
    let drive = async {
        for i in 0..20 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            fake.patch_status(
                "ray.io/v1",
                "RayCluster",
                "default",
                "rc",
                json!({"readyWorkerReplicas": i}),
            );
        }
        fake.patch_status("ray.io/v1", "RayCluster", "default", "rc", ready_status(1));
    };
    let (res, ()) = tokio::join!(wait, drive);
    res.unwrap();
    let reqs = fake.requests(|r| r.resource.as_deref() == Some("rayclusters"));
    let kinds: Vec<(String, bool)> = reqs.iter().map(|r| (r.verb.clone(), r.watch)).collect();
    assert_eq!(
        kinds,
        [("list".to_string(), false), ("watch".to_string(), true)],
        "{reqs:#?}"
    );
}

fn rayjob(name: &str) -> serde_json::Value {
    let tmpl =
        |c: &str| json!({"spec": {"containers": [{"name": c, "image": "rayproject/ray:2.60.0"}]}});
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": name},
           "spec": {"entrypoint": "python train.py", "submissionMode": "HTTPMode",
                    "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": tmpl("ray-head")},
                                       "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "rayStartParams": {},
                                                             "template": tmpl("ray-worker")}]}}})
}

#[tokio::test]
async fn rayjob_waits_end_on_every_terminal_deployment_status() {
    let (fake, k8s) = setup().await;
    fake.set_rayjob_script("boom", RayJobScript::fails("OOM"));
    k8s.apply(&rayjob("boom"), ApplyOptions::default())
        .await
        .unwrap();
    let rjs = ar("RayJob");
    let done = k8s
        .wait_for(
            &rjs,
            "default",
            "boom",
            Duration::from_secs(20),
            "finished",
            rayjob_terminal,
        )
        .await
        .unwrap();
    assert_eq!(done["status"]["jobDeploymentStatus"], "Failed");
    assert_eq!(done["status"]["jobStatus"], "FAILED");
    // States the simulation does not reach by itself, set by hand: they end the wait too
    // (the reference kept polling them for a day).
    for (name, state) in [("invalid", "ValidationFailed")] {
        let mut rj = rayjob(name);
        rj["status"] = json!({"jobDeploymentStatus": state});
        fake.put(rj);
        let o = k8s
            .wait_for(
                &rjs,
                "default",
                name,
                Duration::from_secs(5),
                "finished",
                rayjob_terminal,
            )
            .await
            .unwrap();
        assert_eq!(o["status"]["jobDeploymentStatus"], state);
    }
    // Issue 14 item 5: Suspended is where a RayJob waits for Kueue's admission; it does
    // not end the wait.
    let mut rj = rayjob("parked");
    rj["spec"]["suspend"] = json!(true);
    rj["spec"]["shutdownAfterJobFinishes"] = json!(true);
    fake.put(rj);
    let err = k8s
        .wait_for(
            &rjs,
            "default",
            "parked",
            Duration::from_secs(2),
            "finished",
            rayjob_terminal,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::timeout");
    assert_eq!(
        fake.field(
            "ray.io/v1",
            "RayJob",
            "default",
            "parked",
            "status.jobDeploymentStatus"
        ),
        Some(json!("Suspended"))
    );
}

#[tokio::test]
async fn pod_waits_see_running_or_the_end() {
    let (fake, k8s) = setup().await;
    fake.put(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dev", "namespace": "default"},
                    "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}));
    let pods = ar("Pod");
    let p = k8s
        .wait_for(
            &pods,
            "default",
            "dev",
            Duration::from_secs(10),
            "Running",
            pod_running,
        )
        .await
        .unwrap();
    assert_eq!(p["status"]["phase"], "Running");
    fake.set_pod_phase("default", "dev", "Failed");
    let err = k8s
        .wait_for(
            &pods,
            "default",
            "dev",
            Duration::from_secs(10),
            "Running",
            pod_running,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::pod_terminated");
    assert!(err.message.contains("exit code 1"), "{}", err.message);
}
