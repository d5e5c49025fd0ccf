//! The infra model's JSON Schema, for the files users write: an infra file (`--infra`) and
//! the user defaults (`~/.config/nrl/defaults.yaml`). Built from the `infra_model!` tables
//! (see [`Describe`]), so a key the loader accepts is a key the schema knows.
//!
//! [`Describe`]: crate::config::typed::json_schema::Describe

use serde_json::{Value, json};

use super::InfraConfig;
use crate::config::typed::json_schema::{Describe, SchemaCx, defaults_key};

/// Either form of a file of infra settings: bare keys, or the same keys under `infra:`
/// (whose siblings the loader ignores). Both may name parents with `defaults:`, and
/// `_`-prefixed keys only hold YAML anchors. `extra` adds top-level keys read by someone
/// else (the user defaults' `doctor:`).
fn infra_settings(cx: &mut SchemaCx, extra: &[(&str, Value)]) -> Value {
    InfraConfig::describe(cx);
    let Value::Object(mut bare) = cx.file_root("InfraConfig", true, false) else {
        return json!({});
    };
    let mut wrapped_props = serde_json::Map::new();
    let Value::Object(mut inner) = cx.file_root("InfraConfig", true, false) else {
        return json!({});
    };
    if let Some(Value::Object(props)) = inner.get_mut("properties") {
        props.shift_remove("defaults");
    }
    wrapped_props.insert("infra".into(), Value::Object(inner));
    wrapped_props.insert("defaults".into(), defaults_key());
    for (key, schema) in extra {
        wrapped_props.insert(key.to_string(), schema.clone());
        if let Some(Value::Object(props)) = bare.get_mut("properties") {
            props.insert(key.to_string(), schema.clone());
        }
    }
    json!({
        "type": "object",
        "if": { "required": ["infra"] },
        "then": { "properties": wrapped_props },
        "else": Value::Object(std::mem::take(&mut bare)),
    })
}

/// `--infra FILE`: what an infra file may hold. Nothing is required: every key may come
/// from another layer (its `defaults:` parents, the user defaults; the namespace from the
/// kube context), so what is missing is the loader's to report, after the merge.
pub fn infra_file_schema() -> Value {
    let mut cx = SchemaCx::new(false);
    let root = infra_settings(&mut cx, &[]);
    cx.document(
        "urn:nrl:schema:infra",
        "nrl infra file (the infra half of a recipe + infra pair)",
        root,
    )
}

/// The user defaults: the same settings, of which any may be left to the infra file, plus
/// `doctor` (its schema given by the caller: the doctor's codes).
pub fn defaults_file_schema(doctor: Value) -> Value {
    let mut cx = SchemaCx::new(false);
    let root = infra_settings(&mut cx, &[("doctor", doctor)]);
    cx.document(
        "urn:nrl:schema:defaults",
        "nrl user defaults (~/.config/nrl/defaults.yaml)",
        root,
    )
}
