//! Differential corpus: inputs and PyYAML 6.0.3 / Python `json` outputs recorded by
//! tests/data/emit/gen_pyyaml_corpus.py.

use serde_json::Value as Json;

use super::super::{to_json, to_yaml};
use crate::config::node::{KeyKind, Map, Node, Value, python_float_repr};

const CORPUS: &str = include_str!("../../../../tests/data/emit/pyyaml_corpus.json");

/// Decode the fixture's input encoding (plain JSON plus `$float` and `$items`).
fn decode(v: &Json) -> Node {
    match v {
        Json::Object(o) if o.len() == 1 && o.contains_key("$float") => {
            let f = match o["$float"].as_str() {
                Some("nan") => f64::NAN,
                Some("inf") => f64::INFINITY,
                Some("-inf") => f64::NEG_INFINITY,
                other => panic!("bad $float {other:?}"),
            };
            Node::new(Value::Float(f))
        }
        Json::Object(o) if o.len() == 1 && o.contains_key("$items") => {
            let mut map = Map::new();
            for pair in o["$items"].as_array().expect("$items is a list") {
                let (key, kind) = match &pair[0] {
                    Json::Null => ("None".to_string(), KeyKind::Null),
                    Json::Bool(b) => (if *b { "True" } else { "False" }.into(), KeyKind::Bool),
                    Json::Number(n) => match n.as_i64() {
                        Some(i) => (i.to_string(), KeyKind::Int),
                        None => (
                            python_float_repr(n.as_f64().expect("number")),
                            KeyKind::Float,
                        ),
                    },
                    Json::String(s) => (s.clone(), KeyKind::Str),
                    other => panic!("bad key {other}"),
                };
                let mut value = decode(&pair[1]);
                value.key_kind = kind;
                map.insert(key, value);
            }
            Node::from_map(map)
        }
        Json::Object(o) => Node::from_map(o.iter().map(|(k, v)| (k.clone(), decode(v))).collect()),
        Json::Array(a) => Node::list(a.iter().map(decode).collect()),
        other => Node::from_json(other),
    }
}

fn cases() -> Vec<Json> {
    let parsed: Json = serde_json::from_str(CORPUS).expect("corpus parses");
    parsed.as_array().expect("corpus is a list").clone()
}

#[test]
fn yaml_matches_pyyaml_for_every_corpus_case() {
    let cases = cases();
    assert!(cases.len() > 1500, "corpus too small: {}", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let doc = decode(&case["input"]);
        // `yaml_nrl` records nrl's deliberate extra quoting (strings like `1e3`).
        let want = case["yaml_nrl"]
            .as_str()
            .or(case["yaml"].as_str())
            .expect("yaml is a string");
        let got = to_yaml(&doc);
        if got != want {
            failures.push(format!(
                "input {}\n--- want\n{want}--- got\n{got}",
                case["input"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ; first ones:\n{}",
        failures.len(),
        cases.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

#[test]
fn json_matches_python_for_every_corpus_case() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in &cases() {
        let doc = decode(&case["input"]);
        let sorted = case["json_sorted"].as_str();
        let unsorted = case["json_unsorted"].as_str().or(sorted);
        for (want, sort_keys) in [(sorted, true), (unsorted, false)] {
            let Some(want) = want else { continue };
            checked += 1;
            let got = to_json(&doc, sort_keys);
            if got != want {
                failures.push(format!(
                    "input {} sort_keys={sort_keys}\n--- want\n{want}\n--- got\n{got}",
                    case["input"]
                ));
            }
        }
    }
    assert!(checked > 3000, "too few JSON checks: {checked}");
    assert!(
        failures.is_empty(),
        "{} JSON outputs differ; first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}
