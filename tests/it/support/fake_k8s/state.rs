//! Shared server state and the write operations with the API server's semantics (create,
//! replace, patch, server-side apply), used alike by the HTTP handlers, the simulated
//! controllers and tests.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::watch;

use super::access::Denial;
use super::apply::{self, ManagerEntry};
use super::compare::{same_but_volatile, same_spec};
use super::config::{ForwardRule, SimRules, Timings};
use super::defaults;
use super::faults::{Fault, RequestRecord};
use super::logs::LogStore;
use super::meta::{
    ApiError, ApiResult, metadata_mut, name_of, namespace_of, new_uid, now_rfc3339, random_suffix,
    rv_of,
};
use super::patch;
use super::resources::{NAMESPACES, ResourceType, SERVICEACCOUNTS};
use super::selectors::Selectors;
use super::store::{ObjKey, Store};

/// Lock a mutex, recovering from poisoning (a panicking test must not wedge the server).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct State {
    pub store: Mutex<Store>,
    pub rv_rx: watch::Receiver<u64>,
    pub timings: Mutex<Timings>,
    pub rules: Mutex<SimRules>,
    pub faults: Mutex<Vec<Fault>>,
    pub denials: Mutex<Vec<Denial>>,
    pub requests: Mutex<Vec<RequestRecord>>,
    pub logs: Mutex<LogStore>,
    pub log_tx: watch::Sender<u64>,
    pub forwards: Mutex<Vec<ForwardRule>>,
    /// Process groups started by exec, per (namespace, pod), killed with the pod.
    pub processes: Mutex<HashMap<(String, String), Vec<i32>>>,
    pub handle: tokio::runtime::Handle,
    pub root: PathBuf,
    pub token: String,
    next_ip: AtomicU32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Merge,
    Strategic,
    Json,
}

/// Options of one write.
#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub dry_run: bool,
    pub manager: String,
    pub subresource: Option<String>,
    pub force: bool,
}

impl WriteOpts {
    pub fn manager(manager: &str) -> Self {
        WriteOpts {
            manager: manager.to_string(),
            ..Default::default()
        }
    }
    pub fn status(manager: &str) -> Self {
        WriteOpts {
            manager: manager.to_string(),
            subresource: Some("status".into()),
            ..Default::default()
        }
    }
    fn is_status(&self) -> bool {
        self.subresource.as_deref() == Some("status")
    }
}

