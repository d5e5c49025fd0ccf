//! The `util`, `data` and `interact` built-ins, and the engine's limits, through scripts.

use nrl::diag::Exit;

use crate::support::script_host::{output_of, plan, repo, run, run_with};

#[test]
fn env_reads_the_host_environment_with_fallbacks() {
    let out = output_of(
        r#"print(env("NRL_TEST_GREETING"));
           print(env("NRL_TEST_MISSING") == ());
           print(env("NRL_TEST_MISSING", "fallback"));"#,
    );
    assert_eq!(out, "hello\ntrue\nfallback\n");
}

#[test]
fn files_are_read_and_written_under_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.txt"), "from disk").unwrap();
    let r = run_with(
        "t.rhai",
        r#"print(read_file("in.txt"));
           write_file("out/new.txt", "written");
           print(file_exists("out/new.txt"));
           print(file_exists("nope.txt"));
           print(cwd() != "");"#,
        &[],
        |o| o.workdir = dir.path().to_path_buf(),
    );
    r.ok();
    assert_eq!(r.stdout(), "from disk\ntrue\nfalse\ntrue\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/new.txt")).unwrap(),
        "written"
    );
}

#[test]
fn files_outside_the_working_directory_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let inner = dir.path().join("work");
    std::fs::create_dir(&inner).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "no").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), inner.join("link.txt")).unwrap();
    for script in [
        r#"read_file("../secret.txt")"#,
        r#"read_file("/etc/hostname")"#,
        r#"read_file("link.txt")"#,
        r#"write_file("sub/../../escape.txt", "x")"#,
    ] {
        let r = run_with("t.rhai", script, &[], |o| o.workdir = inner.clone());
        let d = r.err();
        assert_eq!(d.code, "nrl::script::runtime", "{script}");
        let text = d.render(false, 100);
        assert!(text.contains("outside the working directory"), "{text}");
        assert!(text.contains("nrl::script::file_access"), "{text}");
    }
    assert!(!dir.path().join("escape.txt").exists());
}

#[test]
fn caught_builtin_errors_expose_code_message_and_help() {
    let out = output_of(
        r#"try { read_file("../../outside") } catch (e) {
               print(type_of(e)); print(e.code); print(e.message.contains("outside")); print(e.help != ());
           }"#,
    );
    assert_eq!(out, "Error\nnrl::script::file_access\ntrue\ntrue\n");
}

#[test]
fn time_and_sleep() {
    let out = output_of(
        r#"let t0 = epoch_ms();
           sleep(0); sleep(0.01);
           print(epoch_ms() >= t0);
           print(now().ends_with("Z"));
           try { sleep(-1) } catch (e) { print(e.code) }"#,
    );
    assert_eq!(out, "true\ntrue\nnrl::script::sleep\n");
}

