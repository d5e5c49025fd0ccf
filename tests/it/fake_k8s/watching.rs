//! Watches: kube-runtime's watcher and await_condition, resume after a dropped connection,
//! relist after 410 Gone, bookmarks, selector semantics.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams, WatchEvent, WatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::wait::{Condition, await_condition};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use super::common::*;

fn configmap(name: &str, label: &str) -> ConfigMap {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": label}}})).unwrap()
}

fn raycluster(name: &str) -> DynamicObject {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayCluster"));
    let mut rc = DynamicObject::new(name, &ar);
    let tmpl =
        |c: &str| json!({"spec": {"containers": [{"name": c, "image": "rayproject/ray:2.60.0"}]}});
    rc.data = json!({"spec": {
        "rayVersion": "2.60.0",
        "headGroupSpec": {"rayStartParams": {}, "template": tmpl("ray-head")},
        "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "minReplicas": 2, "maxReplicas": 2, "rayStartParams": {}, "template": tmpl("ray-worker")}]
    }});
    rc
}

fn is_ready() -> impl Condition<DynamicObject> {
    |obj: Option<&DynamicObject>| {
        obj.is_some_and(|o| {
            o.data.pointer("/status/state").and_then(|s| s.as_str()) == Some("ready")
        })
    }
}

#[tokio::test]
async fn await_condition_sees_a_raycluster_become_ready_with_one_watch() {
    let (fake, client) = setup().await;
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayCluster"));
    let rcs: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    rcs.create(&PostParams::default(), &raycluster("rc"))
        .await
        .unwrap();
    fake.clear_request_log();
    let ready = tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(rcs.clone(), "rc", is_ready()),
    )
    .await
    .expect("ready in time")
    .unwrap()
    .unwrap();
    let status = &ready.data["status"];
    assert_eq!(status["readyWorkerReplicas"], 2);
    let head = status["head"]["podName"].as_str().unwrap();
    assert!(head.starts_with("rc-head-"), "{head}");
    assert_eq!(status["head"]["serviceName"], "rc-head-svc");
    // One list and one watch: waiting costs a constant number of requests.
    let log = fake.request_log();
    assert_eq!(log.iter().filter(|r| r.watch).count(), 1, "{log:#?}");
    assert!(log.len() <= 3, "{log:#?}");
    // The pods and the service the operator made.
    let pods = fake.pods("default", "ray.io/cluster=rc");
    assert_eq!(pods.len(), 3);
    let workers = fake.pods(
        "default",
        "ray.io/cluster=rc,ray.io/node-type=worker,ray.io/group=gpu",
    );
    assert!(workers.iter().all(|p| {
        p["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("rc-gpu-worker-")
    }));
    assert!(
        workers
            .iter()
            .all(|p| p["metadata"]["ownerReferences"][0]["kind"] == "RayCluster")
    );
    assert!(
        fake.get("v1", "Service", "default", "rc-head-svc")
            .is_some()
    );
}

#[tokio::test]
async fn watcher_resumes_after_a_dropped_connection() {
    let (fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    fake.inject(
        FaultMatch::any().watch(true),
        FaultAction::DropWatchAfter(2),
        Some(1),
    );
    let stream = watcher(cms.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects();
    let seen = tokio::spawn(async move {
        let mut names = Vec::new();
        let mut stream = std::pin::pin!(stream);
        // Errors (a dropped connection, 410) are yielded and then recovered from.
        while let Some(item) = stream.next().await {
            let Ok(cm) = item else { continue };
            names.push(cm.metadata.name.unwrap_or_default());
            if names.len() == 5 {
                break;
            }
        }
        names
    });
    // Create only once the watch is open, so the events travel over it (and the fault
    // drops it) instead of all arriving in the initial list.
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| !f
            .requests(|r| r.watch)
            .is_empty())
            .await,
        "the watcher opened a watch"
    );
    for i in 0..5 {
        cms.create(&PostParams::default(), &configmap(&format!("cm{i}"), "x"))
            .await
            .unwrap();
    }
    let names = tokio::time::timeout(Duration::from_secs(5), seen)
        .await
        .expect("all events")
        .unwrap();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, ["cm0", "cm1", "cm2", "cm3", "cm4"], "{names:?}");
    assert!(
        fake.requests(|r| r.watch).len() >= 2,
        "the watch was re-established"
    );
}

