//! Server-side apply, patches, dry runs, defaults and managed fields.

use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use super::common::*;

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": data})
}

fn managers(obj: &ConfigMap) -> Vec<(String, String)> {
    obj.metadata
        .managed_fields
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            (
                m.manager.unwrap_or_default(),
                m.operation.unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn apply_creates_updates_and_tracks_managers() {
    let (fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let pp = PatchParams::apply("nrl");
    let created = cms
        .patch("cfg", &pp, &Patch::Apply(cm(json!({"a": "1", "b": "2"}))))
        .await
        .unwrap();
    assert_eq!(
        managers(&created),
        [("nrl".to_string(), "Apply".to_string())]
    );
    let fields =
        serde_json::to_value(&created.metadata.managed_fields.as_ref().unwrap()[0].fields_v1)
            .unwrap();
    assert_eq!(fields, json!({"f:data": {"f:a": {}, "f:b": {}}}));
    let rv = created.metadata.resource_version.clone();

    // Re-applying the same configuration is a no-op: no new resourceVersion.
    let again = cms
        .patch("cfg", &pp, &Patch::Apply(cm(json!({"a": "1", "b": "2"}))))
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, rv);

    // Dropping a field from the applied configuration removes it (nobody else owns it).
    let updated = cms
        .patch("cfg", &pp, &Patch::Apply(cm(json!({"a": "1"}))))
        .await
        .unwrap();
    assert_eq!(
        updated.data.unwrap().keys().cloned().collect::<Vec<_>>(),
        ["a"]
    );

    // Every apply is a PATCH with the apply content type and the field manager.
    let applies = fake.requests(|r| r.is_apply());
    assert_eq!(applies.len(), 3);
    assert!(applies.iter().all(|r| r.method == "PATCH" && r.query_param("fieldManager").as_deref() == Some("nrl")));
}

#[tokio::test]
async fn apply_conflicts_with_another_manager_unless_forced() {
    let (_fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.patch(
        "cfg",
        &PatchParams::apply("nrl"),
        &Patch::Apply(cm(json!({"a": "1"}))),
    )
    .await
    .unwrap();
    // Another manager setting the same value shares ownership, no conflict.
    cms.patch(
        "cfg",
        &PatchParams::apply("other"),
        &Patch::Apply(cm(json!({"a": "1"}))),
    )
    .await
    .unwrap();
    // A different value conflicts.
    let err = cms
        .patch(
            "cfg",
            &PatchParams::apply("kubectl"),
            &Patch::Apply(cm(json!({"a": "9"}))),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error")
    };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(
        status.message.starts_with("Apply failed with 2 conflicts"),
        "{}",
        status.message
    );
    assert!(
        status.message.contains("conflict with \"nrl\": .data.a"),
        "{}",
        status.message
    );
    // Forcing takes the field over.
    let forced = cms
        .patch(
            "cfg",
            &PatchParams::apply("kubectl").force(),
            &Patch::Apply(cm(json!({"a": "9"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "9");
    let owners: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap()
        .into_iter()
        .filter(|m| {
            serde_json::to_value(&m.fields_v1)
                .unwrap()
                .pointer("/f:data/f:a")
                .is_some()
        })
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(owners, ["kubectl"]);
    // An update (non-apply) by someone else takes the field too: the next apply by nrl conflicts.
    cms.patch(
        "cfg",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"z": "1"}})),
    )
    .await
    .unwrap();
    let err = cms
        .patch(
            "cfg",
            &PatchParams::apply("nrl"),
            &Patch::Apply(cm(json!({"z": "2"}))),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 409));
}

#[tokio::test]
async fn dry_run_apply_and_create_store_nothing() {
    let (fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let rv_before = fake.current_resource_version();
    let would = cms
        .patch(
            "cfg",
            &PatchParams::apply("nrl").dry_run(),
            &Patch::Apply(cm(json!({"a": "1"}))),
        )
        .await
        .unwrap();
    assert_eq!(would.data.unwrap()["a"], "1");
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let obj: ConfigMap = serde_json::from_value(cm(json!({"b": "2"}))).unwrap();
    cms.create(&pp, &obj).await.unwrap();
    assert!(fake.get("v1", "ConfigMap", "default", "cfg").is_none());
    assert_eq!(fake.current_resource_version(), rv_before);
    assert_eq!(fake.requests(|r| r.is_dry_run()).len(), 2);
}

#[tokio::test]
async fn server_defaults_are_not_drift() {
    // The drift check nrl does: a dry-run apply of the rendered object equals the live one
    // although the server filled in defaults the rendered object does not have.
    let (_fake, client) = setup().await;
    let svcs: Api<Service> = Api::namespaced(client, "default");
    let rendered = json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
        "spec": {"selector": {"app": "x"}, "ports": [{"name": "http", "port": 8000}]}
    });
    let live = svcs
        .patch(
            "svc",
            &PatchParams::apply("nrl"),
            &Patch::Apply(rendered.clone()),
        )
        .await
        .unwrap();
    let spec = live.spec.clone().unwrap();
    let port = &spec.ports.as_ref().unwrap()[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    assert_eq!(
        port.target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8000))
    );
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert!(spec.cluster_ip.is_some());
    let dry = svcs
        .patch(
            "svc",
            &PatchParams::apply("nrl").dry_run(),
            &Patch::Apply(rendered),
        )
        .await
        .unwrap();
    assert_eq!(dry.spec, live.spec);
    assert_eq!(
        dry.metadata.resource_version,
        live.metadata.resource_version
    );
}

