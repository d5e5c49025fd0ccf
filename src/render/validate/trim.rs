//! The schema trimming tool (test-only). It regenerates `schemas/` from the reference
//! schemas (`tests/data/reference/schemas/`, copies of the upstream files):
//!
//! - Kubernetes: the kinds nrl renders plus every definition reachable from them; root
//!   `status` is dropped (nrl never writes status).
//! - CRDs (KubeRay RayCluster/RayJob, NVIDIA ComputeDomain): the `openAPIV3Schema` of the
//!   version nrl renders, converted to JSON, root `status` dropped, and large subtrees that
//!   repeat (pod templates, containers, probes) moved once into `$defs` and referenced.
//! - Everywhere: keywords the validator does not use (descriptions, patch hints, CEL
//!   rules) are removed; `default:` is kept, because the API server applies it before it
//!   checks `required`, and so are list types (`x-kubernetes-list-type`/`-map-keys`), whose
//!   uniqueness a custom resource's validation checks. Unknown keywords stop the tool, so nothing a newer
//!   schema adds is dropped unnoticed.
//! - `schemas/enum-overlay.json` adds the enums Kubernetes documents only in prose (the
//!   OpenAPI schema types `imagePullPolicy` as a plain string). Kubernetes definitions get
//!   them by name; CRDs embed those structures without names, so a CRD object schema gets
//!   them when its property set matches the named definition's (Jaccard >= 0.8).
//!
//! - `schemas/compiled.rs`: all of the above compiled (`compile.rs`) into the static tables
//!   the binary embeds (`codegen.rs`), so nrl never parses JSON schemas at run time.
//!
//! `cargo test --lib render::validate::trim` checks that the vendored files are exactly
//! what this produces; `NRL_UPDATE_SCHEMAS=1` writes them instead.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::fs;
use std::path::Path;

use serde_json::{Map, Value};

use super::bundle::OBJECT_META;
use super::codegen;
use super::compile::compile_bundle;
use super::testdata::{reference_dir, vendored_dir};

/// Kubernetes kinds nrl renders: (source file, output file).
const K8S_ROOTS: &[&str] = &[
    "configmap-v1.json",
    "deployment-apps-v1.json",
    "job-batch-v1.json",
    "pod-v1.json",
    "resourceclaimtemplate-resource-v1.json",
    "secret-v1.json",
    "service-v1.json",
];

struct Crd {
    source: &'static str,
    version: &'static str,
    out: &'static str,
}

const CRDS: &[Crd] = &[
    Crd {
        source: "kuberay/ray.io_rayclusters.yaml",
        version: "v1",
        out: "kuberay/rayclusters.ray.io.v1.json",
    },
    Crd {
        source: "kuberay/ray.io_rayjobs.yaml",
        version: "v1",
        out: "kuberay/rayjobs.ray.io.v1.json",
    },
    Crd {
        source: "nvidia-dra/resource.nvidia.com_computedomains.yaml",
        version: "v1beta1",
        out: "nvidia-dra/computedomains.resource.nvidia.com.v1beta1.json",
    },
];

/// Files copied as they are.
const COPIED: &[(&str, &str)] = &[
    ("kuberay/LICENSE", "kuberay/LICENSE"),
    ("kuberay/VERSION", "kuberay/VERSION"),
];

const K8S_OUT: &str = "kubernetes-v1.37";

/// The compiled tables `schema.rs` includes.
const COMPILED: &str = "compiled.rs";

/// Subtrees smaller than this (bytes of compact JSON) stay inline even when repeated.
const DEDUP_MIN_BYTES: usize = 1000;

/// Keywords kept because the validator uses them.
const KEPT: &[&str] = &[
    "type",
    "required",
    "enum",
    "format",
    "nullable",
    "pattern",
    "maxLength",
    "minLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "default",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
];

/// Keywords dropped: documentation, merge hints, CEL rules (translated by hand in
/// `server_rules.rs`, whose test checks the list against the CRDs).
const DROPPED: &[&str] = &[
    "description",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-group-version-kind",
    "x-kubernetes-unions",
    "x-kubernetes-validations",
    "$schema",
    "$id",
];

