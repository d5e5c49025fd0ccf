//! A stand-in Ray dashboard (the job REST API subset nrl uses), on its own thread, for
//! tests that need a dashboard behind the head pods but not a real Ray.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::Path;
use axum::routing::{get, post};
use serde_json::{Value, json};

#[derive(Default)]
pub struct Jobs {
    pub jobs: Vec<Value>,
    /// Driver logs by submission id (default: `log of <id>\nline 2\n`).
    pub logs: std::collections::HashMap<String, String>,
    pub submitted: Vec<Value>,
    pub stopped: Vec<String>,
}

/// The node id of jobs with a log (`set_log`).
const STUB_NODE: &str = "stub-node";

/// The driver log of the job whose log file a log API query names
/// (`filename=job-driver-<id>.log` on `STUB_NODE`).
fn file_of(
    state: &Mutex<Jobs>,
    query: &std::collections::HashMap<String, String>,
) -> Option<String> {
    if query.get("node_id").map(String::as_str) != Some(STUB_NODE) {
        return None;
    }
    let id = query
        .get("filename")?
        .strip_prefix("job-driver-")?
        .strip_suffix(".log")?;
    state.lock().unwrap().logs.get(id).cloned()
}

pub struct StubRay {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<Jobs>>,
}

impl StubRay {
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Add a job the dashboard already knows.
    pub fn add_job(&self, id: &str, status: &str, start_time: i64) {
        self.state.lock().unwrap().jobs.push(json!({
            "type": "SUBMISSION", "submission_id": id, "status": status,
            "start_time": start_time, "entrypoint": "python -c 'print(1)'"}));
    }

    /// The driver log of job `id`: `GET /api/jobs/{id}/logs` answers it, and the job
    /// gets a driver node, whose log file the log API serves (`/api/v0/logs/file`, and
    /// `/api/v0/logs/stream`, which then stays open as a followed file does).
    pub fn set_log(&self, id: &str, text: &str) {
        let mut g = self.state.lock().unwrap();
        g.logs.insert(id.to_string(), text.to_string());
        for j in g.jobs.iter_mut() {
            if j["submission_id"] == id {
                j["driver_node_id"] = json!(STUB_NODE);
            }
        }
    }

    pub fn submitted(&self) -> Vec<Value> {
        self.state.lock().unwrap().submitted.clone()
    }

    pub fn start() -> StubRay {
        let state: Arc<Mutex<Jobs>> = Arc::default();
        let (tx, rx) = std::sync::mpsc::channel();
        let st = state.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let (s1, s2, s3, s4, s5, s6, s7, s8) = (
                    st.clone(),
                    st.clone(),
                    st.clone(),
                    st.clone(),
                    st.clone(),
                    st.clone(),
                    st.clone(),
                    st,
                );
                type Query = axum::extract::Query<std::collections::HashMap<String, String>>;
                let app = axum::Router::new()
                    .route(
                        "/api/version",
                        get(|| async {
                            axum::Json(json!({"version": "4", "ray_version": "2.60.0"}))
                        }),
                    )
                    .route(
                        "/api/jobs/",
                        get(move || {
                            let s = s1.clone();
                            async move { axum::Json(Value::Array(s.lock().unwrap().jobs.clone())) }
                        })
                        .post(
                            move |axum::Json(body): axum::Json<Value>| {
                                let s = s2.clone();
                                async move {
                                    let id = body["submission_id"]
                                        .as_str()
                                        .unwrap_or("raysubmit_stub")
                                        .to_string();
                                    let mut g = s.lock().unwrap();
                                    g.submitted.push(body.clone());
                                    g.jobs
                                        .push(json!({"type": "SUBMISSION", "submission_id": id,
                                    "status": "RUNNING", "start_time": 9_000_000_000_000i64,
                                    "entrypoint": body["entrypoint"]}));
                                    axum::Json(json!({"submission_id": id, "job_id": null}))
                                }
                            },
                        ),
                    )
                    .route(
                        "/api/jobs/{id}",
                        get(move |Path(id): Path<String>| {
                            let s = s3.clone();
                            async move {
                                let g = s.lock().unwrap();
                                match g.jobs.iter().find(|j| j["submission_id"] == id.as_str()) {
                                    Some(j) => (axum::http::StatusCode::OK, axum::Json(j.clone())),
                                    None => {
                                        (axum::http::StatusCode::NOT_FOUND, axum::Json(json!({})))
                                    }
                                }
                            }
                        }),
                    )
                    .route(
                        "/api/jobs/{id}/logs",
                        get(move |Path(id): Path<String>| {
                            let s = s6.clone();
                            async move {
                                let logs = s.lock().unwrap().logs.get(&id).cloned();
                                let logs = logs.unwrap_or_else(|| format!("log of {id}\nline 2\n"));
                                axum::Json(json!({ "logs": logs }))
                            }
                        }),
                    )
                    .route(
                        "/api/v0/logs/file",
                        get(move |query: Query| {
                            let s = s7.clone();
                            async move {
                                match file_of(&s, &query) {
                                    Some(text) => (axum::http::StatusCode::OK, text),
                                    None => (
                                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                                        "no such file".into(),
                                    ),
                                }
                            }
                        }),
                    )
                    .route(
                        "/api/v0/logs/stream",
                        get(move |query: Query| {
                            let s = s8.clone();
                            async move {
                                use axum::response::IntoResponse;
                                use futures::StreamExt;
                                match file_of(&s, &query) {
                                    Some(text) => {
                                        let first = futures::stream::once(async move {
                                            Ok::<_, std::convert::Infallible>(text)
                                        });
                                        // A followed file: the answer stays open.
                                        let body = first.chain(futures::stream::pending());
                                        axum::body::Body::from_stream(body).into_response()
                                    }
                                    None => (
                                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                                        "no such file",
                                    )
                                        .into_response(),
                                }
                            }
                        }),
                    )
                    .route(
                        "/api/jobs/{id}/stop",
                        post(move |Path(id): Path<String>| {
                            let s = s4.clone();
                            async move {
                                let mut g = s.lock().unwrap();
                                g.stopped.push(id.clone());
                                for j in g.jobs.iter_mut() {
                                    if j["submission_id"] == id.as_str() {
                                        j["status"] = json!("STOPPED");
                                    }
                                }
                                axum::Json(json!({"stopped": true}))
                            }
                        }),
                    )
                    .route(
                        "/api/packages/{proto}/{name}",
                        get(|| async { axum::http::StatusCode::NOT_FOUND })
                            // Read the whole body, as Ray does: a server that answers
                            // without reading it closes the connection under the client.
                            .put(move |body: axum::body::Bytes| {
                                let _ = &s5;
                                async move {
                                    let _ = body.len();
                                    axum::http::StatusCode::OK
                                }
                            }),
                    );
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        StubRay {
            addr: rx.recv().unwrap(),
            state,
        }
    }
}
