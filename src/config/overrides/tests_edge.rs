//! The override rows of the anchors' edge-case table (§4.7, rows 1-17 and 24-30), one
//! named test each. Expected results were checked against Hydra 1.3.8 / OmegaConf 2.3.0
//! (see tests/it/overrides_golden.rs); rows where nrl differs say so.

use super::test_support::*;
use super::*;
use crate::config::node::Value;
use serde_json::json;

#[test]
fn row01_float_exponent() {
    assert_eq!(
        run_ok("lr: 1e-4", &["lr=3e-4"], Side::Recipe),
        json!({"lr": 0.0003})
    );
    assert_eq!(value("lr=3e-4"), Value::Float(3e-4));
}

#[test]
fn row02_int_with_underscores() {
    assert_eq!(
        run_ok("steps: 10", &["steps=1_000"], Side::Recipe),
        json!({"steps": 1000})
    );
}

#[test]
fn row03_none_is_a_string() {
    assert_eq!(value("name=None"), Value::Str("None".into()));
}

#[test]
fn row04_constants_are_case_insensitive() {
    assert_eq!(value("flag=TrUe"), Value::Bool(true));
    assert_eq!(value("x=NULL"), Value::Null);
    assert_eq!(value("x=fAlSe"), Value::Bool(false));
}

#[test]
fn row05_quoting_prevents_typing() {
    assert_eq!(value("x='1'"), Value::Str("1".into()));
    assert_eq!(value("x=\"true\""), Value::Str("true".into()));
    assert_eq!(value("x='yes'"), Value::Str("yes".into()));
}

#[test]
fn row06_outer_whitespace_trimmed_inner_kept() {
    assert_eq!(
        value("msg=  hello world  "),
        Value::Str("hello world".into())
    );
    assert_eq!(value("msg=a  b"), Value::Str("a  b".into()));
}

#[test]
fn row07_bracket_needs_escape_or_quotes() {
    let e = parse_err("dir=A[B");
    assert_eq!(e.code, CODE_SYNTAX);
    assert_eq!(e.location().as_deref(), Some("<override #1>:1:6"));
    assert_eq!(value("dir=A\\[B"), Value::Str("A[B".into()));
    assert_eq!(value("dir=\"A[B\""), Value::Str("A[B".into()));
}

#[test]
fn row08_dicts_merge() {
    assert_eq!(
        run_ok("a: {x: 1, y: 2}", &["a={x:5}"], Side::Recipe),
        json!({"a": {"x": 5, "y": 2}})
    );
}

#[test]
fn row09_lists_replace_and_extend_list_appends() {
    assert_eq!(
        run_ok("l: [1,2,3]", &["l=[9]"], Side::Recipe),
        json!({"l": [9]})
    );
    // Hydra 1.4's extend_list (extended.md@7e710aeb); 1.3.8 does not have it.
    assert_eq!(
        run_ok("l: [1,2,3]", &["l=extend_list(4)"], Side::Recipe),
        json!({"l": [1, 2, 3, 4]})
    );
    assert_eq!(
        run_ok("l: [a]", &["l=extend_list(b, [c])"], Side::Recipe),
        json!({"l": ["a", "b", ["c"]]})
    );
}

#[test]
fn row10_missing_key_needs_plus_in_struct_mode() {
    let e = run_err("bar: 1", &["foo=1"], Side::Recipe);
    assert_eq!(e.code, CODE_MISSING);
    assert_eq!(e.message, "Could not override 'foo'");
    let help = e.help.clone().unwrap_or_default();
    assert!(
        help.contains("To append to your config use +foo=1"),
        "{help}"
    );
}

#[test]
fn row11_add_over_null_is_allowed() {
    assert_eq!(
        run_ok("foo: null", &["+foo=1"], Side::Recipe),
        json!({"foo": 1})
    );
}

#[test]
fn row12_add_over_existing_value_fails() {
    let e = run_err("foo: 3", &["+foo=1"], Side::Recipe);
    assert_eq!(e.code, CODE_EXISTS);
    assert_eq!(
        e.message,
        "Could not append to config. An item is already at 'foo'."
    );
    let help = e.help.clone().unwrap_or_default();
    assert!(
        help.contains("'++foo=1'") && help.contains("'foo=1'"),
        "{help}"
    );
}

