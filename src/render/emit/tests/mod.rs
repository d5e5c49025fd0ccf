mod corpus;
mod golden;
mod props;

use super::{to_json, to_yaml, to_yaml_stream};
use crate::config::node::{KeyKind, Map, Node, Value};

fn map(pairs: &[(&str, Node)]) -> Node {
    Node::from_map(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

#[test]
fn stream_joins_with_blank_line_before_separator() {
    assert_eq!(to_yaml_stream(&[]), "");
    let a = map(&[("kind", Node::str("A"))]);
    let b = map(&[("kind", Node::str("B")), ("n", Node::int(1))]);
    assert_eq!(to_yaml_stream(std::slice::from_ref(&a)), "kind: A\n");
    assert_eq!(to_yaml_stream(&[a, b]), "kind: A\n\n---\nkind: B\nn: 1\n");
}

#[test]
fn block_layout_matches_pyyaml() {
    let doc = map(&[
        (
            "containers",
            Node::list(vec![map(&[
                ("name", Node::str("h")),
                (
                    "args",
                    Node::list(vec![Node::str("-lc"), Node::str("true")]),
                ),
                ("env", Node::list(vec![])),
                ("resources", Node::map()),
            ])]),
        ),
        (
            "nested",
            Node::list(vec![Node::list(vec![Node::int(1), Node::null()])]),
        ),
    ]);
    assert_eq!(
        to_yaml(&doc),
        "containers:\n- name: h\n  args:\n  - -lc\n  - 'true'\n  env: []\n  resources: {}\n\
         nested:\n- - 1\n  - null\n"
    );
}

#[test]
fn root_plain_scalar_ends_the_document_like_pyyaml() {
    assert_eq!(to_yaml(&Node::str("abc")), "abc\n...\n");
    assert_eq!(to_yaml(&Node::str("")), "''\n");
    assert_eq!(to_yaml(&Node::map()), "{}\n");
}

#[test]
fn non_string_keys_print_as_python_values() {
    let mut m = Map::new();
    for (key, kind) in [
        ("8080", KeyKind::Int),
        ("True", KeyKind::Bool),
        ("None", KeyKind::Null),
        ("1e3", KeyKind::Float),
        ("8081", KeyKind::Str),
    ] {
        let mut v = Node::str("x");
        v.key_kind = kind;
        m.insert(key.to_string(), v);
    }
    let doc = Node::from_map(m);
    assert_eq!(
        to_yaml(&doc),
        "8080: x\ntrue: x\nnull: x\n1000.0: x\n'8081': x\n"
    );
    assert_eq!(
        to_json(&doc, false),
        "{\n  \"8080\": \"x\",\n  \"true\": \"x\",\n  \"null\": \"x\",\n  \"1000.0\": \"x\",\n  \"8081\": \"x\"\n}"
    );
}

#[test]
fn json_escapes_and_numbers_like_python() {
    let doc = map(&[
        ("s", Node::str("é—😀\"\\\n\u{7f}")),
        ("f", Node::new(Value::Float(1e-7))),
        ("g", Node::new(Value::Float(2.0))),
        ("n", Node::new(Value::Float(f64::NAN))),
        ("i", Node::new(Value::Float(f64::NEG_INFINITY))),
        ("e", Node::list(vec![])),
    ]);
    assert_eq!(
        to_json(&doc, true),
        "{\n  \"e\": [],\n  \"f\": 1e-07,\n  \"g\": 2.0,\n  \"i\": -Infinity,\n  \"n\": NaN,\n  \
         \"s\": \"\\u00e9\\u2014\\ud83d\\ude00\\\"\\\\\\n\\u007f\"\n}"
    );
}

#[test]
fn sorted_json_orders_integer_keys_numerically() {
    let mut m = Map::new();
    for key in ["10", "9", "100"] {
        let mut v = Node::null();
        v.key_kind = KeyKind::Int;
        m.insert(key.to_string(), v);
    }
    let doc = Node::from_map(m);
    assert_eq!(
        to_json(&doc, true),
        "{\n  \"9\": null,\n  \"10\": null,\n  \"100\": null\n}"
    );
}
