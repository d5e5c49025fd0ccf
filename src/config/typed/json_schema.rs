//! JSON Schemas (draft 2020-12) of the typed documents, built from the same declarations
//! their readers use: each model type says how it is written in YAML ([`Describe`]), the
//! `infra_model!` table adds its keys, docs, defaults and required fields, so the schema an
//! editor validates with is the loader's own shape.
//!
//! The schema describes what a user should write, which is a little stricter than what the
//! loader coerces: an integer field takes an integer (the loader also takes `"4"` and `4.0`,
//! as pydantic's lax mode does), a boolean field a boolean. Any scalar may instead be an
//! OmegaConf interpolation (`${oc.env:PORT}`), which is resolved before the loader reads it.

use indexmap::IndexMap;
use serde_json::{Map, Value, json};

use super::StrEnum;
use crate::config::node::Node;

/// The JSON Schema dialect every generated schema declares.
pub const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The `$defs` being collected while a schema is built, and how strict it is.
pub struct SchemaCx {
    defs: Map<String, Value>,
    /// Whether fields the model requires are `required` here. A file that is one layer of
    /// several (the user defaults, an infra file that user defaults complete, a file with
    /// `defaults:` parents) requires nothing, because another layer may set the value.
    pub required: bool,
    /// Appended to every definition's name, so that a strict and a lenient variant of the
    /// same models can share one `$defs` (see [`SchemaCx::lenient`]).
    suffix: &'static str,
}

impl SchemaCx {
    pub fn new(required: bool) -> SchemaCx {
        SchemaCx {
            defs: Map::new(),
            required,
            suffix: "",
        }
    }

    /// A context for the lenient variant (nothing required), whose definitions are named
    /// `<Model>Layer`; merge it into the strict one with [`SchemaCx::absorb`].
    pub fn lenient() -> SchemaCx {
        SchemaCx {
            defs: Map::new(),
            required: false,
            suffix: "Layer",
        }
    }

    /// Take `other`'s definitions into this document.
    pub fn absorb(&mut self, other: SchemaCx) {
        self.defs.extend(other.defs);
    }

    /// The name `name`'s definition has in this context.
    pub fn def_name(&self, name: &str) -> String {
        format!("{name}{}", self.suffix)
    }

    /// A `$ref` to the definition `name`, built by `build` the first time it is named.
    pub fn reference(&mut self, name: &str, build: impl FnOnce(&mut SchemaCx) -> Value) -> Value {
        let name = self.def_name(name);
        if !self.defs.contains_key(&name) {
            // A placeholder first, so a model that names itself does not recurse forever.
            self.defs.insert(name.clone(), Value::Bool(true));
            let def = build(self);
            self.defs.insert(name.clone(), def);
        }
        json!({ "$ref": format!("#/$defs/{name}") })
    }

