//! `infra.dev`: the settings of the personal dev pod (`nrl dev connect`).
//!
//! The reference hard-coded all of them (PVC `rl-workspace`, pull secret `nvcr-secret`,
//! the GPU-node avoidance rule, resources, labels; ref-orchestration §9.2, §11.F). nrl
//! reads them from the infra config, so a user sets them once in
//! `~/.config/nrl/defaults.yaml` (user defaults merge into infra). The section is optional
//! and is left out of `to_node` (the `check -o` bundle) when absent, so bundles of configs
//! that never mention it stay identical to the reference's.
//!
//! Fields (YAML names), in declaration order:
//!
//! | field | type | default |
//! |---|---|---|
//! | `podName` | str or null | null = `<user>-dev-pod` |
//! | `image` | str or null | null = `infra.image` |
//! | `imagePullSecrets` | list[str] or null | null = `infra.imagePullSecrets` |
//! | `pvcName` | str | `rl-workspace` (must already exist) |
//! | `mountPath` | str | `/mnt/rl-workspace` |
//! | `workingDir` | str or null | null = `<mountPath>/<user>` |
//! | `avoidNodeLabels` | list[str] | `[nvidia.com/gpu.product]`: nodes carrying any of these labels are avoided (`[]` = run anywhere) |
//! | `resources.requests` | map | `{cpu: 100m, memory: 256Mi}` |
//! | `resources.limits` | map | `{cpu: "5", memory: 10Gi}` |
//! | `envFromSecret` | str or null | null = `<user>-secrets` (optional: the pod starts without it) |
//! | `command` | list[str] or null | null = a keep-alive shell that downloads nothing |
//! | `ownerLabel` | str | `nrl-k8s/owner` (its value is the user) |
//! | `labels` | map | `{nrl-k8s/component: dev-pod}` |
//!
//! `resources.requests`, `resources.limits` and `labels` are overlays on their defaults:
//! the keys written are added or replaced, the others keep their default, and a key set
//! to null is removed (`limits: {cpu: null}` drops the CPU limit), and `to_node` shows it
//! so (`cpu: null`, after the keys kept). Quantities may be written unquoted (`cpu: 2`,
//! `cpu: 0.5`).

use super::declare::infra_model;
use super::models::StrMap;
use crate::config::node::{KeyKind, Node, Value, python_float_repr};
use crate::config::typed::check::*;
use crate::config::typed::convert::*;
use crate::config::typed::json_schema::SchemaCx;

infra_model! {
    /// `infra.dev`.
    pub struct DevSpec {
        /// `None` means `<user>-dev-pod`.
        pod_name: Option<String> = "podName", nonblank_str(
            "name the pod, e.g. `podName: ${user:}-dev`, or delete the line for `<user>-dev-pod`",
        ), opt;
        /// `None` means `infra.image`.
        image: Option<String> = "image", nonblank_str(
            "set the dev pod's image, or delete the line to use `infra.image`",
        ), opt;
        /// `None` means `infra.imagePullSecrets`.
        image_pull_secrets: Option<Vec<String>> = "imagePullSecrets", str_list, opt;
        /// The PersistentVolumeClaim mounted as the workspace.
        pvc_name: String = "pvcName", nonblank_str(
            "name an existing PersistentVolumeClaim, e.g. `pvcName: rl-workspace`",
        ), or("rl-workspace".into());
        /// Where the workspace PVC is mounted.
        mount_path: String = "mountPath", nonblank_str(
            "set where the workspace is mounted, e.g. `mountPath: /mnt/rl-workspace`",
        ), or("/mnt/rl-workspace".into());
        /// `None` means `<mountPath>/<user>`.
        working_dir: Option<String> = "workingDir", nonblank_str(
            "set an absolute directory, or delete the line for `<mountPath>/<user>`",
        ), opt;
        /// A required node affinity keeps the pod off nodes that carry any of these label
        /// keys.
        avoid_node_labels: Vec<String> = "avoidNodeLabels", str_list,
            or(vec!["nvidia.com/gpu.product".into()]);
        resources: DevResources = "resources", dev_resources, or(DevResources::default()),
            section DevResources;
        /// Every key becomes an env var; `None` means `<user>-secrets`.
        env_from_secret: Option<String> = "envFromSecret", nonblank_str(
            "name a Secret, or delete the line for `<user>-secrets`",
        ), opt;
        /// The container command; `None` means nrl's keep-alive script.
        command: Option<Vec<String>> = "command", str_list, opt;
        /// The label key whose value is the user.
        owner_label: String = "ownerLabel", nonblank_str(
            "set a label key, e.g. `ownerLabel: nrl-k8s/owner`",
        ), or("nrl-k8s/owner".into());
        /// Extra pod labels (defaults overlaid by what the user wrote).
        labels: StrMap = "labels", labels_overlay, or(default_labels()), dump labels_dump,
            schema labels_overlay_schema;
    }
    read dev, rules dev_rules;
    impl Default;
}

