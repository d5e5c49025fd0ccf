//! Permissions around the dev pod, checked with SelfSubjectAccessReview before the pod is
//! created:
//! - the caller's own: what `nrl dev connect` and `nrl dev stop` do;
//! - the pod's service account's (reviewed by impersonation): what `nrl` run inside the
//!   pod needs. When one is denied, the fix is a least-privilege namespaced Role and
//!   RoleBinding, printed for an admin to apply. Unlike the reference there is no
//!   ClusterRole aggregated into the built-in `edit` role (which would have widened `edit`
//!   in every namespace) and no cluster-wide node read.

use futures::StreamExt;
use serde_json::{Value as Json, json};

use crate::config::node::Node;
use crate::diag::{Diag, Result};
use crate::k8s::{K8s, Permission, Subject};

/// Verbs on the objects `nrl` creates and deletes (server-side apply is `patch`).
const MANAGE: &[&str] = &["get", "list", "watch", "create", "patch", "delete"];
const READ: &[&str] = &["get", "list", "watch"];

/// One rule of the Role: API group, resources, verbs.
pub struct Rule {
    pub group: &'static str,
    pub resources: &'static [&'static str],
    pub verbs: &'static [&'static str],
}

/// What `nrl` inside the dev pod needs in its namespace: run and watch RayJobs,
/// RayClusters, Jobs and Deployments with their Services and DRA objects, keep run records
/// in ConfigMaps, read pods, their logs and events, exec and port-forward into them
/// (websocket upgrades are authorized as `get` by older API servers, `create` by newer).
pub const POD_RULES: &[Rule] = &[
    Rule {
        group: "ray.io",
        resources: &["rayclusters", "rayjobs"],
        verbs: MANAGE,
    },
    Rule {
        group: "batch",
        resources: &["jobs"],
        verbs: MANAGE,
    },
    Rule {
        group: "apps",
        resources: &["deployments"],
        verbs: MANAGE,
    },
    Rule {
        group: "",
        resources: &["services", "configmaps"],
        verbs: MANAGE,
    },
    Rule {
        group: "resource.k8s.io",
        resources: &["resourceclaimtemplates"],
        verbs: MANAGE,
    },
    Rule {
        group: "resource.nvidia.com",
        resources: &["computedomains"],
        verbs: MANAGE,
    },
    Rule {
        group: "",
        resources: &["pods", "events"],
        verbs: READ,
    },
    Rule {
        group: "",
        resources: &["pods/log"],
        verbs: &["get"],
    },
    Rule {
        group: "",
        resources: &["pods/exec", "pods/portforward"],
        verbs: &["get", "create"],
    },
];

/// What the caller needs to create, use and remove the dev pod.
pub fn caller_permissions() -> Vec<Permission> {
    [
        ("create", "pods"),
        ("get", "pods"),
        ("watch", "pods"),
        ("delete", "pods"),
        ("create", "pods/exec"),
    ]
    .iter()
    .map(|(v, r)| Permission::new(v, "", r))
    .collect()
}

/// Every (verb, group, resource) of [`POD_RULES`], in order.
pub fn pod_permissions() -> Vec<Permission> {
    POD_RULES
        .iter()
        .flat_map(|r| {
            r.resources.iter().flat_map(move |res| {
                r.verbs
                    .iter()
                    .map(move |v| Permission::new(v, r.group, res))
            })
        })
        .collect()
}

/// The Role and RoleBinding that grant [`POD_RULES`] to `service_account` in `ns`.
pub fn role_manifests(ns: &str, service_account: &str) -> Vec<Json> {
    let rules: Vec<Json> = POD_RULES
        .iter()
        .map(|r| json!({"apiGroups": [r.group], "resources": r.resources, "verbs": r.verbs}))
        .collect();
    vec![
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "nrl-dev-pod", "namespace": ns},
            "rules": rules,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": format!("nrl-dev-pod-{service_account}"), "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "nrl-dev-pod"},
            "subjects": [{"kind": "ServiceAccount", "name": service_account, "namespace": ns}],
        }),
    ]
}

/// [`role_manifests`] as a YAML stream.
pub fn role_yaml(ns: &str, service_account: &str) -> String {
    let docs: Vec<Node> = role_manifests(ns, service_account)
        .iter()
        .map(Node::from_json)
        .collect();
    crate::render::emit::to_yaml_stream(&docs)
}

