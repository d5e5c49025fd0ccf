//! The Ray client and `nrl job` against small fake dashboards (axum on 127.0.0.1) for the
//! failures a real head will not produce on demand: tracebacks with 500, flaky 503s,
//! hung servers, dropped log websockets, token checks. No Ray needed.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use nrl::ray::follow::{FollowOptions, follow_job};
use nrl::ray::retry::RetryPolicy;
use nrl::ray::{JobStatus, RayClient, RayClientOptions, SubmitRequest};

use crate::support::context::{Nrl, TestContext};

const TRACEBACK: &str = "Traceback (most recent call last):\n  File \
    \"/ray/dashboard/modules/job/job_head.py\", line 421, in list_jobs\n    raise \
    RuntimeError(\"Failed to get jobs: GCS unavailable\")\nRuntimeError: Failed to get jobs: \
    GCS unavailable\n";

/// Requests the fake saw, as `METHOD /path`.
#[derive(Clone, Default)]
struct Hits(Arc<Mutex<Vec<String>>>);

impl Hits {
    fn push(&self, hit: &str) {
        self.0.lock().unwrap().push(hit.to_string());
    }
    fn count(&self, hit: &str) -> usize {
        self.0.lock().unwrap().iter().filter(|h| *h == hit).count()
    }
    fn all(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A fake dashboard running on its own runtime for the duration of a test.
struct Fake {
    address: String,
    _runtime: tokio::runtime::Runtime,
}

/// `nrl` from a fresh context, wide enough that job tables are not cut.
fn nrl() -> Nrl {
    TestContext::new().columns(200).into_nrl()
}

fn serve(router: Router) -> Fake {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    runtime.spawn(async move { axum::serve(listener, router).await });
    Fake {
        address,
        _runtime: runtime,
    }
}

fn client(address: &str, timeout: Duration) -> RayClient {
    let options = RayClientOptions {
        timeout,
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(100),
        },
        ..RayClientOptions::default()
    };
    RayClient::new(address, options).unwrap()
}

fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn text(status: StatusCode, body: &str) -> Response {
    (status, [("content-type", "text/plain")], body.to_string()).into_response()
}

fn json(body: &str) -> Response {
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

#[test]
fn dashboard_traceback_is_reported_by_its_last_line_and_reads_are_retried() {
    let hits = Hits::default();
    let (h1, h2) = (hits.clone(), hits.clone());
    let router = Router::new().route(
        "/api/jobs/",
        get(move || async move {
            h1.push("GET /api/jobs/");
            text(StatusCode::INTERNAL_SERVER_ERROR, TRACEBACK)
        })
        .post(move || async move {
            h2.push("POST /api/jobs/");
            text(StatusCode::INTERNAL_SERVER_ERROR, TRACEBACK)
        }),
    );
    let fake = serve(router);

    let out = nrl()
        .args([
            "job",
            "list",
            "--address",
            &fake.address,
            "--timeout",
            "20s",
        ])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nrl::ray::api"), "{stderr}");
    assert!(
        stderr.contains("Failed to get jobs: GCS unavailable"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("Traceback") && !stderr.contains("job_head.py"),
        "{stderr}"
    );
    assert!(stderr.contains("HTTP 500"), "{stderr}");
    assert_eq!(hits.count("GET /api/jobs/"), 4, "a read is retried on 5xx");

    let out = nrl()
        .args(["job", "submit", "--address", &fake.address, "--", "true"])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nrl::ray::submit"), "{stderr}");
    assert!(
        stderr.contains("Failed to get jobs: GCS unavailable"),
        "{stderr}"
    );
    assert_eq!(
        hits.count("POST /api/jobs/"),
        1,
        "a submission is never repeated"
    );
    drop(fake);
}

#[test]
fn transient_failures_are_retried_only_for_idempotent_calls() {
    let hits = Hits::default();
    let answers = Arc::new(Mutex::new(VecDeque::from([503u16, 429, 200])));
    let (h1, h2, h3) = (hits.clone(), hits.clone(), hits.clone());
    let router = Router::new()
        .route(
            "/api/version",
            get(move || async move {
                h1.push("GET /api/version");
                match answers.lock().unwrap().pop_front() {
                    Some(200) | None => json(
                        r#"{"version": "4", "ray_version": "2.60.0", "ray_commit": "x",
                            "session_name": "s"}"#,
                    ),
                    Some(code) => text(StatusCode::from_u16(code).unwrap(), "busy"),
                }
            }),
        )
        .route(
            "/api/jobs/",
            axum::routing::post(move || async move {
                h2.push("POST /api/jobs/");
                text(StatusCode::SERVICE_UNAVAILABLE, "busy")
            }),
        )
        .route(
            "/api/jobs/{id}",
            get(move || async move {
                h3.push("GET /api/jobs/{id}");
                text(StatusCode::NOT_FOUND, "Job nope does not exist")
            }),
        );
    let fake = serve(router);
    let ray = client(&fake.address, Duration::from_secs(10));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let version = rt.block_on(ray.version()).unwrap();
    assert_eq!(version.ray_version, "2.60.0");
    assert_eq!(hits.count("GET /api/version"), 3);

    let err = rt
        .block_on(ray.submit(&SubmitRequest::new("true")))
        .unwrap_err();
    assert_eq!(err.code, "nrl::ray::submit");
    assert_eq!(hits.count("POST /api/jobs/"), 1);

    let err = rt.block_on(ray.status("nope")).unwrap_err();
    assert_eq!(err.code, "nrl::ray::not_found");
    assert_eq!(hits.count("GET /api/jobs/{id}"), 1, "404 is final");
    drop(fake);
}

#[test]
fn unreachable_address_fails_within_the_timeout_and_names_the_address() {
    let port = closed_port();
    let address = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let out = nrl()
        .args(["job", "list", "--address", &address, "--timeout", "3s"])
        .assert()
        .code(3)
        .get_output()
        .clone();
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nrl::ray::unreachable"), "{stderr}");
    assert!(stderr.contains(&address), "{stderr}");
    assert!(stderr.contains("timeout 3s"), "{stderr}");
    assert!(stderr.to_lowercase().contains("refused"), "{stderr}");
}

#[test]
fn a_server_that_never_answers_hits_the_deadline() {
    // Accepts connections (the kernel does) but never replies.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let ray = client(&address, Duration::from_millis(1200));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    let err = rt.block_on(ray.list_jobs()).unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1100) && elapsed < Duration::from_secs(3),
        "{elapsed:?}"
    );
    assert_eq!(err.code, "nrl::ray::unreachable");
    assert!(err.message.contains("no answer in time"), "{}", err.message);
    assert!(err.message.contains(&address), "{}", err.message);
    drop(listener);
}

#[test]
fn token_is_sent_as_bearer() {
    let router = Router::new().route(
        "/api/jobs/",
        get(|headers: HeaderMap| async move {
            let auth = headers.get("authorization").and_then(|v| v.to_str().ok());
            if auth == Some("Bearer s3cret") {
                json("[]")
            } else {
                text(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: missing or invalid token",
                )
            }
        }),
    );
    let fake = serve(router);
    let out = nrl()
        .args([
            "job",
            "list",
            "--address",
            &fake.address,
            "--token",
            "s3cret",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("no Ray jobs"));

    let out = nrl()
        .args(["job", "list", "--address", &fake.address])
        .env("RAY_AUTH_TOKEN", "wrong")
        .assert()
        .code(3)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("HTTP 401") && stderr.contains("--token"),
        "{stderr}"
    );
    drop(fake);
}

/// One log websocket connection: the frames to send, then whether to close cleanly.
type Session = (Vec<&'static str>, bool);

/// Scripted job: status answers in order (the last one repeats), log websocket sessions
/// in order (each a list of frames and whether to close cleanly), and a log for
/// `GET …/logs`.
#[derive(Clone)]
struct Script {
    statuses: Arc<Mutex<VecDeque<&'static str>>>,
    sessions: Arc<Mutex<VecDeque<Session>>>,
    logs: Arc<Mutex<VecDeque<&'static str>>>,
    hits: Hits,
}

fn next<T: Copy>(queue: &Mutex<VecDeque<T>>) -> Option<T> {
    let mut q = queue.lock().unwrap();
    if q.len() > 1 {
        q.pop_front()
    } else {
        q.front().copied()
    }
}

fn scripted(script: Script) -> Router {
    let (s1, s2, s3) = (script.clone(), script.clone(), script.clone());
    Router::new()
        .route(
            "/api/jobs/{id}",
            get(move || async move {
                s1.hits.push("status");
                let status = next(&s1.statuses).unwrap_or("RUNNING");
                json(&format!(
                    r#"{{"submission_id": "j", "status": "{status}"}}"#
                ))
            }),
        )
        .route(
            "/api/jobs/{id}/logs",
            get(move || async move {
                s2.hits.push("logs");
                let logs = next(&s2.logs).unwrap_or("");
                json(&serde_json::json!({ "logs": logs }).to_string())
            }),
        )
        .route(
            "/api/jobs/{id}/logs/tail",
            get(move |ws: WebSocketUpgrade| async move {
                s3.hits.push("tail");
                let session = s3.sessions.lock().unwrap().pop_front();
                match session {
                    None => text(StatusCode::BAD_GATEWAY, "no websockets here"),
                    Some((frames, clean)) => {
                        ws.on_upgrade(move |socket| play(socket, frames, clean))
                    }
                }
            }),
        )
}

async fn play(mut socket: WebSocket, frames: Vec<&'static str>, clean: bool) {
    for frame in frames {
        if socket.send(Message::Text(frame.into())).await.is_err() {
            return;
        }
    }
    if clean {
        let _ = socket.send(Message::Close(None)).await;
    } else {
        // Drop the connection without a closing handshake.
        drop(socket);
    }
}

fn fast_follow() -> FollowOptions {
    FollowOptions {
        poll_initial: Duration::from_millis(20),
        poll_max: Duration::from_millis(100),
        stream_interval: Duration::from_millis(20),
        status_max: Duration::from_millis(100),
    }
}

#[test]
fn follow_reconnects_after_a_drop_without_repeating_output() {
    let script = Script {
        // The first answer is read before following (it has no driver node: this
        // dashboard is followed through the websocket).
        statuses: Arc::new(Mutex::new(VecDeque::from([
            "RUNNING",
            "RUNNING",
            "SUCCEEDED",
        ]))),
        sessions: Arc::new(Mutex::new(VecDeque::from([
            (vec!["line 1\n", "line 2\n"], false),
            (vec!["line 1\nline", " 2\nline 3\n", "line 4\n"], true),
        ]))),
        logs: Arc::new(Mutex::new(VecDeque::from(["line 1\nline 2\nline 3\n"]))),
        hits: Hits::default(),
    };
    let fake = serve(scripted(script.clone()));
    let ray = client(&fake.address, Duration::from_secs(5));
    let mut out = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let job = rt
        .block_on(follow_job(&ray, "j", &mut out, &fast_follow()))
        .unwrap();
    assert_eq!(job.status, JobStatus::Succeeded);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "line 1\nline 2\nline 3\nline 4\n"
    );
    assert_eq!(script.hits.count("tail"), 2, "{:?}", script.hits.all());
    drop(fake);
}

#[test]
fn follow_polls_logs_when_websockets_never_work() {
    let script = Script {
        // Pending, then running through three log polls, then failed.
        statuses: Arc::new(Mutex::new(VecDeque::from([
            "PENDING", "RUNNING", "RUNNING", "RUNNING", "RUNNING", "FAILED",
        ]))),
        sessions: Arc::new(Mutex::new(VecDeque::new())),
        logs: Arc::new(Mutex::new(VecDeque::from([
            "",
            "a\n",
            "a\nb\n",
            "a\nb\nc\n",
        ]))),
        hits: Hits::default(),
    };
    let fake = serve(scripted(script.clone()));
    let ray = client(&fake.address, Duration::from_secs(5));
    let mut out = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let job = rt
        .block_on(follow_job(&ray, "j", &mut out, &fast_follow()))
        .unwrap();
    assert_eq!(job.status, JobStatus::Failed);
    assert_eq!(String::from_utf8(out).unwrap(), "a\nb\nc\n");
    drop(fake);
}

/// A job on a dashboard with the log API: its driver log file is followed through
/// `/api/v0/logs/stream` (raw bytes, `\r\n` kept), the stream is opened again after it
/// drops, the end is learnt from the status, and the rest comes from `/api/v0/logs/file`;
/// each byte is written once and the websocket is never used.
#[test]
fn follow_streams_the_driver_log_file_and_resumes_after_a_drop() {
    let hits = Hits::default();
    let streams = Arc::new(Mutex::new(0usize));
    let (h1, h2, h3, h4) = (hits.clone(), hits.clone(), hits.clone(), hits.clone());
    let opened = streams.clone();
    let router = Router::new()
        .route(
            "/api/jobs/{id}",
            get(move || {
                let opened = *streams.lock().unwrap();
                async move {
                    h1.push("status");
                    // Running until the stream has been opened twice, then done.
                    let status = if opened >= 2 { "SUCCEEDED" } else { "RUNNING" };
                    json(&format!(
                        r#"{{"submission_id": "j", "status": "{status}", "driver_node_id": "n1"}}"#
                    ))
                }
            }),
        )
        .route(
            "/api/v0/logs/stream",
            get(
                move |query: axum::extract::Query<std::collections::HashMap<String, String>>| {
                    let n = {
                        let mut n = opened.lock().unwrap();
                        *n += 1;
                        *n
                    };
                    async move {
                        h2.push(&format!(
                            "stream node_id={} filename={} lines={} interval={}",
                            query["node_id"], query["filename"], query["lines"], query["interval"]
                        ));
                        let chunk = |b: &'static [u8]| Ok(bytes::Bytes::from_static(b));
                        let first: Vec<Result<bytes::Bytes, std::io::Error>> = if n == 1 {
                            // Some of the log, then the connection breaks.
                            vec![
                                chunk(b"line 0\r\n"),
                                chunk(b"line 1\n"),
                                Err(std::io::Error::other("dropped")),
                            ]
                        } else {
                            vec![chunk(b"line 0\r\nline 1\nline 2\n")]
                        };
                        // A followed file never ends on its own.
                        let body = futures::stream::iter(first).chain(futures::stream::pending());
                        (StatusCode::OK, axum::body::Body::from_stream(body)).into_response()
                    }
                },
            ),
        )
        .route(
            "/api/v0/logs/file",
            get(move || async move {
                h3.push("file");
                text(StatusCode::OK, "line 0\r\nline 1\nline 2\nline 3\n")
            }),
        )
        .route(
            "/api/jobs/{id}/logs/tail",
            get(move || async move {
                h4.push("tail");
                text(StatusCode::BAD_GATEWAY, "not this way")
            }),
        );
    let fake = serve(router);
    let ray = client(&fake.address, Duration::from_secs(5));
    let mut out = Vec::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let job = rt
        .block_on(follow_job(&ray, "j", &mut out, &fast_follow()))
        .unwrap();
    assert_eq!(job.status, JobStatus::Succeeded);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "line 0\r\nline 1\nline 2\nline 3\n"
    );
    let all = hits.all();
    let streams: Vec<&String> = all.iter().filter(|h| h.starts_with("stream")).collect();
    assert_eq!(
        streams,
        [
            "stream node_id=n1 filename=job-driver-j.log lines=-1 interval=0.020",
            "stream node_id=n1 filename=job-driver-j.log lines=-1 interval=0.020"
        ],
        "{all:?}"
    );
    assert_eq!(hits.count("file"), 1, "{all:?}");
    assert_eq!(hits.count("tail"), 0, "{all:?}");
    drop(fake);
}

