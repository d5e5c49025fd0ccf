//! The schemas the fake decodes, prunes and merges with: the Kubernetes OpenAPI definitions
//! for built-in kinds and the KubeRay / ComputeDomain CRDs' `openAPIV3Schema`
//! (`tests/data/reference/schemas/`), loaded once per test process on first use.
//!
//! What is read from them:
//! - Which fields exist, for `fieldValidation` and CRD pruning
//!   (https://kubernetes.io/docs/reference/using-api/api-concepts/#field-validation;
//!   https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#field-pruning).
//!   `x-kubernetes-preserve-unknown-fields`, `additionalProperties` and
//!   `x-kubernetes-int-or-string` accept anything below them.
//! - How server-side apply merges lists and maps: `x-kubernetes-list-type` (`map` with
//!   `x-kubernetes-list-map-keys`, `set`, `atomic`) and `x-kubernetes-map-type`
//!   (https://kubernetes.io/docs/reference/using-api/server-side-apply/#merge-strategy).
//!   A list without `x-kubernetes-list-type` is atomic, except that built-in types with a
//!   `merge` patch strategy are keyed by their patch merge key (kube-openapi
//!   `pkg/schemaconv/smd.go` `getListElementRelationship`).
//! - `metadata` is `ObjectMeta` for every kind (a CRD schema only says `type: object`
//!   there; apiextensions-apiserver `pkg/apiserver/schema/objectmeta` handles it natively).
//!   Its `ownerReferences` list is keyed by `uid`, `finalizers` is a set.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

/// How a list merges in server-side apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListType {
    /// Replaced as a whole; owned as one field.
    Atomic,
    /// Elements merged and owned per key (the key fields, in schema order).
    Map(Vec<String>),
    /// Scalar elements owned one by one. Approximated as atomic (see `apply.rs`).
    Set,
}

/// What a field name finds under an object schema.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    /// A declared field (or a value of a map with typed values).
    Known(Node),
    /// Anything is allowed here and nothing below is typed.
    Untyped,
    /// Not declared: pruned, or an error under `fieldValidation=Strict`.
    Unknown,
}

/// A schema node (references resolved).
#[derive(Debug, Clone, Copy)]
pub struct Node {
    v: &'static Value,
    /// The root of a kind: `metadata` there is ObjectMeta.
    root: bool,
}

struct Schemas {
    /// `$defs` of the Kubernetes definitions.
    defs: &'static Value,
    /// (apiVersion, kind) → root schema, for built-in kinds.
    kinds: HashMap<(String, String), &'static Value>,
}

fn data_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference/schemas")
}

fn leak(v: Value) -> &'static Value {
    Box::leak(Box::new(v))
}

fn load() -> Schemas {
    let dir = data_dir();
    let text = std::fs::read_to_string(dir.join("kubernetes-v1.37-strict/_definitions.json"))
        .unwrap_or_else(|e| panic!("fake_k8s: reading the Kubernetes definitions: {e}"));
    let doc: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("fake_k8s: parsing the Kubernetes definitions: {e}"));
    let defs = leak(doc.get("$defs").cloned().unwrap_or(Value::Null));
    let mut kinds = HashMap::new();
    if let Some(m) = defs.as_object() {
        for def in m.values() {
            let Some(gvks) = def
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
            else {
                continue;
            };
            for gvk in gvks {
                let s = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("");
                let api_version = if s("group").is_empty() {
                    s("version").to_string()
                } else {
                    format!("{}/{}", s("group"), s("version"))
                };
                kinds.insert((api_version, s("kind").to_string()), def);
            }
        }
    }
    Schemas { defs, kinds }
}

/// The CRDs the fake serves with a schema, each parsed on first use (the YAML is large).
const CRD_FILES: &[(&str, &str)] = &[
    ("RayCluster", "kuberay/ray.io_rayclusters.yaml"),
    ("RayJob", "kuberay/ray.io_rayjobs.yaml"),
    (
        "ComputeDomain",
        "nvidia-dra/resource.nvidia.com_computedomains.yaml",
    ),
];

/// A CRD file as JSON. Parsing the YAML costs about a second in a debug build, so the
/// JSON is cached under the target directory and reused while it is newer than the YAML.
fn read_crd(file: &str) -> Value {
    let src = data_dir().join(file);
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fake-k8s-schemas")
        .join(format!("{}.json", file.replace('/', "_")));
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(c), Some(s)) = (modified(&cache), modified(&src))
        && c >= s
        && let Ok(text) = std::fs::read_to_string(&cache)
        && let Ok(v) = serde_json::from_str::<Value>(&text)
    {
        return v;
    }
    let text =
        std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("fake_k8s: reading {file}: {e}"));
    let crd: Value =
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("fake_k8s: parsing {file}: {e}"));
    // Best effort: another test process may be writing it too (hence write, then rename).
    if let Some(dir) = cache.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let tmp = cache.with_extension(format!("json.{}", std::process::id()));
        if std::fs::write(&tmp, crd.to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, &cache);
        }
    }
    crd
}

