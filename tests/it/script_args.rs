//! Declared playbook arguments (`let args = cli(#{…})`) through the binary: `-- --help`,
//! the command-line mistakes it refuses (exit 2, did-you-mean), the scripts in `scripts/`,
//! and what stays free-form. The parser's cases are unit tests in `src/script/declared.rs`,
//! `cli(…)` in the REPL is in `src/repl/session_tests.rs`.

use crate::support::context::{TestContext, snapshot};
use crate::support::script_host::run_with;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const QUICKSTART: [&str; 4] = [
    "--recipe",
    "examples/quickstart/recipe.yaml",
    "--infra",
    "examples/quickstart/infra.yaml",
];

/// Run `nrl script SCRIPT [--dry-run] -- ARGS`; (exit code, stdout, stderr).
fn script(ctx: &TestContext, file: &str, dry_run: bool, args: &[&str]) -> (i32, String, String) {
    let mut cmd = ctx.nrl();
    cmd.args(["script", file]);
    if dry_run {
        cmd.arg("--dry-run");
    }
    let out = cmd.arg("--").args(args).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

#[test]
fn the_launch_playbook_prints_its_help_and_stops() {
    let ctx = TestContext::new();
    // In plan mode too: nothing ran, so there is no plan to print.
    for flag in ["--help", "-h"] {
        let (code, out, err) = script(&ctx, "scripts/launch.rhai", true, &["--recipe", "x", flag]);
        assert_eq!((code, err.as_str()), (0, ""), "{out}");
        snapshot!(ctx, "launch_help", out);
    }
}

#[test]
fn every_playbook_in_scripts_declares_its_arguments() {
    let ctx = TestContext::new();
    for name in [
        "launch",
        "sweep",
        "postmortem",
        "gym_eval",
        "disagg_first_launch",
        "dev_loop",
    ] {
        let (code, out, err) = script(&ctx, &format!("scripts/{name}.rhai"), false, &["--help"]);
        assert_eq!(code, 0, "{name}: {err}");
        assert!(
            out.starts_with(&format!("scripts/{name}.rhai — ")),
            "{name}:\n{out}"
        );
        assert!(out.contains("\nUsage: nrl script "), "{name}:\n{out}");
        assert!(out.contains("  -h, --help "), "{name}:\n{out}");
    }
}

#[test]
fn a_mistyped_flag_of_launch_is_refused_with_a_did_you_mean() {
    let ctx = TestContext::new();
    let mut args = QUICKSTART.to_vec();
    args.push("--keep-clustr");
    let (code, out, err) = script(&ctx, "scripts/launch.rhai", true, &args);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(out, "", "the playbook did not run");
    snapshot!(ctx, "launch_unknown_flag", err);
}

#[test]
fn a_mistyped_flag_of_sweep_is_refused_with_a_did_you_mean() {
    let ctx = TestContext::new();
    let mut args = QUICKSTART.to_vec();
    args.extend(["grpo.max_num_steps=2,4", "--concurency", "2"]);
    let (code, out, err) = script(&ctx, "scripts/sweep.rhai", true, &args);
    assert_eq!(code, 2, "{out}{err}");
    assert_eq!(out, "");
    assert!(err.contains("nrl::script::unknown_arg"), "{err}");
    assert!(err.contains("unknown option `--concurency`"), "{err}");
    assert!(err.contains("did you mean `--concurrency`?"), "{err}");
}

#[test]
fn a_value_of_the_wrong_type_names_the_flag_and_the_type() {
    let ctx = TestContext::new();
    let mut args = QUICKSTART.to_vec();
    args.extend(["--ttl", "abc"]);
    let (code, out, err) = script(&ctx, "scripts/launch.rhai", true, &args);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    snapshot!(ctx, "launch_bad_type", err);
}

#[test]
fn a_missing_required_argument_is_refused() {
    let ctx = TestContext::new();
    let (code, out, err) = script(
        &ctx,
        "scripts/launch.rhai",
        true,
        &["--infra", "examples/quickstart/infra.yaml"],
    );
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    snapshot!(ctx, "launch_missing_required", err);
}

#[test]
fn words_a_playbook_does_not_declare_are_refused() {
    let ctx = TestContext::new();
    // gym_eval takes overrides but no positional words; postmortem takes neither.
    let (code, _, err) = script(
        &ctx,
        "scripts/gym_eval.rhai",
        true,
        &["--config", "examples/gym/gpqa.yaml", "stray"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unexpected argument `stray`"), "{err}");
    let (code, _, err) = script(&ctx, "scripts/postmortem.rhai", false, &["a.b=1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`a.b=1` is a Hydra override, and this playbook takes none"),
        "{err}"
    );
}

#[test]
fn declared_values_reach_the_script_typed() {
    let body = r#"
        let args = cli(#{
            ttl: int(#{default_value: 600}),
            lr: float(),
            tag: list(string()),
            keep_cluster: flag(),
            name: string(),
            overrides: overrides(),
            rest: positional(),
        });
        print(`${type_of(args.ttl)} ${args.ttl} ${args.lr} ${args.tag} ${args.keep_cluster} ${args.name} ${args.overrides} ${args.rest}`);
    "#;
    let r = run_with(
        "t.rhai",
        body,
        &[
            "--lr",
            "3e-4",
            "--tag",
            "a",
            "--keep-cluster",
            "--tag=b",
            "x=1",
            "w",
            "--",
            "--y",
        ],
        |_| {},
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "i64 600 0.0003 [\"a\", \"b\"] true  [\"x=1\"] [\"w\", \"--y\"]\n"
    );
}

#[test]
fn undeclared_scripts_keep_the_free_form_args() {
    // `args` is still there for a script that declares nothing, and `cli(…)` shadows it.
    let r = run_with(
        "t.rhai",
        r#"print(`${args.raw} ${args.get("keep_cluster")}`);"#,
        &["--keep-clustr"],
        |_| {},
    );
    r.ok();
    assert_eq!(r.stdout(), "[\"--keep-clustr\"] \n");
}

#[test]
fn a_bad_declaration_is_an_error_of_the_script() {
    let r = run_with("t.rhai", "let args = cli(#{ttl: 600});", &[], |_| {});
    let d = r.err();
    assert_eq!(d.code, "nrl::script::runtime");
    let shown = d.render(false, 100);
    assert!(shown.contains("nrl::script::arg_decl"), "{shown}");
    assert!(shown.contains("`ttl: string(#{help:"), "{shown}");
}
