//! `cluster up` -> ready -> `status` -> `logs` -> `cluster list` -> `cluster down`, and
//! what each step sent to the API server.

use std::time::Duration;

use serde_json::{Value, json};

use super::common::*;
use crate::support::context::{AGE, snapshot};
use crate::support::stub_ray::StubRay;

fn applies(fake: &FakeK8s) -> Vec<(String, String)> {
    fake.requests(|r| r.is_apply() && !r.is_dry_run())
        .iter()
        .map(|r| {
            (
                r.resource.clone().unwrap_or_default(),
                r.name.clone().unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn up_status_logs_list_down() {
    let fake = FakeK8s::start();
    let ray = StubRay::start();
    fake.use_ray_dashboard(Some(&ray.url()));

    // ---- cluster up: everything, waiting ------------------------------------------------
    let (out, err) = ok(with_recipe(&fake, &["cluster", "up"], &[]));
    assert!(
        err.starts_with(
            "cluster up: context `fake`, namespace `default` (server http://127.0.0.1:"
        ),
        "{err}"
    );
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "kuberay.generation: RayCluster rc-gen created, ready",
            "kuberay.gym: RayCluster rc-gym created, ready; daemon gym-daemon submitted",
            "kuberay.training: RayCluster rc-train created, ready",
            "deployments.vllm: Deployment vllm applied, available; DNS vllm.default.svc.cluster.local",
        ]
    );
    // Every write was a server-side apply with field manager nrl, in order: DRA objects
    // before their RayCluster, roles in order, then the Deployment and its Service.
    let writes = fake.requests(|r| {
        matches!(r.method.as_str(), "POST" | "PUT" | "PATCH")
            && r.resource.as_deref() != Some("selfsubjectaccessreviews")
    });
    assert!(
        writes
            .iter()
            .all(|w| w.is_apply() && w.query_param("fieldManager").as_deref() == Some("nrl")),
        "{writes:#?}"
    );
    let a = applies(&fake);
    let first = |res: &str, name: &str| {
        a.iter()
            .position(|(r, n)| r == res && n == name)
            .unwrap_or_else(|| panic!("no apply of {res}/{name}: {a:?}"))
    };
    assert!(
        first("computedomains", "compute-domain-rc-gen-generation")
            < first("rayclusters", "rc-gen")
    );
    assert!(
        first("resourceclaimtemplates", "roce-rc-gen-generation") < first("rayclusters", "rc-gen")
    );
    assert!(first("rayclusters", "rc-gen") < first("rayclusters", "rc-gym"));
    assert!(first("rayclusters", "rc-gym") < first("rayclusters", "rc-train"));
    assert!(first("rayclusters", "rc-train") < first("deployments", "vllm"));
    assert!(first("deployments", "vllm") < first("services", "vllm"));

    // DRA objects are owned by their RayCluster, so Kubernetes collects them with it.
    let rc_gen = fake
        .get("ray.io/v1", "RayCluster", "default", "rc-gen")
        .unwrap();
    for (av, kind, name) in [
        (
            "resource.nvidia.com/v1beta1",
            "ComputeDomain",
            "compute-domain-rc-gen-generation",
        ),
        (
            "resource.k8s.io/v1",
            "ResourceClaimTemplate",
            "roce-rc-gen-generation",
        ),
    ] {
        let o = fake.get(av, kind, "default", name).unwrap();
        assert_eq!(
            o["metadata"]["ownerReferences"][0]["uid"], rc_gen["metadata"]["uid"],
            "{kind}"
        );
        assert_eq!(o["metadata"]["ownerReferences"][0]["kind"], "RayCluster");
    }
    // The owner label nrl sets.
    assert_eq!(rc_gen["metadata"]["labels"]["nrl-k8s/owner"], "alice");
    // Waiting used one watch per RayCluster, not polling.
    let rc_watches = fake.requests(|r| r.watch && r.resource.as_deref() == Some("rayclusters"));
    assert_eq!(rc_watches.len(), 3);
    let rc_gets =
        fake.requests(|r| r.verb == "get" && r.resource.as_deref() == Some("rayclusters"));
    assert_eq!(rc_gets.len(), 3, "one existence check per role");
    // The daemon went to the gym head's dashboard with its env and working_dir.
    let submitted = ray.submitted();
    assert_eq!(submitted.len(), 1);
    assert_eq!(submitted[0]["submission_id"], "gym-daemon");
    assert_eq!(
        submitted[0]["entrypoint"],
        "echo gym daemon up; cat daemon/serve.py"
    );
    assert!(
        submitted[0]["runtime_env"]["working_dir"]
            .as_str()
            .unwrap()
            .starts_with("gcs://_ray_pkg_")
    );

    // ---- status -----------------------------------------------------------------------
    let (table, _) = ok(with_recipe(&fake, &["status"], &[]));
    snapshot!(context(&fake), "status_table", table);
    let (json_out, _) = ok(with_recipe(&fake, &["status"], &["-o", "json"]));
    let rows: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(rows[2]["role"], "training");
    assert_eq!(rows[2]["state"], "ready");
    assert_eq!(rows[2]["pods"]["head"]["phase"], "Running");
    assert_eq!(rows[2]["pods"]["workers"].as_array().unwrap().len(), 1);
    assert_eq!(
        rows[1]["daemon"],
        json!({"id": "gym-daemon", "status": "RUNNING"})
    );
    assert_eq!(rows[0]["daemon"], Value::Null);

    // ---- logs -------------------------------------------------------------------------
    let head = fake
        .pod_name("default", "ray.io/cluster=rc-train,ray.io/node-type=head")
        .unwrap();
    for l in ["ray start", "head up", "dashboard at :8265"] {
        fake.append_pod_log("default", &head, None, l);
    }
    let (log, _) = ok(with_recipe(
        &fake,
        &["logs"],
        &["--role", "training", "--source", "head", "--tail", "2"],
    ));
    assert_eq!(log, "head up\ndashboard at :8265\n");
    let worker = fake
        .pod_name("default", "ray.io/cluster=rc-gen,ray.io/node-type=worker")
        .unwrap();
    fake.append_pod_log("default", &worker, None, "worker line");
    let (log, _) = ok(with_recipe(
        &fake,
        &["logs"],
        &["--role", "generation", "--source", "worker"],
    ));
    assert!(log.contains("worker line"), "{log}");
    // gym declares a daemon: auto means the daemon's job log, through the dashboard.
    let (log, err) = ok(with_recipe(&fake, &["logs"], &["--role", "gym"]));
    assert_eq!(log, "log of gym-daemon\nline 2\n");
    assert!(
        err.contains("# tailing gym-daemon via http://127.0.0.1:"),
        "{err}"
    );

    // ---- list -------------------------------------------------------------------------
    let (list, _) = ok({
        let mut c = nrl(&fake);
        c.args(["cluster", "list"]);
        c
    });
    snapshot!(context(&fake).filter(AGE, "[AGE]  "), "list_table", list);

    // ---- up again: nothing changes, nothing is resubmitted -------------------------------
    fake.clear_request_log();
    let (out, _) = ok(with_recipe(&fake, &["cluster", "up"], &[]));
    snapshot!(context(&fake), "up_again", out);
    let rc_writes = fake.requests(|r| {
        r.is_apply() && !r.is_dry_run() && r.resource.as_deref() == Some("rayclusters")
    });
    assert!(
        rc_writes.is_empty(),
        "drift is decided by dry-run: {rc_writes:#?}"
    );
    assert_eq!(
        fake.requests(|r| r.is_dry_run())
            .iter()
            .filter(|r| r.resource.as_deref() == Some("rayclusters"))
            .count(),
        3
    );
    assert_eq!(ray.submitted().len(), 1);

    // ---- down -------------------------------------------------------------------------
    let (out, err) = ok(with_recipe(&fake, &["cluster", "down"], &[]));
    assert!(
        err.starts_with("cluster down: context `fake`, namespace `default`"),
        "{err}"
    );
    assert_eq!(
        out.trim(),
        "deleted: kuberay.generation, kuberay.gym, kuberay.training, deployments.vllm"
    );
    assert!(
        fake.list("ray.io/v1", "RayCluster", Some("default"), "")
            .is_empty()
    );
    assert!(
        fake.pods("default", "ray.io/is-ray-node=yes").is_empty(),
        "down waited for the pods"
    );
    assert!(fake.pods("default", "app=vllm").is_empty());
    assert!(
        fake.get(
            "resource.nvidia.com/v1beta1",
            "ComputeDomain",
            "default",
            "compute-domain-rc-gen-generation"
        )
        .is_none()
    );
    assert!(fake.get("v1", "Service", "default", "vllm").is_none());
    let deletes =
        fake.requests(|r| r.verb == "delete" && r.resource.as_deref() == Some("rayclusters"));
    assert!(deletes.iter().all(|d| d.status == 200 || d.status == 202));
    // Down on nothing is fine.
    let (out, _) = ok(with_recipe(&fake, &["cluster", "down"], &[]));
    assert_eq!(out.trim(), "nothing to delete");
}

#[test]
fn a_changed_field_is_drift_and_up_applies_it() {
    let fake = FakeK8s::start();
    ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--target", "kuberay.training"],
    ));
    // The recipe changed a field nrl applies: drift, applied in place (nrl owns it).
    let (out, err) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &[
            "infra.kuberay.training.spec.rayVersion='2.61.0'",
            "--role",
            "training",
            "--no-wait",
        ],
    ));
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train updated (spec.rayVersion)"
    );
    assert!(err.contains("differs from the rendered manifest"), "{err}");
    let live = fake
        .get("ray.io/v1", "RayCluster", "default", "rc-train")
        .unwrap();
    assert_eq!(live["spec"]["rayVersion"], json!("2.61.0"));
}

