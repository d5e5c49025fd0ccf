//! The RayJob job runner in real-Ray mode, against a stand-in dashboard (the Ray tests use a
//! real Ray head).

use std::time::Duration;

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::wait::await_condition;
use serde_json::{Value, json};

use super::common::*;

fn status_of(obj: Option<&DynamicObject>, key: &str) -> Option<String> {
    obj?.data
        .pointer(&format!("/status/{key}"))?
        .as_str()
        .map(str::to_string)
}

fn rayjob(name: &str) -> DynamicObject {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayJob"));
    let mut rj = DynamicObject::new(name, &ar);
    let tmpl =
        json!({"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.60.0"}]}});
    rj.data = json!({"spec": {"entrypoint": "python train.py", "submissionMode": "HTTPMode",
                              "rayClusterSpec": {"headGroupSpec": {"template": tmpl}}}});
    rj
}

/// A stand-in for the Ray dashboard's job REST API (the real one is used by the Ray tests):
/// records the submission, reports RUNNING for two polls, then SUCCEEDED.
async fn stub_ray_dashboard() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
) {
    use axum::routing::{get, post};
    let submitted = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let polls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let sub = submitted.clone();
    let app = axum::Router::new()
        .route("/api/version", get(|| async { axum::Json(json!({"version": "4", "ray_version": "2.60.0"})) }))
        .route(
            "/api/jobs/",
            post(move |axum::Json(body): axum::Json<Value>| {
                let sub = sub.clone();
                async move {
                    let id = body["submission_id"].clone();
                    sub.lock().unwrap().push(body);
                    axum::Json(json!({"job_id": id, "submission_id": id}))
                }
            }),
        )
        .route(
            "/api/jobs/{id}",
            get(move |axum::extract::Path(id): axum::extract::Path<String>| {
                let n = polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async move {
                    let status = if n < 2 { "RUNNING" } else { "SUCCEEDED" };
                    axum::Json(json!({"submission_id": id, "status": status, "message": format!("stub says {status}")}))
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, submitted)
}

#[tokio::test]
async fn rayjob_with_a_ray_dashboard_submits_the_entrypoint_and_mirrors_its_status() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (fake, client) = setup().await;
    fake.set_timings(|t| t.ray_poll = Duration::from_millis(50));
    let (addr, submitted) = stub_ray_dashboard().await;
    fake.use_ray_dashboard(Some(&format!("http://{addr}")));
    let rjs: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk(&GroupVersionKind::gvk("ray.io", "v1", "RayJob")),
    );
    let mut rj = rayjob("real");
    rj.data["spec"]["runtimeEnvYAML"] =
        json!("env_vars:\n  A: '1'\nworking_dir: gcs://_ray_pkg_0123456789abcdef.zip\n");
    rj.data["spec"]["entrypointNumCpus"] = json!(0.5);
    rjs.create(&PostParams::default(), &rj).await.unwrap();
    let done = tokio::time::timeout(
        Duration::from_secs(5),
        await_condition(rjs.clone(), "real", |o: Option<&DynamicObject>| {
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
    assert_eq!(
        status_of(Some(&done), "message").as_deref(),
        Some("stub says SUCCEEDED")
    );
    let body = submitted.lock().unwrap()[0].clone();
    assert_eq!(body["entrypoint"], "python train.py");
    assert_eq!(
        body["submission_id"].as_str(),
        status_of(Some(&done), "jobId").as_deref()
    );
    assert_eq!(
        body["runtime_env"],
        json!({"env_vars": {"A": "1"}, "working_dir": "gcs://_ray_pkg_0123456789abcdef.zip"})
    );
    assert_eq!(body["entrypoint_num_cpus"], 0.5);

    // The head pod's dashboard port forwards to that dashboard.
    let cluster = status_of(Some(&done), "rayClusterName").unwrap();
    let head = fake
        .pod_name(
            "default",
            &format!("ray.io/cluster={cluster},ray.io/node-type=head"),
        )
        .unwrap();
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(client, "default");
    let mut pf = pods.portforward(&head, &[8265]).await.unwrap();
    let mut s = pf.take_stream(8265).unwrap();
    s.write_all(b"GET /api/version HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    assert!(
        out.starts_with("HTTP/1.1 200") && out.contains("\"ray_version\":\"2.60.0\""),
        "{out}"
    );
}
