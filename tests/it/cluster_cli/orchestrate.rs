//! The library functions other commands build on (`ensure_cluster`, DRA ownership,
//! `submit_daemon`, status), against the fake: ref-orchestration §10.2 #1-#7 and #9-#12
//! and §10.6 #3 and #6, ported, plus the fixes of §11 B1 and B4.

use std::sync::Arc;
use std::time::Duration;

use nrl::config::env::MapEnv;
use nrl::config::layers::{LoadRequest, LoadedConfig, load};
use nrl::config::schema::Role;
use nrl::k8s::{ConnectOptions, K8s};
use nrl::launch::Progress;
use nrl::launch::inspect::{cluster_pods, status};
use nrl::launch::raycluster::daemon::{DaemonOptions, submit_daemon};
use nrl::launch::raycluster::{EnsureAction, EnsureOptions, OnDrift, ensure_cluster};
use serde_json::json;

use super::common::*;
use crate::support::stub_ray::StubRay;

fn config(overrides: &[&str]) -> LoadedConfig {
    let mut req = LoadRequest::new(recipe(), Arc::new(MapEnv::new([("NRL_USER", "alice")])));
    req.infra = Some(infra().into());
    req.overrides = overrides.iter().map(|s| s.to_string()).collect();
    load(&req).expect("test config loads")
}

async fn client(fake: &FakeK8s) -> K8s {
    K8s::connect(&ConnectOptions {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        ..ConnectOptions::default()
    })
    .await
    .unwrap()
}

fn opts(wait: bool, on_drift: OnDrift) -> EnsureOptions {
    EnsureOptions {
        on_drift,
        wait,
        timeout: Duration::from_secs(30),
        force: false,
        force_conflicts: false,
    }
}

fn rc_applies(fake: &FakeK8s) -> usize {
    fake.requests(|r| {
        r.is_apply() && !r.is_dry_run() && r.resource.as_deref() == Some("rayclusters")
    })
    .len()
}