    /// The definition `name` as the top level of a file: the same keys, plus `defaults:`
    /// and, with `scratch`, `_`-prefixed keys (YAML anchors, dropped by the loader). With
    /// `top_required` false, the top level requires nothing (another layer may set it).
    pub fn file_root(&self, name: &str, scratch: bool, top_required: bool) -> Value {
        let mut root = match self.defs.get(&self.def_name(name)) {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        if let Some(Value::Object(props)) = root.get_mut("properties") {
            props.insert("defaults".into(), defaults_key());
        }
        if scratch {
            root.insert("patternProperties".into(), json!({ "^_": {} }));
        }
        if !(self.required && top_required) {
            root.remove("required");
        }
        Value::Object(root)
    }

    /// A complete schema document: `root` with the dialect, an id, a title and the
    /// collected definitions.
    pub fn document(self, id: &str, title: &str, root: Value) -> Value {
        let mut doc = Map::new();
        doc.insert("$schema".into(), DIALECT.into());
        doc.insert("$id".into(), id.into());
        doc.insert("title".into(), title.into());
        if let Value::Object(root) = root {
            doc.extend(root);
        }
        let mut defs = self.defs;
        defs.insert("interpolation".into(), interpolation_def());
        doc.insert("$defs".into(), Value::Object(defs));
        Value::Object(doc)
    }
}

/// An OmegaConf interpolation in place of a value (`${...}`), resolved before validation.
fn interpolation_def() -> Value {
    json!({
        "type": "string",
        "pattern": "\\$\\{",
        "description": "An OmegaConf interpolation (`${user:}`, `${oc.env:VAR}`, `${.other_key}`), resolved before the value is checked.",
    })
}

/// A scalar of `ty`, or an interpolation that yields one.
fn scalar_or_interpolation(schema: Value) -> Value {
    json!({ "anyOf": [schema, { "$ref": "#/$defs/interpolation" }] })
}

/// How a type is written in YAML, as a JSON Schema.
pub trait Describe {
    fn describe(cx: &mut SchemaCx) -> Value;
}

impl Describe for String {
    fn describe(_: &mut SchemaCx) -> Value {
        json!({ "type": "string" })
    }
}

impl Describe for i64 {
    fn describe(_: &mut SchemaCx) -> Value {
        scalar_or_interpolation(json!({ "type": "integer" }))
    }
}

impl Describe for bool {
    fn describe(_: &mut SchemaCx) -> Value {
        scalar_or_interpolation(json!({ "type": "boolean" }))
    }
}

/// A free-form mapping (`affinity`, a RayCluster `spec`), kept as loaded.
impl Describe for Node {
    fn describe(_: &mut SchemaCx) -> Value {
        json!({ "type": "object" })
    }
}

impl<T: Describe> Describe for Vec<T> {
    fn describe(cx: &mut SchemaCx) -> Value {
        json!({ "type": "array", "items": T::describe(cx) })
    }
}

/// An optional field: null means unset.
impl<T: Describe> Describe for Option<T> {
    fn describe(cx: &mut SchemaCx) -> Value {
        nullable(T::describe(cx))
    }
}

/// A mapping keyed by free names (labels, env, deployments).
impl<T: Describe> Describe for IndexMap<String, T> {
    fn describe(cx: &mut SchemaCx) -> Value {
        json!({ "type": "object", "additionalProperties": T::describe(cx) })
    }
}

/// `schema` or null.
pub fn nullable(schema: Value) -> Value {
    json!({ "anyOf": [schema, { "type": "null" }] })
}

/// An enumerated string field: exactly one of its spellings.
pub fn enum_schema<E: StrEnum>() -> Value {
    scalar_or_interpolation(json!({ "enum": E::VALUES }))
}

/// A string.
pub fn string() -> Value {
    json!({ "type": "string" })
}

/// An integer (or an interpolation).
pub fn integer() -> Value {
    i64::describe(&mut SchemaCx::new(false))
}

/// An integer of at least `min` (or an interpolation).
pub fn integer_from(min: i64) -> Value {
    scalar_or_interpolation(json!({ "type": "integer", "minimum": min }))
}

/// A TCP port.
pub fn port() -> Value {
    scalar_or_interpolation(json!({ "type": "integer", "minimum": 1, "maximum": 65535 }))
}

/// A boolean (or an interpolation).
pub fn boolean() -> Value {
    bool::describe(&mut SchemaCx::new(false))
}

/// A mapping of strings to strings.
pub fn string_map() -> Value {
    json!({ "type": "object", "additionalProperties": { "type": "string" } })
}

/// A list of strings.
pub fn string_list() -> Value {
    json!({ "type": "array", "items": { "type": "string" } })
}

/// A free-form mapping.
pub fn free_map() -> Value {
    json!({ "type": "object" })
}

/// A mapping from free names to `value`.
pub fn map_of(value: Value) -> Value {
    json!({ "type": "object", "additionalProperties": value })
}

/// A string with something other than whitespace in it.
pub fn nonblank_string() -> Value {
    json!({ "type": "string", "pattern": "\\S" })
}

/// Only null (a field that must stay unset).
pub fn null() -> Value {
    json!({ "type": "null" })
}

/// Only `false` (a switch whose `true` is refused).
pub fn constant_false() -> Value {
    json!({ "const": false })
}

/// A list that must stay empty.
pub fn empty_list() -> Value {
    json!({ "type": "array", "maxItems": 0 })
}

/// A mapping that must stay empty.
pub fn empty_map() -> Value {
    json!({ "type": "object", "maxProperties": 0 })
}

/// An environment variable name.
pub fn var_name() -> Value {
    json!({ "type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$" })
}

/// A Gym `env` mapping: each value says where it comes from.
pub fn env_map() -> Value {
    json!({
        "type": "object",
        "additionalProperties": {
            "anyOf": [
                {
                    "type": "string",
                    "pattern": "^(lit:[\\s\\S]*|(host|secret):[A-Za-z_][A-Za-z0-9_]*)$",
                    "description": "`lit:VALUE` (as written), `host:VAR` (read from your shell; a secret when the name ends in _KEY, _TOKEN, _SECRET or PASSWORD) or `secret:VAR` (always a secret, delivered through the run's Secret).",
                },
                { "$ref": "#/$defs/interpolation" },
            ],
        },
    })
}

/// The `defaults:` key of a file: parent files, relative to it, merged under it in order.
pub fn defaults_key() -> Value {
    json!({
        "description": "Parent files, relative to this one, merged under it in list order (later wins).",
        "anyOf": [
            { "type": "string" },
            { "type": "array", "items": { "type": "string" } },
        ],
    })
}

/// Exactly the string `text` (a discriminator such as `type: vllm`).
pub fn constant(text: &str) -> Value {
    json!({ "const": text })
}

/// One field of a model, as the model's table declares it.
pub struct FieldSchema {
    pub key: &'static str,
    pub doc: &'static [&'static str],
    pub schema: Value,
    /// The value used when the key is absent (`None`: no default, or null).
    pub default: Option<Value>,
    pub required: bool,
}

