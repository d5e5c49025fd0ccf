//! The simulated controllers: RayJob lifecycle, RayCluster failure, batch Jobs with retries and
//! sidecars, Deployments, deletion and garbage collection.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams, PropagationPolicy};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};

use super::common::*;

fn ar(group: &str, version: &str, kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

fn rayjob(name: &str, shutdown: bool, ttl: i64) -> DynamicObject {
    let mut rj = DynamicObject::new(name, &ar("ray.io", "v1", "RayJob"));
    let tmpl =
        |c: &str| json!({"spec": {"containers": [{"name": c, "image": "rayproject/ray:2.60.0"}]}});
    rj.data = json!({"spec": {
        "entrypoint": "python train.py",
        "submissionMode": "HTTPMode",
        "shutdownAfterJobFinishes": shutdown,
        "ttlSecondsAfterFinished": ttl,
        "rayClusterSpec": {
            "headGroupSpec": {"template": tmpl("ray-head")},
            "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "template": tmpl("ray-worker")}]
        }
    }});
    rj
}

fn status_of(obj: Option<&DynamicObject>, key: &str) -> Option<String> {
    obj?.data
        .pointer(&format!("/status/{key}"))?
        .as_str()
        .map(str::to_string)
}

fn job_json(name: &str, backoff_limit: i64) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {"run": "r1"}},
        "spec": {"backoffLimit": backoff_limit, "template": {"spec": {
            "restartPolicy": "Never",
            "initContainers": [{"name": "vllm", "image": "vllm:1", "restartPolicy": "Always"}],
            "containers": [{"name": "driver", "image": "gym:1"}]
        }}}
    })
}

#[tokio::test]
async fn rayjob_runs_to_completion_and_its_cluster_is_shut_down() {
    let (fake, client) = setup().await;
    fake.set_rayjob_script(
        "train",
        RayJobScript::succeeds().with_logs(&["step 1", "done"]),
    );
    let rjs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("ray.io", "v1", "RayJob"));
    rjs.create(&PostParams::default(), &rayjob("train", true, 60))
        .await
        .unwrap();

    let seen = std::sync::Mutex::new(Vec::<String>::new());
    let record = |obj: Option<&DynamicObject>| {
        let mut seen = seen.lock().unwrap();
        if let Some(s) = status_of(obj, "jobDeploymentStatus")
            && seen.last() != Some(&s)
        {
            seen.push(s);
        }
    };
    let done = tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(rjs.clone(), "train", |o: Option<&DynamicObject>| {
            record(o);
            status_of(o, "jobDeploymentStatus").as_deref() == Some("Complete")
        }),
    )
    .await
    .expect("complete in time")
    .unwrap()
    .unwrap();
    assert_eq!(
        status_of(Some(&done), "jobStatus").as_deref(),
        Some("SUCCEEDED")
    );
    let cluster = status_of(Some(&done), "rayClusterName").unwrap();
    assert!(
        cluster.starts_with("train-") && cluster.len() == "train-".len() + 5,
        "{cluster}"
    );
    assert!(
        status_of(Some(&done), "jobId")
            .unwrap()
            .starts_with("train-")
    );
    // dashboardURL names the RayCluster's head Service (utils/util.go: FetchHeadServiceURL);
    // the RayJob's own `<rayjob>-head-svc` is a second Service selecting the same head.
    assert_eq!(
        status_of(Some(&done), "dashboardURL"),
        Some(format!("{cluster}-head-svc.default.svc.cluster.local:8265"))
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.first().map(String::as_str),
        Some("Initializing"),
        "{seen:?}"
    );
    assert!(seen.contains(&"Running".to_string()), "{seen:?}");
    assert!(!seen.contains(&"New".to_string()), "{seen:?}");
    assert!(
        fake.get("v1", "Service", "default", &format!("{cluster}-head-svc"))
            .is_some()
    );
    let rayjob_svc = fake
        .get("v1", "Service", "default", "train-head-svc")
        .unwrap();
    assert_eq!(
        rayjob_svc["spec"]["selector"]["ray.io/cluster"],
        json!(cluster)
    );
    assert_eq!(
        rayjob_svc["metadata"]["ownerReferences"][0]["kind"],
        "RayJob"
    );
    assert_eq!(
        done.metadata.finalizers.clone().unwrap_or_default(),
        ["ray.io/rayjob-finalizer"]
    );
    // The scripted driver output is in the head pod's log.
    let head = fake.pod_name(
        "default",
        &format!("ray.io/cluster={cluster},ray.io/node-type=head"),
    );
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client, "default");
    let log = pods
        .logs(&head.unwrap(), &Default::default())
        .await
        .unwrap();
    assert_eq!(log, "step 1\ndone\n");
    // ttlSecondsAfterFinished (60 s × the 0.01 test scale) later, the cluster is deleted and
    // its pods are garbage-collected.
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| f
            .get("ray.io/v1", "RayCluster", "default", &cluster)
            .is_none())
            .await
    );
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| f
            .pods("default", &format!("ray.io/cluster={cluster}"))
            .is_empty())
            .await
    );
    assert_eq!(
        fake.field(
            "ray.io/v1",
            "RayJob",
            "default",
            "train",
            "status.jobDeploymentStatus"
        ),
        Some(json!("Complete"))
    );
}

