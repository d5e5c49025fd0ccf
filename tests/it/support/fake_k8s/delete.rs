//! Deletion: propagation policies, finalizers, graceful deletion and owner-reference
//! garbage collection.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::meta::{
    ApiError, ApiResult, metadata_mut, name_of, now_rfc3339, owner_uids, rv_of, success_status,
    uid_of,
};
use super::resources::{self, NAMESPACES, PODS, ResourceType};
use super::selectors::Selectors;
use super::state::{State, lock};
use super::store::{ObjKey, Store};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}

impl Propagation {
    pub fn parse(s: &str) -> ApiResult<Self> {
        match s {
            "Orphan" => Ok(Propagation::Orphan),
            "Background" => Ok(Propagation::Background),
            "Foreground" => Ok(Propagation::Foreground),
            other => Err(ApiError::bad_request(format!(
                "unsupported propagationPolicy {other:?}"
            ))),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    pub propagation: Option<Propagation>,
    pub dry_run: bool,
    pub grace_period_seconds: Option<i64>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

/// What a DELETE answers: the object while deletion is pending, a Success Status once gone.
#[derive(Debug, Clone)]
pub enum DeleteOutcome {
    Pending(Value),
    Gone(Value),
}

impl DeleteOutcome {
    pub fn body(&self) -> &Value {
        match self {
            DeleteOutcome::Pending(v) | DeleteOutcome::Gone(v) => v,
        }
    }
}

/// The real default: batch/v1 Jobs orphan their pods unless told otherwise.
fn default_propagation(rt: &ResourceType) -> Propagation {
    if rt.kind == "Job" {
        Propagation::Orphan
    } else {
        Propagation::Background
    }
}

fn dependents(store: &Store, uid: &str) -> Vec<(&'static ResourceType, ObjKey)> {
    store
        .owned_by(uid)
        .into_iter()
        .filter_map(|(plural, k)| {
            resources::ALL
                .iter()
                .find(|r| r.plural == plural)
                .map(|r| (*r, k))
        })
        .collect()
}

/// Whether `dep` has an owner other than `uid` that exists and is not being deleted. The
/// real garbage collector keeps such a dependent and only drops the departing owner's
/// reference (a Secret owned by several Jobs outlives all but the last of them).
fn has_other_live_owner(store: &Store, dep: &Value, uid: &str) -> bool {
    let ns = dep
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    dep.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|r| {
            let (Some(kind), Some(name), Some(ruid)) =
                (r["kind"].as_str(), r["name"].as_str(), r["uid"].as_str())
            else {
                return false;
            };
            ruid != uid
                && resources::ALL
                    .iter()
                    .find(|rt| rt.kind == kind)
                    .and_then(|rt| {
                        let owner_ns = if rt.namespaced { ns } else { "" };
                        store.get(rt, &ObjKey::new(owner_ns, name))
                    })
                    .is_some_and(|o| {
                        uid_of(o) == ruid && o.pointer("/metadata/deletionTimestamp").is_none()
                    })
        })
}

/// Drop the reference to owner `uid` from a dependent that other owners keep alive.
fn release_from_owner(store: &mut Store, drt: &'static ResourceType, dkey: ObjKey, uid: &str) {
    if let Some(mut dep) = store.get(drt, &dkey).cloned() {
        if let Some(refs) = dep
            .pointer_mut("/metadata/ownerReferences")
            .and_then(Value::as_array_mut)
        {
            refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid));
        }
        store.put(drt, dkey, dep);
    }
}

fn find_by_uid(store: &Store, uid: &str) -> Option<(&'static ResourceType, ObjKey)> {
    store
        .all()
        .find(|(_, _, v)| uid_of(v) == uid)
        .and_then(|(plural, k, _)| {
            resources::ALL
                .iter()
                .find(|r| r.plural == plural)
                .map(|r| (*r, k.clone()))
        })
}

impl State {
    fn deletion_delay(&self, rt: &ResourceType, grace: Option<i64>) -> Duration {
        let t = lock(&self.timings);
        if rt.kind == "Pod" {
            return match grace {
                Some(0) => Duration::ZERO,
                _ => t.pod_termination,
            };
        }
        t.deletion_delay
            .get(rt.kind)
            .copied()
            .unwrap_or(Duration::ZERO)
    }