#[test]
fn ctrl_c_detaches_with_exit_130_and_a_reattach_command() {
    detaches_on("-INT");
}

/// SIGTERM and SIGHUP are interrupts too (one Ctrl-C behaviour for every command, issue
/// 16 item 3): the follow detaches with the same message instead of dying silently.
#[test]
fn sigterm_and_sighup_detach_like_ctrl_c() {
    detaches_on("-TERM");
    detaches_on("-HUP");
}

fn detaches_on(signal: &str) {
    let script = Script {
        statuses: Arc::new(Mutex::new(VecDeque::from(["RUNNING"]))),
        sessions: Arc::new(Mutex::new(VecDeque::new())),
        logs: Arc::new(Mutex::new(VecDeque::from(["working\n"]))),
        hits: Hits::default(),
    };
    let fake = serve(scripted(script.clone()));
    let ctx = TestContext::new().columns(200);
    let child = ctx
        .command()
        .args(["job", "logs", "j", "--address", &fake.address, "-f"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until it is following (it has fetched the log at least once).
    let deadline = Instant::now() + Duration::from_secs(10);
    while script.hits.count("logs") == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("working"));
    assert!(
        stderr.contains(&format!("nrl job logs j --address {} -f", fake.address)),
        "{stderr}"
    );
    assert!(stderr.contains("keeps running"), "{stderr}");
    drop(fake);
}

#[test]
fn oversized_working_dir_is_refused_before_any_request() {
    let hits = Hits::default();
    let h = hits.clone();
    let router = Router::new().fallback(move || async move {
        h.push("any");
        text(StatusCode::NOT_FOUND, "nothing")
    });
    let fake = serve(router);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.py"), "print(1)\n").unwrap();
    let big = std::fs::File::create(dir.path().join("weights.bin")).unwrap();
    big.set_len(150 * 1024 * 1024).unwrap(); // sparse: costs no disk
    let out = nrl()
        .args(["job", "submit", "--address", &fake.address, "--working-dir"])
        .arg(dir.path())
        .args(["--", "python", "train.py"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nrl::ray::package_too_large"), "{stderr}");
    assert!(stderr.contains("150.00 MiB weights.bin"), "{stderr}");
    assert!(stderr.contains("100.00 MiB"), "{stderr}");
    assert!(hits.all().is_empty(), "{:?}", hits.all());
    drop(fake);
}

#[test]
fn missing_entrypoint_is_a_usage_error() {
    let out = nrl()
        .args(["job", "submit", "--address", "http://127.0.0.1:9", "--"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("ENTRYPOINT"), "{stderr}");
}

#[test]
fn bad_env_and_address_are_input_errors() {
    let out = nrl()
        .args([
            "job",
            "submit",
            "--address",
            "http://127.0.0.1:9",
            "--env",
            "1BAD=x",
        ])
        .args(["--", "true"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid environment variable name `1BAD`"),
        "{stderr}"
    );

    let out = nrl()
        .args(["job", "list", "--address", "ray://127.0.0.1:10001"])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nrl::ray::address"), "{stderr}");
    assert!(stderr.contains("http://HOST:8265"), "{stderr}");
}

#[test]
fn address_comes_from_ray_address_env() {
    let router = Router::new().route("/api/jobs/", get(|| async { json("[]") }));
    let fake = serve(router);
    nrl()
        .args(["job", "list"])
        .env("RAY_ADDRESS", &fake.address)
        .assert()
        .success();
    drop(fake);
}

/// A chunked body that never ends: 64 KiB of `a` after 64 KiB of `a`, forever.
fn endless() -> Response {
    let chunks =
        futures::stream::repeat_with(|| Ok::<_, std::convert::Infallible>(vec![b'a'; 64 << 10]));
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        axum::body::Body::from_stream(chunks),
    )
        .into_response()
}

#[test]
fn an_endless_body_fails_at_the_limit_instead_of_growing_nrl() {
    let hits = Hits::default();
    let h = hits.clone();
    let router = Router::new().route(
        "/api/jobs/",
        get(move || async move {
            h.push("GET /api/jobs/");
            endless()
        }),
    );
    let fake = serve(router);
    let started = Instant::now();
    let out = nrl()
        .args([
            "job",
            "list",
            "--address",
            &fake.address,
            "--timeout",
            "60s",
        ])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The production limit (64 MiB), reached long before the 60 s deadline.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");
    assert!(stderr.contains("nrl::ray::response_too_large"), "{stderr}");
    assert!(stderr.contains("GET /api/jobs/"), "{stderr}");
    assert!(stderr.contains("64 MiB"), "{stderr}");
    assert!(stderr.contains("RAY_ADDRESS"), "{stderr}");
    assert_eq!(
        hits.count("GET /api/jobs/"),
        1,
        "the same server would send it again: not retried"
    );
    drop(fake);
}

#[test]
fn a_declared_length_over_the_limit_fails_before_reading_and_logs_point_to_follow() {
    let router = Router::new()
        .route("/api/version", get(|| async { json(&" ".repeat(4096)) }))
        .route("/api/jobs/{id}/logs", get(|| async { endless() }));
    let fake = serve(router);
    let options = RayClientOptions {
        max_response_bytes: 1024,
        max_logs_bytes: 2048,
        retry: RetryPolicy::none(),
        ..RayClientOptions::default()
    };
    let ray = RayClient::new(&fake.address, options).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let err = rt.block_on(ray.version()).unwrap_err();
    assert_eq!(err.code, "nrl::ray::response_too_large");
    assert!(
        err.message.contains("a 4096-byte answer"),
        "{}",
        err.message
    );
    assert!(err.message.contains("1 KiB"), "{}", err.message);

    let err = rt.block_on(ray.logs("raysubmit_1")).unwrap_err();
    assert_eq!(err.code, "nrl::ray::response_too_large");
    assert!(err.message.contains("2 KiB"), "{}", err.message);
    assert!(
        err.help
            .as_deref()
            .unwrap_or("")
            .contains("nrl job logs ID -f"),
        "{:?}",
        err.help
    );
    drop(fake);
}

/// What anyone who can submit a job can put in its entrypoint and message: a title
/// change, a screen clear, a hidden-text switch, a bidi override.
const HOSTILE: &str = "python a.py\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[8m\u{202e}yp.b";

#[test]
fn dashboard_text_in_listings_is_escaped_and_logs_stay_byte_exact() {
    let job = serde_json::json!({
        "submission_id": "nrl-x",
        "job_id": "02000000",
        "status": "FAILED",
        "entrypoint": HOSTILE,
        "message": format!("boom \u{1b}[31m{HOSTILE}\nsecond line"),
        "type": "SUBMISSION",
    })
    .to_string();
    let list = format!("[{job}]");
    let log = format!(
        "{{\"logs\": {}}}",
        serde_json::json!(format!("{HOSTILE}\n"))
    );
    let router = Router::new()
        .route("/api/jobs/", get(move || async move { json(&list) }))
        .route(
            "/api/jobs/{id}",
            get(move || {
                let job = job.clone();
                async move { json(&job) }
            }),
        )
        .route(
            "/api/jobs/{id}/logs",
            get(move || {
                let log = log.clone();
                async move { json(&log) }
            }),
        );
    let fake = serve(router);
    let stdout = |args: &[&str]| {
        let out = nrl()
            .args(args)
            .args(["--address", &fake.address])
            .assert()
            .get_output()
            .clone();
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (list, _) = stdout(&["job", "list"]);
    let (status, _) = stdout(&["job", "status", "nrl-x"]);
    insta::assert_snapshot!(format!(
        "$ nrl job list\n{list}\n$ nrl job status nrl-x\n{status}"
    ));
    assert!(!list.contains('\u{1b}') && !status.contains('\u{1b}'));
    // A log is the job's own output: passed through as it is.
    let (logs, _) = stdout(&["job", "logs", "nrl-x"]);
    assert_eq!(logs, format!("{HOSTILE}\n"));
    drop(fake);
}

/// Issue 15 item 13: `nrl script --dry-run` made a real `GET /api/jobs/<id>`. A plan
/// touches no dashboard unless reads are allowed, and then it lists what it read.
#[test]
fn plan_mode_reads_no_dashboard_unless_reads_are_allowed() {
    let hits = Hits::default();
    let h = hits.clone();
    let router = Router::new().route(
        "/api/jobs/{id}",
        get(move || {
            h.push("GET /api/jobs/{id}");
            async { json(r#"{"submission_id": "raysubmit_1", "status": "RUNNING"}"#) }
        }),
    );
    let fake = serve(router);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("peek.rhai");
    let body = format!(
        "let d = ray::dashboard(\"{}\");\nprint(d.job(\"raysubmit_1\").status());\n",
        fake.address
    );
    std::fs::write(&script, &body).unwrap();
    let run = |extra: &[&str]| {
        let out = nrl()
            .current_dir(dir.path())
            .args(["script", "peek.rhai", "--dry-run"])
            .args(extra)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).replace(&fake.address, "<dashboard>");
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };

    let (code, _, stderr) = run(&[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("nrl::script::plan_live_read")
            && stderr.contains("would read the Ray dashboard at <dashboard>")
            && stderr.contains("--allow-reads"),
        "{stderr}"
    );
    assert_eq!(
        hits.all(),
        Vec::<String>::new(),
        "the plan reached the dashboard"
    );

    let (code, stdout, stderr) = run(&["--allow-reads"]);
    assert_eq!(code, Some(0), "{stderr}");
    // Columns are as wide as the dashboard's address, whose port varies: one space apart.
    let stdout: Vec<String> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    insta::assert_snapshot!(stdout.join("\n"));
    assert_eq!(hits.count("GET /api/jobs/{id}"), 1);

    // The script may allow them itself.
    std::fs::write(
        &script,
        format!("plan_options(#{{live_reads: true}});\n{body}"),
    )
    .unwrap();
    let (code, _, stderr) = run(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(hits.count("GET /api/jobs/{id}"), 2);
    drop(fake);
}
