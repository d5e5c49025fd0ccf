//! `nrl script` through the binary: arguments, exit codes, plan mode, diagnostics,
//! `--builtins`, limits and Ctrl-C.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::context::{RunToEnd, TestContext, nrl, snapshot};
use crate::support::script_host::repo;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn builtins_lists_every_module_with_signatures_and_docs() {
    let out = nrl().args(["script", "--builtins"]).assert().success();
    let out = text(&out.get_output().stdout);
    for b in nrl::script::builtins::BUILTINS {
        assert!(
            out.contains(&format!("\n## {} — ", b.name)),
            "module {}",
            b.name
        );
    }
    for (sig, doc) in [
        (
            "recipe(path: string, options: map) -> Config",
            "Load a recipe with options",
        ),
        (
            "Config.set(path: string, value: any)",
            "the pair is reloaded",
        ),
        ("Manifest.kind -> string", "The object's kind"),
        ("k8s::apply(objects: any) -> any", "Server-side apply"),
        (
            "k8s::wait(kind: string, name: string, condition: string, timeout: int) -> any",
            "\"deleted\"",
        ),
        (
            "Dashboard.submit(spec: map) -> Submission",
            "Recorded in plan mode",
        ),
        (
            "Dashboard.tail(id: string, callback: fn) -> any",
            "callback(chunk)",
        ),
        (
            "launch::rayjob(cfg: Config, options: map) -> RayJob",
            "`ttl`",
        ),
        ("RayJob.follow() -> map", "driver log"),
        ("sleep(seconds: int)", "Ctrl-C cancels"),
        ("shell(command: string) -> map", "$ command"),
        (
            "regex_captures(text: string, pattern: string) -> any",
            "groups",
        ),
        ("exit(code: int)", "exit code"),
        (
            "cluster::up(cfg: Config, options: map) -> array",
            "`targets`",
        ),
        ("cluster::status(cfg: Config) -> array", "nrl status"),
        (
            "cluster::logs(cfg: Config, role: string, options: map) -> string",
            "`source`",
        ),
        ("cluster::dashboard(name: string) -> Dashboard", "ray"),
        ("Cluster.status() -> map", "status row"),
        (
            "dev::connect_run(command: any) -> map",
            "#{code, stdout, stderr",
        ),
        ("dev::sync_code(paths: any) -> map", "python3"),
        ("dev::setup_secrets(values: map) -> map", "never printed"),
        ("doctor::check(cfg: Config) -> array", "offline rules"),
        (
            "doctor::finding(code: string, severity: string, message: string, options: map) -> map",
            "`at`",
        ),
        ("doctor::render(findings: array) -> string", "nrl doctor"),
        ("run::local(cfg: Config, options: map) -> Run", "`quiet`"),
        (
            "run::on_ray(cfg: Config, address: string) -> Run",
            "--ray-address",
        ),
        ("run::records() -> array", "newest first"),
        ("Run.follow() -> string", "follow: false"),
        ("interactive() -> bool", "terminal"),
    ] {
        let at = out
            .find(sig)
            .unwrap_or_else(|| panic!("no `{sig}` in:\n{out}"));
        let after = &out[at..];
        let entry_end = after.find("\n\n").unwrap_or(after.len());
        assert!(after[..entry_end].contains(doc), "`{sig}` lacks `{doc}`");
    }
    // No undocumented public function.
    for line in out
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("      "))
    {
        let entry = &out[out.find(line).unwrap()..];
        let next = entry.lines().nth(1).unwrap_or("");
        assert!(next.starts_with("      "), "`{}` has no doc", line.trim());
    }
}

#[test]
fn arguments_reach_the_script_and_exit_sets_the_code() {
    let out = nrl()
        .args(["script", "tests/data/script/args.rhai", "--"])
        .args([
            "--recipe",
            "r.yaml",
            "--infra=i.yaml",
            "a.b=1",
            "+c=2",
            "extra",
            "--verbose",
        ])
        .args(["--code", "3"])
        .assert()
        .code(3);
    assert_eq!(
        text(&out.get_output().stdout),
        "recipe=r.yaml infra=i.yaml verbose=true\noverrides=[\"a.b=1\", \"+c=2\"]\npositional=[\"extra\"]\n"
    );
}