    /// DELETE one object.
    pub fn delete(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOpts,
    ) -> ApiResult<DeleteOutcome> {
        let key = ObjKey::new(if rt.namespaced { ns } else { "" }, name);
        let mut store = lock(&self.store);
        let live = store
            .get(rt, &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        if let Some(uid) = &opts.precondition_uid
            && uid != uid_of(&live)
        {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    uid_of(&live)
                ),
            ));
        }
        if let Some(rv) = &opts.precondition_rv
            && rv.parse::<u64>().ok() != Some(rv_of(&live))
        {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    rv_of(&live)
                ),
            ));
        }
        if opts.dry_run {
            return Ok(DeleteOutcome::Pending(live));
        }
        let policy = opts.propagation.unwrap_or_else(|| default_propagation(rt));
        let delay = self.deletion_delay(rt, opts.grace_period_seconds);
        Ok(self.delete_locked(
            &mut store,
            rt,
            key,
            policy,
            delay,
            opts.grace_period_seconds,
        ))
    }

    /// DELETE a collection (the objects matching the selectors).
    pub fn delete_collection(
        &self,
        rt: &'static ResourceType,
        ns: Option<&str>,
        sel: &Selectors,
        opts: &DeleteOpts,
    ) -> ApiResult<Vec<Value>> {
        let (items, _) = self.list(rt, ns, sel);
        let mut out = Vec::new();
        for item in items {
            let ns = item
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            match self.delete(rt, &ns, name_of(&item), opts) {
                Ok(o) => out.push(o.body().clone()),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    fn delete_locked(
        &self,
        store: &mut Store,
        rt: &'static ResourceType,
        key: ObjKey,
        policy: Propagation,
        delay: Duration,
        grace: Option<i64>,
    ) -> DeleteOutcome {
        let Some(live) = store.get(rt, &key).cloned() else {
            return DeleteOutcome::Gone(success_status(rt, &key.name, ""));
        };
        let uid = uid_of(&live).to_string();
        if live.pointer("/metadata/deletionTimestamp").is_some() {
            return DeleteOutcome::Pending(live);
        }
        if policy == Propagation::Orphan {
            for (drt, dkey) in dependents(store, &uid) {
                if let Some(mut dep) = store.get(drt, &dkey).cloned() {
                    if let Some(refs) = dep
                        .pointer_mut("/metadata/ownerReferences")
                        .and_then(Value::as_array_mut)
                    {
                        refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
                        if refs.is_empty() {
                            metadata_mut(&mut dep).remove("ownerReferences");
                        }
                    }
                    store.put(drt, dkey, dep);
                }
            }
        }
        let user_finalizers = live
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        let foreground = policy == Propagation::Foreground && !dependents(store, &uid).is_empty();
        if user_finalizers || foreground || !delay.is_zero() {
            let mut obj = live.clone();
            let meta = metadata_mut(&mut obj);
            meta.insert("deletionTimestamp".into(), json!(now_rfc3339()));
            meta.insert(
                "deletionGracePeriodSeconds".into(),
                json!(grace.unwrap_or(if rt.kind == "Pod" { 30 } else { 0 })),
            );
            if foreground {
                let fins = meta.entry("finalizers").or_insert_with(|| json!([]));
                if let Some(a) = fins.as_array_mut() {
                    a.push(json!("foregroundDeletion"));
                }
            }
            store
                .deletion_due
                .insert(uid.clone(), Instant::now() + delay);
            let name = key.name.clone();
            let stored = store.put(rt, key, obj);
            if foreground {
                for (drt, dkey) in dependents(store, &uid) {
                    if store
                        .get(drt, &dkey)
                        .is_some_and(|d| has_other_live_owner(store, d, &uid))
                    {
                        release_from_owner(store, drt, dkey, &uid);
                        continue;
                    }
                    self.delete_locked(
                        store,
                        drt,
                        dkey,
                        Propagation::Background,
                        self.deletion_delay(drt, None),
                        None,
                    );
                }
                // Released dependents no longer hold it: it may be free to go now.
                try_finish_locked(self, store, &uid);
                if find_by_uid(store, &uid).is_none() {
                    return DeleteOutcome::Gone(success_status(rt, &name, &uid));
                }
            }
            return DeleteOutcome::Pending(Value::clone(&stored));
        }
        self.remove_locked(store, rt, &key);
        DeleteOutcome::Gone(success_status(rt, &key.name, &uid))
    }

    /// Remove now, then collect what depended on the object (and what was in a namespace).
    fn remove_locked(&self, store: &mut Store, rt: &'static ResourceType, key: &ObjKey) {
        let Some(removed) = store.remove(rt, key) else {
            return;
        };
        store.deletion_due.remove(uid_of(&removed));
        if std::ptr::eq(rt, &PODS) {
            self.on_pod_removed(&key.namespace, &key.name);
        }
        let uid = uid_of(&removed).to_string();
        for (drt, dkey) in dependents(store, &uid) {
            if store
                .get(drt, &dkey)
                .is_some_and(|d| has_other_live_owner(store, d, &uid))
            {
                release_from_owner(store, drt, dkey, &uid);
                continue;
            }
            let delay = self.deletion_delay(drt, None);
            self.delete_locked(store, drt, dkey, Propagation::Background, delay, None);
        }
        if std::ptr::eq(rt, &NAMESPACES) {
            let inside: Vec<(&'static ResourceType, ObjKey)> = store
                .all()
                .filter(|(_, k, _)| k.namespace == key.name)
                .filter_map(|(plural, k, _)| {
                    resources::ALL
                        .iter()
                        .find(|r| r.plural == plural)
                        .map(|r| (*r, k.clone()))
                })
                .collect();
            for (irt, ikey) in inside {
                self.remove_locked(store, irt, &ikey);
            }
        }
        // An owner waiting in foreground deletion may now be free to go.
        for owner in owner_uids(&removed) {
            try_finish_locked(self, store, &owner);
        }
    }

    /// Kill what exec started in a pod and end its log streams.
    fn on_pod_removed(&self, ns: &str, name: &str) {
        super::exec::kill_pod_processes(self, ns, name);
        self.log_tx.send_modify(|v| *v += 1);
    }
}

/// Complete a pending deletion if nothing holds it any more: no finalizers but
/// `foregroundDeletion` (and that one only while dependents remain), and its delay passed.
pub fn try_finish_locked(state: &State, store: &mut Store, uid: &str) {
    let Some((rt, key)) = find_by_uid(store, uid) else {
        return;
    };
    let Some(obj) = store.get(rt, &key) else {
        return;
    };
    if obj.pointer("/metadata/deletionTimestamp").is_none() {
        return;
    }
    let finalizers: Vec<String> = obj
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    if finalizers
        .iter()
        .any(|f| f != "foregroundDeletion" && f != "orphan")
    {
        return;
    }
    if finalizers.iter().any(|f| f == "foregroundDeletion") {
        let deps = dependents(store, uid);
        if !deps.is_empty() {
            // A controller may create dependents after foreground deletion began (the
            // KubeRay sim can add pods mid-reconcile); the garbage collector deletes those
            // too, as the real one does, or the owner would wait forever.
            for (drt, dkey) in deps {
                let deleting = store
                    .get(drt, &dkey)
                    .is_some_and(|d| d.pointer("/metadata/deletionTimestamp").is_some());
                if !deleting {
                    let delay = state.deletion_delay(drt, None);
                    state.delete_locked(store, drt, dkey, Propagation::Background, delay, None);
                }
            }
            return;
        }
    }
    if store
        .deletion_due
        .get(uid)
        .is_some_and(|due| *due > Instant::now())
    {
        return;
    }
    state.remove_locked(store, rt, &key);
}

/// Completes pending deletions whose delay has passed (graceful pod termination, scripted
/// finalizer delays). Runs for the life of the server.
pub async fn gc_loop(state: std::sync::Arc<State>) {
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut store = lock(&state.store);
        let now = Instant::now();
        let due: Vec<String> = store
            .deletion_due
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(u, _)| u.clone())
            .collect();
        for uid in due {
            try_finish_locked(&state, &mut store, &uid);
            // Objects already gone (or held by finalizers) stay out of the hot path.
            if find_by_uid(&store, &uid).is_none() {
                store.deletion_due.remove(&uid);
            }
        }
    }
}