#[tokio::test]
async fn rayjob_failures_validation_and_failed_clusters() {
    let (fake, client) = setup().await;
    fake.set_rayjob_script(
        "bad",
        RayJobScript::fails("Job entrypoint command failed with exit code 3"),
    );
    let rjs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("ray.io", "v1", "RayJob"));
    rjs.create(&PostParams::default(), &rayjob("bad", false, 0))
        .await
        .unwrap();
    let long_name = "a".repeat(48);
    rjs.create(&PostParams::default(), &rayjob(&long_name, false, 0))
        .await
        .unwrap();
    fake.set_cluster_fate("broken-*", ClusterFate::HeadCrashLoop);
    rjs.create(&PostParams::default(), &rayjob("broken", false, 0))
        .await
        .unwrap();

    let wait = |name: String, want: &'static str| {
        let rjs = rjs.clone();
        async move {
            tokio::time::timeout(
                Duration::from_secs(5),
                await_condition(rjs, &name, move |o: Option<&DynamicObject>| {
                    status_of(o, "jobDeploymentStatus").as_deref() == Some(want)
                }),
            )
            .await
            .unwrap_or_else(|_| panic!("{name} never reached {want}"))
            .unwrap()
            .unwrap()
        }
    };
    let bad = wait("bad".into(), "Failed").await;
    assert_eq!(
        status_of(Some(&bad), "jobStatus").as_deref(),
        Some("FAILED")
    );
    assert_eq!(
        status_of(Some(&bad), "reason").as_deref(),
        Some("AppFailed")
    );
    assert!(
        status_of(Some(&bad), "message")
            .unwrap()
            .contains("exit code 3")
    );
    let invalid = wait(long_name, "ValidationFailed").await;
    assert!(
        status_of(Some(&invalid), "message")
            .unwrap()
            .contains("47 characters")
    );
    // KubeRay v1.5.1 has no failed RayCluster: a crash-looping head keeps the RayJob in
    // Initializing, and the cluster's HeadPodReady condition says why.
    let broken = wait("broken".into(), "Initializing").await;
    let rc_name = status_of(Some(&broken), "rayClusterName").unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| {
            f.field(
                "ray.io/v1",
                "RayCluster",
                "default",
                &rc_name,
                "status.conditions",
            )
            .and_then(|c| {
                c.as_array()?
                    .iter()
                    .find(|c| c["type"] == "HeadPodReady")
                    .map(|c| c["reason"] == "CrashLoopBackOff" && c["status"] == "False")
            })
            .unwrap_or(false)
        })
        .await
    );
    let rc_state = fake.field(
        "ray.io/v1",
        "RayCluster",
        "default",
        &rc_name,
        "status.state",
    );
    assert!(
        rc_state.is_none() || rc_state == Some(json!("")),
        "{rc_state:?}"
    );
    assert_eq!(
        fake.field(
            "ray.io/v1",
            "RayJob",
            "default",
            "broken",
            "status.jobDeploymentStatus"
        ),
        Some(json!("Initializing"))
    );
}

