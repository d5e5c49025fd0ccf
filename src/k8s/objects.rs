//! Object operations on the kinds nrl manages: server-side apply (field manager `nrl`),
//! get, list, delete, and drift detection by server-side dry-run apply.

use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PropagationPolicy,
    ValidationDirective,
};
use kube::discovery::ApiResource;
use serde_json::Value as Json;

use super::client::K8s;
use std::future::Future;

use super::errors::{
    Action, FieldConflict, apply_conflicts, conflict_diag, is_not_found, timeout_diag, to_diag,
};
use super::resources::api_resource;
use super::retry::{Backoff, retry};
use crate::diag::{Diag, Result};

pub const FIELD_MANAGER: &str = "nrl";

/// Objects per page of a list: kubectl's `--chunk-size` default.
pub const LIST_PAGE: u32 = 500;

/// apiVersion, kind, name and namespace of a manifest.
#[derive(Debug, Clone)]
pub struct ObjectRef {
    pub resource: ApiResource,
    pub name: String,
    pub namespace: String,
}

impl ObjectRef {
    pub fn of(obj: &Json, default_ns: &str) -> Result<ObjectRef> {
        let s = |p: &str| obj.pointer(p).and_then(Json::as_str).unwrap_or("");
        let resource = api_resource(s("/apiVersion"), s("/kind"))?;
        let name = s("/metadata/name").to_string();
        if name.is_empty() {
            return Err(Diag::new(
                "nrl::k8s::name",
                format!("{} has no metadata.name", resource.kind),
            ));
        }
        let ns = match s("/metadata/namespace") {
            "" => default_ns.to_string(),
            ns => ns.to_string(),
        };
        Ok(ObjectRef {
            resource,
            name,
            namespace: ns,
        })
    }

    pub fn describe(&self) -> String {
        format!("{}/{}", self.resource.kind, self.name)
    }
}

/// Options for [`K8s::apply`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ApplyOptions {
    pub dry_run: bool,
    /// Take over fields owned by another field manager (`force=true`, kubectl's
    /// `--force-conflicts`). Without it such an apply fails with a conflict diagnostic.
    pub force: bool,
}

/// What a server-side apply came to.
enum Applied {
    Ok(Json),
    /// Other field managers own fields the apply would change (409, not forced).
    Conflicts(Vec<FieldConflict>),
}

/// How dependents of a deleted object are removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Propagation {
    /// The object goes at once; the garbage collector removes dependents afterwards.
    #[default]
    Background,
    /// The object stays (with a deletionTimestamp) until its dependents are gone, so
    /// "deleted" means its pods are gone too.
    Foreground,
}

