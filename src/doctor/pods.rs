//! Walking rendered manifests: the RayClusters (RayCluster `.spec`, RayJob
//! `.spec.rayClusterSpec`) and every pod template in them and in Deployments.

use crate::config::node::{Node, Value};
use crate::config::schema::InfraConfig;
use crate::config::source::Span;

/// What a pod template belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    Head,
    Worker,
    /// A Deployment's pods.
    Deployment,
}

/// A Ray cluster spec inside a manifest.
pub struct ClusterSite<'a> {
    pub object: &'a Node,
    /// `RayCluster/name` or `RayJob/name`.
    pub desc: String,
    pub name: &'a str,
    pub spec: &'a Node,
}

/// One pod template of a manifest.
pub struct PodSite<'a> {
    pub object: &'a Node,
    /// `RayCluster/name`, `RayJob/name`, `Deployment/name`.
    pub desc: String,
    pub kind: GroupKind,
    /// The head group, a worker group, or the Deployment spec.
    pub group: &'a Node,
    /// `headGroupSpec`, `workerGroupSpecs[0] (gpu-workers)`, `spec.template`.
    pub place: String,
    pub template: &'a Node,
}

pub fn object_desc(m: &Node) -> String {
    let kind = m.get("kind").and_then(Node::as_str).unwrap_or("object");
    let name = m
        .get_path("metadata.name")
        .and_then(Node::as_str)
        .unwrap_or("<unnamed>");
    format!("{kind}/{name}")
}

fn kind_of(m: &Node) -> &str {
    m.get("kind").and_then(Node::as_str).unwrap_or("")
}

/// Every Ray cluster spec in the manifests, in order.
pub fn clusters(manifests: &[Node]) -> Vec<ClusterSite<'_>> {
    let mut out = Vec::new();
    for m in manifests {
        let spec = match kind_of(m) {
            "RayCluster" => m.get("spec"),
            "RayJob" => m.get_path("spec.rayClusterSpec"),
            _ => None,
        };
        if let Some(spec) = spec.filter(|s| s.as_map().is_some()) {
            out.push(ClusterSite {
                object: m,
                desc: object_desc(m),
                name: m
                    .get_path("metadata.name")
                    .and_then(Node::as_str)
                    .unwrap_or(""),
                spec,
            });
        }
    }
    out
}

/// The worker groups of a cluster spec.
pub fn worker_groups(spec: &Node) -> &[Node] {
    spec.get("workerGroupSpecs")
        .and_then(Node::as_list)
        .map_or(&[], Vec::as_slice)
}

pub fn group_name(group: &Node) -> &str {
    group
        .get("groupName")
        .and_then(Node::as_str)
        .unwrap_or("<unnamed>")
}

fn worker_place(i: usize, g: &Node) -> String {
    format!("workerGroupSpecs[{i}] ({})", group_name(g))
}

/// Every pod template in the manifests: Ray heads and workers, Deployment pods.
pub fn pods(manifests: &[Node]) -> Vec<PodSite<'_>> {
    let mut out = Vec::new();
    for c in clusters(manifests) {
        out.extend(cluster_pods(&c));
    }
    for m in manifests.iter().filter(|m| kind_of(m) == "Deployment") {
        if let Some(spec) = m.get("spec")
            && let Some(t) = template(spec)
        {
            out.push(PodSite {
                object: m,
                desc: object_desc(m),
                kind: GroupKind::Deployment,
                group: spec,
                place: "spec.template".into(),
                template: t,
            });
        }
    }
    out
}

/// The head and worker pod templates of one cluster.
pub fn cluster_pods<'a>(c: &ClusterSite<'a>) -> Vec<PodSite<'a>> {
    let mut out = Vec::new();
    if let Some(head) = c.spec.get("headGroupSpec")
        && let Some(t) = template(head)
    {
        out.push(PodSite {
            object: c.object,
            desc: c.desc.clone(),
            kind: GroupKind::Head,
            group: head,
            place: "headGroupSpec".into(),
            template: t,
        });
    }
    for (i, g) in worker_groups(c.spec).iter().enumerate() {
        if let Some(t) = template(g) {
            out.push(PodSite {
                object: c.object,
                desc: c.desc.clone(),
                kind: GroupKind::Worker,
                group: g,
                place: worker_place(i, g),
                template: t,
            });
        }
    }
    out
}

