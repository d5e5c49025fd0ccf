//! Server-side apply, get/list with selectors, delete (+ wait), and drift by dry-run.

use std::time::Duration;

use nrl::k8s::{ApplyOptions, Drift};
use serde_json::json;

use super::common::*;

#[tokio::test]
async fn apply_creates_then_updates_with_field_manager_nrl() {
    let (fake, k8s) = setup().await;
    let created = k8s
        .apply(&configmap("cm", json!({"a": "1"})), ApplyOptions::default())
        .await
        .unwrap();
    assert_eq!(created["data"]["a"], "1");
    assert_eq!(created["metadata"]["namespace"], "default");
    let managers = created["metadata"]["managedFields"].as_array().unwrap();
    assert!(
        managers
            .iter()
            .any(|m| m["manager"] == "nrl" && m["operation"] == "Apply"),
        "{managers:?}"
    );
    let updated = k8s
        .apply(&configmap("cm", json!({"a": "2"})), ApplyOptions::default())
        .await
        .unwrap();
    assert_eq!(updated["data"]["a"], "2");

    // Every write was a server-side apply (PATCH application/apply-patch+yaml, manager nrl).
    let writes = fake.requests(|r| r.resource.as_deref() == Some("configmaps") && r.verb != "get");
    assert_eq!(writes.len(), 2);
    assert!(writes.iter().all(|r| r.is_apply()
        && r.method == "PATCH"
        && r.query_param("fieldManager").as_deref() == Some("nrl")));
}