infra_model! {
    /// `infra.dev.resources`: container requests and limits.
    pub struct DevResources {
        requests: StrMap = "requests", requests_overlay, or(default_requests()),
            dump requests_dump, schema quantities_overlay_schema;
        limits: StrMap = "limits", limits_overlay, or(default_limits()), dump limits_dump,
            schema quantities_overlay_schema;
    }
    read dev_resources;
    impl Default;
}

/// The label key of the dev pod's component label (its default value is `dev-pod`).
pub const DEV_COMPONENT_LABEL: &str = "nrl-k8s/component";

fn str_map_of(pairs: &[(&str, &str)]) -> StrMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn default_labels() -> StrMap {
    str_map_of(&[(DEV_COMPONENT_LABEL, "dev-pod")])
}

fn default_requests() -> StrMap {
    str_map_of(&[("cpu", "100m"), ("memory", "256Mi")])
}

fn default_limits() -> StrMap {
    str_map_of(&[("cpu", "5"), ("memory", "10Gi")])
}

/// An overlay of labels: a value sets or replaces a key, null removes a default one.
fn labels_overlay_schema(_: &mut SchemaCx) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "additionalProperties": { "type": ["string", "null"] },
    })
}

/// An overlay of quantities (`cpu: 2`, `memory: 10Gi`); null removes a default one.
fn quantities_overlay_schema(_: &mut SchemaCx) -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "additionalProperties": { "type": ["string", "number", "null"] },
    })
}

fn labels_overlay(cx: &mut Cx, node: &Node, path: &Path) -> Option<StrMap> {
    overlay(cx, node, path, &default_labels(), strict_str)
}

fn requests_overlay(cx: &mut Cx, node: &Node, path: &Path) -> Option<StrMap> {
    overlay(cx, node, path, &default_requests(), quantity)
}

fn limits_overlay(cx: &mut Cx, node: &Node, path: &Path) -> Option<StrMap> {
    overlay(cx, node, path, &default_limits(), quantity)
}

fn labels_dump(labels: &StrMap) -> Option<Node> {
    Some(overlay_dump(labels, &default_labels()))
}

fn requests_dump(requests: &StrMap) -> Option<Node> {
    Some(overlay_dump(requests, &default_requests()))
}

fn limits_dump(limits: &StrMap) -> Option<Node> {
    Some(overlay_dump(limits, &default_limits()))
}

/// An overlaid map as written in the dump: its keys, then each default it removed as null,
/// so that reading the dump back removes that default again.
fn overlay_dump(map: &StrMap, defaults: &StrMap) -> Node {
    let removed = defaults.keys().filter(|k| !map.contains_key(*k));
    Node::from_map(
        map.iter()
            .map(|(k, v)| (k.clone(), Node::str(v.as_str())))
            .chain(removed.map(|k| (k.clone(), Node::null())))
            .collect(),
    )
}

fn dev_rules(cx: &mut Cx, node: &Node, path: &Path, v: DevSpec) -> Option<DevSpec> {
    if v.command.as_ref().is_some_and(Vec::is_empty) {
        return super::parse::rule(
            cx,
            node,
            &["command"],
            format!("`{path}.command` must not be empty"),
            "no command",
            "give the program and its arguments, e.g. `command: [sleep, infinity]`, or delete the line for nrl's keep-alive command".into(),
        );
    }
    Some(v)
}

/// A Kubernetes quantity: text, or a number written unquoted (`2`, `0.5`).
fn quantity(cx: &mut Cx, node: &Node, path: &Path) -> Option<String> {
    match &node.value {
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) if f.is_finite() && !python_float_repr(*f).contains('e') => {
            Some(python_float_repr(*f))
        }
        _ => strict_str(cx, node, path),
    }
}

/// A string map laid over `defaults`: written keys replace or add, a null value removes.
fn overlay(
    cx: &mut Cx,
    node: &Node,
    path: &Path,
    defaults: &StrMap,
    value: fn(&mut Cx, &Node, &Path) -> Option<String>,
) -> Option<StrMap> {
    let Value::Map(m) = &node.value else {
        let help = if node.is_null() {
            format!(
                "write `{} {{}}` to keep the defaults, or delete the line",
                path.yaml_lead()
            )
        } else {
            "write `key: value` lines; a key set to null removes its default".into()
        };
        cx.report(wrong_type(node, path, "a mapping", help));
        return None;
    };
    let mut out = defaults.clone();
    let mut ok = true;
    for (k, v) in m {
        if v.key_kind != KeyKind::Str {
            non_string_key(cx, k, v, path);
            ok = false;
            continue;
        }
        let key = py_strip(k).to_string();
        if v.is_null() {
            out.shift_remove(&key);
            continue;
        }
        match value(cx, v, &path.key(k)) {
            Some(s) => {
                out.insert(key, s);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}
