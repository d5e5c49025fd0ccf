//! Writes by the simulated controllers and by tests: whole-object edits (status included)
//! that still go through the store's semantics (managed fields, generation, no-op detection).

use serde_json::{Value, json};

use super::compare::same_spec;
use super::meta::{ApiError, ApiResult, metadata_mut, name_of, namespace_of, rv_of};
use super::resources::ResourceType;
use super::state::{State, WriteOpts, lock};

impl State {
    /// Read-modify-write by a controller or a test: `f` edits the whole object (status
    /// included); the change is recorded under `manager`.
    pub fn mutate(
        &self,
        rt: &'static ResourceType,
        ns: &str,
        name: &str,
        manager: &str,
        f: impl FnOnce(&mut Value),
    ) -> ApiResult<Value> {
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
        // Controller writes leave managedFields as they were: tracking every status write of
        // the simulations costs more than it tells (nrl only owns what it applies).
        let opts = WriteOpts {
            manager: manager.to_string(),
            subresource: sub.map(str::to_string),
            ..Default::default()
        };
        self.commit_update(&mut store, rt, key, &live, new, None, &opts)
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
            Some(s) if rt.has_status() => self.mutate(rt, &ns, &name, manager, |o| o["status"] = s),
            _ => Ok(created),
        }
    }
}
