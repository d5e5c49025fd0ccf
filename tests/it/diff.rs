//! `nrl diff` and the launch snapshot every run keeps: two real local runs of the
//! quickstart compared key by key (with the layer and line that set each side), a run
//! against its recipe as it would launch now (same, then with changed code), and the
//! errors for runs that cannot be compared.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::context::TestContext;

fn context() -> TestContext {
    TestContext::new()
        .user("tester")
        .columns(200)
        .timeout(Duration::from_secs(300))
}

/// `nrl run` the quickstart locally as `id` with code from `repo_root`.
fn run_local(ctx: &TestContext, id: &str, repo_root: &Path, overrides: &[&str]) {
    let out = ctx
        .nrl()
        .arg("run")
        .arg(repo_root.join("examples/quickstart/recipe.yaml"))
        .arg("--infra")
        .arg(repo_root.join("examples/quickstart/infra.yaml"))
        .args(["--local", "--run-id", id, "--repo-root"])
        .arg(repo_root)
        .args(overrides)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn diff(ctx: &TestContext, args: &[&str]) -> (Option<i32>, String, String) {
    let out = ctx.nrl().arg("diff").args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A copy of the quickstart as a repo of its own, so a test may change its code.
fn quickstart_repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let dest = repo.path().join("examples/quickstart");
    std::fs::create_dir_all(&dest).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/quickstart");
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dest.join(entry.file_name())).unwrap();
    }
    repo
}

#[test]
fn two_runs_differ_key_by_key_with_the_line_that_set_each_side() {
    let repo = quickstart_repo();
    let ctx = context().filter(r"/tmp/\.tmp\w+", "[REPO]");
    run_local(&ctx, "qs-diff-a", repo.path(), &["grpo.max_num_steps=2"]);
    run_local(
        &ctx,
        "qs-diff-b",
        repo.path(),
        &[
            "grpo.max_num_steps=3",
            "infra.launch.env.WANDB_MODE=offline",
        ],
    );
    let (code, stdout, stderr) = diff(&ctx, &["qs-diff-a", "qs-diff-b"]);
    assert_eq!(code, Some(1), "{stderr}");
    let _s = ctx.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("diff_two_local_runs", stdout);

    let (_, json, _) = diff(&ctx, &["qs-diff-a", "qs-diff-b", "-o", "json"]);
    let v: Value = serde_json::from_str(&json).unwrap();
    let keys: Vec<String> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["section"].as_str().unwrap(),
                c["key"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            "recipe grpo.max_num_steps",
            "recipe logger.log_dir",
            "infra infra.launch.env.WANDB_MODE"
        ]
    );
    assert_eq!(v["changes"][0]["a"], 2);
    assert_eq!(v["changes"][0]["b_set_by"]["layer"], "override");

    // `run::diff` in a playbook is the same comparison, as data.
    let script = ctx.home().join("diff.rhai");
    std::fs::write(
        &script,
        r#"print(dump_json(run::diff("qs-diff-a", "qs-diff-b")));"#,
    )
    .unwrap();
    let out = ctx.nrl().arg("script").arg(&script).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_script: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(from_script, v);

    // The same run against itself has nothing to show.
    let (code, stdout, _) = diff(&ctx, &["qs-diff-a", "qs-diff-a"]);
    assert_eq!(code, Some(0));
    assert!(stdout.ends_with("no differences: same recipe, infra, objects and code\n"));
}