/// A model's object schema: its fields in declaration order, nothing else accepted.
pub fn object_schema(cx: &SchemaCx, doc: &[&str], fields: Vec<FieldSchema>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for f in fields {
        let mut schema = match f.schema {
            Value::Object(m) => m,
            other => {
                let mut m = Map::new();
                m.insert("allOf".into(), Value::Array(vec![other]));
                m
            }
        };
        if let Some(text) = doc_text(f.doc) {
            schema.insert("description".into(), text.into());
        }
        if let Some(default) = f.default {
            schema.insert("default".into(), default);
        }
        if f.required && cx.required {
            required.push(Value::from(f.key));
        }
        properties.insert(f.key.to_string(), Value::Object(schema));
    }
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    if let Some(text) = doc_text(doc) {
        out.insert("description".into(), text.into());
    }
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    out.insert("additionalProperties".into(), false.into());
    Value::Object(out)
}

/// Doc-comment lines as one description: lines joined, paragraphs kept, rustdoc link
/// brackets (`[`DevSpec`]`) dropped.
fn doc_text(lines: &[&str]) -> Option<String> {
    let mut out = String::new();
    for line in lines {
        let line = line.trim();
        if line.is_empty() {
            if !out.is_empty() && !out.ends_with("\n\n") {
                out.push_str("\n\n");
            }
            continue;
        }
        if !out.is_empty() && !out.ends_with('\n') {
            out.push(' ');
        }
        out.push_str(&line.replace("[`", "`").replace("`]", "`"));
    }
    let out = out.trim().to_string();
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_lines_join_into_paragraphs_without_rustdoc_links() {
        assert_eq!(
            doc_text(&[" The dev pod (see [`DevSpec`]).", " More.", "", " Next."]).as_deref(),
            Some("The dev pod (see `DevSpec`). More.\n\nNext.")
        );
        assert_eq!(doc_text(&[]), None);
    }

    #[test]
    fn a_model_named_twice_is_defined_once() {
        let mut cx = SchemaCx::new(true);
        let mut builds = 0;
        for _ in 0..2 {
            cx.reference("M", |_| {
                builds += 1;
                json!({ "type": "object" })
            });
        }
        assert_eq!(builds, 1);
        let doc = cx.document("urn:x", "X", json!({ "$ref": "#/$defs/M" }));
        assert_eq!(doc["$defs"]["M"], json!({ "type": "object" }));
        assert_eq!(doc["$schema"], DIALECT);
    }
}
