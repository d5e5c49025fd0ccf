//! The objects rendered pods reference by name (PVCs, Secrets, ServiceAccounts,
//! ConfigMaps, ResourceClaimTemplates), and the KAI queues they name. Pure.

use crate::config::node::Node;
use crate::config::source::Span;
use crate::doctor::pods::{PodSite, pods};
use crate::doctor::scheduling::KAI_QUEUE;

/// One use of a referenced object.
#[derive(Debug, Clone, PartialEq)]
pub struct Use {
    pub span: Option<Span>,
    /// `RayCluster/rc workerGroupSpecs[0] (gpu) volumes[].persistentVolumeClaim.claimName`
    pub by: String,
}

/// An object the manifests need to exist before they are applied.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjRef {
    /// `PersistentVolumeClaim`, `Secret`, `ServiceAccount`, `ConfigMap`,
    /// `ResourceClaimTemplate`.
    pub kind: &'static str,
    pub name: String,
    pub namespace: String,
    pub uses: Vec<Use>,
}

/// A KAI queue named by a `kai.scheduler/queue` label.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueRef {
    pub name: String,
    pub uses: Vec<Use>,
}

fn ns_of(m: &Node, default_ns: &str) -> String {
    m.get_path("metadata.namespace")
        .and_then(Node::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(default_ns)
        .to_string()
}

/// Names of ResourceClaimTemplates the manifests create themselves: RCT objects and the
/// channel templates of ComputeDomains (the DRA driver creates those).
fn created_templates(manifests: &[Node]) -> Vec<String> {
    let mut out = Vec::new();
    for m in manifests {
        match m.get("kind").and_then(Node::as_str) {
            Some("ResourceClaimTemplate") => {
                if let Some(n) = m.get_path("metadata.name").and_then(Node::as_str) {
                    out.push(n.to_string());
                }
            }
            Some("ComputeDomain") => {
                if let Some(n) = m
                    .get_path("spec.channel.resourceClaimTemplate.name")
                    .and_then(Node::as_str)
                {
                    out.push(n.to_string());
                }
            }
            _ => {}
        }
    }
    out
}

fn optional(n: &Node) -> bool {
    n.get("optional").and_then(Node::as_bool).unwrap_or(false)
}

struct Collector<'a> {
    out: Vec<ObjRef>,
    site: Option<&'a PodSite<'a>>,
    ns: String,
}

impl Collector<'_> {
    fn add(&mut self, kind: &'static str, name_node: Option<&Node>, field: &str) {
        let Some(node) = name_node else { return };
        let Some(name) = node.as_str().map(str::trim).filter(|s| !s.is_empty()) else {
            return;
        };
        let by = match self.site {
            Some(p) => format!("{} {} {field}", p.desc, p.place),
            None => field.to_string(),
        };
        let u = Use {
            span: node.best_span(),
            by,
        };
        match self
            .out
            .iter_mut()
            .find(|r| r.kind == kind && r.name == name && r.namespace == self.ns)
        {
            Some(r) => {
                if !r.uses.contains(&u) {
                    r.uses.push(u);
                }
            }
            None => self.out.push(ObjRef {
                kind,
                name: name.to_string(),
                namespace: self.ns.clone(),
                uses: vec![u],
            }),
        }
    }
}

/// Every object referenced by the pods of `manifests`, in first-use order.
pub fn references(manifests: &[Node], default_ns: &str) -> Vec<ObjRef> {
    let created = created_templates(manifests);
    let sites = pods(manifests);
    let mut c = Collector {
        out: Vec::new(),
        site: None,
        ns: String::new(),
    };
    for p in &sites {
        let Some(spec) = p.pod_spec() else { continue };
        c.site = Some(p);
        c.ns = ns_of(p.object, default_ns);
        c.add(
            "ServiceAccount",
            spec.get("serviceAccountName"),
            "serviceAccountName",
        );
        for s in list(spec, "imagePullSecrets") {
            c.add("Secret", s.get("name"), "imagePullSecrets[].name");
        }
        for v in list(spec, "volumes") {
            c.add(
                "PersistentVolumeClaim",
                v.get_path("persistentVolumeClaim.claimName"),
                "volumes[].persistentVolumeClaim.claimName",
            );
            if let Some(s) = v.get("secret").filter(|s| !optional(s)) {
                c.add("Secret", s.get("secretName"), "volumes[].secret.secretName");
            }
            if let Some(s) = v.get("configMap").filter(|s| !optional(s)) {
                c.add("ConfigMap", s.get("name"), "volumes[].configMap.name");
            }
            for src in v
                .get_path("projected.sources")
                .and_then(Node::as_list)
                .into_iter()
                .flatten()
            {
                if let Some(s) = src.get("secret").filter(|s| !optional(s)) {
                    c.add(
                        "Secret",
                        s.get("name"),
                        "volumes[].projected.sources[].secret.name",
                    );
                }
                if let Some(s) = src.get("configMap").filter(|s| !optional(s)) {
                    c.add(
                        "ConfigMap",
                        s.get("name"),
                        "volumes[].projected.sources[].configMap.name",
                    );
                }
            }
        }
        for claim in list(spec, "resourceClaims") {
            let t = claim.get("resourceClaimTemplateName");
            if t.and_then(Node::as_str)
                .is_some_and(|n| created.iter().any(|c| c == n))
            {
                continue;
            }
            c.add(
                "ResourceClaimTemplate",
                t,
                "resourceClaims[].resourceClaimTemplateName",
            );
        }
        for ctr in p.containers() {
            for e in list(ctr, "env") {
                if let Some(r) = e
                    .get_path("valueFrom.secretKeyRef")
                    .filter(|r| !optional(r))
                {
                    c.add("Secret", r.get("name"), "env[].valueFrom.secretKeyRef.name");
                }
                if let Some(r) = e
                    .get_path("valueFrom.configMapKeyRef")
                    .filter(|r| !optional(r))
                {
                    c.add(
                        "ConfigMap",
                        r.get("name"),
                        "env[].valueFrom.configMapKeyRef.name",
                    );
                }
            }
            for e in list(ctr, "envFrom") {
                if let Some(r) = e.get("secretRef").filter(|r| !optional(r)) {
                    c.add("Secret", r.get("name"), "envFrom[].secretRef.name");
                }
                if let Some(r) = e.get("configMapRef").filter(|r| !optional(r)) {
                    c.add("ConfigMap", r.get("name"), "envFrom[].configMapRef.name");
                }
            }
        }
    }
    c.out
}

