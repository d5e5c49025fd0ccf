//! The HTTP handler: discovery, CRUD, patch/apply, list/watch, and the pod subresources.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{FromRequestParts, Request, State as AxState, ws::WebSocketUpgrade};
use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use serde_json::{Value, json};

use super::delete::{DeleteOpts, DeleteOutcome, Propagation};
use super::faults::DropWatchAfter;
use super::http_util::{Query, json_response};
use super::meta::{ApiError, ApiResult};
use super::resources::{self, ResourceType};
use super::routes::{Route, parse_path};
use super::selectors::Selectors;
use super::state::{PatchType, State, WriteOpts, lock};
use super::watch::{self, WatchRequest};

const MAX_BODY: usize = 64 * 1024 * 1024;

/// CRD-backed kinds carry apiVersion/kind in list items; built-ins do not.
fn is_crd(rt: &ResourceType) -> bool {
    matches!(rt.group, "ray.io" | "resource.nvidia.com")
}

fn wants_aggregated(req: &Request<Body>) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("as=APIGroupDiscoveryList"))
}

fn aggregated_response(core: bool) -> Response {
    let mut resp = json_response(200, &resources::aggregated_discovery(core));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        ),
    );
    resp
}

/// The field manager of a non-apply write: `fieldManager`, else the user agent's program name.
fn manager_of(q: &Query, req: &Request<Body>) -> String {
    if let Some(m) = q.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    req.headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|ua| ua.split('/').next().unwrap_or(ua).to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

fn write_opts(q: &Query, req: &Request<Body>, sub: Option<&str>) -> ApiResult<WriteOpts> {
    let dry_run = match q.get("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "unsupported dryRun value {other:?}"
            )));
        }
    };
    Ok(WriteOpts {
        dry_run,
        manager: manager_of(q, req),
        subresource: sub.map(str::to_string),
        force: q.flag("force"),
    })
}

/// The `fieldValidation` directive of a write (default `Warn`), per
/// https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation and
/// apiserver `endpoints/handlers/rest.go` `fieldValidation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

fn field_validation(q: &Query) -> ApiResult<FieldValidation> {
    match q.get("fieldValidation") {
        None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
        Some("Ignore") => Ok(FieldValidation::Ignore),
        Some("Strict") => Ok(FieldValidation::Strict),
        Some(other) => Err(ApiError::bad_request(format!(
            "fieldValidation must be one of Ignore, Warn, Strict, got {other:?}"
        ))),
    }
}

/// Decoding a create/update body: fields the kind's schema does not declare are an error
/// under `Strict` (400 `strict decoding error: unknown field "spec.x"`, apiserver
/// `handlers/rest.go` `transformDecodeError`), otherwise dropped — CRDs prune them
/// (apiextensions-apiserver `customresource_handler.go` `schemaCoercingDecoder`), built-in
/// kinds never decode them — with one `Warning: 299` header each under `Warn` (apiserver
/// `rest.go` `addStrictDecodingWarnings`). Returns the warnings.
fn decode_fields(
    rt: &ResourceType,
    body: &mut Value,
    directive: FieldValidation,
) -> ApiResult<Vec<String>> {
    let Some(node) = super::schema::for_kind(&rt.api_version(), rt.kind) else {
        return Ok(Vec::new());
    };
    let unknown = super::schema::unknown_fields(body, node);
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    let listed: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field \"{f}\""))
        .collect();
    if directive == FieldValidation::Strict {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
            listed.join(", "),
            kind = rt.kind,
            v = rt.version,
        )));
    }
    super::schema::prune(body, node);
    Ok(if directive == FieldValidation::Warn {
        listed
    } else {
        Vec::new()
    })
}

/// Server-side apply converts the applied configuration to the kind's typed schema first:
/// an undeclared field fails that conversion whatever `fieldValidation` says, as a 500
/// with no reason (apimachinery `managedfields/internal/structuredmerge.go` `Apply`;
/// apiserver `handlers/patch.go` `applyPatcher`; spec §4.2).
fn typed_apply_check(rt: &ResourceType, body: &Value) -> ApiResult<()> {
    let Some(node) = super::schema::for_kind(&rt.api_version(), rt.kind) else {
        return Ok(());
    };
    let unknown = super::schema::unknown_fields(body, node);
    if unknown.is_empty() {
        return Ok(());
    }
    let group = rt.group;
    let fields: Vec<String> = unknown
        .iter()
        .map(|f| format!(".{f}: field not declared in schema"))
        .collect();
    Err(ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({group}/{}, Kind={}): {}",
            rt.version,
            rt.kind,
            fields.join(", ")
        ),
    ))
}

/// `Warning: 299 - "<text>"` headers (apiserver `endpoints/filters/warning.go`).
fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