/// Produce every generated file: relative path under `schemas/` -> content.
pub fn generate(src: &Path, overlay: &Value) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let overlay = overlay.as_object().expect("enum overlay is a JSON object");

    // Kubernetes: roots, then the reachable definitions.
    let defs_text = read(&src.join("kubernetes-v1.37-strict/_definitions.json"));
    let defs_json: Value = serde_json::from_str(&defs_text).expect("_definitions.json parses");
    let all_defs = defs_json["$defs"].as_object().expect("$defs");
    let mut queue = VecDeque::new();
    for root in K8S_ROOTS {
        let text = read(&src.join("kubernetes-v1.37-strict").join(root));
        let json: Value = serde_json::from_str(&text).expect("root schema parses");
        let mut cleaned = clean(&json, root);
        drop_status(&mut cleaned);
        collect_refs(&cleaned, &mut queue);
        out.insert(format!("{K8S_OUT}/{root}"), pretty(&cleaned));
    }
    let mut reachable = HashSet::new();
    while let Some(name) = queue.pop_front() {
        if !reachable.insert(name.clone()) {
            continue;
        }
        let def = all_defs
            .get(&name)
            .unwrap_or_else(|| panic!("$ref to unknown definition {name}"));
        collect_refs(&clean(def, &name), &mut queue);
    }
    let mut kept = Map::new();
    for (name, def) in all_defs {
        if reachable.contains(name) {
            kept.insert(name.clone(), clean(def, name));
        }
    }
    apply_overlay_to_definitions(&mut kept, overlay);
    let fingerprints = overlay_fingerprints(&kept, overlay);
    let defs_for_crds = kept.clone();
    let mut wrapper = Map::new();
    wrapper.insert("$defs".into(), Value::Object(kept));
    out.insert(
        format!("{K8S_OUT}/_definitions.json"),
        pretty(&Value::Object(wrapper)),
    );

    // CRDs.
    for crd in CRDS {
        let text = read(&src.join(crd.source));
        let doc: Value = serde_saphyr::from_str(&text).expect("CRD YAML parses");
        let version = doc["spec"]["versions"]
            .as_array()
            .expect("spec.versions")
            .iter()
            .find(|v| v["name"] == crd.version)
            .unwrap_or_else(|| panic!("{} has no version {}", crd.source, crd.version));
        let schema = &version["schema"]["openAPIV3Schema"];
        let mut cleaned = clean(schema, crd.out);
        drop_status(&mut cleaned);
        apply_overlay_by_fingerprint(&mut cleaned, &fingerprints);
        let mut deduped = dedup(cleaned);
        add_object_meta(&mut deduped, &defs_for_crds);
        out.insert(crd.out.to_string(), pretty(&deduped));
    }
    for (from, to) in COPIED {
        out.insert((*to).to_string(), read(&src.join(from)));
    }
    // What the binary embeds: the schemas above, compiled into static tables.
    let bundle = compile_bundle(&out).unwrap_or_else(|e| panic!("bundled schemas: {e}"));
    out.insert(COMPILED.to_string(), codegen::render(&bundle));
    out
}

/// A CRD declares `metadata` as a bare object; the API server validates it as ObjectMeta
/// itself. Point it at ObjectMeta, copied with what it reaches into the CRD's `$defs`, so
/// each CRD file stands alone.
fn add_object_meta(root: &mut Value, k8s_defs: &Map<String, Value>) {
    let mut queue = VecDeque::from([OBJECT_META.to_string()]);
    let mut names = BTreeSet::new();
    while let Some(name) = queue.pop_front() {
        if names.insert(name.clone()) {
            collect_refs(&k8s_defs[name.as_str()], &mut queue);
        }
    }
    let obj = root.as_object_mut().expect("root schema is an object");
    let props = obj
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .expect("CRD root has properties");
    let mut meta = Map::new();
    meta.insert(
        "$ref".into(),
        Value::String(format!("#/$defs/{OBJECT_META}")),
    );
    props.insert("metadata".into(), Value::Object(meta));
    let defs = obj
        .entry("$defs")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("$defs is an object");
    for name in names {
        defs.insert(name.clone(), k8s_defs[name.as_str()].clone());
    }
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("JSON serialises");
    s.push('\n');
    s
}

