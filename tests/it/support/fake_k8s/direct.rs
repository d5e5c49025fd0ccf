//! Writes by the simulated controllers and by tests: whole-object edits (status included)
//! that still go through the store's semantics (managed fields, generation, no-op detection).

use std::sync::Arc;

use serde_json::{Value, json};

use super::compare::same_spec;
use super::meta::{ApiError, ApiResult, metadata_mut, name_of, namespace_of, rv_of};
use super::resources::ResourceType;
use super::state::{State, WriteOpts, lock};

impl State {
    /// Read-modify-write by a controller or a test: `f` edits the whole object (status
    /// included); the change is recorded under `manager`. Returns the stored object, shared.
    pub fn mutate(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        manager: &str,
        f: impl FnOnce(&mut Value),
    ) -> ApiResult<Arc<Value>> {
        let mut store = lock(&self.store);
        let key = Self::key(rt, ns, name);
        let live = store
            .get_shared(rt, &key)
            .cloned()
            .ok_or_else(|| ApiError::not_found(rt, name))?;
        let mut new = Value::clone(&live);
        f(&mut new);
        let status_changed = new.get("status") != live.get("status");
        let sub = if status_changed && same_spec(&new, &live) {
            Some("status")
        } else {
            None
        };
        // A controller's write is an Update under its own manager (its User-Agent's program
        // name, e.g. `kuberay-operator`), a status write with `subresource: status`
        // (https://kubernetes.io/docs/reference/using-api/server-side-apply/#managers;
        // apiserver `handlers/create.go` `managerOrUserAgent`).
        let opts = WriteOpts {
            manager: manager.to_string(),
            subresource: sub.map(str::to_string),
            ..Default::default()
        };
        let managed = super::apply::record_update(Some(&live), &new, manager, sub);
        self.commit_update(&mut store, rt, key, &live, new, Some(managed), &opts)
    }

    /// Create (or replace wholesale) an object as a controller would, status included.
    pub fn put_raw(
        &self,
        rt: &'static ResourceType,
        obj: Value,
        manager: &str,
    ) -> ApiResult<Value> {
        let ns = namespace_of(&obj).to_string();
        let name = name_of(&obj).to_string();
        let status = obj.get("status").cloned();
        let created = match self.create(rt, &ns, obj.clone(), &WriteOpts::manager(manager)) {
            Ok(v) => v,
            Err(e) if e.code == 409 => {
                let live = self.get(rt, &ns, &name)?;
                let mut body = obj;
                metadata_mut(&mut body)
                    .insert("resourceVersion".into(), json!(rv_of(&live).to_string()));
                self.replace(rt, &ns, &name, body, &WriteOpts::manager(manager))?
            }
            Err(e) => return Err(e),
        };
        match status {
            Some(s) if rt.has_status() => self
                .mutate(rt, &ns, &name, manager, |o| o["status"] = s)
                .map(|stored| Value::clone(&stored)),
            _ => Ok(created),
        }
    }
}