/// The cluster the recipe trains on: the RayCluster named like `kuberay.training`, else a
/// RayJob (whose cluster is always the training one). One only, so nothing is counted
/// twice when both are given.
pub fn training_cluster<'a>(infra: &InfraConfig, manifests: &'a [Node]) -> Option<ClusterSite<'a>> {
    let training = infra.kuberay.training.as_ref()?;
    let mut sites = clusters(manifests);
    let pos = sites
        .iter()
        .position(|c| kind_of(c.object) == "RayCluster" && c.name == training.name)
        .or_else(|| sites.iter().position(|c| kind_of(c.object) == "RayJob"))?;
    Some(sites.swap_remove(pos))
}

fn template(group: &Node) -> Option<&Node> {
    group.get("template").filter(|t| t.as_map().is_some())
}

impl<'a> PodSite<'a> {
    pub fn pod_spec(&self) -> Option<&'a Node> {
        self.template.get("spec").filter(|s| s.as_map().is_some())
    }

    /// Containers and init containers.
    pub fn containers(&self) -> Vec<&'a Node> {
        let Some(spec) = self.pod_spec() else {
            return Vec::new();
        };
        ["initContainers", "containers"]
            .iter()
            .filter_map(|k| spec.get(k).and_then(Node::as_list))
            .flatten()
            .filter(|c| c.as_map().is_some())
            .collect()
    }

    /// GPUs per pod: the `nvidia.com/gpu` limits (else requests) of all containers, with
    /// the node that wrote the first one.
    pub fn gpus(&self) -> (i64, Option<&'a Node>) {
        let mut total = 0;
        let mut first = None;
        for c in self.containers() {
            let res = c.get("resources");
            let n = res
                .and_then(|r| r.get("limits"))
                .and_then(|l| l.get(GPU))
                .or_else(|| res.and_then(|r| r.get("requests")).and_then(|l| l.get(GPU)));
            if let Some(n) = n {
                total += quantity(n).unwrap_or(0);
                first = first.or(Some(n));
            }
        }
        (total, first)
    }

    /// Pods this group runs: `replicas` (else `minReplicas`) × `numOfHosts` for workers,
    /// 1 for a head, `replicas` (default 1) for a Deployment.
    pub fn pod_count(&self) -> i64 {
        match self.kind {
            GroupKind::Head => 1,
            GroupKind::Worker => {
                let r = self
                    .group
                    .get("replicas")
                    .or_else(|| self.group.get("minReplicas"))
                    .and_then(quantity)
                    .unwrap_or(0);
                let hosts = self.group.get("numOfHosts").and_then(quantity).unwrap_or(1);
                r * hosts.max(1)
            }
            GroupKind::Deployment => self.group.get("replicas").and_then(quantity).unwrap_or(1),
        }
    }

    /// A label of the pod template or of the object that owns it (KAI reads either).
    pub fn label(&self, key: &str) -> Option<&'a Node> {
        self.template
            .get_path("metadata.labels")
            .and_then(|l| l.get(key))
            .or_else(|| {
                self.object
                    .get_path("metadata.labels")
                    .and_then(|l| l.get(key))
            })
    }

    pub fn annotation(&self, key: &str) -> Option<&'a Node> {
        self.template
            .get_path("metadata.annotations")
            .and_then(|l| l.get(key))
    }

    /// The best line to point at for the group as a whole.
    pub fn group_span(&self) -> Option<Span> {
        self.group
            .get("groupName")
            .and_then(Node::best_span)
            .or(self.template.key_span)
            .or(self.group.key_span)
            .or(self.group.span)
    }
}

pub const GPU: &str = "nvidia.com/gpu";

/// An integer written as a number or a string (`4`, `"4"`).
pub fn quantity(n: &Node) -> Option<i64> {
    match &n.value {
        Value::Int(i) => Some(*i),
        Value::Float(f) if f.fract() == 0.0 => Some(*f as i64),
        Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}
