//! Retries of transient errors, permission errors that name what was refused, and
//! deadlines on calls that never get an answer.

use std::time::Duration;

use nrl::k8s::ApplyOptions;
use serde_json::json;

use super::common::*;

#[tokio::test]
async fn a_burst_of_500s_is_retried_and_the_apply_succeeds() {
    let (fake, k8s) = setup().await;
    fake.fail_next(FaultMatch::verb("patch", "configmaps"), 500, 3);
    k8s.apply(&configmap("cm", json!({"a": "1"})), ApplyOptions::default())
        .await
        .unwrap();
    let statuses: Vec<u16> = fake
        .requests(|r| r.verb == "patch")
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [500, 500, 500, 201]);
}

#[tokio::test]
async fn throttling_is_retried_for_reads_too() {
    let (fake, k8s) = setup().await;
    fake.fail_next(FaultMatch::verb("list", "configmaps"), 429, 2);
    fake.fail_next(FaultMatch::verb("get", "configmaps"), 503, 1);
    let cms = ar("ConfigMap");
    k8s.list(&cms, "default", None).await.unwrap();
    assert!(k8s.get(&cms, "default", "x").await.unwrap().is_none());
    let statuses: Vec<u16> = fake
        .requests(|r| r.resource.as_deref() == Some("configmaps"))
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [429, 429, 200, 503, 404]);
}

#[tokio::test]
async fn errors_that_outlast_the_retries_are_reported() {
    let (fake, k8s) = setup().await;
    fake.inject(
        FaultMatch::verb("get", "configmaps"),
        FaultAction::Status(503),
        None,
    );
    let err = k8s.get(&ar("ConfigMap"), "default", "x").await.unwrap_err();
    assert_eq!(err.code, "nrl::k8s::server");
    assert!(
        err.message
            .contains("503 while trying to get configmaps/x in namespace `default`"),
        "{}",
        err.message
    );
    assert_eq!(fake.requests(|r| r.verb == "get").len(), 6);
}

#[tokio::test]
async fn not_found_and_invalid_are_not_retried() {
    let (fake, k8s) = setup().await;
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}});
    let err = k8s.apply(&bad, ApplyOptions::default()).await.unwrap_err();
    assert_eq!(err.code, "nrl::k8s::invalid");
    assert_eq!(fake.requests(|r| r.verb == "patch").len(), 1);
}

#[tokio::test]
async fn forbidden_names_verb_resource_and_namespace() {
    let (fake, k8s) = setup().await;
    fake.deny("patch", "rayclusters", "default");
    let err = k8s
        .apply(&raycluster("rc", 1), ApplyOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::forbidden");
    assert!(
        err.message
            .starts_with("forbidden: cannot patch rayclusters/rc in namespace `default`"),
        "{}",
        err.message
    );
    let help = err.help.clone().unwrap();
    assert!(
        help.contains("`patch`") && help.contains("`rayclusters`") && help.contains("`default`"),
        "{help}"
    );
    // 403 is final: one request.
    assert_eq!(fake.requests(|r| r.verb == "patch").len(), 1);

    fake.deny("watch", "rayclusters", "*");
    let err = k8s
        .wait_for(
            &ar("RayCluster"),
            "default",
            "rc",
            Duration::from_secs(20),
            "ready",
            nrl::k8s::wait::raycluster_ready,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::forbidden");
    assert!(
        err.message.contains("cannot watch rayclusters"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_hanging_api_hits_the_request_deadline_with_a_clear_error() {
    let fake = FakeK8s::start();
    let k8s = connect(&fake, Some(Duration::from_millis(800))).await;
    fake.inject(FaultMatch::verb("patch", "*"), FaultAction::Hang, None);
    let err = k8s
        .apply(&configmap("cm", json!({})), ApplyOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::timeout");
    assert_eq!(
        err.message,
        "the Kubernetes API did not answer within 800ms while trying to patch configmaps/cm in namespace `default`"
    );
}

#[tokio::test]
async fn a_hanging_watch_hits_the_wait_deadline_with_a_clear_error() {
    let (fake, k8s) = setup().await;
    fake.inject(
        FaultMatch::verb("list", "rayclusters"),
        FaultAction::Hang,
        None,
    );
    let err = k8s
        .wait_for(
            &ar("RayCluster"),
            "default",
            "rc",
            Duration::from_secs(1),
            "ready",
            nrl::k8s::wait::raycluster_ready,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::timeout");
    assert_eq!(
        err.message,
        "timed out after 1s waiting for RayCluster rc in namespace `default` to be ready: the Kubernetes API never answered the watch"
    );
}

#[tokio::test]
async fn an_endless_answer_fails_at_the_size_limit_and_is_not_retried() {
    let (fake, k8s) = setup().await;
    fake.inject(
        FaultMatch::verb("get", "configmaps"),
        FaultAction::Endless,
        None,
    );
    let started = std::time::Instant::now();
    let err = k8s
        .get(&ar("ConfigMap"), "default", "cm")
        .await
        .unwrap_err();
    // The production limit (64 MiB), long before any deadline.
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.code, "nrl::k8s::response_too_large");
    assert_eq!(
        err.message,
        "the API server sent more than 64 MiB for /api/v1/namespaces/default/configmaps/cm \
         while trying to get configmaps/cm in namespace `default`; stopped reading"
    );
    assert!(err.help.is_some());
    assert_eq!(fake.requests(|r| r.verb == "get").len(), 1, "not retried");
}

#[tokio::test]
async fn an_announced_length_over_the_limit_fails_before_reading() {
    let fake = FakeK8s::start();
    let k8s = nrl::k8s::K8s::connect(&nrl::k8s::ConnectOptions {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        body_limits: Some(nrl::k8s::body_limit::BodyLimits {
            response: 1 << 20,
            watch_line: 1 << 20,
        }),
        ..nrl::k8s::ConnectOptions::default()
    })
    .await
    .unwrap();
    fake.inject(
        FaultMatch::verb("list", "configmaps"),
        FaultAction::Oversized(3 << 30),
        None,
    );
    let err = k8s
        .list(&ar("ConfigMap"), "default", None)
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::response_too_large");
    assert!(
        err.message.contains("announced a 3221225472-byte answer")
            && err.message.contains("over 1 MiB"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn a_watch_event_without_end_fails_the_wait_at_once() {
    let fake = FakeK8s::start();
    let k8s = nrl::k8s::K8s::connect(&nrl::k8s::ConnectOptions {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        body_limits: Some(nrl::k8s::body_limit::BodyLimits {
            response: 1 << 20,
            watch_line: 1 << 20,
        }),
        ..nrl::k8s::ConnectOptions::default()
    })
    .await
    .unwrap();
    fake.inject(
        FaultMatch::verb("watch", "rayclusters"),
        FaultAction::Endless,
        None,
    );
    let started = std::time::Instant::now();
    let err = k8s
        .wait_for(
            &ar("RayCluster"),
            "default",
            "rc",
            Duration::from_secs(60),
            "ready",
            nrl::k8s::wait::raycluster_ready,
        )
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.code, "nrl::k8s::response_too_large");
    assert_eq!(
        err.message,
        "the API server sent a watch event over 1 MiB (no line end) for \
         /apis/ray.io/v1/namespaces/default/rayclusters while trying to watch rayclusters in \
         namespace `default`; stopped reading"
    );
    assert_eq!(fake.requests(|r| r.watch).len(), 1, "not resumed");
}
