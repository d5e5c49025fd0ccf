//! `nrl repl` through the real binary: sessions driven through a pseudo-terminal
//! (completion, multi-line input, history across sessions, Ctrl-C, a fake cluster) and
//! piped input (line by line, exit codes).

use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use crate::support::context::TestContext;
use crate::support::fake_k8s::FakeK8s;
use crate::support::terminal::{CTRL_C, CTRL_D, TAB, Terminal, UP};

/// The first prompt; later ones follow output on a new line (a bare `nrl> ` also shows
/// up whenever the editor redraws the line being typed).
const FIRST_PROMPT: &str = "nrl> ";
const PROMPT: &str = "\nnrl> ";
const PLAN_PROMPT: &str = "\nnrl[plan]> ";

/// A fresh context for the console: a terminal type, its width from the terminal (no
/// `COLUMNS`), a private state directory (history), and a `KUBECONFIG` that points
/// nowhere unless a test sets it.
fn context() -> TestContext {
    let ctx = TestContext::new().env("TERM", "xterm").without("COLUMNS");
    let state = ctx.home().join("state");
    let kubeconfig = ctx.home().join("no-kubeconfig");
    ctx.env("XDG_STATE_HOME", state)
        .env("KUBECONFIG", kubeconfig)
}

/// `nrl repl` in `ctx`.
fn nrl_repl(ctx: &TestContext) -> Command {
    let mut cmd = ctx.command();
    cmd.arg("repl");
    cmd
}