#[test]
fn row13_delete_of_null_fails_like_missing() {
    let e = run_err("foo: null", &["~foo"], Side::Recipe);
    assert_eq!(e.code, CODE_DELETE);
    assert_eq!(
        e.message,
        "Could not delete from config. 'foo' does not exist."
    );
}

#[test]
fn row14_delete_with_other_value_fails() {
    let e = run_err("foo: 4", &["~foo=3"], Side::Recipe);
    assert_eq!(e.code, CODE_DELETE);
    assert_eq!(
        e.message,
        "Could not delete from config. The value of 'foo' is 4 and not 3."
    );
    // Python equality: 4 == 4.0.
    assert_eq!(
        run_ok("foo: 4\nbar: 1", &["~foo=4.0"], Side::Recipe),
        json!({"bar": 1})
    );
}

#[test]
fn row15_simple_choice_sweep_is_ambiguous_in_a_single_run() {
    let e = parse_err("k=a,b");
    assert_eq!(e.code, CODE_SWEEP);
    assert_eq!(e.message, "Ambiguous value for argument 'k=a,b'");
    let help = e.help.clone().unwrap_or_default();
    assert!(help.contains("k=[a,b]"), "{help}");
    assert!(help.contains("k='a,b'"), "{help}");
    assert!(help.contains("sweep"), "{help}");
}

#[test]
fn row16_interpolation_is_kept_verbatim() {
    assert_eq!(
        value("path=${oc.env:HOME}/x"),
        Value::Str("${oc.env:HOME}/x".into())
    );
    assert_eq!(
        run_ok("path: a", &["path=${oc.env:HOME}/x"], Side::Recipe),
        json!({"path": "${oc.env:HOME}/x"})
    );
}

#[test]
fn row17_nested_interpolation_must_be_quoted() {
    let e = parse_err("path=${oc.env:X,${a}}");
    assert_eq!(e.code, CODE_SYNTAX);
    assert!(e.help.clone().unwrap_or_default().contains("quote"));
    assert_eq!(
        value("path='${oc.env:X,${a}}'"),
        Value::Str("${oc.env:X,${a}}".into())
    );
}

#[test]
fn row24_integer_segments_index_lists() {
    assert_eq!(
        run_ok("a: [{b: 0}]", &["a.0.b=1"], Side::Recipe),
        json!({"a": [{"b": 1}]})
    );
}

#[test]
fn row25_empty_value_is_empty_string() {
    // Verified: Hydra gives '' (the reference nrl-k8s YAML path gave null).
    assert_eq!(value("x="), Value::Str(String::new()));
    assert_eq!(run_ok("x: 5", &["x="], Side::Recipe), json!({"x": ""}));
}

#[test]
fn row26_new_key_inside_merged_dict_is_a_struct_error() {
    let e = run_err("db: {driver: mysql}", &["db={newkey: 1}"], Side::Recipe);
    assert_eq!(e.code, CODE_MISSING);
    assert_eq!(
        run_ok("db: {driver: mysql}", &["++db.newkey=1"], Side::Recipe),
        json!({"db": {"driver": "mysql", "newkey": 1}})
    );
    assert_eq!(
        run_ok("db: {driver: mysql}", &["+db={newkey: 1}"], Side::Recipe),
        json!({"db": {"driver": "mysql", "newkey": 1}})
    );
}

#[test]
fn row29_float_range_steps_like_hydra() {
    assert_eq!(
        expand_sweep("x=range(0,10,3.3)").unwrap(),
        ["x=0.0", "x=3.3", "x=6.6", "x=9.9"]
    );
    // Hydra's Decimal stepping also gives 0.7000000000000001 here (verified).
    assert_eq!(
        expand_sweep("x=range(0,1,0.1)").unwrap()[7],
        "x=0.7000000000000001"
    );
}

#[test]
fn row30_sweeps_take_the_cartesian_product() {
    let args: Vec<String> = ["a=1,2", "b=x,y", "c=3"].map(String::from).to_vec();
    let runs = expand_sweeps(&args).unwrap();
    assert_eq!(
        runs,
        vec![
            vec!["a=1", "b=x", "c=3"],
            vec!["a=1", "b=y", "c=3"],
            vec!["a=2", "b=x", "c=3"],
            vec!["a=2", "b=y", "c=3"],
        ]
    );
}