#[test]
fn log_lines_go_to_stderr() {
    let r = run(r#"log("plain"); info("note"); warn("careful"); print("result");"#);
    r.ok();
    assert_eq!(r.stdout(), "result\n");
    assert_eq!(r.stderr(), "plain\ninfo: note\nwarning: careful\n");
}

#[test]
fn exit_sets_the_exit_code_and_stops_the_script() {
    let r = run(r#"print("before"); exit(3); print("after");"#);
    assert_eq!(r.exit(), Exit::Code(3));
    assert_eq!(r.stdout(), "before\n");
    assert_eq!(run("exit(0)").exit(), Exit::Ok);
    assert_eq!(run("40 + 2").exit(), Exit::Ok);
    let d = run("exit(256)").result.unwrap_err();
    assert!(d.render(false, 100).contains("out of range"));
    let d = run(r#"exit("3")"#).result.unwrap_err();
    assert!(
        d.message.contains("exit takes an integer code"),
        "{}",
        d.message
    );
}

#[test]
fn cancelling_stops_builtins_busy_loops_and_child_processes() {
    for text in [
        "sleep(60)",
        "let n = 0; loop { n += 1; }",
        r#"shell("sleep 60")"#,
    ] {
        let token = tokio_util::sync::CancellationToken::new();
        let canceller = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            canceller.cancel();
        });
        let r = run_with("cancel.rhai", text, &[], |o| o.cancel = token);
        let d = r.err();
        assert_eq!(d.code, "nrl::script::interrupted", "{text}");
        assert_eq!(d.exit, Exit::Interrupted, "{text}");
    }
}

#[test]
fn cancellation_cannot_be_caught() {
    let token = tokio_util::sync::CancellationToken::new();
    token.cancel();
    let r = run_with(
        "cancel.rhai",
        r#"try { sleep(60) } catch (e) { print("caught") } print("after");"#,
        &[],
        |o| o.cancel = token,
    );
    assert_eq!(r.err().code, "nrl::script::interrupted");
    assert_eq!(r.stdout(), "");
}

#[test]
fn exit_inside_a_function_ends_the_whole_script() {
    let r = run(r#"fn stop() { exit(4); } stop(); print("after");"#);
    assert_eq!(r.exit(), Exit::Code(4));
    assert_eq!(r.stdout(), "");
}

#[test]
fn dry_run_and_recorded_steps() {
    let r = plan(
        r#"print(dry_run());
           write_file("never.txt", "x");
           let s = shell("touch never-shell.txt");
           print(s.planned); print(s.code);
           for step in plan_steps() { print(`${step.action} ${step.target}`); }"#,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "true\ntrue\n0\nwrite never.txt\nshell touch never-shell.txt\n"
    );
    assert!(!repo().join("never.txt").exists());
    assert!(!repo().join("never-shell.txt").exists());
    assert_eq!(r.host.plan.len(), 2);
    assert_eq!(output_of("print(dry_run())"), "false\n");
}

#[test]
fn regular_expressions() {
    let out = output_of(
        r#"let log = "step 1 loss=0.5\nstep 2 loss=0.25\n";
           print(regex_match(log, `loss=\d`));
           print(regex_find(log, `loss=[\d.]+`));
           print(regex_find(log, `nothing`) == ());
           print(regex_find_all(log, `step \d`));
           let c = regex_captures(log, `step (\d) loss=([\d.]+)`);
           print(`${c[1]} ${c[2]}`);
           print(regex_captures("x", `(y)?x`)[1] == ());
           print(regex_replace("a-b-c", `-`, "+"));
           print(regex_replace("v1.2", `v(\d)\.(\d)`, "$2.$1"));
           try { regex_match("x", `(`) } catch (e) { print(e.code) }"#,
    );
    assert_eq!(
        out,
        "true\nloss=0.5\ntrue\n[\"step 1\", \"step 2\"]\n1 0.5\ntrue\na+b+c\n2.1\nnrl::script::regex\n"
    );
}

#[test]
fn json_and_yaml_round_trip() {
    let out = output_of(
        r#"let v = parse_json(`{"a": [1, 2.5, null, true], "b": {"c": "d"}}`);
           print(v.a[0] + 1); print(v.a[2] == ()); print(v.b.c);
           print(dump_json(v));
           print(dump_json(#{x: 1}, true));
           let y = parse_yaml("x: 1\nlist: [a, b]\nflag: yes\n");
           print(y.flag); print(y.list[1]);
           print(dump_yaml(#{name: "n", items: [1, 2]}));
           try { parse_json("{") } catch (e) { print(e.code) }
           try { parse_yaml("a: [") } catch (e) { print(e.code.starts_with("nrl::config")) }"#,
    );
    assert_eq!(
        out,
        "2\ntrue\nd\n{\"a\":[1,2.5,null,true],\"b\":{\"c\":\"d\"}}\n{\n  \"x\": 1\n}\ntrue\nb\nitems:\n- 1\n- 2\nname: n\n\nnrl::script::json\ntrue\n"
    );
}

#[test]
fn parse_yaml_refuses_an_alias_bomb() {
    // Issue 15 item 1: nine levels of aliased nine-item lists exhausted memory.
    let out = output_of(
        r#"let text = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
           for level in 1..9 {
               let prev = level - 1;
               let items = "*a" + prev;
               for i in 1..9 { items += ", *a" + prev; }
               text += "a" + level + ": &a" + level + " [" + items + "]\n";
           }
           try { parse_yaml(text) } catch (e) { print(e.code); print(e.message); }"#,
    );
    assert_eq!(
        out,
        "nrl::config::yaml_alias_budget\nYAML aliases expand to more than 1000000 nodes (an alias bomb?)\n"
    );
}

#[test]
fn tables_of_maps() {
    let out = output_of(
        r#"let rows = [#{name: "a", status: "ok"}, #{name: "bb", status: (), extra: 3}];
           print(table(rows));
           print_table(rows, ["status", "name"]);
           try { table([1]) } catch (e) { print(e.code) }"#,
    );
    assert_eq!(
        out,
        "NAME  STATUS  EXTRA\na     ok      -\nbb    -       3\nSTATUS  NAME\nok      a\n-       bb\nnrl::script::table\n"
    );
}

/// A table shows what a cluster said (a pod message, a job entrypoint) escaped; `print`
/// is the script's own output and stays as it is.
#[test]
fn table_cells_are_escaped_and_print_is_not() {
    let out = output_of(
        r#"let hostile = "boom\x1b[2J\x1b]0;t\x07" + "\u202e" + "x\ny";
           print(table([#{name: "p", message: hostile}], ["name", "message"]));
           print(hostile);"#,
    );
    assert_eq!(
        out,
        "NAME  MESSAGE\np     boom\\e[2J\\e]0;t\\x07\\u{202e}x\\ny\nboom\u{1b}[2J\u{1b}]0;t\u{7}\u{202e}x\ny\n"
    );
}

#[test]
fn prompts_without_a_terminal_take_the_default_or_fail() {
    let r = run(r#"print(interactive());
           print(prompt("name?", "anon"));
           print(confirm("go on?", true));
           print(confirm("really?", false));
           try { confirm("no default?") } catch (e) { print(e.code) }
           try { prompt("no default?") } catch (e) { print(e.code) }"#);
    r.ok();
    assert_eq!(
        r.stdout(),
        "false\nanon\ntrue\nfalse\nnrl::script::not_interactive\nnrl::script::not_interactive\n"
    );
    assert!(
        r.stderr()
            .contains("go on? [Y/n] yes (no terminal: default)")
    );
}

#[test]
fn shell_prints_the_command_and_returns_its_outcome() {
    let r = run(r#"let r = shell("echo out; echo err >&2; exit 3");
           print(`${r.code}|${r.stdout}|${r.stderr}|${r.planned}`);
           let q = shell("echo quiet", #{quiet: true});
           print(q.stdout);
           try { shell("exit 5", #{check: true}) } catch (e) { print(e.message) }
           try { shell("true", #{chek: true}) } catch (e) { print(e.code) }"#);
    r.ok();
    assert_eq!(
        r.stdout(),
        "3|out\n|err\n|false\nquiet\n\n`exit 5` exited with code 5\nnrl::script::option\n"
    );
    assert!(r.stderr().contains("$ echo out; echo err >&2; exit 3\n"));
    assert!(!r.stderr().contains("$ echo quiet"));
}

#[test]
fn progress_prints_a_summary_line_without_a_terminal() {
    let r = run(r#"let p = progress(3, "checking");
           p.inc(); p.inc(2); print(p.position); p.set(1); print(p.position); p.finish();"#);
    r.ok();
    assert_eq!(r.stdout(), "3\n1\n");
    assert_eq!(r.stderr(), "checking: done (1/3)\n");
}

#[test]
fn the_operation_limit_stops_an_endless_loop() {
    let r = run_with("loop.rhai", "let n = 0; loop { n += 1; }", &[], |o| {
        o.limits.max_operations = 10_000
    });
    let d = r.err();
    assert_eq!(d.code, "nrl::script::limit");
    assert_eq!(d.exit, Exit::Failed);
    assert!(
        d.render(false, 100).contains("loop.rhai:1:"),
        "{}",
        d.render(false, 100)
    );
}

#[test]
fn deep_recursion_hits_the_call_depth_limit() {
    let d = run("fn f(n) { f(n + 1) } f(0);").result.unwrap_err();
    assert_eq!(d.code, "nrl::script::limit");
    assert!(d.message.contains("too deeply"), "{}", d.message);
}

#[test]
fn variables_must_be_declared() {
    let d = run("let a = 1; print(b);").result.unwrap_err();
    assert_eq!(d.code, "nrl::script::compile");
    assert_eq!(d.exit, Exit::Input);
    assert!(d.message.contains("Undefined variable: b"), "{}", d.message);
}

#[test]
fn missing_map_properties_fail() {
    let d = run("let m = #{policy: 1}; print(m.polciy);")
        .result
        .unwrap_err();
    assert_eq!(d.code, "nrl::script::runtime");
    assert!(d.message.contains("polciy"), "{}", d.message);
    assert!(d.help.as_deref().unwrap_or("").contains("m.get"));
    assert_eq!(
        output_of(r#"let m = #{a: 1}; print(m.get("b") ?? "default");"#),
        "default\n"
    );
}

#[test]
fn sizes_are_bounded() {
    let d = run_with("t.rhai", r#"let s = "x"; loop { s += s; }"#, &[], |o| {
        o.limits.max_string_size = 1024
    })
    .result
    .unwrap_err();
    assert_eq!(d.code, "nrl::script::limit");
}

#[test]
fn print_and_debug_go_to_the_host_output() {
    let r = run(r#"print("to stdout"); debug("to stderr");"#);
    r.ok();
    assert_eq!(r.stdout(), "to stdout\n");
    assert!(
        r.stderr().starts_with("[debug] test.rhai:1: "),
        "{}",
        r.stderr()
    );
}

#[test]
fn cancelling_a_shell_command_kills_what_it_started() {
    let marker = format!("5{}.{}", std::process::id() % 10, fastrand::u32(1000..9999));
    let token = tokio_util::sync::CancellationToken::new();
    let canceller = token.clone();
    let script = format!(r#"shell("sleep {marker} & sleep {marker}; wait")"#);
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        canceller.cancel();
    });
    let r = run_with("cancel.rhai", &script, &[], |o| o.cancel = token);
    assert_eq!(r.err().code, "nrl::script::interrupted");
    let running = || {
        std::process::Command::new("pgrep")
            .args(["-f", &format!("sleep {marker}")])
            .output()
            .map(|o| !o.stdout.is_empty())
            .unwrap_or(false)
    };
    // SIGKILL is delivered at once; allow the kernel a moment to reap (not a timing test).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!running(), "`sleep {marker}` outlived the cancelled script");
}
