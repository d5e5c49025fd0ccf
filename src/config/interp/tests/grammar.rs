//! The grammar: what parses to what, what is a syntax error, escapes.

use serde_json::json;

use super::super::ast::{Element, InterpKind, KeyPart, NamePart, Piece};
use super::super::parser::{parse_element, parse_template};
use super::super::{check_syntax, has_interpolation};
use super::{json, load, resolved};
use crate::config::node::{Node, Value};

fn node_path(text: &str) -> (usize, Vec<(String, bool)>) {
    let t = parse_template(text).expect("parses");
    let Some(InterpKind::Node(p)) = t.single().map(|i| &i.kind) else {
        panic!("not a node interpolation: {t:?}");
    };
    let segs = p
        .segs
        .iter()
        .map(|s| match &s.key {
            KeyPart::Text(k) => (k.clone(), s.bracket),
            KeyPart::Interp(_) => ("${}".to_string(), s.bracket),
        })
        .collect();
    (p.dots, segs)
}

fn k(s: &str, bracket: bool) -> (String, bool) {
    (s.to_string(), bracket)
}

#[test]
fn node_interpolation_forms() {
    assert_eq!(node_path("${a.b}"), (0, vec![k("a", false), k("b", false)]));
    assert_eq!(
        node_path("${ a.b\t}"),
        (0, vec![k("a", false), k("b", false)])
    );
    assert_eq!(node_path("${a[0]}"), (0, vec![k("a", false), k("0", true)]));
    assert_eq!(node_path("${l.1}"), (0, vec![k("l", false), k("1", false)]));
    assert_eq!(node_path("${.x}"), (1, vec![k("x", false)]));
    assert_eq!(
        node_path("${..x.y}"),
        (2, vec![k("x", false), k("y", false)])
    );
    assert_eq!(
        node_path("${[a].b}"),
        (0, vec![k("a", true), k("b", false)])
    );
    assert_eq!(
        node_path("${plans[${sel}]}"),
        (0, vec![k("plans", false), k("${}", true)])
    );
    // Keys may hold `$` and `-`, and any non-ASCII text.
    assert_eq!(node_path("${$x.a-b.ключ}").1.len(), 3);
}

