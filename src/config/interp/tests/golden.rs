//! The OmegaConf 2.3.0 corpus: `tests/data/interp/omegaconf/golden.json` was produced by running
//! `tests/data/interp/omegaconf/gen_golden.py` (real OmegaConf, with the resolvers registered as
//! nrl-k8s and NeMo-RL do) over `tests/data/interp/omegaconf/cases.py`. Each case is a config resolved
//! key by key; nrl must give the same value or the matching error code.

use serde_json::Value as Json;

use super::super::{check_syntax, resolve_path};
use crate::config::env::MapEnv;
use crate::config::node::{Node, Value};

/// Where nrl deliberately differs from OmegaConf: (case, key, nrl's result, why).
const DIFFERENCES: &[(&str, &str, &str, &str)] = &[(
    "decode_more",
    "n",
    "nrl::interp::syntax",
    "`oc.decode` of \"}\": OmegaConf leaks ANTLR's \"Empty Stack\" as a resolver error; \
     nrl reports the unbalanced `}` as a syntax error",
)];

fn golden() -> Json {
    serde_json::from_str(include_str!(
        "../../../../tests/data/interp/omegaconf/golden.json"
    ))
    .expect("golden.json is valid JSON")
}

/// `{"$float": "inf"}` stands for a non-finite float (JSON cannot carry one).
fn same(expected: &Json, got: &Node) -> bool {
    match (expected, &got.value) {
        (Json::Object(o), Value::Float(f)) if o.contains_key("$float") => {
            let want = o["$float"].as_str().unwrap_or("");
            match want {
                "inf" => *f == f64::INFINITY,
                "-inf" => *f == f64::NEG_INFINITY,
                _ => f.is_nan(),
            }
        }
        (Json::Object(o), Value::Map(m)) => {
            o.len() == m.len() && o.iter().all(|(k, v)| m.get(k).is_some_and(|n| same(v, n)))
        }
        (Json::Array(a), Value::List(l)) => {
            a.len() == l.len() && a.iter().zip(l).all(|(e, n)| same(e, n))
        }
        (e, _) => *e == got.to_json(),
    }
}

#[test]
fn matches_the_omegaconf_2_3_corpus() {
    let data = golden();
    let env = MapEnv {
        vars: data["env"]
            .as_object()
            .expect("env")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect(),
        sa_dir: None,
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in data["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().unwrap_or("?");
        let root = Node::from_json(&case["config"]);
        if let Some(code) = case.get("load_err").and_then(Json::as_str) {
            checked += 1;
            match check_syntax(&root) {
                Err(d) if d.code == code => {}
                other => failures.push(format!("{name}: load: want {code}, got {other:?}")),
            }
            continue;
        }
        let syntax_ok = check_syntax(&root).is_ok();
        let results = case["results"].as_object().expect("results");
        let expects_syntax = results.values().any(|r| r["err"] == "nrl::interp::syntax");
        if !syntax_ok && !expects_syntax {
            failures.push(format!(
                "{name}: check_syntax failed but OmegaConf loaded it"
            ));
        }
        for (key, want) in results {
            checked += 1;
            let got = resolve_path(&root, key, &env);
            let diff = DIFFERENCES
                .iter()
                .find(|(c, k, _, _)| *c == name && k == key);
            let ok = match (want.get("ok"), want["err"].as_str(), &got) {
                _ if diff.is_some() => {
                    matches!(&got, Err(d) if Some(&*d.code) == diff.map(|d| d.2))
                }
                (Some(v), _, Ok(n)) => same(v, n),
                // A literal `???` is the string "???" once resolved.
                (_, Some("missing_mandatory"), Ok(n)) => n.as_str() == Some("???"),
                (_, Some(code), Err(d)) => d.code == code,
                _ => false,
            };
            if !ok {
                failures.push(format!("{name}.{key}: want {want}, got {got:?}"));
            }
        }
    }
    assert!(checked > 250, "corpus too small: {checked}");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