#[test]
fn a_run_against_its_recipe_is_the_same_until_the_code_changes() {
    let repo = quickstart_repo();
    let ctx = context();
    run_local(&ctx, "qs-diff-code", repo.path(), &["grpo.max_num_steps=2"]);
    let recipe = repo.path().join("examples/quickstart/recipe.yaml");
    let infra = repo.path().join("examples/quickstart/infra.yaml");
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a = vec![
            "qs-diff-code".to_string(),
            recipe.display().to_string(),
            "--infra".into(),
            infra.display().to_string(),
            "--repo-root".into(),
            repo.path().display().to_string(),
            "-o".into(),
            "json".into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |extra: &[&str]| {
        let a = args(extra);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        let (code, out, err) = diff(&ctx, &refs);
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        (code, v)
    };
    let (code, v) = run(&["grpo.max_num_steps=2"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["changes"], serde_json::json!([]));

    std::fs::write(
        repo.path().join("examples/quickstart/train.py"),
        "print('changed')\n",
    )
    .unwrap();
    let (code, v) = run(&["grpo.max_num_steps=2"]);
    assert_eq!(code, Some(1));
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{v}");
    assert_eq!(changes[0]["section"], "code");
    let (a, b) = (
        changes[0]["a"].as_str().unwrap(),
        changes[0]["b"].as_str().unwrap(),
    );
    assert!(a.starts_with("upload gcs://_ray_pkg_"), "{a}");
    assert_ne!(a, b);
}

#[test]
fn runs_that_cannot_be_compared_say_why() {
    let ctx = context();
    let runs = ctx.home().join(".cache/nrl/runs");
    std::fs::create_dir_all(&runs).unwrap();
    // A record from an nrl that kept no snapshot.
    std::fs::write(
        runs.join("old-run.json"),
        r#"{"id": "old-run", "kind": "local", "created_at": "2026-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    let (code, _, stderr) = diff(&ctx, &["old-run", "old-run"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("run `old-run` has no launch snapshot on this machine"),
        "{stderr}"
    );
    let (code, _, stderr) = diff(&ctx, &["old-run", "no-such-run"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("`no-such-run` is neither a run recorded here nor a recipe file"),
        "{stderr}"
    );
}

/// `nrl run --from`: a local run launched again from its snapshot — its merged recipe and
/// infra, and its staged code (the run directory), checked by content hash — with new
/// overrides on top; another checkout whose code differs is refused.
#[test]
fn run_from_relaunches_what_a_run_staged() {
    let repo = quickstart_repo();
    let ctx = context();
    run_local(
        &ctx,
        "qs-smoke",
        repo.path(),
        &[
            "grpo.max_num_steps=2",
            "infra.launch.env.QUICKSTART_GREETING=from-smoke",
        ],
    );
    // The checkout moves on; the relaunch still runs the code the smoke test staged.
    std::fs::write(
        repo.path().join("examples/quickstart/train.py"),
        "print('the new code')\n",
    )
    .unwrap();
    let out = ctx
        .nrl()
        .args([
            "run", "--from", "qs-smoke", "--local", "--run-id", "qs-again",
        ])
        .arg("grpo.max_num_steps=3")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("step 3/3"), "{stdout}");
    assert!(stdout.contains("greeting: from-smoke"), "{stdout}");
    assert!(!stdout.contains("the new code"), "{stdout}");
    assert!(
        stderr.contains("relaunching run qs-smoke: recipe and infra from its launch snapshot"),
        "{stderr}"
    );
    // The two differ only by the new override (and what interpolates it).
    let (code, json, _) = diff(&ctx, &["qs-smoke", "qs-again", "-o", "json"]);
    assert_eq!(code, Some(1));
    let v: Value = serde_json::from_str(&json).unwrap();
    let keys: Vec<&str> = v["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["grpo.max_num_steps", "logger.log_dir"]);

    // Code from the checkout as it is now is not what the smoke test ran.
    let out = ctx
        .nrl()
        .args(["run", "--from", "qs-smoke", "--local", "--repo-root"])
        .arg(repo.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nrl::run::from_code_changed"), "{stderr}");
    assert!(
        stderr.contains("is not what run `qs-smoke` staged"),
        "{stderr}"
    );
    // --from takes the place of RECIPE and --infra.
    let out = ctx
        .nrl()
        .args(["run", "--from", "qs-smoke", "--infra", "x.yaml", "--local"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = ctx
        .nrl()
        .args(["run", "--from", "nope", "--local"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