/// Keep only the keywords the validator uses, walking schema positions only (a property
/// called `description` is a property, not a keyword).
fn clean(schema: &Value, at: &str) -> Value {
    let Some(obj) = schema.as_object() else {
        panic!("schema at {at} is not an object");
    };
    let mut out = Map::new();
    for (k, v) in obj {
        match k.as_str() {
            "properties" => {
                let props = v.as_object().expect("properties is an object");
                let cleaned = props
                    .iter()
                    .map(|(name, s)| (name.clone(), clean(s, &format!("{at}.{name}"))))
                    .collect();
                out.insert(k.clone(), Value::Object(cleaned));
            }
            "items" => {
                out.insert(k.clone(), clean(v, &format!("{at}[]")));
            }
            "additionalProperties" => {
                let cleaned = match v {
                    Value::Bool(_) => v.clone(),
                    _ => clean(v, &format!("{at}{{}}")),
                };
                out.insert(k.clone(), cleaned);
            }
            "oneOf" | "anyOf" => {
                let arr = v.as_array().expect("oneOf/anyOf is an array");
                let cleaned = arr
                    .iter()
                    .enumerate()
                    .map(|(i, s)| clean(s, &format!("{at}.{k}[{i}]")))
                    .collect();
                out.insert(k.clone(), Value::Array(cleaned));
            }
            "$ref" => {
                let r = v.as_str().expect("$ref is a string");
                let name = r
                    .rsplit_once("#/$defs/")
                    .map(|(_, n)| n)
                    .unwrap_or_else(|| {
                        panic!("unsupported $ref {r} at {at}");
                    });
                out.insert(k.clone(), Value::String(format!("#/$defs/{name}")));
            }
            kw if KEPT.contains(&kw) => {
                out.insert(k.clone(), v.clone());
            }
            kw if DROPPED.contains(&kw) => {}
            kw => {
                panic!("unsupported schema keyword `{kw}` at {at}; teach the validator or drop it")
            }
        }
    }
    Value::Object(out)
}

fn drop_status(root: &mut Value) {
    if let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) {
        props.shift_remove("status");
    }
}

fn collect_refs(v: &Value, queue: &mut VecDeque<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    if let Some(name) = x.as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
                        queue.push_back(name.to_string());
                    }
                } else {
                    collect_refs(x, queue);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, queue)),
        _ => {}
    }
}

fn overlay_entries(overlay: &Map<String, Value>) -> Vec<(&str, &str, &Value)> {
    let mut v = Vec::new();
    for (def, props) in overlay {
        let props = props.as_object().expect("overlay entry is an object");
        for (prop, values) in props {
            v.push((def.as_str(), prop.as_str(), values));
        }
    }
    v
}

/// Put the overlay's enums on the named Kubernetes definitions; every entry must name a
/// reachable definition and an existing string property, so a stale overlay fails loudly.
fn apply_overlay_to_definitions(defs: &mut Map<String, Value>, overlay: &Map<String, Value>) {
    for (def, prop, values) in overlay_entries(overlay) {
        let target = defs
            .get_mut(def)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(prop))
            .unwrap_or_else(|| panic!("enum overlay names {def}.{prop}, which is not reachable"));
        set_enum(target, values, &format!("{def}.{prop}"));
    }
}

fn set_enum(target: &mut Value, values: &Value, at: &str) {
    let is_string = match &target["type"] {
        Value::String(t) => t == "string",
        Value::Array(ts) => ts.iter().any(|t| t == "string"),
        _ => false,
    };
    assert!(is_string, "enum overlay target {at} is not a string");
    let obj = target
        .as_object_mut()
        .expect("property schema is an object");
    obj.insert("enum".into(), values.clone());
}

