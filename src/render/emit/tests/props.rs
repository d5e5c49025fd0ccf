//! Property tests: what nrl prints reads back as the same tree.

use proptest::prelude::*;

use super::super::{to_json, to_yaml};
use crate::config::node::{Map, Node, Value};
use crate::config::source::{SourceKind, add_source};
use crate::config::yaml::parse_source;

/// Strings that exercise every style decision: indicators, typed-looking text, quotes,
/// whitespace at the edges, line breaks, tabs, non-ASCII, and long lines that fold.
fn text() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        "[a-z]{1,8}",
        Just(" ".to_string()),
        Just("  ".to_string()),
        Just("\n".to_string()),
        Just("\t".to_string()),
        Just("\r".to_string()),
        Just("é".to_string()),
        Just("—".to_string()),
        Just("😀".to_string()),
        Just("\u{85}".to_string()),
        Just("\u{feff}".to_string()),
        Just("\\".to_string()),
        "[-:#'\"?,\\[\\]{}&*!|>%@`~=<.+_/$]",
        "[0-9]{1,4}",
        prop::sample::select(vec![
            "yes",
            "No",
            "true",
            "null",
            "~",
            "0x1F",
            "1e3",
            "1.5",
            "1:30",
            "2024-01-01",
            ".inf",
            "<<",
            "---",
            "...",
            "- ",
            ": ",
            " #",
            "0o17",
            "1_000",
            ".5",
            "-1",
        ])
        .prop_map(str::to_string),
    ];
    prop::collection::vec(atom, 0..30).prop_map(|parts| parts.concat())
}

fn scalar() -> impl Strategy<Value = Node> {
    prop_oneof![
        Just(Node::null()),
        any::<bool>().prop_map(Node::bool),
        any::<i64>().prop_map(Node::int),
        (-1000i64..1000).prop_map(Node::int),
        any::<f64>()
            .prop_filter("NaN never equals itself", |f| !f.is_nan())
            .prop_map(|f| Node::new(Value::Float(f))),
        prop::sample::select(vec![
            0.1,
            1e-7,
            1e17,
            1e16,
            -0.0,
            3.0,
            f64::INFINITY,
            -1.5e300
        ])
        .prop_map(|f| Node::new(Value::Float(f))),
        text().prop_map(Node::str),
    ]
}

fn tree() -> impl Strategy<Value = Node> {
    scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Node::list),
            prop::collection::vec((text(), inner), 0..6).prop_map(|pairs| {
                let mut map = Map::new();
                for (k, v) in pairs {
                    map.insert(k, v);
                }
                Node::from_map(map)
            }),
        ]
    })
}

fn reparse(yaml: &str) -> Node {
    let id = add_source("<emitted>", None, yaml, SourceKind::Text);
    match parse_source(id) {
        Ok(node) => node,
        Err(e) => panic!("emitted YAML does not load ({}):\n{yaml}", e.message),
    }
}

/// Structural equality (serde_json is built with `float_roundtrip`, so floats are exact).
fn close(a: &Node, b: &Node) -> bool {
    match (&a.value, &b.value) {
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| close(p, q))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((k, p), (l, q))| k == l && close(p, q))
        }
        _ => a == b,
    }
}

fn finite_only(n: &Node) -> bool {
    match &n.value {
        Value::Float(f) => f.is_finite(),
        Value::List(l) => l.iter().all(finite_only),
        Value::Map(m) => m.values().all(finite_only),
        _ => true,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn yaml_reloads_as_the_same_tree(doc in tree()) {
        let yaml = to_yaml(&doc);
        prop_assert!(yaml.is_ascii(), "non-ASCII output: {yaml}");
        let back = reparse(&yaml);
        prop_assert_eq!(back, doc, "YAML was:\n{}", yaml);
    }

    #[test]
    fn json_reloads_as_the_same_tree(doc in tree().prop_filter("JSON has no inf", finite_only)) {
        let json = to_json(&doc, false);
        prop_assert!(json.is_ascii());
        let parsed: serde_json::Value = serde_json::from_str(&json)
            .map_err(|e| TestCaseError::fail(format!("{e}: {json}")))?;
        let back = Node::from_json(&parsed);
        prop_assert!(close(&back, &doc), "JSON was:\n{}", json);
    }

    #[test]
    fn sorted_json_has_the_same_content(doc in tree().prop_filter("JSON has no inf", finite_only)) {
        let parsed: serde_json::Value = serde_json::from_str(&to_json(&doc, true))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let unsorted: serde_json::Value = serde_json::from_str(&to_json(&doc, false))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        // Object equality in serde_json ignores key order.
        prop_assert_eq!(parsed, unsorted);
    }
}
