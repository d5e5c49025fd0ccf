//! The resource types the fake serves, and the discovery documents built from them.

use serde_json::{Value, json};

/// One served resource type (group/version/plural), as discovery describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResourceType {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    pub categories: &'static [&'static str],
    /// `status`, `log`, `exec`, `portforward`, `attach`, `scale`.
    pub subresources: &'static [&'static str],
    /// Create-only review resources (SelfSubjectAccessReview) are never stored.
    pub create_only: bool,
}

const CRUD: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// `pods` for the core group, `rayclusters.ray.io` otherwise (as error messages say it).
    pub fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    pub fn verbs(&self) -> &'static [&'static str] {
        if self.create_only { &["create"] } else { CRUD }
    }

    pub fn has_status(&self) -> bool {
        self.subresources.contains(&"status")
    }

    /// The URL of a collection or object of this type.
    pub fn path(&self, namespace: Option<&str>, name: Option<&str>) -> String {
        let mut out = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        if let (true, Some(ns)) = (self.namespaced, namespace) {
            out.push_str("/namespaces/");
            out.push_str(ns);
        }
        out.push('/');
        out.push_str(self.plural);
        if let Some(n) = name {
            out.push('/');
            out.push_str(n);
        }
        out
    }
}

macro_rules! rt {
    ($g:expr, $v:expr, $k:expr, $p:expr, $s:expr, $ns:expr, $short:expr, $sub:expr) => {
        ResourceType {
            group: $g,
            version: $v,
            kind: $k,
            plural: $p,
            singular: $s,
            namespaced: $ns,
            short_names: $short,
            categories: &[],
            subresources: $sub,
            create_only: false,
        }
    };
}

pub static PODS: ResourceType = ResourceType {
    categories: &["all"],
    ..rt!(
        "",
        "v1",
        "Pod",
        "pods",
        "pod",
        true,
        &["po"],
        &["status", "log", "exec", "portforward"]
    )
};
pub static SERVICES: ResourceType = ResourceType {
    categories: &["all"],
    ..rt!(
        "",
        "v1",
        "Service",
        "services",
        "service",
        true,
        &["svc"],
        &["status", "proxy"]
    )
};
pub static CONFIGMAPS: ResourceType = rt!(
    "",
    "v1",
    "ConfigMap",
    "configmaps",
    "configmap",
    true,
    &["cm"],
    &[]
);
pub static SECRETS: ResourceType = rt!("", "v1", "Secret", "secrets", "secret", true, &[], &[]);
pub static SERVICEACCOUNTS: ResourceType = rt!(
    "",
    "v1",
    "ServiceAccount",
    "serviceaccounts",
    "serviceaccount",
    true,
    &["sa"],
    &[]
);
pub static PVCS: ResourceType = rt!(
    "",
    "v1",
    "PersistentVolumeClaim",
    "persistentvolumeclaims",
    "persistentvolumeclaim",
    true,
    &["pvc"],
    &["status"]
);
pub static NAMESPACES: ResourceType = rt!(
    "",
    "v1",
    "Namespace",
    "namespaces",
    "namespace",
    false,
    &["ns"],
    &["status", "finalize"]
);
pub static EVENTS: ResourceType = rt!("", "v1", "Event", "events", "event", true, &["ev"], &[]);
pub static DEPLOYMENTS: ResourceType = ResourceType {
    categories: &["all"],
    ..rt!(
        "apps",
        "v1",
        "Deployment",
        "deployments",
        "deployment",
        true,
        &["deploy"],
        &["status", "scale"]
    )
};
pub static JOBS: ResourceType = ResourceType {
    categories: &["all"],
    ..rt!("batch", "v1", "Job", "jobs", "job", true, &[], &["status"])
};
pub static RAYCLUSTERS: ResourceType = ResourceType {
    categories: &["all"],
    ..rt!(
        "ray.io",
        "v1",
        "RayCluster",
        "rayclusters",
        "raycluster",
        true,
        &[],
        &["status"]
    )
};
pub static RAYJOBS: ResourceType = ResourceType {
    categories: &["all"],
    ..rt!(
        "ray.io",
        "v1",
        "RayJob",
        "rayjobs",
        "rayjob",
        true,
        &[],
        &["status"]
    )
};
pub static RESOURCECLAIMTEMPLATES: ResourceType = rt!(
    "resource.k8s.io",
    "v1",
    "ResourceClaimTemplate",
    "resourceclaimtemplates",
    "resourceclaimtemplate",
    true,
    &[],
    &[]
);
pub static COMPUTEDOMAINS: ResourceType = rt!(
    "resource.nvidia.com",
    "v1beta1",
    "ComputeDomain",
    "computedomains",
    "computedomain",
    true,
    &[],
    &["status"]
);
/// KAI scheduler queues (cluster-scoped), so preflight can look queues up.
pub static KAI_QUEUES: ResourceType = rt!(
    "scheduling.run.ai",
    "v2",
    "Queue",
    "queues",
    "queue",
    false,
    &[],
    &["status"]
);
pub static SSAR: ResourceType = ResourceType {
    create_only: true,
    ..rt!(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        false,
        &[],
        &[]
    )
};
pub static CRDS: ResourceType = rt!(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    "customresourcedefinition",
    false,
    &["crd", "crds"],
    &["status"]
);