async fn read_body(body: Body) -> ApiResult<Vec<u8>> {
    axum::body::to_bytes(body, MAX_BODY)
        .await
        .map(|b| b.to_vec())
        .map_err(|e| ApiError::bad_request(format!("reading the request body: {e}")))
}

fn parse_json(bytes: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!("the body of the request could not be decoded: {e}"))
    })
}

/// Apply bodies are YAML (JSON is YAML too).
fn parse_yaml_or_json(bytes: &[u8]) -> ApiResult<Value> {
    if let Ok(v) = serde_json::from_slice(bytes) {
        return Ok(v);
    }
    let text =
        std::str::from_utf8(bytes).map_err(|_| ApiError::bad_request("apply body is not UTF-8"))?;
    serde_saphyr::from_str::<Value>(text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
}

/// A list response, serialized straight from the stored objects (copying hundreds of
/// them into a response tree first was most of a large list's cost). Items of built-in
/// kinds omit `apiVersion`/`kind`, as the real server's do.
struct ListBody<'a> {
    rt: &'a ResourceType,
    items: &'a [Arc<Value>],
    rv: u64,
    cont: Option<String>,
    remaining: Option<usize>,
}

/// One list item, without `apiVersion` and `kind` when `strip`.
struct ListItem<'a> {
    obj: &'a Value,
    strip: bool,
}

impl serde::Serialize for ListItem<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.obj.as_object() {
            Some(m) if self.strip => {
                let kept = m.iter().filter(|(k, _)| *k != "apiVersion" && *k != "kind");
                let mut map = s.serialize_map(None)?;
                for (k, v) in kept {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
            _ => self.obj.serialize(s),
        }
    }
}

impl serde::Serialize for ListBody<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut meta = json!({"resourceVersion": self.rv.to_string()});
        if let Some(c) = &self.cont {
            meta["continue"] = json!(c);
            if let Some(r) = self.remaining {
                meta["remainingItemCount"] = json!(r);
            }
        }
        let strip = !is_crd(self.rt);
        let items: Vec<ListItem> = self
            .items
            .iter()
            .map(|obj| ListItem { obj, strip })
            .collect();
        let mut map = s.serialize_map(Some(4))?;
        map.serialize_entry("kind", &self.rt.list_kind())?;
        map.serialize_entry("apiVersion", &self.rt.api_version())?;
        map.serialize_entry("metadata", &meta)?;
        map.serialize_entry("items", &items)?;
        map.end()
    }
}

