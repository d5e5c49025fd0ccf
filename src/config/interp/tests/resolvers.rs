//! Built-in resolvers.

use serde_json::json;

use super::{failure, json, resolved};

#[test]
fn user_follows_the_nrl_user_rule() {
    let n = resolved("labels:\n  owner: ${user:}\nname: ${user:}-raycluster\n");
    assert_eq!(json(&n)["labels"]["owner"], json!("alice-b"));
    assert_eq!(json(&n)["name"], json!("alice-b-raycluster"));
    assert_eq!(failure("a: ${user:x}\n").code, "nrl::interp::resolver");
}

#[test]
fn oc_env_reads_variables_and_stringifies_defaults() {
    // anchors §4.5; §4.7 row 18: the default goes through str(), except null
    let n = resolved(concat!(
        "a: ${oc.env:NRL_TEST_PORT}\n",
        "b: ${oc.env:NRL_TEST_UNSET,8080}\n",
        "c: ${oc.env:NRL_TEST_UNSET,null}\n",
        "d: ${oc.env:NRL_TEST_UNSET,[1,2]}\n",
        "e: ${oc.env:NRL_TEST_UNSET,true}\n",
    ));
    let j = json(&n);
    assert_eq!(j["a"], json!("3308"));
    assert_eq!(j["b"], json!("8080"));
    assert_eq!(j["c"], json!(null));
    assert_eq!(j["d"], json!("[1, 2]"));
    assert_eq!(j["e"], json!("True"));
    let d = failure("a: ${oc.env:NRL_TEST_UNSET}\n");
    assert_eq!(d.code, "nrl::interp::resolver");
    assert_eq!(d.message, "Environment variable 'NRL_TEST_UNSET' not found");
    assert!(
        d.help
            .as_deref()
            .unwrap_or("")
            .contains("${oc.env:NRL_TEST_UNSET,default}")
    );
}

#[test]
fn oc_decode_parses_with_the_element_grammar() {
    let n = resolved(concat!(
        "a: ${oc.decode:${oc.env:NRL_TEST_PORT}}\n",
        "b: ${oc.decode:'[a, b]'}\n",
        "c: ${oc.decode:null}\n",
        "s:\n  e: 1\n  d: \"${oc.decode:'{x: ${.e}}'}\"\n",
    ));
    let j = json(&n);
    assert_eq!(j["a"], json!(3308));
    assert_eq!(j["b"], json!(["a", "b"]));
    assert_eq!(j["c"], json!(null));
    assert_eq!(j["s"]["d"], json!({"x": 1}), "relative to the node");
    let d = failure("a: ${oc.decode:5}\n");
    assert_eq!(d.code, "nrl::interp::resolver");
    assert!(
        d.message.contains("can only take strings or None"),
        "{}",
        d.message
    );
    assert_eq!(
        failure("a: ${oc.decode:'[a'}\n").code,
        "nrl::interp::syntax"
    );
}

#[test]
fn oc_select_falls_back_on_missing_keys_and_values() {
    // anchors §4.7 row 22: `${oc.select:m,def}` on ??? gives the default
    let n = resolved(concat!(
        "m: ???\nb: 1\n",
        "x: ${oc.select:m,def}\n",
        "y: ${oc.select:m}\n",
        "z: ${oc.select:nope.deep,7}\n",
        "w: ${oc.select:b,2}\n",
        "s:\n  v: 3\n  r: ${oc.select:.v,0}\n",
    ));
    let j = json(&n);
    assert_eq!(j["x"], json!("def"));
    assert_eq!(j["y"], json!(null));
    assert_eq!(j["z"], json!(7));
    assert_eq!(j["w"], json!(1));
    assert_eq!(j["s"]["r"], json!(3));
}

