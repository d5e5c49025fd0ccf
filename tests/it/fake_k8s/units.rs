//! The fake's building blocks, checked directly.

use serde_json::{Value, json};

use crate::support::fake_k8s::apply::{decode_fields, encode_fields, field_set, server_side_apply};
use crate::support::fake_k8s::compare::{same_but_volatile, same_spec};
use crate::support::fake_k8s::meta::glob_match;
use crate::support::fake_k8s::patch::{json_patch, merge_patch};
use crate::support::fake_k8s::selectors::{FieldSelector, LabelSelector};

#[test]
fn label_selector_grammar() {
    let obj = json!({"metadata": {"labels": {"a": "1", "b": "x"}}});
    for (sel, want) in [
        ("", true),
        ("a=1", true),
        ("a==1,b=x", true),
        ("a!=1", false),
        ("a in (1,2)", true),
        ("a notin (1)", false),
        ("c notin (1)", true),
        ("c", false),
        ("!c", true),
        ("!a", false),
    ] {
        assert_eq!(
            LabelSelector::parse(sel).unwrap().matches(&obj),
            want,
            "{sel}"
        );
    }
    assert!(LabelSelector::parse("a in 1").is_err());
    assert!(LabelSelector::parse("bad key=1").is_err());
    let f = FieldSelector::parse("status.phase=Running,metadata.name!=x").unwrap();
    assert!(f.matches(&json!({"metadata": {"name": "y"}, "status": {"phase": "Running"}})));
    assert!(FieldSelector::parse("nonsense").is_err());
}

#[test]
fn merge_and_json_patches() {
    let mut doc = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
    merge_patch(&mut doc, &json!({"a": {"b": null, "d": 3}, "l": [9]}));
    assert_eq!(doc, json!({"a": {"c": 2, "d": 3}, "l": [9]}));
    json_patch(&mut doc, &json!([{"op": "add", "path": "/l/-", "value": 10}, {"op": "remove", "path": "/a/c"}, {"op": "test", "path": "/a/d", "value": 3}])).unwrap();
    assert_eq!(doc, json!({"a": {"d": 3}, "l": [9, 10]}));
    let err = json_patch(&mut doc, &json!([{"op": "remove", "path": "/nope"}])).unwrap_err();
    assert_eq!(err.code, 422);
}

#[test]
fn managed_fields_round_trip_and_associative_lists() {
    let obj = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"x": "1"}},
        "spec": {"containers": [{"name": "c", "image": "i", "args": ["a", "b"]}]}, "status": {"phase": "Running"}});
    let set = field_set(&obj, false);
    let encoded = encode_fields(&set);
    assert_eq!(
        encoded,
        json!({"f:metadata": {"f:labels": {"f:x": {}}}, "f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:args": {}, "f:image": {}, "f:name": {}}}}})
    );
    assert_eq!(decode_fields(&encoded), set);
    // Applying a second container by another manager keeps the first.
    let (merged, entries) = server_side_apply(None, &obj, "a", None, false).unwrap();
    let mut live = merged;
    live["metadata"]["managedFields"] = json!([{"manager": "a", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": encode_fields(&entries[0].fields)}]);
    let other = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "d", "image": "j"}]}});
    let (merged, entries) = server_side_apply(Some(&live), &other, "b", None, false).unwrap();
    let names: Vec<&str> = merged["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "d"]);
    assert_eq!(entries.len(), 2);
}

#[test]
fn globs() {
    assert!(glob_match("bench-*", "bench-math"));
    assert!(glob_match("*-head-*", "rc-head-abcde"));
    assert!(!glob_match("bench-*", "train"));
    assert!(glob_match("exact", "exact"));
}

/// The comparisons the write path used to make by cloning both objects.
fn spec_part(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
    }
    v
}

fn comparable(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        if let Some(Value::Array(mf)) = meta.get_mut("managedFields") {
            for e in mf.iter_mut().filter_map(Value::as_object_mut) {
                e.remove("time");
            }
        }
    }
    v
}

#[test]
fn in_place_comparisons_agree_with_the_cloning_ones() {
    let base = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "resourceVersion": "5", "labels": {"a": "1"},
                     "managedFields": [{"manager": "nrl", "time": "t1", "fieldsV1": {"f:spec": {}}}]},
        "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "c"}]}}},
        "status": {"active": 1},
    });
    type Edit = Box<dyn Fn(&mut Value)>;
    let edits: Vec<(&str, Edit)> = vec![
        ("none", Box::new(|_| {})),
        (
            "rv",
            Box::new(|o| o["metadata"]["resourceVersion"] = json!("6")),
        ),
        (
            "time",
            Box::new(|o| o["metadata"]["managedFields"][0]["time"] = json!("t2")),
        ),
        (
            "manager",
            Box::new(|o| o["metadata"]["managedFields"][0]["manager"] = json!("x")),
        ),
        (
            "extra entry",
            Box::new(|o| {
                o["metadata"]["managedFields"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"time": "t"}))
            }),
        ),
        (
            "mf not a list",
            Box::new(|o| o["metadata"]["managedFields"] = json!({"time": "t1"})),
        ),
        (
            "mf entry not a map",
            Box::new(|o| o["metadata"]["managedFields"][0] = json!("t1")),
        ),
        (
            "no mf",
            Box::new(|o| {
                o["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("managedFields");
            }),
        ),
        (
            "no rv",
            Box::new(|o| {
                o["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("resourceVersion");
            }),
        ),
        (
            "label",
            Box::new(|o| o["metadata"]["labels"]["a"] = json!("2")),
        ),
        ("spec", Box::new(|o| o["spec"]["parallelism"] = json!(2))),
        ("status", Box::new(|o| o["status"]["active"] = json!(0))),
        (
            "no status",
            Box::new(|o| {
                o.as_object_mut().unwrap().remove("status");
            }),
        ),
        (
            "no metadata",
            Box::new(|o| {
                o.as_object_mut().unwrap().remove("metadata");
            }),
        ),
        (
            "metadata not a map",
            Box::new(|o| o["metadata"] = json!("m")),
        ),
        ("new top key", Box::new(|o| o["data"] = json!({}))),
        (
            "key order",
            Box::new(|o| {
                let m = o.as_object_mut().unwrap();
                let spec = m.remove("spec").unwrap();
                m.insert("spec".into(), spec);
            }),
        ),
        ("not an object", Box::new(|o| *o = json!([1]))),
    ];
    let variants: Vec<(&str, Value)> = edits
        .iter()
        .map(|(what, f)| {
            let mut v = base.clone();
            f(&mut v);
            (*what, v)
        })
        .collect();
    for (wa, a) in &variants {
        for (wb, b) in &variants {
            assert_eq!(
                same_spec(a, b),
                spec_part(a) == spec_part(b),
                "spec: {wa} vs {wb}"
            );
            assert_eq!(
                same_but_volatile(a, b),
                comparable(a) == comparable(b),
                "volatile: {wa} vs {wb}"
            );
        }
    }
}
