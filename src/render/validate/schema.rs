//! The bundled schemas, compiled once into an arena of small nodes.
//!
//! The JSON files under `schemas/` are embedded in the binary and compiled on first use
//! (`OnceLock`): `$ref`s become node ids, `oneOf`/`anyOf` type unions become type sets,
//! patterns are compiled once each. Validation then walks this arena and the rendered tree
//! side by side without allocating.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::bundle::{K8S_DEFINITIONS, KIND_SOURCES, OBJECT_META};

pub(super) type SchemaId = u32;

/// JSON types a node accepts, as bits; no bits means any type.
pub(super) mod types {
    pub const NULL: u8 = 1;
    pub const BOOLEAN: u8 = 2;
    pub const INTEGER: u8 = 4;
    pub const NUMBER: u8 = 8;
    pub const STRING: u8 = 16;
    pub const ARRAY: u8 = 32;
    pub const OBJECT: u8 = 64;
}

/// What to do with mapping keys that are not declared properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Extra {
    /// Unknown: rejected by strict built-in schemas, pruned silently from custom resources.
    Reject,
    Allow,
    Schema(SchemaId),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    Any,
    Int32,
    Int64,
    /// base64 (Secret `data`).
    Byte,
}

#[derive(Debug, Clone)]
pub(super) struct Schema {
    pub types: u8,
    pub nullable: bool,
    pub format: Format,
    /// Declared properties, sorted by name for binary search.
    pub props: Box<[(Box<str>, SchemaId)]>,
    pub extra: Extra,
    pub required: Box<[Box<str>]>,
    pub enum_values: Option<Box<[Box<str>]>>,
    pub items: Option<SchemaId>,
    pub pattern: Option<u16>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub min_items: Option<u64>,
    pub max_items: Option<u64>,
}

impl Schema {
    fn empty(extra: Extra) -> Schema {
        Schema {
            types: 0,
            nullable: false,
            format: Format::Any,
            props: Box::new([]),
            extra,
            required: Box::new([]),
            enum_values: None,
            items: None,
            pattern: None,
            min_length: None,
            max_length: None,
            minimum: None,
            maximum: None,
            min_items: None,
            max_items: None,
        }
    }

    pub fn prop(&self, name: &str) -> Option<SchemaId> {
        self.props
            .binary_search_by(|(k, _)| k.as_ref().cmp(name))
            .ok()
            .map(|i| self.props[i].1)
    }

    pub fn prop_names(&self) -> impl Iterator<Item = &str> {
        self.props.iter().map(|(k, _)| k.as_ref())
    }
}

pub(super) struct Pattern {
    pub source: Box<str>,
    pub regex: Regex,
}

/// Where a kind's schema comes from; decides the unknown-field semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    /// Built-in kind: strict schema, unknown fields rejected by the API server.
    Kubernetes,
    /// Custom resource: unknown fields silently pruned by the API server.
    Crd,
}

/// One kind's schema, compiled into its own arena.
pub(super) struct CompiledKind {
    pub family: Family,
    pub root: SchemaId,
    nodes: Vec<Schema>,
    patterns: Vec<Pattern>,
}

impl CompiledKind {
    pub fn node(&self, id: SchemaId) -> &Schema {
        &self.nodes[id as usize]
    }

    pub fn pattern(&self, id: u16) -> &Pattern {
        &self.patterns[id as usize]
    }
}

const KIND_COUNT: usize = KIND_SOURCES.len();

/// Index of the bundled schema for `apiVersion`/`kind`.
pub(super) fn find_kind(api_version: &str, kind: &str) -> Option<usize> {
    KIND_SOURCES
        .iter()
        .position(|k| k.api_version == api_version && k.kind == kind)
}

/// The compiled schema of kind `index`, built on first use: a process validating only a
/// RayJob parses only the RayJob file. An error means the embedded data is broken (a bug
/// the tests catch), never bad user input.
pub(super) fn compiled(index: usize) -> Result<&'static CompiledKind, &'static str> {
    static KINDS: [OnceLock<Result<CompiledKind, String>>; KIND_COUNT] =
        [const { OnceLock::new() }; KIND_COUNT];
    let slot = KINDS.get(index).ok_or("no such bundled kind")?;
    slot.get_or_init(|| compile_kind(index))
        .as_ref()
        .map_err(String::as_str)
}

