//! `?watch=true`: newline-delimited JSON events over a chunked `application/json` response,
//! with the real server's resourceVersion semantics, bookmarks, 410 Gone and timeouts.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::meta::{ApiError, ApiResult};
use super::resources::ResourceType;
use super::selectors::Selectors;
use super::state::{State, lock};
use super::store::{EventType, StoredEvent};

/// What a watch request asked for.
#[derive(Debug, Clone)]
pub struct WatchRequest {
    pub rt: &'static ResourceType,
    pub namespace: Option<String>,
    pub selectors: Selectors,
    /// `None` or `Some(0)`: start with the current state as ADDED events.
    pub resource_version: Option<u64>,
    pub bookmarks: bool,
    pub send_initial_events: bool,
    pub timeout: Option<Duration>,
    /// Fault injection: abort the connection after this many events.
    pub drop_after: Option<usize>,
}

impl WatchRequest {
    pub fn parse_rv(raw: Option<&str>) -> ApiResult<Option<u64>> {
        match raw {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {v:?}"))),
        }
    }
}

fn line(event_type: &str, object: &Value) -> Bytes {
    // Serialized in place: a `json!` wrapper would copy the object first.
    #[derive(serde::Serialize)]
    struct Event<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        object: &'a Value,
    }
    let mut s = serde_json::to_vec(&Event {
        kind: event_type,
        object,
    })
    .unwrap_or_default();
    s.push(b'\n');
    Bytes::from(s)
}

fn bookmark(rt: &ResourceType, rv: u64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    line(
        "BOOKMARK",
        &json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": meta}),
    )
}

/// A watch from a resourceVersion older than the history: the stream opens normally (200)
/// and carries one `ERROR` event whose object is a `Status` {410, `Expired`, `too old
/// resource version: N (M)`}, then closes; the client relists (apiserver
/// `storage/cacher/cacher.go` `Watch` → `newErrWatcher`;
/// https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes).
fn gone(requested: u64, oldest: u64) -> Bytes {
    let status = ApiError::gone(format!("too old resource version: {requested} ({oldest})")).status;
    line("ERROR", &status)
}

/// The event this watch sees for a stored event, if any: changes that move an object into or
/// out of the selection become ADDED or DELETED.
fn translate<'a>(req: &WatchRequest, ev: &'a StoredEvent) -> Option<(&'static str, &'a Value)> {
    if !std::ptr::eq(ev.rt, req.rt) && ev.rt.plural != req.rt.plural {
        return None;
    }
    if let Some(ns) = &req.namespace
        && ev.namespace() != ns
    {
        return None;
    }
    let now = req.selectors.matches(&ev.object);
    match ev.kind {
        EventType::Added | EventType::Deleted => now.then(|| (ev.kind.as_str(), &*ev.object)),
        EventType::Modified => {
            let before = ev
                .previous
                .as_ref()
                .is_some_and(|p| req.selectors.matches(p));
            match (before, now) {
                (true, true) => Some(("MODIFIED", &*ev.object)),
                (false, true) => Some(("ADDED", &*ev.object)),
                (true, false) => Some(("DELETED", &*ev.object)),
                (false, false) => None,
            }
        }
    }
}

type Chunk = Result<Bytes, std::io::Error>;

/// Start streaming; the response is returned at once and events follow.
pub fn respond(state: Arc<State>, req: WatchRequest) -> Response {
    let (tx, rx) = mpsc::channel::<Chunk>(256);
    state.handle.spawn(run(state.clone(), req, tx));
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let mut resp = Response::new(Body::from_stream(stream));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

async fn run(state: Arc<State>, req: WatchRequest, tx: mpsc::Sender<Chunk>) {
    let mut sent = 0usize;
    // Sends one chunk; false when the client went away or the scripted drop fired.
    let send = |chunk: Bytes, sent: &mut usize| {
        let tx = tx.clone();
        let drop_after = req.drop_after;
        *sent += 1;
        let dropping = drop_after.is_some_and(|k| *sent > k);
        async move {
            if dropping {
                let _ = tx
                    .send(Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "watch dropped by fault injection",
                    )))
                    .await;
                return false;
            }
            tx.send(Ok(chunk)).await.is_ok()
        }
    };

    let mut rv_rx = state.rv_rx.clone();
    let initial_state = req.send_initial_events || req.resource_version.is_none_or(|rv| rv == 0);
    let mut initial: Vec<Bytes> = Vec::new();
    let start: Result<u64, (u64, u64)> = {
        let store = lock(&state.store);
        if initial_state {
            let rv = store.current_rv();
            let ns = if req.rt.namespaced {
                req.namespace.as_deref()
            } else {
                None
            };
            for (_, obj) in store.iter(req.rt, ns) {
                if req.selectors.matches(obj) {
                    initial.push(line("ADDED", obj));
                }
            }
            if req.send_initial_events {
                initial.push(bookmark(req.rt, rv, true));
            }
            Ok(rv)
        } else {
            let rv = req.resource_version.unwrap_or(0);
            if rv < store.compacted_rv() {
                Err((rv, store.compacted_rv()))
            } else {
                Ok(rv)
            }
        }
    };
    let mut last = match start {
        Ok(rv) => rv,
        Err((requested, oldest)) => {
            let _ = tx.send(Ok(gone(requested, oldest))).await;
            return;
        }
    };
    for chunk in initial {
        if !send(chunk, &mut sent).await {
            return;
        }
    }

    let deadline = req.timeout.map(|t| Instant::now() + t);
    let bookmark_every = state.timings().bookmark_interval;
    let mut next_bookmark = Instant::now() + bookmark_every;
    loop {
        rv_rx.borrow_and_update();
        let events = lock(&state.store).events_after(last);
        match events {
            Err(oldest) => {
                let _ = tx.send(Ok(gone(last, oldest))).await;
                return;
            }
            Ok(events) => {
                for ev in events {
                    last = ev.rv;
                    if let Some((kind, obj)) = translate(&req, &ev)
                        && !send(line(kind, obj), &mut sent).await
                    {
                        return;
                    }
                }
            }
        }
        let far = Instant::now() + Duration::from_secs(86_400);
        tokio::select! {
            changed = rv_rx.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or(far)) => {
                if req.bookmarks {
                    let _ = tx.send(Ok(bookmark(req.rt, last, false))).await;
                }
                return;
            }
            _ = tokio::time::sleep_until(next_bookmark), if req.bookmarks => {
                next_bookmark = Instant::now() + bookmark_every;
                if !send(bookmark(req.rt, last, false), &mut sent).await {
                    return;
                }
            }
            _ = tx.closed() => return,
        }
    }
}
