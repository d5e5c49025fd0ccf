//! RayCluster rendering (ref-config-render §4.2-§4.3): segment expansion, then image,
//! pull secrets, service account, pod-template labels and DRA claim names, in that order,
//! on a copy of the inline spec. Copied values keep their spans, so a schema problem in
//! the output points at the infra line that wrote it.

use crate::config::node::{Map, Node, Value};
use crate::config::schema::{ClusterSpec, InfraConfig, Role};
use crate::diag::{Diag, Result};

use super::dra::{self, DraKind};
use super::meta::{
    StrLayer, ensure_map, labels_with_managed_by, map_of, merge_str_layers, set, str_at,
};

/// Path of a role's cluster block in the infra tree (for span lookups).
pub fn cluster_path(role: Role) -> String {
    format!("kuberay.{}", role.as_str())
}

/// Render the RayCluster for `role`.
pub fn raycluster(infra: &InfraConfig, cluster: &ClusterSpec, role: Role) -> Result<Node> {
    let spec = raycluster_spec(infra, cluster, role)?;
    let cpath = cluster_path(role);
    let src = &infra.source;
    let mut meta = vec![
        (
            "name",
            str_at(&cluster.name, span_of(src, &format!("{cpath}.name"))),
        ),
        (
            "namespace",
            str_at(&infra.namespace, span_of(src, "namespace")),
        ),
        (
            "labels",
            Node::from_map(object_labels(infra, cluster, role)),
        ),
    ];
    let ann = object_annotations(infra, cluster, role);
    if !ann.is_empty() {
        meta.push(("annotations", Node::from_map(ann)));
    }
    Ok(map_of(vec![
        ("apiVersion", Node::str("ray.io/v1")),
        ("kind", Node::str("RayCluster")),
        ("metadata", map_of(meta)),
        ("spec", spec),
    ]))
}

pub(crate) fn span_of(src: &Node, path: &str) -> Option<crate::config::source::Span> {
    src.get_path(path).and_then(|n| n.span)
}

/// managed-by ⊕ infra.labels ⊕ cluster.labels.
pub fn object_labels(infra: &InfraConfig, cluster: &ClusterSpec, role: Role) -> Map {
    let src = &infra.source;
    labels_with_managed_by(&[
        StrLayer::new(&infra.labels, src.get("labels")),
        StrLayer::new(
            &cluster.labels,
            src.get_path(&cluster_path(role))
                .and_then(|c| c.get("labels")),
        ),
    ])
}

/// infra.annotations ⊕ cluster.annotations.
pub fn object_annotations(infra: &InfraConfig, cluster: &ClusterSpec, role: Role) -> Map {
    let src = &infra.source;
    merge_str_layers(
        None,
        &[
            StrLayer::new(&infra.annotations, src.get("annotations")),
            StrLayer::new(
                &cluster.annotations,
                src.get_path(&cluster_path(role))
                    .and_then(|c| c.get("annotations")),
            ),
        ],
    )
}

/// The patched `.spec` (also used as a RayJob's `rayClusterSpec`).
pub fn raycluster_spec(infra: &InfraConfig, cluster: &ClusterSpec, role: Role) -> Result<Node> {
    let mut spec = cluster.spec.clone();
    let src = &infra.source;
    if let Some(seg) = cluster.segment_size {
        let seg_span = span_of(src, &format!("{}.segmentSize", cluster_path(role)));
        expand_segments(&mut spec, seg, seg_span)?;
    }
    let image = str_at(&infra.image, span_of(src, "image"));
    let pull_secrets = pull_secret_list(infra);
    let sa = infra
        .service_account
        .as_ref()
        .map(|s| str_at(s, span_of(src, "serviceAccount")));
    let pod_labels = object_labels(infra, cluster, role);

    if spec.as_map().is_none() {
        return Ok(spec);
    }
    let mut templates: Vec<(&mut Node, bool)> = Vec::new();
    let Some(spec_map) = spec.as_map_mut() else {
        return Ok(Node::null());
    };
    // Split the borrow: head template and worker templates.
    let mut head = None;
    let mut workers = None;
    for (k, v) in spec_map.iter_mut() {
        match k.as_str() {
            "headGroupSpec" => head = Some(v),
            "workerGroupSpecs" => workers = Some(v),
            _ => {}
        }
    }
    if let Some(h) = head
        && let Some(t) = template_of(h, "headGroupSpec")?
    {
        templates.push((t, false));
    }
    if let Some(Node {
        value: Value::List(groups),
        ..
    }) = workers
    {
        for (i, g) in groups.iter_mut().enumerate() {
            if let Some(t) = template_of(g, &format!("workerGroupSpecs[{i}]"))? {
                templates.push((t, true));
            }
        }
    }
    for (template, is_worker) in templates {
        if let Some(pod) = template.get_mut("spec").filter(|p| p.as_map().is_some()) {
            patch_pod_spec(pod, &image, pull_secrets.as_ref(), sa.as_ref(), true);
            if is_worker {
                dra::rewrite_claims(pod, &cluster.name, role);
            }
        }
        set_template_labels(template, &pod_labels);
    }
    Ok(spec)
}

