use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::config::env::MapEnv;
use crate::script::{CapturedOutput, HostOptions};

fn session() -> (Session, Arc<CapturedOutput>) {
    let out = Arc::new(CapturedOutput::new());
    let mut opts = HostOptions::new(env!("CARGO_MANIFEST_DIR"));
    opts.env = Arc::new(MapEnv::new([("NRL_USER", "alice"), ("NO_COLOR", "1")]));
    opts.output = out.clone();
    opts.search_path = Vec::new();
    (Session::new(Host::new(opts), Printer { width: 100 }), out)
}

#[test]
fn variables_functions_and_imports_persist_between_inputs() {
    let (mut s, out) = session();
    assert_eq!(s.eval("let x = 20;"), LineResult::Ok);
    assert_eq!(s.eval("fn twice(v) { v * 2 }"), LineResult::Ok);
    assert_eq!(s.eval("twice(x) + 2"), LineResult::Ok);
    assert_eq!(
        s.eval(r#"import "nrl/sweep" as sweep; sweep::points(["a=1,2"]).len()"#),
        LineResult::Ok
    );
    // The import outlives its input: strict variables accept `sweep::` later.
    assert_eq!(
        s.eval(r#"sweep::points(["a=1,2,3"]).len()"#),
        LineResult::Ok
    );
    assert_eq!(out.stdout(), "42\n2\n3\n", "stderr: {}", out.stderr());

    let snap = s.snapshot();
    let x = snap.vars.iter().find(|v| v.name == "x").unwrap();
    assert_eq!(x.type_name, "int");
    assert!(snap.catalog.functions().any(|e| e.name == "twice"));
    assert!(snap.catalog.in_module("sweep").any(|e| e.name == "points"));
    assert!(s.vars().contains("let x: int = 20"), "{}", s.vars());
    assert!(s.vars().contains("import \"nrl/sweep\" as sweep"));
}

#[test]
fn vars_lists_functions_too() {
    let (mut s, _out) = session();
    assert!(s.vars().starts_with("no variables or functions yet"));
    assert_eq!(
        s.eval("/// Doubles a number. Then more.\nfn twice(v) { v * 2 }\nfn add(a, b) { a + b }"),
        LineResult::Ok
    );
    assert_eq!(s.eval("let n = 3;"), LineResult::Ok);
    let vars = s.vars();
    assert!(vars.contains("let n: int = 3\n"), "{vars}");
    assert!(vars.contains("fn twice(v) — Doubles a number.\n"), "{vars}");
    assert!(vars.contains("fn add(a, b)\n"), "{vars}");
}

#[test]
fn errors_report_and_the_session_goes_on() {
    let (mut s, out) = session();
    assert_eq!(s.eval("let = 1"), LineResult::Failed(Exit::Input));
    assert_eq!(s.eval("nope + 1"), LineResult::Failed(Exit::Input));
    assert_eq!(s.eval("throw \"boom\""), LineResult::Failed(Exit::Failed));
    assert_eq!(s.eval("1 + 1"), LineResult::Ok);
    let err = out.stderr();
    assert!(err.contains("nrl::script::compile"), "{err}");
    assert!(err.contains("boom") && err.contains("input-3"), "{err}");
    assert_eq!(out.stdout(), "2\n");
}

#[test]
fn maps_show_keys_to_completion_and_handles_their_type() {
    let (mut s, _out) = session();
    assert_eq!(
        s.eval(
            r#"let m = #{alpha: 1, beta: "b"};
               let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml"});"#
        ),
        LineResult::Ok
    );
    let snap = s.snapshot();
    let m = snap.vars.iter().find(|v| v.name == "m").unwrap();
    assert_eq!(
        (m.type_name.as_str(), m.keys.clone()),
        ("map", vec!["alpha".to_string(), "beta".to_string()])
    );
    let cfg = snap.vars.iter().find(|v| v.name == "cfg").unwrap();
    assert_eq!(cfg.type_name, "Config");
    // A Config brings its keys and resolved values, recipe then infra.
    let keys = cfg.config_keys.as_deref().expect("a Config's keys");
    let value = |path: &str| {
        keys.iter()
            .find(|k| k.path == path)
            .map(|k| (k.value.as_str(), k.container))
    };
    assert_eq!(value("grpo.max_num_steps"), Some(("3", false)));
    assert_eq!(
        value("logger.log_dir"),
        Some(("\"logs/grpo-3-steps\"", false))
    );
    assert_eq!(value("infra.namespace"), Some(("\"default\"", false)));
    assert!(value("policy.optimizer").is_some_and(|(v, c)| c && v.ends_with("keys}")));
    assert_eq!(keys[0].path, "policy");
    assert_eq!(
        cfg.config_recipe.as_deref(),
        Some("examples/quickstart/recipe.yaml")
    );
    assert!(m.config_keys.is_none());
    assert!(
        s.vars().contains("let cfg: Config = Config("),
        "{}",
        s.vars()
    );
}

#[test]
fn exit_ends_the_session_and_clear_forgets_everything() {
    let (mut s, _out) = session();
    assert_eq!(s.eval("let y = 1; fn f() { 1 }"), LineResult::Ok);
    s.clear();
    assert_eq!(s.eval("y"), LineResult::Failed(Exit::Input));
    assert_eq!(s.eval("f()"), LineResult::Failed(Exit::Failed));
    assert!(s.snapshot().vars.is_empty());
    assert_eq!(s.eval("fn g() { exit(3) } g()"), LineResult::Exit(3));
}

#[test]
fn cancelling_stops_a_line_and_the_next_one_runs() {
    let (mut s, out) = session();
    let host = s.host().clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        host.cancel();
    });
    assert_eq!(s.eval("sleep(60)"), LineResult::Interrupted);
    canceller.join().unwrap();
    s.host().renew_cancel();
    assert_eq!(s.eval("40 + 2"), LineResult::Ok);
    assert!(out.stderr().contains("interrupted"));
    assert_eq!(out.stdout(), "42\n");
}

