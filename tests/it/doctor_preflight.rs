//! `nrl doctor` preflight against the fake Kubernetes API server: every missing object is
//! reported with the manifests that reference it, access-review denials and missing APIs
//! are reported, and a namespace with everything present is clean. The preflight only
//! reads (and asks access reviews).

use std::path::PathBuf;
use std::sync::Arc;

use nrl::config::node::Node;
use nrl::doctor::{self, Report};
use nrl::k8s::{ConnectOptions, K8s};
use nrl::launch::check::{Checked, check};
use nrl::launch::rayjob::manifest::rayjob_manifest;
use nrl::render::rayjob::RayJobOptions;
use nrl::run_id::RunId;
use serde_json::json;

use crate::support::data;
use crate::support::fake_k8s::{FakeK8s, FaultAction, FaultMatch};

const NS: &str = "team-rl";

fn fake() -> FakeK8s {
    FakeK8s::builder().namespace(NS).start()
}

fn loaded(overrides: &[&str]) -> Checked {
    let mut req = nrl::config::layers::LoadRequest::new(
        PathBuf::from("tests/data/doctor/recipe.yaml"),
        Arc::new(data::golden_env()),
    );
    req.infra = Some(PathBuf::from("tests/data/doctor/infra.yaml"));
    req.overrides = overrides.iter().map(|s| s.to_string()).collect();
    check(&req, true).unwrap_or_else(|e| panic!("{}", e.render(false, 100)))
}

/// What `nrl doctor` checks: the `check` manifests plus the RayJob of a launch.
fn manifests(c: &Checked) -> Vec<Node> {
    let mut m = c.manifests.clone();
    m.push(
        rayjob_manifest(
            &c.config,
            &RunId::parse("doctor").unwrap(),
            &RayJobOptions::default(),
        )
        .expect("rayjob"),
    );
    m
}

async fn preflight(fake: &FakeK8s, c: &Checked) -> Report {
    let k8s = K8s::connect(&ConnectOptions {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        namespace: Some(NS.to_string()),
        context: None,
        request_timeout: None,
        watch_timeout: None,
        body_limits: None,
    })
    .await
    .expect("connect to the fake");
    doctor::preflight(&k8s, &c.config, &manifests(c))
        .await
        .unwrap_or_else(|e| panic!("{}", e.render(false, 100)))
}

fn render(r: &Report) -> String {
    let cwd = std::env::current_dir()
        .unwrap_or_default()
        .display()
        .to_string();
    r.render(false, 100).replace(&cwd, "<repo>")
}

/// Everything the base pair references: two Secrets, a PVC, the KAI queue `rl`.
fn put_everything(fake: &FakeK8s) {
    for name in ["nvcr-secret", "hf-token"] {
        fake.put(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": NS}, "data": {}}));
    }
    fake.put(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "rl-data", "namespace": NS},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}}}));
    fake.put(
        json!({"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
        "metadata": {"name": "rl"}, "spec": {}}),
    );
}

#[tokio::test]
async fn all_present_is_clean_and_read_only() {
    let fake = fake();
    put_everything(&fake);
    fake.clear_request_log();
    let r = preflight(&fake, &loaded(&[])).await;
    assert!(r.is_empty(), "{}", render(&r));
    let writes: Vec<_> = fake
        .request_log()
        .into_iter()
        .filter(|q| q.method != "GET")
        .filter(|q| q.base_resource() != Some("selfsubjectaccessreviews"))
        .collect();
    assert!(writes.is_empty(), "preflight only reads: {writes:?}");
}

#[tokio::test]
async fn each_missing_object_is_reported_with_its_users() {
    let fake = fake();
    // The optional envFrom secret (`alice-secrets`) is never required.
    let c = loaded(&["infra.serviceAccount=trainer"]);
    let r = preflight(&fake, &c).await;
    let missing: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.code == "nrl::doctor::missing_object")
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(
        missing,
        [
            "ServiceAccount `trainer` does not exist in namespace `team-rl`",
            "Secret `nvcr-secret` does not exist in namespace `team-rl`",
            "PersistentVolumeClaim `rl-data` does not exist in namespace `team-rl`",
            "Secret `hf-token` does not exist in namespace `team-rl`",
        ]
    );
    let pvc = r
        .findings
        .iter()
        .find(|f| f.message.contains("rl-data"))
        .expect("pvc finding");
    // Both the RayCluster and the RayJob use it, from the same infra line.
    assert!(
        pvc.notes
            .iter()
            .any(|n| n.contains("RayCluster/rc-train workerGroupSpecs[0] (gpu)"))
    );
    assert!(pvc.notes.iter().any(|n| n.contains("RayJob/rc-train")));
    let at = pvc.location().unwrap_or_default();
    assert!(at.ends_with("tests/data/doctor/infra.yaml:41:54"), "{at}");
    assert!(
        r.codes().contains(&"nrl::doctor::kai_queue_missing"),
        "{:?}",
        r.codes()
    );
    assert!(r.has_errors());
    insta::assert_snapshot!("preflight_missing_objects", render(&r));
}

