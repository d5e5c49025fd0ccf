//! Parsing: value typing (Hydra's grammar), quoting and escapes, keys,
//! prefixes, spans, functions, and syntax errors.

use super::test_support::*;
use super::*;
use crate::config::node::Value;

fn list(items: Vec<Value>) -> Value {
    Value::List(items.into_iter().map(Node::new).collect())
}

#[test]
fn hydra_typing_not_yaml11() {
    // Issue 14 item 10: Hydra's grammar types override values (OverrideLexer.g4 INT / FLOAT
    // / BOOL / NULL; overrides_visitor.py _createPrimitive), not YAML 1.1. Every one of
    // these was typed by the YAML 1.1 resolver before; NeMo-RL's loader gives strings.
    for text in [
        "yes", "on", "Off", "NO", "y", "007", "010", "00", "0x10", "0b101", "0o17", "1:30",
        "12:30:45", "1__000", "1_", ".inf", "-.inf", ".nan", ".NaN", "+.inf", "1e", "0_1",
    ] {
        assert_eq!(
            value(&format!("x={text}")),
            Value::Str(text.into()),
            "x={text}"
        );
    }
    // Inside containers too.
    assert_eq!(
        value("x=[010, yes, 0x10, 1]"),
        list(vec![
            Value::Str("010".into()),
            Value::Str("yes".into()),
            Value::Str("0x10".into()),
            Value::Int(1),
        ])
    );
    let Value::Map(m) = value("x={a: 010, b: off, c: .5}") else {
        panic!("not a map")
    };
    assert_eq!(m["a"].value, Value::Str("010".into()));
    assert_eq!(m["b"].value, Value::Str("off".into()));
    assert_eq!(m["c"].value, Value::Float(0.5));
}

#[test]
fn hydra_number_tokens() {
    for (text, want) in [
        ("x=0", Value::Int(0)),
        ("x=-0", Value::Int(0)),
        ("x=1_000", Value::Int(1000)),
        ("x=1e3", Value::Float(1000.0)),
        ("x=.5", Value::Float(0.5)),
        ("x=5.", Value::Float(5.0)),
        ("x=-INF", Value::Float(f64::NEG_INFINITY)),
        ("x=9223372036854775807", Value::Int(i64::MAX)),
        ("x=-9223372036854775808", Value::Int(i64::MIN)),
        ("x=fALSe", Value::Bool(false)),
        ("x=nULl", Value::Null),
    ] {
        assert_eq!(value(text), want, "{text}");
    }
    assert!(matches!(value("x=nan"), Value::Float(f) if f.is_nan()));
}

#[test]
fn big_ints_are_refused_not_stringified() {
    // Python keeps 9223372036854775808 an int; nrl's ints are 64-bit, so it refuses the
    // value (docs/deviations.md) instead of silently making it a string.
    for text in [
        "x=9223372036854775808",
        "x=[1, -9223372036854775809]",
        "x={a: 99999999999999999999}",
    ] {
        let e = parse_override(0, text).unwrap_err();
        assert_eq!(e.code, CODE_TYPE, "{text}");
        assert!(
            e.message.contains("does not fit in 64 bits"),
            "{}",
            e.message
        );
    }
    let e = parse_override(0, "a.b=9223372036854775808").unwrap_err();
    insta::assert_snapshot!(e.render(false, 100));
}

#[test]
fn ref_typing_shared_and_hydra_forms() {
    for (text, want) in [
        ("x=true", Value::Bool(true)),
        ("x=True", Value::Bool(true)),
        ("x=TRUE", Value::Bool(true)),
        ("x=null", Value::Null),
        ("x=1_000", Value::Int(1000)),
        ("x=1e3", Value::Float(1000.0)),
        ("x=-1_0", Value::Int(-10)),
        ("x=+.5e2", Value::Float(50.0)),
        ("x=inf", Value::Float(f64::INFINITY)),
        ("x=1.", Value::Float(1.0)),
    ] {
        assert_eq!(value(text), want, "{text}");
    }
    assert!(matches!(value("x=NaN"), Value::Float(f) if f.is_nan()));
}