/// Nodes (cluster-scoped), so diagnose can read allocatable resources and taints; tests
/// create them with `put`.
pub static NODES: ResourceType = rt!(
    "",
    "v1",
    "Node",
    "nodes",
    "node",
    false,
    &["no"],
    &["status"]
);
/// DRA ResourceClaims (resource.k8s.io/v1).
pub static RESOURCECLAIMS: ResourceType = rt!(
    "resource.k8s.io",
    "v1",
    "ResourceClaim",
    "resourceclaims",
    "resourceclaim",
    true,
    &[],
    &["status"]
);

/// Every served type, in discovery order.
pub static ALL: &[&ResourceType] = &[
    &PODS,
    &SERVICES,
    &CONFIGMAPS,
    &SECRETS,
    &SERVICEACCOUNTS,
    &PVCS,
    &NAMESPACES,
    &EVENTS,
    &DEPLOYMENTS,
    &JOBS,
    &RAYCLUSTERS,
    &RAYJOBS,
    &RESOURCECLAIMTEMPLATES,
    &RESOURCECLAIMS,
    &NODES,
    &COMPUTEDOMAINS,
    &KAI_QUEUES,
    &SSAR,
    &CRDS,
];

/// The resource served at group/version/plural, if any.
pub fn lookup(group: &str, version: &str, plural: &str) -> Option<&'static ResourceType> {
    ALL.iter()
        .copied()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The resource whose objects have this apiVersion and kind.
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static ResourceType> {
    ALL.iter()
        .copied()
        .find(|r| r.api_version() == api_version && r.kind == kind)
}

fn group_versions() -> Vec<(&'static str, &'static str)> {
    let mut out: Vec<(&str, &str)> = Vec::new();
    for r in ALL {
        if !r.group.is_empty() && !out.contains(&(r.group, r.version)) {
            out.push((r.group, r.version));
        }
    }
    out
}

pub fn is_served_group_version(group: &str, version: &str) -> bool {
    ALL.iter().any(|r| r.group == group && r.version == version)
}

pub fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": "37",
        "gitVersion": "v1.37.0-fake",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-11-01T00:00:00Z",
        "goVersion": "go1.26.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

pub fn core_api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

pub fn api_group_list() -> Value {
    let groups: Vec<Value> = group_versions()
        .into_iter()
        .map(|(g, v)| {
            let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
            json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// The APIResourceList of one group/version (`""` is the core group).
pub fn api_resource_list(group: &str, version: &str) -> Value {
    let mut resources = Vec::new();
    for r in ALL
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs(),
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        resources.push(entry);
        for sub in r.subresources {
            let (kind, verbs): (&str, &[&str]) = match *sub {
                "status" => (r.kind, &["get", "patch", "update"]),
                "log" => ("Pod", &["get"]),
                "exec" => ("PodExecOptions", &["create", "get"]),
                "portforward" => ("PodPortForwardOptions", &["create", "get"]),
                "scale" => ("Scale", &["get", "patch", "update"]),
                "proxy" => (
                    "ServiceProxyOptions",
                    &["create", "delete", "get", "patch", "update"],
                ),
                "finalize" => (r.kind, &["update"]),
                _ => (r.kind, &["get"]),
            };
            resources.push(json!({
                "name": format!("{}/{}", r.plural, sub),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": verbs,
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources
    })
}

/// Aggregated discovery (`as=APIGroupDiscoveryList`) for `/api` (core) or `/apis`.
pub fn aggregated_discovery(core: bool) -> Value {
    let mut gvs: Vec<(&str, &str)> = if core {
        vec![("", "v1")]
    } else {
        group_versions()
    };
    gvs.dedup();
    let items: Vec<Value> = gvs
        .into_iter()
        .map(|(g, v)| {
            let resources: Vec<Value> = ALL
                .iter()
                .filter(|r| r.group == g && r.version == v)
                .map(|r| {
                    let subs: Vec<Value> = r
                        .subresources
                        .iter()
                        .map(|s| json!({"subresource": s, "verbs": ["get"], "responseKind": {"group": g, "version": v, "kind": r.kind}}))
                        .collect();
                    json!({
                        "resource": r.plural,
                        "responseKind": {"group": g, "version": v, "kind": r.kind},
                        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                        "singularResource": r.singular,
                        "verbs": r.verbs(),
                        "shortNames": r.short_names,
                        "categories": r.categories,
                        "subresources": subs,
                    })
                })
                .collect();
            json!({
                "metadata": {"name": g},
                "versions": [{"version": v, "resources": resources, "freshness": "Current"}]
            })
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items
    })
}