#[tokio::test]
async fn an_access_review_denial_is_reported() {
    let fake = fake();
    put_everything(&fake);
    fake.deny("create", "rayjobs", NS);
    let r = preflight(&fake, &loaded(&[])).await;
    assert_eq!(r.codes(), ["nrl::doctor::access_denied"], "{}", render(&r));
    assert!(
        r.findings[0]
            .message
            .contains("you may not create rayjobs.ray.io in namespace `team-rl`"),
        "{}",
        r.findings[0].message
    );
    insta::assert_snapshot!("preflight_access_denied", render(&r));
}

#[tokio::test]
async fn objects_you_may_not_read_are_warnings() {
    let fake = fake();
    put_everything(&fake);
    fake.deny("get", "secrets", NS);
    let r = preflight(&fake, &loaded(&[])).await;
    assert_eq!(
        r.codes(),
        [
            "nrl::doctor::preflight_unchecked",
            "nrl::doctor::preflight_unchecked"
        ],
        "{}",
        render(&r)
    );
    assert!(!r.has_errors());
}

#[tokio::test]
async fn unserved_ray_apis_are_reported() {
    let fake = fake();
    put_everything(&fake);
    fake.inject(
        FaultMatch::any().path_contains("/apis/ray.io/v1"),
        FaultAction::Status(404),
        None,
    );
    let r = preflight(&fake, &loaded(&[])).await;
    let crd: Vec<&str> = r
        .findings
        .iter()
        .filter(|f| f.code == "nrl::doctor::missing_crd")
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(
        crd,
        [
            "`rayclusters` is not served in `ray.io/v1`",
            "`rayjobs` is not served in `ray.io/v1`"
        ],
        "{}",
        render(&r)
    );
}

#[tokio::test]
async fn a_missing_queue_is_skipped_when_kai_is_not_asked_for() {
    let fake = fake();
    put_everything(&fake);
    fake.clear_request_log();
    // Without the KAI label and scheduler, no queue is looked up.
    let c = loaded(&[
        "~infra.kuberay.training.labels",
        "~infra.kuberay.training.spec.headGroupSpec.template.spec.schedulerName",
        "~infra.kuberay.training.spec.workerGroupSpecs.0.template.spec.schedulerName",
    ]);
    let r = preflight(&fake, &c).await;
    assert!(r.is_empty(), "{}", render(&r));
    assert!(
        fake.request_log()
            .iter()
            .all(|q| q.base_resource() != Some("queues")),
        "no queue lookups"
    );
}

#[test]
fn nrl_doctor_runs_the_preflight_against_the_current_context() {
    use predicates::prelude::*;

    use crate::support::context::TestContext;
    let fake = fake();
    let nrl = || {
        let mut c = TestContext::with_fake(&fake).into_nrl();
        c.args([
            "doctor",
            "tests/data/doctor/recipe.yaml",
            "--infra",
            "tests/data/doctor/infra.yaml",
        ]);
        c
    };
    nrl()
        .assert()
        .code(2)
        .stdout(predicate::str::contains(
            "preflight: context `fake`, namespace `team-rl`",
        ))
        .stdout(predicate::str::contains(
            "PersistentVolumeClaim `rl-data` does not exist",
        ))
        .stdout(predicate::str::contains("doctor: 4 errors, 0 warnings"));
    put_everything(&fake);
    nrl()
        .assert()
        .success()
        .stdout(predicate::str::contains("doctor: no problems found"));
}

/// Issue 14 item 7: the run reaches a RayCluster's dashboard through `pods/portforward`
/// (from outside the cluster) and the exec submitter runs through `pods/exec`: the
/// preflight asks for both, by access review, when the run will use them.
#[tokio::test]
async fn pod_subresources_the_run_needs_are_reviewed() {
    let fake = fake();
    put_everything(&fake);
    fake.clear_request_log();
    let r = preflight(&fake, &loaded(&[])).await;
    assert!(r.is_empty(), "{}", render(&r));
    fake.deny("create", "pods/portforward", NS);
    let r = preflight(&fake, &loaded(&[])).await;
    assert_eq!(r.codes(), ["nrl::doctor::access_denied"], "{}", render(&r));
    assert!(
        r.findings[0].message.contains(
            "you may not create pods/portforward in namespace `team-rl`, which the run needs to reach the Ray dashboard"
        ),
        "{}",
        r.findings[0].message
    );
    // The exec submitter needs pods/exec (and no port-forward without daemons).
    fake.allow_all();
    fake.deny("create", "pods/exec", NS);
    let r = preflight(&fake, &loaded(&["infra.submit.submitter=exec"])).await;
    let messages: Vec<&str> = r.findings.iter().map(|f| f.message.as_str()).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("you may not create pods/exec in namespace `team-rl`")),
        "{messages:?}"
    );
}