#[tokio::test]
async fn apply_conflicts_with_another_manager_unless_forced() {
    let (_fake, k8s) = setup().await;
    // Another field manager (kubectl, a controller) owns data.a.
    let other = kube::Api::<kube::api::DynamicObject>::namespaced_with(
        k8s.client.clone(),
        "default",
        &ar("ConfigMap"),
    );
    other
        .patch(
            "cm",
            &kube::api::PatchParams::apply("someone-else"),
            &kube::api::Patch::Apply(configmap("cm", json!({"a": "theirs"}))),
        )
        .await
        .unwrap();
    let err = k8s
        .apply(
            &configmap("cm", json!({"a": "ours"})),
            ApplyOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::apply_conflict");
    assert_eq!(
        err.message,
        "server-side apply of configmaps/cm in namespace `default` conflicts with another writer: field manager \"someone-else\" owns .data.a"
    );
    assert!(err.help.as_deref().unwrap().contains("--force-conflicts"));
    // Drift detection with the apply's options sees the same conflict.
    match k8s
        .drift(&configmap("cm", json!({"a": "ours"})), false)
        .await
        .unwrap()
    {
        Drift::Conflict(c) => assert_eq!(
            (c[0].manager.as_str(), c[0].field.as_str()),
            ("someone-else", ".data.a")
        ),
        other => panic!("{other:?}"),
    }
    let forced = k8s
        .apply(
            &configmap("cm", json!({"a": "ours"})),
            ApplyOptions {
                force: true,
                ..ApplyOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(forced["data"]["a"], "ours");
}

#[tokio::test]
async fn dry_run_apply_changes_nothing() {
    let (fake, k8s) = setup().await;
    let out = k8s
        .apply(
            &configmap("dry", json!({"a": "1"})),
            ApplyOptions {
                dry_run: true,
                ..ApplyOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(out["data"]["a"], "1");
    assert!(fake.get("v1", "ConfigMap", "default", "dry").is_none());
    assert!(
        fake.requests(|r| r.is_apply())
            .iter()
            .all(|r| r.is_dry_run())
    );
}

#[tokio::test]
async fn get_and_list_by_label_selector() {
    let (_fake, k8s) = setup().await;
    for n in ["x1", "x2", "y1"] {
        let mut cm = configmap(n, json!({}));
        cm["metadata"]["labels"]["group"] = json!(&n[..1]);
        k8s.apply(&cm, ApplyOptions::default()).await.unwrap();
    }
    let cms = ar("ConfigMap");
    assert!(k8s.get(&cms, "default", "nope").await.unwrap().is_none());
    assert_eq!(
        k8s.get(&cms, "default", "x1").await.unwrap().unwrap()["metadata"]["name"],
        "x1"
    );
    let names = |v: Vec<serde_json::Value>| {
        let mut n: Vec<String> = v
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names(k8s.list(&cms, "default", Some("group=x")).await.unwrap()),
        ["x1", "x2"]
    );
    assert_eq!(
        names(
            k8s.list(&cms, "default", Some("group!=x,app=nrl-test"))
                .await
                .unwrap()
        ),
        ["y1"]
    );
    let all = names(k8s.list(&cms, "default", None).await.unwrap());
    assert!(
        ["x1", "x2", "y1"]
            .iter()
            .all(|n| all.contains(&n.to_string()))
    );
}

/// A labelled watch hands its consumers the objects without `managedFields` (they are
/// held for as long as a view lives and nothing reads them), while a GET keeps them.
#[tokio::test]
async fn labelled_watches_drop_managed_fields() {
    use futures::StreamExt;
    use nrl::k8s::watch::LabelledEvent;

    let (_fake, k8s) = setup().await;
    let cms = ar("ConfigMap");
    let labelled = |name: &str| {
        let mut cm = configmap(name, json!({"a": "1"}));
        cm["metadata"]["labels"]["group"] = json!("w");
        cm
    };
    k8s.apply(&labelled("w1"), ApplyOptions::default())
        .await
        .unwrap();
    let live = k8s.get(&cms, "default", "w1").await.unwrap().unwrap();
    assert!(live["metadata"]["managedFields"].is_array(), "{live}");

    let mut watch = Box::pin(k8s.watch_labelled(&cms, "default", "group=w"));
    let first = tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("the initial list")
        .expect("an event")
        .unwrap();
    let LabelledEvent::Reset(all) = first else {
        panic!("the initial list comes as a Reset: {first:?}")
    };
    assert_eq!(all.len(), 1);
    assert_eq!(all[0]["metadata"]["name"], "w1");
    assert_eq!(all[0]["data"]["a"], "1");
    assert!(
        all[0]["metadata"].get("managedFields").is_none(),
        "{}",
        all[0]
    );

    k8s.apply(&labelled("w2"), ApplyOptions::default())
        .await
        .unwrap();
    let next = tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("the new object")
        .expect("an event")
        .unwrap();
    let LabelledEvent::Applied(o) = next else {
        panic!("a change comes as Applied: {next:?}")
    };
    assert_eq!(o["metadata"]["name"], "w2");
    assert!(o["metadata"].get("managedFields").is_none(), "{o}");
}

#[tokio::test]
async fn delete_reports_whether_it_existed_and_waits_until_gone() {
    let (fake, k8s) = setup().await;
    fake.set_timings(|t| {
        t.deletion_delay
            .insert("ConfigMap".into(), Duration::from_millis(300));
    });
    let cms = ar("ConfigMap");
    k8s.apply(&configmap("gone", json!({})), ApplyOptions::default())
        .await
        .unwrap();
    assert!(
        k8s.delete_and_wait(&cms, "default", "gone", Duration::from_secs(10))
            .await
            .unwrap()
    );
    assert!(fake.get("v1", "ConfigMap", "default", "gone").is_none());
    assert!(!k8s.delete(&cms, "default", "gone").await.unwrap());
    // The wait was a watch, not polling GETs.
    assert!(fake.requests(|r| r.watch).len() <= 2);
    assert_eq!(
        fake.requests(|r| r.verb == "get" && r.name.as_deref() == Some("gone"))
            .len(),
        0
    );
}

#[tokio::test]
async fn server_filled_defaults_are_not_drift_but_a_changed_field_is() {
    let (fake, k8s) = setup().await;
    fake.set_cluster_fate("*", ClusterFate::Unmanaged);
    let rc = raycluster("rc", 2);
    let live = k8s.apply(&rc, ApplyOptions::default()).await.unwrap();
    // The server filled in the CRD defaults the rendered manifest lacks.
    let group = &live["spec"]["workerGroupSpecs"][0];
    assert_eq!(group["numOfHosts"], 1);
    assert_eq!(group["minReplicas"], 0);
    assert!(group["maxReplicas"].as_i64().unwrap() > 2);
    assert_eq!(
        live["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["ports"][0]["protocol"],
        "TCP"
    );
    assert_eq!(k8s.drift(&rc, false).await.unwrap(), Drift::None);

    let mut changed = rc.clone();
    changed["spec"]["workerGroupSpecs"][0]["replicas"] = json!(3);
    changed["metadata"]["labels"]["team"] = json!("rl");
    match k8s.drift(&changed, false).await.unwrap() {
        Drift::Changed(paths) => assert_eq!(
            paths,
            ["spec.workerGroupSpecs[0].replicas", "metadata.labels.team"]
        ),
        other => panic!("expected drift, got {other:?}"),
    }
    assert_eq!(
        k8s.drift(&raycluster("absent", 1), false).await.unwrap(),
        Drift::Missing
    );
    // Drift detection never writes.
    assert_eq!(fake.requests(|r| r.is_apply() && !r.is_dry_run()).len(), 1);
}

#[tokio::test]
async fn service_defaults_are_not_drift() {
    let (_fake, k8s) = setup().await;
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "vllm"},
        "spec": {"type": "ClusterIP", "selector": {"app": "vllm"},
                 "ports": [{"name": "http", "port": 8000, "targetPort": 8000}]}});
    let live = k8s.apply(&svc, ApplyOptions::default()).await.unwrap();
    assert_eq!(live["spec"]["ports"][0]["protocol"], "TCP");
    assert!(live["spec"]["clusterIP"].is_string());
    assert_eq!(k8s.drift(&svc, false).await.unwrap(), Drift::None);
}