#[tokio::test]
async fn stuck_cluster_pods_stay_pending_with_a_scheduling_event() {
    let (fake, client) = setup().await;
    fake.set_cluster_fate("gpu-hungry", ClusterFate::StuckPending);
    let rcs: Api<DynamicObject> =
        Api::namespaced_with(client, "default", &ar("ray.io", "v1", "RayCluster"));
    let mut rc = DynamicObject::new("gpu-hungry", &ar("ray.io", "v1", "RayCluster"));
    rc.data = json!({"spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "ray:1"}]}}}}});
    rcs.create(&PostParams::default(), &rc).await.unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| {
            f.list("v1", "Event", Some("default"), "")
                .iter()
                .any(|e| e["reason"] == "FailedScheduling")
        })
        .await
    );
    // Fixed window (nothing happens; absence has no event): the pod stays Pending.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let pods = fake.pods("default", "ray.io/cluster=gpu-hungry");
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0]["status"]["phase"], "Pending");
    assert_eq!(
        pods[0]["status"]["conditions"][0]["reason"],
        "Unschedulable"
    );
    assert_eq!(
        fake.field(
            "ray.io/v1",
            "RayCluster",
            "default",
            "gpu-hungry",
            "status.state"
        ),
        None
    );
}

#[tokio::test]
async fn job_retries_a_failing_pod_then_succeeds_and_deletion_propagates() {
    let (fake, client) = setup().await;
    fake.set_job_script(
        "bench-*",
        JobScript::attempts(&[1, 0]).log("driver", "score=0.9"),
    );
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(
        &PostParams::default(),
        &serde_json::from_value(job_json("bench-math", 2)).unwrap(),
    )
    .await
    .unwrap();
    let done = tokio::time::timeout(
        Duration::from_secs(6),
        await_condition(
            jobs.clone(),
            "bench-math",
            kube::runtime::conditions::is_job_completed(),
        ),
    )
    .await
    .expect("job finishes")
    .unwrap()
    .unwrap();
    let status = done.status.unwrap();
    assert_eq!((status.succeeded, status.failed), (Some(1), Some(1)));
    assert!(status.start_time.is_some() && status.completion_time.is_some());
    let types: Vec<String> = status
        .conditions
        .unwrap()
        .into_iter()
        .map(|c| c.type_)
        .collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);

    let pods = fake.pods("default", "batch.kubernetes.io/job-name=bench-math");
    assert_eq!(pods.len(), 2);
    let mut phases: Vec<&str> = pods
        .iter()
        .map(|p| p["status"]["phase"].as_str().unwrap())
        .collect();
    phases.sort();
    assert_eq!(phases, ["Failed", "Succeeded"]);
    let failed = pods
        .iter()
        .find(|p| p["status"]["phase"] == "Failed")
        .unwrap();
    assert_eq!(
        failed["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        1
    );
    // The native sidecar ran and was stopped after the driver.
    assert_eq!(failed["status"]["initContainerStatuses"][0]["name"], "vllm");
    assert!(failed["status"]["initContainerStatuses"][0]["state"]["terminated"].is_object());
    assert_eq!(failed["metadata"]["labels"]["job-name"], "bench-math");
    let name = failed["metadata"]["name"].as_str().unwrap();
    let logs = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), "default")
        .logs(
            name,
            &kube::api::LogParams {
                container: Some("driver".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(logs, "score=0.9\n");

    // Deleting with Background propagation takes the pods along.
    jobs.delete(
        "bench-math",
        &DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| f
            .pods("default", "job-name=bench-math")
            .is_empty())
            .await
    );
}

#[tokio::test]
async fn job_fails_after_backoff_limit_and_default_delete_orphans_pods() {
    let (fake, client) = setup().await;
    fake.set_job_script("doomed", JobScript::fails(2));
    let jobs: Api<Job> = Api::namespaced(client, "default");
    jobs.create(
        &PostParams::default(),
        &serde_json::from_value(job_json("doomed", 1)).unwrap(),
    )
    .await
    .unwrap();
    let failed = tokio::time::timeout(
        Duration::from_secs(6),
        await_condition(jobs.clone(), "doomed", |j: Option<&Job>| {
            j.and_then(|j| j.status.as_ref()?.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Failed" && c.status == "True"))
        }),
    )
    .await
    .expect("job fails")
    .unwrap()
    .unwrap();
    let status = failed.status.unwrap();
    assert_eq!(status.failed, Some(2));
    let cond = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Failed")
        .unwrap();
    assert_eq!(cond.reason.as_deref(), Some("BackoffLimitExceeded"));
    // batch/v1 Jobs orphan their pods when no propagation policy is given.
    jobs.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    // Fixed window (nothing happens; the GC leaves no trace when done): orphans survive.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let pods = fake.pods("default", "job-name=doomed");
    assert_eq!(pods.len(), 2);
    assert!(
        pods.iter()
            .all(|p| p["metadata"].get("ownerReferences").is_none())
    );
}

#[tokio::test]
async fn deployment_becomes_available() {
    let (fake, client) = setup().await;
    let deps: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client, "default");
    let d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "router"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "router"}},
                 "template": {"metadata": {"labels": {"app": "router"}}, "spec": {"containers": [{"name": "r", "image": "router:1"}]}}}
    });
    deps.create(&PostParams::default(), &serde_json::from_value(d).unwrap())
        .await
        .unwrap();
    let ready = tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(
            deps.clone(),
            "router",
            kube::runtime::conditions::is_deployment_completed(),
        ),
    )
    .await
    .expect("available in time")
    .unwrap()
    .unwrap();
    let st = ready.status.unwrap();
    assert_eq!(
        (st.ready_replicas, st.available_replicas),
        (Some(2), Some(2))
    );
    let pods = fake.pods("default", "app=router");
    assert_eq!(pods.len(), 2);
    assert!(
        pods.iter()
            .all(|p| p["metadata"]["labels"]["pod-template-hash"].is_string())
    );
}

