//! ref-orchestration §10.5 (test_k8s.py), ported. The reference created objects and
//! merge-patched on 409; nrl's one server-side apply does both, so the apply cases check
//! that instead. Its `ignore_missing` flag became a return value: delete reports whether
//! the object existed and a missing one is never an error. §10.5 #1-#2 (in-cluster vs
//! kubeconfig) are unit tests of `k8s::client`.

use std::time::Duration;

use nrl::k8s::ApplyOptions;
use nrl::k8s::wait::raycluster_ready;
use serde_json::json;

use super::common::*;

#[tokio::test]
async fn apply_raycluster_posts_on_first_call() {
    let (fake, k8s) = setup().await;
    let out = k8s
        .apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap();
    assert_eq!(out["metadata"]["name"], "rc");
    let calls: Vec<(String, u16)> = fake
        .requests(|r| r.resource.as_deref() == Some("rayclusters"))
        .iter()
        .map(|r| (r.method.clone(), r.status))
        .collect();
    assert_eq!(calls, [("PATCH".to_string(), 201)]);
}

#[tokio::test]
async fn apply_raycluster_patches_on_409_conflict() {
    // An existing object is updated by the same apply (no create-then-409-then-patch).
    let (fake, k8s) = setup().await;
    fake.set_cluster_fate("rc", ClusterFate::Unmanaged);
    k8s.apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap();
    let out = k8s
        .apply(&raycluster("rc", 3), ApplyOptions::default())
        .await
        .unwrap();
    assert_eq!(out["spec"]["workerGroupSpecs"][0]["replicas"], 3);
    let statuses: Vec<u16> = fake
        .requests(|r| r.resource.as_deref() == Some("rayclusters"))
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [201, 200]);
}

#[tokio::test]
async fn apply_raycluster_non_409_bubbles_up() {
    let (fake, k8s) = setup().await;
    fake.inject(
        FaultMatch::verb("patch", "rayclusters"),
        FaultAction::Status(500),
        None,
    );
    let err = k8s
        .apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::server");
    assert!(
        fake.requests(|r| r.verb == "patch").len() > 1,
        "retried first"
    );
}

#[tokio::test]
async fn delete_raycluster_swallows_404_when_ignore_missing() {
    let (_fake, k8s) = setup().await;
    assert!(
        !k8s.delete(&ar("RayCluster"), "default", "nope")
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn delete_raycluster_raises_404_when_not_ignoring() {
    // The caller learns that nothing was deleted and decides; waiting on a missing object
    // returns at once.
    let (_fake, k8s) = setup().await;
    let rcs = ar("RayCluster");
    assert!(
        !k8s.delete_and_wait(&rcs, "default", "nope", Duration::from_secs(5))
            .await
            .unwrap()
    );
    k8s.wait_deleted(&rcs, "default", "nope", Duration::from_secs(5))
        .await
        .unwrap();
}

#[tokio::test]
async fn delete_raycluster_non_404_always_raises() {
    let (fake, k8s) = setup().await;
    fake.inject(
        FaultMatch::verb("delete", "rayclusters"),
        FaultAction::Status(500),
        None,
    );
    let err = k8s
        .delete(&ar("RayCluster"), "default", "rc")
        .await
        .unwrap_err();
    assert!(
        err.message
            .contains("500 while trying to delete rayclusters/rc"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn wait_for_ready_returns_when_state_ready() {
    let (fake, k8s) = setup().await;
    fake.set_cluster_fate("rc", ClusterFate::Unmanaged);
    k8s.apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap();
    fake.patch_status("ray.io/v1", "RayCluster", "default", "rc", ready_status(1));
    let rc = k8s
        .wait_for(
            &ar("RayCluster"),
            "default",
            "rc",
            Duration::from_secs(5),
            "ready",
            raycluster_ready,
        )
        .await
        .unwrap();
    assert_eq!(rc["status"]["state"], "ready");
}

#[tokio::test]
async fn wait_for_ready_raises_on_timeout() {
    let (fake, k8s) = setup().await;
    fake.set_cluster_fate("rc", ClusterFate::Unmanaged);
    k8s.apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap();
    fake.patch_status(
        "ray.io/v1",
        "RayCluster",
        "default",
        "rc",
        json!({"state": "provisioning"}),
    );
    let err = k8s
        .wait_for(
            &ar("RayCluster"),
            "default",
            "rc",
            Duration::from_millis(700),
            "ready",
            raycluster_ready,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::timeout");
    assert!(
        err.message.contains("provisioning"),
        "the last state: {}",
        err.message
    );
}

#[tokio::test]
async fn delete_configmap_returns_true_on_success() {
    let (_fake, k8s) = setup().await;
    k8s.apply(
        &configmap("nemo-rl-endpoints-run-k", json!({})),
        ApplyOptions::default(),
    )
    .await
    .unwrap();
    assert!(
        k8s.delete(&ar("ConfigMap"), "default", "nemo-rl-endpoints-run-k")
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn delete_configmap_returns_false_on_404_when_ignoring() {
    let (_fake, k8s) = setup().await;
    assert!(
        !k8s.delete(&ar("ConfigMap"), "default", "nemo-rl-endpoints-x")
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn delete_configmap_raises_on_404_when_not_ignoring() {
    // As for RayClusters: a missing object is reported, not raised; a namespace that
    // does not exist is still just "not there".
    let (_fake, k8s) = setup().await;
    assert!(
        !k8s.delete(&ar("ConfigMap"), "no-such-ns", "cm")
            .await
            .unwrap()
    );
}