/// `[{name: s}, ...]` from `infra.imagePullSecrets` (each name spanned at its infra line),
/// or `None` when the list is empty (existing pod values are then left alone).
pub fn pull_secret_list(infra: &InfraConfig) -> Option<Node> {
    if infra.image_pull_secrets.is_empty() {
        return None;
    }
    let items = infra.source.get("imagePullSecrets").and_then(Node::as_list);
    Some(Node::list(
        infra
            .image_pull_secrets
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let span = items.and_then(|l| l.get(i)).and_then(|n| n.span);
                map_of(vec![("name", str_at(s, span))])
            })
            .collect(),
    ))
}

/// The `template` of a head/worker group; a present but non-mapping template is an
/// error (the reference crashed on `template: null`).
fn template_of<'a>(group: &'a mut Node, what: &str) -> Result<Option<&'a mut Node>> {
    let span = group.span;
    let Some(m) = group.as_map_mut() else {
        return Ok(None);
    };
    match m.get_mut("template") {
        None => Ok(None),
        Some(t) if t.as_map().is_some() => Ok(Some(t)),
        Some(t) => Err(Diag::new(
            "nrl::render::template",
            format!(
                "`{what}.template` must be a pod template mapping, not {}",
                t.type_name()
            ),
        )
        .label(t.span.or(t.key_span).or(span), "here")
        .help("give the group a `template:` with `spec.containers`, or remove the key")),
    }
}

/// Image (overwrite or fill), pull secrets, service account on one pod spec.
pub fn patch_pod_spec(
    pod: &mut Node,
    image: &Node,
    pull_secrets: Option<&Node>,
    sa: Option<&Node>,
    overwrite_image: bool,
) {
    if let Some(Node {
        value: Value::List(containers),
        ..
    }) = pod.get_mut("containers")
    {
        for c in containers.iter_mut() {
            if c.as_map().is_some() && (overwrite_image || c.get("image").is_none()) {
                set(c, "image", image.clone());
            }
        }
    }
    if let Some(ps) = pull_secrets {
        set(pod, "imagePullSecrets", ps.clone());
    }
    if let Some(sa) = sa {
        set(pod, "serviceAccountName", sa.clone());
    }
}

/// `template.metadata.labels` = rendered labels ⊕ existing template labels (existing win;
/// rendered keys first).
pub fn set_template_labels(template: &mut Node, rendered: &Map) {
    let Some(meta) = ensure_map(template, "metadata") else {
        return;
    };
    let mut labels = rendered.clone();
    if let Some(existing) = meta.get("labels").and_then(Node::as_map) {
        for (k, v) in existing {
            labels.insert(k.clone(), v.clone());
        }
    }
    set(meta, "labels", Node::from_map(labels));
}

/// Split worker groups into `<group>-segment-<i>` copies of `seg` replicas each.
fn expand_segments(
    spec: &mut Node,
    seg: i64,
    seg_span: Option<crate::config::source::Span>,
) -> Result<()> {
    let Some(Node {
        value: Value::List(groups),
        ..
    }) = spec.get_mut("workerGroupSpecs")
    else {
        return Ok(());
    };
    let mut out = Vec::with_capacity(groups.len());
    for g in groups.drain(..) {
        let (replicas, rspan) = group_replicas(&g)?;
        if replicas <= seg {
            out.push(g);
            continue;
        }
        let name = g
            .get("groupName")
            .and_then(Node::as_str)
            .unwrap_or("")
            .to_string();
        if replicas % seg != 0 {
            let shown = if name.is_empty() {
                "<unnamed>"
            } else {
                name.as_str()
            };
            return Err(Diag::new(
                "nrl::render::segments",
                format!(
                    "workerGroup '{shown}' has replicas={replicas} which is not evenly divisible by segmentSize={seg}"
                ),
            )
            .label(rspan, format!("{replicas} replicas"))
            .label(seg_span, format!("segmentSize {seg}"))
            .help(format!(
                "make replicas a multiple of {seg} (e.g. {}), or change segmentSize",
                (replicas / seg + 1) * seg
            )));
        }
        let base = if name.is_empty() {
            "workers".to_string()
        } else {
            name
        };
        for i in 0..replicas / seg {
            let mut copy = g.clone();
            set(
                &mut copy,
                "groupName",
                Node::str(format!("{base}-segment-{i}")),
            );
            for k in ["replicas", "minReplicas", "maxReplicas"] {
                set(&mut copy, k, Node::int(seg).with_span(seg_span));
            }
            out.push(copy);
        }
    }
    *groups = out;
    Ok(())
}

fn group_replicas(g: &Node) -> Result<(i64, Option<crate::config::source::Span>)> {
    let Some(r) = g.get("replicas") else {
        return Ok((0, None));
    };
    let n = match &r.value {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(*b as i64),
        Value::Float(f) if f.fract() == 0.0 => Some(*f as i64),
        Value::Str(s) => s.trim().parse::<i64>().ok(),
        Value::Null => Some(0),
        _ => None,
    };
    match n {
        Some(n) => Ok((n, r.span)),
        None => Err(Diag::new(
            "nrl::render::segments",
            format!("worker group `replicas` must be an integer, not {}", r),
        )
        .label(r.span, "not a number")
        .help("write the replica count as a number, e.g. `replicas: 4`")),
    }
}

/// Names of the DRA objects a cluster needs, in discovery order.
pub fn dra_needed(cluster: &ClusterSpec, role: Role) -> Vec<(DraKind, String)> {
    dra::discover(&cluster.name, role, &cluster.spec)
}