/// A template change rolls (RollingUpdate defaults, maxSurge 25% up / maxUnavailable 25%
/// down: https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment):
/// the old pod keeps running and ready until the new one is available, and the status
/// counts both (`replicas` 2, `updatedReplicas` 1) meanwhile.
#[tokio::test]
async fn a_deployment_rolls_old_pods_stay_until_new_ones_are_available() {
    let (fake, client) = setup().await;
    let deps: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client, "default");
    let d = |image: &str| {
        serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "w", "image": image}]}}}
        }))
        .unwrap()
    };
    deps.create(&PostParams::default(), &d("web:1"))
        .await
        .unwrap();
    let done = || {
        tokio::time::timeout(
            Duration::from_secs(5),
            await_condition(
                deps.clone(),
                "web",
                kube::runtime::conditions::is_deployment_completed(),
            ),
        )
    };
    done().await.unwrap().unwrap();
    let old = fake.pods("default", "app=web");
    assert_eq!(old.len(), 1);
    let old_name = old[0]["metadata"]["name"].as_str().unwrap().to_string();
    fake.set_timings(|t| t.pod_start = Duration::from_millis(800));
    deps.replace("web", &PostParams::default(), &{
        let mut x: k8s_openapi::api::apps::v1::Deployment = d("web:2");
        x.metadata.resource_version = None;
        x
    })
    .await
    .unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| {
            f.field(
                "apps/v1",
                "Deployment",
                "default",
                "web",
                "status.updatedReplicas",
            ) == Some(json!(1))
                && f.field("apps/v1", "Deployment", "default", "web", "status.replicas")
                    == Some(json!(2))
        })
        .await
    );
    let old_pod = fake.get("v1", "Pod", "default", &old_name).unwrap();
    assert!(old_pod["metadata"].get("deletionTimestamp").is_none());
    assert_eq!(old_pod["status"]["phase"], "Running");
    assert_eq!(
        fake.field(
            "apps/v1",
            "Deployment",
            "default",
            "web",
            "status.availableReplicas"
        ),
        Some(json!(1))
    );
    done().await.unwrap().unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| f
            .get("v1", "Pod", "default", &old_name)
            .is_none_or(|p| p["metadata"].get("deletionTimestamp").is_some()))
            .await
    );
}

