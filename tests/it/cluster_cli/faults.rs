//! Faults through the binary: retried bursts, a dropped watch, a hanging API, a denied
//! verb, and the cost of a long wait.

use std::io::Read;
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use super::common::*;

#[test]
fn bursts_of_500_and_429_are_retried_and_up_succeeds() {
    let fake = FakeK8s::start();
    fake.fail_next(FaultMatch::verb("patch", "rayclusters"), 500, 2);
    fake.fail_next(FaultMatch::verb("get", "rayclusters"), 429, 2);
    fake.fail_next(FaultMatch::verb("list", "rayclusters"), 503, 1);
    let (out, _) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "training"],
    ));
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train created, ready"
    );
    let rc = calls(&fake, "rayclusters");
    let of = |verb: &str| -> Vec<u16> {
        rc.iter()
            .filter(|(v, _)| v == verb)
            .map(|(_, s)| *s)
            .collect()
    };
    assert_eq!(of("get"), [429, 429, 404]);
    assert_eq!(of("patch"), [500, 500, 201]);
    assert_eq!(of("list")[..2], [503, 200]);
}

#[test]
fn a_watch_dropped_mid_wait_resumes_without_missing_ready() {
    let fake = FakeK8s::start();
    fake.set_cluster_fate("rc-train", ClusterFate::Unmanaged);
    fake.inject(
        FaultMatch::verb("watch", "rayclusters"),
        FaultAction::DropWatchAfter(1),
        Some(1),
    );
    let ctx = context(&fake);
    let mut child = ctx
        .command()
        .args(recipe_args(&["cluster", "up"], &["--role", "training"]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(fake.wait_until_blocking(Duration::from_secs(30), |f| {
        !f.requests(|r| r.watch && r.resource.as_deref() == Some("rayclusters"))
            .is_empty()
    }));
    // The re-watch is held back until the ready state and a compaction have happened,
    // so it gets 410 Gone and the ready state is only visible by relisting.
    fake.inject(
        FaultMatch::verb("watch", "rayclusters"),
        FaultAction::Delay(Duration::from_millis(500)),
        Some(1),
    );
    fake.patch_status(
        "ray.io/v1",
        "RayCluster",
        "default",
        "rc-train",
        json!({"state": "provisioning"}),
    );
    make_ready(&fake);
    fake.compact_history();
    assert!(
        fake.wait_until_blocking(Duration::from_secs(30), |_| matches!(
            child.try_wait(),
            Ok(Some(_))
        ))
    );
    let status = child.wait().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(status.success(), "{out}");
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train created, ready"
    );
    let lists = fake.requests(|r| r.verb == "list" && r.resource.as_deref() == Some("rayclusters"));
    assert!(lists.len() >= 2, "relisted after the drop: {lists:#?}");
}

/// Issue 14 item 6: a watch that answers 200 and then goes silent (no events, no close)
/// is taken for dead after `--watch-timeout` plus kube-runtime's 5 s margin and
/// re-established from the last resourceVersion, so `cluster up --wait` sees the ready
/// state long before its deadline. Before, no watch timeout was set (kube's 290 s) and the
/// wait sat on the stalled stream.
#[test]
fn a_stalled_watch_is_reestablished_well_before_the_deadline() {
    let fake = FakeK8s::start();
    fake.set_cluster_fate("rc-train", ClusterFate::Unmanaged);
    fake.inject(
        FaultMatch::verb("watch", "rayclusters"),
        FaultAction::Stall,
        Some(1),
    );
    let started = std::time::Instant::now();
    let ctx = context(&fake);
    let mut child = ctx
        .command()
        .args(recipe_args(
            &["cluster", "up"],
            &[
                "--role",
                "training",
                "--timeout",
                "120s",
                "--watch-timeout",
                "2s",
            ],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(fake.wait_until_blocking(Duration::from_secs(30), |f| {
        !f.requests(|r| r.watch && r.resource.as_deref() == Some("rayclusters"))
            .is_empty()
    }));
    // Ready while the only watch is stalled: only a new watch can deliver it.
    make_ready(&fake);
    assert!(
        fake.wait_until_blocking(Duration::from_secs(40), |_| matches!(
            child.try_wait(),
            Ok(Some(_))
        )),
        "still waiting on the stalled watch"
    );
    let elapsed = started.elapsed();
    let status = child.wait().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(status.success(), "{out}");
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train created, ready"
    );
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
    let watches = fake.requests(|r| r.watch && r.resource.as_deref() == Some("rayclusters"));
    assert!(watches.len() >= 2, "re-established: {watches:#?}");
    assert!(
        watches
            .iter()
            .all(|w| w.query_param("timeoutSeconds").as_deref() == Some("2")),
        "{watches:#?}"
    );
}

#[test]
fn a_hanging_api_hits_the_timeout_with_a_clear_error() {
    let fake = FakeK8s::start();
    fake.inject(
        FaultMatch::verb("list", "rayclusters"),
        FaultAction::Hang,
        None,
    );
    let err = fails(
        with_recipe(
            &fake,
            &["cluster", "up"],
            &["--role", "training", "--timeout", "2s"],
        ),
        3,
    );
    assert!(
        err.contains("timed out after 2s waiting for RayCluster rc-train in namespace `default` to be ready: the Kubernetes API never answered the watch"),
        "{err}"
    );
    fake.inject(FaultMatch::verb("get", "rayjobs"), FaultAction::Hang, None);
    let err = fails(
        with_recipe(
            &fake,
            &["cluster", "up"],
            &["--role", "gym", "--request-timeout", "1s"],
        ),
        3,
    );
    assert!(
        err.contains("the Kubernetes API did not answer within 1s while trying to get rayjobs/rc-gym in namespace `default`"),
        "{err}"
    );
}

#[test]
fn forbidden_names_verb_resource_and_namespace() {
    let fake = FakeK8s::start();
    fake.deny("patch", "rayclusters", "default");
    // The doctor's preflight sees the denial first and nothing is applied.
    let err = fails(
        with_recipe(&fake, &["cluster", "up"], &["--role", "training"]),
        2,
    );
    assert!(err.contains("nrl::doctor::access_denied"), "{err}");
    assert!(
        err.contains("you may not patch rayclusters.ray.io in namespace `default`"),
        "{err}"
    );
    assert!(
        !fake.request_log().iter().any(|r| r.is_apply()),
        "nothing applied"
    );
    // Past the doctor, the API's own 403 names verb, resource and namespace.
    let err = fails(
        with_recipe(
            &fake,
            &["cluster", "up"],
            &["--role", "training", "--skip-doctor"],
        ),
        3,
    );
    assert!(
        err.contains("forbidden: cannot patch rayclusters/rc-train in namespace `default`"),
        "{err}"
    );
    assert!(err.contains("cluster up (kuberay.training)"), "{err}");
    assert!(
        err.contains("allow verb `patch` on resource `rayclusters` in namespace `default`"),
        "{err}"
    );
    fake.allow_all();
    fake.deny("list", "pods", "*");
    let err = fails(with_recipe(&fake, &["status"], &[]), 3);
    assert!(
        err.contains("forbidden: cannot list pods in namespace `default`"),
        "{err}"
    );
}

/// A 30-second wait is one list and one watch, not a poll every few seconds.
#[test]
fn a_thirty_second_wait_costs_a_constant_number_of_requests() {
    let fake = FakeK8s::start();
    fake.set_cluster_fate("rc-train", ClusterFate::StuckPending);
    let err = fails(
        with_recipe(
            &fake,
            &["cluster", "up"],
            &["--role", "training", "--timeout", "30s"],
        ),
        3,
    );
    assert!(
        err.contains("timed out after 30s waiting for RayCluster rc-train"),
        "{err}"
    );
    // The timeout says where the pods are.
    assert!(err.contains("head rc-train-head-"), "{err}");
    let rc: Vec<String> = calls(&fake, "rayclusters")
        .into_iter()
        .map(|(v, _)| v)
        .collect();
    // get (exists?), patch (dry-run drift is skipped: absent), patch (apply), list, watch
    assert_eq!(rc, ["get", "patch", "list", "watch"], "{rc:?}");
}

/// `cluster up` runs the doctor's offline rules before applying: a literal secret in
/// `launch.env` stops it; `--skip-doctor` goes ahead.
#[test]
fn doctor_errors_stop_cluster_up_unless_skipped() {
    let fake = FakeK8s::start();
    let secret = "infra.launch.env.WANDB_API_KEY=\"0123456789abcdef0123456789abcdef01234567\"";
    let err = fails(
        with_recipe(
            &fake,
            &["cluster", "up"],
            &["--role", "training", "--no-wait", secret],
        ),
        2,
    );
    assert!(err.contains("nrl::doctor::literal_secret"), "{err}");
    assert!(err.contains("nrl::doctor::gate"), "{err}");
    assert!(
        !fake.request_log().iter().any(|r| r.is_apply()),
        "nothing applied"
    );
    let (out, _) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "training", "--no-wait", "--skip-doctor", secret],
    ));
    assert!(out.contains("rc-train"), "{out}");
    assert!(fake.request_log().iter().any(|r| r.is_apply()), "applied");
}

/// What KubeRay would have made of `rc-train` (the fake's operator leaves it alone here): a
/// head and one worker, and the status of a ready cluster (spec §2.7; KubeRay
/// `raycluster_controller.go` `calculateStatus`).
fn make_ready(fake: &FakeK8s) {
    for (pod, node_type) in [
        ("rc-train-head-x", "head"),
        ("rc-train-gpu-worker-x", "worker"),
    ] {
        fake.put(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod, "namespace": "default",
                         "labels": {"ray.io/cluster": "rc-train", "ray.io/node-type": node_type}},
            "spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.60.0"}]}}));
    }
    fake.patch_status(
        "ray.io/v1",
        "RayCluster",
        "default",
        "rc-train",
        json!({"state": "ready", "desiredWorkerReplicas": 1, "readyWorkerReplicas": 1,
               "conditions": [{"type": "HeadPodReady", "status": "True",
                               "reason": "HeadPodRunningAndReady", "message": ""}]}),
    );
}
