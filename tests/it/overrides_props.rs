//! Property tests for overrides: parsing, partitioning, applying and sweep expansion never
//! panic on any input, and values written back by `render_value` parse to themselves.

use nrl::config::node::Node;
use nrl::config::overrides::{Side, apply, expand_sweep, parse_override, partition, render_value};
use nrl::config::source::{SourceKind, add_source};
use nrl::config::yaml::parse_source;
use proptest::prelude::*;

/// Strings made of the grammar's special characters plus a few letters and digits, so
/// generated inputs hit quotes, escapes, brackets, prefixes and functions often.
fn grammar_soup() -> impl Strategy<Value = String> {
    let atoms = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("x".to_string()),
        Just("0".to_string()),
        Just("1".to_string()),
        Just("9".to_string()),
        Just("_".to_string()),
        Just("e".to_string()),
        Just("é".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just(".".to_string()),
        Just("=".to_string()),
        Just("+".to_string()),
        Just("~".to_string()),
        Just("-".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("$".to_string()),
        Just("${".to_string()),
        Just("@".to_string()),
        Just("/".to_string()),
        Just("#".to_string()),
        Just("?".to_string()),
        Just("null".to_string()),
        Just("true".to_string()),
        Just("inf".to_string()),
        Just("choice(".to_string()),
        Just("range(".to_string()),
        Just("int(".to_string()),
        Just("str(".to_string()),
        Just("sort(".to_string()),
        Just("extend_list(".to_string()),
        Just("json_str(".to_string()),
        Just("infra.".to_string()),
    ];
    proptest::collection::vec(atoms, 0..24).prop_map(|v| v.concat())
}

/// Overrides that usually parse: a prefix, a key over the test tree's names, a value.
fn plausible_override() -> impl Strategy<Value = String> {
    let prefix = prop_oneof![Just(""), Just("+"), Just("++"), Just("~")];
    let seg = prop_oneof![
        Just("a"),
        Just("b"),
        Just("c"),
        Just("l"),
        Just("n"),
        Just("s"),
        Just("0"),
        Just("1"),
        Just("5"),
        Just("zz"),
    ];
    let key = proptest::collection::vec(seg, 1..5).prop_map(|v| v.join("."));
    let value = prop_oneof![
        Just(""),
        Just("1"),
        Just("null"),
        Just("x"),
        Just("[1, 2]"),
        Just("[]"),
        Just("{a: 1}"),
        Just("{zz: {a: 2}}"),
        Just("{}"),
        Just("extend_list(3)"),
        Just("???"),
        Just("'q'"),
        Just("{a: [1]}"),
        Just("1,2"),
    ];
    (prefix, key, proptest::option::of(value)).prop_map(|(p, k, v)| match v {
        Some(v) => format!("{p}{k}={v}"),
        None => format!("{p}{k}"),
    })
}

fn tree() -> Node {
    let yaml =
        "a: {b: 1, c: [1, {d: 2}], n: null}\nl: [1, 2, [3]]\nn: null\ns: str\nb: {}\nc: ???\n";
    parse_source(add_source("props.yaml", None, yaml, SourceKind::Text)).expect("yaml")
}

proptest! {
    // XorShift: the default ChaCha generator dominates the run time in debug builds.
    #![proptest_config(ProptestConfig {
        cases: 512,
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..ProptestConfig::default()
    })]

    #[test]
    fn parse_never_panics_on_any_string(s in any::<String>()) {
        let _ = parse_override(0, &s);
        let _ = expand_sweep(&s);
    }

    #[test]
    fn parse_never_panics_on_grammar_soup(s in grammar_soup()) {
        let _ = parse_override(0, &s);
        let _ = expand_sweep(&s);
        let _ = partition(&[s.clone(), format!("infra.{s}")]);
    }

    #[test]
    fn apply_never_panics(ovs in proptest::collection::vec(plausible_override(), 1..6)) {
        for side in [Side::Recipe, Side::Infra] {
            let mut root = tree();
            for (i, text) in ovs.iter().enumerate() {
                if let Ok(ov) = parse_override(i, text) {
                    let _ = apply(&mut root, &ov, side);
                }
            }
        }
    }

    #[test]
    fn apply_never_panics_on_soup(s in grammar_soup()) {
        if let Ok(ov) = parse_override(0, &s) {
            let _ = apply(&mut tree(), &ov, Side::Recipe);
            let _ = apply(&mut tree(), &ov, Side::Infra);
            let _ = apply(&mut Node::null(), &ov, Side::Infra);
        }
    }

    #[test]
    fn rendered_values_parse_back_to_themselves(s in grammar_soup()) {
        if let Ok(ov) = parse_override(0, &format!("x={s}")) {
            let v = ov.value.expect("x= always has a value");
            if let Some(text) = render_value(&v) {
                let back = parse_override(1, &format!("x={text}"))
                    .unwrap_or_else(|e| panic!("{s:?} rendered as {text:?}: {e}"));
                // Compare as JSON text so NaN equals itself.
                prop_assert_eq!(
                    format!("{:?}", back.value.map(|n| n.to_json())),
                    format!("{:?}", Some(v.to_json())),
                    "{:?} rendered as {:?}", s, text
                );
            }
        }
    }

    #[test]
    fn simple_choice_expands_to_one_run_per_item(items in proptest::collection::vec(-50i64..50, 2..8)) {
        let text = format!("k={}", items.iter().map(i64::to_string).collect::<Vec<_>>().join(","));
        let runs = expand_sweep(&text).expect("expands");
        let want: Vec<String> = items.iter().map(|i| format!("k={i}")).collect();
        prop_assert_eq!(runs, want);
    }
}