/// The Kubernetes definitions, parsed once and shared by the built-in kinds.
fn k8s_definitions() -> Result<&'static Map<String, Value>, &'static str> {
    static DEFS: OnceLock<Result<Value, String>> = OnceLock::new();
    DEFS.get_or_init(|| {
        serde_json::from_str(K8S_DEFINITIONS).map_err(|e| format!("_definitions.json: {e}"))
    })
    .as_ref()
    .map_err(String::as_str)?
    .get("$defs")
    .and_then(Value::as_object)
    .ok_or("_definitions.json has no $defs")
}

fn compile_kind(index: usize) -> Result<CompiledKind, String> {
    let src = KIND_SOURCES.get(index).ok_or("no such bundled kind")?;
    let what = format!("schema of {} {}", src.api_version, src.kind);
    let doc: Value = serde_json::from_str(src.text).map_err(|e| format!("{what}: {e}"))?;
    let empty = Map::new();
    let defs = match src.family {
        Family::Kubernetes => k8s_definitions()?,
        // CRD files carry their own `$defs`, ObjectMeta included.
        Family::Crd => doc
            .get("$defs")
            .and_then(Value::as_object)
            .unwrap_or(&empty),
    };
    let mut c = Compiler {
        nodes: Vec::new(),
        patterns: Vec::new(),
        pattern_ids: HashMap::new(),
        defs: HashMap::new(),
        source: defs,
        family: src.family,
    };
    let root = c
        .compile(&doc, src.family, true)
        .map_err(|e| format!("{what}: {e}"))?;
    Ok(CompiledKind {
        family: src.family,
        root,
        nodes: c.nodes,
        patterns: c.patterns,
    })
}

struct Compiler<'j> {
    nodes: Vec<Schema>,
    patterns: Vec<Pattern>,
    pattern_ids: HashMap<String, u16>,
    /// Definition name -> node.
    defs: HashMap<String, SchemaId>,
    /// The `$defs` that `#/$defs/NAME` refers to.
    source: &'j Map<String, Value>,
    /// The kind's family; definitions copied from Kubernetes keep Kubernetes semantics.
    family: Family,
}

impl<'j> Compiler<'j> {
    fn push(&mut self, s: Schema) -> SchemaId {
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
        let slot = self.push(Schema::empty(Extra::Allow));
        self.defs.insert(name.to_string(), slot);
        let schema = self
            .schema(body, family, false)
            .map_err(|e| format!("in definition `{name}`: {e}"))?;
        self.nodes[slot as usize] = schema;
        Ok(slot)
    }

    fn compile(&mut self, v: &Value, family: Family, is_root: bool) -> Result<SchemaId, String> {
        if let Some(target) = ref_target(v)? {
            return self.def(target, 0);
        }
        let s = self.schema(v, family, is_root)?;
        Ok(self.push(s))
    }