#[test]
fn load_keeps_what_a_file_defines() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lib.rhai");
    std::fs::write(&file, "let loaded = 7;\nfn add(a, b) { a + b }\n").unwrap();
    let (mut s, out) = session();
    assert_eq!(s.load(&file), LineResult::Ok);
    assert_eq!(s.eval("add(loaded, 1)"), LineResult::Ok);
    assert_eq!(out.stdout(), "8\n");
    assert_eq!(
        s.load(&dir.path().join("missing.rhai")),
        LineResult::Failed(Exit::Input)
    );
    assert!(out.stderr().contains("nrl::repl::load"));
}

#[test]
fn cli_parses_no_words_in_the_repl_and_gives_the_defaults() {
    let (mut s, out) = session();
    let r = s.eval(
        r#"let args = cli(#{ttl: int(#{default_value: 600}), dry: flag(), o: overrides()});
           print(`${args.ttl} ${args.dry} ${args.o}`);"#,
    );
    assert_eq!(r, LineResult::Ok, "{}", out.stderr());
    assert_eq!(out.stdout(), "600 false []\n");
    // A required argument cannot be given here: said so, as bad input.
    let r = s.eval(r#"cli(#{recipe: file(#{required: true})})"#);
    assert_eq!(r, LineResult::Failed(Exit::Input));
    let err = out.stderr();
    assert!(
        err.contains("missing the required argument `--recipe FILE`"),
        "{err}"
    );
    assert!(err.contains("the REPL passes no arguments"), "{err}");
}

const LOAD_QUICKSTART: &str = r#"let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml"});"#;

#[test]
fn a_missing_config_key_is_one_report_with_a_suggestion() {
    let (mut s, out) = session();
    assert_eq!(s.eval(LOAD_QUICKSTART), LineResult::Ok);
    assert_eq!(
        s.eval(r#"cfg.get("grpo.max_num_stpes")"#),
        LineResult::Failed(Exit::Failed)
    );
    let typo = out.stderr();
    assert_eq!(
        s.eval(r#"cfg.get("missing.key")"#),
        LineResult::Failed(Exit::Failed)
    );
    let missing = out.stderr()[typo.len()..].to_string();
    assert_eq!(
        s.eval(r#"cfg.get("infra.kuberay.trainin.name")"#),
        LineResult::Failed(Exit::Failed)
    );
    let infra = out.stderr()[typo.len() + missing.len()..].to_string();
    insta::assert_snapshot!(format!("{typo}---\n{missing}---\n{infra}"));
    // Existing keys, and keys reached through an interpolation, still resolve.
    assert_eq!(s.eval(r#"cfg.get("logger.log_dir")"#), LineResult::Ok);
    assert_eq!(
        s.eval(r#"cfg.get("policy.optimizer.kwargs.lr")"#),
        LineResult::Ok
    );
    // `catch` sees the code it always had.
    assert_eq!(
        s.eval(r#"try { cfg.get("nope") } catch (e) { print(e.code) }"#),
        LineResult::Ok
    );
    assert!(
        out.stdout().ends_with("nrl::interp::missing_key\n"),
        "{}",
        out.stdout()
    );
}

#[test]
fn a_cluster_failure_keeps_its_exit_code() {
    let (mut s, out) = session();
    s.host()
        .set_connect(|c| c.kubeconfig = Some("/nonexistent/kubeconfig".into()));
    assert_eq!(
        s.eval(r#"fn pods() { k8s::list("Pod") } pods()"#),
        LineResult::Failed(Exit::Api),
        "{}",
        out.stderr()
    );
    assert_eq!(s.eval(r#"throw "boom""#), LineResult::Failed(Exit::Failed));
}
