//! DRA objects (ComputeDomain, RoCE ResourceClaimTemplate) of a role, with their
//! lifecycle: applied before the RayCluster or RayJob whose pods claim them, then given
//! an ownerReference to it, so Kubernetes garbage-collects them with their owner even if
//! nrl is killed (no leaks on timeouts, Ctrl-C or `--no-wait`).

use std::time::Duration;

use serde_json::{Value as Json, json};

use crate::config::schema::{ClusterSpec, InfraConfig, Role};
use crate::diag::Result;
use crate::k8s::resources::by_kind;
use crate::k8s::{ApplyOptions, K8s};
use crate::render::dra::{DraKind, dra_object};
use crate::render::raycluster::dra_needed;

use super::owner::stamp_owner;
use crate::launch::progress::Progress;

/// The DRA manifests a role's workers claim, in discovery order, labelled
/// `nrl-k8s/owner: <owner>` (unless `owner` is not a valid label value, e.g. empty).
pub fn dra_objects(
    infra: &InfraConfig,
    cluster: &ClusterSpec,
    role: Role,
    owner: &str,
) -> Vec<Json> {
    dra_needed(cluster, role)
        .into_iter()
        .map(|(kind, name)| {
            let mut obj = dra_object(kind, &name, &infra.namespace);
            stamp_owner(&mut obj, owner);
            obj.to_json()
        })
        .collect()
}

fn describe(obj: &Json) -> String {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or("?");
    match obj.get("kind").and_then(Json::as_str) {
        Some(k) if k == DraKind::Roce.kind() => format!("RoCE ResourceClaimTemplate {name}"),
        Some(k) => format!("{k} {name}"),
        None => name.to_string(),
    }
}

/// An ownerReference to a live object (it must carry its uid).
pub fn owner_reference(owner: &Json) -> Option<Json> {
    let uid = owner.pointer("/metadata/uid").and_then(Json::as_str)?;
    Some(json!({
        "apiVersion": owner.get("apiVersion")?,
        "kind": owner.get("kind")?,
        "name": owner.pointer("/metadata/name")?,
        "uid": uid,
        "blockOwnerDeletion": true,
    }))
}

fn with_owner(obj: &Json, owner: Option<&Json>) -> Json {
    let mut o = obj.clone();
    if let (Some(r), Some(meta)) = (
        owner.and_then(owner_reference),
        o.get_mut("metadata").and_then(Json::as_object_mut),
    ) {
        meta.insert("ownerReferences".into(), json!([r]));
    }
    o
}

/// Apply a role's DRA objects (server-side apply, so re-running is harmless). When the
/// owner already exists (`owner`: the live RayCluster or RayJob) they are applied with
/// their ownerReference; otherwise call [`own_dra`] once the owner is created. Returns
/// the manifests, for [`own_dra`].
pub async fn ensure_dra(
    k8s: &K8s,
    infra: &InfraConfig,
    cluster: &ClusterSpec,
    role: Role,
    owner: Option<&Json>,
    user: &str,
    progress: &Progress,
) -> Result<Vec<Json>> {
    let objects = dra_objects(infra, cluster, role, user);
    for obj in &objects {
        progress.line(format!("[{}] ensuring {}", role.as_str(), describe(obj)));
        k8s.apply(&with_owner(obj, owner), ApplyOptions::default())
            .await?;
    }
    Ok(objects)
}

/// Give DRA objects an ownerReference to their (now existing) owner.
pub async fn own_dra(k8s: &K8s, objects: &[Json], owner: &Json) -> Result<()> {
    for obj in objects {
        k8s.apply(&with_owner(obj, Some(owner)), ApplyOptions::default())
            .await?;
    }
    Ok(())
}

/// Delete a role's DRA objects (reverse order, absent ones ignored); with `wait`, until
/// they are gone.
pub async fn delete_dra(
    k8s: &K8s,
    infra: &InfraConfig,
    cluster: &ClusterSpec,
    role: Role,
    wait: Option<Duration>,
    progress: &Progress,
) -> Result<()> {
    for obj in dra_objects(infra, cluster, role, "").iter().rev() {
        let kind = obj.get("kind").and_then(Json::as_str).unwrap_or_default();
        let name = obj
            .pointer("/metadata/name")
            .and_then(Json::as_str)
            .unwrap_or_default();
        let ar = by_kind(kind)?;
        let existed = match wait {
            Some(t) => k8s.delete_and_wait(&ar, &infra.namespace, name, t).await?,
            None => k8s.delete(&ar, &infra.namespace, name).await?,
        };
        if existed {
            progress.line(format!("[{}] deleted {}", role.as_str(), describe(obj)));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_references_need_a_uid() {
        let live = json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
                          "metadata": {"name": "rc", "uid": "u-1"}});
        assert_eq!(
            owner_reference(&live).unwrap(),
            json!({"apiVersion": "ray.io/v1", "kind": "RayCluster", "name": "rc",
                   "uid": "u-1", "blockOwnerDeletion": true})
        );
        assert!(owner_reference(&json!({"metadata": {"name": "rc"}})).is_none());
        let cd = json!({"kind": "ComputeDomain", "metadata": {"name": "cd"}});
        assert_eq!(
            with_owner(&cd, Some(&live))["metadata"]["ownerReferences"][0]["uid"],
            "u-1"
        );
        assert_eq!(describe(&cd), "ComputeDomain cd");
    }
}