/// apiVersion → openAPIV3Schema of one CRD.
fn load_crd(file: &str) -> HashMap<String, &'static Value> {
    let crd = read_crd(file);
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = HashMap::new();
    for v in crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let (Some(version), Some(schema)) = (
            v.get("name").and_then(Value::as_str),
            v.pointer("/schema/openAPIV3Schema"),
        ) {
            out.insert(format!("{group}/{version}"), leak(schema.clone()));
        }
    }
    out
}

fn crd_schema(api_version: &str, kind: &str) -> Option<&'static Value> {
    static CRDS: [OnceLock<HashMap<String, &'static Value>>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let i = CRD_FILES.iter().position(|(k, _)| *k == kind)?;
    CRDS[i]
        .get_or_init(|| load_crd(CRD_FILES[i].1))
        .get(api_version)
        .copied()
}

fn schemas() -> &'static Schemas {
    static S: OnceLock<Schemas> = OnceLock::new();
    S.get_or_init(load)
}

/// Follow `$ref`s (`#/$defs/<name>` or `/api/_definitions.json#/$defs/<name>`).
fn resolve(mut v: &'static Value) -> &'static Value {
    for _ in 0..16 {
        let Some(r) = v.get("$ref").and_then(Value::as_str) else {
            return v;
        };
        let name = r.rsplit('/').next().unwrap_or("");
        match schemas().defs.get(name) {
            Some(d) => v = d,
            None => return v,
        }
    }
    v
}

/// The schema of a kind, if the fake has one (KAI queues, for one, have none).
pub fn for_kind(api_version: &str, kind: &str) -> Option<Node> {
    let v = match crd_schema(api_version, kind) {
        Some(v) => v,
        None => schemas()
            .kinds
            .get(&(api_version.to_string(), kind.to_string()))
            .copied()?,
    };
    Some(Node {
        v: resolve(v),
        root: true,
    })
}

/// The schema of an object, by its own `apiVersion` and `kind`.
pub fn for_object(obj: &Value) -> Option<Node> {
    let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
    for_kind(s("apiVersion"), s("kind"))
}

fn object_meta() -> Option<Node> {
    schemas()
        .defs
        .get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .map(|v| Node { v, root: false })
}

impl Node {
    fn child(v: &'static Value) -> Node {
        Node {
            v: resolve(v),
            root: false,
        }
    }

    fn preserves_unknown(&self) -> bool {
        self.v.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
            || self.v.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
            || self.v.get("additionalProperties") == Some(&Value::Bool(true))
    }

    /// The schema of field `name` of this object schema.
    pub fn field(&self, name: &str) -> Field {
        if self.root && name == "metadata" {
            return object_meta().map_or(Field::Untyped, Field::Known);
        }
        if let Some(p) = self.v.pointer("/properties").and_then(|p| p.get(name)) {
            return Field::Known(Node::child(p));
        }
        match self.v.get("additionalProperties") {
            Some(ap @ Value::Object(_)) => Field::Known(Node::child(ap)),
            Some(Value::Bool(true)) => Field::Untyped,
            _ if self.preserves_unknown() => Field::Untyped,
            // An object schema without properties (`type: object` alone) outside a CRD
            // root declares nothing; built-in free-form fields carry additionalProperties.
            _ if self.v.get("properties").is_none() && self.v.get("type").is_none() => {
                Field::Untyped
            }
            _ => Field::Unknown,
        }
    }

    /// The element schema of a list.
    pub fn items(&self) -> Option<Node> {
        self.v.get("items").map(Node::child)
    }

    pub fn list_type(&self) -> ListType {
        let keys = |k: &str| -> Vec<String> {
            match self.v.get(k) {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                Some(Value::String(s)) => vec![s.clone()],
                _ => Vec::new(),
            }
        };
        match self.v.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("map") => ListType::Map(keys("x-kubernetes-list-map-keys")),
            Some("set") => ListType::Set,
            Some(_) => ListType::Atomic,
            None => {
                let merge = self
                    .v
                    .get("x-kubernetes-patch-strategy")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.split(',').any(|p| p == "merge"));
                let key = keys("x-kubernetes-patch-merge-key");
                if merge && !key.is_empty() {
                    ListType::Map(key)
                } else {
                    ListType::Atomic
                }
            }
        }
    }

    /// The key a strategic merge patch merges this list by, when its patch strategy is
    /// `merge` (built-in kinds only).
    pub fn patch_merge_key(&self) -> Option<String> {
        let merge = self
            .v
            .get("x-kubernetes-patch-strategy")
            .and_then(Value::as_str)
            .is_some_and(|s| s.split(',').any(|p| p == "merge"));
        merge
            .then(|| {
                self.v
                    .get("x-kubernetes-patch-merge-key")
                    .and_then(Value::as_str)
            })
            .flatten()
            .map(str::to_string)
    }

    /// `x-kubernetes-map-type: atomic` (or a struct marked atomic): owned as one field.
    pub fn atomic_map(&self) -> bool {
        self.v.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
    }
}