#[test]
fn a_syntax_error_exits_2_with_file_line_and_column() {
    let out = nrl()
        .args(["script", "tests/data/script/syntax_error.rhai"])
        .assert()
        .code(2);
    insta::assert_snapshot!("syntax_error", text(&out.get_output().stderr));
}

#[test]
fn a_runtime_error_in_an_imported_module_shows_the_call_chain() {
    let out = nrl()
        .args(["script", "tests/data/script/runtime_in_module.rhai"])
        .assert()
        .code(1);
    insta::assert_snapshot!("runtime_error_in_module", text(&out.get_output().stderr));
}

#[test]
fn plan_of_the_launch_playbook_for_the_quickstart() {
    let out = nrl()
        .args(["script", "scripts/launch.rhai", "--dry-run", "--"])
        .args(["--recipe", "examples/quickstart/recipe.yaml"])
        .args([
            "--infra",
            "examples/quickstart/infra.yaml",
            "--run-id",
            "snap-1",
        ])
        .arg("grpo.max_num_steps=5")
        .assert()
        .success();
    let o = out.get_output();
    insta::assert_snapshot!("launch_plan_quickstart", text(&o.stdout));
    assert_eq!(
        text(&o.stderr),
        "(plan) would follow the driver log of RayJob alice-quickstart\n"
    );
}

#[test]
fn plan_of_the_sweep_playbook() {
    let out = nrl()
        .args(["script", "scripts/sweep.rhai", "--dry-run", "--"])
        .args(["--recipe", "examples/quickstart/recipe.yaml"])
        .args([
            "--infra",
            "examples/quickstart/infra.yaml",
            "--run-id",
            "sw",
        ])
        .args(["grpo.max_num_steps=2,4", "--concurrency", "2"])
        .assert()
        .success();
    insta::assert_snapshot!("sweep_plan", text(&out.get_output().stdout));
}

#[test]
fn plan_of_the_disaggregated_first_launch() {
    let out = nrl()
        .args([
            "script",
            "scripts/disagg_first_launch.rhai",
            "--dry-run",
            "--",
        ])
        .args(["--recipe", "tests/data/cluster/recipe.yaml"])
        .args(["--infra", "tests/data/cluster/infra.yaml", "--offline"])
        .assert()
        .success();
    let o = out.get_output();
    insta::assert_snapshot!("disagg_first_launch_plan", text(&o.stdout));
    assert_eq!(
        text(&o.stderr),
        "(plan) RayCluster rc-gym is only planned in this dry run: no log to read\n"
    );
}

#[test]
fn plan_of_the_dev_loop_in_the_dev_pod() {
    let out = nrl()
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(["script", "scripts/dev_loop.rhai", "--dry-run", "--"])
        .args([
            "--sync",
            "tests/data/cluster/daemon",
            "--sync",
            "no/such/dir",
        ])
        .args(["--cmd", "uv run pytest -x tests/unit/algorithms"])
        .assert()
        .success();
    let o = out.get_output();
    insta::assert_snapshot!("dev_loop_plan", text(&o.stdout));
    assert_eq!(
        text(&o.stderr),
        "-- round 1: uv run pytest -x tests/unit/algorithms\nwould sync 1 file(s) to alice-dev-pod:.\n"
    );
}

#[test]
fn the_postmortem_playbook_reads_a_saved_log() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("driver.log"),
        "wandb: View run at https://wandb.ai/t/p/runs/x1\nTraceback (most recent call last):\n  File \"a.py\", line 1\nRuntimeError: boom\n",
    )
    .unwrap();
    let script = repo().join("scripts/postmortem.rhai");
    let out = nrl()
        .current_dir(dir.path())
        .arg("script")
        .arg(&script)
        .args(["--", "--log", "driver.log"])
        .assert()
        .code(1);
    assert_eq!(
        text(&out.get_output().stdout),
        "wandb: https://wandb.ai/t/p/runs/x1\nlast traceback:\n  Traceback (most recent call last):\n    File \"a.py\", line 1\n  RuntimeError: boom\n"
    );
    let json = nrl()
        .current_dir(dir.path())
        .arg("script")
        .arg(&script)
        .args(["--", "--log", "driver.log", "--json"])
        .assert()
        .code(1);
    let v: serde_json::Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    assert_eq!(v["wandb_url"], "https://wandb.ai/t/p/runs/x1");
}

