//! Property tests: no input string makes parsing or resolution panic.

use proptest::prelude::*;

use super::super::ast::Piece;
use super::super::parser::{parse_element, parse_template};
use super::super::{check_syntax, has_interpolation, resolve, resolve_path};
use super::env;
use crate::config::node::{Map, Node};

/// Strings made mostly of the grammar's special characters.
fn grammar_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            8 => prop::sample::select(vec![
                "$", "{", "}", "[", "]", ".", ":", ",", "\\", "'", "\"", " ", "${", "a", "b",
                "0", "1", "-", "oc.env", "oc.select", "oc.decode", "mul", "user", "null", "???",
                "é", "\n", "\t",
            ])
            .prop_map(str::to_string),
            1 => any::<String>(),
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

/// A small tree whose strings are the generated ones, placed where relative and
/// absolute references can reach each other.
fn tree(strings: &[String]) -> Node {
    let mut inner = Map::new();
    let mut root = Map::new();
    for (i, s) in strings.iter().enumerate() {
        inner.insert(
            format!("{}", (b'a' + i as u8) as char),
            Node::str(s.clone()),
        );
        root.insert(
            format!("{}", (b'a' + i as u8) as char),
            Node::str(s.clone()),
        );
    }
    root.insert(
        "0".into(),
        Node::list(vec![Node::from_map(inner), Node::int(1)]),
    );
    Node::from_map(root)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn parsing_never_panics(s in grammar_soup()) {
        let _ = parse_template(&s);
        let _ = parse_element(&s);
        let _ = has_interpolation(&s);
    }

    #[test]
    fn resolving_never_panics(strings in prop::collection::vec(grammar_soup(), 1..5)) {
        let root = tree(&strings);
        let env = env();
        let _ = check_syntax(&root);
        let _ = resolve(&root, &env);
        let _ = resolve_path(&root, "0.0.a", &env);
        let _ = resolve_path(&root, "b.c", &env);
    }

    #[test]
    fn has_interpolation_agrees_with_the_parser(s in grammar_soup()) {
        if let Ok(t) = parse_template(&s) {
            let parsed = t.pieces.iter().any(|p| matches!(p, Piece::Interp(_)));
            prop_assert_eq!(has_interpolation(&s), parsed);
        }
    }
}