/// Fields of `obj` its schema does not declare, as `spec.x` / `spec.list[0].y` paths.
pub fn unknown_fields(obj: &Value, node: Node) -> Vec<String> {
    let mut out = Vec::new();
    walk(obj, node, "", &mut out, false);
    out
}

/// Remove the fields `obj`'s schema does not declare (CRD pruning), returning their paths.
pub fn prune(obj: &mut Value, node: Node) -> Vec<String> {
    let mut out = Vec::new();
    walk_mut(obj, node, "", &mut out);
    out
}

fn join(prefix: &str, k: &str) -> String {
    if prefix.is_empty() {
        k.to_string()
    } else {
        format!("{prefix}.{k}")
    }
}

fn walk(v: &Value, node: Node, prefix: &str, out: &mut Vec<String>, _in_list: bool) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                match node.field(k) {
                    Field::Known(n) => walk(child, n, &join(prefix, k), out, false),
                    Field::Untyped => {}
                    Field::Unknown => out.push(join(prefix, k)),
                }
            }
        }
        Value::Array(items) => {
            if let Some(n) = node.items() {
                for (i, item) in items.iter().enumerate() {
                    walk(item, n, &format!("{prefix}[{i}]"), out, true);
                }
            }
        }
        _ => {}
    }
}

fn walk_mut(v: &mut Value, node: Node, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            let mut drop = Vec::new();
            for (k, child) in m.iter_mut() {
                match node.field(k) {
                    Field::Known(n) => walk_mut(child, n, &join(prefix, k), out),
                    Field::Untyped => {}
                    Field::Unknown => {
                        out.push(join(prefix, k));
                        drop.push(k.clone());
                    }
                }
            }
            for k in drop {
                m.remove(&k);
            }
        }
        Value::Array(items) => {
            if let Some(n) = node.items() {
                for (i, item) in items.iter_mut().enumerate() {
                    walk_mut(item, n, &format!("{prefix}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// The key of an element of a `map` list: `{"name":"x"}` as JSON text, key fields in
/// schema order. Fields missing from the element are left out.
pub fn element_key(elem: &Value, keys: &[String]) -> String {
    let mut m = serde_json::Map::new();
    for k in keys {
        if let Some(v) = elem.get(k) {
            m.insert(k.clone(), v.clone());
        }
    }
    Value::Object(m).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_load_times() {
        let t = std::time::Instant::now();
        let _ = for_kind("v1", "Pod");
        let builtin = t.elapsed();
        let _ = for_kind("ray.io/v1", "RayCluster");
        let rc = t.elapsed() - builtin;
        let _ = for_kind("ray.io/v1", "RayJob");
        eprintln!(
            "schema load: built-in {builtin:?}, RayCluster {rc:?}, all {:?}",
            t.elapsed()
        );
    }

    #[test]
    fn workergroupspecs_is_atomic_and_containers_keyed_by_name() {
        let rc = for_kind("ray.io/v1", "RayCluster").expect("RayCluster schema");
        let Field::Known(spec) = rc.field("spec") else {
            panic!("spec")
        };
        let Field::Known(wgs) = spec.field("workerGroupSpecs") else {
            panic!("workerGroupSpecs")
        };
        assert_eq!(wgs.list_type(), ListType::Atomic);
        let pod = for_kind("v1", "Pod").expect("Pod schema");
        let Field::Known(ps) = pod.field("spec") else {
            panic!()
        };
        let Field::Known(c) = ps.field("containers") else {
            panic!()
        };
        assert_eq!(c.list_type(), ListType::Map(vec!["name".into()]));
        let Field::Known(meta) = rc.field("metadata") else {
            panic!()
        };
        let Field::Known(owners) = meta.field("ownerReferences") else {
            panic!()
        };
        assert_eq!(owners.list_type(), ListType::Map(vec!["uid".into()]));
    }
}