#[test]
fn file_access_outside_the_working_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s.rhai"),
        "print(read_file(\"../../etc/passwd\"));",
    )
    .unwrap();
    let out = nrl()
        .current_dir(dir.path())
        .args(["script", "s.rhai"])
        .assert()
        .code(1);
    let err = text(&out.get_output().stderr);
    assert!(err.contains("is outside the working directory"), "{err}");
    assert!(err.contains("s.rhai:1:7"), "{err}");
    assert_eq!(text(&out.get_output().stdout), "");
}

#[test]
fn the_operation_limit_stops_an_endless_loop() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("loop.rhai"), "loop {}").unwrap();
    let out = nrl()
        .current_dir(dir.path())
        .args(["script", "loop.rhai", "--max-operations", "100000"])
        .assert()
        .code(1);
    let err = text(&out.get_output().stderr);
    assert!(err.contains("nrl::script::limit"), "{err}");
    assert!(err.contains("--max-operations"), "{err}");
}

#[test]
fn an_uncaught_throw_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.rhai"), "throw \"nope\";").unwrap();
    let out = nrl()
        .current_dir(dir.path())
        .args(["script", "t.rhai"])
        .assert()
        .code(1);
    assert!(text(&out.get_output().stderr).contains("× nope"));
}

#[test]
fn a_missing_script_is_bad_input() {
    nrl()
        .args(["script", "tests/data/script/nope.rhai"])
        .assert()
        .code(2);
}

#[test]
fn ctrl_c_cancels_a_sleeping_builtin() {
    let ctx = TestContext::new();
    let mut child = ctx
        .command()
        .args(["script", "tests/data/script/sleep.rhai"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "sleeping\n");
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // A guard against hanging the suite, not a timing assertion: sleep(60) must not finish.
    let deadline = Instant::now() + Duration::from_secs(50);
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("nrl script did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(code, Some(130));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "", "the script went on after Ctrl-C");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("interrupted"), "{err}");
}

#[test]
fn an_import_cycle_is_a_script_error_naming_the_chain() {
    // Regression (issue 15 item 10): a → b → a overflowed the stack (exit 134).
    let out = nrl()
        .args(["script", "tests/data/script/cycle/a.rhai"])
        .timeout(std::time::Duration::from_secs(30))
        .assert()
        .code(1);
    insta::assert_snapshot!("import_cycle", text(&out.get_output().stderr));
}

/// Each way a module can fail is one report that names where, and how the script got
/// there (issue 17 item 4): a cycle of three names all three, a module that does not parse
/// names its line and the import, a stdlib function's error names the caller's line.
#[test]
fn errors_in_imported_modules_name_the_chain() {
    let ctx = TestContext::new();
    for (name, script, code) in [
        (
            "import_cycle_of_three",
            "tests/data/script/cycle3/a.rhai",
            1,
        ),
        (
            "syntax_error_in_module",
            "tests/data/script/syntax_in_module.rhai",
            2,
        ),
        (
            "error_in_stdlib_module",
            "tests/data/script/error_in_stdlib.rhai",
            1,
        ),
    ] {
        let ran = ctx.nrl().args(["script", script]).run();
        assert_eq!(ran.code, Some(code), "{name}: {}", ran.stderr);
        snapshot!(ctx, name, ran.stderr);
    }
}

/// `nrl script doc` documents a team module from its comments: the header as the
/// description, each public function with its `///` doc, found along NRL_PATH.
#[test]
fn doc_renders_a_module_as_markdown_from_its_comments() {
    // Relative (the tests run from the repository): an absolute path would change how
    // the help line wraps from one checkout to another.
    let ctx = TestContext::new().env("NRL_PATH", "tests/data/script/doc");
    let ran = ctx.nrl().args(["script", "doc", "team"]).run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, "doc_team_module", ran.stdout);

    let ran = ctx.nrl().args(["script", "doc", "nrl/sweep"]).run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, "doc_stdlib_sweep", ran.stdout);

    let ran = ctx
        .nrl()
        .args(["script", "doc", "scripts/launch.rhai", "-o", "json"])
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).expect("json");
    assert_eq!(doc["kind"], "script");
    assert_eq!(doc["usage"], "nrl script scripts/launch.rhai -- …");
    let names: Vec<&str> = doc["arguments"]
        .as_array()
        .expect("arguments")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "recipe",
            "infra",
            "run_id",
            "ttl",
            "keep_cluster",
            "overrides"
        ]
    );
    // A playbook's reference lists what it declares with cli(…).
    let ran = ctx
        .nrl()
        .args(["script", "doc", "scripts/sweep.rhai"])
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, "doc_sweep_playbook", ran.stdout);

    let ran = ctx.nrl().args(["script", "doc", "teem"]).run();
    assert_eq!(ran.code, Some(2));
    snapshot!(ctx, "doc_not_found", ran.stderr);
}

