use std::path::Path;

use super::*;
use crate::repl::session::Var;
use crate::script::builtins::config::ConfigKey;

fn snapshot() -> Snapshot {
    let var = |name: &str, t: &str, keys: &[&str]| Var {
        name: name.to_string(),
        type_name: t.to_string(),
        keys: keys.iter().map(|k| k.to_string()).collect(),
        config_keys: None,
        config_recipe: None,
        constant: false,
    };
    let key = |path: &str, value: &str, container: bool| ConfigKey {
        path: path.to_string(),
        value: value.to_string(),
        container,
    };
    let config = Var {
        config_keys: Some(std::sync::Arc::new(vec![
            key("policy", "{2 keys}", true),
            key("policy.model_name", "\"Qwen/Qwen2.5-1.5B\"", false),
            key("policy.optimizer", "{1 key}", true),
            key("policy.optimizer.lr", "1e-06", false),
            key("grpo", "{1 key}", true),
            key("grpo.max_num_steps", "3", false),
            key("infra", "{1 key}", true),
            key("infra.namespace", "\"default\"", false),
        ])),
        config_recipe: Some("examples/quickstart/recipe.yaml".to_string()),
        ..var("cfg", "Config", &[])
    };
    Snapshot {
        vars: vec![
            config,
            var("meta", "map", &["labels", "name"]),
            var("count", "int", &[]),
        ],
        ..Snapshot::default()
    }
}

fn candidates(line: &str) -> (usize, Vec<Pair>) {
    let snap = snapshot();
    let cx = Lookup {
        builtins: Catalog::builtins(),
        session: &snap,
        workdir: Path::new(env!("CARGO_MANIFEST_DIR")),
        search_path: &[],
    };
    complete(line, line.len(), &cx)
}

fn names(line: &str) -> (usize, Vec<String>) {
    let (start, pairs) = candidates(line);
    (start, pairs.into_iter().map(|p| p.replacement).collect())
}

