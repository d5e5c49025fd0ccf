//! The kinds nrl creates or reads, as kube `ApiResource`s. A static table, so no discovery
//! round-trip is needed before the first call.

use kube::discovery::ApiResource;

use crate::diag::{Diag, Result};

/// (apiVersion, kind, plural, namespaced)
const KINDS: &[(&str, &str, &str, bool)] = &[
    ("ray.io/v1", "RayCluster", "rayclusters", true),
    ("ray.io/v1", "RayJob", "rayjobs", true),
    (
        "resource.nvidia.com/v1beta1",
        "ComputeDomain",
        "computedomains",
        true,
    ),
    (
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        "resourceclaimtemplates",
        true,
    ),
    ("apps/v1", "Deployment", "deployments", true),
    ("v1", "Service", "services", true),
    ("v1", "ConfigMap", "configmaps", true),
    ("v1", "Secret", "secrets", true),
    ("v1", "Pod", "pods", true),
    (
        "v1",
        "PersistentVolumeClaim",
        "persistentvolumeclaims",
        true,
    ),
    ("v1", "ServiceAccount", "serviceaccounts", true),
    ("batch/v1", "Job", "jobs", true),
];

/// Look up a kind by apiVersion and kind.
pub fn api_resource(api_version: &str, kind: &str) -> Result<ApiResource> {
    let Some((av, k, plural, _)) = KINDS
        .iter()
        .find(|(av, k, _, _)| *av == api_version && *k == kind)
    else {
        return Err(Diag::new(
            "nrl::k8s::kind",
            format!("nrl does not manage {kind} ({api_version})"),
        )
        .help(format!(
            "supported kinds: {}",
            KINDS
                .iter()
                .map(|(_, k, _, _)| *k)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let (group, version) = match av.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), av.to_string()),
    };
    Ok(ApiResource {
        group,
        version,
        api_version: av.to_string(),
        kind: k.to_string(),
        plural: plural.to_string(),
    })
}

/// Shorthand for kinds by name only (`RayCluster`).
pub fn by_kind(kind: &str) -> Result<ApiResource> {
    match KINDS.iter().find(|(_, k, _, _)| *k == kind) {
        Some((av, k, _, _)) => api_resource(av, k),
        None => api_resource("", kind),
    }
}

/// A core/v1 kind nrl only reads (events, nodes), outside the managed kinds above.
pub fn core_v1(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_kinds() {
        let r = api_resource("ray.io/v1", "RayJob").unwrap();
        assert_eq!(r.plural, "rayjobs");
        assert_eq!(r.group, "ray.io");
        let c = api_resource("v1", "ConfigMap").unwrap();
        assert_eq!(c.group, "");
        assert_eq!(c.version, "v1");
        assert_eq!(
            api_resource("v1", "Node").unwrap_err().code,
            "nrl::k8s::kind"
        );
        assert_eq!(by_kind("Job").unwrap().api_version, "batch/v1");
    }
}
