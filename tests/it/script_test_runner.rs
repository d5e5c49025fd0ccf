//! `nrl script test`: the playbook tests of `stdlib/` and `scripts/` pass, and the runner
//! itself: its report, exit codes, discovery, a fresh engine per test, the simulated
//! cluster's answers.

use std::path::Path;

use crate::support::context::{RunToEnd, TestContext, snapshot};

/// Test durations vary from run to run.
const TIME: &str = r"\b\d+(\.\d+)? m?s\b";

fn write(dir: &Path, name: &str, text: &str) {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

/// A context in a fresh directory holding `files`.
fn in_dir(files: &[(&str, &str)]) -> (tempfile::TempDir, TestContext) {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in files {
        write(dir.path(), name, text);
    }
    let ctx = TestContext::new().cwd(dir.path()).filter(TIME, "[TIME]");
    (dir, ctx)
}

#[test]
fn the_stdlib_and_script_tests_pass() {
    // As CI runs them: the example playbook's team library on NRL_PATH.
    let ctx = TestContext::new().env("NRL_PATH", "examples/playbooks/lib");
    let r = ctx
        .nrl()
        .args(["script", "test", "stdlib", "scripts", "examples"])
        .run();
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    let last = r.stdout.lines().last().unwrap_or_default();
    let passed: usize = last
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a count line, got {last:?}"));
    assert!(passed > 0, "{last}");
    assert!(last.contains(" passed, 0 failed in "), "{last}");
    let ok = r.stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(ok, passed, "{}", r.stdout);
    // Every stdlib module and every script has its tests.
    for dir in ["stdlib", "scripts"] {
        for entry in std::fs::read_dir(crate::support::data::repo().join(dir)).expect("dir") {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            let Some(stem) = name.strip_suffix(".rhai") else {
                continue;
            };
            if stem.ends_with("_test") {
                continue;
            }
            let tests = format!("{dir}/{stem}_test.rhai::test_");
            assert!(r.stdout.contains(&tests), "no tests of {dir}/{name}");
        }
    }
}

#[test]
fn a_failing_assertion_is_reported_with_its_file_and_line() {
    let (_dir, ctx) = in_dir(&[(
        "math_test.rhai",
        r#"// Arithmetic.

fn test_adds() {
    assert_eq(1 + 1, 2);
}

fn test_compares_maps() {
    print("comparing");
    assert_eq(#{a: 1, b: [1, 2]}, #{a: 2, b: [1, 2]}, "the maps");
}

fn test_throws() {
    let planned = "x";
    throw `boom ${planned}`;
}

fn test_asserts() {
    assert(1 > 2, "one is not more than two");
}
"#,
    )]);
    let r = ctx.nrl().args(["script", "test"]).run();
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    snapshot!(ctx, "failing_report", r.stdout);
    assert_eq!(r.stderr, "");
}

#[test]
fn exit_codes_say_pass_fail_or_bad_input() {
    let (_dir, ctx) = in_dir(&[
        ("pass/a_test.rhai", "fn test_a() { assert(true); }\n"),
        ("fail/b_test.rhai", "fn test_b() { assert(false); }\n"),
        ("syntax/c_test.rhai", "fn test_c() { let = ; }\n"),
        ("none/d_test.rhai", "fn helper() { 1 }\n"),
        ("empty/readme.md", "no tests here\n"),
    ]);
    let run = |path: &str| ctx.nrl().args(["script", "test", path]).run();

    assert_eq!(run("pass").code, Some(0));
    assert_eq!(run("fail").code, Some(1));

    let syntax = run("syntax");
    assert_eq!(syntax.code, Some(2));
    assert!(syntax.stderr.contains("syntax error"), "{}", syntax.stderr);
    assert!(
        syntax.stderr.contains("c_test.rhai:1:"),
        "{}",
        syntax.stderr
    );
    assert_eq!(syntax.stdout, "", "no test runs after a syntax error");

    let none = run("none");
    assert_eq!(none.code, Some(2));
    assert!(
        none.stderr
            .contains("no tests found: none of none/d_test.rhai defines one"),
        "{}",
        none.stderr
    );
    let empty = run("empty");
    assert_eq!(empty.code, Some(2));
    assert!(
        empty
            .stderr
            .contains("no tests found: no `*_test.rhai` file was found"),
        "{}",
        empty.stderr
    );
    let missing = run("missing");
    assert_eq!(missing.code, Some(2));
    assert!(
        missing.stderr.contains("no file or directory missing"),
        "{}",
        missing.stderr
    );
}

#[test]
fn discovery_finds_test_files_recursively_and_takes_named_files_as_they_are() {
    let (_dir, ctx) = in_dir(&[
        (
            "lib/b_test.rhai",
            "fn test_b2() {}\nfn test_b1() {}\nfn helper_test() {}\n",
        ),
        ("lib/deep/er/a_test.rhai", "fn test_a() {}\n"),
        ("lib/other.rhai", "fn test_not_discovered() {}\n"),
        ("lib/.hidden/h_test.rhai", "fn test_hidden() {}\n"),
        ("lib/target/t_test.rhai", "fn test_built() {}\n"),
        ("checks.rhai", "fn test_named() {}\n"),
    ]);
    let r = ctx
        .nrl()
        .args(["script", "test", "lib", "checks.rhai", "lib/b_test.rhai"])
        .run();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    snapshot!(ctx, "discovery", r.stdout);
}

#[test]
fn each_test_gets_a_fresh_engine() {
    let (_dir, ctx) = in_dir(&[(
        "fresh_test.rhai",
        r#"const START = epoch_ms();

fn test_first_changes_everything_it_can() {
    sim::object(#{kind: "ConfigMap", metadata: #{name: "seen"}});
    k8s::apply(#{apiVersion: "v1", kind: "ConfigMap", metadata: #{name: "applied"}});
    plan_options(#{live_reads: true});
    let local = 1;
    assert_eq(plan_steps().len(), 1);
}

fn test_second_sees_none_of_it() {
    assert_eq(k8s::get("ConfigMap", "seen"), ());
    assert_eq(k8s::get("ConfigMap", "applied"), ());
    assert_eq(plan_steps(), []);
    let local = 2;
    assert_eq(local, 2);
    // Live reads stay refused, whatever the first test allowed.
    let caught = "";
    try { k8s::port_forward("pod", 8265); } catch (e) { caught = e.code; }
    assert_eq(caught, "nrl::script::sim_read");
}
"#,
    )]);
    let r = ctx.nrl().args(["script", "test"]).run();
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("2 passed, 0 failed"), "{}", r.stdout);
}

#[test]
fn the_simulated_cluster_answers_the_reads_of_a_plan() {
    let (dir, ctx) = in_dir(&[(
        "sim_test.rhai",
        r#"fn test_objects_answer_get_list_and_wait() {
    sim::object(#{kind: "RayCluster", metadata: #{name: "rc", labels: #{team: "rl"}},
                  status: #{state: "ready"}});
    sim::object(#{kind: "RayCluster", metadata: #{name: "other", namespace: "ns2"}});
    assert_eq(k8s::get("RayCluster", "rc").status.state, "ready");
    assert_eq(k8s::get("RayCluster", "nope"), ());
    assert_eq(k8s::list("RayCluster").len(), 2);
    assert_eq(k8s::list("RayCluster", #{selector: "team=rl"}).map(|o| o.metadata.name), ["rc"]);
    assert_eq(k8s::list("RayCluster", #{namespace: "ns2"}).map(|o| o.metadata.name), ["rc", "other"]);
    assert_eq(k8s::wait("RayCluster", "rc", "exists", 5).metadata.name, "rc");
    assert_eq(k8s::wait("RayCluster", "gone", "deleted", 5), ());
    let caught = "";
    try { k8s::wait("RayCluster", "rc", "deleted", 5); } catch (e) { caught = e.code; }
    assert_eq(caught, "nrl::k8s::timeout");
    // What the plan deletes is gone for later reads; what it applies is there.
    k8s::delete("RayCluster", "rc");
    assert_eq(k8s::get("RayCluster", "rc"), ());
    k8s::apply(#{apiVersion: "v1", kind: "ConfigMap", metadata: #{name: "cm"}, data: #{a: "1"}});
    assert_eq(k8s::get("ConfigMap", "cm").data.a, "1");
    assert_eq(planned("apply", "ConfigMap", "cm").data.a, "1");
}

fn test_a_pending_pod_and_its_log() {
    sim::pending_pod("worker-0", "Unschedulable", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", #{});
    let pod = k8s::get("Pod", "worker-0");
    assert_eq(pod.status.phase, "Pending");
    assert_eq(pod.status.conditions[0].reason, "Unschedulable");
    let caught = "";
    try { k8s::wait("Pod", "worker-0", "ready", 5); } catch (e) { caught = e.message; }
    assert(caught.contains("does not change while a test waits"), caught);
    sim::log("worker-0", "a\nb\nc\n");
    assert_eq(k8s::logs("worker-0", #{tail: 2}), "b\nc\n");
    let lines = [];
    k8s::logs("worker-0", #{}, |line| { lines.push(line); true });
    assert_eq(lines, ["a", "b", "c"]);
}

fn test_a_planned_rayjob_ends_as_scripted() {
    let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml"});
    let job = launch::rayjob(cfg, #{name: "rj-1", run_id: "rj-1"});
    assert_eq(job.status().job, "PLANNED");
    sim::rayjob_ends("rj-1", "FAILED", "the driver exited with 1");
    sim::log("rj-1", "Traceback (most recent call last):\n");
    let st = job.follow();
    assert_eq([st.deployment, st.job, st.message], ["Failed", "FAILED", "the driver exited with 1"]);
    assert_eq(job.log(), "Traceback (most recent call last):\n");
    assert(job.planned, "still only planned");
    assert_planned("apply", "RayJob", "rj-1");
}

fn test_a_dashboard_answers_from_the_simulation() {
    let d = ray::dashboard("http://127.0.0.1:1");
    sim::rayjob_ends("raysubmit_1", "SUCCEEDED");
    sim::log("raysubmit_1", "done\n");
    assert_eq(d.status("raysubmit_1").status, "SUCCEEDED");
    assert_eq(d.wait("raysubmit_1").status, "SUCCEEDED");
    assert_eq(d.logs("raysubmit_1"), "done\n");
    sim::log("raysubmit_2", "still going\n");
    assert_eq(d.job("raysubmit_2").status(), "RUNNING");
    let caught = "";
    try { d.version(); } catch (e) { caught = e.code; }
    assert_eq(caught, "nrl::script::sim_read");
}
"#,
    )]);
    // The quickstart pair the RayJob test loads, in the test's working directory.
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for file in ["recipe.yaml", "base.yaml", "infra.yaml"] {
        let text = std::fs::read_to_string(repo.join("examples/quickstart").join(file))
            .expect("quickstart file");
        write(dir.path(), &format!("examples/quickstart/{file}"), &text);
    }
    let r = ctx.nrl().args(["script", "test"]).run();
    assert_eq!(r.code, Some(0), "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("4 passed, 0 failed"), "{}", r.stdout);
}

#[test]
fn sim_exists_only_in_tests_and_scripts_still_run_as_files() {
    let (dir, ctx) = in_dir(&[
        ("uses_sim.rhai", "sim::log(\"x\", \"y\");\n"),
        (
            "asserts.rhai",
            "assert_eq(1, 1); assert(false, \"stop here\");\n",
        ),
    ]);
    let r = ctx
        .nrl()
        .args(["script", "uses_sim.rhai", "--dry-run"])
        .run();
    // Refused when the script is compiled, before it runs.
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(r.stderr.contains("Undefined module: sim"), "{}", r.stderr);
    assert!(
        r.stderr.contains("only in `*_test.rhai` files"),
        "{}",
        r.stderr
    );
    let r = ctx.nrl().args(["script", "asserts.rhai"]).run();
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("assertion failed: stop here"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("asserts.rhai:1:"), "{}", r.stderr);
    // A test file is also a script: `nrl script FILE` still takes a path.
    write(
        dir.path(),
        "t_test.rhai",
        "fn test_x() {}\nprint(\"top level\");\n",
    );
    let r = ctx.nrl().args(["script", "t_test.rhai"]).run();
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "top level\n");
}

#[test]
fn test_help_has_an_example() {
    let r = TestContext::new()
        .nrl()
        .args(["script", "test", "--help"])
        .run();
    assert_eq!(r.code, Some(0));
    assert!(
        r.stdout.contains("Usage: nrl script test [PATH]..."),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("sim::rayjob_ends"), "{}", r.stdout);
    assert!(
        r.stdout.contains("nrl script test stdlib scripts"),
        "{}",
        r.stdout
    );
}
