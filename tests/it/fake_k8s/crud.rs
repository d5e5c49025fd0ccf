//! Discovery and CRUD through kube-rs.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{self, Discovery, Scope};
use serde_json::json;

use super::common::*;

fn rc_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayCluster"))
}

fn configmap(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>()},
        "data": {"k": "v"}
    }))
    .unwrap()
}

pub fn pod_json(name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "demo"}},
        "spec": {"containers": [{"name": "main", "image": "busybox:1.36", "ports": [{"containerPort": 80}]}]}
    })
}

#[tokio::test]
async fn discovery_finds_core_apps_batch_and_crds() {
    let (_fake, client) = setup().await;
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.minor, "37");
    let discovery = Discovery::new(client.clone()).run().await.unwrap();
    let (rc, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayCluster"))
        .unwrap();
    assert_eq!(rc.plural, "rayclusters");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(caps.subresources.iter().any(|(r, _)| r.plural == "status"));
    let (pods, pod_caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk("", "v1", "Pod"))
        .unwrap();
    assert_eq!(pods.plural, "pods");
    let subs: Vec<&str> = pod_caps
        .subresources
        .iter()
        .map(|(r, _)| r.plural.as_str())
        .collect();
    for sub in ["log", "exec", "portforward", "status"] {
        assert!(subs.contains(&sub), "{sub} missing from {subs:?}");
    }
    for gvk in [
        GroupVersionKind::gvk("apps", "v1", "Deployment"),
        GroupVersionKind::gvk("batch", "v1", "Job"),
        GroupVersionKind::gvk("resource.k8s.io", "v1", "ResourceClaimTemplate"),
        GroupVersionKind::gvk("resource.nvidia.com", "v1beta1", "ComputeDomain"),
        GroupVersionKind::gvk("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
        GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
    ] {
        assert!(
            discovery.resolve_gvk(&gvk).is_some(),
            "{gvk:?} not discovered"
        );
    }
    // Aggregated discovery (one request per root) agrees.
    let agg = Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    assert!(
        agg.resolve_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayJob"))
            .is_some()
    );
    // Single-resource lookup, as a preflight does it.
    let (ar, _) = discovery::pinned_kind(&client, &GroupVersionKind::gvk("ray.io", "v1", "RayJob"))
        .await
        .unwrap();
    assert_eq!(ar.plural, "rayjobs");
    // The CRDs are listed.
    let crds: Api<DynamicObject> = Api::all_with(
        client,
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        )),
    );
    let names: Vec<String> = crds
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert!(
        names.contains(&"rayclusters.ray.io".to_string())
            && names.contains(&"rayjobs.ray.io".to_string())
    );
}

#[tokio::test]
async fn typed_configmap_crud_with_real_status_errors() {
    let (fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = cms
        .create(&PostParams::default(), &configmap("one", &[]))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.as_deref().is_some_and(|u| u.len() == 36));
    assert!(meta.creation_timestamp.is_some());
    let rv1: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();

    let err = cms
        .create(&PostParams::default(), &configmap("one", &[]))
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error")
    };
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "AlreadyExists")
    );
    assert_eq!(status.message, "configmaps \"one\" already exists");

    let err = cms.get("missing").await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error")
    };
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    assert_eq!(cms.get_opt("missing").await.unwrap(), None);

    // Replace with a stale resourceVersion conflicts; with the current one it succeeds.
    let mut stale = created.clone();
    let mut fresh = cms.get("one").await.unwrap();
    fresh.data = Some(BTreeMap::from([("k".to_string(), "v2".to_string())]));
    let replaced = cms
        .replace("one", &PostParams::default(), &fresh)
        .await
        .unwrap();
    let rv2: u64 = replaced
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    stale.data = Some(BTreeMap::from([("k".to_string(), "v3".to_string())]));
    let err = cms
        .replace("one", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error")
    };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));

    // A namespace that does not exist.
    let other: Api<ConfigMap> = Api::namespaced(client.clone(), "nope");
    let err = other
        .create(&PostParams::default(), &configmap("x", &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(s) if s.code == 404 && s.message == "namespaces \"nope\" not found")
    );

    // Invalid names are rejected as the API server does.
    let err = cms
        .create(&PostParams::default(), &configmap("Bad_Name", &[]))
        .await
        .unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 422 && s.reason == "Invalid"));

    let deleted = cms.delete("one", &DeleteParams::default()).await.unwrap();
    assert!(
        deleted.is_right(),
        "an immediate delete answers with a Success Status"
    );
    assert!(fake.get("v1", "ConfigMap", "default", "one").is_none());
}

