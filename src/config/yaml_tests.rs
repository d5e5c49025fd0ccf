//! Tests of `config::yaml`.
use super::*;
use crate::config::source::{SourceKind, add_source};

fn load(text: &str) -> Result<Node> {
    parse_source(add_source("t.yaml", None, text, SourceKind::Text))
}

#[test]
fn yaml11_scalars() {
    let n = load(
        "a: yes\nb: off\nc: 010\nd: 0x10\ne: 1_000\nf: 1:30\ng: 1e3\nh: 2024-01-01\ni: ~\nj: .inf\nk: 1.5\nl: 'yes'\nm: 2.52.0\nn: y\n",
    )
    .unwrap();
    let g = |k: &str| n.get(k).unwrap().value.clone();
    assert_eq!(g("a"), Value::Bool(true));
    assert_eq!(g("b"), Value::Bool(false));
    assert_eq!(g("c"), Value::Int(8));
    assert_eq!(g("d"), Value::Int(16));
    assert_eq!(g("e"), Value::Int(1000));
    assert_eq!(g("f"), Value::Int(90));
    assert_eq!(g("g"), Value::Float(1000.0));
    assert_eq!(g("h"), Value::Str("2024-01-01".into()));
    assert_eq!(g("i"), Value::Null);
    assert_eq!(g("j"), Value::Float(f64::INFINITY));
    assert_eq!(g("k"), Value::Float(1.5));
    assert_eq!(g("l"), Value::Str("yes".into()));
    assert_eq!(g("m"), Value::Str("2.52.0".into()));
    assert_eq!(g("n"), Value::Str("y".into()));
}

#[test]
fn integer_extremes() {
    let n = load("lo: -9223372036854775808\nhi: 9223372036854775807\nq: '9223372036854775808'\n")
        .unwrap();
    assert_eq!(n.get("lo").unwrap().as_i64(), Some(i64::MIN));
    assert_eq!(n.get("hi").unwrap().as_i64(), Some(i64::MAX));
    assert_eq!(n.get("q").unwrap().as_str(), Some("9223372036854775808"));
    // Beyond i64 OmegaConf keeps a Python int; nrl refuses it rather than make it a string.
    for text in [
        "over: 9223372036854775808\n",
        "l: [0x1_0000_0000_0000_0000]\n",
    ] {
        let e = load(text).unwrap_err();
        assert_eq!(e.code, "nrl::config::big_int", "{text}");
    }
}

#[test]
fn spans_point_at_values_and_keys() {
    let n = load("top:\n  image: foo:bar\n").unwrap();
    let img = n.get_path("top.image").unwrap();
    assert_eq!(img.span.unwrap().text(), "foo:bar");
    assert_eq!(img.span.unwrap().location(), "t.yaml:2:10");
    assert_eq!(img.key_span.unwrap().text(), "image");
}

#[test]
fn duplicate_keys_are_errors() {
    let e = load("a: 1\nb: 2\na: 3\n").unwrap_err();
    assert_eq!(e.code, "nrl::config::duplicate_key");
    assert_eq!(e.location().as_deref(), Some("t.yaml:3:1"));
}

#[test]
fn duplicates_are_string_keys_only_and_name_the_first() {
    let e = load("a: 1\nb: 2\na: 3\n").unwrap_err();
    assert_eq!(e.labels[1].span.text(), "a");
    assert_eq!(e.labels[1].span.location(), "t.yaml:1:1");
    // Non-string keys are not checked (OmegaConf sees them only after typing): the later
    // one wins, in the first one's place.
    let n = load("1: a\nx: b\n1: c\n").unwrap();
    assert_eq!(n.as_map().unwrap().keys().collect::<Vec<_>>(), ["1", "x"]);
    assert_eq!(n.get("1").unwrap().as_str(), Some("c"));
    // A string key and an int key of the same text are different keys to OmegaConf...
    let n = load("\"1\": a\n1: b\n").unwrap();
    assert_eq!(n.get("1").unwrap().as_str(), Some("b"));
    // ...but a string key repeated around an int one is still a duplicate of the first.
    let e = load("\"1\": a\n1: b\n'1': c\n").unwrap_err();
    assert_eq!(e.code, "nrl::config::duplicate_key");
    assert_eq!(e.labels[1].span.location(), "t.yaml:1:1");
    let n = load("1: a\n\"1\": b\n").unwrap();
    assert_eq!(n.get("1").unwrap().key_kind, KeyKind::Str);
}

