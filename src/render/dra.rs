//! DRA objects (ref-config-render §4.4): a ComputeDomain for worker claims named
//! `compute-domain-channel`, a RoCE ResourceClaimTemplate for `roce-channel`.

use crate::config::node::{Node, Value};
use crate::config::schema::{InfraConfig, Role};

use super::meta::{MANAGED_BY, MANAGED_BY_KEY, map_of, set};

pub const COMPUTE_DOMAIN_CLAIM: &str = "compute-domain-channel";
pub const ROCE_CLAIM: &str = "roce-channel";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraKind {
    ComputeDomain,
    Roce,
}

impl DraKind {
    pub fn kind(self) -> &'static str {
        match self {
            DraKind::ComputeDomain => "ComputeDomain",
            DraKind::Roce => "ResourceClaimTemplate",
        }
    }
}

/// `compute-domain-<cluster>-<role>` / `roce-<cluster>-<role>`.
pub fn dra_name(kind: DraKind, cluster: &str, role: Role) -> String {
    match kind {
        DraKind::ComputeDomain => format!("compute-domain-{cluster}-{}", role.as_str()),
        DraKind::Roce => format!("roce-{cluster}-{}", role.as_str()),
    }
}

fn claim_kind(name: &str) -> Option<DraKind> {
    match name {
        COMPUTE_DOMAIN_CLAIM => Some(DraKind::ComputeDomain),
        ROCE_CLAIM => Some(DraKind::Roce),
        _ => None,
    }
}

/// Scan worker groups (never the head) for the two magic claim names, each once, in order.
pub fn discover(cluster: &str, role: Role, spec: &Node) -> Vec<(DraKind, String)> {
    let mut out: Vec<(DraKind, String)> = Vec::new();
    let Some(groups) = spec.get("workerGroupSpecs").and_then(Node::as_list) else {
        return out;
    };
    for g in groups {
        let claims = g
            .get("template")
            .and_then(|t| t.get("spec"))
            .and_then(|s| s.get("resourceClaims"))
            .and_then(Node::as_list);
        for c in claims.into_iter().flatten() {
            let Some(kind) = c.get("name").and_then(Node::as_str).and_then(claim_kind) else {
                continue;
            };
            if !out.iter().any(|(k, _)| *k == kind) {
                out.push((kind, dra_name(kind, cluster, role)));
            }
        }
    }
    out
}

/// Point every magic claim of a worker pod spec at its per-cluster template.
pub fn rewrite_claims(pod: &mut Node, cluster: &str, role: Role) {
    let Some(Node {
        value: Value::List(claims),
        ..
    }) = pod.get_mut("resourceClaims")
    else {
        return;
    };
    for c in claims.iter_mut() {
        let Some(kind) = c.get("name").and_then(Node::as_str).and_then(claim_kind) else {
            continue;
        };
        set(
            c,
            "resourceClaimTemplateName",
            Node::str(dra_name(kind, cluster, role)),
        );
    }
}

fn envelope(api: &str, kind: &str, name: &str, ns: &str, spec: Node) -> Node {
    map_of(vec![
        ("apiVersion", Node::str(api)),
        ("kind", Node::str(kind)),
        (
            "metadata",
            map_of(vec![
                ("name", Node::str(name)),
                ("namespace", Node::str(ns)),
                (
                    "labels",
                    map_of(vec![(MANAGED_BY_KEY, Node::str(MANAGED_BY))]),
                ),
            ]),
        ),
        ("spec", spec),
    ])
}

/// [`dra_object`] in the infra's namespace, which points at the infra's `namespace` line as
/// the clusters' does: a bad namespace is then one problem of that line, not one per object.
pub fn infra_dra_object(kind: DraKind, name: &str, infra: &InfraConfig) -> Node {
    let mut obj = dra_object(kind, name, &infra.namespace);
    if let Some(ns) = obj.get_path_mut("metadata.namespace") {
        ns.span = infra.source.get("namespace").and_then(|n| n.span);
    }
    obj
}

/// The object for one discovered DRA entry.
pub fn dra_object(kind: DraKind, name: &str, namespace: &str) -> Node {
    match kind {
        DraKind::ComputeDomain => envelope(
            "resource.nvidia.com/v1beta1",
            "ComputeDomain",
            name,
            namespace,
            map_of(vec![
                (
                    "channel",
                    map_of(vec![(
                        "resourceClaimTemplate",
                        map_of(vec![("name", Node::str(name))]),
                    )]),
                ),
                ("numNodes", Node::int(0)),
            ]),
        ),
        DraKind::Roce => envelope(
            "resource.k8s.io/v1",
            "ResourceClaimTemplate",
            name,
            namespace,
            map_of(vec![(
                "spec",
                map_of(vec![(
                    "devices",
                    map_of(vec![(
                        "requests",
                        Node::list(vec![map_of(vec![
                            (
                                "exactly",
                                map_of(vec![
                                    ("count", Node::int(8)),
                                    ("deviceClassName", Node::str("roce.networking.k8s.aws")),
                                ]),
                            ),
                            ("name", Node::str("roce")),
                        ])]),
                    )]),
                )]),
            )]),
        ),
    }
}
