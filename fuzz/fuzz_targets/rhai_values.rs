//! The conversions at the edge between Rhai values and nrl's data: what a built-in does
//! with the values a script hands it (`dump_yaml`, `dump_json`, `table`, string lists),
//! and `parse_yaml` of what `dump_yaml` wrote, which must give the same value back.

#![no_main]

#[path = "common.rs"]
mod common;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use nrl::config::source::{SourceKind, add_source};
use nrl::config::yaml::parse_source;
use nrl::render::emit::to_yaml;
use nrl::script::builtins::data::render_table;
use nrl::script::convert::{dynamic_to_json, dynamic_to_node, node_to_dynamic, string_list};
use rhai::{Array, Blob, Dynamic, FnPtr, Map};

/// A Rhai value a script can build.
#[derive(Debug, Arbitrary)]
enum Value {
    Unit,
    Bool(bool),
    Int(i64),
    /// Any bit pattern: NaN, infinities and subnormals included.
    Float(u64),
    Str(String),
    Char(char),
    Blob(Vec<u8>),
    Fn(String),
    Array(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl Value {
    fn to_dynamic(&self, depth: usize) -> Dynamic {
        if depth > 32 {
            return Dynamic::UNIT;
        }
        match self {
            Value::Unit => Dynamic::UNIT,
            Value::Bool(b) => Dynamic::from_bool(*b),
            Value::Int(i) => Dynamic::from_int(*i),
            Value::Float(bits) => Dynamic::from_float(f64::from_bits(*bits)),
            Value::Str(s) => Dynamic::from(s.clone()),
            Value::Char(c) => Dynamic::from_char(*c),
            Value::Blob(b) => Dynamic::from_blob(Blob::from(b.clone())),
            Value::Fn(name) => FnPtr::new(name).map(Dynamic::from).unwrap_or(Dynamic::UNIT),
            Value::Array(items) => Dynamic::from_array(
                items
                    .iter()
                    .map(|v| v.to_dynamic(depth + 1))
                    .collect::<Array>(),
            ),
            Value::Map(entries) => {
                let mut m = Map::new();
                for (k, v) in entries {
                    m.insert(k.as_str().into(), v.to_dynamic(depth + 1));
                }
                Dynamic::from_map(m)
            }
        }
    }
}

fuzz_target!(|value: Value| {
    common::scratch(|| {
        let d = value.to_dynamic(0);
        let _ = dynamic_to_json(&d);
        let _ = string_list(&d, "`values`");
        if let Some(rows) = d.read_lock::<Array>() {
            let _ = render_table(&rows, None);
        }
        let Ok(node) = dynamic_to_node(&d) else {
            return;
        };
        // dump_yaml, then parse_yaml: the same value comes back.
        let dumped = to_yaml(&node);
        let id = add_source("<parse_yaml>", None, dumped.clone(), SourceKind::Text);
        let parsed = match parse_source(id) {
            Ok(n) => n,
            Err(e) => panic!(
                "dump_yaml wrote YAML parse_yaml refuses:\n{dumped}\n{}",
                e.render(false, 100)
            ),
        };
        let again = dynamic_to_node(&node_to_dynamic(&parsed))
            .unwrap_or_else(|e| panic!("a parsed value does not convert back: {}", e.message));
        assert_eq!(to_yaml(&again), dumped, "parse_yaml(dump_yaml(v)) is not v");
    });
});
