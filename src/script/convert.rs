//! Conversions at the edge between configuration trees / JSON and Rhai values.
//!
//! Config trees stay [`Node`]s (ordered, spanned) inside handles; scripts get Rhai maps
//! only when they ask for a value. Rhai maps are sorted, so a map that goes back to YAML
//! comes out in key order.

use rhai::{Array, Dynamic, Map};
use serde_json::Value as Json;

use crate::config::node::{Map as NodeMap, Node, Value};
use crate::diag::{Diag, Result};

/// A config value as a Rhai value: maps → object maps, lists → arrays, null → `()`.
pub fn node_to_dynamic(n: &Node) -> Dynamic {
    match &n.value {
        Value::Null => Dynamic::UNIT,
        Value::Bool(b) => Dynamic::from_bool(*b),
        Value::Int(i) => Dynamic::from_int(*i),
        Value::Float(f) => Dynamic::from_float(*f),
        Value::Str(s) => Dynamic::from(s.clone()),
        Value::List(items) => Dynamic::from_array(items.iter().map(node_to_dynamic).collect()),
        Value::Map(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(k.as_str().into(), node_to_dynamic(v));
            }
            Dynamic::from_map(out)
        }
    }
}

/// A Rhai value as a config value. Handles convert to what they stand for (a manifest to
/// its object); other custom types and function pointers are refused.
pub fn dynamic_to_node(d: &Dynamic) -> Result<Node> {
    let d = d.flatten_clone();
    if d.is_unit() {
        return Ok(Node::null());
    }
    if let Ok(b) = d.as_bool() {
        return Ok(Node::bool(b));
    }
    if let Ok(i) = d.as_int() {
        return Ok(Node::int(i));
    }
    if let Ok(f) = d.as_float() {
        return Ok(Node::new(Value::Float(f)));
    }
    if d.is_string() || d.is_char() {
        return Ok(Node::str(d.to_string()));
    }
    if d.is_array() {
        let arr = d.cast::<Array>();
        let items = arr
            .iter()
            .map(dynamic_to_node)
            .collect::<Result<Vec<_>>>()?;
        return Ok(Node::list(items));
    }
    if d.is_map() {
        let map = d.cast::<Map>();
        let mut out = NodeMap::new();
        for (k, v) in &map {
            out.insert(k.to_string(), dynamic_to_node(v)?);
        }
        return Ok(Node::from_map(out));
    }
    if let Some(m) = d.read_lock::<super::builtins::render::Manifest>() {
        return Ok(m.node().clone());
    }
    // A finding's source position (see the `doctor` built-ins) is data as `file:line:col`.
    if let Some(s) = d.read_lock::<crate::config::source::Span>() {
        return Ok(Node::str(s.location()));
    }
    Err(Diag::new(
        "nrl::script::type",
        format!("a {} cannot be turned into data", d.type_name()),
    )
    .help("pass maps, arrays, strings, numbers, booleans or `()`"))
}

/// JSON as a Rhai value (null → `()`; integers stay integers).
pub fn json_to_dynamic(v: &Json) -> Dynamic {
    match v {
        Json::Null => Dynamic::UNIT,
        Json::Bool(b) => Dynamic::from_bool(*b),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Dynamic::from_int(i),
            None => Dynamic::from_float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Dynamic::from(s.clone()),
        Json::Array(items) => Dynamic::from_array(items.iter().map(json_to_dynamic).collect()),
        Json::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(k.as_str().into(), json_to_dynamic(v));
            }
            Dynamic::from_map(out)
        }
    }
}

/// A Rhai value as JSON (through the config tree, so the same rules apply).
pub fn dynamic_to_json(d: &Dynamic) -> Result<Json> {
    Ok(dynamic_to_node(d)?.to_json())
}

/// Serialize something serde knows (API answers) into a Rhai value.
pub fn to_dynamic<T: serde::Serialize>(value: &T) -> Dynamic {
    match serde_json::to_value(value) {
        Ok(v) => json_to_dynamic(&v),
        Err(_) => Dynamic::UNIT,
    }
}

/// Strings of a Rhai array (`["a", "b"]`); anything else is an error naming `what`.
pub fn string_list(d: &Dynamic, what: &str) -> Result<Vec<String>> {
    let bad = || {
        Diag::new(
            "nrl::script::type",
            format!("{what} must be an array of strings"),
        )
        .help(format!(
            "write it as [\"a\", \"b\"] (got {})",
            d.type_name()
        ))
    };
    if d.is_string() {
        return Ok(vec![d.to_string()]);
    }
    if !d.is_array() {
        return Err(bad());
    }
    d.clone()
        .cast::<Array>()
        .iter()
        .map(|x| {
            if x.is_string() {
                Ok(x.to_string())
            } else {
                Err(bad())
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_values_round_trip() {
        let json = serde_json::json!({"a": [1, 2.5, "x", null, true], "b": {"c": "d"}});
        let node = Node::from_json(&json);
        let d = node_to_dynamic(&node);
        assert!(d.is_map());
        let back = dynamic_to_node(&d).unwrap();
        assert_eq!(back.to_json(), json);
        assert_eq!(dynamic_to_json(&json_to_dynamic(&json)).unwrap(), json);
    }

    #[test]
    fn string_lists() {
        let arr = Dynamic::from_array(vec!["a".into(), "b".into()]);
        assert_eq!(string_list(&arr, "x").unwrap(), ["a", "b"]);
        assert_eq!(string_list(&Dynamic::from("a"), "x").unwrap(), ["a"]);
        assert!(string_list(&Dynamic::from_int(1), "x").is_err());
    }
}