/// For each overlay definition of the core API group: its property names and enums.
struct Fingerprint<'a> {
    props: BTreeSet<String>,
    enums: Vec<(&'a str, &'a Value)>,
}

fn overlay_fingerprints<'a>(
    defs: &Map<String, Value>,
    overlay: &'a Map<String, Value>,
) -> Vec<Fingerprint<'a>> {
    let mut out: Vec<Fingerprint<'a>> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (def, prop, values) in overlay_entries(overlay) {
        // Pod templates and Services are what CRDs embed; all of it is core/v1.
        if !def.starts_with("io.k8s.api.core.v1.") {
            continue;
        }
        let i = *index.entry(def).or_insert_with(|| {
            let props = defs[def]["properties"]
                .as_object()
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            out.push(Fingerprint {
                props,
                enums: Vec::new(),
            });
            out.len() - 1
        });
        out[i].enums.push((prop, values));
    }
    out
}

fn apply_overlay_by_fingerprint(schema: &mut Value, fps: &[Fingerprint<'_>]) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        let names: BTreeSet<String> = props.keys().cloned().collect();
        let mut best: Option<(f64, &Fingerprint<'_>)> = None;
        for fp in fps {
            let inter = names.intersection(&fp.props).count() as f64;
            let union = names.union(&fp.props).count() as f64;
            let score = if union == 0.0 { 0.0 } else { inter / union };
            let all_present = fp.enums.iter().all(|(p, _)| names.contains(*p));
            if score >= 0.8 && all_present && best.is_none_or(|(s, _)| score > s) {
                best = Some((score, fp));
            }
        }
        if let Some((_, fp)) = best {
            let props = schema["properties"].as_object_mut().expect("checked above");
            for (prop, values) in &fp.enums {
                if let Some(target) = props.get_mut(*prop) {
                    set_enum(target, values, prop);
                }
            }
        }
    }
    for_each_child_schema(schema, &mut |child| {
        apply_overlay_by_fingerprint(child, fps)
    });
}

fn for_each_child_schema(schema: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    for (k, v) in obj.iter_mut() {
        match k.as_str() {
            "properties" => {
                if let Some(p) = v.as_object_mut() {
                    p.values_mut().for_each(&mut *f);
                }
            }
            "items" => f(v),
            "additionalProperties" if v.is_object() => f(v),
            "oneOf" | "anyOf" => {
                if let Some(a) = v.as_array_mut() {
                    a.iter_mut().for_each(&mut *f);
                }
            }
            _ => {}
        }
    }
}

/// Compact JSON with sorted keys: equal subtrees get equal text.
fn canonical(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).expect("string serialises"));
                    out.push(':');
                    write(&m[k.as_str()], out);
                }
                out.push('}');
            }
            other => out.push_str(&serde_json::to_string(other).expect("value serialises")),
        }
    }
    let mut s = String::new();
    write(v, &mut s);
    s
}

/// Move large repeated subtrees into `$defs`, named after the path of their first use.
fn dedup(root: Value) -> Value {
    let mut counts: HashMap<String, usize> = HashMap::new();
    count_subtrees(&root, &mut counts, true);
    let mut d = Dedup {
        counts,
        names: HashMap::new(),
        defs: Map::new(),
    };
    let mut root = d.rewrite_children(root, "");
    if !d.defs.is_empty() {
        let obj = root.as_object_mut().expect("root schema is an object");
        obj.insert("$defs".into(), Value::Object(d.defs));
    }
    root
}

/// Count each subtree once per place it would still appear after the outer repeats are
/// shared: a subtree seen before is not descended into again.
fn count_subtrees(v: &Value, counts: &mut HashMap<String, usize>, is_root: bool) {
    if !is_root {
        let c = counts.entry(canonical(v)).or_insert(0);
        *c += 1;
        if *c > 1 {
            return;
        }
    }
    for child in child_schemas(v) {
        count_subtrees(child, counts, false);
    }
}