#[test]
fn resolver_calls_with_dotted_names_and_no_arguments() {
    let t = parse_template("${oc.env:HOME}/x-${user:}").expect("parses");
    let calls: Vec<_> = t
        .pieces
        .iter()
        .filter_map(|p| match p {
            Piece::Interp(i) => match &i.kind {
                InterpKind::Resolver { name, args } => Some((name.clone(), args.len())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    let id = |s: &str| NamePart::Id(s.to_string());
    assert_eq!(
        calls,
        [(vec![id("oc"), id("env")], 1), (vec![id("user")], 0)]
    );
}

fn el(text: &str) -> serde_json::Value {
    match parse_element(text).unwrap_or_else(|e| panic!("{text}: {e:?}")) {
        Element::Scalar(v) => Node::new(v).to_json(),
        Element::Str(p) => json!({ "str": format!("{p:?}") }),
        Element::List(items) => json!({ "list": items.len() }),
        Element::Dict(pairs) => json!({ "dict": pairs.len() }),
        Element::Interp(_) => json!("interp"),
    }
}

#[test]
fn argument_values_are_typed_by_the_grammar() {
    // anchors §4.4 / §4.7 rows 1-4
    assert_eq!(el("1_000"), json!(1000));
    assert_eq!(el("+7"), json!(7));
    assert_eq!(el("1e-3"), json!(0.001));
    assert_eq!(el("1.e2"), json!(100.0));
    assert_eq!(el("TrUe"), json!(true));
    assert_eq!(el("NULL"), json!(null));
    assert_eq!(el("None"), json!("None"));
    assert_eq!(el("a-b"), json!("a-b"));
    assert_eq!(el(r"\,"), json!(","));
    assert_eq!(el("${a}"), json!("interp"));
    assert_eq!(el("[1, [2], {a: 3}]"), json!({"list": 3}));
    assert_eq!(el("{a: 1, b: x y}"), json!({"dict": 2}));
    let Element::Scalar(Value::Float(f)) = parse_element("-INF").expect("inf") else {
        panic!("-INF is a float");
    };
    assert_eq!(f, f64::NEG_INFINITY);
    // Several tokens, or quotes, make a string (escapes decoded, inner spaces kept).
    let s = |t: &str| match parse_element(t) {
        Ok(Element::Str(p)) => p,
        other => panic!("{t}: {other:?}"),
    };
    assert_eq!(s("007"), [Piece::Lit("007".into())]);
    assert_eq!(s(r"'it\'s'"), [Piece::Lit("it's".into())]);
    assert_eq!(s(r"a\ b\:c"), [Piece::Lit("a b:c".into())]);
}

#[test]
fn outer_whitespace_of_arguments_is_trimmed() {
    let n = resolved(
        "a: \"${oc.env: NRL_TEST_PORT }\"\nb: \"${add: x y , z }\"\nc: ${add:\\ hi,\\ }\n",
    );
    assert_eq!(json(&n)["a"], json!("3308"));
    assert_eq!(json(&n)["b"], json!("x yz"));
    assert_eq!(json(&n)["c"], json!(" hi "));
}

#[test]
fn partial_key_interpolation_is_a_grammar_error() {
    // anchors §4.7 row 23
    let e = parse_template("${foo${bar}}").expect_err("partial key");
    assert!(
        e.message.contains("cannot be part of a key"),
        "{}",
        e.message
    );
    assert!(parse_template("${plans[${sel}]}").is_ok());
    assert!(parse_template("${foo.${bar}}").is_ok());
}

#[test]
fn malformed_interpolations_are_syntax_errors() {
    for bad in [
        "${oops",
        "x ${b",
        "${}",
        "${.}",
        "${a..b}",
        "${ a . b }",
        "${'b'}",
        "${a.}",
        "${a[b}",
        "${0:x}",
        "${.x:y}",
        "${f:A=B}",
        "${f:é}",
        "${f:[a}",
        "${f:'a}",
    ] {
        assert!(parse_template(bad).is_err(), "{bad} should not parse");
    }
    assert_eq!(
        parse_template("${oops").expect_err("open").message,
        "unterminated interpolation: `${` is never closed with `}`"
    );
    assert!(
        parse_template("${}")
            .expect_err("empty")
            .message
            .contains("empty interpolation")
    );
}

#[test]
fn check_syntax_reports_malformed_strings_at_their_line() {
    let root = load(
        "bad.yaml",
        "ok: ${a}\nlist:\n  - fine\n  - \"x ${oops\"\nb: ${}\n",
    );
    let d = check_syntax(&root).expect_err("two errors");
    assert_eq!(d.code, "nrl::interp::syntax");
    assert_eq!(d.location().as_deref(), Some("bad.yaml:4:8"));
    assert_eq!(d.related.len(), 1);
    assert_eq!(d.related[0].location().as_deref(), Some("bad.yaml:5:4"));
    assert!(check_syntax(&load("ok.yaml", "a: ${b}\nb: \\${x}\nc: $HOME\n")).is_ok());
}

#[test]
fn top_level_escapes() {
    // anchors §4.7 row 21; ref §3.7
    let n = resolved(concat!(
        "y: 5\n",
        "a: \\${y}\n",           // \${y}      -> ${y}
        "b: C:\\\\${y}\n",       // C:\\${y}   -> C:\5
        "c: C:\\foo_${y}\n",     // lone backslash kept
        "d: \\\\\\${y}\n",       // \\\${y}    -> \${y}
        "e: $HOME $(date) a$\n", // lone $ is literal
        "f: $${y}\n",            // $ then interpolation
        "g: ${y}\\\n",           // trailing backslash kept
    ));
    let j = json(&n);
    assert_eq!(j["a"], json!("${y}"));
    assert_eq!(j["b"], json!("C:\\5"));
    assert_eq!(j["c"], json!("C:\\foo_5"));
    assert_eq!(j["d"], json!("\\${y}"));
    assert_eq!(j["e"], json!("$HOME $(date) a$"));
    assert_eq!(j["f"], json!("$5"));
    assert_eq!(j["g"], json!("5\\"));
}

#[test]
fn escaped_shell_variables_pass_through() {
    let n = resolved("cmd: LOG=\\${LOG_DIR}/x-\\${TIMESTAMP}.log echo \\${CLUSTER_UUID:-<none>}\n");
    assert_eq!(
        json(&n)["cmd"],
        json!("LOG=${LOG_DIR}/x-${TIMESTAMP}.log echo ${CLUSTER_UUID:-<none>}")
    );
}

#[test]
fn has_interpolation_ignores_escaped_ones() {
    assert!(has_interpolation("${a}"));
    assert!(has_interpolation("x \\\\${a}"));
    assert!(has_interpolation("${oops"));
    assert!(!has_interpolation("\\${LOG_DIR}"));
    assert!(!has_interpolation("\\\\\\${a}"));
    assert!(!has_interpolation("$HOME $(x) {a}"));
}

#[test]
fn hostile_nesting_is_a_syntax_error_not_a_crash() {
    let deep = format!("{}a{}", "${".repeat(5000), "}".repeat(5000));
    let e = parse_template(&deep).expect_err("too deep");
    assert!(
        e.message.contains("nested more than 64 levels"),
        "{}",
        e.message
    );
    let lists = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    assert!(parse_element(&lists).is_err());
    assert!(parse_template("${a.${b.${c}}}").is_ok());
}
