//! Resolution rules: paths, types, chains, cycles, `???`, spans.

use serde_json::json;

use super::super::resolve_path;
use super::{env, failure, json, load, resolved};
use crate::config::node::{Node, deep_merge};

#[test]
fn single_interpolation_keeps_type_and_text_becomes_string() {
    // anchors §4.7 row 19
    let n = resolved("host: h\nport: 80\nurl: \"http://${host}:${port}\"\np: ${port}\n");
    assert_eq!(json(&n)["url"], json!("http://h:80"));
    assert_eq!(json(&n)["p"], json!(80));
}

#[test]
fn relative_paths_count_levels_from_the_container() {
    // anchors §4.7 row 20: first dot = own container, each further dot one level up
    let n = resolved("a:\n  b: 1\n  c: ${.b}\nd:\n  e: ${..a.b}\n  f: ${..a}\n");
    assert_eq!(json(&n)["a"]["c"], json!(1));
    assert_eq!(json(&n)["d"]["e"], json!(1));
    assert_eq!(json(&n)["d"]["f"], json!({"b": 1, "c": 1}));
}

#[test]
fn relative_interpolation_works_inside_list_items() {
    let n = resolved(
        "workerGroupSpecs:\n  - groupName: gpu\n    replicas: 4\n    minReplicas: ${.replicas}\n    maxReplicas: ${.replicas}\n",
    );
    let g = &json(&n)["workerGroupSpecs"][0];
    assert_eq!(g["minReplicas"], json!(4));
    assert_eq!(g["maxReplicas"], json!(4));
}

#[test]
fn absolute_paths_start_at_the_root_of_the_tree_being_resolved() {
    // The infra layer is resolved on its own: no `infra.` prefix, no recipe keys.
    let n = resolved(
        "kuberay:\n  training:\n    name: ${user:}-rc\nlaunch:\n  attach: ${kuberay.training.name}\n",
    );
    assert_eq!(json(&n)["launch"]["attach"], json!("alice-b-rc"));
    let d = failure("x: ${policy.x}\n");
    assert_eq!(d.code, "nrl::interp::missing_key");
    assert_eq!(d.message, "Interpolation key 'policy.x' not found");
}

#[test]
fn list_indices_by_dot_and_bracket() {
    let n = resolved("l: [10, 20, 30]\na: ${l.1}\nb: ${l[0]}\nm:\n  k: [x, y]\nc: ${m.k[1]}\n");
    assert_eq!(json(&n)["a"], json!(20));
    assert_eq!(json(&n)["b"], json!(10));
    assert_eq!(json(&n)["c"], json!("y"));
}

#[test]
fn nested_interpolations_in_keys() {
    // anchors §4.4: `${plans[${selected_plan}]}`
    let n = resolved("plans:\n  a: 1\n  b: 2\nsel: b\nx: ${plans[${sel}]}\ny: ${plans.${sel}}\n");
    assert_eq!(json(&n)["x"], json!(2));
    assert_eq!(json(&n)["y"], json!(2));
}

#[test]
fn interpolation_to_a_container_is_resolved_where_it_lives() {
    // `${.b}` inside `a` means a.b even when `a` is copied to `x`.
    let n = resolved("a:\n  b: 1\n  c: ${.b}\nx: ${a}\nb: 99\n");
    assert_eq!(json(&n)["x"], json!({"b": 1, "c": 1}));
}

#[test]
fn chains_are_followed_through_values_and_containers() {
    let n = resolved("a: ${b}\nb: ${c}\nc: ${d.k}\nd: ${e}\ne:\n  k: 7\nf: ${d.k}\n");
    assert_eq!(json(&n)["a"], json!(7));
    assert_eq!(json(&n)["f"], json!(7));
    assert_eq!(json(&n)["d"], json!({"k": 7}));
}

#[test]
fn cycle_is_reported_with_its_members_and_spans() {
    let d = failure("a: ${b}\nb: ${c}\nc: ${a}\n");
    assert_eq!(d.code, "nrl::interp::cycle");
    assert_eq!(d.message, "Interpolation cycle: a -> b -> c -> a");
    let lines: Vec<_> = d.labels.iter().map(|l| l.span.line_col().0).collect();
    assert_eq!(lines, [1, 2, 3]);
}

