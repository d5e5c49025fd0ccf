//! The schema compiler (test-only, part of the trimming tool): the JSON schemas under
//! `schemas/` into one arena of small nodes, written out as the static tables of
//! `schemas/compiled.rs` that `schema.rs` reads.
//!
//! Every kind is compiled into the same arena: `$ref`s become node ids, `oneOf`/`anyOf`
//! type unions become type sets, patterns are listed once each. Equivalent nodes are then
//! merged (partition refinement, so the Kubernetes definitions shared by several kinds and
//! the RayCluster spec a RayJob embeds are stored once) and numbered breadth-first from
//! the kinds' roots, so the output is deterministic and each kind's nodes sit together.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

use super::bundle::{K8S_DEFINITIONS, KIND_SOURCES, OBJECT_META};
use super::schema::{Extra, Family, Format, Limits, SchemaId, types};

/// A compiled node, before it is laid out in tables.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Draft {
    pub types: u8,
    pub nullable: bool,
    pub format: Format,
    /// Declared properties, sorted by name.
    pub props: Vec<(String, SchemaId)>,
    pub extra: Extra,
    pub required: Vec<String>,
    pub enum_values: Option<Vec<String>>,
    pub items: Option<SchemaId>,
    pub pattern: Option<u16>,
    pub limits: Limits,
    /// A scalar `default:` (see [`default_value`]).
    pub default: Option<Value>,
    /// `x-kubernetes-list-type: set`, in custom resources.
    pub list_set: bool,
    /// `x-kubernetes-list-map-keys` of a `map` list, in custom resources.
    pub list_keys: Vec<String>,
}

impl Draft {
    fn empty(extra: Extra) -> Draft {
        Draft {
            types: 0,
            nullable: false,
            format: Format::Any,
            props: Vec::new(),
            extra,
            required: Vec::new(),
            enum_values: None,
            items: None,
            pattern: None,
            limits: Limits::default(),
            default: None,
            list_set: false,
            list_keys: Vec::new(),
        }
    }

    pub fn prop(&self, name: &str) -> Option<SchemaId> {
        self.props
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| *id)
    }

    /// The nodes this one refers to, in a fixed order.
    fn children(&self) -> Vec<SchemaId> {
        let mut out: Vec<SchemaId> = self.props.iter().map(|(_, id)| *id).collect();
        if let Extra::Schema(x) = self.extra {
            out.push(x);
        }
        out.extend(self.items);
        out
    }

    /// This node with every child id mapped through `f`.
    fn map_children(&self, f: impl Fn(SchemaId) -> SchemaId) -> Draft {
        let mut d = self.clone();
        d.props.iter_mut().for_each(|(_, id)| *id = f(*id));
        if let Extra::Schema(x) = d.extra {
            d.extra = Extra::Schema(f(x));
        }
        d.items = d.items.map(&f);
        d
    }
}

/// Every bundled kind, compiled.
pub(super) struct Bundle {
    pub nodes: Vec<Draft>,
    pub patterns: Vec<String>,
    /// The root of each kind, in [`KIND_SOURCES`] order.
    pub roots: Vec<SchemaId>,
}

/// Compile the schema files (relative path under `schemas/` -> JSON text).
pub(super) fn compile_bundle(files: &BTreeMap<String, String>) -> Result<Bundle, String> {
    let parse = |file: &str| -> Result<Value, String> {
        let text = files
            .get(file)
            .ok_or_else(|| format!("no schema file {file}"))?;
        serde_json::from_str(text).map_err(|e| format!("{file}: {e}"))
    };
    let k8s = parse(K8S_DEFINITIONS)?;
    let k8s_defs = k8s
        .get("$defs")
        .and_then(Value::as_object)
        .ok_or("_definitions.json has no $defs")?;
    let docs: Vec<Value> = KIND_SOURCES
        .iter()
        .map(|k| parse(k.file))
        .collect::<Result<_, _>>()?;
    let empty = Map::new();
    let mut c = Compiler::new(k8s_defs, Family::Kubernetes);
    let mut roots = Vec::new();
    for (src, doc) in KIND_SOURCES.iter().zip(&docs) {
        // Definition names are per file: a CRD's `$defs` are its own.
        c.defs.clear();
        c.family = src.family;
        c.source = match src.family {
            Family::Kubernetes => k8s_defs,
            // CRD files carry their own `$defs`, ObjectMeta included.
            Family::Crd => doc
                .get("$defs")
                .and_then(Value::as_object)
                .unwrap_or(&empty),
        };
        let root = c
            .compile(doc, src.family, true)
            .map_err(|e| format!("schema of {} {}: {e}", src.api_version, src.kind))?;
        roots.push(root);
    }
    Ok(minimize(Bundle {
        nodes: c.nodes,
        patterns: c.patterns,
        roots,
    }))
}