#[tokio::test]
async fn merge_json_and_strategic_patches() {
    let (_fake, client) = setup().await;
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayJob"));
    let jobs: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let mut rj = DynamicObject::new("rj", &ar);
    rj.data = json!({"spec": {"entrypoint": "python a.py", "suspend": true, "rayClusterSpec": {"headGroupSpec": {}}}});
    jobs.create(&PostParams::default(), &rj).await.unwrap();
    let merged = jobs
        .patch(
            "rj",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"entrypoint": "python b.py", "shutdownAfterJobFinishes": true}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(merged.data["spec"]["entrypoint"], "python b.py");
    assert_eq!(
        merged.data["spec"]["submissionMode"], "K8sJobMode",
        "CRD default kept"
    );
    // kube's `Patch::Json` needs its `jsonpatch` feature; send the operations raw.
    let ops = json!([
        {"op": "replace", "path": "/spec/entrypoint", "value": "python c.py"},
        {"op": "add", "path": "/metadata/labels", "value": {"team": "rl"}}
    ]);
    let req = axum::http::Request::patch("/apis/ray.io/v1/namespaces/default/rayjobs/rj")
        .header("content-type", "application/json-patch+json")
        .body(ops.to_string().into_bytes())
        .unwrap();
    let patched: DynamicObject = client.request(req).await.unwrap();
    assert_eq!(patched.data["spec"]["entrypoint"], "python c.py");
    assert_eq!(patched.metadata.labels.unwrap()["team"], "rl");
    // A merge patch carrying a stale resourceVersion is an optimistic-lock conflict.
    let err = jobs
        .patch(
            "rj",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"resourceVersion": "1"}, "spec": {"suspend": false}}),
            ),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 409));

    // Strategic merge patch merges containers by name.
    let deps: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client, "default");
    let dep = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
            "spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}}}
    });
    deps.create(
        &PostParams::default(),
        &serde_json::from_value(dep).unwrap(),
    )
    .await
    .unwrap();
    let smp =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}});
    let d = deps
        .patch("d", &PatchParams::default(), &Patch::Strategic(smp))
        .await
        .unwrap();
    let images: Vec<String> = d
        .spec
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .filter_map(|c| c.image)
        .collect();
    assert_eq!(images, ["a:1", "b:2"]);
}