#[test]
fn arithmetic_follows_python_semantics() {
    let n = resolved(concat!(
        "a: ${mul:3,2}\nb: ${div:4,2}\nc: ${div:7,2}\nd: ${max:1,1.0}\ne: ${max:2.5,3}\n",
        "f: ${add:1,2.5}\ng: ${sub:10,3}\nh: ${add:ab,cd}\ni: ${mul:ab,2}\nj: ${add:[1],[2]}\n",
        "k: ${mul:true,3}\nl: ${max:a,b}\n",
    ));
    let j = json(&n);
    assert_eq!(j["a"], json!(6));
    assert_eq!(j["b"], json!(2.0), "true division is always a float");
    assert_eq!(j["c"], json!(3.5));
    assert_eq!(j["d"], json!(1), "max keeps the first of equals");
    assert_eq!(j["e"], json!(3));
    assert_eq!(j["f"], json!(3.5));
    assert_eq!(j["g"], json!(7));
    assert_eq!(j["h"], json!("abcd"));
    assert_eq!(j["i"], json!("abab"));
    assert_eq!(j["j"], json!([1, 2]));
    assert_eq!(j["k"], json!(3));
    assert_eq!(j["l"], json!("b"));
    let d = failure("a: ${div:1,0}\n");
    assert_eq!(
        (&*d.code, d.message.as_str()),
        ("nrl::interp::resolver", "division by zero")
    );
    let d = failure("a: ${sub:a,b}\n");
    assert_eq!(
        d.message,
        "unsupported operand type(s) for -: 'str' and 'str'"
    );
    assert_eq!(
        failure("a: ${add:1}\n").message,
        "`add` takes 2 argument(s), got 1"
    );
    assert!(
        failure("a: ${mul:9223372036854775807,2}\n")
            .message
            .contains("overflow")
    );
}

#[test]
fn nested_resolver_arguments_as_in_the_recipes() {
    let n = resolved(concat!(
        "policy:\n  max_total_sequence_length: 512\n  train_micro_batch_size: 4\n",
        "  tokens: ${mul:${policy.max_total_sequence_length}, ${policy.train_micro_batch_size}}\n",
    ));
    assert_eq!(json(&n)["policy"]["tokens"], json!(2048));
}

#[test]
fn unknown_resolver_lists_the_known_ones() {
    let d = failure("a: ${nope:1}\n");
    assert_eq!(d.code, "nrl::interp::resolver");
    assert_eq!(d.message, "Unsupported interpolation type nope");
    let help = d.help.clone().unwrap_or_default();
    assert!(
        help.contains("known resolvers: user, oc.env, oc.select, oc.decode, oc.create, oc.deprecated, oc.dict.keys, oc.dict.values, mul"),
        "{help}"
    );
    assert!(!help.contains("shell"), "{help}");
}

#[test]
fn self_decoding_variable_is_an_error_not_a_crash() {
    let env = crate::config::env::MapEnv::new([("NRL_LOOP", "${oc.decode:${oc.env:NRL_LOOP}}")]);
    let root = super::load("loop.yaml", "a: ${oc.decode:${oc.env:NRL_LOOP}}\n");
    let d = super::super::resolve(&root, &env).expect_err("runaway decode");
    assert_eq!(d.code, "nrl::interp::resolver");
    assert!(
        d.message.contains("nested more than 16 levels"),
        "{}",
        d.message
    );
}

#[test]
fn oc_select_of_its_own_container_is_an_error() {
    // OmegaConf recurses until Python's stack limit here.
    let d = failure("a:\n  s: ${oc.select:.}\n");
    assert_eq!(d.code, "nrl::interp::cycle");
    assert!(
        d.message.contains("a container that holds it"),
        "{}",
        d.message
    );
}