#[test]
fn ref_typing_strings_stay_strings() {
    for (text, want) in [
        ("x=2024-01-01", "2024-01-01"),
        ("x=2.52.0", "2.52.0"),
        ("x=y", "y"),
        ("x=None", "None"),
        ("x=infinity", "infinity"),
        ("x=v1.2.3", "v1.2.3"),
        ("x=/abs/path/file.yaml", "/abs/path/file.yaml"),
        ("x=nvcr.io/nvidia/nemo:25.04", "nvcr.io/nvidia/nemo:25.04"),
        // The reference's YAML path made this a mapping {echo a: b}; Hydra keeps a string.
        ("x=echo a: b", "echo a: b"),
        ("x='x y'", "x y"),
        ("x=\"q\"", "q"),
        ("x=  padded  ", "padded"),
        // An escape or an interpolation means "literal": no YAML typing.
        ("x=\\ yes", " yes"),
        ("x=${a}", "${a}"),
    ] {
        assert_eq!(value(text), Value::Str(want.into()), "{text}");
    }
}

#[test]
fn ref_typing_containers() {
    assert_eq!(
        value("x=[a, b]"),
        list(vec![Value::Str("a".into()), Value::Str("b".into())])
    );
    let m = value("x={x: 1, y: [true, null], z: {w: '2'}}");
    let Value::Map(m) = m else { panic!("mapping") };
    assert_eq!(m["x"].value, Value::Int(1));
    assert_eq!(m["y"].value, list(vec![Value::Bool(true), Value::Null]));
    assert_eq!(
        m["z"].get("w").map(|n| n.value.clone()),
        Some(Value::Str("2".into()))
    );
    assert_eq!(value("x=[]"), Value::List(vec![]));
    assert_eq!(value("x={ }"), Value::Map(Default::default()));
}

#[test]
fn ref_typing_differences_from_the_yaml_path_are_errors() {
    // The reference read `a #b` as `a` plus a comment, `x=y` as the string "x=y", and `~` as
    // null; Hydra's grammar rejects all three, and nrl says how to write them.
    let e = parse_err("x=a #b");
    assert!(e.help.clone().unwrap_or_default().contains("quote"));
    let e = parse_err("x=a=b");
    assert!(
        e.help.clone().unwrap_or_default().contains("`\\=`"),
        "escape hint"
    );
    assert_eq!(value("x=a\\=b"), Value::Str("a=b".into()));
    let e = parse_err("x=~");
    assert!(e.help.clone().unwrap_or_default().contains("null"));
    assert_eq!(parse_err("x=[a").code, CODE_SYNTAX);
}