pub(super) struct Compiler<'j> {
    pub nodes: Vec<Draft>,
    patterns: Vec<String>,
    /// Definition name -> node.
    defs: HashMap<String, SchemaId>,
    /// The `$defs` that `#/$defs/NAME` refers to.
    source: &'j Map<String, Value>,
    /// The kind's family; definitions copied from Kubernetes keep Kubernetes semantics.
    family: Family,
}

impl<'j> Compiler<'j> {
    pub fn new(source: &'j Map<String, Value>, family: Family) -> Compiler<'j> {
        Compiler {
            nodes: Vec::new(),
            patterns: Vec::new(),
            defs: HashMap::new(),
            source,
            family,
        }
    }

    fn push(&mut self, s: Draft) -> SchemaId {
        self.nodes.push(s);
        (self.nodes.len() - 1) as SchemaId
    }

    /// A named definition, compiled once; recursion is fine because the slot is reserved
    /// before the body is compiled.
    fn def(&mut self, name: &str, depth: u32) -> Result<SchemaId, String> {
        if let Some(&id) = self.defs.get(name) {
            return Ok(id);
        }
        let body = self
            .source
            .get(name)
            .ok_or_else(|| format!("$ref to unknown definition `{name}`"))?;
        if let Some(target) = ref_target(body)? {
            if depth > 16 {
                return Err(format!("$ref chain too long at `{name}`"));
            }
            let id = self.def(target, depth + 1)?;
            self.defs.insert(name.to_string(), id);
            return Ok(id);
        }
        let family = if name.starts_with("io.k8s.") {
            Family::Kubernetes
        } else {
            self.family
        };
        let slot = self.push(Draft::empty(Extra::Allow));
        self.defs.insert(name.to_string(), slot);
        let schema = self
            .schema(body, family, false)
            .map_err(|e| format!("in definition `{name}`: {e}"))?;
        self.nodes[slot as usize] = schema;
        Ok(slot)
    }

    pub fn compile(
        &mut self,
        v: &Value,
        family: Family,
        is_root: bool,
    ) -> Result<SchemaId, String> {
        if let Some(target) = ref_target(v)? {
            return self.def(target, 0);
        }
        let s = self.schema(v, family, is_root)?;
        Ok(self.push(s))
    }

    fn schema(&mut self, v: &Value, family: Family, is_root: bool) -> Result<Draft, String> {
        let obj = v.as_object().ok_or("a schema must be an object")?;
        // JSON Schema allows undeclared properties; a custom resource's structural schema
        // prunes them.
        let default_extra = match family {
            Family::Kubernetes => Extra::Allow,
            Family::Crd => Extra::Reject,
        };
        let mut s = Draft::empty(default_extra);
        let mut additional: Option<Extra> = None;
        let mut preserve_unknown = false;
        let mut embedded = false;
        let mut props: Vec<(String, SchemaId)> = Vec::new();
        let mut list_type: Option<String> = None;
        let mut list_keys: Vec<String> = Vec::new();
        for (k, x) in obj {
            match k.as_str() {
                "type" => s.types |= type_bits(x)?,
                "nullable" => s.nullable = x.as_bool().unwrap_or(false),
                "format" => {
                    s.format = match x.as_str() {
                        Some("int32") => Format::Int32,
                        Some("int64") => Format::Int64,
                        Some("byte") => Format::Byte,
                        _ => Format::Any,
                    }
                }
                "properties" => {
                    let map = x.as_object().ok_or("`properties` must be an object")?;
                    for (name, ps) in map {
                        let id = self
                            .compile(ps, family, false)
                            .map_err(|e| format!("{name}: {e}"))?;
                        props.push((name.clone(), id));
                    }
                }
                "additionalProperties" => {
                    additional = Some(match x {
                        Value::Bool(false) => Extra::Reject,
                        Value::Bool(true) => Extra::Allow,
                        _ => Extra::Schema(self.compile(x, family, false)?),
                    })
                }
                "required" => s.required = strings(x, "required")?,
                "enum" => s.enum_values = Some(strings(x, "enum")?),
                "items" => s.items = Some(self.compile(x, family, false)?),
                "oneOf" | "anyOf" => {
                    // Only type unions (int-or-string, quantity) occur; both are checked as
                    // "any branch matches".
                    for branch in x.as_array().ok_or("oneOf/anyOf must be an array")? {
                        let b = branch
                            .as_object()
                            .ok_or("oneOf/anyOf branch must be an object")?;
                        for (bk, bv) in b {
                            match bk.as_str() {
                                "type" => s.types |= type_bits(bv)?,
                                "format" => {}
                                other => {
                                    return Err(format!("unsupported keyword `{other}` in {k}"));
                                }
                            }
                        }
                    }
                }
                "x-kubernetes-int-or-string" => {
                    if x.as_bool() == Some(true) {
                        s.types |= types::INTEGER | types::STRING;
                    }
                }
                "x-kubernetes-preserve-unknown-fields" => {
                    preserve_unknown = x.as_bool() == Some(true)
                }
                "x-kubernetes-embedded-resource" => embedded = x.as_bool() == Some(true),
                "pattern" => {
                    s.pattern = Some(self.pattern(x.as_str().ok_or("pattern must be a string")?)?)
                }
                "minLength" => s.limits.min_length = x.as_u64(),
                "maxLength" => s.limits.max_length = x.as_u64(),
                "minimum" => s.limits.minimum = x.as_f64(),
                "maximum" => s.limits.maximum = x.as_f64(),
                "minItems" => s.limits.min_items = x.as_u64(),
                "maxItems" => s.limits.max_items = x.as_u64(),
                "default" => s.default = Some(default_value(x)?),
                // Uniqueness is part of a custom resource's validation
                // (apiextensions-apiserver `pkg/apiserver/schema/listtype/validation.go`
                // `ValidateListSetsAndMaps`); for built-in kinds the list types are merge
                // hints for server-side apply.
                "x-kubernetes-list-type" => {
                    list_type = x.as_str().map(str::to_string);
                }
                "x-kubernetes-list-map-keys" => {
                    list_keys = strings(x, "x-kubernetes-list-map-keys")?
                }
                "$defs" if is_root => {}
                other => return Err(format!("unsupported schema keyword `{other}`")),
            }
        }
        if embedded {
            // An embedded resource carries its own apiVersion, kind and metadata.
            for (name, t) in [("apiVersion", types::STRING), ("kind", types::STRING)] {
                if !props.iter().any(|(n, _)| n == name) {
                    let mut leaf = Draft::empty(Extra::Allow);
                    leaf.types = t;
                    let id = self.push(leaf);
                    props.push((name.into(), id));
                }
            }
            if !props.iter().any(|(n, _)| n == "metadata") {
                let meta = self.def(OBJECT_META, 0)?;
                props.push(("metadata".into(), meta));
            }
        }
        if family == Family::Crd {
            match list_type.as_deref() {
                None | Some("atomic") => {}
                Some("set") => s.list_set = true,
                Some("map") if !list_keys.is_empty() => s.list_keys = list_keys,
                Some(other) => {
                    return Err(format!(
                        "unsupported x-kubernetes-list-type `{other}` (map lists need keys)"
                    ));
                }
            }
        }
        props.sort_by(|a, b| a.0.cmp(&b.0));
        s.props = props;
        s.extra = match additional {
            Some(e) => e,
            None if preserve_unknown => Extra::Allow,
            None => default_extra,
        };
        if s.types != 0 && s.types & types::OBJECT == 0 {
            // Only mappings have fields: a scalar or list node compiles the same in
            // either family, and merges with its twins.
            s.extra = Extra::Allow;
        }
        Ok(s)
    }

    /// The id of a pattern; the regex itself is compiled at run time, on first use, and
    /// by the tests of `schema.rs`.
    fn pattern(&mut self, source: &str) -> Result<u16, String> {
        regex::Regex::new(source).map_err(|e| format!("pattern {source}: {e}"))?;
        let i = match self.patterns.iter().position(|p| p == source) {
            Some(i) => i,
            None => {
                self.patterns.push(source.to_string());
                self.patterns.len() - 1
            }
        };
        u16::try_from(i).map_err(|_| "too many patterns".to_string())
    }
}

/// A `default:` the tables can hold: a boolean, number or string. The API server applies
/// any JSON value; the bundled CRDs default only scalars, and an object or list default
/// in a newer schema stops the tool instead of being dropped.
fn default_value(v: &Value) -> Result<Value, String> {
    match v {
        Value::Bool(_) | Value::String(_) => Ok(v.clone()),
        Value::Number(n) if n.is_i64() || n.is_f64() => Ok(v.clone()),
        other => Err(format!(
            "unsupported `default` {other}: teach the validator defaults that are not scalars"
        )),
    }
}

/// `Some(name)` when the schema is just a `$ref` to `#/$defs/name`.
fn ref_target(v: &Value) -> Result<Option<&str>, String> {
    let Some(r) = v.get("$ref") else {
        return Ok(None);
    };
    if v.as_object().is_some_and(|o| o.len() > 1) {
        return Err("`$ref` with sibling keywords is not supported".into());
    }
    r.as_str()
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .map(Some)
        .ok_or_else(|| format!("unsupported $ref {r}"))
}

fn type_bits(v: &Value) -> Result<u8, String> {
    let one = |t: &str| -> Result<u8, String> {
        Ok(match t {
            "null" => types::NULL,
            "boolean" => types::BOOLEAN,
            "integer" => types::INTEGER,
            "number" => types::NUMBER,
            "string" => types::STRING,
            "array" => types::ARRAY,
            "object" => types::OBJECT,
            other => return Err(format!("unknown type `{other}`")),
        })
    };
    match v {
        Value::String(t) => one(t),
        Value::Array(ts) => {
            let mut bits = 0;
            for t in ts {
                bits |= one(t.as_str().ok_or("type list must hold strings")?)?;
            }
            Ok(bits)
        }
        _ => Err("`type` must be a string or a list".into()),
    }
}

fn strings(v: &Value, what: &str) -> Result<Vec<String>, String> {
    v.as_array()
        .ok_or_else(|| format!("`{what}` must be a list"))?
        .iter()
        .map(|x| {
            x.as_str()
                .map(Into::into)
                .ok_or_else(|| format!("`{what}` must hold strings"))
        })
        .collect()
}

/// Merge equivalent nodes and number what the roots reach breadth-first.
///
/// Partition refinement: nodes start in classes by their own content (child ids aside);
/// a class is split while its members' children fall in different classes. What is left
/// are classes of nodes that validate exactly alike, recursive definitions included.
fn minimize(b: Bundle) -> Bundle {
    let mut class = number(
        b.nodes
            .iter()
            .map(|d| format!("{:?}", d.map_children(|_| 0))),
    );
    loop {
        let next = number(b.nodes.iter().enumerate().map(|(i, d)| {
            let children: Vec<usize> = d.children().iter().map(|&c| class[c as usize]).collect();
            format!("{} {children:?}", class[i])
        }));
        let stable = count(&next) == count(&class);
        class = next;
        if stable {
            break;
        }
    }
    let mut new_id: HashMap<usize, SchemaId> = HashMap::new();
    let mut order: Vec<usize> = Vec::new();
    let mut queue = VecDeque::new();
    let mut visit = |node: SchemaId, queue: &mut VecDeque<usize>| {
        let c = class[node as usize];
        if let std::collections::hash_map::Entry::Vacant(e) = new_id.entry(c) {
            e.insert(order.len() as SchemaId);
            order.push(node as usize);
            queue.push_back(node as usize);
        }
    };
    for &root in &b.roots {
        visit(root, &mut queue);
        while let Some(i) = queue.pop_front() {
            for child in b.nodes[i].children() {
                visit(child, &mut queue);
            }
        }
    }
    let renumber = |id: SchemaId| new_id[&class[id as usize]];
    Bundle {
        nodes: order
            .iter()
            .map(|&i| b.nodes[i].map_children(renumber))
            .collect(),
        roots: b.roots.iter().map(|&r| renumber(r)).collect(),
        patterns: b.patterns,
    }
}

/// Number distinct keys in order of first appearance.
fn number(keys: impl Iterator<Item = String>) -> Vec<usize> {
    let mut ids: HashMap<String, usize> = HashMap::new();
    keys.map(|k| {
        let next = ids.len();
        *ids.entry(k).or_insert(next)
    })
    .collect()
}

fn count(classes: &[usize]) -> usize {
    classes.iter().collect::<HashSet<_>>().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compiler(defs: &Map<String, Value>) -> Compiler<'_> {
        Compiler::new(defs, Family::Crd)
    }