#[tokio::test]
async fn reapplying_a_job_is_a_no_op_and_template_changes_are_refused() {
    let (fake, client) = setup().await;
    fake.set_job_script(
        "gym-*",
        JobScript::succeeds().running_for(std::time::Duration::from_secs(30)),
    );
    let jobs: Api<k8s_openapi::api::batch::v1::Job> = Api::namespaced(client, "default");
    let job = |image: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "gym-a"},
               "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "d", "image": image}]}}}})
    };
    let pp = PatchParams::apply("nrl");
    let first = jobs
        .patch("gym-a", &pp, &Patch::Apply(job("gym:1")))
        .await
        .unwrap();
    let labels = first
        .spec
        .as_ref()
        .unwrap()
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap();
    assert_eq!(
        labels["batch.kubernetes.io/job-name"], "gym-a",
        "the Job controller's labels"
    );
    // Once the controller has settled (the pod runs for 30 s), re-applying changes nothing.
    assert!(
        fake.wait_until(std::time::Duration::from_secs(3), |f| f.field(
            "batch/v1",
            "Job",
            "default",
            "gym-a",
            "status.ready"
        ) == Some(json!(1)))
            .await
    );
    let settled = jobs.get("gym-a").await.unwrap().metadata.resource_version;
    let again = jobs
        .patch("gym-a", &pp, &Patch::Apply(job("gym:1")))
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, settled);
    assert_eq!(again.metadata.generation, Some(1));
    let err = jobs
        .patch("gym-a", &pp, &Patch::Apply(job("gym:2")))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422 && s.message.contains("field is immutable")),
        "{err:?}"
    );
}