#[tokio::test]
async fn lists_have_kind_and_resource_version_and_honour_selectors() {
    let (_fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for (name, env, tier) in [
        ("a", "prod", "web"),
        ("b", "dev", "web"),
        ("c", "prod", "db"),
        ("d", "", "db"),
    ] {
        let mut labels = vec![("tier", tier)];
        if !env.is_empty() {
            labels.push(("env", env));
        }
        cms.create(&PostParams::default(), &configmap(name, &labels))
            .await
            .unwrap();
    }
    let names = |l: kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items
            .into_iter()
            .filter_map(|c| c.metadata.name)
            .collect()
    };
    let sel = |s: &str| ListParams::default().labels(s);
    assert_eq!(names(cms.list(&sel("env=prod")).await.unwrap()), ["a", "c"]);
    assert_eq!(
        names(cms.list(&sel("env==prod,tier=db")).await.unwrap()),
        ["c"]
    );
    assert_eq!(
        names(cms.list(&sel("env!=prod")).await.unwrap()),
        ["b", "d"]
    );
    assert_eq!(
        names(cms.list(&sel("env in (dev, prod)")).await.unwrap()),
        ["a", "b", "c"]
    );
    assert_eq!(
        names(cms.list(&sel("env notin (prod)")).await.unwrap()),
        ["b", "d"]
    );
    assert_eq!(names(cms.list(&sel("env")).await.unwrap()), ["a", "b", "c"]);
    assert_eq!(names(cms.list(&sel("!env")).await.unwrap()), ["d"]);
    assert_eq!(
        names(
            cms.list(&ListParams::default().fields("metadata.name=b"))
                .await
                .unwrap()
        ),
        ["b"]
    );
    assert_eq!(
        names(
            cms.list(&ListParams::default().fields("metadata.namespace!=default"))
                .await
                .unwrap()
        ),
        Vec::<String>::new()
    );

    // Paging with limit/continue.
    let page = cms.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(page.items.len(), 3);
    let token = page.metadata.continue_.clone().unwrap();
    let rest = cms
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(rest), ["d"]);

    // Every page says the first page's resourceVersion (the real server serves a chunked
    // list from that snapshot), so a watch from it sees a change made between the pages.
    let first = cms.list(&ListParams::default().limit(3)).await.unwrap();
    let snapshot = first.metadata.resource_version.clone().unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    let mut changed: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "a"}, "data": {"k": "changed"}}))
            .unwrap();
    changed.metadata.resource_version = None;
    cms.patch(
        "a",
        &PatchParams::apply("t").force(),
        &Patch::Apply(&changed),
    )
    .await
    .unwrap();
    let last = cms
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(
        last.metadata.resource_version.as_deref(),
        Some(snapshot.as_str())
    );
    let mut replay = cms
        .watch(&WatchParams::default().timeout(2), &snapshot)
        .await
        .unwrap()
        .boxed();
    let mut seen_change = false;
    while let Some(Ok(ev)) = replay.next().await {
        if let WatchEvent::Modified(cm) = ev {
            seen_change |= cm.metadata.name.as_deref() == Some("a");
            break;
        }
    }
    assert!(
        seen_change,
        "the watch from the list's resourceVersion replays the change"
    );

    // The raw list carries kind/apiVersion/resourceVersion as the real server's does.
    let raw: serde_json::Value = client
        .request(
            axum::http::Request::get("/api/v1/namespaces/default/configmaps")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(raw["kind"], "ConfigMapList");
    assert_eq!(raw["apiVersion"], "v1");
    // Items of built-in kinds carry neither, as the real server's do.
    let item = &raw["items"][0];
    assert!(item.get("apiVersion").is_none() && item.get("kind").is_none());
    assert!(item["metadata"]["name"].is_string());
    let paged: serde_json::Value = client
        .request(
            axum::http::Request::get("/api/v1/namespaces/default/configmaps?limit=3")
                .body(vec![])
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(paged["metadata"]["remainingItemCount"], 1);
    assert!(paged["metadata"]["continue"].is_string());
    assert!(
        raw["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 0
    );
}

#[tokio::test]
async fn dynamic_raycluster_crud_and_status_subresource() {
    let (fake, client) = setup().await;
    // Keep the simulated operator away from this cluster: the test owns its status.
    fake.set_cluster_fate("rc-crud", ClusterFate::Unmanaged);
    let ar = rc_resource();
    let rcs: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let mut rc = DynamicObject::new("rc-crud", &ar);
    rc.data = json!({"spec": {"rayVersion": "2.60.0", "workerGroupSpecs": [{"groupName": "w"}]}, "status": {"state": "bogus"}});
    let created = rcs.create(&PostParams::default(), &rc).await.unwrap();
    // Status is dropped on create; CRD defaults are filled in.
    assert!(created.data.get("status").is_none());
    let wg = &created.data["spec"]["workerGroupSpecs"][0];
    assert_eq!(
        (
            wg["numOfHosts"].as_i64(),
            wg["minReplicas"].as_i64(),
            wg["maxReplicas"].as_i64()
        ),
        (Some(1), Some(0), Some(2147483647))
    );
    assert_eq!(created.metadata.generation, Some(1));

    // Status writes go through /status and do not bump generation.
    let st = rcs
        .patch_status(
            "rc-crud",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"state": "ready"}})),
        )
        .await
        .unwrap();
    assert_eq!(st.data["status"]["state"], "ready");
    assert_eq!(st.metadata.generation, Some(1));
    // A spec change through the main resource bumps generation and keeps status.
    let patched = rcs
        .patch(
            "rc-crud",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"rayVersion": "2.61.0"}, "status": {"state": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(patched.data["status"]["state"], "ready");
    let got = rcs.get_status("rc-crud").await.unwrap();
    assert_eq!(got.data["spec"]["rayVersion"], "2.61.0");
    rcs.delete("rc-crud", &DeleteParams::default())
        .await
        .unwrap();
    assert!(rcs.get_opt("rc-crud").await.unwrap().is_none());
}

#[tokio::test]
async fn typed_pod_gets_defaults_and_runs() {
    let (fake, client) = setup().await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let pod: Pod = serde_json::from_value(pod_json("web")).unwrap();
    let created = pods.create(&PostParams::default(), &pod).await.unwrap();
    let spec = created.spec.unwrap();
    assert_eq!(spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(
        spec.containers[0].ports.as_ref().unwrap()[0]
            .protocol
            .as_deref(),
        Some("TCP")
    );
    assert_eq!(
        spec.containers[0].image_pull_policy.as_deref(),
        Some("IfNotPresent")
    );
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| f.field(
            "v1",
            "Pod",
            "default",
            "web",
            "status.phase"
        ) == Some(json!("Running")))
            .await
    );
    let running = pods.get("web").await.unwrap();
    assert_eq!(
        running.spec.unwrap().node_name.as_deref(),
        Some("fake-node-1")
    );
    assert!(running.status.unwrap().pod_ip.is_some());
}
