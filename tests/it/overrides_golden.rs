//! nrl's override parser and applier against real Hydra 1.3.8 / OmegaConf 2.3.0.
//!
//! `tests/data/overrides/hydra_golden.json` was produced by `gen_hydra_golden.py` (next to
//! it) with the Python libraries. Every case must match, except the deliberate differences
//! listed in `PARSE_DIFFS` / `APPLY_DIFFS`, each with what nrl does instead and why.

use nrl::config::node::{Node, Value};
use nrl::config::overrides::{Op, Side, apply_all, expand_sweep, parse_override};
use nrl::config::source::{SourceKind, add_source};
use nrl::config::yaml::parse_source;
use serde_json::{Value as Json, json};

const GOLDEN: &str = include_str!("../data/overrides/hydra_golden.json");

/// (input, what nrl gives instead — a JSON value or "error", why).
const PARSE_DIFFS: &[(&str, &str, &str)] = &[
    // Lenient keys: `/`, `@`, leading digits and brackets are segment characters in nrl.
    (
        "infra.labels.nrl-k8s/owner=x",
        "\"x\"",
        "label keys contain `/`",
    ),
    ("x.01=1", "1", "lenient key segment"),
    ("x.-1=1", "1", "lenient key segment"),
    ("a[0]=1", "1", "bracketed index segment"),
    ("a.b/c=1", "1", "lenient key segment"),
    (
        "a@b=1",
        "1",
        "`@` is a key character (Hydra: key `a`, package `b`)",
    ),
    // Non-ASCII letters and whitespace after a quoted value or container are accepted.
    (
        "x=café",
        "\"café\"",
        "non-ASCII characters in unquoted values",
    ),
    (
        "x=  ' quoted '  ",
        "\" quoted \"",
        "whitespace around a quoted value",
    ),
    ("x='a' ", "\"a\"", "whitespace after a quoted value"),
    ("x=[1] ", "[1]", "whitespace after a container"),
    // nrl has no config groups or packages: `=1` (global package) has no key.
    ("=1", "error", "no config groups: an empty key is an error"),
];

const APPLY_DIFFS: &[(&str, &str, &str)] = &[
    // Hydra crashes with a Python TypeError on list deletes; nrl deletes the item.
    (
        "~a.0=1",
        "{\"a\": [2]}",
        "list items can be deleted by index",
    ),
];

fn to_json(n: &Node) -> Json {
    match &n.value {
        Value::Float(f) if f.is_nan() => json!({"float": "nan"}),
        Value::Float(f) if f.is_infinite() => {
            json!({"float": if *f > 0.0 { "inf" } else { "-inf" }})
        }
        Value::List(l) => Json::Array(l.iter().map(to_json).collect()),
        Value::Map(m) => Json::Object(m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
        _ => n.to_json(),
    }
}

fn golden() -> Json {
    serde_json::from_str(GOLDEN).expect("golden file is JSON")
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Set => "CHANGE",
        Op::Add => "ADD",
        Op::ForceAdd => "FORCE_ADD",
        Op::Delete => "DEL",
    }
}

/// Special JSON for `.inf` in the diff table.
fn diff_json(s: &str) -> Json {
    if s == "\"inf\"" {
        json!({"float": "inf"})
    } else {
        serde_json::from_str(s).expect("diff table JSON")
    }
}

#[test]
fn parse_matches_hydra() {
    let g = golden();
    let cases = g["parse"].as_array().expect("parse cases");
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let input = case["input"].as_str().expect("input");
        let got = parse_override(i, input);
        if let Some((_, expect, _)) = PARSE_DIFFS.iter().find(|d| d.0 == input) {
            let ok = match (*expect, &got) {
                ("error", Err(_)) => true,
                ("error", Ok(_)) => false,
                (e, Ok(ov)) => ov.value.as_ref().map(to_json) == Some(diff_json(e)),
                (_, Err(_)) => false,
            };
            if !ok {
                failures.push(format!("{input}: nrl difference not honoured: {got:?}"));
            }
            continue;
        }
        if case.get("error").is_some() {
            if got.is_ok() {
                failures.push(format!("{input}: Hydra rejects it, nrl accepted {got:?}"));
            }
            continue;
        }
        if let Some(sweep) = case.get("sweep") {
            match &got {
                Err(e) if e.code == "nrl::override::sweep" => {}
                other => failures.push(format!("{input}: expected a sweep error, got {other:?}")),
            }
            if let Some(values) = sweep.as_array() {
                let expanded = match expand_sweep(input) {
                    Ok(v) => v,
                    Err(e) => {
                        failures.push(format!("{input}: expand failed: {e}"));
                        continue;
                    }
                };
                let got_values: Vec<Json> = expanded
                    .iter()
                    .map(|o| {
                        parse_override(0, o)
                            .ok()
                            .and_then(|ov| ov.value.as_ref().map(to_json))
                            .unwrap_or(Json::Null)
                    })
                    .collect();
                // shuffle() is random; compare as sets there.
                let (mut a, mut b) = (got_values.clone(), values.clone());
                if input.contains("shuffle") {
                    a.sort_by_key(|v| v.to_string());
                    b.sort_by_key(|v| v.to_string());
                }
                if a != b {
                    failures.push(format!(
                        "{input}: sweep values {got_values:?} != {values:?}"
                    ));
                }
            }
            continue;
        }
        match got {
            Err(e) => failures.push(format!("{input}: Hydra accepts it, nrl: {e}")),
            Ok(ov) => {
                if op_name(ov.op) != case["op"] {
                    failures.push(format!("{input}: op {:?} != {}", ov.op, case["op"]));
                }
                if ov.dotted_key() != case["key"].as_str().unwrap_or_default() {
                    failures.push(format!(
                        "{input}: key {} != {}",
                        ov.dotted_key(),
                        case["key"]
                    ));
                }
                let want = case.get("value").cloned();
                let have = ov.value.as_ref().map(to_json);
                if want.is_some() && have != want {
                    failures.push(format!("{input}: value {have:?} != {want:?}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn apply_matches_hydra_struct_mode() {
    let g = golden();
    let cases = g["apply"].as_array().expect("apply cases");
    let mut failures = Vec::new();
    for case in cases {
        let yaml = case["yaml"].as_str().expect("yaml");
        let ovs: Vec<&str> = case["overrides"]
            .as_array()
            .expect("overrides")
            .iter()
            .filter_map(Json::as_str)
            .collect();
        let mut root = parse_source(add_source("golden.yaml", None, yaml, SourceKind::Text))
            .expect("golden yaml loads");
        let result = ovs
            .iter()
            .enumerate()
            .map(|(i, o)| parse_override(i, o))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|parsed| apply_all(&mut root, &parsed, Side::Recipe));
        let label = format!("{yaml} ⊕ {ovs:?}");
        if let Some((_, expect, _)) = APPLY_DIFFS.iter().find(|d| ovs.contains(&d.0)) {
            if result.is_err() || to_json(&root) != diff_json(expect) {
                failures.push(format!("{label}: nrl difference not honoured: {result:?}"));
            }
            continue;
        }
        match (case.get("ok"), result) {
            (Some(want), Ok(())) => {
                if &to_json(&root) != want {
                    failures.push(format!("{label}: {} != {want}", to_json(&root)));
                }
            }
            (None, Err(_)) => {}
            (Some(want), Err(e)) => failures.push(format!("{label}: Hydra gives {want}, nrl: {e}")),
            (None, Ok(())) => failures.push(format!(
                "{label}: Hydra fails ({}), nrl gives {}",
                case["error"],
                to_json(&root)
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