/// `--builtins MODULE` lists that module only, stdlib modules included; an unknown one
/// is refused with the closest name; `-o json` is the same reference as data.
#[test]
fn builtins_filter_by_module_and_list_the_stdlib() {
    let ctx = TestContext::new();
    let ran = ctx.nrl().args(["script", "--builtins", "sweep"]).run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, "builtins_sweep", ran.stdout);

    let ran = ctx.nrl().args(["script", "--builtins", "k8s"]).run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let headings: Vec<&str> = ran
        .stdout
        .lines()
        .filter(|l| l.starts_with("## "))
        .collect();
    assert_eq!(headings.len(), 1, "{headings:?}");
    assert!(headings[0].starts_with("## k8s — "), "{headings:?}");

    let ran = ctx.nrl().args(["script", "--builtins", "k8ss"]).run();
    assert_eq!(ran.code, Some(2));
    snapshot!(ctx, "builtins_unknown_module", ran.stderr);

    let ran = ctx.nrl().args(["script", "--builtins", "-o", "json"]).run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let modules: Vec<serde_json::Value> = serde_json::from_str(&ran.stdout).expect("json");
    let names: Vec<&str> = modules.iter().filter_map(|m| m["name"].as_str()).collect();
    // Every module a script has, then `sim` (tests only), then the stdlib.
    let mut expected: Vec<String> = nrl::script::builtins::BUILTINS
        .iter()
        .map(|b| b.name.to_string())
        .collect();
    expected.push("sim".to_string());
    expected.extend(
        nrl::script::resolver::STDLIB
            .iter()
            .map(|(n, _)| format!("nrl/{n}")),
    );
    assert_eq!(names, expected);
    let sweep = &modules[names.iter().position(|n| *n == "nrl/sweep").expect("sweep")];
    assert_eq!(sweep["kind"], "stdlib");
    let functions: Vec<&str> = sweep["functions"]
        .as_array()
        .expect("functions")
        .iter()
        .filter_map(|f| f["signature"].as_str())
        .collect();
    assert_eq!(
        functions,
        [
            "sweep::points(overrides)",
            "sweep::run(overrides, options)",
            "sweep::report(results)"
        ]
    );
}

#[test]
fn the_time_limit_stops_loops_and_waits() {
    // Regression (issue 15 item 12): growth loops cost the square of their size, so
    // --max-operations alone left them running for minutes; --max-seconds bounds the run.
    let d = tempfile::tempdir().unwrap();
    for (name, body) in [
        ("append", "let a = []; loop { a += [1]; }"),
        ("nest", "let a = []; loop { a = [a]; }"),
        ("sleep", "sleep(600);"),
    ] {
        let path = d.path().join(format!("{name}.rhai"));
        std::fs::write(&path, body).unwrap();
        let started = std::time::Instant::now();
        let out = nrl()
            .arg("script")
            .arg(&path)
            .args(["--max-seconds", "1"])
            .timeout(std::time::Duration::from_secs(60))
            .output()
            .unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains("nrl::script::limit")
                && err.contains("the script ran longer than its time limit of 1s"),
            "{name}: {err}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{name} took {:?}",
            started.elapsed()
        );
    }
}

/// A README command line: its `NAME=VALUE` prefixes and its words.
type ReadmeCommand = (Vec<(String, String)>, Vec<String>);

