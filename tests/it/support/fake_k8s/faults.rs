//! The request log and fault injection: every request is recorded (method, path, query,
//! content type, user agent, watch or not, Kubernetes verb and resource, status), and
//! scripted faults can answer 5xx/429, delay, hang, or drop a watch after some events.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State as AxState};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::http_util::Query;
use super::meta::ApiError;
use super::routes::{RouteInfo, classify};
use super::state::{State, lock};

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    pub query: String,
    pub content_type: Option<String>,
    pub user_agent: Option<String>,
    pub watch: bool,
    /// Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection).
    pub verb: String,
    /// `pods`, `rayclusters`, `pods/exec`, … (`None` for discovery).
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// The `Impersonate-User` header, if the request had one.
    pub impersonate: Option<String>,
    /// HTTP status; 0 while the reply is still pending (or hangs).
    pub status: u16,
    pub at: Instant,
}

impl RequestRecord {
    pub fn is_apply(&self) -> bool {
        self.content_type
            .as_deref()
            .is_some_and(|c| c.starts_with("application/apply-patch"))
    }
    pub fn query_param(&self, key: &str) -> Option<String> {
        Query::parse(Some(&self.query)).get(key).map(str::to_string)
    }
    pub fn is_dry_run(&self) -> bool {
        self.query_param("dryRun").as_deref() == Some("All")
    }
    /// The resource without subresource (`pods` for `pods/log`).
    pub fn base_resource(&self) -> Option<&str> {
        self.resource
            .as_deref()
            .map(|r| r.split('/').next().unwrap_or(r))
    }
}

/// Which requests a fault applies to; unset fields match anything.
#[derive(Debug, Clone, Default)]
pub struct FaultMatch {
    pub method: Option<String>,
    pub verb: Option<String>,
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub path_contains: Option<String>,
    pub watch: Option<bool>,
}

impl FaultMatch {
    pub fn any() -> Self {
        FaultMatch::default()
    }
    /// Requests with this Kubernetes verb on this resource (`"*"` for any resource).
    pub fn verb(verb: &str, resource: &str) -> Self {
        FaultMatch {
            verb: Some(verb.to_string()),
            resource: (resource != "*").then(|| resource.to_string()),
            ..Default::default()
        }
    }
    pub fn method(mut self, m: &str) -> Self {
        self.method = Some(m.to_uppercase());
        self
    }
    pub fn path_contains(mut self, s: &str) -> Self {
        self.path_contains = Some(s.to_string());
        self
    }
    pub fn namespace(mut self, ns: &str) -> Self {
        self.namespace = Some(ns.to_string());
        self
    }
    pub fn name(mut self, n: &str) -> Self {
        self.name = Some(n.to_string());
        self
    }
    pub fn watch(mut self, w: bool) -> Self {
        self.watch = Some(w);
        self
    }

    fn matches(&self, method: &str, path: &str, info: &RouteInfo) -> bool {
        let eq = |want: &Option<String>, got: Option<&str>| {
            want.as_deref().is_none_or(|w| Some(w) == got)
        };
        eq(&self.method, Some(method))
            && eq(&self.verb, Some(info.verb.as_str()))
            && eq(&self.resource, info.resource.as_deref())
            && eq(&self.namespace, info.namespace.as_deref())
            && eq(&self.name, info.name.as_deref())
            && self
                .path_contains
                .as_deref()
                .is_none_or(|p| path.contains(p))
            && self.watch.is_none_or(|w| w == info.watch)
    }
}

#[derive(Debug, Clone)]
pub enum FaultAction {
    /// Answer with this status (500, 502, 503, 504) and a Status body.
    Status(u16),
    /// 429 with `Retry-After`.
    TooManyRequests { retry_after_secs: u64 },
    /// Answer normally, but only after this delay.
    Delay(Duration),
    /// Never answer (until the client gives up).
    Hang,
    /// Watches: abort the connection after this many events.
    DropWatchAfter(usize),
    /// Answer 200 with the headers of a watch stream, then send nothing and never close:
    /// a connection that stopped answering (a dead peer behind a live TCP connection, a
    /// stuck proxy). The client has to notice by itself.
    Stall,
    /// Exec: the upgrade succeeds, then the API server's stream translator cannot reach
    /// the kubelet (or the kubelet cannot find the container) and reports it on the status
    /// channel as `Failure`, reason `InternalError`, message `Internal error occurred:
    /// <this>`, with no `ExitCode` cause (apiserver `pkg/util/proxy/streamtranslator.go`
    /// `StreamTranslatorHandler.ServeHTTP`: a non-exit error of the SPDY executor goes to
    /// `writeStatus(apierrors.NewInternalError(err))`).
    ExecFailure(String),
    /// Answer 200 with a chunked body of `a` that never ends (no length, no newline): a
    /// broken proxy or a hostile server. The client must stop reading by itself.
    Endless,
    /// Answer 200 announcing a `Content-Length` of this many bytes, then send `a` up to it.
    Oversized(u64),
}

/// Marker the exec handler reads to fail the way an unreachable kubelet does.
#[derive(Debug, Clone)]
pub struct ExecFails(pub String);