#[tokio::test]
async fn foreground_deletion_and_finalizers_make_deletion_take_a_while() {
    let (fake, client) = setup().await;
    fake.set_timings(|t| {
        t.deletion_delay
            .insert("RayCluster".into(), Duration::from_millis(300));
    });
    let rcs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("ray.io", "v1", "RayCluster"));
    let mut rc = DynamicObject::new("slow", &ar("ray.io", "v1", "RayCluster"));
    rc.data = json!({"spec": {"headGroupSpec": {"template": {"spec": {"containers": [{"name": "h", "image": "ray:1"}]}}}}});
    let rc = rcs.create(&PostParams::default(), &rc).await.unwrap();
    let uid = rc.metadata.uid.clone().unwrap();
    // A DRA object owned by the cluster is collected with it.
    let owned = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "roce-slow", "namespace": "default",
                     "ownerReferences": [{"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "slow", "uid": uid}]},
        "spec": {"spec": {"devices": {"requests": []}}}
    });
    fake.put(owned);
    let deleted = rcs
        .delete("slow", &DeleteParams::foreground())
        .await
        .unwrap();
    let pending = deleted.left().expect("still there while dependents go");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert!(
        pending
            .metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    let gone = tokio::time::timeout(
        Duration::from_secs(5),
        kube::runtime::wait::await_condition(
            rcs.clone(),
            "slow",
            kube::runtime::conditions::is_deleted(&uid),
        ),
    )
    .await
    .expect("deleted in time");
    gone.unwrap();
    assert!(
        fake.get(
            "resource.k8s.io/v1",
            "ResourceClaimTemplate",
            "default",
            "roce-slow"
        )
        .is_none()
    );
    assert!(fake.pods("default", "ray.io/cluster=slow").is_empty());

    // A user finalizer holds deletion until it is removed.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(client, "default");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    cms.create(&PostParams::default(), &serde_json::from_value(cm).unwrap())
        .await
        .unwrap();
    assert!(
        cms.delete("held", &DeleteParams::default())
            .await
            .unwrap()
            .is_left()
    );
    // Fixed window (nothing happens; absence has no event): the finalizer holds deletion.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(cms.get_opt("held").await.unwrap().is_some());
    cms.patch(
        "held",
        &Default::default(),
        &kube::api::Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(2), |f| f
            .get("v1", "ConfigMap", "default", "held")
            .is_none())
            .await
    );
}

/// KubeRay's InteractiveMode: the cluster comes up, the RayJob waits until `spec.jobId`
/// names the job the user submitted, then runs; and a RayJob that keeps its cluster
/// (`shutdownAfterJobFinishes: false`) may not have a TTL.
#[tokio::test]
async fn interactive_rayjob_waits_for_its_job_id_and_ttl_needs_shutdown() {
    let (fake, client) = setup().await;
    let rjs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("ray.io", "v1", "RayJob"));
    let mut rj = rayjob("inter", true, 0);
    rj.data["spec"]["submissionMode"] = json!("InteractiveMode");
    rjs.create(&PostParams::default(), &rj).await.unwrap();
    let state = |f: &FakeK8s, name: &str| {
        f.field(
            "ray.io/v1",
            "RayJob",
            "default",
            name,
            "status.jobDeploymentStatus",
        )
    };
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| state(f, "inter")
            == Some(json!("Waiting")))
            .await
    );
    fake.edit("ray.io/v1", "RayJob", "default", "inter", |o| {
        o["spec"]["jobId"] = json!("my-run-1")
    });
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| state(f, "inter")
            == Some(json!("Complete")))
            .await
    );
    assert_eq!(
        fake.field("ray.io/v1", "RayJob", "default", "inter", "status.jobId"),
        Some(json!("my-run-1"))
    );

    rjs.create(&PostParams::default(), &rayjob("keeps", false, 60))
        .await
        .unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| {
            state(f, "keeps") == Some(json!("ValidationFailed"))
        })
        .await
    );
}

/// Every `jobDeploymentStatus` the RayJob `name` goes through (absent as `""`), recorded
/// by a watch started before the RayJob exists, so no early state is missed.
async fn history(
    rjs: &Api<DynamicObject>,
    name: &str,
) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    use futures::StreamExt;
    let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let cfg = kube::runtime::watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = Box::pin(kube::runtime::watcher(rjs.clone(), cfg));
    let sink = out.clone();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let mut ready_tx = Some(ready_tx);
        while let Some(ev) = stream.next().await {
            let obj = match ev {
                Ok(kube::runtime::watcher::Event::InitDone) => {
                    if let Some(tx) = ready_tx.take() {
                        let _ = tx.send(());
                    }
                    continue;
                }
                Ok(kube::runtime::watcher::Event::Apply(o))
                | Ok(kube::runtime::watcher::Event::InitApply(o)) => o,
                _ => continue,
            };
            let s = status_of(Some(&obj), "jobDeploymentStatus").unwrap_or_default();
            let mut v = sink.lock().unwrap();
            if v.last() != Some(&s) {
                v.push(s);
            }
        }
    });
    let _ = ready_rx.await;
    out
}