#[test]
fn quoted_strings_follow_hydra_escape_rules() {
    assert_eq!(value(r"x='C:\foo'"), Value::Str(r"C:\foo".into()));
    assert_eq!(value(r"x='it\'s'"), Value::Str("it's".into()));
    assert_eq!(value(r#"x="it's""#), Value::Str("it's".into()));
    assert_eq!(value(r"x='abc\\'"), Value::Str(r"abc\".into()));
    assert_eq!(
        value(r#"x="the path is C:\\\"some folder\"\\""#),
        Value::Str(r#"the path is C:\"some folder"\"#.into())
    );
    assert_eq!(value("x='{a: 10}'"), Value::Str("{a: 10}".into()));
    assert_eq!(value("x=' '"), Value::Str(" ".into()));
    assert_eq!(parse_err("x='open").code, CODE_SYNTAX);
    assert_eq!(parse_err("x=it's").code, CODE_SYNTAX);
}

#[test]
fn unquoted_escapes() {
    assert_eq!(
        value(r"dir=job\{a\=1\,b\=2\,c\=3\}"),
        Value::Str("job{a=1,b=2,c=3}".into())
    );
    assert_eq!(value(r"x=\\"), Value::Str(r"\".into()));
    assert_eq!(value(r"x=a\ "), Value::Str("a ".into()));
    // A backslash before an ordinary character is kept.
    assert_eq!(value(r"x=\t"), Value::Str(r"\t".into()));
}

#[test]
fn keys_are_lenient_about_segment_characters() {
    let ov = parse_override(0, "infra.labels.nrl-k8s/owner=x").unwrap();
    assert_eq!(ov.path, ["infra", "labels", "nrl-k8s/owner"]);
    let ov = parse_override(0, "infra.labels['kai.scheduler/queue']=rl").unwrap();
    assert_eq!(ov.path, ["infra", "labels", "kai.scheduler/queue"]);
    assert_eq!(ov.dotted_key(), "infra.labels['kai.scheduler/queue']");
    let ov = parse_override(0, "a[\"x.y\"][0].b=1").unwrap();
    assert_eq!(ov.path, ["a", "x.y", "0", "b"]);
    for key in ["$a", "a.$b-c", "a@b", "a.0.b", "_x"] {
        let ov = parse_override(0, &format!("{key}=1")).unwrap();
        assert_eq!(ov.dotted_key(), key);
    }
}

#[test]
fn malformed_keys_are_syntax_errors() {
    for bad in [
        " x=1", "x =1", "a..b=1", ".a=1", "a.=1", "=1", "", "x", "a[x]=1", "a['b=1", "a b=1",
        "a#b=1",
    ] {
        assert_eq!(parse_err(bad).code, CODE_SYNTAX, "{bad:?}");
    }
    let e = parse_err("x");
    assert!(
        e.help.clone().unwrap_or_default().contains("~x"),
        "mentions delete"
    );
}

#[test]
fn prefixes_select_the_operation() {
    let cases = [
        ("a=1", Op::Set),
        ("+a=1", Op::Add),
        ("++a=1", Op::ForceAdd),
        ("~a", Op::Delete),
        ("~a=1", Op::Delete),
    ];
    for (text, op) in cases {
        let ov = parse_override(0, text).unwrap();
        assert_eq!(ov.op, op, "{text}");
        assert_eq!(ov.path, ["a"]);
    }
    assert!(parse_override(0, "~a").unwrap().value.is_none());
    assert_eq!(value("~a="), Value::Str(String::new()));
    for bad in ["+++a=1", "+~a=1", "~+a=1", "~~a", "+a", "++a"] {
        assert_eq!(parse_err(bad).code, CODE_SYNTAX, "{bad}");
    }
}

#[test]
fn spans_point_into_the_argument() {
    let ov = parse_override(3, "policy.lr=3e-4").unwrap();
    let v = ov.value.as_ref().unwrap();
    assert_eq!(v.span.unwrap().text(), "3e-4");
    assert_eq!(v.span.unwrap().location(), "<override #4>:1:11");
    assert_eq!(ov.key_span.text(), "policy.lr");
    assert_eq!(ov.segment_spans[1].text(), "lr");
    assert_eq!(ov.span.text(), "policy.lr=3e-4");
    assert_eq!(ov.span.kind(), crate::config::SourceKind::Override);

    let ov = parse_override(0, "+x=  a b  ").unwrap();
    assert_eq!(ov.key_span.text(), "x");
    assert_eq!(ov.value.unwrap().span.unwrap().text(), "a b");

    let ov = parse_override(0, "d={k: 'v', l: [1, 2]}").unwrap();
    let d = ov.value.unwrap();
    assert_eq!(d.span.unwrap().text(), "{k: 'v', l: [1, 2]}");
    let k = d.get("k").unwrap();
    assert_eq!(k.span.unwrap().text(), "'v'");
    assert_eq!(k.key_span.unwrap().text(), "k");
    let l = d.get("l").unwrap();
    assert_eq!(l.as_list().unwrap()[1].span.unwrap().text(), "2");
}

#[test]
fn casts_follow_hydras_conversion_matrix() {
    assert_eq!(value("x=int(3.14)"), Value::Int(3));
    assert_eq!(value("x=int(-3.9)"), Value::Int(-3));
    assert_eq!(value("x=int(\"10\")"), Value::Int(10));
    assert_eq!(value("x=int(1e6)"), Value::Int(1_000_000));
    assert_eq!(value("x=int(value=3.5)"), Value::Int(3));
    assert_eq!(value("x=float(10)"), Value::Float(10.0));
    assert_eq!(value("x=float(\"1e3\")"), Value::Float(1000.0));
    assert_eq!(value("x=str(true)"), Value::Str("true".into()));
    assert_eq!(value("x=str(1e6)"), Value::Str("1000000.0".into()));
    assert_eq!(
        value("x=str([1,2])"),
        list(vec![Value::Str("1".into()), Value::Str("2".into())])
    );
    assert_eq!(value("x=bool(0)"), Value::Bool(false));
    assert_eq!(value("x=bool(TRUE)"), Value::Bool(true));
    assert_eq!(value("x=int (1)"), Value::Int(1));
    for bad in [
        "x=int(\"10.0\")",
        "x=int(inf)",
        "x=bool(foo)",
        "x=bool(\"\")",
        "x=int(null)",
        "x=str(null)",
    ] {
        assert_eq!(parse_err(bad).code, CODE_TYPE, "{bad}");
    }
    for bad in [
        "x=int(1, value=2)",
        "x=int(value=1, 2)",
        "x=int(a=1)",
        "x=int()",
    ] {
        assert_eq!(parse_err(bad).code, CODE_SYNTAX, "{bad}");
    }
}

#[test]
fn json_str_and_sort() {
    // json_str is Hydra 1.4 (extended.md@7e710aeb): Python json.dumps defaults.
    assert_eq!(
        value("x=json_str({a: 10})"),
        Value::Str("{\"a\": 10}".into())
    );
    assert_eq!(value("x=json_str([1, [2]])"), Value::Str("[1, [2]]".into()));
    assert_eq!(value("x=json_str(foo)"), Value::Str("\"foo\"".into()));
    assert_eq!(value("x=json_str(inf)"), Value::Str("Infinity".into()));
    assert_eq!(
        value("x=sort([3,1,2])"),
        list(vec![Value::Int(1), Value::Int(2), Value::Int(3)])
    );
    assert_eq!(
        value("x=sort(list=[b,c,a], reverse=true)"),
        list(vec![
            Value::Str("c".into()),
            Value::Str("b".into()),
            Value::Str("a".into())
        ])
    );
    assert_eq!(parse_err("x=sort([1, a])").code, CODE_TYPE);
}

#[test]
fn unknown_functions_and_sweeps_in_containers() {
    let e = parse_err("x=echo (hi)");
    assert_eq!(e.code, CODE_SYNTAX);
    assert!(e.message.contains("unknown function `echo`"));
    assert!(e.help.clone().unwrap_or_default().contains("\\("));
    assert_eq!(parse_err("x=[choice(1,2)]").code, CODE_SYNTAX);
    assert_eq!(parse_err("+x=extend_list(1)").code, CODE_SYNTAX);
}

#[test]
fn every_sweep_form_is_an_error_in_a_single_run() {
    for text in [
        "x=1,2",
        "x=choice(1,2)",
        "x=range(3)",
        "x=glob(*)",
        "x=interval(0,1)",
        "x=sort(3,1,2)",
        "x=shuffle(a,b)",
        "x=int(1,2)",
        "x=tag(log, interval(0, 1))",
    ] {
        assert_eq!(parse_err(text).code, CODE_SWEEP, "{text}");
    }
}

#[test]
fn snapshot_syntax_error() {
    let e = parse_err("dir=A[B");
    let expected = "\
nrl::override::syntax

  × cannot parse override `dir=A[B`: unexpected `[`
   ╭─[<override #1>:1:6]
 1 │ dir=A[B
   ·      ┬
   ·      ╰── unexpected `[`
   ╰────
  help: quote the value (in the shell: 'key=\"…\"') or escape the character with
        a backslash, as in `\\[`
";
    assert_eq!(e.render(false, 80), expected);
}