/// Issue 14 item 3: `kubectl edit` scaled the workers. `spec.workerGroupSpecs` is an atomic
/// list (the CRD leaves it unannotated), so `kubectl-edit` now owns the whole list and
/// nrl's next apply conflicts: the diagnostic names the manager, the field and
/// --force-conflicts; --force (the owner guard) does not force the apply; with
/// --force-conflicts nrl's values win and nrl owns the list again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_manager_owning_worker_groups_is_a_conflict_until_force_conflicts() {
    use kube::api::{Api, DynamicObject, Patch, PatchParams};
    use kube::discovery::ApiResource;
    let fake = FakeK8s::start();
    let up = |args: &[&str]| {
        let mut all = vec!["--role", "training", "--no-wait"];
        all.extend_from_slice(args);
        with_recipe(&fake, &["cluster", "up"], &all)
    };
    ok(up(&[]));
    // What `kubectl edit` sends for a custom resource: a merge patch (CRs take no strategic
    // merge patch), field manager `kubectl-edit`.
    let ar = ApiResource {
        group: "ray.io".into(),
        version: "v1".into(),
        api_version: "ray.io/v1".into(),
        kind: "RayCluster".into(),
        plural: "rayclusters".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(fake.client().await, "default", &ar);
    let mut live = fake
        .get("ray.io/v1", "RayCluster", "default", "rc-train")
        .unwrap();
    live["spec"]["workerGroupSpecs"][0]["replicas"] = json!(3);
    let pp = PatchParams {
        field_manager: Some("kubectl-edit".into()),
        ..PatchParams::default()
    };
    api.patch(
        "rc-train",
        &pp,
        &Patch::Merge(json!({"spec": {"workerGroupSpecs": live["spec"]["workerGroupSpecs"]}})),
    )
    .await
    .unwrap();

    let before = fake.requests(|r| r.is_apply() && !r.is_dry_run()).len();
    for extra in [&[][..], &["--force"][..]] {
        let err = tokio::task::block_in_place(|| fails(up(extra), 3));
        assert!(
            err.contains("conflicts with another writer: field manager \"kubectl-edit\" owns .spec.workerGroupSpecs"),
            "{err}"
        );
        assert!(err.contains("--force-conflicts"), "{err}");
    }
    // Drift detection met the conflict (a dry run without force): nothing was applied.
    assert_eq!(
        fake.requests(|r| r.is_apply() && !r.is_dry_run()).len(),
        before
    );
    let dry = fake.requests(|r| r.is_apply() && r.is_dry_run());
    assert!(dry.iter().all(|r| r.query_param("force").is_none()));
    assert!(
        dry.iter()
            .all(|r| r.query_param("fieldValidation").as_deref() == Some("Strict"))
    );

    let (out, _) = tokio::task::block_in_place(|| ok(up(&["--force-conflicts"])));
    assert!(
        out.contains("RayCluster rc-train updated (spec.workerGroupSpecs"),
        "{out}"
    );
    let applies = fake.requests(|r| r.is_apply());
    let last = applies.last().unwrap();
    assert_eq!(last.query_param("force").as_deref(), Some("true"));
    let live = fake
        .get("ray.io/v1", "RayCluster", "default", "rc-train")
        .unwrap();
    assert_eq!(live["spec"]["workerGroupSpecs"][0]["replicas"], json!(1));
    let owners: Vec<&str> = live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["fieldsV1"]["f:spec"].get("f:workerGroupSpecs").is_some())
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(owners, ["nrl"]);
}

