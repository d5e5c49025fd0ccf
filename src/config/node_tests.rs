//! Tests of `config::node`.
use super::*;

fn m(pairs: &[(&str, Node)]) -> Node {
    Node::from_map(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

#[test]
fn float_repr_matches_python() {
    assert_eq!(python_float_repr(1.0), "1.0");
    assert_eq!(python_float_repr(0.0003), "0.0003");
    assert_eq!(python_float_repr(1e-7), "1e-07");
    assert_eq!(python_float_repr(1e16), "1e+16");
    assert_eq!(python_float_repr(1e15), "1000000000000000.0");
    assert_eq!(python_float_repr(-2.5), "-2.5");
    assert_eq!(python_float_repr(123456.789), "123456.789");
    assert_eq!(python_float_repr(0.1 + 0.2), "0.30000000000000004");
    assert_eq!(python_float_repr(f64::INFINITY), "inf");
}

#[test]
fn python_str_of_containers() {
    let n = m(&[("k", Node::int(1)), ("b", Node::bool(true))]);
    assert_eq!(python_str(&n), "{'k': 1, 'b': True}");
    assert_eq!(python_str(&Node::null()), "None");
    assert_eq!(python_str(&Node::str("x")), "x");
}

#[test]
fn merge_keeps_base_order_and_appends() {
    let mut a = m(&[("x", Node::int(1)), ("y", Node::int(2))]);
    let b = m(&[("z", Node::int(3)), ("x", Node::int(9))]);
    deep_merge(&mut a, b).unwrap();
    let keys: Vec<_> = a.as_map().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["x", "y", "z"]);
    assert_eq!(a.get("x").unwrap().as_i64(), Some(9));
}

#[test]
fn merge_lists_replace_and_missing_keeps() {
    let mut a = m(&[
        ("l", Node::list(vec![Node::int(1), Node::int(2)])),
        ("s", Node::int(5)),
    ]);
    let b = m(&[
        ("l", Node::list(vec![Node::int(9)])),
        ("s", Node::str(MISSING)),
    ]);
    deep_merge(&mut a, b).unwrap();
    assert_eq!(a.get("l").unwrap().as_list().unwrap().len(), 1);
    assert_eq!(a.get("s").unwrap().as_i64(), Some(5));
}

#[test]
fn merge_null_removes_mapping_and_map_over_list_fails() {
    let mut a = m(&[("opt", m(&[("lr", Node::int(1))]))]);
    deep_merge(&mut a, m(&[("opt", Node::null())])).unwrap();
    assert!(a.get("opt").unwrap().is_null());
    let mut a = m(&[("x", m(&[]))]);
    let err = deep_merge(&mut a, m(&[("x", Node::list(vec![]))])).unwrap_err();
    assert_eq!(err.path, "x");
    // Nested: the whole dotted path, outermost key first.
    let mut a = m(&[("a", m(&[("b", m(&[("c", m(&[]))]))]))]);
    let over = m(&[("a", m(&[("b", m(&[("c", Node::list(vec![]))]))]))]);
    let err = deep_merge(&mut a, over).unwrap_err();
    assert_eq!(err.path, "a.b.c");
    assert_eq!((err.base_type, err.over_type), ("mapping", "list"));
}

#[test]
fn override_marker_replaces_section() {
    let mut a = m(&[("policy", m(&[("a", Node::int(1)), ("b", Node::int(2))]))]);
    let b = m(&[(
        "policy",
        m(&[("_override_", Node::bool(true)), ("a", Node::int(5))]),
    )]);
    deep_merge(&mut a, b).unwrap();
    let p = a.get("policy").unwrap().as_map().unwrap();
    assert_eq!(p.len(), 1);
    assert_eq!(p["a"].as_i64(), Some(5));
}

#[test]
fn visit_sees_every_node_depth_first_like_walk() {
    let tree = m(&[
        (
            "a",
            m(&[
                ("b", Node::int(1)),
                ("c", Node::list(vec![Node::int(2), Node::int(3)])),
            ]),
        ),
        ("d", Node::str("x")),
    ]);
    let mut visited = Vec::new();
    tree.visit(&mut |n| visited.push(n.type_name()));
    let mut walked = Vec::new();
    tree.walk(&mut Vec::new(), &mut |_, n| walked.push(n.type_name()));
    assert_eq!(visited, walked);
    assert_eq!(visited.len(), 7);
}