/// Until the [`history`] watch has seen `last` too (it runs behind the test's own watch).
async fn caught_up(hist: &std::sync::Mutex<Vec<String>>, last: &str) {
    for _ in 0..250 {
        if hist.lock().unwrap().last().map(String::as_str) == Some(last) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the history never reached {last}: {:?}",
        hist.lock().unwrap()
    );
}

/// Wait (by watch) until the RayJob's `jobDeploymentStatus` is `want`, recording every
/// value it goes through.
async fn until_status(
    rjs: &Api<DynamicObject>,
    name: &str,
    want: &'static str,
    seen: &std::sync::Mutex<Vec<String>>,
) -> DynamicObject {
    tokio::time::timeout(
        Duration::from_secs(10),
        await_condition(rjs.clone(), name, |o: Option<&DynamicObject>| {
            let s = status_of(o, "jobDeploymentStatus").unwrap_or_default();
            let mut seen = seen.lock().unwrap();
            if o.is_some() && seen.last() != Some(&s) {
                seen.push(s.clone());
            }
            s == want
        }),
    )
    .await
    .unwrap_or_else(|_| panic!("{name} never reached {want}: {:?}", seen.lock().unwrap()))
    .unwrap()
    .unwrap()
}

/// KubeRay v1.5.1 `rayjob_controller.go: Reconcile`: a RayJob created with `suspend: true`
/// goes Initializing → Suspending → Suspended without a cluster surviving; `suspend: false`
/// starts it again from `""` with a new cluster name and job id.
#[tokio::test]
async fn a_suspended_rayjob_waits_and_resumes_with_a_new_cluster() {
    let (fake, client) = setup().await;
    fake.set_kueue("queued", Some(Duration::from_millis(1500)));
    let rjs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("ray.io", "v1", "RayJob"));
    let hist = history(&rjs, "queued").await;
    rjs.create(&PostParams::default(), &rayjob("queued", true, 0))
        .await
        .unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let suspended = until_status(&rjs, "queued", "Suspended", &seen).await;
    caught_up(&hist, "Suspended").await;
    assert_eq!(
        hist.lock().unwrap().clone(),
        ["", "Initializing", "Suspending", "Suspended"]
    );
    // Cleared on suspension (deleteClusterResources, then the Suspending case).
    for k in ["rayClusterName", "jobId", "dashboardURL"] {
        assert_eq!(status_of(Some(&suspended), k), None, "{k}");
    }
    // `jobStatus: ""` is omitted on the wire (omitempty).
    assert_eq!(status_of(Some(&suspended), "jobStatus"), None);
    assert!(
        fake.list("ray.io/v1", "RayCluster", Some("default"), "")
            .is_empty()
    );
    // Admitted: back through "" to Initializing, then to the end on a new cluster.
    let done = until_status(&rjs, "queued", "Complete", &seen).await;
    caught_up(&hist, "Complete").await;
    let seen = hist.lock().unwrap().clone();
    assert_eq!(
        seen[3..],
        ["Suspended", "", "Initializing", "Running", "Complete"],
        "{seen:?}"
    );
    assert_eq!(done.data["spec"]["suspend"], json!(false));
    assert!(status_of(Some(&done), "rayClusterName").is_some());
}