#[test]
fn oc_create_dict_keys_and_values() {
    // Issue 14 item 10; expected values from real OmegaConf 2.3.0 (to_container, resolve).
    let n = resolved(concat!(
        "labels: \"${oc.create:'{team: rl, n: 1}'}\"\n",
        "ks: ${oc.dict.keys:labels}\n",
        "vs: ${oc.dict.values:labels}\n",
        "d: {a: z, b: \"${x}\"}\n",
        "d2: {8080: a, true: 1}\n",
        "dk2: ${oc.dict.keys:d2}\n",
        "x: 5\n",
        "dk: ${oc.dict.keys:d}\n",
        "dv: ${oc.dict.values:d}\n",
        "c2: \"${oc.create:{a: ${x}}}\"\n",
        "c3: \"${oc.create:[1, 2]}\"\n",
        "c4: ${oc.create:'hello'}\n",
        "c5: ${oc.create:''}\n",
        "s:\n  e: {p: 1}\n  k: ${oc.dict.keys:.e}\n",
        "old: ${oc.deprecated:x}\n",
    ));
    assert_eq!(
        json(&n),
        json!({
            "labels": {"team": "rl", "n": 1}, "ks": ["team", "n"], "vs": ["rl", 1],
            "d": {"a": "z", "b": 5}, "d2": {"8080": "a", "True": 1}, "dk2": [8080, true],
            "x": 5, "dk": ["a", "b"], "dv": ["z", 5], "c2": {"a": 5}, "c3": [1, 2],
            "c4": {"hello": null}, "c5": {}, "s": {"e": {"p": 1}, "k": ["p"]}, "old": 5
        })
    );
    for (text, msg) in [
        ("a: ${oc.dict.keys:nope}\n", "Key not found: 'nope'"),
        (
            "a: ${oc.dict.keys:l}\nl: [1]\n",
            "`oc.dict.keys` cannot be applied to objects of type: ListConfig",
        ),
        (
            "a: ${oc.dict.keys:1}\n",
            "`oc.dict.keys` requires a string as input, but obtained `1` of type: int",
        ),
        ("a: ${oc.create:1}\n", "Object of unsupported type: 'int'"),
        (
            "a: ${oc.deprecated:nope}\n",
            "In oc.deprecated resolver at 'a': Key not found: 'nope'",
        ),
        (
            "a: ${oc.dict.values:d}\nd: {8080: a}\n",
            "Interpolation key 'd.8080' not found",
        ),
    ] {
        let d = failure(text);
        assert_eq!(d.code, "nrl::interp::resolver", "{text}");
        assert!(d.message.contains(msg), "{text}: {}", d.message);
    }
    assert_eq!(
        failure("a: ${oc.dict.keys:d}\nd: ???\n").code,
        "nrl::interp::missing_value"
    );
    assert!(
        failure("a: ${oc.create:'[a'}\n")
            .message
            .contains("could not parse")
    );
}

#[test]
fn oc_dict_keys_may_list_the_mapping_that_holds_it() {
    // Found by the NeMo-RL oracle: OmegaConf lists the keys without resolving the values.
    let n = resolved("policy:\n  lr: ${oc.dict.keys:policy}\n  name: x\n");
    assert_eq!(
        json(&n),
        json!({"policy": {"lr": ["lr", "name"], "name": "x"}})
    );
}

#[test]
fn mul_does_not_repeat_a_list_written_in_the_config() {
    // Found by the NeMo-RL oracle: `${x}` hands a ListConfig to the resolver, and
    // ListConfig * int is a TypeError; a list literal or a resolver's list repeats.
    let d = failure("x: [1, 2]\ny: ${mul:${x},2}\n");
    assert_eq!(d.code, "nrl::interp::resolver");
    assert!(
        d.message
            .contains("unsupported operand type(s) for *: 'ListConfig' and 'int'"),
        "{}",
        d.message
    );
    let n = resolved("y: ${mul:[1, 2],2}\nz: \"${mul:${oc.decode:'[1]'},2}\"\n");
    assert_eq!(json(&n), json!({"y": [1, 2, 1, 2], "z": [1, 1]}));
}

#[test]
fn mul_does_not_repeat_a_list_built_by_a_config_resolver() {
    // NeMo-RL oracle (seed 2): `oc.dict.keys` returns a ListConfig.
    let d = failure("p: {a: 1}\nk: ${oc.dict.keys:p}\ny: ${mul:${k},2}\n");
    assert!(
        d.message.contains("'ListConfig' and 'int'"),
        "{}",
        d.message
    );
}