fn list_response(body: &ListBody) -> Response {
    let mut resp = Response::new(Body::from(serde_json::to_vec(body).unwrap_or_default()));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn item_key(v: &Value) -> String {
    let ns = v
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    format!("{ns}/{name}")
}

/// A list, chunked when `limit` is given. The real server serves every page of a chunked
/// list from the snapshot of the first page's resourceVersion, and each page says that
/// resourceVersion, so a watch started from it misses no change (Kubernetes docs, "API
/// Concepts: Retrieving large results sets in chunks"; apiserver
/// `storage/etcd3/store.go` `GetList` with a continue key). The fake keeps no snapshots:
/// later pages hold the current objects, but carry the first page's resourceVersion, which
/// is what keeps a watch from it whole. A token whose resourceVersion is no longer in the
/// history is `410 Expired` ("the provided continue parameter is too old"), as there.
fn list(
    state: &State,
    rt: &'static ResourceType,
    ns: Option<&str>,
    q: &Query,
) -> ApiResult<Response> {
    let sel = Selectors::parse(q.get("labelSelector"), q.get("fieldSelector"))?;
    let (mut items, current_rv) = state.list_shared(rt, ns, &sel);
    let mut rv = current_rv;
    if let Some(token) = q.get("continue").filter(|t| !t.is_empty()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(token)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
        let (snapshot, last) = decoded
            .split_once('\n')
            .and_then(|(rv, key)| Some((rv.parse::<u64>().ok()?, key.to_string())))
            .ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
        if snapshot < lock(&state.store).compacted_rv() {
            return Err(ApiError::gone(
                "The provided continue parameter is too old to display a consistent list result. \
                 You can start a new list without the continue parameter.",
            ));
        }
        rv = snapshot;
        items.retain(|i| item_key(i) > last);
    }
    let limit = q.number("limit")?.filter(|l| *l > 0).map(|l| l as usize);
    let (cont, remaining) = match limit {
        Some(l) if items.len() > l => {
            let rest = items.split_off(l);
            let last = items.last().map(|i| item_key(i)).unwrap_or_default();
            (
                Some(base64::engine::general_purpose::STANDARD.encode(format!("{rv}\n{last}"))),
                Some(rest.len()),
            )
        }
        _ => (None, None),
    };
    Ok(list_response(&ListBody {
        rt,
        items: &items,
        rv,
        cont,
        remaining,
    }))
}

fn delete_opts(q: &Query, body: &[u8]) -> ApiResult<DeleteOpts> {
    let parsed: Value = if body.is_empty() {
        Value::Null
    } else {
        parse_json(body)?
    };
    let s = |k: &str| {
        parsed
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| q.get(k).map(str::to_string))
    };
    let propagation = match s("propagationPolicy") {
        Some(p) => Some(Propagation::parse(&p)?),
        None => match parsed.get("orphanDependents").and_then(Value::as_bool) {
            Some(true) => Some(Propagation::Orphan),
            Some(false) => Some(Propagation::Background),
            None => None,
        },
    };
    let dry_run = parsed
        .get("dryRun")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| v == "All"))
        || q.get("dryRun") == Some("All");
    Ok(DeleteOpts {
        propagation,
        dry_run,
        grace_period_seconds: parsed
            .get("gracePeriodSeconds")
            .and_then(Value::as_i64)
            .or(q.number("gracePeriodSeconds")?),
        precondition_uid: parsed
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string),
        precondition_rv: parsed
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

fn watch_request(
    rt: &'static ResourceType,
    ns: Option<&str>,
    q: &Query,
    drop_after: Option<usize>,
    name: Option<&str>,
) -> ApiResult<WatchRequest> {
    let mut fields = q.get("fieldSelector").unwrap_or("").to_string();
    if let Some(n) = name {
        if !fields.is_empty() {
            fields.push(',');
        }
        fields.push_str(&format!("metadata.name={n}"));
    }
    Ok(WatchRequest {
        rt,
        namespace: ns.map(str::to_string),
        selectors: Selectors::parse(q.get("labelSelector"), Some(&fields))?,
        resource_version: WatchRequest::parse_rv(q.get("resourceVersion"))?,
        bookmarks: q.flag("allowWatchBookmarks"),
        send_initial_events: q.flag("sendInitialEvents"),
        timeout: q
            .number("timeoutSeconds")?
            .filter(|t| *t > 0)
            .map(|t| std::time::Duration::from_secs(t as u64)),
        drop_after,
    })
}

/// The fallback handler every API request goes through.
pub async fn handle(AxState(state): AxState<Arc<State>>, req: Request<Body>) -> Response {
    match dispatch(state, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn dispatch(state: Arc<State>, req: Request<Body>) -> ApiResult<Response> {
    let q = Query::parse(req.uri().query());
    let route = parse_path(req.uri().path());
    let method = req.method().clone();
    let drop_after = req.extensions().get::<DropWatchAfter>().map(|d| d.0);
    match route {
        Route::Version => Ok(json_response(200, &resources::version_info())),
        Route::Healthz => Ok((axum::http::StatusCode::OK, "ok").into_response()),
        Route::CoreVersions if wants_aggregated(&req) => Ok(aggregated_response(true)),
        Route::Groups if wants_aggregated(&req) => Ok(aggregated_response(false)),
        Route::CoreVersions => {
            let host = req
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("127.0.0.1");
            Ok(json_response(200, &resources::core_api_versions(host)))
        }
        Route::Groups => Ok(json_response(200, &resources::api_group_list())),
        Route::ResourceList { group, version } => Ok(json_response(
            200,
            &resources::api_resource_list(&group, &version),
        )),
        Route::NotFound => Err(ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )),
        Route::Collection { rt, namespace } => {
            let ns = namespace.as_deref();
            match method {
                Method::GET if q.flag("watch") => Ok(watch::respond(
                    state,
                    watch_request(rt, ns, &q, drop_after, None)?,
                )),
                Method::GET => list(&state, rt, ns, &q),
                Method::POST => {
                    let opts = write_opts(&q, &req, None)?;
                    let user = req
                        .extensions()
                        .get::<super::access::EffectiveUser>()
                        .map(|u| u.0.clone())
                        .unwrap_or_else(|| super::access::USER.to_string());
                    let directive = field_validation(&q)?;
                    let mut body = parse_json(&read_body(req.into_body()).await?)?;
                    if rt.create_only {
                        return Ok(json_response(
                            201,
                            &super::access::review(&state, &user, body),
                        ));
                    }
                    let ns = if rt.namespaced {
                        ns.ok_or_else(|| {
                            ApiError::new(
                                404,
                                "NotFound",
                                "the server could not find the requested resource",
                            )
                        })?
                    } else {
                        ""
                    };
                    let warnings = decode_fields(rt, &mut body, directive)?;
                    Ok(with_warnings(
                        json_response(201, &state.create(rt, ns, body, &opts)?),
                        &warnings,
                    ))
                }
                Method::DELETE => {
                    let sel = Selectors::parse(q.get("labelSelector"), q.get("fieldSelector"))?;
                    let opts = delete_opts(&q, &read_body(req.into_body()).await?)?;
                    let items: Vec<Arc<Value>> = state
                        .delete_collection(rt, ns, &sel, &opts)?
                        .into_iter()
                        .map(Arc::new)
                        .collect();
                    let rv = state.store.lock().map(|s| s.current_rv()).unwrap_or(0);
                    Ok(list_response(&ListBody {
                        rt,
                        items: &items,
                        rv,
                        cont: None,
                        remaining: None,
                    }))
                }
                _ => Err(ApiError::method_not_allowed()),
            }
        }
        Route::Object {
            rt,
            namespace,
            name,
            sub,
        } => {
            let ns = namespace.clone().unwrap_or_default();
            object(state, req, rt, &ns, &name, sub.as_deref(), &q, drop_after).await
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn object(
    state: Arc<State>,
    req: Request<Body>,
    rt: &'static ResourceType,
    ns: &str,
    name: &str,
    sub: Option<&str>,
    q: &Query,
    drop_after: Option<usize>,
) -> ApiResult<Response> {
    match sub {
        None | Some("status") => {}
        Some("log") if rt.kind == "Pod" => return super::logs::respond(state, ns, name, q),
        Some(s @ ("exec" | "portforward")) if rt.kind == "Pod" => {
            let exec_fails = req
                .extensions()
                .get::<super::faults::ExecFails>()
                .map(|f| f.0.clone());
            let (mut parts, _) = req.into_parts();
            let ws = WebSocketUpgrade::from_request_parts(&mut parts, &())
                .await
                .map_err(|e| ApiError::bad_request(format!("Upgrade request required: {e}")))?;
            return match s {
                "portforward" => super::portforward::respond(state, ws, ns, name, q),
                _ => super::exec::respond(state, ws, ns, name, q, exec_fails),
            };
        }
        Some(_) => {
            return Err(ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ));
        }
    }
    if sub == Some("status") && !rt.has_status() {
        return Err(ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    }
    let method = req.method().clone();
    match method {
        Method::GET if q.flag("watch") => {
            let scope = rt.namespaced.then_some(ns);
            Ok(watch::respond(
                state,
                watch_request(rt, scope, q, drop_after, Some(name))?,
            ))
        }
        Method::GET => Ok(json_response(200, &state.get(rt, ns, name)?)),
        Method::PUT => {
            let opts = write_opts(q, &req, sub)?;
            let directive = field_validation(q)?;
            let mut body = parse_json(&read_body(req.into_body()).await?)?;
            let warnings = decode_fields(rt, &mut body, directive)?;
            Ok(with_warnings(
                json_response(200, &state.replace(rt, ns, name, body, &opts)?),
                &warnings,
            ))
        }
        Method::PATCH => {
            let opts = write_opts(q, &req, sub)?;
            let ct = req
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            let bytes = read_body(req.into_body()).await?;
            let kind = match ct.as_str() {
                "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                    field_validation(q)?;
                    let body = parse_yaml_or_json(&bytes)?;
                    typed_apply_check(rt, &body)?;
                    let (obj, created) = state.apply(rt, ns, name, body, &opts)?;
                    return Ok(json_response(if created { 201 } else { 200 }, &obj));
                }
                "application/merge-patch+json" => PatchType::Merge,
                // Custom resources have no patch strategies (apiextensions-apiserver
                // `customresource_handler.go` `serveResource`: supported patch types are
                // JSON, merge and apply); apiserver `handlers/patch.go` answers 415.
                "application/strategic-merge-patch+json" if is_crd(rt) => {
                    return Err(ApiError::new(
                        415,
                        "UnsupportedMediaType",
                        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                    ));
                }
                "application/strategic-merge-patch+json" => PatchType::Strategic,
                "application/json-patch+json" => PatchType::Json,
                other => return Err(ApiError::unsupported_media_type(other)),
            };
            let directive = field_validation(q)?;
            let mut body = parse_json(&bytes)?;
            // Merge and strategic patches mirror the object's shape, so their unknown
            // fields are the result's (JSON patches are not checked).
            let warnings = match kind {
                PatchType::Json => Vec::new(),
                _ => decode_fields(rt, &mut body, directive)?,
            };
            Ok(with_warnings(
                json_response(200, &state.patch(rt, ns, name, kind, &body, &opts)?),
                &warnings,
            ))
        }
        Method::DELETE => {
            let opts = delete_opts(q, &read_body(req.into_body()).await?)?;
            match state.delete(rt, ns, name, &opts)? {
                DeleteOutcome::Gone(status) => Ok(json_response(200, &status)),
                DeleteOutcome::Pending(obj) => Ok(json_response(202, &obj)),
            }
        }
        _ => Err(ApiError::method_not_allowed()),
    }
}