fn child_schemas(v: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    let Some(obj) = v.as_object() else {
        return out;
    };
    for (k, x) in obj {
        match k.as_str() {
            "properties" => out.extend(x.as_object().into_iter().flat_map(|p| p.values())),
            "items" => out.push(x),
            "additionalProperties" if x.is_object() => out.push(x),
            "oneOf" | "anyOf" => out.extend(x.as_array().into_iter().flatten()),
            _ => {}
        }
    }
    out
}

struct Dedup {
    counts: HashMap<String, usize>,
    names: HashMap<String, String>,
    defs: Map<String, Value>,
}

impl Dedup {
    fn rewrite(&mut self, v: Value, path: &str) -> Value {
        let key = canonical(&v);
        let shared = key.len() >= DEDUP_MIN_BYTES && self.counts.get(&key).is_some_and(|c| *c > 1);
        if !shared {
            return self.rewrite_children(v, path);
        }
        let name = match self.names.get(&key) {
            Some(n) => n.clone(),
            None => {
                let name = path.trim_start_matches('.').to_string();
                self.names.insert(key, name.clone());
                let body = self.rewrite_children(v, path);
                self.defs.insert(name.clone(), body);
                name
            }
        };
        let mut r = Map::new();
        r.insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
        Value::Object(r)
    }

    fn rewrite_children(&mut self, v: Value, path: &str) -> Value {
        let Value::Object(obj) = v else {
            return v;
        };
        let mut out = Map::new();
        for (k, x) in obj {
            let x = match k.as_str() {
                "properties" => match x {
                    Value::Object(props) => Value::Object(
                        props
                            .into_iter()
                            .map(|(n, s)| {
                                let s = self.rewrite(s, &format!("{path}.{n}"));
                                (n, s)
                            })
                            .collect(),
                    ),
                    other => other,
                },
                "items" => self.rewrite(x, &format!("{path}[]")),
                "additionalProperties" if x.is_object() => self.rewrite(x, &format!("{path}{{}}")),
                "oneOf" | "anyOf" => match x {
                    Value::Array(a) => Value::Array(
                        a.into_iter()
                            .enumerate()
                            .map(|(i, s)| self.rewrite(s, &format!("{path}.{k}[{i}]")))
                            .collect(),
                    ),
                    other => other,
                },
                _ => x,
            };
            out.insert(k, x);
        }
        Value::Object(out)
    }
}

fn load_overlay() -> Value {
    let p = vendored_dir().join("enum-overlay.json");
    serde_json::from_str(&read(&p)).expect("enum-overlay.json parses")
}

#[test]
fn vendored_schemas_match_the_trimming_tool() {
    let src = reference_dir("schemas");
    let generated = generate(&src, &load_overlay());
    let root = vendored_dir();
    let update = std::env::var_os("NRL_UPDATE_SCHEMAS").is_some();
    let mut stale = Vec::new();
    for (rel, content) in &generated {
        let path = root.join(rel);
        if update {
            fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
            fs::write(&path, content).expect("write schema");
        } else if fs::read_to_string(&path).ok().as_deref() != Some(content.as_str()) {
            stale.push(rel.clone());
        }
    }
    assert!(
        stale.is_empty(),
        "vendored schemas differ from the trimming tool's output: {stale:?}\n\
         regenerate with `NRL_UPDATE_SCHEMAS=1 cargo test --lib render::validate::trim`"
    );
}

#[test]
fn dedup_shares_repeated_subtrees_once() {
    let big: Value = serde_json::json!({
        "type": "object",
        "properties": (0..60).map(|i| (format!("field{i}"), serde_json::json!({"type": "string"})))
            .collect::<Map<String, Value>>()
    });
    let root = serde_json::json!({
        "type": "object",
        "properties": {"a": big.clone(), "b": {"type": "array", "items": big}}
    });
    let out = dedup(root);
    assert_eq!(out["properties"]["a"]["$ref"], "#/$defs/a");
    assert_eq!(out["properties"]["b"]["items"]["$ref"], "#/$defs/a");
    assert_eq!(out["$defs"]["a"]["properties"]["field0"]["type"], "string");
}