/// A controller's write (through `mutate`) is an `Update` under its own manager, beside
/// the applier's entry, which stays as it was; a status write has its own
/// `subresource: status` entry (spec §4.5; https://kubernetes.io/docs/reference/using-api/server-side-apply/#managers).
#[tokio::test]
async fn controller_writes_are_recorded_under_their_own_manager() {
    let (fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.patch(
        "cfg",
        &PatchParams::apply("nrl"),
        &Patch::Apply(cm(json!({"a": "1"}))),
    )
    .await
    .unwrap();
    let before = fake.get("v1", "ConfigMap", "default", "cfg").unwrap();
    let rt = &crate::support::fake_k8s::resources::CONFIGMAPS;
    fake.state()
        .mutate(rt, "default", "cfg", "some-controller", |o| {
            o["data"]["b"] = json!("2")
        })
        .unwrap();
    let after = fake.get("v1", "ConfigMap", "default", "cfg").unwrap();
    assert_eq!(after["data"], json!({"a": "1", "b": "2"}));
    let mf = after["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(mf[0], before["metadata"]["managedFields"][0]);
    assert_eq!(mf.len(), 2);
    assert_eq!(
        (&mf[1]["manager"], &mf[1]["operation"], &mf[1]["fieldsV1"]),
        (
            &json!("some-controller"),
            &json!("Update"),
            &json!({"f:data": {"f:b": {}}})
        )
    );
    // KubeRay's status writes: `kuberay-operator`, subresource status.
    fake.put(json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "default"}, "spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}}}}}));
    fake.set_cluster_fate("rc", crate::support::fake_k8s::ClusterFate::Ready);
    assert!(
        fake.wait_until(std::time::Duration::from_secs(5), |f| f
            .get("ray.io/v1", "RayCluster", "default", "rc")
            .is_some_and(|o| o["metadata"]["managedFields"].as_array().is_some_and(
                |m| m
                    .iter()
                    .any(|e| e["manager"] == "kuberay-operator" && e["subresource"] == "status")
            )))
        .await,
        "{:?}",
        fake.get("ray.io/v1", "RayCluster", "default", "rc")
    );
}

fn rc_api(client: kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("ray.io", "v1", "RayCluster"),
        "rayclusters",
    );
    Api::namespaced_with(client, "default", &ar)
}

fn rc_with(extra_spec: Value) -> Value {
    let mut spec = json!({"rayVersion": "2.60.0", "headGroupSpec": {"rayStartParams": {},
        "template": {"spec": {"containers": [{"name": "ray-head", "image": "ray"}]}}}});
    for (k, v) in extra_spec.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"}, "spec": spec})
}

/// fieldValidation (spec §4.2; https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation):
/// Strict refuses an unknown field with 400 naming it; the default (Warn) prunes it from a
/// CR with a `Warning` header; server-side apply fails the typed conversion (500) whatever
/// the directive.
#[tokio::test]
async fn field_validation_strict_refuses_and_default_prunes_unknown_fields() {
    let (fake, client) = setup().await;
    let api = rc_api(client.clone());
    let body: DynamicObject =
        serde_json::from_value(rc_with(json!({"bogus": 1, "workerGroupSpecs": [{"groupName": "g", "rayStartParams": {}, "typo": true, "template": {"spec": {"containers": [{"name": "w", "image": "ray"}]}}}]})))
            .unwrap();
    // Strict create: 400 BadRequest listing both fields.
    let req = http::Request::post(
        "/apis/ray.io/v1/namespaces/default/rayclusters?fieldValidation=Strict",
    )
    .header("content-type", "application/json")
    .body(serde_json::to_vec(&body).unwrap())
    .unwrap();
    let err = client.request::<Value>(req).await.unwrap_err();
    let kube::Error::Api(s) = err else {
        panic!("{err:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        s.message,
        "RayCluster in version \"v1\" cannot be handled as a RayCluster: strict decoding error: unknown field \"spec.bogus\", unknown field \"spec.workerGroupSpecs[0].typo\""
    );
    // Default: pruned, stored without them.
    let created = api.create(&PostParams::default(), &body).await.unwrap();
    assert!(created.data["spec"].get("bogus").is_none());
    assert!(
        created.data["spec"]["workerGroupSpecs"][0]
            .get("typo")
            .is_none()
    );
    assert_eq!(
        created.data["spec"]["workerGroupSpecs"][0]["groupName"],
        "g"
    );
    let warned =
        fake.requests(|r| r.method == "POST" && r.resource.as_deref() == Some("rayclusters"));
    assert_eq!(warned.last().unwrap().status, 201);
    // Apply: 500, `field not declared in schema`, also with Strict.
    let mut pp = PatchParams::apply("nrl");
    pp.field_validation = Some(kube::api::ValidationDirective::Strict);
    let err = api
        .patch("rc", &pp, &Patch::Apply(rc_with(json!({"bogus": 1}))))
        .await
        .unwrap_err();
    let kube::Error::Api(s) = err else {
        panic!("{err:?}")
    };
    assert_eq!(s.code, 500);
    assert_eq!(
        s.message,
        "failed to create typed patch object (ray.io/v1, Kind=RayCluster): .spec.bogus: field not declared in schema"
    );
    // A declared field goes through with Strict.
    api.patch("rc", &pp, &Patch::Apply(rc_with(json!({}))))
        .await
        .unwrap();
}

/// SSA list types come from the schema: `workerGroupSpecs` is atomic (an edit of one
/// replica count by another manager makes it the owner of the whole list), containers are
/// keyed by `name` and ownerReferences by `uid`
/// (https://kubernetes.io/docs/reference/using-api/server-side-apply/#merge-strategy).
#[tokio::test]
async fn list_types_come_from_the_schema() {
    let (fake, client) = setup().await;
    let api = rc_api(client);
    let wg = |replicas: i64| {
        json!({"workerGroupSpecs": [{"groupName": "g", "replicas": replicas, "rayStartParams": {},
            "template": {"spec": {"containers": [{"name": "w", "image": "ray"}]}}}]})
    };
    api.patch(
        "rc",
        &PatchParams::apply("nrl"),
        &Patch::Apply(rc_with(wg(1))),
    )
    .await
    .unwrap();
    let rc = fake
        .get("ray.io/v1", "RayCluster", "default", "rc")
        .unwrap();
    let mf = &rc["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    // Atomic: one leaf, no per-element keys.
    assert_eq!(mf["f:workerGroupSpecs"], json!({}));
    // Containers keyed by name.
    assert!(
        mf["f:headGroupSpec"]["f:template"]["f:spec"]["f:containers"]
            .get("k:{\"name\":\"ray-head\"}")
            .is_some(),
        "{mf}"
    );
    let edit = PatchParams {
        field_manager: Some("kubectl-edit".into()),
        ..PatchParams::default()
    };
    // Custom resources take no strategic merge patch (kubectl edit sends a merge patch).
    let err = api
        .patch("rc", &edit, &Patch::Strategic(json!({"spec": wg(3)})))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 415),
        "{err:?}"
    );
    api.patch("rc", &edit, &Patch::Merge(json!({"spec": wg(3)})))
        .await
        .unwrap();
    let err = api
        .patch(
            "rc",
            &PatchParams::apply("nrl"),
            &Patch::Apply(rc_with(wg(1))),
        )
        .await
        .unwrap_err();
    let kube::Error::Api(s) = err else {
        panic!("{err:?}")
    };
    assert_eq!(s.code, 409);
    assert!(
        s.message.starts_with(
            "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using ray.io/v1 at "
        ) && s.message.ends_with(": .spec.workerGroupSpecs"),
        "{}",
        s.message
    );
    let cause = &s.details.unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldManagerConflict", ".spec.workerGroupSpecs")
    );
}
