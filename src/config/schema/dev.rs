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
//! to null is removed (`limits: {cpu: null}` drops the CPU limit). Quantities may be
//! written unquoted (`cpu: 2`, `cpu: 0.5`).

use super::dump::{self, Fields};
use super::models::StrMap;
use crate::config::node::{KeyKind, Node, Value, python_float_repr};
use crate::config::typed::check::*;
use crate::config::typed::convert::*;

/// `infra.dev`.
#[derive(Debug, Clone, PartialEq)]
pub struct DevSpec {
    /// `podName`: `None` means `<user>-dev-pod`.
    pub pod_name: Option<String>,
    /// `None` means `infra.image`.
    pub image: Option<String>,
    /// `imagePullSecrets`: `None` means `infra.imagePullSecrets`.
    pub image_pull_secrets: Option<Vec<String>>,
    /// `pvcName`: the PersistentVolumeClaim mounted as the workspace.
    pub pvc_name: String,
    /// `mountPath`: where the workspace PVC is mounted.
    pub mount_path: String,
    /// `workingDir`: `None` means `<mountPath>/<user>`.
    pub working_dir: Option<String>,
    /// `avoidNodeLabels`: a required node affinity keeps the pod off nodes that carry any
    /// of these label keys.
    pub avoid_node_labels: Vec<String>,
    pub resources: DevResources,
    /// `envFromSecret`: every key becomes an env var; `None` means `<user>-secrets`.
    pub env_from_secret: Option<String>,
    /// The container command; `None` means nrl's keep-alive script.
    pub command: Option<Vec<String>>,
    /// `ownerLabel`: the label key whose value is the user.
    pub owner_label: String,
    /// Extra pod labels (defaults overlaid by what the user wrote).
    pub labels: StrMap,
}

/// `infra.dev.resources`: container requests and limits.
#[derive(Debug, Clone, PartialEq)]
pub struct DevResources {
    pub requests: StrMap,
    pub limits: StrMap,
}

fn str_map_of(pairs: &[(&str, &str)]) -> StrMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Default for DevResources {
    fn default() -> Self {
        DevResources {
            requests: str_map_of(&[("cpu", "100m"), ("memory", "256Mi")]),
            limits: str_map_of(&[("cpu", "5"), ("memory", "10Gi")]),
        }
    }
}

/// The label key of the dev pod's component label (its default value is `dev-pod`).
pub const DEV_COMPONENT_LABEL: &str = "nrl-k8s/component";

impl Default for DevSpec {
    fn default() -> Self {
        DevSpec {
            pod_name: None,
            image: None,
            image_pull_secrets: None,
            pvc_name: "rl-workspace".into(),
            mount_path: "/mnt/rl-workspace".into(),
            working_dir: None,
            avoid_node_labels: vec!["nvidia.com/gpu.product".into()],
            resources: DevResources::default(),
            env_from_secret: None,
            command: None,
            owner_label: "nrl-k8s/owner".into(),
            labels: str_map_of(&[(DEV_COMPONENT_LABEL, "dev-pod")]),
        }
    }
}

pub(super) const DEV: Shape = Shape {
    fields: &[
        "podName",
        "image",
        "imagePullSecrets",
        "pvcName",
        "mountPath",
        "workingDir",
        "avoidNodeLabels",
        "resources",
        "envFromSecret",
        "command",
        "ownerLabel",
        "labels",
    ],
    sections: &[("resources", &DEV_RESOURCES)],
};
const DEV_RESOURCES: Shape = Shape {
    fields: &["requests", "limits"],
    sections: &[],
};

pub(super) fn dev(cx: &mut Cx, node: &Node, path: &Path) -> Option<DevSpec> {
    let mut o = Obj::open(cx, node, path, &DEV)?;
    let d = DevSpec::default();
    let v = DevSpec {
        pod_name: o.opt(
            cx,
            "podName",
            nonblank_str("name the pod, e.g. `podName: ${user:}-dev`, or delete the line for `<user>-dev-pod`"),
        ),
        image: o.opt(
            cx,
            "image",
            nonblank_str("set the dev pod's image, or delete the line to use `infra.image`"),
        ),
        image_pull_secrets: o.opt(cx, "imagePullSecrets", str_list),
        pvc_name: o.or(
            cx,
            "pvcName",
            nonblank_str("name an existing PersistentVolumeClaim, e.g. `pvcName: rl-workspace`"),
            d.pvc_name,
        ),
        mount_path: o.or(
            cx,
            "mountPath",
            nonblank_str("set where the workspace is mounted, e.g. `mountPath: /mnt/rl-workspace`"),
            d.mount_path,
        ),
        working_dir: o.opt(
            cx,
            "workingDir",
            nonblank_str("set an absolute directory, or delete the line for `<mountPath>/<user>`"),
        ),
        avoid_node_labels: o.or(cx, "avoidNodeLabels", str_list, d.avoid_node_labels),
        resources: o.or(cx, "resources", dev_resources, d.resources),
        env_from_secret: o.opt(
            cx,
            "envFromSecret",
            nonblank_str("name a Secret, or delete the line for `<user>-secrets`"),
        ),
        command: o.opt(cx, "command", str_list),
        owner_label: o.or(
            cx,
            "ownerLabel",
            nonblank_str("set a label key, e.g. `ownerLabel: nrl-k8s/owner`"),
            d.owner_label,
        ),
        labels: o.or(
            cx,
            "labels",
            |cx: &mut Cx, n: &Node, p: &Path| overlay(cx, n, p, &d.labels, strict_str),
            d.labels.clone(),
        ),
    };
    let v = o.finish(v)?;
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

fn dev_resources(cx: &mut Cx, node: &Node, path: &Path) -> Option<DevResources> {
    let mut o = Obj::open(cx, node, path, &DEV_RESOURCES)?;
    let d = DevResources::default();
    let v = DevResources {
        requests: o.or(
            cx,
            "requests",
            |cx: &mut Cx, n: &Node, p: &Path| overlay(cx, n, p, &d.requests, quantity),
            d.requests.clone(),
        ),
        limits: o.or(
            cx,
            "limits",
            |cx: &mut Cx, n: &Node, p: &Path| overlay(cx, n, p, &d.limits, quantity),
            d.limits.clone(),
        ),
    };
    o.finish(v)
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

impl DevResources {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("requests", dump::str_map(&self.requests))
            .put("limits", dump::str_map(&self.limits))
            .done()
    }
}

impl DevSpec {
    /// Every field in declaration order, nulls where nrl derives the value.
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("podName", dump::str_or_null(&self.pod_name))
            .put("image", dump::str_or_null(&self.image))
            .put(
                "imagePullSecrets",
                dump::opt_node(&self.image_pull_secrets, |l| dump::str_list(l)),
            )
            .put("pvcName", Node::str(self.pvc_name.as_str()))
            .put("mountPath", Node::str(self.mount_path.as_str()))
            .put("workingDir", dump::str_or_null(&self.working_dir))
            .put("avoidNodeLabels", dump::str_list(&self.avoid_node_labels))
            .put("resources", self.resources.to_node())
            .put("envFromSecret", dump::str_or_null(&self.env_from_secret))
            .put(
                "command",
                dump::opt_node(&self.command, |l| dump::str_list(l)),
            )
            .put("ownerLabel", Node::str(self.owner_label.as_str()))
            .put("labels", dump::str_map(&self.labels))
            .done()
    }
}