#[test]
fn no_wait_applies_and_returns_without_watching() {
    let fake = FakeK8s::start();
    let (out, err) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "gym", "--no-wait"],
    ));
    assert_eq!(out.trim(), "kuberay.gym: RayCluster rc-gym created");
    assert!(
        err.contains("[gym] --no-wait: daemon not submitted"),
        "{err}"
    );
    assert!(fake.requests(|r| r.watch).is_empty());
    let (out, _) = ok(with_recipe(
        &fake,
        &["cluster", "down"],
        &["--role", "gym", "--no-wait"],
    ));
    assert_eq!(out.trim(), "deleted: kuberay.gym");
}

/// `cluster up --no-validate` applies what only the offline checks refuse (a pod-template
/// label value the CRD itself accepts).
#[test]
fn no_validate_applies_what_the_offline_checks_refuse() {
    let fake = FakeK8s::start();
    let label = "+infra.kuberay.gym.spec.headGroupSpec.template.metadata.labels.team='a b'";
    let err = fails(
        with_recipe(
            &fake,
            &["cluster", "up"],
            &["--role", "gym", "--no-wait", label],
        ),
        2,
    );
    assert!(err.contains("nrl::render::name"), "{err}");
    assert!(fake.request_log().is_empty());
    let (out, _) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "gym", "--no-wait", "--no-validate", label],
    ));
    assert_eq!(out.trim(), "kuberay.gym: RayCluster rc-gym created");
    let rc = fake
        .get("ray.io/v1", "RayCluster", "default", "rc-gym")
        .expect("applied");
    assert_eq!(
        rc["spec"]["headGroupSpec"]["template"]["metadata"]["labels"]["team"],
        "a b"
    );
}

