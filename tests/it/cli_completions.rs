//! `nrl completions` and `nrl man`: the bash script completes commands, flags and enum
//! values when bash runs it (as `complete -F` would call it) by calling nrl back; nrl
//! answers that completion protocol (`COMPLETE=<shell> nrl -- <words>`) with the line's
//! override keys, targets, roles, run ids and contexts; the other shells' scripts and the
//! static script are generated; man pages exist for every command.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::support::context::{RunToEnd, TestContext, snapshot};

const RECIPE: &str = "examples/quickstart/recipe.yaml";
const INFRA: &str = "examples/quickstart/infra.yaml";

/// What bash's completion function `function` (from `script`) offers for `words` (the
/// last is being completed), run with `ctx`'s environment so that the nrl it calls back
/// sees the context's HOME.
fn complete(ctx: &TestContext, script: &Path, function: &str, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let line = words.join(" ");
    let cur = words.last().copied().unwrap_or("");
    let prev = if words.len() > 1 {
        words[words.len() - 2]
    } else {
        ""
    };
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; \
         COMP_POINT=${{#COMP_LINE}}; COMP_TYPE=9; {function} nrl '{cur}' '{prev}'; \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1,
    );
    let nrl = ctx.command();
    let mut bash = Command::new("bash");
    bash.env_clear();
    for (k, v) in nrl.get_envs() {
        if let Some(v) = v {
            bash.env(k, v);
        }
    }
    if let Some(dir) = nrl.get_current_dir() {
        bash.current_dir(dir);
    }
    let out = bash.args(["-c", &program]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    got.sort();
    got
}

/// What nrl answers a `shell` script's request for the last of `words`, as the script
/// reads it (bash: one value a line here; fish: `value<TAB>description` lines). A
/// completion never writes to stderr.
fn offered_by(ctx: &TestContext, shell: &str, words: &[&str]) -> String {
    let ran = ctx
        .nrl()
        .env("COMPLETE", shell)
        .env("_CLAP_COMPLETE_INDEX", (words.len() - 1).to_string())
        .env("_CLAP_IFS", "\n")
        .arg("--")
        .args(words)
        .run();
    assert_eq!(ran.code, Some(0), "{words:?}: {}", ran.stderr);
    assert_eq!(ran.stderr, "", "{words:?}");
    ran.stdout
}

fn offered(ctx: &TestContext, words: &[&str]) -> Vec<String> {
    offered_by(ctx, "bash", words)
        .lines()
        .map(String::from)
        .collect()
}

/// Lines completed and what each offers, for a snapshot.
fn transcript(ctx: &TestContext, lines: &[&[&str]]) -> String {
    let mut out = String::new();
    for words in lines {
        out.push_str(&format!("$ {}<TAB>\n", words.join(" ")));
        for candidate in offered(ctx, words) {
            out.push_str(&format!("  {candidate}\n"));
        }
    }
    out
}

fn bash_script(ctx: &TestContext, args: &[&str]) -> std::path::PathBuf {
    let ran = ctx.nrl().arg("completions").args(args).run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let script = ctx.home().join(format!("nrl{}.bash", args.len()));
    std::fs::write(&script, ran.stdout).unwrap();
    script
}

#[test]
fn bash_completes_commands_flags_and_values() {
    let ctx = TestContext::new();
    let script = bash_script(&ctx, &["bash"]);
    let dynamic = |words: &[&str]| complete(&ctx, &script, "_clap_complete_nrl", words);
    assert_eq!(dynamic(&["nrl", "ru"]), ["run", "runs"]);
    assert_eq!(
        dynamic(&["nrl", "runs", "--status", ""]),
        ["failed", "lost", "running", "stopped", "succeeded"]
    );
    assert!(
        dynamic(&["nrl", "run", "--"]).iter().any(|f| f == "--from"),
        "run's flags include --from"
    );
    let shells = dynamic(&["nrl", "completions", ""]);
    for shell in ["bash", "elvish", "fish", "powershell", "zsh"] {
        assert!(shells.iter().any(|s| s == shell), "{shell} in {shells:?}");
    }
    // `--status=f` as bash splits it (`=` is one of its word breaks).
    assert_eq!(dynamic(&["nrl", "runs", "--status", "=", "f"]), ["failed"]);
    // The script asks nrl for what depends on the line.
    assert_eq!(
        dynamic(&["nrl", "check", RECIPE, "policy.opt"]),
        ["policy.optimizer."]
    );
    // The static script still completes commands and values without calling nrl.
    let static_script = bash_script(&ctx, &["bash", "--static"]);
    let fixed = |words: &[&str]| complete(&ctx, &static_script, "_nrl", words);
    assert_eq!(fixed(&["nrl", "ru"]), ["run", "runs"]);
    assert_eq!(
        fixed(&["nrl", "runs", "--status", ""]),
        ["failed", "lost", "running", "stopped", "succeeded"]
    );
}

/// The other shells' scripts call nrl back the same way, and nrl answers each shell's
/// request with the commands (fish with their descriptions).
#[test]
fn every_shell_gets_a_script_and_answers() {
    let ctx = TestContext::new();
    for shell in ["zsh", "fish", "powershell", "elvish"] {
        let ran = ctx.nrl().args(["completions", shell]).run();
        assert_eq!(ran.code, Some(0), "{shell}: {}", ran.stderr);
        assert!(ran.stdout.contains("COMPLETE"), "{shell}: {}", ran.stdout);
        let answer = offered_by(&ctx, shell, &["nrl", "di"]);
        assert!(
            answer.contains("diagnose") && answer.contains("diff"),
            "{shell}: {answer}"
        );
        let ran = ctx.nrl().args(["completions", shell, "--static"]).run();
        assert!(ran.stdout.contains("diagnose"), "{shell} static");
    }
    let fish = offered_by(&ctx, "fish", &["nrl", "check", RECIPE, "grpo.max"]);
    assert_eq!(fish, "grpo.max_num_steps=\t3\n");
}

#[test]
fn overrides_complete_the_recipe_and_infra_keys_one_segment_at_a_time() {
    let ctx = TestContext::new();
    let pair = |rest: &[&'static str]| -> Vec<&'static str> {
        let mut words = vec!["nrl", "check", RECIPE, "--infra", INFRA];
        words.extend_from_slice(rest);
        words
    };
    let lines: Vec<Vec<&str>> = vec![
        vec!["nrl", "check", RECIPE, "policy.opt"],
        vec!["nrl", "check", RECIPE, "policy.optimizer."],
        vec!["nrl", "check", RECIPE, "grpo.max"],
        pair(&["i"]),
        pair(&["infra.kuberay."]),
        pair(&["infra.kuberay.training."]),
        pair(&["infra.launch.e"]),
        vec![
            "nrl", "run", RECIPE, "--infra", INFRA, "--local", "+logger.",
        ],
        vec!["nrl", "status", RECIPE, "--infra", INFRA, "~grpo.num"],
        vec![
            "nrl",
            "doctor",
            RECIPE,
            "--infra=examples/quickstart/infra.yaml",
            "infra.sch",
        ],
        vec!["nrl", "diff", "some-run", RECIPE, "policy.m"],
        pair(&["--explain", "infra.kuberay.training.n"]),
        vec![
            "nrl",
            "gym",
            "submit",
            "examples/gym/gpqa.yaml",
            "services.policy.t",
        ],
        vec![
            "nrl",
            "gym",
            "render",
            "examples/gym/gpqa.yaml",
            "-o",
            "x.yaml",
            "dr",
        ],
    ];
    let lines: Vec<&[&str]> = lines.iter().map(Vec::as_slice).collect();
    snapshot!(ctx, "override_keys", transcript(&ctx, &lines));
}

/// No recipe, a recipe that does not load, or a value after `=`: nothing, and no error.
#[test]
fn overrides_stay_quiet_when_the_recipe_does_not_load() {
    let ctx = TestContext::new();
    let broken = ctx.home().join("broken.yaml");
    std::fs::write(&broken, "policy: [unclosed\n").unwrap();
    let broken = broken.display().to_string();
    for words in [
        &["nrl", "check", "missing.yaml", "policy."][..],
        &["nrl", "check", &broken, "policy."],
        &[
            "nrl",
            "check",
            RECIPE,
            "--infra",
            "missing.yaml",
            "policy.m",
        ],
        &["nrl", "check", RECIPE, "grpo.max_num_steps="],
        &["nrl", "diff", "some-run", "not-a-file", "policy."],
    ] {
        let got = offered(&ctx, words);
        // An infra that does not load still leaves the recipe's keys.
        if words.contains(&"--infra") {
            assert_eq!(got, ["policy.model_name="], "{words:?}");
        } else {
            assert!(got.is_empty(), "{words:?}: {got:?}");
        }
    }
}

#[test]
fn targets_and_roles_are_the_ones_the_infra_declares() {
    let ctx = TestContext::new();
    let infra = ctx.home().join("infra.yaml");
    let quickstart = std::fs::read_to_string(INFRA).unwrap();
    let mut text = quickstart.replace("kuberay:\n  training:", "kuberay:\n  gym:");
    text.push_str(
        "  training: {name: train, spec: {headGroupSpec: {}}}\n\
         deployments:\n  vllm: {name: vllm, spec: {}}\n",
    );
    std::fs::write(&infra, text).unwrap();
    let infra = infra.display().to_string();
    let lines: Vec<Vec<&str>> = vec![
        vec![
            "nrl", "cluster", "up", RECIPE, "--infra", &infra, "--target", "",
        ],
        vec![
            "nrl", "cluster", "down", RECIPE, "--infra", &infra, "--target", "dep",
        ],
        vec![
            "nrl",
            "cluster",
            "up",
            RECIPE,
            "--infra",
            &infra,
            "--target=k",
        ],
        vec![
            "nrl", "cluster", "up", RECIPE, "--infra", &infra, "--role", "",
        ],
        vec!["nrl", "logs", RECIPE, "--infra", &infra, "--role", "t"],
        // Without a recipe: every role, no targets.
        vec!["nrl", "logs", "--role", ""],
        vec!["nrl", "cluster", "up", "--target", ""],
    ];
    let lines: Vec<&[&str]> = lines.iter().map(Vec::as_slice).collect();
    snapshot!(ctx, "targets_and_roles", transcript(&ctx, &lines));
}

#[test]
fn contexts_come_from_the_kubeconfig() {
    let kubeconfig = |ctx: &TestContext, name: &str, contexts: &[&str]| {
        let mut text = String::from(
            "apiVersion: v1\nkind: Config\n\
             clusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]\n\
             users: [{name: u, user: {}}]\ncontexts:\n",
        );
        for c in contexts {
            text.push_str(&format!(
                "- {{name: {c}, context: {{cluster: c, user: u, namespace: team-{c}}}}}\n"
            ));
        }
        let path = ctx.home().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let probe = TestContext::new();
    let file = kubeconfig(&probe, "kubeconfig", &["lab", "prod-east", "prod-west"]);
    let ctx = probe.env("KUBECONFIG", &file);
    let other = kubeconfig(&ctx, "other", &["staging"]);
    let other = other.display().to_string();
    let lines: Vec<Vec<&str>> = vec![
        vec!["nrl", "runs", "--context", ""],
        vec!["nrl", "run", RECIPE, "--context", "prod"],
        vec!["nrl", "job", "logs", "some-run", "--context=l"],
        vec!["nrl", "dev", "connect", "--context", ""],
        vec!["nrl", "runs", "--kubeconfig", &other, "--context", ""],
        vec![
            "nrl",
            "runs",
            "--kubeconfig",
            "/nonexistent",
            "--context",
            "",
        ],
    ];
    let lines: Vec<&[&str]> = lines.iter().map(Vec::as_slice).collect();
    snapshot!(ctx, "contexts", transcript(&ctx, &lines));
    let fish = offered_by(&ctx, "fish", &["nrl", "runs", "--context", "la"]);
    assert_eq!(fish, "lab\tnamespace team-lab\n");
}

#[test]
fn run_ids_come_from_the_run_records() {
    let ctx = TestContext::new();
    let runs = ctx.home().join(".cache/nrl/runs");
    std::fs::create_dir_all(&runs).unwrap();
    for (id, kind, day) in [
        ("grpo-20260101-100000-ab12", "local", "01"),
        ("grpo-20260102-100000-cd34", "rayjob", "02"),
        ("sft-20260103-100000-ef56", "ray", "03"),
        ("gym-20260104-100000-gh78", "gym", "04"),
    ] {
        let created_at = format!("2026-01-{day}T10:00:00Z");
        let record = json!({"id": id, "kind": kind, "created_at": created_at,
            "recipe": "/r/grpo.yaml", "status": "succeeded"});
        std::fs::write(runs.join(format!("{id}.json")), record.to_string()).unwrap();
    }
    let lines: Vec<Vec<&str>> = vec![
        vec!["nrl", "job", "logs", ""],
        vec!["nrl", "job", "stop", "grpo-"],
        vec!["nrl", "job", "status", "s"],
        vec!["nrl", "run", "--from", "grpo-20260102"],
        vec!["nrl", "diff", "g"],
        vec!["nrl", "diff", "grpo-20260101-100000-ab12", "grpo"],
        vec!["nrl", "verify", "grpo"],
        vec!["nrl", "diagnose", "sft"],
        vec!["nrl", "logs", "--collect", "out", "grpo"],
        vec!["nrl", "gym", "status", ""],
        vec!["nrl", "gym", "logs", "gym-"],
    ];
    let lines: Vec<&[&str]> = lines.iter().map(Vec::as_slice).collect();
    snapshot!(ctx, "run_ids", transcript(&ctx, &lines));
    let fish = offered_by(&ctx, "fish", &["nrl", "job", "logs", "sft"]);
    assert_eq!(
        fish,
        "sft-20260103-100000-ef56\tray, succeeded, grpo.yaml\n"
    );
    // Without --collect, `logs` takes a recipe: files only.
    assert!(offered(&ctx, &["nrl", "logs", "grpo"]).is_empty());
}

/// `run --from RUN_ID` takes overrides of what that run was launched with (its launch
/// snapshot), from its first positional on.
#[test]
fn run_from_completes_the_keys_of_the_run_it_relaunches() {
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args([
            "run", RECIPE, "--infra", INFRA, "--local", "--run-id", "qs-1",
        ])
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        offered(&ctx, &["nrl", "run", "--from", "qs-1", "grpo.m"]),
        ["grpo.max_num_steps="]
    );
    assert_eq!(
        offered(
            &ctx,
            &[
                "nrl",
                "run",
                "--from",
                "qs-1",
                "--local",
                "grpo.max_num_steps=1",
                "infra.launch.e"
            ]
        ),
        ["infra.launch.entrypoint=", "infra.launch.env."]
    );
    assert!(offered(&ctx, &["nrl", "run", "--from", "no-such-run", "grpo.m"]).is_empty());
}

#[test]
fn man_pages_cover_every_command() {
    let ctx = TestContext::new();
    let ran = ctx.nrl().arg("man").output().unwrap();
    let page = String::from_utf8_lossy(&ran.stdout);
    assert!(page.contains(".TH nrl 1"), "{page}");
    let dir = ctx.home().join("man1");
    let ran = ctx.nrl().args(["man", "--dir"]).arg(&dir).output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let mut pages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for want in [
        "nrl.1",
        "nrl-run.1",
        "nrl-cluster-up.1",
        "nrl-gym-submit.1",
        "nrl-diff.1",
    ] {
        assert!(pages.iter().any(|p| p == want), "{want} in {pages:?}");
    }
    let run = std::fs::read_to_string(dir.join("nrl-run.1")).unwrap();
    assert!(run.contains("\\-\\-from"), "the run page documents --from");
}