impl State {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Store,
        rv_rx: watch::Receiver<u64>,
        timings: Timings,
        handle: tokio::runtime::Handle,
        root: PathBuf,
        token: String,
    ) -> Self {
        let (log_tx, _) = watch::channel(0);
        State {
            store: Mutex::new(store),
            rv_rx,
            timings: Mutex::new(timings),
            rules: Mutex::new(SimRules::default()),
            faults: Mutex::new(Vec::new()),
            denials: Mutex::new(Vec::new()),
            requests: Mutex::new(Vec::new()),
            logs: Mutex::new(LogStore::default()),
            log_tx,
            forwards: Mutex::new(Vec::new()),
            processes: Mutex::new(HashMap::new()),
            handle,
            root,
            token,
            next_ip: AtomicU32::new(1),
        }
    }

    pub fn timings(&self) -> Timings {
        lock(&self.timings).clone()
    }

    pub fn rules(&self) -> SimRules {
        lock(&self.rules).clone()
    }

    /// A fresh address in 10.96.0.0/12 for a Service, or in 10.244.0.0/16 for a pod.
    pub fn next_ip(&self, prefix: &str) -> String {
        let n = self.next_ip.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}.{}.{}", (n / 250) % 250, n % 250 + 2)
    }

    pub(super) fn key(rt: &ResourceType, ns: &str, name: &str) -> ObjKey {
        ObjKey::new(if rt.namespaced { ns } else { "" }, name)
    }

    pub fn get(&self, rt: &'static ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
        lock(&self.store)
            .get(rt, &Self::key(rt, ns, name))
            .cloned()
            .ok_or_else(|| ApiError::not_found(rt, name))
    }

    /// The stored object, shared (read-only): no copy, unlike [`State::get`].
    pub fn get_shared(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
    ) -> ApiResult<Arc<Value>> {
        lock(&self.store)
            .get_shared(rt, &Self::key(rt, ns, name))
            .cloned()
            .ok_or_else(|| ApiError::not_found(rt, name))
    }

    /// Objects matching the selectors (all namespaces when `ns` is `None`) and the list's
    /// resourceVersion.
    pub fn list(
        &self,
        rt: &'static ResourceType,
        ns: Option<&str>,
        sel: &Selectors,
    ) -> (Vec<Value>, u64) {
        let store = lock(&self.store);
        let ns = if rt.namespaced { ns } else { None };
        let items = store
            .iter(rt, ns)
            .map(|(_, v)| v)
            .filter(|v| sel.matches(v))
            .cloned()
            .collect();
        (items, store.current_rv())
    }

    /// [`State::list`] without copying the objects.
    pub fn list_shared(
        &self,
        rt: &'static ResourceType,
        ns: Option<&str>,
        sel: &Selectors,
    ) -> (Vec<Arc<Value>>, u64) {
        let store = lock(&self.store);
        let ns = if rt.namespaced { ns } else { None };
        let items = store
            .iter_shared(rt, ns)
            .filter(|v| sel.matches(v))
            .cloned()
            .collect();
        (items, store.current_rv())
    }

    /// Objects of one type owned (ownerReferences) by the object with this uid, shared with
    /// the store (read-only; controllers call this on every reconcile).
    pub fn owned(&self, rt: &'static ResourceType, uid: &str) -> Vec<Arc<Value>> {
        let store = lock(&self.store);
        store
            .owned_by(uid)
            .into_iter()
            .filter(|(plural, _)| *plural == rt.plural)
            .filter_map(|(plural, k)| store.get_by_plural(plural, &k).cloned())
            .collect()
    }

    /// Check apiVersion/kind/namespace of a body against the URL and fill them in.
    fn check_body(
        rt: &ResourceType,
        ns: &str,
        body: &mut Value,
        require_kind: bool,
    ) -> ApiResult<()> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the request body must be a JSON object",
            ));
        }
        let api_version = rt.api_version();
        for (field, want) in [("apiVersion", api_version.as_str()), ("kind", rt.kind)] {
            match body.get(field).and_then(Value::as_str) {
                Some(got) if got != want => {
                    return Err(ApiError::bad_request(format!(
                        "the API version in the data ({}) does not match the expected API version ({})",
                        body.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
                        api_version
                    )));
                }
                None if require_kind => {
                    return Err(ApiError::bad_request(format!("{field} must be set")));
                }
                _ => {}
            }
            body[field] = json!(want);
        }
        if rt.namespaced {
            let meta = metadata_mut(body);
            match meta.get("namespace").and_then(Value::as_str) {
                Some(got) if !got.is_empty() && got != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => {
                    meta.insert("namespace".into(), json!(ns));
                }
            }
        } else {
            metadata_mut(body).remove("namespace");
        }
        Ok(())
    }

    fn check_namespace_exists(store: &Store, rt: &ResourceType, ns: &str) -> ApiResult<()> {
        if rt.namespaced && store.get(&NAMESPACES, &ObjKey::new("", ns)).is_none() {
            return Err(ApiError::not_found(&NAMESPACES, ns));
        }
        Ok(())
    }

    /// POST: create a new object.
    pub fn create(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        mut body: Value,
        opts: &WriteOpts,
    ) -> ApiResult<Value> {
        Self::check_body(rt, ns, &mut body, false)?;
        let mut store = lock(&self.store);
        Self::check_namespace_exists(&store, rt, ns)?;
        let meta = metadata_mut(&mut body);
        if meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
            && let Some(prefix) = meta.get("generateName").and_then(Value::as_str)
        {
            let name = format!("{prefix}{}", random_suffix());
            meta.insert("name".into(), json!(name));
        }
        defaults::validate_new(rt, &body)?;
        let name = name_of(&body).to_string();
        let key = Self::key(rt, ns, &name);
        if store.get(rt, &key).is_some() {
            return Err(ApiError::already_exists(rt, &name));
        }
        if rt.has_status()
            && rt.kind != "Namespace"
            && let Some(m) = body.as_object_mut()
        {
            m.remove("status");
        }
        let managed = apply::record_update(None, &body, &opts.manager, None);
        let obj = self.finish_create(&mut store, rt, key, body, &managed, opts.dry_run);
        if std::ptr::eq(rt, &NAMESPACES) && !opts.dry_run {
            // The service-account controller gives every namespace a `default` account.
            let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": name}});
            let sa = self.finish_create(
                &mut store,
                &SERVICEACCOUNTS,
                ObjKey::new(&name, "default"),
                sa,
                &[],
                false,
            );
            drop(sa);
        }
        Ok(obj)
    }

    fn finish_create(
        &self,
        store: &mut Store,
        rt: &'static ResourceType,
        key: ObjKey,
        mut obj: Value,
        managed: &[ManagerEntry],
        dry_run: bool,
    ) -> Value {
        let meta = metadata_mut(&mut obj);
        meta.remove("resourceVersion");
        meta.remove("deletionTimestamp");
        meta.insert("uid".into(), json!(new_uid()));
        meta.insert("creationTimestamp".into(), json!(now_rfc3339()));
        meta.insert("generation".into(), json!(1));
        apply::write_managed(&mut obj, managed);
        defaults::apply_defaults(rt, &mut obj, &|| self.next_ip("10.96"));
        if rt.kind == "Job" {
            defaults::default_job_selector(&mut obj);
        }
        if dry_run {
            return obj;
        }
        Value::clone(&store.put(rt, key, obj))
    }

    /// The common tail of every update: validation, defaults, generation, no-op detection.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn commit_update(
        &self,
        store: &mut Store,
        rt: &'static ResourceType,
        key: ObjKey,
        live: &Arc<Value>,
        mut new: Value,
        managed: Option<Vec<ManagerEntry>>,
        opts: &WriteOpts,
    ) -> ApiResult<Arc<Value>> {
        if !opts.is_status() {
            // The simulated scheduler sets `nodeName`, as a binding would.
            let binding = opts.manager == "kube-scheduler";
            defaults::validate_update(rt, live, &new, binding)?;
        }
        // System metadata is the server's, whatever the body said.
        let no_meta = json!({});
        let live_meta = live.get("metadata").unwrap_or(&no_meta);
        let meta = metadata_mut(&mut new);
        for k in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "resourceVersion",
        ] {
            match live_meta.get(k) {
                Some(v) => meta.insert(k.into(), v.clone()),
                None => meta.remove(k),
            };
        }
        meta.insert(
            "name".into(),
            live_meta.get("name").cloned().unwrap_or(Value::Null),
        );
        if let Some(ns) = live_meta.get("namespace") {
            meta.insert("namespace".into(), ns.clone());
        }
        match managed {
            Some(entries) => apply::write_managed(&mut new, &entries),
            // Unchanged ownership: the live entries as they are (decoding and re-encoding
            // them gives the same JSON, at a cost every simulated status write paid).
            None => {
                let meta = metadata_mut(&mut new);
                match live_meta.get("managedFields") {
                    Some(mf) => meta.insert("managedFields".into(), mf.clone()),
                    None => meta.remove("managedFields"),
                };
            }
        }
        defaults::apply_defaults(rt, &mut new, &|| self.next_ip("10.96"));
        if !same_spec(&new, live) {
            let generation = live
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            metadata_mut(&mut new).insert("generation".into(), json!(generation + 1));
        }
        if same_but_volatile(&new, live) {
            return Ok(live.clone());
        }
        if opts.dry_run {
            return Ok(Arc::new(new));
        }
        let finalizers_left = new
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        let being_deleted = new.pointer("/metadata/deletionTimestamp").is_some();
        let stored = store.put(rt, key, new);
        if being_deleted && !finalizers_left {
            let uid = stored
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            super::delete::try_finish_locked(self, store, &uid);
        }
        Ok(stored)
    }

    /// Combine a written object with the live one: the main resource keeps the live status,
    /// the status subresource keeps everything but the status.
    fn split_subresource(
        rt: &ResourceType,
        live: &Value,
        written: Value,
        opts: &WriteOpts,
    ) -> Value {
        if opts.is_status() {
            let mut out = live.clone();
            out["status"] = written.get("status").cloned().unwrap_or(Value::Null);
            if out["status"].is_null()
                && let Some(m) = out.as_object_mut()
            {
                m.remove("status");
            }
            out
        } else if rt.has_status() {
            let mut out = written;
            match live.get("status") {
                Some(s) => out["status"] = s.clone(),
                None => {
                    if let Some(m) = out.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            out
        } else {
            written
        }
    }

    /// PUT: replace an object (or its status), with the resourceVersion precondition.
    pub fn replace(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        mut body: Value,
        opts: &WriteOpts,
    ) -> ApiResult<Value> {
        Self::check_body(rt, ns, &mut body, false)?;
        if name_of(&body) != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                name_of(&body)
            )));
        }
        let mut store = lock(&self.store);
        let key = Self::key(rt, ns, name);
        let live = store
            .get_shared(rt, &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        let body_rv = rv_of(&body);
        if body_rv != 0 && body_rv != rv_of(&live) {
            return Err(ApiError::conflict(rt, name));
        }
        let new = Self::split_subresource(rt, &live, body, opts);
        let managed = apply::record_update(
            Some(&live),
            &new,
            &opts.manager,
            opts.subresource.as_deref(),
        );
        self.commit_update(&mut store, rt, key, &live, new, Some(managed), opts)
            .map(|stored| Value::clone(&stored))
    }

    /// PATCH with a merge, strategic-merge or JSON patch.
    pub fn patch(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        kind: PatchType,
        body: &Value,
        opts: &WriteOpts,
    ) -> ApiResult<Value> {
        let mut store = lock(&self.store);
        let key = Self::key(rt, ns, name);
        let live = store
            .get_shared(rt, &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        let mut patched = Value::clone(&live);
        match kind {
            PatchType::Merge => patch::merge_patch(&mut patched, body),
            PatchType::Strategic => patch::strategic_merge_patch(&mut patched, body),
            PatchType::Json => patch::json_patch(&mut patched, body)?,
        }
        // A resourceVersion in the patch is an optimistic-lock precondition.
        if rv_of(&patched) != rv_of(&live) {
            return Err(ApiError::conflict(rt, name));
        }
        Self::check_body(rt, ns, &mut patched, false)?;
        let new = Self::split_subresource(rt, &live, patched, opts);
        let managed = apply::record_update(
            Some(&live),
            &new,
            &opts.manager,
            opts.subresource.as_deref(),
        );
        self.commit_update(&mut store, rt, key, &live, new, Some(managed), opts)
            .map(|stored| Value::clone(&stored))
    }

    /// Server-side apply. Returns the object and whether it was created.
    pub fn apply(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        mut body: Value,
        opts: &WriteOpts,
    ) -> ApiResult<(Value, bool)> {
        if opts.manager.is_empty() {
            return Err(ApiError::bad_request(
                "PATCH, application/apply-patch+yaml requests must include a fieldManager in the query parameters",
            ));
        }
        Self::check_body(rt, ns, &mut body, true)?;
        if name_of(&body) != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                name_of(&body)
            )));
        }
        if let Some(m) = body.as_object_mut() {
            if opts.is_status() {
                let keep = ["apiVersion", "kind", "metadata", "status"];
                m.retain(|k, _| keep.contains(&k.as_str()));
            } else if rt.has_status() {
                m.remove("status");
            }
        }
        let mut store = lock(&self.store);
        Self::check_namespace_exists(&store, rt, ns)?;
        let key = Self::key(rt, ns, name);
        let live = store.get_shared(rt, &key).cloned();
        if let Some(live) = &live {
            let body_rv = rv_of(&body);
            if body_rv != 0 && body_rv != rv_of(live) {
                return Err(ApiError::conflict(rt, name));
            }
        } else if opts.is_status() {
            return Err(ApiError::not_found(rt, name));
        }
        let api_version = rt.api_version();
        let (merged, managed) = apply::server_side_apply(
            live.as_deref(),
            &body,
            &opts.manager,
            opts.subresource.as_deref(),
            opts.force,
        )
        .map_err(|c| ApiError {
            code: 409,
            status: apply::conflict_status(&c, &api_version),
        })?;
        match live {
            None => {
                defaults::validate_new(rt, &merged)?;
                Ok((
                    self.finish_create(&mut store, rt, key, merged, &managed, opts.dry_run),
                    true,
                ))
            }
            Some(live) => {
                let new = Self::split_subresource(rt, &live, merged, opts);
                let stored =
                    self.commit_update(&mut store, rt, key, &live, new, Some(managed), opts)?;
                Ok((Value::clone(&stored), false))
            }
        }
    }
}

/// Shared handle type.
pub type SharedState = Arc<State>;