#[test]
fn dry_run_prints_manifests_and_contacts_nothing() {
    let fake = FakeK8s::start();
    let (out, _) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &[
            "--dry-run",
            "--target",
            "kuberay.training",
            "--target",
            "deployments.vllm",
        ],
    ));
    assert!(
        out.starts_with("apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: rc-train\n"),
        "{out}"
    );
    assert!(
        out.contains("\n---\napiVersion: apps/v1\nkind: Deployment\n"),
        "{out}"
    );
    assert!(out.contains("nrl-k8s/owner: alice"), "{out}");
    assert!(fake.request_log().is_empty());
}

#[test]
fn bad_input_fails_before_any_request() {
    let fake = FakeK8s::start();
    let err = fails(
        with_recipe(
            &fake,
            &["cluster", "up"],
            &[
                "infra.kuberay.training.name=Bad_Name",
                "--target",
                "kuberay.training",
            ],
        ),
        2,
    );
    assert!(err.contains("Bad_Name"), "{err}");
    let err = fails(
        with_recipe(&fake, &["cluster", "up"], &["--target", "kuberay.nope"]),
        2,
    );
    assert!(
        err.contains("kuberay.nope is not defined in the recipe"),
        "{err}"
    );
    let err = fails(with_recipe(&fake, &["logs"], &["--role", "trainer"]), 2);
    assert!(err.contains("unknown role `trainer`"), "{err}");
    assert!(fake.request_log().is_empty());
}