#[test]
fn self_reference_through_a_containing_mapping_is_an_error() {
    let d = failure("a:\n  b: ${a}\n");
    assert_eq!(d.code, "nrl::interp::cycle");
    assert!(
        d.message.contains("a container that holds it"),
        "{}",
        d.message
    );
    let d = failure("a: ${a.x}\n");
    assert_eq!(d.code, "nrl::interp::cycle", "{d:?}");
}

#[test]
fn literal_missing_value_resolves_to_the_string() {
    let n = resolved("m: ???\n");
    assert_eq!(json(&n)["m"], json!("???"));
}

#[test]
fn interpolation_to_missing_value_is_an_error() {
    // anchors §4.7 row 22; ref §3.7
    let d = failure("m: ???\nn: ${m}\n");
    assert_eq!(d.code, "nrl::interp::missing_value");
    assert!(
        d.message.contains("points at a missing mandatory value"),
        "{}",
        d.message
    );
    assert_eq!(d.labels.len(), 2, "site and the ??? line: {d:?}");
    assert_eq!(d.labels[1].span.line_col().0, 1);
    let d = failure("m: ???\nn: x-${m.k}\n");
    assert_eq!(d.code, "nrl::interp::missing_value");
}

#[test]
fn missing_keys_name_the_key_and_relative_ones_both_forms() {
    assert_eq!(
        failure("x: ${a.y}\na: {}\n").message,
        "Interpolation key 'a.y' not found"
    );
    // omegaconf#1126 / PR #1317: report both the written and the absolute key
    let d = failure("a:\n  x: ${..b}\n");
    assert_eq!(
        d.message,
        "Interpolation key '..b' (absolute 'b') not found"
    );
    let d = failure("a:\n  s:\n    x: ${..b}\n");
    assert_eq!(
        d.message,
        "Interpolation key '..b' (absolute 'a.b') not found"
    );
    let d = failure("a:\n  x: ${....b}\n");
    assert!(d.message.contains("goes above the root"), "{}", d.message);
}

#[test]
fn walking_through_a_non_container_is_a_clear_error() {
    // ref §3.7: `infra.kuberay.training=null` then `${kuberay.training.name}`
    let d = failure("kuberay:\n  training: null\nx: ${kuberay.training.name}\n");
    assert_eq!(d.code, "nrl::interp::missing_key");
    assert!(
        d.message
            .contains("`kuberay.training` is null, not a mapping or list"),
        "{}",
        d.message
    );
    let d = failure("k:\n  t: 5\nx: ${k.t.x}\n");
    assert!(d.message.contains("`k.t` is the int 5"), "{}", d.message);
    let d = failure("l: [1]\nx: ${l.a}\n");
    assert!(
        d.message.contains("`l` is a list and `a` is not an index"),
        "{}",
        d.message
    );
    assert_eq!(
        failure("l: [1]\nx: ${l.3}\n").message,
        "Interpolation key 'l.3' not found"
    );
}

#[test]
fn text_pieces_are_converted_with_python_str() {
    let n = resolved(
        "t: true\nn: null\nf: 1.0\ne: 1e-5\nm:\n  k: 1\nx: \"${t} ${n} ${f} ${e} ${m}\"\n",
    );
    assert_eq!(json(&n)["x"], json!("True None 1.0 1e-05 {'k': 1}"));
}

#[test]
fn embedded_mapping_is_shown_as_written_like_omegaconf() {
    // OmegaConf 2.3 writes a config node into a string with `str()`, interpolations
    // inside unresolved; the training job sees that, so nrl does too (the differential
    // oracle found the difference, seed 498942).
    let n = resolved("c: 2\nb:\n  j: ${c}\na: \"v=${b}\"\n");
    assert_eq!(json(&n)["a"], json!("v={'j': '${c}'}"));
}

#[test]
fn late_binding_sees_values_merged_later() {
    // anchors §4.7 row 16 / ref §3.4: interpolations resolve after all layers merge.
    let mut base = load(
        "base.yaml",
        "lr: 1\nsched:\n  lr: ${lr}\npath: ${oc.env:NRL_TEST_PORT}/x\n",
    );
    deep_merge(&mut base, load("child.yaml", "lr: 5\n")).expect("merge");
    let n = super::super::resolve(&base, &env()).expect("resolves");
    assert_eq!(json(&n)["sched"]["lr"], json!(5));
    assert_eq!(json(&n)["path"], json!("3308/x"));
}