fn list<'a>(n: &'a Node, key: &str) -> impl Iterator<Item = &'a Node> {
    n.get(key).and_then(Node::as_list).into_iter().flatten()
}

/// KAI queues named by the pods' (or their owners') `kai.scheduler/queue` labels.
pub fn queues(manifests: &[Node]) -> Vec<QueueRef> {
    let mut out: Vec<QueueRef> = Vec::new();
    for p in pods(manifests) {
        let Some(label) = p.label(KAI_QUEUE) else {
            continue;
        };
        let Some(name) = label.as_str().map(str::trim).filter(|s| !s.is_empty()) else {
            continue;
        };
        let u = Use {
            span: label.best_span(),
            by: format!("{} {}", p.desc, p.place),
        };
        match out.iter_mut().find(|q| q.name == name) {
            Some(q) => {
                if !q.uses.iter().any(|x| x.span == u.span) {
                    q.uses.push(u);
                }
            }
            None => out.push(QueueRef {
                name: name.to_string(),
                uses: vec![u],
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::{SourceKind, add_source};
    use crate::config::yaml::parse_source;

    fn docs(text: &str) -> Vec<Node> {
        text.split("\n---\n")
            .map(|d| {
                let id = add_source("refs.yaml", None, d.to_string(), SourceKind::Text);
                parse_source(id).expect("yaml")
            })
            .collect()
    }

    const MANIFESTS: &str = r#"apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc, namespace: ns}
spec:
  headGroupSpec:
    template:
      spec:
        serviceAccountName: sa
        imagePullSecrets: [{name: pull}]
        volumes:
          - {name: a, persistentVolumeClaim: {claimName: data}}
          - {name: b, secret: {secretName: opt, optional: true}}
          - {name: c, configMap: {name: cm}}
          - name: d
            projected: {sources: [{secret: {name: proj}}]}
        containers:
          - name: h
            env:
              - {name: T, valueFrom: {secretKeyRef: {name: tok, key: t}}}
              - {name: O, valueFrom: {secretKeyRef: {name: opt2, key: t, optional: true}}}
            envFrom: [{secretRef: {name: user-secrets, optional: true}}, {configMapRef: {name: cm}}]
  workerGroupSpecs:
    - groupName: g
      template:
        metadata: {labels: {kai.scheduler/queue: rl}}
        spec:
          serviceAccountName: sa
          resourceClaims:
            - {name: compute-domain-channel, resourceClaimTemplateName: compute-domain-rc-training}
            - {name: roce-channel, resourceClaimTemplateName: roce-rc-training}
            - {name: x, resourceClaimTemplateName: site-template}
          containers: [{name: w}]
---
apiVersion: resource.nvidia.com/v1beta1
kind: ComputeDomain
metadata: {name: compute-domain-rc-training}
spec: {channel: {resourceClaimTemplate: {name: compute-domain-rc-training}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: roce-rc-training}
spec: {}"#;

    #[test]
    fn collects_required_references_once_with_every_use() {
        let m = docs(MANIFESTS);
        let refs = references(&m, "default");
        let got: Vec<(&str, &str)> = refs.iter().map(|r| (r.kind, r.name.as_str())).collect();
        assert_eq!(
            got,
            [
                ("ServiceAccount", "sa"),
                ("Secret", "pull"),
                ("PersistentVolumeClaim", "data"),
                ("ConfigMap", "cm"),
                ("Secret", "proj"),
                ("Secret", "tok"),
                ("ResourceClaimTemplate", "site-template"),
            ]
        );
        assert!(refs.iter().all(|r| r.namespace == "ns"));
        let sa = &refs[0];
        assert_eq!(sa.uses.len(), 2, "{:?}", sa.uses);
        assert!(
            sa.uses[1]
                .by
                .contains("workerGroupSpecs[0] (g) serviceAccountName")
        );
        let cm = &refs[3];
        assert_eq!(cm.uses.len(), 2, "volume and envFrom");
        assert_eq!(cm.uses[0].span.map(|s| s.text()).as_deref(), Some("cm"));
        let q = queues(&m);
        assert_eq!(q.len(), 1);
        assert_eq!(q[0].name, "rl");
    }
}