    #[test]
    fn crd_semantics_for_unknown_fields_and_embedded_resources() {
        let defs: Map<String, Value> = serde_json::from_value(serde_json::json!({
            OBJECT_META: {"type": "object", "properties": {"name": {"type": "string"}},
                          "additionalProperties": false}
        }))
        .expect("defs");
        let mut c = compiler(&defs);
        let doc = serde_json::json!({
            "type": "object",
            "properties": {
                "closed": {"type": "object"},
                "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "free": {"type": "object", "additionalProperties": {"type": "string"}},
                "inner": {"type": "object", "x-kubernetes-embedded-resource": true,
                          "properties": {"spec": {"type": "object"}}},
                "count": {"x-kubernetes-int-or-string": true,
                          "anyOf": [{"type": "integer"}, {"type": "string"}]}
            }
        });
        let root = c.compile(&doc, Family::Crd, true).expect("compiles");
        let node = |id: SchemaId| c.nodes[id as usize].clone();
        let r = node(root);
        let prop = |name: &str| node(r.prop(name).expect(name));
        // A CRD object without properties keeps nothing: the API server prunes it all.
        assert_eq!(prop("closed").extra, Extra::Reject);
        assert_eq!(prop("open").extra, Extra::Allow);
        assert!(matches!(prop("free").extra, Extra::Schema(_)));
        let inner = prop("inner");
        let names: Vec<&str> = inner.props.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["apiVersion", "kind", "metadata", "spec"]);
        assert_eq!(prop("count").types, types::INTEGER | types::STRING);
    }

    #[test]
    fn unknown_keywords_are_refused() {
        let defs = Map::new();
        let mut c = compiler(&defs);
        let v = serde_json::json!({"type": "object", "allOf": []});
        let err = c.compile(&v, Family::Crd, false).unwrap_err();
        assert!(err.contains("allOf"), "{err}");
        let v = serde_json::json!({"type": "string", "pattern": "(unclosed"});
        let err = c.compile(&v, Family::Crd, false).unwrap_err();
        assert!(err.contains("unclosed"), "{err}");
    }

    #[test]
    fn equivalent_nodes_are_stored_once_and_recursion_survives() {
        let defs: Map<String, Value> = serde_json::from_value(serde_json::json!({
            "a": {"type": "object", "properties": {"x": {"type": "string"}, "self": {"$ref": "#/$defs/a"}}},
            "b": {"type": "object", "properties": {"x": {"type": "string"}, "self": {"$ref": "#/$defs/b"}}},
        }))
        .expect("defs");
        let mut c = compiler(&defs);
        let doc = serde_json::json!({
            "type": "object",
            "properties": {
                "one": {"$ref": "#/$defs/a"},
                "two": {"$ref": "#/$defs/b"},
                "three": {"type": "object", "properties": {"x": {"type": "string"}}},
                "label": {"type": "string"}
            }
        });
        let root = c.compile(&doc, Family::Crd, true).expect("compiles");
        let before = c.nodes.len();
        let b = minimize(Bundle {
            nodes: c.nodes,
            patterns: Vec::new(),
            roots: vec![root],
        });
        assert!(b.nodes.len() < before);
        let r = &b.nodes[b.roots[0] as usize];
        let (one, two, three) = (r.prop("one"), r.prop("two"), r.prop("three"));
        assert_eq!(one, two, "equal recursive definitions merge");
        assert_ne!(one, three, "a different shape stays apart");
        let one = &b.nodes[one.expect("one") as usize];
        assert_eq!(one.prop("self"), r.prop("one"), "the cycle is kept");
        assert_eq!(one.prop("x"), r.prop("label"), "equal leaves merge");
        assert_eq!(b.roots[0], 0, "numbered from the root");
    }
}