#[test]
fn resolved_nodes_keep_spans_of_where_values_were_written() {
    let root = load(
        "spans.yaml",
        "a:\n  b: 1\n  c: ${.b}\nx: ${a}\ns: pre-${a.b}\n",
    );
    let n = super::super::resolve(&root, &env()).expect("resolves");
    let line = |n: &Node| n.span.map(|s| s.line_col().0);
    assert_eq!(line(n.get_path("a.c").expect("a.c")), Some(3), "site span");
    assert_eq!(
        line(n.get_path("x").expect("x")),
        Some(4),
        "whole-value: the site"
    );
    assert_eq!(
        line(n.get_path("x.b").expect("x.b")),
        Some(2),
        "inside: where written"
    );
    assert_eq!(line(n.get_path("s").expect("s")), Some(5));
    assert_eq!(
        n.get_path("x").and_then(|x| x.key_span).map(|s| s.text()),
        Some("x".to_string())
    );
}

#[test]
fn resolve_path_resolves_one_value() {
    let root = load(
        "p.yaml",
        "a:\n  b: ${c}\nc:\n  d: ${.e}\n  e: 3\nm: ???\nl: [\"${c.e}\"]\n",
    );
    let env = env();
    assert_eq!(
        json(&resolve_path(&root, "a.b.d", &env).expect("a.b.d")),
        json!(3)
    );
    assert_eq!(
        json(&resolve_path(&root, "a", &env).expect("a")),
        json!({"b": {"d": 3, "e": 3}})
    );
    assert_eq!(
        json(&resolve_path(&root, "l.0", &env).expect("l.0")),
        json!(3)
    );
    assert_eq!(
        json(&resolve_path(&root, "m", &env).expect("m")),
        json!("???")
    );
    let d = resolve_path(&root, "c.zz", &env).expect_err("missing");
    assert_eq!(d.code, "nrl::interp::missing_key");
    assert_eq!(d.message, "key 'c.zz' not found");
}

#[test]
fn independent_errors_are_reported_together_and_dependents_once() {
    let d = failure("a: ${LOG_DIR}\nb: ${TIMESTAMP}\nc: ${a}\n");
    assert_eq!(d.message, "Interpolation key 'LOG_DIR' not found");
    assert_eq!(d.related.len(), 1, "b's error; c only depends on a: {d:?}");
    assert_eq!(
        d.related[0].message,
        "Interpolation key 'TIMESTAMP' not found"
    );
    let d = failure("c: ${a}\na: ${LOG_DIR}\n");
    assert!(d.related.is_empty(), "{d:?}");
    assert!(
        d.notes.iter().any(|n| n.starts_with("needed by `c`")),
        "{:?}",
        d.notes
    );
}

#[test]
fn runaway_chains_are_an_error_not_a_crash() {
    let mut text = String::new();
    for i in 0..1000 {
        text.push_str(&format!("k{i}: ${{k{}}}\n", i + 1));
    }
    text.push_str("k1000: 1\n");
    let d = failure(&text);
    assert_eq!(d.code, "nrl::interp::cycle");
    assert!(d.message.contains("deeper than"), "{}", d.message);
    let mut short = String::new();
    for i in 0..50 {
        short.push_str(&format!("k{i}: ${{k{}}}\n", i + 1));
    }
    short.push_str("k50: 1\n");
    assert_eq!(json(&resolved(&short))["k0"], json!(1));
}

#[test]
fn a_syntax_error_is_reported_once_even_when_referenced() {
    let d = failure("b: ${a}\na: \"${oops\"\nc: \"x ${oops\"\n");
    assert_eq!(d.code, "nrl::interp::syntax");
    assert_eq!(d.location().as_deref(), Some("t.yaml:2:5"), "at a, not b");
    assert_eq!(d.related.len(), 1, "c has its own copy of the text: {d:?}");
    assert_eq!(d.related[0].location().as_deref(), Some("t.yaml:3:7"));
}

#[test]
fn paths_go_through_chains_of_references() {
    let n = resolved(
        "x: ${a.k}\na: ${b}\nb: ${c}\nc:\n  k: 1\ny: ${m.k}\nm: \"${oc.decode:'{k: 2}'}\"\n",
    );
    assert_eq!(json(&n)["x"], json!(1));
    // Deliberate difference: OmegaConf 2.3 refuses to walk into a resolver's result
    // ("node `m` is not a container"); nrl walks into the mapping it produced.
    assert_eq!(json(&n)["y"], json!(2), "through a resolver result");
    let d = failure("x: ${a.k}\na: ${b}\nb: ${a}\n");
    assert_eq!(d.code, "nrl::interp::cycle");
}