#[derive(Debug, Clone)]
pub struct Fault {
    pub matcher: FaultMatch,
    pub action: FaultAction,
    /// How many more requests it applies to; `None` = forever.
    pub remaining: Option<usize>,
}

/// Marker the watch handler reads to drop its connection.
#[derive(Debug, Clone, Copy)]
pub struct DropWatchAfter(pub usize);

fn fault_response(code: u16) -> Response {
    let (reason, message) = match code {
        429 => (
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        ),
        503 => (
            "ServiceUnavailable",
            "the server is currently unable to handle the request",
        ),
        504 => (
            "Timeout",
            "the server was unable to return a response in the time allotted, but may still be processing the request",
        ),
        _ => ("InternalError", "Internal error occurred: injected fault"),
    };
    ApiError::new(code, reason, message).into_response()
}

/// 64 KiB chunks of `a` forever; with `length`, announced as that long (hyper then stops
/// sending at that length).
fn endless_response(length: Option<u64>) -> Response {
    let chunks = futures::stream::repeat_with(|| {
        Ok::<_, std::io::Error>(axum::body::Bytes::from(vec![b'a'; 64 << 10]))
    });
    let mut resp = Response::new(Body::from_stream(chunks));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(len) = length {
        resp.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    resp
}

/// Axum middleware: authentication, request log, faults, RBAC denials.
pub async fn middleware(
    AxState(state): AxState<Arc<State>>,
    mut req: Request<Body>,
    next: Next,
) -> Response {
    let method = req.method().as_str().to_string();
    let path = req.uri().path().to_string();
    let raw_query = req.uri().query().unwrap_or("").to_string();
    let query = Query::parse(Some(&raw_query));
    let info = classify(req.method(), &path, &query);
    let headers = req.headers();
    let header_str = |h: header::HeaderName| {
        headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let content_type = header_str(header::CONTENT_TYPE);
    let user_agent = header_str(header::USER_AGENT);
    let authorization = header_str(header::AUTHORIZATION);
    let impersonate = header_str(header::HeaderName::from_static("impersonate-user"));
    let record = RequestRecord {
        method: method.clone(),
        path: path.clone(),
        query: raw_query,
        content_type,
        user_agent,
        watch: info.watch,
        verb: info.verb.clone(),
        resource: info.resource.clone(),
        namespace: info.namespace.clone(),
        name: info.name.clone(),
        impersonate: impersonate.clone(),
        status: 0,
        at: Instant::now(),
    };
    let index = {
        let mut log = lock(&state.requests);
        log.push(record);
        log.len() - 1
    };
    let set_status = |code: u16| {
        if let Some(r) = lock(&state.requests).get_mut(index) {
            r.status = code;
        }
    };

    let authorized = authorization.is_some_and(|a| a == format!("Bearer {}", state.token));
    if !authorized {
        set_status(401);
        return ApiError::new(401, "Unauthorized", "Unauthorized").into_response();
    }

    let mut delay = Duration::ZERO;
    let mut terminal: Option<FaultAction> = None;
    {
        let mut faults = lock(&state.faults);
        for f in faults.iter_mut() {
            if f.remaining == Some(0) || !f.matcher.matches(&method, &path, &info) {
                continue;
            }
            match &f.action {
                FaultAction::Delay(d) => delay += *d,
                FaultAction::DropWatchAfter(k) => {
                    req.extensions_mut().insert(DropWatchAfter(*k));
                }
                FaultAction::ExecFailure(m) => {
                    req.extensions_mut().insert(ExecFails(m.clone()));
                }
                other => {
                    if terminal.is_some() {
                        continue;
                    }
                    terminal = Some(other.clone());
                }
            }
            if let Some(r) = f.remaining.as_mut() {
                *r -= 1;
            }
        }
        faults.retain(|f| f.remaining != Some(0));
    }
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    match terminal {
        Some(FaultAction::Status(code)) => {
            set_status(code);
            return fault_response(code);
        }
        Some(FaultAction::TooManyRequests { retry_after_secs }) => {
            set_status(429);
            let mut resp = fault_response(429);
            if let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return resp;
        }
        Some(FaultAction::Hang) => std::future::pending::<()>().await,
        Some(FaultAction::Endless) => {
            set_status(200);
            return endless_response(None);
        }
        Some(FaultAction::Oversized(len)) => {
            set_status(200);
            return endless_response(Some(len));
        }
        Some(FaultAction::Stall) => {
            set_status(200);
            let never = futures::stream::pending::<Result<axum::body::Bytes, std::io::Error>>();
            let mut resp = Response::new(Body::from_stream(never));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return resp;
        }
        _ => {}
    }

    let user = match super::access::effective_user(&state, impersonate.as_deref()) {
        Ok(u) => u,
        Err(denied) => {
            set_status(denied.code);
            return denied.into_response();
        }
    };
    if let Some(denied) = super::access::check(&state, &user, &info) {
        set_status(denied.code);
        return denied.into_response();
    }
    req.extensions_mut()
        .insert(super::access::EffectiveUser(user));

    let resp = next.run(req).await;
    set_status(resp.status().as_u16());
    resp
}
