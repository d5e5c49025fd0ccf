//! Deployment and its ClusterIP Service (ref-config-render §4.5-§4.6).

use crate::config::node::{Map, Node, Value};
use crate::config::schema::{DeploymentSpec, InfraConfig};
use crate::diag::{Diag, Result};

use super::meta::{
    MANAGED_BY, MANAGED_BY_KEY, StrLayer, labels_with_managed_by, map_of, merge_str_layers, str_at,
};
use super::raycluster::{patch_pod_spec, pull_secret_list, set_template_labels, span_of};

fn dep_source<'a>(infra: &'a InfraConfig, key: &str) -> Option<&'a Node> {
    infra.source.get("deployments").and_then(|d| d.get(key))
}

/// Render the Deployment for `deployments.<key>`.
pub fn deployment(infra: &InfraConfig, key: &str, dep: &DeploymentSpec) -> Result<Node> {
    let src = &infra.source;
    let dsrc = dep_source(infra, key);
    let mut spec = dep.spec.clone();
    let labels = labels_with_managed_by(&[
        StrLayer::new(&infra.labels, src.get("labels")),
        StrLayer::new(&dep.labels, dsrc.and_then(|d| d.get("labels"))),
    ]);
    // Unlike a RayCluster, a Deployment keeps an explicit container image.
    if let Some(template) = spec.get_mut("template") {
        if template.as_map().is_some() {
            let image = str_at(&infra.image, span_of(src, "image"));
            let pull_secrets = pull_secret_list(infra);
            let sa = infra
                .service_account
                .as_ref()
                .map(|s| str_at(s, span_of(src, "serviceAccount")));
            if let Some(pod) = template.get_mut("spec").filter(|p| p.as_map().is_some()) {
                patch_pod_spec(pod, &image, pull_secrets.as_ref(), sa.as_ref(), false);
            }
            set_template_labels(template, &labels);
        } else {
            // The reference crashed on `template: null` (ref §8 item 22); a Deployment
            // cannot be created without a pod template anyway.
            return Err(Diag::new(
                "nrl::render::template",
                format!(
                    "`deployments.{key}.spec.template` must be a pod template mapping, not {}",
                    template.type_name()
                ),
            )
            .label(template.span.or(template.key_span), "here")
            .help("give the Deployment a pod template with `spec.containers`"));
        }
    }
    let mut meta = vec![
        (
            "name",
            str_at(
                &dep.name,
                dsrc.and_then(|d| d.get("name")).and_then(|n| n.span),
            ),
        ),
        (
            "namespace",
            str_at(&infra.namespace, span_of(src, "namespace")),
        ),
        ("labels", Node::from_map(labels)),
    ];
    let ann = merge_str_layers(
        None,
        &[
            StrLayer::new(&infra.annotations, src.get("annotations")),
            StrLayer::new(&dep.annotations, dsrc.and_then(|d| d.get("annotations"))),
        ],
    );
    if !ann.is_empty() {
        meta.push(("annotations", Node::from_map(ann)));
    }
    Ok(map_of(vec![
        ("apiVersion", Node::str("apps/v1")),
        ("kind", Node::str("Deployment")),
        ("metadata", map_of(meta)),
        ("spec", spec),
    ]))
}

/// The ClusterIP Service exposing a Deployment's container ports, computed from the
/// unpatched spec. `None` when there is no selector or no port.
pub fn service(infra: &InfraConfig, dep: &DeploymentSpec) -> Result<Option<Node>> {
    let selector = dep
        .spec
        .get("selector")
        .and_then(|s| s.get("matchLabels"))
        .filter(|m| m.as_map().is_some_and(|m| !m.is_empty()));
    let Some(selector) = selector else {
        return Ok(None);
    };
    let containers = dep
        .spec
        .get("template")
        .and_then(|t| t.get("spec"))
        .and_then(|s| s.get("containers"))
        .and_then(Node::as_list);
    let mut ports = Vec::new();
    for c in containers.into_iter().flatten() {
        let Some(list) = c.get("ports").and_then(Node::as_list) else {
            continue;
        };
        for (i, p) in list.iter().enumerate() {
            let Some(cp) = p.get("containerPort").filter(|n| !n.is_null()) else {
                return Err(Diag::new(
                    "nrl::render::service_port",
                    "a container port has no `containerPort`",
                )
                .label(p.span, "this port entry")
                .help("add `containerPort: <number>` to the port"));
            };
            let protocol = p
                .get("protocol")
                .filter(|n| !n.is_null())
                .cloned()
                .unwrap_or_else(|| Node::str("TCP"));
            let name = match p.get("name").map(|n| &n.value) {
                Some(Value::Str(s)) if !s.is_empty() => p
                    .get("name")
                    .cloned()
                    .unwrap_or_else(|| Node::str(s.clone())),
                _ => Node::str(format!("port-{i}")),
            };
            if let Some(d) = duplicate_port(&ports, &name, cp, &protocol, p, &dep.name) {
                return Err(d);
            }
            ports.push(map_of(vec![
                ("port", cp.clone()),
                ("targetPort", cp.clone()),
                ("protocol", protocol),
                ("name", name),
            ]));
        }
    }
    if ports.is_empty() {
        return Ok(None);
    }
    let mut labels = Map::new();
    labels.insert(MANAGED_BY_KEY.to_string(), Node::str(MANAGED_BY));
    Ok(Some(map_of(vec![
        ("apiVersion", Node::str("v1")),
        ("kind", Node::str("Service")),
        (
            "metadata",
            map_of(vec![
                ("name", Node::str(dep.name.clone())),
                ("namespace", Node::str(infra.namespace.clone())),
                ("labels", Node::from_map(labels)),
            ]),
        ),
        (
            "spec",
            map_of(vec![
                ("type", Node::str("ClusterIP")),
                ("selector", selector.clone()),
                ("ports", Node::list(ports)),
            ]),
        ),
    ])))
}

/// Kubernetes refuses a Service whose ports repeat a name or a port/protocol pair; the
/// reference rendered such Services (every container's first unnamed port is `port-0`,
/// ref §8 item 23) and left the failure to `apply`.
fn duplicate_port(
    ports: &[Node],
    name: &Node,
    port: &Node,
    protocol: &Node,
    entry: &Node,
    service: &str,
) -> Option<Diag> {
    let same = |key: &str, v: &Node| {
        ports
            .iter()
            .any(|p| p.get(key).is_some_and(|x| x.value == v.value))
    };
    let (what, help) = if same("name", name) {
        (
            format!("two ports named `{}`", name.as_str().unwrap_or_default()),
            "give each container port of the Deployment a unique `name:` (ports without a \
             name are called `port-<index>` within their container, so two containers' first \
             unnamed ports collide)",
        )
    } else if ports.iter().any(|p| {
        p.get("port").is_some_and(|x| x.value == port.value)
            && p.get("protocol").is_some_and(|x| x.value == protocol.value)
    }) {
        (
            format!("port {port} twice"),
            "expose each port number once per protocol: remove the duplicate `containerPort`",
        )
    } else {
        return None;
    };
    Some(
        Diag::new(
            "nrl::render::service_port",
            format!("the Service `{service}` would have {what}; Kubernetes refuses it"),
        )
        .label(entry.span, "this port repeats an earlier one")
        .help(help),
    )
}