impl K8s {
    pub fn api(&self, ar: &ApiResource, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), ns, ar)
    }

    /// Run an idempotent API call with retries on transient errors, all within the
    /// request deadline; errors become diagnostics naming `action`.
    pub async fn call<T, F, Fut>(&self, action: Action<'_>, f: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = std::result::Result<T, kube::Error>>,
    {
        match tokio::time::timeout(self.request_timeout, retry(Backoff::default(), f)).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(to_diag(e, &action)),
            Err(_) => Err(timeout_diag(&action, self.request_timeout)),
        }
    }

    /// Server-side apply with field manager `nrl` (idempotent, so retried on transient
    /// errors). The object's namespace defaults to the client's. Unknown fields are refused
    /// (`fieldValidation=Strict`) rather than dropped; a conflict with another field
    /// manager fails with a diagnostic naming it and its fields unless `opts.force`.
    pub async fn apply(&self, obj: &Json, opts: ApplyOptions) -> Result<Json> {
        let r = ObjectRef::of(obj, &self.namespace)?;
        match self.apply_outcome(&r, obj, opts).await? {
            Applied::Ok(v) => Ok(v),
            Applied::Conflicts(c) => {
                let target = Action::new("patch", &r.resource.plural, &r.namespace)
                    .named(&r.name)
                    .target();
                Err(conflict_diag(&target, &c))
            }
        }
    }

    async fn apply_outcome(
        &self,
        r: &ObjectRef,
        obj: &Json,
        opts: ApplyOptions,
    ) -> Result<Applied> {
        let api = self.api(&r.resource, &r.namespace);
        let mut pp = PatchParams::apply(FIELD_MANAGER);
        pp.force = opts.force;
        pp.dry_run = opts.dry_run;
        // Strict: an unknown field is an error on the server too, never silently pruned
        // (https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation).
        pp.field_validation = Some(ValidationDirective::Strict);
        let mut body = obj.clone();
        if let Some(m) = body.pointer_mut("/metadata").and_then(Json::as_object_mut) {
            m.insert("namespace".into(), Json::String(r.namespace.clone()));
        }
        let patch = Patch::Apply(&body);
        let action = Action::new("patch", &r.resource.plural, &r.namespace).named(&r.name);
        let call = retry(Backoff::default(), || api.patch(&r.name, &pp, &patch));
        match tokio::time::timeout(self.request_timeout, call).await {
            Ok(Ok(v)) => Ok(Applied::Ok(to_json(v)?)),
            Ok(Err(e)) => match apply_conflicts(&e) {
                Some(c) => Ok(Applied::Conflicts(c)),
                None => Err(to_diag(e, &action)),
            },
            Err(_) => Err(timeout_diag(&action, self.request_timeout)),
        }
    }

    /// Set a few fields of an existing object with a JSON merge patch (an update by
    /// field manager `nrl`; setting values is idempotent, so retried on transient errors).
    ///
    /// For a field nrl sets after the object was applied (a RayJob's `spec.jobId` once the
    /// job is submitted): re-applying the whole object instead would conflict with the
    /// controllers that updated it meanwhile. KubeRay's RayJob controller adds its finalizer
    /// with an update of the whole object, which rewrites `spec.rayClusterSpec.
    /// workerGroupSpecs` (an atomic list; its Go types add `scaleStrategy: {}`) and so takes
    /// that list over from nrl (ray-operator v1.5.1 controllers/ray/rayjob_controller.go
    /// `Reconcile`, `r.Update(ctx, rayJobInstance)`; seen on the testbed).
    pub async fn merge_patch(
        &self,
        ar: &ApiResource,
        ns: &str,
        name: &str,
        patch: &Json,
    ) -> Result<Json> {
        let api = self.api(ar, ns);
        let pp = PatchParams {
            field_manager: Some(FIELD_MANAGER.to_string()),
            field_validation: Some(ValidationDirective::Strict),
            ..Default::default()
        };
        let patch = Patch::Merge(patch);
        let action = Action::new("patch", &ar.plural, ns).named(name);
        let v = self.call(action, || api.patch(name, &pp, &patch)).await?;
        to_json(v)
    }

    /// Get an object; `None` if it does not exist.
    pub async fn get(&self, ar: &ApiResource, ns: &str, name: &str) -> Result<Option<Json>> {
        let api = self.api(ar, ns);
        let action = Action::new("get", &ar.plural, ns).named(name);
        match self.call(action, || api.get_opt(name)).await? {
            Some(o) => Ok(Some(to_json(o)?)),
            None => Ok(None),
        }
    }

    /// Get a cluster-scoped object (a KAI Queue, a CRD); `None` if it does not exist.
    pub async fn get_cluster_scoped(&self, ar: &ApiResource, name: &str) -> Result<Option<Json>> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), ar);
        match retry(Backoff::default(), || api.get_opt(name)).await {
            Ok(o) => Ok(o.and_then(|o| serde_json::to_value(o).ok())),
            Err(e) => Err(to_diag(
                e,
                &Action {
                    verb: "get",
                    resource: &ar.plural,
                    name: Some(name),
                    namespace: None,
                },
            )),
        }
    }

    /// List objects, optionally by label selector (`a=b,c!=d`).
    pub async fn list(
        &self,
        ar: &ApiResource,
        ns: &str,
        labels: Option<&str>,
    ) -> Result<Vec<Json>> {
        self.list_map(ar, ns, labels, |o| o).await
    }

    /// List objects a page at a time (kubectl's chunked list: `limit` and `continue`,
    /// [`LIST_PAGE`] per page), turning each into what the caller keeps as its page
    /// arrives: a namespace of thousands of objects never sits in memory whole.
    pub async fn list_map<T>(
        &self,
        ar: &ApiResource,
        ns: &str,
        labels: Option<&str>,
        mut keep: impl FnMut(Json) -> T,
    ) -> Result<Vec<T>> {
        let api = self.api(ar, ns);
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(LIST_PAGE);
            if let Some(l) = labels {
                lp = lp.labels(l);
            }
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let page = self
                .call(Action::new("list", &ar.plural, ns), || api.list(&lp))
                .await?;
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            for item in page.items {
                out.push(keep(to_json(item)?));
            }
            if token.is_none() {
                return Ok(out);
            }
        }
    }

    /// List a cluster-scoped kind (Nodes, KAI Queues).
    pub async fn list_cluster_scoped(&self, ar: &ApiResource) -> Result<Vec<Json>> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), ar);
        let lp = ListParams::default();
        let action = Action {
            verb: "list",
            resource: &ar.plural,
            name: None,
            namespace: None,
        };
        let list = self.call(action, || api.list(&lp)).await?;
        list.items.into_iter().map(to_json).collect()
    }

    /// Delete with background propagation. Returns whether it existed.
    pub async fn delete(&self, ar: &ApiResource, ns: &str, name: &str) -> Result<bool> {
        self.delete_with(ar, ns, name, Propagation::Background)
            .await
    }

    /// Delete with the given propagation. Returns whether it existed (404 is not an error).
    pub async fn delete_with(
        &self,
        ar: &ApiResource,
        ns: &str,
        name: &str,
        propagation: Propagation,
    ) -> Result<bool> {
        let api = self.api(ar, ns);
        let dp = DeleteParams {
            propagation_policy: Some(match propagation {
                Propagation::Background => PropagationPolicy::Background,
                Propagation::Foreground => PropagationPolicy::Foreground,
            }),
            ..DeleteParams::default()
        };
        let action = Action::new("delete", &ar.plural, ns).named(name);
        self.call(action, || async {
            match api.delete(name, &dp).await {
                Ok(_) => Ok(true),
                Err(e) if is_not_found(&e) => Ok(false),
                Err(e) => Err(e),
            }
        })
        .await
    }

    /// Compare a manifest with the live object through a server-side dry-run apply with
    /// the same options as the real apply (`force`): only changes to what nrl would write
    /// count, never server-filled defaults, and a conflict the real apply would meet shows
    /// up here as [`Drift::Conflict`].
    pub async fn drift(&self, obj: &Json, force: bool) -> Result<Drift> {
        let r = ObjectRef::of(obj, &self.namespace)?;
        match self.get(&r.resource, &r.namespace, &r.name).await? {
            None => Ok(Drift::Missing),
            Some(live) => self.drift_from(&live, obj, force).await,
        }
    }

    /// [`K8s::drift`] against a live object already in hand (saves a GET).
    pub async fn drift_from(&self, live: &Json, obj: &Json, force: bool) -> Result<Drift> {
        let r = ObjectRef::of(obj, &self.namespace)?;
        let opts = ApplyOptions {
            dry_run: true,
            force,
        };
        let dry = match self.apply_outcome(&r, obj, opts).await? {
            Applied::Ok(v) => v,
            Applied::Conflicts(c) => return Ok(Drift::Conflict(c)),
        };
        let mut changes = Vec::new();
        diff_paths("", &comparable(live), &comparable(&dry), &mut changes);
        if changes.is_empty() {
            Ok(Drift::None)
        } else {
            Ok(Drift::Changed(changes))
        }
    }

    /// The conflict diagnostic for `obj` (see [`Drift::Conflict`]).
    pub fn conflict_diag(&self, obj: &Json, conflicts: &[FieldConflict]) -> Result<Diag> {
        let r = ObjectRef::of(obj, &self.namespace)?;
        let target = Action::new("patch", &r.resource.plural, &r.namespace)
            .named(&r.name)
            .target();
        Ok(conflict_diag(&target, conflicts))
    }
}

