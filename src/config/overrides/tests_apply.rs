//! Applying overrides: struct mode (recipe) vs create mode (infra), merging, lists,
//! deletes, spans of the created nodes, partitioning, and the diagnostics users see.

use super::test_support::*;
use super::*;
use serde_json::json;

#[test]
fn recipe_side_is_struct_mode_infra_side_creates() {
    let e = run_err("labels: {a: b}", &["labels.team=rl"], Side::Recipe);
    assert_eq!(e.code, CODE_MISSING);
    assert_eq!(
        run_ok("labels: {a: b}", &["labels.team=rl"], Side::Infra),
        json!({"labels": {"a": "b", "team": "rl"}})
    );
    // Missing intermediates and null sections are created on the infra side only.
    assert_eq!(
        run_ok("{}", &["scheduler.kai.queue=q"], Side::Infra),
        json!({"scheduler": {"kai": {"queue": "q"}}})
    );
    assert_eq!(
        run_ok("scheduler: null", &["scheduler.queue=q"], Side::Infra),
        json!({"scheduler": {"queue": "q"}})
    );
    assert_eq!(
        run_err("scheduler: null", &["scheduler.queue=q"], Side::Recipe).code,
        CODE_MISSING
    );
    // New keys inside a merged dict are fine on the infra side (DESIGN §3).
    assert_eq!(
        run_ok("labels: {a: b}", &["labels={c: d}"], Side::Infra),
        json!({"labels": {"a": "b", "c": "d"}})
    );
}

#[test]
fn infra_side_keeps_the_other_hydra_rules() {
    assert_eq!(run_err("a: 1", &["+a=2"], Side::Infra).code, CODE_EXISTS);
    assert_eq!(run_err("a: 1", &["~b"], Side::Infra).code, CODE_DELETE);
    assert_eq!(run_err("a: 1", &["~a=2"], Side::Infra).code, CODE_DELETE);
    assert_eq!(run_ok("a: 1\nb: 2", &["~a"], Side::Infra), json!({"b": 2}));
}

#[test]
fn plus_adds_missing_intermediates_in_struct_mode() {
    assert_eq!(
        run_ok(
            "policy: {lr: 1}",
            &["+policy.optimizer.kwargs.foreach=false"],
            Side::Recipe
        ),
        json!({"policy": {"lr": 1, "optimizer": {"kwargs": {"foreach": false}}}})
    );
    assert_eq!(
        run_ok("a: null", &["+a.b=1"], Side::Recipe),
        json!({"a": {"b": 1}})
    );
}

#[test]
fn scalar_where_a_mapping_is_needed() {
    let e = run_err("a: hello", &["a.b=1"], Side::Recipe);
    assert_eq!(e.code, CODE_TYPE);
    assert!(
        e.message.contains("`a` is a string, not a mapping"),
        "{}",
        e.message
    );
    assert!(e.help.clone().unwrap_or_default().contains("++a.b=1"));
    // Also on the infra side: creating keys never silently replaces a value.
    assert_eq!(
        run_err("image: x", &["image.tag=y"], Side::Infra).code,
        CODE_TYPE
    );
    // Hydra's force-add replaces the scalar (verified for both `+` and `++`).
    assert_eq!(
        run_ok("a: hello", &["++a.b=1"], Side::Recipe),
        json!({"a": {"b": 1}})
    );
    assert_eq!(
        run_ok("a: hello", &["+a.b=1"], Side::Recipe),
        json!({"a": {"b": 1}})
    );
}

