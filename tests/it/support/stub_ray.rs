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
    pub submitted: Vec<Value>,
    pub stopped: Vec<String>,
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
                let (s1, s2, s3, s4, s5) = (st.clone(), st.clone(), st.clone(), st.clone(), st);
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
                        get(|Path(id): Path<String>| async move {
                            axum::Json(json!({"logs": format!("log of {id}\nline 2\n")}))
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
