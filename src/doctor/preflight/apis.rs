//! Are the APIs the manifests need served? Checked through discovery: every user may read
//! it, and it says what the server actually serves (a CRD can exist with the version nrl
//! writes not served).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroupList;
use kube::discovery::ApiResource;

use crate::config::node::Node;
use crate::config::source::Span;
use crate::diag::Result;
use crate::doctor::Finding;
use crate::doctor::pods::object_desc;
use crate::doctor::rules::MISSING_CRD;
use crate::k8s::K8s;
use crate::k8s::resources::api_resource;

/// Groups every conformant cluster serves; only the others are checked.
const BUILT_IN: &[&str] = &["", "apps", "batch"];

/// KAI's API group and the resource its queues are.
const KAI_GROUP: &str = "scheduling.run.ai";
const KAI_QUEUES: &str = "queues";

/// An API a manifest needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needed {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    /// `RayCluster/name` of the first manifest that needs it.
    pub first_user: String,
}

/// The non-built-in APIs of the manifests, in first-use order.
pub fn needed_apis(manifests: &[Node]) -> Vec<Needed> {
    let mut out: Vec<Needed> = Vec::new();
    for m in manifests {
        let s = |p: &str| m.get_path(p).and_then(Node::as_str).unwrap_or("");
        let Ok(ar) = api_resource(s("apiVersion"), s("kind")) else {
            continue;
        };
        if BUILT_IN.contains(&ar.group.as_str()) {
            continue;
        }
        if out
            .iter()
            .any(|n| n.group == ar.group && n.version == ar.version && n.plural == ar.plural)
        {
            continue;
        }
        out.push(Needed {
            group: ar.group,
            version: ar.version,
            kind: ar.kind,
            plural: ar.plural,
            first_user: object_desc(m),
        });
    }
    out
}

/// What discovery says about one needed API (before asking for the resource list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupStatus {
    NoGroup,
    /// The group is served, but not this version; the versions that are.
    NoVersion(Vec<String>),
    Served,
}

pub fn group_status(groups: &APIGroupList, n: &Needed) -> GroupStatus {
    let Some(g) = groups.groups.iter().find(|g| g.name == n.group) else {
        return GroupStatus::NoGroup;
    };
    if g.versions.iter().any(|v| v.version == n.version) {
        GroupStatus::Served
    } else {
        GroupStatus::NoVersion(g.versions.iter().map(|v| v.version.clone()).collect())
    }
}

fn install_hint(group: &str) -> &'static str {
    match group {
        "ray.io" => "install the KubeRay operator (its CRDs serve ray.io/v1 RayCluster and RayJob)",
        "resource.nvidia.com" => {
            "install NVIDIA's DRA driver for GPUs (it brings the ComputeDomain CRD)"
        }
        "resource.k8s.io" => "DRA's resource.k8s.io/v1 needs Kubernetes 1.34 or newer",
        _ => "install the operator that provides this CRD",
    }
}

pub(super) async fn check(
    k8s: &K8s,
    groups: &APIGroupList,
    manifests: &[Node],
    anchor: Option<Span>,
    out: &mut Vec<Finding>,
) -> Result<()> {
    for n in needed_apis(manifests) {
        let av = format!("{}/{}", n.group, n.version);
        let problem = match group_status(groups, &n) {
            GroupStatus::NoGroup => Some(format!(
                "the API group `{}` is not served: the {} CRD is not installed",
                n.group, n.kind
            )),
            GroupStatus::NoVersion(v) => Some(format!(
                "`{av}` is not served (the server has {} of `{}`), so {} objects cannot be created",
                if v.is_empty() {
                    "no version".to_string()
                } else {
                    v.join(", ")
                },
                n.group,
                n.kind
            )),
            GroupStatus::Served => match k8s.served_resources(&av).await? {
                Some(list) if list.contains(&n.plural) => None,
                _ => Some(format!("`{}` is not served in `{av}`", n.plural)),
            },
        };
        if let Some(msg) = problem {
            let span = if n.group == "ray.io" { anchor } else { None };
            out.push(
                Finding::new(MISSING_CRD, msg)
                    .at(span, format!("needs {} ({av})", n.kind))
                    .fix(install_hint(&n.group))
                    .note(format!("needed by {}", n.first_user)),
            );
        }
    }
    Ok(())
}

/// The KAI Queue resource when KAI is installed (its group and queues are served).
pub(crate) async fn kai_queue_resource(
    k8s: &K8s,
    groups: &APIGroupList,
) -> Result<Option<ApiResource>> {
    let Some(g) = groups.groups.iter().find(|g| g.name == KAI_GROUP) else {
        return Ok(None);
    };
    let Some(v) = g.preferred_version.as_ref().or_else(|| g.versions.first()) else {
        return Ok(None);
    };
    let served = k8s.served_resources(&v.group_version).await?;
    if !served.is_some_and(|l| l.iter().any(|r| r == KAI_QUEUES)) {
        return Ok(None);
    }
    Ok(Some(ApiResource {
        group: KAI_GROUP.to_string(),
        version: v.version.clone(),
        api_version: v.group_version.clone(),
        kind: "Queue".to_string(),
        plural: KAI_QUEUES.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroup, GroupVersionForDiscovery};

    fn group(name: &str, versions: &[&str]) -> APIGroup {
        APIGroup {
            name: name.to_string(),
            versions: versions
                .iter()
                .map(|v| GroupVersionForDiscovery {
                    group_version: format!("{name}/{v}"),
                    version: v.to_string(),
                })
                .collect(),
            ..APIGroup::default()
        }
    }

    fn manifest(av: &str, kind: &str) -> Node {
        Node::from_json(
            &serde_json::json!({"apiVersion": av, "kind": kind, "metadata": {"name": "x"}}),
        )
    }

    #[test]
    fn needed_apis_skip_built_in_groups_and_repeats() {
        let m = [
            manifest("ray.io/v1", "RayCluster"),
            manifest("ray.io/v1", "RayCluster"),
            manifest("apps/v1", "Deployment"),
            manifest("v1", "Service"),
            manifest("ray.io/v1", "RayJob"),
            manifest("resource.nvidia.com/v1beta1", "ComputeDomain"),
        ];
        let kinds: Vec<_> = needed_apis(&m).into_iter().map(|n| n.kind).collect();
        assert_eq!(kinds, ["RayCluster", "RayJob", "ComputeDomain"]);
    }

    #[test]
    fn group_status_says_what_is_missing() {
        let groups = APIGroupList {
            groups: vec![group("ray.io", &["v1alpha1"]), group("apps", &["v1"])],
        };
        let need = needed_apis(&[manifest("ray.io/v1", "RayJob")]).remove(0);
        assert_eq!(
            group_status(&groups, &need),
            GroupStatus::NoVersion(vec!["v1alpha1".into()])
        );
        let cd = needed_apis(&[manifest("resource.nvidia.com/v1beta1", "ComputeDomain")]).remove(0);
        assert_eq!(group_status(&groups, &cd), GroupStatus::NoGroup);
        let groups = APIGroupList {
            groups: vec![group("ray.io", &["v1", "v1alpha1"])],
        };
        assert_eq!(group_status(&groups, &need), GroupStatus::Served);
    }
}