#[test]
fn config_keys_inside_key_strings() {
    // One level at a time; a mapping goes on with `.`; the list shows each value.
    let (start, pairs) = candidates(r#"cfg.get(""#);
    assert_eq!(start, 9);
    let shown: Vec<String> = pairs.iter().map(|p| p.display.clone()).collect();
    assert_eq!(
        shown,
        ["policy = {2 keys}", "grpo = {1 key}", "infra = {1 key}"]
    );
    assert_eq!(names(r#"cfg.get("pol"#), (9, vec!["policy.".to_string()]));
    assert_eq!(
        names(r#"let v = cfg.get("policy."#).1,
        ["policy.model_name", "policy.optimizer."]
    );
    assert_eq!(
        candidates(r#"cfg.set("policy.optimizer.l"#).1[0].display,
        "policy.optimizer.lr = 1e-06"
    );
    assert_eq!(names(r#"cfg.explain("infra.n"#).1, ["infra.namespace"]);
    // Override strings: after `+`, `++` or `~`, and not in the value.
    assert_eq!(
        names(r#"cfg.override("+gr"#),
        (15, vec!["grpo.".to_string()])
    );
    assert_eq!(names(r#"cfg.override("~grpo.m"#).1, ["grpo.max_num_steps"]);
    assert!(
        names(r#"cfg.override("grpo.max_num_steps=exam"#)
            .1
            .iter()
            .all(|n| !n.starts_with("grpo"))
    );
    // Overrides of a recipe a Config of the session was loaded from.
    let load = r#"recipe("examples/quickstart/recipe.yaml", #{infra: "i.yaml", overrides: ["#;
    assert_eq!(names(&format!("{load}\"gr")).1, ["grpo."]);
    assert_eq!(
        names(&format!(r#"{load}"grpo.max_num_steps=5", "+policy.op"#)).1,
        ["policy.optimizer."]
    );
    assert!(names(&format!("{load}\"grpo.max_num_steps=")).1.is_empty());
    assert!(
        names(r#"recipe("other.yaml", #{overrides: ["gr"#)
            .1
            .is_empty()
    );
    assert!(
        names(r#"recipe("examples/quickstart/recipe.yaml", #{tags: ["gr"#)
            .1
            .is_empty()
    );
    // Not a Config (a map), not a key method, a closed string: no keys.
    assert!(!names(r#"meta.get("pol"#).1.contains(&"policy.".to_string()));
    assert!(
        !names(r#"cfg.manifests("pol"#)
            .1
            .contains(&"policy.".to_string())
    );
    assert!(
        names(r#"cfg.get("policy") "#)
            .1
            .iter()
            .all(|n| n != "policy.")
    );
}

#[test]
fn builtins_variables_modules_and_keywords() {
    assert_eq!(names("let x = recip"), (8, vec!["recipe(".to_string()]));
    let (_, c) = names("co");
    assert!(
        c.contains(&"count".to_string()) && c.contains(&"const".to_string()),
        "{c:?}"
    );
    assert!(c.contains(&"confirm(".to_string()), "{c:?}");
    let (_, c) = names("k8");
    assert_eq!(c, ["k8s::"]);
    assert_eq!(names("k8s::li"), (5, vec!["list(".to_string()]));
    // Without a prefix, Rhai's standard library stays out of the way.
    let (_, c) = names("");
    assert!(c.contains(&"recipe(".to_string()) && !c.contains(&"parse_int(".to_string()));
    assert!(names("parse_i").1.contains(&"parse_int(".to_string()));
}

#[test]
fn methods_by_receiver_type() {
    let (start, c) = names("cfg.man");
    assert_eq!((start, c), (4, vec!["manifests(".to_string()]));
    // A Config has no `to_upper`; a string literal and `recipe(…)` results are typed.
    assert!(names("cfg.to_up").1.is_empty());
    assert_eq!(names("\"abc\".to_up").1, ["to_upper("]);
    assert_eq!(names(r#"recipe("r.yaml").valid"#).1, ["validate("]);
    assert!(names("cfg.manifests()[0].").1.contains(&"kind".to_string()));
    assert_eq!(names("[1, 2].pu").1, ["push("]);
    // Map variables offer their keys along with map methods.
    let (_, c) = names("meta.");
    assert!(
        c.contains(&"labels".to_string()) && c.contains(&"keys(".to_string()),
        "{c:?}"
    );
    assert!(names("count.").1.contains(&"abs(".to_string()));
}

#[test]
fn methods_of_a_known_type_leave_out_those_of_any_value() {
    let (_, c) = names("cfg.");
    assert!(
        c.contains(&"get(".to_string()) && c.contains(&"summary(".to_string()),
        "{c:?}"
    );
    for any in ["exit(", "take(", "tag", "type_of(", "is_shared("] {
        assert!(!c.contains(&any.to_string()), "{any} in {c:?}");
    }
    // Every candidate is a Config method or property.
    let cat = Catalog::builtins();
    for name in &c {
        let bare = name.trim_end_matches('(');
        assert!(
            cat.members(Some("Config"))
                .any(|e| e.name == bare && e.receiver.as_deref() == Some("Config")),
            "{name}"
        );
    }
    assert!(!names("\"abc\".").1.contains(&"take(".to_string()));
    // On a value of unknown type a typed prefix still finds them.
    assert!(names("unknown_thing.ta").1.contains(&"take(".to_string()));
}

#[test]
fn strings_complete_paths_and_imports_complete_modules() {
    let (start, c) = names(r#"recipe("examples/quicks"#);
    assert_eq!((start, c), (8, vec!["examples/quickstart/".to_string()]));
    let (_, c) = names(r#"recipe("examples/quickstart/rec"#);
    assert_eq!(c, ["examples/quickstart/recipe.yaml"]);
    let (_, c) = names(r#"import "nrl/ch"#);
    assert_eq!(c, ["nrl/checklist"]);
    let (_, c) = names(r#"import "scripts/lau"#);
    assert_eq!(c, ["scripts/launch"]);
    // A closed string is not completed inside; comments are left alone.
    assert!(
        names(r#""examples" "#)
            .1
            .iter()
            .all(|n| !n.starts_with("examples/"))
    );
    assert!(names("// rec").1.is_empty());
}

#[test]
fn meta_commands_and_their_arguments() {
    assert_eq!(names(":lo"), (0, vec![":load".to_string()]));
    assert_eq!(names(":doc k8s::wa"), (5, vec!["k8s::wait".to_string()]));
    let (_, c) = names(":help Config.ge");
    assert_eq!(c, ["Config.get"]);
    assert_eq!(names(":plan o").1, ["on", "off"]);
    assert_eq!(
        names(":load scripts/lau").1,
        ["scripts/launch.rhai", "scripts/launch_test.rhai"]
    );
}