    fn schema(&mut self, v: &Value, family: Family, is_root: bool) -> Result<Schema, String> {
        let obj = v.as_object().ok_or("a schema must be an object")?;
        // JSON Schema allows undeclared properties; a custom resource's structural schema
        // prunes them.
        let default_extra = match family {
            Family::Kubernetes => Extra::Allow,
            Family::Crd => Extra::Reject,
        };
        let mut s = Schema::empty(default_extra);
        let mut additional: Option<Extra> = None;
        let mut preserve_unknown = false;
        let mut embedded = false;
        let mut props: Vec<(Box<str>, SchemaId)> = Vec::new();
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
                        props.push((name.as_str().into(), id));
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
                "minLength" => s.min_length = x.as_u64(),
                "maxLength" => s.max_length = x.as_u64(),
                "minimum" => s.minimum = x.as_f64(),
                "maximum" => s.maximum = x.as_f64(),
                "minItems" => s.min_items = x.as_u64(),
                "maxItems" => s.max_items = x.as_u64(),
                "$defs" if is_root => {}
                other => return Err(format!("unsupported schema keyword `{other}`")),
            }
        }
        if embedded {
            // An embedded resource carries its own apiVersion, kind and metadata.
            for (name, t) in [("apiVersion", types::STRING), ("kind", types::STRING)] {
                if !props.iter().any(|(n, _)| n.as_ref() == name) {
                    let mut leaf = Schema::empty(Extra::Allow);
                    leaf.types = t;
                    let id = self.push(leaf);
                    props.push((name.into(), id));
                }
            }
            if !props.iter().any(|(n, _)| n.as_ref() == "metadata") {
                let meta = self.def(OBJECT_META, 0)?;
                props.push(("metadata".into(), meta));
            }
        }
        props.sort_by(|a, b| a.0.cmp(&b.0));
        s.props = props.into_boxed_slice();
        s.extra = match additional {
            Some(e) => e,
            None if preserve_unknown => Extra::Allow,
            None => default_extra,
        };
        Ok(s)
    }

    fn pattern(&mut self, source: &str) -> Result<u16, String> {
        if let Some(&id) = self.pattern_ids.get(source) {
            return Ok(id);
        }
        let regex = Regex::new(source).map_err(|e| format!("pattern {source}: {e}"))?;
        let id = u16::try_from(self.patterns.len()).map_err(|_| "too many patterns")?;
        self.patterns.push(Pattern {
            source: source.into(),
            regex,
        });
        self.pattern_ids.insert(source.to_string(), id);
        Ok(id)
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

fn strings(v: &Value, what: &str) -> Result<Box<[Box<str>]>, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(api_version: &str, kind: &str) -> &'static CompiledKind {
        let i = find_kind(api_version, kind).expect("bundled kind");
        compiled(i).expect("bundled schemas compile")
    }

    #[test]
    fn every_bundled_kind_compiles() {
        for i in 0..KIND_COUNT {
            assert!(compiled(i).is_ok(), "{:?}", compiled(i).err());
        }
        let rc = kind("ray.io/v1", "RayCluster");
        assert_eq!(rc.family, Family::Crd);
        let root = rc.node(rc.root);
        assert!(root.prop("spec").is_some());
        assert!(root.prop("status").is_none(), "status is trimmed");
        // CRD metadata is ObjectMeta, not a bare object.
        let meta = rc.node(root.prop("metadata").expect("metadata"));
        assert!(meta.prop("labels").is_some());
        assert!(meta.prop("generateName").is_some());
        assert!(find_kind("ray.io/v1alpha1", "RayCluster").is_none());
    }

    #[test]
    fn int_or_string_and_quantity_become_type_unions() {
        let svc = kind("v1", "Service");
        let spec = svc.node(svc.node(svc.root).prop("spec").expect("spec"));
        let ports = svc.node(spec.prop("ports").expect("ports"));
        let port = svc.node(ports.items.expect("items"));
        let target = svc.node(port.prop("targetPort").expect("targetPort"));
        assert_eq!(
            target.types,
            types::INTEGER | types::STRING | types::NULL,
            "IntOrString"
        );
        assert_eq!(
            svc.node(port.prop("port").expect("port")).format,
            Format::Int32
        );
        assert_eq!(
            svc.node(spec.prop("type").expect("type"))
                .enum_values
                .as_deref()
                .map(|v| v.len()),
            Some(4),
            "enum overlay applied"
        );
    }

    #[test]
    fn crd_semantics_for_unknown_fields_and_embedded_resources() {
        let defs: Map<String, Value> = serde_json::from_value(serde_json::json!({
            OBJECT_META: {"type": "object", "properties": {"name": {"type": "string"}},
                          "additionalProperties": false}
        }))
        .expect("defs");
        let mut c = Compiler {
            nodes: Vec::new(),
            patterns: Vec::new(),
            pattern_ids: HashMap::new(),
            defs: HashMap::new(),
            source: &defs,
            family: Family::Crd,
        };
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
        let names: Vec<&str> = inner.prop_names().collect();
        assert_eq!(names, ["apiVersion", "kind", "metadata", "spec"]);
        assert_eq!(prop("count").types, types::INTEGER | types::STRING);
    }

    #[test]
    fn unknown_keywords_are_refused() {
        let defs = Map::new();
        let mut c = Compiler {
            nodes: Vec::new(),
            patterns: Vec::new(),
            pattern_ids: HashMap::new(),
            defs: HashMap::new(),
            source: &defs,
            family: Family::Crd,
        };
        let v = serde_json::json!({"type": "object", "allOf": []});
        let err = c.compile(&v, Family::Crd, false).unwrap_err();
        assert!(err.contains("allOf"), "{err}");
    }
}
