//! Objects that live and die with another: ownerReferences (so Kubernetes garbage-collects
//! DRA objects and run records even when nrl is killed), applying a set of objects under
//! an owner, and foreground deletion that waits until the dependents are gone too.

use std::time::Duration;

use kube::discovery::ApiResource;
use serde_json::{Value as Json, json};

use crate::diag::{Diag, Result};
use crate::k8s::resources::api_resource;
use crate::k8s::wait::str_at;
use crate::k8s::{ApplyOptions, K8s, ObjectRef, Propagation};

/// An ownerReference to the live object `owner` (it must carry `metadata.uid`). Not a
/// controller reference and no `blockOwnerDeletion`, which would need `update` on the
/// owner's `finalizers` subresource, a permission many users lack.
pub fn owner_ref(owner: &Json) -> Result<Json> {
    let field = |p: &str| str_at(owner, p).unwrap_or("");
    let (api_version, kind, name, uid) = (
        field("/apiVersion"),
        field("/kind"),
        field("/metadata/name"),
        field("/metadata/uid"),
    );
    if api_version.is_empty() || kind.is_empty() || name.is_empty() || uid.is_empty() {
        return Err(Diag::api(
            "nrl::k8s::owner",
            format!("cannot reference {kind} `{name}` as an owner: it has no uid"),
        ));
    }
    Ok(json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}))
}

/// `obj` with `metadata.ownerReferences` set to `owners` (replacing any).
pub fn with_owners(obj: &Json, owners: &[Json]) -> Json {
    let mut out = obj.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Json::as_object_mut) {
        meta.insert("ownerReferences".into(), Json::Array(owners.to_vec()));
    }
    out
}

/// uids of the owners of a live object.
pub fn owner_uids(obj: &Json) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Json::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r.get("uid").and_then(Json::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `Kind/name` of each owner of a live object.
pub fn owner_names(obj: &Json) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Json::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| {
                    format!(
                        "{}/{}",
                        r.get("kind").and_then(Json::as_str).unwrap_or("?"),
                        r.get("name").and_then(Json::as_str).unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Server-side apply each object with `owners` as its ownerReferences. Returns the live
/// objects.
pub async fn apply_owned(k8s: &K8s, objects: &[Json], owners: &[Json]) -> Result<Vec<Json>> {
    let mut out = Vec::with_capacity(objects.len());
    for obj in objects {
        out.push(
            k8s.apply(&with_owners(obj, owners), ApplyOptions::default())
                .await?,
        );
    }
    Ok(out)
}

/// The kube resource of a manifest.
pub fn resource_of(obj: &Json) -> Result<ApiResource> {
    let s = |p: &str| str_at(obj, p).unwrap_or("");
    api_resource(s("/apiVersion"), s("/kind"))
}

/// Delete `name` with foreground propagation (dependents first, the owner last) and wait
/// until it is gone. Returns whether it existed.
pub async fn delete_foreground(
    k8s: &K8s,
    ar: &ApiResource,
    ns: &str,
    name: &str,
    timeout: Duration,
) -> Result<bool> {
    let existed = k8s
        .delete_with(ar, ns, name, Propagation::Foreground)
        .await?;
    if existed {
        k8s.wait_deleted(ar, ns, name, timeout).await?;
    }
    Ok(existed)
}

/// Wait until each of `objects` (manifests) is gone, e.g. dependents the garbage
/// collector is still removing.
pub async fn wait_all_deleted(k8s: &K8s, objects: &[Json], timeout: Duration) -> Result<()> {
    for obj in objects {
        let r = ObjectRef::of(obj, &k8s.namespace)?;
        k8s.wait_deleted(&r.resource, &r.namespace, &r.name, timeout)
            .await?;
    }
    Ok(())
}

/// Delete each of `objects` (manifests), ignoring the ones already gone. Used to undo a
/// half-done launch; errors are collected, not fatal.
pub async fn delete_all(k8s: &K8s, objects: &[Json]) -> Vec<Diag> {
    let mut errors = Vec::new();
    for obj in objects {
        match ObjectRef::of(obj, &k8s.namespace) {
            Ok(r) => {
                if let Err(e) = k8s.delete(&r.resource, &r.namespace, &r.name).await {
                    errors.push(e);
                }
            }
            Err(e) => errors.push(e),
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_refs_name_the_live_object() {
        let live = json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
                          "metadata": {"name": "rj", "uid": "u-1"}});
        let r = owner_ref(&live).unwrap();
        assert_eq!(
            r,
            json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj", "uid": "u-1"})
        );
        let manifest = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let owned = with_owners(&manifest, &[r]);
        assert_eq!(owner_uids(&owned), ["u-1"]);
        assert_eq!(owner_names(&owned), ["RayJob/rj"]);
        let no_uid =
            json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "rj"}});
        assert_eq!(owner_ref(&no_uid).unwrap_err().code, "nrl::k8s::owner");
    }
}