#[test]
fn container_values_merge_replace_or_conflict() {
    assert_eq!(
        run_ok("a: {b: {c: 1, d: 2}}", &["a={b: {c: 5}}"], Side::Recipe),
        json!({"a": {"b": {"c": 5, "d": 2}}})
    );
    assert_eq!(
        run_ok("a: [1, 2]", &["a=[]"], Side::Recipe),
        json!({"a": []})
    );
    assert_eq!(
        run_ok("a: {x: 1}", &["a=null"], Side::Recipe),
        json!({"a": null})
    );
    assert_eq!(
        run_ok("a: 3", &["a={x: 1}"], Side::Recipe),
        json!({"a": {"x": 1}})
    );
    let e = run_err("a: {x: 1}", &["a=[1, 2]"], Side::Recipe);
    assert_eq!(e.code, CODE_TYPE);
    assert!(
        e.message.contains("cannot merge a list into a mapping"),
        "{}",
        e.message
    );
    assert_eq!(
        run_err("a: [1]", &["a={x: 1}"], Side::Infra).code,
        CODE_TYPE
    );
    // `???` in a merged dict does not overwrite (OmegaConf merge).
    assert_eq!(
        run_ok("a: {b: 1}", &["a={b: ???}"], Side::Recipe),
        json!({"a": {"b": 1}})
    );
    // Key order: existing keys keep their place, new ones are appended.
    let out = run_ok("a: {x: 1, y: 2}", &["a={z: 3, x: 9}"], Side::Infra);
    assert_eq!(out.to_string(), r#"{"a":{"x":9,"y":2,"z":3}}"#);
}

#[test]
fn list_items_by_index() {
    assert_eq!(
        run_ok("a: [1, 2]", &["a.1=9"], Side::Recipe),
        json!({"a": [1, 9]})
    );
    assert_eq!(
        run_ok("a: [{x: 1}, {x: 2}]", &["a.1={x: 5}"], Side::Recipe),
        json!({"a": [{"x": 1}, {"x": 5}]})
    );
    let e = run_err("a: [1, 2]", &["a.5=1"], Side::Infra);
    assert_eq!(e.code, CODE_TYPE);
    assert!(e.help.clone().unwrap_or_default().contains("extend_list"));
    let e = run_err("a: [1, 2]", &["a.x=1"], Side::Infra);
    assert!(e.help.clone().unwrap_or_default().contains("`a.0`"));
    // Hydra crashes with a TypeError here; nrl deletes the item.
    assert_eq!(
        run_ok("a: [1, 2, 3]", &["~a.1"], Side::Recipe),
        json!({"a": [1, 3]})
    );
    assert_eq!(
        run_err("a: [1, 2]", &["~a.5"], Side::Recipe).code,
        CODE_DELETE
    );
}

#[test]
fn extend_list_needs_a_list() {
    let e = run_err("a: 1", &["a=extend_list(2)"], Side::Recipe);
    assert_eq!(e.code, CODE_TYPE);
    assert!(e.message.contains("which is not a list"), "{}", e.message);
    assert_eq!(
        run_err("b: 1", &["a=extend_list(2)"], Side::Recipe).code,
        CODE_MISSING
    );
    // Infra side: a missing or null list is created.
    assert_eq!(
        run_ok("b: 1", &["a=extend_list(2)"], Side::Infra),
        json!({"b": 1, "a": [2]})
    );
    assert_eq!(
        run_ok("a: null", &["a=extend_list(2)"], Side::Infra),
        json!({"a": [2]})
    );
}

#[test]
fn delete_compares_with_python_equality() {
    assert_eq!(
        run_ok("f: 1\ng: 0", &["~f=true"], Side::Recipe),
        json!({"g": 0})
    );
    assert_eq!(
        run_ok("f: {a: 1, b: 2}", &["~f={b: 2, a: 1}"], Side::Recipe),
        json!({})
    );
    assert_eq!(run_ok("f: ''", &["~f="], Side::Recipe), json!({}));
    let e = run_err("f: abc", &["~f="], Side::Recipe);
    assert_eq!(
        e.message,
        "Could not delete from config. The value of 'f' is abc and not ."
    );
    let e = run_err("f: {a: 1}", &["~f={a: 2}"], Side::Recipe);
    assert!(
        e.message.contains("is {'a': 1} and not {'a': 2}"),
        "{}",
        e.message
    );
}

#[test]
fn order_matters_and_delete_then_add_works() {
    assert_eq!(
        run_ok("a: 1", &["~a", "+a=2"], Side::Recipe),
        json!({"a": 2})
    );
    assert_eq!(
        run_err("a: 1", &["~a", "a=2"], Side::Recipe).code,
        CODE_MISSING
    );
    assert_eq!(
        run_ok("a: 1", &["a=2", "a=3"], Side::Recipe),
        json!({"a": 3})
    );
}

#[test]
fn created_nodes_carry_spans_into_the_override() {
    let mut root = yaml("policy:\n  lr: 1.0e-4\n");
    let ovs = parse_all(&["policy.lr=3e-4", "+policy.new.deep=x", "policy={lr: 5}"]).unwrap();
    apply(&mut root, &ovs[0], Side::Recipe).unwrap();
    let lr = root.get_path("policy.lr").unwrap();
    assert_eq!(lr.span.unwrap().text(), "3e-4");
    assert_eq!(lr.span.unwrap().location(), "<override #1>:1:11");
    assert_eq!(lr.key_span.unwrap().text(), "policy.lr");
    apply(&mut root, &ovs[1], Side::Recipe).unwrap();
    let deep = root.get_path("policy.new.deep").unwrap();
    assert_eq!(deep.span.unwrap().text(), "x");
    let new = root.get_path("policy.new").unwrap();
    assert_eq!(new.key_span.unwrap().text(), "new");
    apply(&mut root, &ovs[2], Side::Recipe).unwrap();
    let lr = root.get_path("policy.lr").unwrap();
    assert_eq!(lr.span.unwrap().location(), "<override #3>:1:13");
    // The mapping merged into keeps its file span.
    let policy = root.get("policy").unwrap();
    assert_eq!(policy.key_span.unwrap().location(), "recipe.yaml:1:1");
}

#[test]
fn missing_key_suggests_the_closest_existing_key() {
    let e = run_err(
        "policy: {lr: 1, max_steps: 2}",
        &["policy.lrr=3"],
        Side::Recipe,
    );
    assert_eq!(e.message, "Could not override 'policy.lrr'");
    let help = e.help.clone().unwrap_or_default();
    // The fix is the override as meant, not the typo appended.
    assert_eq!(
        help,
        "did you mean `policy.lr=3`? (to add `policy.lrr` as a new key: +policy.lrr=3)"
    );
    // The deepest existing level decides: a typo in an intermediate segment.
    let e = run_err("policy: {lr: 1}", &["polcy.lr=3"], Side::Recipe);
    assert!(e.help.clone().unwrap_or_default().contains("`policy.lr=3`"));
    // Inside a merged dict: the key below the override's.
    let e = run_err("db: {user: a}", &["db={usr: b}"], Side::Recipe);
    assert!(
        e.help.clone().unwrap_or_default().contains("`db.user`"),
        "{:?}",
        e.help
    );
    // Nothing close: no suggestion, still the append hint.
    let e = run_err("policy: {lr: 1}", &["zzz=3"], Side::Recipe);
    assert_eq!(
        e.help.as_deref(),
        Some("To append to your config use +zzz=3")
    );
}

#[test]
fn snapshot_missing_key_with_did_you_mean() {
    let e = run_err(
        "policy:\n  lr: 1.0e-4\n",
        &["policy.lrr=3e-4"],
        Side::Recipe,
    );
    let expected = "\
nrl::override::missing_key

  × Could not override 'policy.lrr'
   ╭─[<override #1>:1:8]
 1 │ policy.lrr=3e-4
   ·        ─┬─
   ·         ╰── `lrr` is not a key of `policy`
   ╰────
  help: did you mean `policy.lr=3e-4`? (to add `policy.lrr` as a new key:
        +policy.lrr=3e-4)
";
    assert_eq!(e.render(false, 80), expected);
}

#[test]
fn partition_routes_by_the_key_body() {
    let args: Vec<String> = [
        "policy.lr=1",
        "infra.scheduler.queue=x",
        "+infra.labels.a=b",
        "~infra.labels",
        "infrastructure.x=1",
        "++infra.image=y",
    ]
    .map(String::from)
    .to_vec();
    let (recipe, infra) = partition(&args).unwrap();
    let r: Vec<_> = recipe
        .iter()
        .map(|o| (o.op, o.dotted_key(), o.index))
        .collect();
    assert_eq!(
        r,
        [
            (Op::Set, "policy.lr".into(), 0),
            (Op::Set, "infrastructure.x".into(), 4)
        ]
    );
    let i: Vec<_> = infra
        .iter()
        .map(|o| (o.op, o.dotted_key(), o.index))
        .collect();
    assert_eq!(
        i,
        [
            (Op::Set, "scheduler.queue".into(), 1),
            (Op::Add, "labels.a".into(), 2),
            (Op::Delete, "labels".into(), 3),
            (Op::ForceAdd, "image".into(), 5),
        ]
    );
    // Spans still point into the original argument, `infra.` included in the key span.
    assert_eq!(infra[1].key_span.text(), "infra.labels.a");
    assert_eq!(infra[1].segment_spans[0].text(), "labels");
    assert_eq!(infra[1].display_key(), "infra.labels.a");
    assert_eq!(infra[1].side, Side::Infra);
}

#[test]
fn partition_rejects_the_whole_infra_section() {
    // The reference sent `infra=foo` to the recipe and `~infra` / `infra` to the infra side
    // as junk; nrl asks for individual keys.
    for arg in [
        "infra=foo",
        "~infra",
        "infra",
        "+infra={a: 1}",
        "++infra=null",
    ] {
        let e = partition(&[arg.to_string()]).unwrap_err();
        assert_eq!(e.code, CODE_INFRA_ROOT, "{arg}");
        assert!(
            e.help
                .clone()
                .unwrap_or_default()
                .contains("infra.KEY=VALUE")
        );
    }
    // Hydra rejects the reference's `+~infra.a=1` form as well.
    assert_eq!(
        partition(&["+~infra.a=1".to_string()]).unwrap_err().code,
        CODE_SYNTAX
    );
}

#[test]
fn partition_reports_every_bad_argument() {
    let args: Vec<String> = ["a=[1", "ok=1", "infra=x"].map(String::from).to_vec();
    let e = partition(&args).unwrap_err();
    assert_eq!(e.code, CODE_SYNTAX);
    assert_eq!(e.related.len(), 1);
    assert_eq!(e.related[0].code, CODE_INFRA_ROOT);
}

#[test]
fn infra_errors_name_the_infra_key() {
    let (_, infra) = partition(&["+infra.labels.a=c".to_string()]).unwrap();
    let mut root = yaml("labels: {a: b}");
    let e = apply_all(&mut root, &infra, Side::Infra).unwrap_err();
    assert!(e.message.contains("'infra.labels.a'"), "{}", e.message);
    let (_, infra) = partition(&["~infra.labls".to_string()]).unwrap();
    let e = apply_all(&mut root, &infra, Side::Infra).unwrap_err();
    assert!(
        e.help
            .clone()
            .unwrap_or_default()
            .contains("`~infra.labels`")
    );
}

#[test]
fn end_to_end_recipe_and_infra() {
    let (recipe, infra) = run_both(
        "policy:\n  lr: 1.0e-4\n  optimizer: {kwargs: {foreach: true}}\n",
        "labels: {a: b}\n",
        &[
            "policy.lr=3e-4",
            "+logger.x=1",
            "~policy.optimizer.kwargs.foreach",
            "infra.labels.team=rl",
            "infra.labels['kai.scheduler/queue']=rl",
        ],
    )
    .unwrap_or_else(|e| panic!("{}", e.render(false, 100)));
    assert_eq!(
        recipe.to_json(),
        json!({"policy": {"lr": 0.0003, "optimizer": {"kwargs": {}}}, "logger": {"x": 1}})
    );
    assert_eq!(
        infra.to_json(),
        json!({"labels": {"a": "b", "team": "rl", "kai.scheduler/queue": "rl"}})
    );
}

#[test]
fn expand_sweep_forms() {
    assert_eq!(expand_sweep("x=1").unwrap(), ["x=1"]);
    assert_eq!(expand_sweep("~x").unwrap(), ["~x"]);
    assert_eq!(
        expand_sweep("+x=choice(a, 'b,c', yes, '1')").unwrap(),
        ["+x=a", "+x='b,c'", "+x=yes", "+x='1'"]
    );
    assert_eq!(
        expand_sweep("x=range(5, 0, -2)").unwrap(),
        ["x=5", "x=3", "x=1"]
    );
    assert_eq!(expand_sweep("x=range(3)").unwrap(), ["x=0", "x=1", "x=2"]);
    assert_eq!(
        expand_sweep("x=range(1, 0, -0.25)").unwrap(),
        ["x=1.0", "x=0.75", "x=0.5", "x=0.25"]
    );
    assert_eq!(
        expand_sweep("x=float(range(1, 3))").unwrap(),
        ["x=1.0", "x=2.0"]
    );
    assert_eq!(
        expand_sweep("x=sort(range(1, 10, 3), reverse=true)").unwrap(),
        ["x=7", "x=4", "x=1"]
    );
    assert_eq!(
        expand_sweep("x=[1,2],{a: b}").unwrap(),
        ["x=[1, 2]", "x={a: b}"]
    );
    assert_eq!(expand_sweep("x=str(1, 2)").unwrap(), ["x='1'", "x='2'"]);
    assert_eq!(expand_sweep("x=glob(*)").unwrap_err().code, CODE_SWEEP);
    assert_eq!(
        expand_sweep("x=range(0, 3, 0)").unwrap_err().code,
        CODE_TYPE
    );
    assert_eq!(
        expand_sweep("x=range(0, 100000)").unwrap_err().code,
        CODE_TYPE
    );
}

#[test]
fn expand_sweeps_guards_the_run_count() {
    let args: Vec<String> = ["a=range(100)", "b=range(200)"].map(String::from).to_vec();
    assert_eq!(expand_sweeps(&args).unwrap_err().code, CODE_SWEEP);
}

#[test]
fn expanded_values_reparse_to_the_swept_value() {
    let runs =
        expand_sweep("x=choice('a b', \"it's\", 'C:\\\\', ' ', '', null, '${a}', [a, 'b,c'])")
            .unwrap();
    let values: Vec<_> = runs
        .iter()
        .map(|r| parse_override(0, r).unwrap().value.unwrap().to_json())
        .collect();
    assert_eq!(
        values,
        [
            json!("a b"),
            json!("it's"),
            json!("C:\\"),
            json!(" "),
            json!(""),
            json!(null),
            json!("${a}"),
            json!(["a", "b,c"])
        ]
    );
}

#[test]
fn hydra_typing_on_both_sides() {
    // Issue 14 item 10: `yes` is a string to Hydra on the recipe side and the infra side.
    let (recipe, infra) = run_both(
        "policy: {lr: 1}\n",
        "labels: {a: b}\n",
        &[
            "+logger.note=yes",
            "policy.lr=010",
            "infra.labels.flag=yes",
            "infra.labels.n=0x10",
        ],
    )
    .unwrap_or_else(|e| panic!("{}", e.render(false, 100)));
    assert_eq!(
        recipe.to_json(),
        json!({"policy": {"lr": "010"}, "logger": {"note": "yes"}})
    );
    assert_eq!(
        infra.to_json(),
        json!({"labels": {"a": "b", "flag": "yes", "n": "0x10"}})
    );
}

/// Apply on the recipe side the way `nrl check` does (Hydra's `select` resolves).
fn run_resolving(config: &str, args: &[&str]) -> crate::diag::Result<serde_json::Value> {
    let mut root = yaml(config);
    let ovs = parse_all(args)?;
    let env = crate::config::env::MapEnv::new([("NRL_USER", "t")]);
    super::apply_all_resolving(&mut root, &ovs, Side::Recipe, &env)?;
    Ok(root.to_json())
}

#[test]
fn add_and_delete_look_through_interpolations_like_hydra_select() {
    // Found by the NeMo-RL oracle (tests/it/nemo_rl_oracle.rs); results from Hydra 1.3.2.
    // `~x` on `x: ${nope}`: select raises, "Error merging override ~x".
    let e = run_resolving("x: ${nope}\n", &["~x"]).unwrap_err();
    assert!(
        e.message.contains("Error merging override ~x"),
        "{}",
        e.message
    );
    // `~y=1` compares with the resolved value.
    assert_eq!(
        run_resolving("x: 1\ny: ${x}\n", &["~y=1"]).unwrap(),
        json!({"x": 1})
    );
    assert!(run_resolving("x: 1\ny: ${x}\n", &["~y=2"]).is_err());
    // `+y=5` where y resolves to null: select gives None, so Hydra adds.
    assert_eq!(
        run_resolving("x: null\ny: ${x}\n", &["+y=5"]).unwrap(),
        json!({"x": null, "y": 5})
    );
    // `~k=null` is `~k`: Hydra compares only a value that is not None.
    assert_eq!(
        run_resolving("k: 0.75\nj: 1\n", &["~k=null"]).unwrap(),
        json!({"j": 1})
    );
}

#[test]
fn adding_under_an_interpolation_that_cannot_resolve_fails_like_hydra_select() {
    // NeMo-RL oracle, seed 498957 case 1402 (Hydra 1.3.2): `policy` replaced by a
    // self-referencing interpolation, then `+policy.zza=…`: select walks through
    // `policy`, fails to resolve it, and Hydra reports "Error merging override".
    let e = run_resolving(
        "policy:\n  a: 3\n",
        &["policy='${mul:${policy.a},4}'", "+policy.zza='quoted str'"],
    )
    .unwrap_err();
    assert!(
        e.message
            .contains("Error merging override +policy.zza='quoted str'"),
        "{}",
        e.message
    );
}