/// A failed attempt with retries left is written as Retrying, never as Failed
/// (`checkBackoffLimitAndUpdateStatusIfNeeded`); the next attempt gets a new cluster and a
/// new job id; the last failure is final with `failed = backoffLimit + 1`.
#[tokio::test]
async fn a_failed_attempt_with_retries_left_goes_to_retrying() {
    let (fake, client) = setup().await;
    fake.set_rayjob_script("flaky", RayJobScript::fails("exit code 1"));
    let rjs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("ray.io", "v1", "RayJob"));
    let mut rj = rayjob("flaky", true, 0);
    rj.data["spec"]["backoffLimit"] = json!(1);
    let hist = history(&rjs, "flaky").await;
    rjs.create(&PostParams::default(), &rj).await.unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let clusters = std::sync::Mutex::new(Vec::<(String, String)>::new());
    let done = tokio::time::timeout(
        Duration::from_secs(10),
        await_condition(rjs.clone(), "flaky", |o: Option<&DynamicObject>| {
            let s = status_of(o, "jobDeploymentStatus").unwrap_or_default();
            let mut seen = seen.lock().unwrap();
            if o.is_some() && seen.last() != Some(&s) {
                seen.push(s.clone());
            }
            if let (Some(c), Some(j)) = (status_of(o, "rayClusterName"), status_of(o, "jobId")) {
                let mut cs = clusters.lock().unwrap();
                if !cs.contains(&(c.clone(), j.clone())) {
                    cs.push((c, j));
                }
            }
            s == "Failed"
        }),
    )
    .await
    .expect("failed in time")
    .unwrap()
    .unwrap();
    drop(seen);
    caught_up(&hist, "Failed").await;
    let seen = hist.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "",
            "Initializing",
            "Running",
            "Retrying",
            "",
            "Initializing",
            "Running",
            "Failed"
        ]
    );
    assert_eq!(
        seen,
        [
            "",
            "Initializing",
            "Running",
            "Retrying",
            "",
            "Initializing",
            "Running",
            "Failed"
        ]
    );
    let clusters = clusters.into_inner().unwrap();
    assert_eq!(clusters.len(), 2, "{clusters:?}");
    assert_ne!(clusters[0].0, clusters[1].0);
    assert_ne!(clusters[0].1, clusters[1].1);
    assert_eq!(done.data["status"]["failed"], json!(2));
    assert_eq!(
        status_of(Some(&done), "reason").as_deref(),
        Some("AppFailed")
    );
}

/// A Ray job STOPPED ends the RayJob `Complete` (RJC `Reconcile`, Running case), and
/// ValidationFailed is never left even once the spec is fixed (the default case).
#[tokio::test]
async fn stopped_is_complete_and_validation_failed_is_final() {
    let (fake, client) = setup().await;
    fake.set_rayjob_script("halted", RayJobScript::stopped());
    let rjs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("ray.io", "v1", "RayJob"));
    rjs.create(&PostParams::default(), &rayjob("halted", true, 0))
        .await
        .unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let done = until_status(&rjs, "halted", "Complete", &seen).await;
    assert_eq!(
        status_of(Some(&done), "jobStatus").as_deref(),
        Some("STOPPED")
    );

    // suspend without shutdownAfterJobFinishes is invalid (ValidateRayJobSpec).
    let mut bad = rayjob("bad-suspend", false, 0);
    bad.data["spec"]["suspend"] = json!(true);
    rjs.create(&PostParams::default(), &bad).await.unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    until_status(&rjs, "bad-suspend", "ValidationFailed", &seen).await;
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| {
            f.list("v1", "Event", Some("default"), "")
                .iter()
                .any(|e| e["reason"] == "InvalidRayJobSpec")
        })
        .await
    );
    // Fixing the spec changes nothing, and no finalizer was ever added.
    fake.edit("ray.io/v1", "RayJob", "default", "bad-suspend", |o| {
        o["spec"]["suspend"] = json!(false);
    });
    // Fixed window (a no-op reconcile leaves no trace): the fix changes nothing.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rj = fake
        .get("ray.io/v1", "RayJob", "default", "bad-suspend")
        .unwrap();
    assert_eq!(rj["status"]["jobDeploymentStatus"], "ValidationFailed");
    assert!(rj["metadata"].get("finalizers").is_none(), "{rj:#?}");
}

/// InteractiveMode: no job id until the user submits and sets `spec.jobId` (RJC
/// `initRayJobStatusIfNeed`, Waiting case).
#[tokio::test]
async fn interactive_rayjobs_have_no_job_id_until_submitted() {
    let (fake, client) = setup().await;
    let rjs: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar("ray.io", "v1", "RayJob"));
    let mut rj = rayjob("chat", true, 0);
    rj.data["spec"]["submissionMode"] = json!("InteractiveMode");
    rjs.create(&PostParams::default(), &rj).await.unwrap();
    let seen = std::sync::Mutex::new(Vec::new());
    let waiting = until_status(&rjs, "chat", "Waiting", &seen).await;
    assert_eq!(status_of(Some(&waiting), "jobId"), None);
    // Fixed window (nothing happens; absence has no event): it stays Waiting.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        fake.field(
            "ray.io/v1",
            "RayJob",
            "default",
            "chat",
            "status.jobDeploymentStatus"
        ),
        Some(json!("Waiting"))
    );
    fake.edit("ray.io/v1", "RayJob", "default", "chat", |o| {
        o["spec"]["jobId"] = json!("chat-by-hand");
    });
    let running = until_status(&rjs, "chat", "Running", &seen).await;
    assert_eq!(
        status_of(Some(&running), "jobId").as_deref(),
        Some("chat-by-hand")
    );
}