#[tokio::test]
async fn bring_up_cluster_applies_and_waits() {
    let fake = FakeK8s::start();
    let k8s = client(&fake).await;
    let out = ensure_cluster(
        &k8s,
        &config(&[]),
        Role::Gym,
        &opts(true, OnDrift::Apply),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    assert_eq!(
        (out.name.as_str(), &out.action),
        ("rc-gym", &EnsureAction::Created)
    );
    assert_eq!(out.ready.unwrap()["status"]["state"], "ready");
    assert_eq!(rc_applies(&fake), 1);
    assert_eq!(fake.requests(|r| r.watch).len(), 1);
}

#[tokio::test]
async fn bring_up_cluster_no_wait_skips_readiness() {
    let fake = FakeK8s::start();
    let k8s = client(&fake).await;
    let out = ensure_cluster(
        &k8s,
        &config(&[]),
        Role::Training,
        &opts(false, OnDrift::Apply),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    assert!(out.ready.is_none());
    assert_eq!(rc_applies(&fake), 1);
    assert!(fake.requests(|r| r.watch).is_empty());
}

#[tokio::test]
async fn ensure_cluster_applies_when_absent_then_reuses_when_live_matches() {
    // §10.2 #9 and #10; the live object carries server defaults, resourceVersion, uid and
    // status, none of which is drift (§11 B1).
    let fake = FakeK8s::start();
    let k8s = client(&fake).await;
    let cfg = config(&[]);
    let p = Progress::capture();
    let first = ensure_cluster(&k8s, &cfg, Role::Training, &opts(true, OnDrift::Warn), &p)
        .await
        .unwrap();
    assert_eq!(first.action, EnsureAction::Created);
    let second = ensure_cluster(
        &k8s,
        &cfg,
        Role::Training,
        &opts(true, OnDrift::Recreate),
        &p,
    )
    .await
    .unwrap();
    assert_eq!(second.action, EnsureAction::Unchanged);
    assert_eq!(rc_applies(&fake), 1);
    assert!(fake.requests(|r| r.verb == "delete").is_empty());
    assert!(
        p.lines()
            .iter()
            .any(|l| l.contains("already exists and matches")),
        "{:?}",
        p.lines()
    );
}

#[tokio::test]
async fn ensure_cluster_warns_on_drift_and_reuses() {
    let fake = FakeK8s::start();
    let k8s = client(&fake).await;
    let cfg = config(&[]);
    ensure_cluster(
        &k8s,
        &cfg,
        Role::Training,
        &opts(false, OnDrift::Warn),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    fake.edit("ray.io/v1", "RayCluster", "default", "rc-train", |o| {
        o["spec"]["rayVersion"] = json!("drifted");
    });
    let p = Progress::capture();
    let out = ensure_cluster(&k8s, &cfg, Role::Training, &opts(false, OnDrift::Warn), &p)
        .await
        .unwrap();
    assert_eq!(
        out.action,
        EnsureAction::DriftIgnored(vec!["spec.rayVersion".into()])
    );
    assert_eq!(rc_applies(&fake), 1);
    assert!(fake.requests(|r| r.verb == "delete").is_empty());
    assert!(
        p.lines()
            .iter()
            .any(|l| l.contains("drifted") && l.contains("reusing")),
        "{:?}",
        p.lines()
    );
}

#[tokio::test]
async fn ensure_cluster_recreate_deletes_and_reapplies_on_drift() {
    let fake = FakeK8s::start();
    let k8s = client(&fake).await;
    let cfg = config(&[]);
    ensure_cluster(
        &k8s,
        &cfg,
        Role::Generation,
        &opts(true, OnDrift::Warn),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    let old_uid = fake
        .field(
            "ray.io/v1",
            "RayCluster",
            "default",
            "rc-gen",
            "metadata.uid",
        )
        .unwrap();
    fake.edit("ray.io/v1", "RayCluster", "default", "rc-gen", |o| {
        o["spec"]["rayVersion"] = json!("drifted");
    });
    let out = ensure_cluster(
        &k8s,
        &cfg,
        Role::Generation,
        &opts(true, OnDrift::Recreate),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    assert_eq!(
        out.action,
        EnsureAction::Recreated(vec!["spec.rayVersion".into()])
    );
    let deletes =
        fake.requests(|r| r.verb == "delete" && r.resource.as_deref() == Some("rayclusters"));
    assert_eq!(deletes.len(), 1);
    assert_eq!(
        deletes[0].query_param("propagationPolicy"),
        None,
        "options travel in the body"
    );
    let new_uid = fake
        .field(
            "ray.io/v1",
            "RayCluster",
            "default",
            "rc-gen",
            "metadata.uid",
        )
        .unwrap();
    assert_ne!(old_uid, new_uid);
    // The DRA objects were collected with the old cluster and now belong to the new one.
    let cd = fake
        .get(
            "resource.nvidia.com/v1beta1",
            "ComputeDomain",
            "default",
            "compute-domain-rc-gen-generation",
        )
        .unwrap();
    assert_eq!(cd["metadata"]["ownerReferences"][0]["uid"], new_uid);
}

#[tokio::test]
async fn dra_objects_are_collected_with_their_raycluster() {
    // §11 C5: no leak even when nrl is not around for the deletion.
    let fake = FakeK8s::start();
    let k8s = client(&fake).await;
    ensure_cluster(
        &k8s,
        &config(&[]),
        Role::Generation,
        &opts(false, OnDrift::Apply),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    fake.delete("ray.io/v1", "RayCluster", "default", "rc-gen", None);
    assert!(
        fake.wait_until(Duration::from_secs(10), |f| {
            f.get(
                "resource.nvidia.com/v1beta1",
                "ComputeDomain",
                "default",
                "compute-domain-rc-gen-generation",
            )
            .is_none()
                && f.get(
                    "resource.k8s.io/v1",
                    "ResourceClaimTemplate",
                    "default",
                    "roce-rc-gen-generation",
                )
                .is_none()
        })
        .await
    );
}

async fn ready_gym(fake: &FakeK8s, ray: &StubRay) -> (K8s, LoadedConfig) {
    fake.use_ray_dashboard(Some(&ray.url()));
    let k8s = client(fake).await;
    let cfg = config(&[]);
    ensure_cluster(
        &k8s,
        &cfg,
        Role::Gym,
        &opts(true, OnDrift::Apply),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    (k8s, cfg)
}

fn daemon_opts(replace: bool) -> DaemonOptions {
    DaemonOptions {
        replace,
        repo_root: repo().join("tests/data/cluster"),
        code_path: None,
    }
}

#[tokio::test]
async fn submit_daemon_skips_when_existing_running_or_succeeded() {
    for status in ["RUNNING", "SUCCEEDED", "PENDING"] {
        let (fake, ray) = (FakeK8s::start(), StubRay::start());
        ray.add_job("gym-daemon", status, 1000);
        let (k8s, cfg) = ready_gym(&fake, &ray).await;
        let p = Progress::capture();
        let out = submit_daemon(&k8s, &cfg, Role::Gym, &daemon_opts(false), &p)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (out.submission_id.as_str(), out.submitted),
            ("gym-daemon", false)
        );
        assert!(ray.submitted().is_empty());
        assert!(
            p.lines()
                .iter()
                .any(|l| l.contains(&format!("already {status}"))),
            "{:?}",
            p.lines()
        );
    }
}

#[tokio::test]
async fn submit_daemon_raises_when_existing_failed_without_replace() {
    let (fake, ray) = (FakeK8s::start(), StubRay::start());
    ray.add_job("gym-daemon", "FAILED", 1000);
    let (k8s, cfg) = ready_gym(&fake, &ray).await;
    let err = submit_daemon(
        &k8s,
        &cfg,
        Role::Gym,
        &daemon_opts(false),
        &Progress::quiet(),
    )
    .await
    .unwrap_err();
    assert!(err.message.contains("FAILED"), "{}", err.message);
    assert!(err.help.as_deref().unwrap().contains("--replace"));
}

#[tokio::test]
async fn submit_daemon_replace_stops_running_and_suffixes_id() {
    let (fake, ray) = (FakeK8s::start(), StubRay::start());
    ray.add_job("gym-daemon", "RUNNING", 1000);
    let (k8s, cfg) = ready_gym(&fake, &ray).await;
    let out = submit_daemon(
        &k8s,
        &cfg,
        Role::Gym,
        &daemon_opts(true),
        &Progress::quiet(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(ray.state.lock().unwrap().stopped, ["gym-daemon"]);
    assert!(out.submitted);
    assert!(out.submission_id.starts_with("gym-daemon-") && out.submission_id != "gym-daemon");
    assert_eq!(
        ray.submitted()[0]["submission_id"],
        out.submission_id.as_str()
    );
}

#[tokio::test]
async fn daemon_idempotency_follows_the_newest_suffixed_job() {
    // §11 B4: after a --replace, a plain run keeps the live `<id>-<ts>` (the reference
    // failed on the stopped base id), and the next --replace stops that one.
    let (fake, ray) = (FakeK8s::start(), StubRay::start());
    ray.add_job("gym-daemon", "STOPPED", 1000);
    ray.add_job("gym-daemon-1700000000", "RUNNING", 5000);
    let (k8s, cfg) = ready_gym(&fake, &ray).await;
    let kept = submit_daemon(
        &k8s,
        &cfg,
        Role::Gym,
        &daemon_opts(false),
        &Progress::quiet(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        (kept.submission_id.as_str(), kept.submitted),
        ("gym-daemon-1700000000", false)
    );
    submit_daemon(
        &k8s,
        &cfg,
        Role::Gym,
        &daemon_opts(true),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    assert_eq!(ray.state.lock().unwrap().stopped, ["gym-daemon-1700000000"]);
}

#[tokio::test]
async fn submit_daemon_no_daemon_returns_none() {
    let fake = FakeK8s::start();
    let k8s = client(&fake).await;
    let out = submit_daemon(
        &k8s,
        &config(&[]),
        Role::Training,
        &daemon_opts(false),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    assert!(out.is_none());
    assert!(fake.request_log().is_empty());
}

#[tokio::test]
async fn list_cluster_pods_uses_correct_label_selector() {
    // §10.6 #3
    let fake = FakeK8s::builder().namespace("my-ns").start();
    let k8s = client(&fake).await;
    let pods = cluster_pods(&k8s, "my-ns", "my-rc").await.unwrap();
    assert!(pods.head.is_none() && pods.workers.is_empty());
    let lists = fake.requests(|r| r.resource.as_deref() == Some("pods"));
    assert_eq!(lists.len(), 1);
    assert_eq!(lists[0].namespace.as_deref(), Some("my-ns"));
    assert_eq!(
        lists[0].query_param("labelSelector").as_deref(),
        Some("ray.io/cluster=my-rc")
    );
}

#[tokio::test]
async fn latest_daemon_job_any_error_returns_base_and_none() {
    // §10.6 #6: the dashboard does not answer; status still reports the configured id.
    let fake = FakeK8s::start();
    let k8s = client(&fake).await;
    let cfg = config(&[]);
    ensure_cluster(
        &k8s,
        &cfg,
        Role::Gym,
        &opts(true, OnDrift::Apply),
        &Progress::quiet(),
    )
    .await
    .unwrap();
    let rows = status(&k8s, &cfg).await.unwrap();
    let gym = rows.iter().find(|r| r.role == "gym").unwrap();
    let d = gym.daemon.as_ref().unwrap();
    assert_eq!((d.id.as_str(), d.status.as_deref()), ("gym-daemon", None));
    assert!(d.error.is_some());
}