#[test]
fn completion_multi_line_input_and_ctrl_c_in_one_session() {
    let state = context();
    let mut t = Terminal::spawn(nrl_repl(&state));
    t.wait_for(FIRST_PROMPT);

    // A built-in: `recip<Tab>` becomes `recipe(`.
    t.send(b"let cfg = recip").send(TAB);
    t.wait_for("recipe(");
    t.line(r#""examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml"})"#);
    t.wait_for(PROMPT);
    // A method of the variable's type (Config): `cfg.summ<Tab>` becomes `cfg.summary(`.
    t.send(b"cfg.summ").send(TAB);
    t.wait_for("cfg.summary(");
    t.line(")");
    t.wait_for("training: alice-quickstart");
    t.wait_for(PROMPT);

    // Unfinished input continues on the next line; the function stays defined.
    t.line("fn twice(x) {");
    t.wait_for("\n...> ");
    t.line("  x * 21");
    t.wait_for("\n...> ");
    t.line("}");
    t.wait_for(PROMPT);
    t.line("twice(2)");
    t.wait_for("42");
    t.wait_for(PROMPT);

    // Ctrl-C stops a long built-in; the session and its variables survive.
    t.line(r#"print("sleep" + "ing"); sleep(600)"#);
    t.wait_for("sleeping");
    t.send(CTRL_C);
    t.wait_for("interrupted");
    t.wait_for(PROMPT);
    t.line(r#"cfg.namespace + "-still-here""#);
    t.wait_for("default-still-here");
    t.wait_for(PROMPT);

    // Ctrl-C at the prompt clears the line; Ctrl-D leaves with 0.
    t.send(b"this is not rhai").send(CTRL_C);
    t.wait_for(PROMPT);
    t.send(CTRL_D);
    let status = t.wait();
    assert_eq!(status.code(), Some(0), "{}", t.screen());
    assert!(!t.screen().contains("syntax error"), "{}", t.screen());
}

#[test]
fn a_banner_and_a_continuation_prompt() {
    let state = context();
    let mut t = Terminal::spawn(nrl_repl(&state));
    // One line: version, where the k8s built-ins act (no kubeconfig here), help.
    let banner = t.wait_for(FIRST_PROMPT);
    let line = banner
        .lines()
        .find(|l| l.starts_with("nrl "))
        .unwrap_or_else(|| panic!("no banner in:\n{banner}"));
    assert_eq!(
        line,
        format!(
            "nrl {} · no kube context (`:ctx NAME` picks one) · :help for help, Ctrl-D to leave",
            env!("CARGO_PKG_VERSION")
        )
    );

    // Each line of an unfinished input gets the continuation prompt.
    t.line("fn twice(x) {");
    t.wait_for("\n...> ");
    t.line("  x * 21");
    t.wait_for("\n...> ");
    t.line("}");
    t.wait_for(PROMPT);
    t.line("twice(2)");
    t.wait_for("42");
    t.wait_for(PROMPT);
    // Ctrl-C at a continuation prompt drops the unfinished input.
    t.line("let dropped = [1,");
    t.wait_for("\n...> ");
    t.send(CTRL_C);
    t.wait_for(PROMPT);
    t.line(r#""multi" +"#);
    t.wait_for("\n...> ");
    t.line(r#""line""#);
    t.wait_for("multiline");
    t.wait_for(PROMPT);
    t.line("40 + 3");
    t.wait_for("43");
    t.wait_for(PROMPT);
    // The whole input is one history entry.
    t.send(UP).send(UP).send(b"\r");
    t.wait_for("multiline");
    t.wait_for(PROMPT);
    // A multi-line paste (bracketed, as terminals send it) is one input.
    t.send(b"\x1b[200~[20,\n 22].reduce(|s, v| s + v, 0)\x1b[201~")
        .send(b"\r");
    t.wait_for("\n42");
    t.wait_for(PROMPT);
    t.send(CTRL_D);
    assert_eq!(t.wait().code(), Some(0), "{}", t.screen());
    assert!(!t.screen().contains("syntax error"), "{}", t.screen());
}

const LOAD_QUICKSTART: &str = r#"let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml"})"#;

#[test]
fn config_keys_complete_with_their_values() {
    let state = context();
    let mut t = Terminal::spawn(nrl_repl(&state));
    t.wait_for(FIRST_PROMPT);
    t.line(LOAD_QUICKSTART);
    t.wait_for(PROMPT);

    // A mapping completes with `.`; Tab twice lists its keys with their values.
    t.send(br#"cfg.get("gr"#).send(TAB);
    t.wait_for(r#"cfg.get("grpo."#);
    t.send(TAB).send(TAB);
    t.wait_for("grpo.max_num_steps = 3");
    t.wait_for("grpo.num_generations_per_prompt = 2");
    // The only key that fits completes; the hint shows its value.
    t.send(b"max_n").send(TAB);
    t.wait_for(r#"cfg.get("grpo.max_num_steps  = 3"#);
    t.line(r#"")"#);
    t.wait_for("\n3");
    t.wait_for(PROMPT);

    // Infra keys, and the key of an override.
    t.send(br#"cfg.explain("infra.names"#).send(TAB);
    t.wait_for(r#"cfg.explain("infra.namespace  = "default""#);
    t.send(CTRL_C);
    t.wait_for(PROMPT);
    t.send(br#"cfg.override("+policy.optimizer.kwargs.l"#)
        .send(TAB);
    t.wait_for(r#"cfg.override("+policy.optimizer.kwargs.lr  = 1e-6"#);
    t.send(CTRL_C);
    t.wait_for(PROMPT);
    // Overrides of a recipe the session has loaded, before loading it again.
    t.send(br#"recipe("examples/quickstart/recipe.yaml", #{overrides: ["grpo.max_n"#)
        .send(TAB);
    t.wait_for(r#"#{overrides: ["grpo.max_num_steps  = 3"#);
    t.send(CTRL_C);
    t.wait_for(PROMPT);
    t.send(CTRL_D);
    assert_eq!(t.wait().code(), Some(0), "{}", t.screen());
}

#[test]
fn methods_are_filtered_by_type_and_hints_fit_the_row() {
    let state = context();
    let mut t = Terminal::spawn(nrl_repl(&state));
    t.wait_for(FIRST_PROMPT);
    t.line(LOAD_QUICKSTART);
    t.wait_for(PROMPT);

    // `cfg.<Tab><Tab>` lists a Config's methods, not the functions of any value.
    t.send(b"cfg.").send(TAB).send(TAB);
    // The list, then the line drawn again under it.
    let listing = t.wait_for("\nnrl> cfg.");
    assert!(listing.contains("manifests("), "{listing}");
    assert!(listing.contains("summary("), "{listing}");
    for any in ["exit(", "take(", "is_shared("] {
        assert!(!listing.contains(any), "{any} offered:\n{listing}");
    }
    t.send(CTRL_C);
    t.wait_for(PROMPT);

    // A long line leaves little room on the 120-column row: the hint is clipped to it.
    let line = "let pods_of_a_namespace_with_a_rather_long_descriptive_name = k8s::list(";
    t.send(line.as_bytes());
    t.wait_for(&format!("{line}  k8s::list(kind"));
    let hint = format!("  k8s::list(kind{}", t.wait_for("…"));
    assert!(
        hint.starts_with("  k8s::list(kind: string) -> array"),
        "{hint}"
    );
    let row = "nrl> ".len() + line.chars().count() + hint.chars().count();
    assert!(row < 120, "the row is {row} columns: {hint}");
    t.send(CTRL_C);
    t.wait_for(PROMPT);
    t.send(CTRL_D);
    assert_eq!(t.wait().code(), Some(0), "{}", t.screen());
}

#[test]
fn history_is_recalled_in_the_next_session() {
    let state = context();
    let mut first = Terminal::spawn(nrl_repl(&state));
    first.wait_for(FIRST_PROMPT);
    first.line(r#""recall" + "ed-" + (6 * 7)"#);
    first.wait_for("recalled-42");
    first.wait_for(PROMPT);
    first.send(CTRL_D);
    assert_eq!(first.wait().code(), Some(0));
    let history = state.home().join("state/nrl/history");
    assert!(
        std::fs::read_to_string(&history)
            .unwrap()
            .contains(r#""recall" + "ed-" + (6 * 7)"#)
    );

    let mut second = Terminal::spawn(nrl_repl(&state));
    second.wait_for(FIRST_PROMPT);
    second.send(UP).send(b"\r");
    second.wait_for("recalled-42");
    second.wait_for(PROMPT);
    second.line(":quit");
    assert_eq!(second.wait().code(), Some(0));
}

#[test]
fn a_session_against_the_fake_api_server() {
    let fake = FakeK8s::start();
    fake.put(json!({
        "apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "rayproject/ray:2.60.0"}]}}},
            "workerGroupSpecs": []
        }
    }));
    let selector = "ray.io/cluster=demo,ray.io/node-type=head";
    assert!(
        fake.wait_until_blocking(std::time::Duration::from_secs(30), |f| {
            f.field("ray.io/v1", "RayCluster", "default", "demo", "status.state")
                == Some(json!("ready"))
                && f.pod_name("default", selector).is_some()
        })
    );
    let head = fake.pod_name("default", selector).unwrap();
    fake.append_pod_log("default", &head, None, "first line");

    let state = context();
    let mut cmd = nrl_repl(&state);
    cmd.env("KUBECONFIG", fake.kubeconfig_path());
    let mut t = Terminal::spawn(cmd);
    t.wait_for("· context `fake`, namespace `default` · :help for help");
    t.wait_for(FIRST_PROMPT);
    t.line(":ctx");
    t.wait_for("context `fake`, namespace `default`");
    t.wait_for(PROMPT);

    // Lists print as tables.
    t.line(r#"k8s::list("RayCluster")"#);
    let table = t.wait_for(PROMPT);
    let row = table
        .lines()
        .find(|l| l.starts_with("demo "))
        .unwrap_or_else(|| panic!("no row for demo in:\n{table}"));
    assert!(
        table.contains("NAME") && table.contains("STATUS"),
        "{table}"
    );
    assert!(row.contains("ready"), "{row}");

    // Tail a pod log: lines arrive as the pod writes them, until the callback says stop.
    t.line(&format!(
        r#"k8s::logs("{head}", #{{}}, |l| {{ print("log> " + l); l != "bye" }})"#
    ));
    t.wait_for("log> first line");
    fake.append_pod_log("default", &head, None, "second line");
    t.wait_for("log> second line");
    fake.append_pod_log("default", &head, None, "bye");
    t.wait_for("log> bye");
    t.wait_for(PROMPT);

    // Plan mode records instead of acting.
    t.line(":plan on");
    t.wait_for(PLAN_PROMPT);
    t.line(r#"k8s::delete("RayCluster", "demo")"#);
    t.wait_for(PLAN_PROMPT);
    t.line(":plan off");
    t.wait_for("RayCluster/demo");
    t.wait_for(PROMPT);
    assert!(
        fake.get("ray.io/v1", "RayCluster", "default", "demo")
            .is_some()
    );

    // :ns switches the namespace; a context that does not exist is refused and not kept.
    t.line(":ns team-b");
    t.wait_for("context `fake`, namespace `team-b`");
    t.line(":ctx no-such-context");
    t.wait_for("context `no-such-context` is not defined");
    t.wait_for(PROMPT);
    t.line("k8s::banner()");
    t.wait_for("context `fake`, namespace `team-b`");
    // Ctrl-D only at the prompt: typed while the result prints, the terminal is still in
    // cooked mode and the line discipline swallows it.
    t.wait_for(PROMPT);
    t.send(CTRL_D);
    assert_eq!(t.wait().code(), Some(0), "{}", t.screen());
}

/// Piped input: evaluated line by line, no prompt; the exit code is the first failing
/// input's.
fn piped(input: &str) -> (i32, String, String) {
    let state = context();
    let out = assert_cmd::Command::from_std(nrl_repl(&state))
        .write_stdin(input)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("nrl runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn piped_input_runs_line_by_line() {
    let (code, out, err) = piped(
        "let x = 20;\nfn add(a,\n        b) {\n  a + b\n}\n\nadd(x, 22)\n[#{a: 1, b: \"x\"}, #{a: 2}]\n#{kind: \"Pod\", apiVersion: \"v1\"}\n",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "42\na  b\n1  x\n2\napiVersion: v1\nkind: Pod\n");
    assert!(!out.contains("nrl>") && err.is_empty(), "{err}");
}

#[test]
fn piped_exit_codes_are_the_first_failing_inputs() {
    let cases: [(&str, i32); 10] = [
        ("throw \"early\"\n1 + 1\n", 1),
        ("1 + 1\nthrow \"late\"\n", 1),
        ("1 + 1\nlet = 2\n", 2),
        ("let = 2\nthrow \"then\"\n1\n", 2),
        ("throw \"first\"\nlet = 2\n", 1),
        ("let x = [1,\n", 2),
        ("throw \"x\"\nexit(4)\nprint(\"not reached\")\n", 4),
        ("throw \"x\"\n:quit\nprint(\"not reached\")\n", 1),
        ("1\n:quit\n", 0),
        (":nope\n", 2),
    ];
    for (input, want) in cases {
        let (code, out, err) = piped(input);
        assert_eq!(code, want, "input {input:?}: stderr {err}");
        assert!(!out.contains("not reached"));
    }
    let (_, _, err) = piped(":lod x\n");
    assert!(err.contains("did you mean :load?"), "{err}");
}

#[test]
fn a_cluster_error_exits_3() {
    // KUBECONFIG names a file that does not exist: the k8s built-ins fail as the cluster
    // API would (nrl::k8s::config), before any request.
    let (code, _, err) = piped("k8s::list(\"Pod\")\n1 + 1\n");
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("nrl::k8s::config"), "{err}");
    // Through a function call too; a runtime error before it still comes first.
    let (code, _, err) = piped("fn pods() { k8s::list(\"Pod\") }\npods()\n");
    assert_eq!(code, 3, "{err}");
    let (code, _, err) = piped("throw \"first\"\nk8s::list(\"Pod\")\n");
    assert_eq!(code, 1, "{err}");
}

#[test]
fn an_unreachable_api_server_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    // Port 1 on the loopback: nothing listens, the connection is refused.
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster:\n    server: http://127.0.0.1:1\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: gone\n  context:\n    cluster: gone\n    user: u\n    namespace: default\ncurrent-context: gone\n",
    )
    .unwrap();
    let state = context().env("KUBECONFIG", &kubeconfig);
    let out = assert_cmd::Command::from_std(nrl_repl(&state))
        .write_stdin("k8s::list(\"Pod\")\n")
        .timeout(std::time::Duration::from_secs(90))
        .output()
        .expect("nrl runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
}

#[test]
fn preloaded_files_and_help() {
    let dir = tempfile::tempdir().unwrap();
    let lib: PathBuf = dir.path().join("lib.rhai");
    std::fs::write(&lib, "/// Greets.\nfn greet(n) { `hello ${n}` }\n").unwrap();
    let state = context();
    let out = assert_cmd::Command::from_std({
        let mut c = nrl_repl(&state);
        c.arg(&lib);
        c
    })
    .write_stdin("greet(\"bob\")\n:help greet\n:doc k8s::list\n:doc plan_options\n")
    .output()
    .expect("nrl runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with("hello bob\n  greet(n)\n      Greets.\n"),
        "{text}"
    );
    assert!(
        text.contains("k8s::list(kind: string) -> array\n      Every object"),
        "{text}"
    );
    // Not a terminal: the doc's Markdown as plain text (no fences, no escapes).
    assert!(
        text.contains("\n        plan_options(#{live_reads: true});\n"),
        "{text}"
    );
    assert!(!text.contains("```") && !text.contains('\x1b'), "{text}");
}

#[test]
fn ctrl_c_ends_a_piped_session_with_130() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let state = context();
    let mut child = nrl_repl(&state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nrl starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"print(\"go\"); sleep(600)\nprint(\"not reached\")\n")
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "go\n");
    // SAFETY: kill(2) on the child's pid, which has not been reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "nrl did not stop");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert!(!rest.contains("not reached"), "{rest}");
    drop(stdin);
}

#[test]
fn loading_an_import_cycle_reports_it_and_the_session_goes_on() {
    // Regression (issue 15 item 10): `:load` of a cycle killed the REPL.
    let (code, out, err) = piped(":load tests/data/script/cycle/a.rhai\n40 + 2\n");
    // The session goes on; the failed `:load` is still the exit code.
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "42\n");
    // The renderer wraps long messages: compare without the wrapping.
    let flat = err.replace("\n  │ ", "");
    assert!(
        flat.contains("import cycle: tests/data/script/cycle/a.rhai → tests/data/script/cycle/b.rhai → tests/data/script/cycle/a.rhai"),
        "{err}"
    );
}