/// The command lines of the README's plain code blocks between `from` and `to`
/// (continuation lines joined).
fn readme_commands(from: &str, to: &str) -> Vec<ReadmeCommand> {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("read README");
    let start = readme.find(from).expect("the section");
    let end = start + readme[start..].find(to).expect("the next section");
    let (mut out, mut block, mut pending) = (Vec::new(), None::<bool>, String::new());
    for line in readme[start..end].lines() {
        if let Some(lang) = line.strip_prefix("```") {
            // A plain block holds commands; ```rhai one, a script.
            block = match block {
                None => Some(lang.is_empty()),
                Some(_) => None,
            };
            continue;
        }
        if block != Some(true) || line.trim().is_empty() {
            continue;
        }
        pending.push_str(line.trim_end_matches('\\').trim());
        pending.push(' ');
        if line.ends_with('\\') {
            continue;
        }
        let text = std::mem::take(&mut pending);
        let mut words = shell_words(&text);
        let mut env = Vec::new();
        while let Some((k, v)) = words.first().and_then(|w| w.split_once('='))
            && k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        {
            env.push((k.to_string(), v.to_string()));
            words.remove(0);
        }
        out.push((env, words));
    }
    out
}

/// Split a command line as a shell would for the README's lines: words, and
/// double-quoted words.
fn shell_words(text: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// Every command of the README's Playbooks section that needs no cluster runs here as
/// written (plan mode, tests, docs) and succeeds; the others are named, so a new one is
/// either run or knowingly left out.
#[test]
fn the_readme_playbook_commands_run_as_written() {
    let commands = readme_commands("### Playbooks", "### Gym benchmark runs");
    // These reach a dashboard, a dev pod, or run the training locally.
    let needs_a_cluster_or_runs_training = [
        "nrl script scripts/postmortem.rhai -- --last-failed --collect postmortem",
        "nrl script scripts/postmortem.rhai -- --address http://127.0.0.1:8265 --job raysubmit_abc",
        "nrl script scripts/dev_loop.rhai -- --sync nemo_rl --sync tests --cmd uv run pytest -x tests/unit",
        "nrl script scripts/dev_loop.rhai -- --local --recipe examples/quickstart/recipe.yaml --infra examples/quickstart/infra.yaml",
    ];
    let ctx = TestContext::new();
    let mut ran = Vec::new();
    for (env, words) in &commands {
        assert_eq!(
            words[0], "nrl",
            "a README line that is not an nrl command: {words:?}"
        );
        let line = words.join(" ");
        let runnable = words.iter().any(|w| w == "--dry-run") || words[1..3] == ["script", "test"];
        if !runnable {
            assert!(
                needs_a_cluster_or_runs_training.contains(&line.as_str()),
                "a README command this test neither runs nor knows: {line}"
            );
            continue;
        }
        let mut cmd = ctx.nrl();
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.args(&words[1..]).run();
        assert_eq!(out.code, Some(0), "{line}\n{}{}", out.stdout, out.stderr);
        ran.push(line);
    }
    assert_eq!(ran.len(), 7, "{ran:#?}");
}

/// The README's `cli(#{…})` example is a script that runs: its arguments parse as the
/// comments beside them say.
#[test]
fn the_readme_cli_example_declares_what_it_says() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("read README");
    let start = readme
        .find("```rhai\nlet args = cli(#{")
        .expect("the cli example")
        + 8;
    let end = start + readme[start..].find("```").expect("its end");
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("example.rhai");
    let body = format!(
        "{}print(`${{args.recipe}} ${{type_of(args.ttl)}} ${{args.ttl}} ${{args.keep_cluster}} ${{args.tag}} ${{args.overrides}}`);\n",
        &readme[start..end]
    );
    std::fs::write(&script, body).expect("write");
    let ctx = TestContext::new();
    let args = [
        "--recipe",
        "examples/quickstart/recipe.yaml",
        "--keep-cluster",
        "--tag",
        "a",
        "--tag",
        "b",
        "x.y=1",
    ];
    let out = ctx
        .nrl()
        .arg("script")
        .arg(&script)
        .arg("--")
        .args(args)
        .run();
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "examples/quickstart/recipe.yaml i64 600 true [\"a\", \"b\"] [\"x.y=1\"]\n"
    );
}