/// Reviews run at once (each is one small POST).
const CONCURRENT_REVIEWS: usize = 8;

/// The caller's missing permissions for the dev pod, as an error naming them all.
pub async fn check_caller(k8s: &K8s, ns: &str) -> Result<()> {
    let perms = caller_permissions();
    let answers: Vec<Result<crate::k8s::access::Access>> = futures::stream::iter(perms.iter())
        .map(|p| k8s.can_i(&p.verb, &p.group, &p.resource, ns))
        .buffered(CONCURRENT_REVIEWS)
        .collect()
        .await;
    let mut denied = Vec::new();
    for (p, a) in perms.iter().zip(answers) {
        if !a?.allowed {
            denied.push(p.describe());
        }
    }
    if denied.is_empty() {
        return Ok(());
    }
    Err(Diag::api(
        "nrl::dev::forbidden",
        format!(
            "you may not {} in namespace `{ns}`, which the dev pod needs",
            denied.join(", ")
        ),
    )
    .help(format!(
        "ask a cluster admin for these permissions in `{ns}` (the built-in `edit` ClusterRole bound in that namespace has them), or use a namespace where you have them (`-n`)"
    )))
}

/// What the pod's service account may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PodAccess {
    Granted,
    /// These are denied.
    Missing(Vec<Permission>),
    /// The caller may not impersonate the service account, so nothing can be said.
    Unknown,
}

/// Review [`pod_permissions`] as the pod's service account.
pub async fn check_pod_account(k8s: &K8s, ns: &str, service_account: &str) -> Result<PodAccess> {
    let subject = Subject::service_account(ns, service_account);
    let perms = pod_permissions();
    let answers: Vec<Result<Option<crate::k8s::access::Access>>> =
        futures::stream::iter(perms.iter())
            .map(|p| k8s.can_i_as(&subject, p, ns))
            .buffered(CONCURRENT_REVIEWS)
            .collect()
            .await;
    let mut missing = Vec::new();
    for (p, a) in perms.into_iter().zip(answers) {
        match a? {
            None => return Ok(PodAccess::Unknown),
            Some(access) if access.allowed => {}
            Some(_) => missing.push(p),
        }
    }
    Ok(if missing.is_empty() {
        PodAccess::Granted
    } else {
        PodAccess::Missing(missing)
    })
}

/// The error for missing service-account permissions; the Role is printed separately.
pub fn missing_error(ns: &str, service_account: &str, missing: &[Permission]) -> Diag {
    let shown: Vec<String> = missing.iter().take(6).map(Permission::describe).collect();
    let more = missing.len().saturating_sub(shown.len());
    Diag::api(
        "nrl::dev::rbac",
        format!(
            "the dev pod's service account `{service_account}` may not {}{} in namespace `{ns}`, so `nrl` inside the pod would fail",
            shown.join(", "),
            if more > 0 { format!(" (and {more} more)") } else { String::new() }
        ),
    )
    .help(format!(
        "have someone who may manage RBAC in `{ns}` apply the Role and RoleBinding printed above (`nrl dev rbac -n {ns}` prints them again), then retry; --skip-rbac-check starts the pod anyway"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_is_namespaced_least_privilege_and_matches_the_checks() {
        let docs = role_manifests("team-a", "default");
        assert_eq!(docs[0]["kind"], "Role");
        assert_eq!(docs[0]["metadata"]["namespace"], "team-a");
        assert_eq!(docs[1]["subjects"][0]["name"], "default");
        assert_eq!(docs[1]["roleRef"]["kind"], "Role");
        let yaml = role_yaml("team-a", "default");
        for forbidden in [
            "ClusterRole",
            "aggregate-to-edit",
            "nodes",
            "secrets",
            "\"*\"",
        ] {
            assert!(!yaml.contains(forbidden), "{forbidden} in\n{yaml}");
        }
        // Every reviewed permission is granted by exactly one rule.
        for p in pod_permissions() {
            let rules: Vec<_> = POD_RULES
                .iter()
                .filter(|r| {
                    r.group == p.group
                        && r.resources.contains(&p.resource.as_str())
                        && r.verbs.contains(&p.verb.as_str())
                })
                .collect();
            assert_eq!(rules.len(), 1, "{}", p.describe());
        }
        assert!(
            pod_permissions()
                .iter()
                .any(|p| p.describe() == "create rayjobs.ray.io")
        );
    }
}