#[test]
fn status_and_logs_of_clusters_that_are_not_there() {
    let fake = FakeK8s::start();
    let (table, _) = ok(with_recipe(&fake, &["status"], &[]));
    snapshot!(context(&fake), "status_not_found", table);
    let err = fails(
        with_recipe(
            &fake,
            &["logs"],
            &["--role", "training", "--source", "head"],
        ),
        3,
    );
    assert!(err.contains("no head pod for RayCluster rc-train"), "{err}");
    let err = fails(
        with_recipe(
            &fake,
            &["logs"],
            &["--role", "training", "--source", "worker"],
        ),
        3,
    );
    assert!(err.contains("no worker pods for rc-train"), "{err}");
    let (out, _) = ok({
        let mut c = nrl(&fake);
        c.args(["cluster", "list", "-n", "kube-system"]);
        c
    });
    assert_eq!(out.trim(), "(no RayClusters in kube-system)");
    // A stuck cluster's status says why its pods are pending.
    fake.set_pod_fate(
        "ray.io/cluster=rc-train",
        PodFate::Unschedulable("0/8 nodes have GPUs".into()),
    );
    ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "training", "--no-wait"],
    ));
    assert!(fake.wait_until_blocking(Duration::from_secs(5), |f| {
        f.pods("default", "ray.io/cluster=rc-train").len() == 2
    }));
    let (table, _) = ok(with_recipe(&fake, &["status"], &[]));
    snapshot!(context(&fake), "status_unschedulable", table);
}

#[test]
fn namespace_and_context_flags() {
    let fake = FakeK8s::builder().namespace("team-a").start();
    let (out, err) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &[
            "--role",
            "training",
            "--no-wait",
            "-n",
            "team-a",
            "--context",
            "fake",
        ],
    ));
    assert!(
        err.starts_with("cluster up: context `fake`, namespace `team-a`"),
        "{err}"
    );
    assert_eq!(out.trim(), "kuberay.training: RayCluster rc-train created");
    assert!(
        fake.get("ray.io/v1", "RayCluster", "team-a", "rc-train")
            .is_some()
    );
    let (list, _) = ok({
        let mut c = nrl(&fake);
        c.args(["cluster", "list", "-n", "team-a"]);
        c
    });
    assert!(
        list.lines().nth(1).unwrap().starts_with("rc-train"),
        "{list}"
    );
    let err = fails(with_recipe(&fake, &["status"], &["--context", "nope"]), 3);
    assert!(err.contains("nrl::k8s::kubeconfig"), "{err}");
}

#[test]
fn up_right_after_a_no_wait_down_waits_for_the_old_cluster() {
    let fake = FakeK8s::start();
    ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "training", "--no-wait"],
    ));
    let old_uid = fake.field(
        "ray.io/v1",
        "RayCluster",
        "default",
        "rc-train",
        "metadata.uid",
    );
    // Deletion takes a while (a finalizer, say).
    fake.set_timings(|t| {
        t.deletion_delay
            .insert("RayCluster".into(), Duration::from_millis(800));
    });
    ok(with_recipe(
        &fake,
        &["cluster", "down"],
        &["--role", "training", "--no-wait"],
    ));
    let (out, err) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "training"],
    ));
    assert!(
        err.contains("waiting for the previous RayCluster rc-train to finish deleting"),
        "{err}"
    );
    assert_eq!(
        out.trim(),
        "kuberay.training: RayCluster rc-train created, ready"
    );
    assert_ne!(
        fake.field(
            "ray.io/v1",
            "RayCluster",
            "default",
            "rc-train",
            "metadata.uid"
        ),
        old_uid
    );
}