#[tokio::test]
async fn watch_from_a_compacted_resource_version_is_gone_and_the_watcher_relists() {
    let (fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &configmap("old", "x"))
        .await
        .unwrap();
    let old_rv = fake.current_resource_version().to_string();
    cms.create(&PostParams::default(), &configmap("new", "x"))
        .await
        .unwrap();
    fake.compact_history();

    // A raw watch from the old resourceVersion gets a 410 ERROR event.
    let mut raw = cms
        .watch(&WatchParams::default(), &old_rv)
        .await
        .unwrap()
        .boxed();
    match raw.next().await {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410, got {other:?}"),
    }

    // kube-runtime's watcher relists on 410 and carries on. Make it deterministic: the
    // server ends the watch after 1 s, the re-watch is held back by a delay, and meanwhile a
    // new object is created and the history compacted, so the re-watch gets 410.
    let stream = watcher(cms.clone(), watcher::Config::default().timeout(1))
        .default_backoff()
        .applied_objects();
    let task = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        let mut names = Vec::new();
        // Errors (a dropped connection, 410) are yielded and then recovered from.
        while let Some(item) = stream.next().await {
            let Ok(cm) = item else { continue };
            names.push(cm.metadata.name.unwrap_or_default());
            if names.contains(&"gap".to_string()) {
                break;
            }
        }
        names
    });
    // The request log records a watch before its fault delay runs, so: once the watcher's
    // first watch is open, delay later watches; once the re-watch (after the server's 1 s
    // timeout) is logged, it is held for 600 ms while the gap is created and compacted.
    let raw_watches = fake.requests(|r| r.watch).len();
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| f.requests(|r| r.watch).len()
            > raw_watches)
            .await,
        "the watcher opened a watch"
    );
    fake.inject(
        FaultMatch::any().watch(true),
        FaultAction::Delay(Duration::from_millis(600)),
        None,
    );
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| f.requests(|r| r.watch).len()
            > raw_watches + 1)
            .await,
        "the watcher re-watched after the server's timeout"
    );
    cms.create(&PostParams::default(), &configmap("gap", "x"))
        .await
        .unwrap();
    fake.compact_history();
    let names = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("watcher recovered")
        .unwrap();
    assert!(
        names.contains(&"old".to_string()) && names.contains(&"gap".to_string()),
        "{names:?}"
    );
    let lists = fake.requests(|r| r.verb == "list" && r.resource.as_deref() == Some("configmaps"));
    assert!(
        lists.len() >= 2,
        "the watcher relisted after 410: {lists:#?}"
    );
}

#[tokio::test]
async fn raw_watch_semantics_selectors_bookmarks_and_timeout() {
    let fake = FakeK8s::builder()
        .timings(Timings {
            bookmark_interval: Duration::from_millis(100),
            ..Timings::default()
        })
        .start();
    let client = fake.client().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &configmap("a", "one"))
        .await
        .unwrap();
    let start_rv = fake.current_resource_version().to_string();
    let wp = WatchParams::default().labels("app=one").timeout(1);
    let mut events = cms.watch(&wp, &start_rv).await.unwrap().boxed();
    // Relabelling out of the selection is a DELETED for this watch; back in is an ADDED.
    let patch =
        |label: &str| kube::api::Patch::Merge(json!({"metadata": {"labels": {"app": label}}}));
    cms.patch("a", &Default::default(), &patch("two"))
        .await
        .unwrap();
    cms.patch("a", &Default::default(), &patch("one"))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &configmap("b", "two"))
        .await
        .unwrap();
    let mut kinds = Vec::new();
    let mut bookmarks = 0;
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(3), events.next())
        .await
        .expect("stream ends by timeout")
    {
        match ev.unwrap() {
            WatchEvent::Added(cm) => kinds.push(format!("ADDED {}", cm.metadata.name.unwrap())),
            WatchEvent::Modified(cm) => {
                kinds.push(format!("MODIFIED {}", cm.metadata.name.unwrap()))
            }
            WatchEvent::Deleted(cm) => kinds.push(format!("DELETED {}", cm.metadata.name.unwrap())),
            WatchEvent::Bookmark(bm) => {
                assert!(!bm.metadata.resource_version.is_empty());
                bookmarks += 1;
            }
            WatchEvent::Error(e) => panic!("{e:?}"),
        }
    }
    assert_eq!(kinds, ["DELETED a", "ADDED a"]);
    assert!(
        bookmarks >= 2,
        "bookmarks every 100 ms over the 1 s watch: {bookmarks}"
    );
    // The watch responses are chunked application/json, as the real server sends them.
    assert!(fake.requests(|r| r.watch).iter().all(|r| r.status == 200));
}

#[tokio::test]
async fn streaming_list_watch_gets_initial_events_and_end_bookmark() {
    let (_fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &configmap("pre", "x"))
        .await
        .unwrap();
    let cfg = watcher::Config::default().streaming_lists();
    let stream = watcher(cms.clone(), cfg).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut saw_init_done = false;
    let mut saw_pre = false;
    while let Some(ev) = tokio::time::timeout(Duration::from_secs(3), stream.next())
        .await
        .expect("events")
        .map(|e| e.unwrap())
    {
        match ev {
            watcher::Event::InitApply(cm) => saw_pre |= cm.metadata.name.as_deref() == Some("pre"),
            watcher::Event::InitDone => {
                saw_init_done = true;
                break;
            }
            _ => {}
        }
    }
    assert!(saw_pre && saw_init_done);
}