/// The RayCluster status as KubeRay v1.5.1 writes it (`calculateStatus`,
/// `InconsistentRayClusterStatus`): `state` stays `ready` after a scale-up, the counters
/// follow the pods, and a spec change alone (no counter change) leaves
/// `observedGeneration` stale.
#[tokio::test]
async fn raycluster_state_is_sticky_and_observed_generation_lags() {
    let (fake, client) = setup().await;
    fake.set_timings(|t| t.pod_start = Duration::from_millis(500));
    let rcs: Api<DynamicObject> =
        Api::namespaced_with(client, "default", &ar("ray.io", "v1", "RayCluster"));
    let tmpl =
        |c: &str| json!({"spec": {"containers": [{"name": c, "image": "rayproject/ray:2.60.0"}]}});
    let mut rc = DynamicObject::new("sticky", &ar("ray.io", "v1", "RayCluster"));
    rc.data = json!({"spec": {
        "headGroupSpec": {"template": tmpl("ray-head")},
        "workerGroupSpecs": [{"groupName": "w", "replicas": 1, "minReplicas": 0,
                              "maxReplicas": 4, "template": tmpl("ray-worker")}]}});
    rcs.create(&PostParams::default(), &rc).await.unwrap();
    let field = |f: &FakeK8s, k: &str| f.field("ray.io/v1", "RayCluster", "default", "sticky", k);
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| field(f, "status.state")
            == Some(json!("ready")))
            .await
    );
    // The default head Service is headless, so head.serviceIP is the head pod's IP
    // (common/service.go: BuildServiceForHeadPod; getHeadServiceIPAndName).
    let svc = fake
        .get("v1", "Service", "default", "sticky-head-svc")
        .unwrap();
    assert_eq!(svc["spec"]["clusterIP"], "None");
    let head = fake
        .pods("default", "ray.io/cluster=sticky,ray.io/node-type=head")
        .remove(0);
    assert_eq!(
        field(&fake, "status.head.serviceIP"),
        Some(head["status"]["podIP"].clone())
    );
    // Scale up: state stays ready while the new worker starts.
    fake.edit("ray.io/v1", "RayCluster", "default", "sticky", |o| {
        o["spec"]["workerGroupSpecs"][0]["replicas"] = json!(2);
    });
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| field(
            f,
            "status.desiredWorkerReplicas"
        ) == Some(json!(2)))
            .await
    );
    assert_eq!(field(&fake, "status.state"), Some(json!("ready")));
    assert_eq!(field(&fake, "status.readyWorkerReplicas"), Some(json!(1)));
    assert!(
        fake.wait_until(Duration::from_secs(5), |f| field(
            f,
            "status.readyWorkerReplicas"
        ) == Some(json!(2)))
            .await
    );
    assert_eq!(field(&fake, "status.observedGeneration"), Some(json!(2)));
    // A template edit changes no counter: no status write, observedGeneration lags, and
    // no pod is replaced.
    let pods_before = fake.pods("default", "ray.io/cluster=sticky").len();
    fake.edit("ray.io/v1", "RayCluster", "default", "sticky", |o| {
        o["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"] =
            json!("rayproject/ray:2.61.0");
    });
    // Fixed window (absence has no event): no status write, no pod replaced.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(field(&fake, "metadata.generation"), Some(json!(3)));
    assert_eq!(field(&fake, "status.observedGeneration"), Some(json!(2)));
    let pods = fake.pods("default", "ray.io/cluster=sticky");
    assert_eq!(pods.len(), pods_before);
    assert!(
        pods.iter()
            .all(|p| p["spec"]["containers"][0]["image"] == "rayproject/ray:2.60.0")
    );
    // No `failed` state exists; a cluster in trouble keeps its last state.
    assert_ne!(field(&fake, "status.state"), Some(json!("failed")));
}