#[test]
fn anchors_aliases_and_merge_keys() {
    let n = load(
        "base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 9\n  z: 3\nlist: &l [1, 2]\ncopy: *l\n",
    )
    .unwrap();
    let c = n.get("child").unwrap().as_map().unwrap();
    assert_eq!(c.keys().collect::<Vec<_>>(), ["x", "y", "z"]);
    assert_eq!(c["y"].as_i64(), Some(9));
    assert_eq!(n.get("copy").unwrap().as_list().unwrap().len(), 2);
}

#[test]
fn merge_list_earlier_wins() {
    let n = load("a: &a {k: 1}\nb: &b {k: 2, j: 3}\nc:\n  <<: [*a, *b]\n").unwrap();
    let c = n.get("c").unwrap();
    assert_eq!(c.get("k").unwrap().as_i64(), Some(1));
    assert_eq!(c.get("j").unwrap().as_i64(), Some(3));
}

#[test]
fn syntax_error_has_location() {
    let e = load("a: [1, 2\nb: 3\n").unwrap_err();
    assert_eq!(e.code, "nrl::config::yaml_syntax");
    assert!(e.location().is_some());
}

#[test]
fn non_string_keys_kept_with_kind() {
    let n = load("8080: http\n").unwrap();
    let v = n.get("8080").unwrap();
    assert_eq!(v.key_kind, KeyKind::Int);
}

#[test]
fn empty_is_empty_mapping_and_list_top_fails() {
    let id = add_source("e.yaml", None, "", SourceKind::Text);
    assert!(
        parse_mapping(id, "e.yaml")
            .unwrap()
            .as_map()
            .unwrap()
            .is_empty()
    );
    let id = add_source("l.yaml", None, "- 1\n", SourceKind::Text);
    let e = parse_mapping(id, "l.yaml").unwrap_err();
    assert_eq!(e.code, "nrl::config::not_a_mapping");
}

#[test]
fn block_literal_is_string_with_newline() {
    let n = load("e: |\n  set -eu\n  echo hi\n").unwrap();
    assert_eq!(n.get("e").unwrap().as_str(), Some("set -eu\necho hi\n"));
}

#[test]
fn spans_are_byte_offsets_after_non_ascii_text() {
    let n = load("# caf\u{e9} \u{2615}\nname: \u{fc}n\u{ef}code\nx: 1\n").unwrap();
    assert_eq!(
        n.get("name").unwrap().span.unwrap().text(),
        "\u{fc}n\u{ef}code"
    );
    let x = n.get("x").unwrap();
    assert_eq!(x.span.unwrap().text(), "1");
    assert_eq!(x.key_span.unwrap().location(), "t.yaml:3:1");
}

/// Nine levels of nine-item lists, each aliasing the level below: 600 bytes that would
/// build 9^9 nodes.
fn alias_bomb() -> String {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for level in 1..9 {
        let items = vec![format!("*a{}", level - 1); 9].join(", ");
        text.push_str(&format!("a{level}: &a{level} [{items}]\n"));
    }
    text
}

#[test]
fn an_alias_bomb_is_refused_at_the_alias_that_crosses_the_budget() {
    let text = alias_bomb();
    assert!(text.len() < 700, "the bomb is small: {} bytes", text.len());
    let started = std::time::Instant::now();
    let e = load(&text).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(e.code, "nrl::config::yaml_alias_budget");
    // Lines 2-6 expand 672,588 nodes; the first `*a5` on line 7 adds 597,871 more.
    assert_eq!(e.location().as_deref(), Some("t.yaml:7:10"));
    insta::assert_snapshot!(e.render(false, 100));
}

#[test]
fn a_chain_of_merge_keys_is_refused_before_it_grows_quadratically() {
    // Each mapping merges the one before and adds a key: level n holds n keys, so the
    // copies add up to n²/2 nodes.
    let mut text = String::from("m0: &m0 {k0: 0}\n");
    for i in 1..3000 {
        text.push_str(&format!("m{i}: &m{i}\n  <<: *m{}\n  k{i}: {i}\n", i - 1));
    }
    let started = std::time::Instant::now();
    let e = load(&text).unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(e.code, "nrl::config::yaml_alias_budget");
}

#[test]
fn aliases_within_the_budget_load_in_full() {
    // Seven levels: 9^7 = 4.8M would be too many, 9^5 = 59,049 is fine.
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for level in 1..5 {
        let items = vec![format!("*a{}", level - 1); 9].join(", ");
        text.push_str(&format!("a{level}: &a{level} [{items}]\n"));
    }
    let n = load(&text).unwrap();
    fn count(n: &Node) -> usize {
        1 + match &n.value {
            Value::List(items) => items.iter().map(count).sum(),
            Value::Map(m) => m.values().map(count).sum(),
            _ => 0,
        }
    }
    assert_eq!(
        count(n.get("a4").unwrap()),
        (0..=5).map(|k| 9usize.pow(k)).sum::<usize>()
    );
}