fn to_json(o: impl serde::Serialize) -> Result<Json> {
    serde_json::to_value(o).map_err(|e| {
        Diag::api(
            "nrl::k8s::decode",
            format!("cannot decode an API object: {e}"),
        )
    })
}

/// Result of [`K8s::drift`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drift {
    Missing,
    None,
    /// JSON paths that would change.
    Changed(Vec<String>),
    /// An apply without `force` would fail: other field managers own these fields and
    /// hold other values.
    Conflict(Vec<FieldConflict>),
}

/// The parts of an object an apply can change: labels, annotations, spec (and data).
fn comparable(obj: &Json) -> Json {
    let mut out = serde_json::Map::new();
    for key in ["spec", "data", "stringData"] {
        if let Some(v) = obj.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    for key in ["labels", "annotations"] {
        if let Some(v) = obj.pointer(&format!("/metadata/{key}")) {
            out.insert(format!("metadata.{key}"), v.clone());
        }
    }
    Json::Object(out)
}

/// Paths where `a` and `b` differ.
pub fn diff_paths(prefix: &str, a: &Json, b: &Json, out: &mut Vec<String>) {
    let join = |k: &str| {
        if prefix.is_empty() {
            k.to_string()
        } else {
            format!("{prefix}.{k}")
        }
    };
    match (a, b) {
        (Json::Object(x), Json::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => diff_paths(&join(k), v, w, out),
                    None => out.push(join(k)),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(join(k));
            }
        }
        (Json::Array(x), Json::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff_paths(&format!("{prefix}[{i}]"), v, w, out);
            }
        }
        _ if a != b => out.push(if prefix.is_empty() {
            ".".into()
        } else {
            prefix.into()
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_lists_changed_paths_only() {
        let a = json!({"spec": {"a": 1, "l": [1, {"x": 2}], "same": "s"}});
        let b = json!({"spec": {"a": 2, "l": [1, {"x": 3}], "same": "s", "new": true}});
        let mut out = Vec::new();
        diff_paths("", &a, &b, &mut out);
        assert_eq!(out, ["spec.a", "spec.l[1].x", "spec.new"]);
    }

    #[test]
    fn object_ref_reads_manifest() {
        let m =
            json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "rc"}});
        let r = ObjectRef::of(&m, "ns").unwrap();
        assert_eq!(r.namespace, "ns");
        assert_eq!(r.describe(), "RayCluster/rc");
        let bad = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {}});
        assert!(ObjectRef::of(&bad, "ns").is_err());
    }
}
