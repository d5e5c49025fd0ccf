//! The `gym` built-ins and `scripts/gym_eval.rhai` against the fake API server.

use crate::support::context;
use crate::support::fake_k8s::{FakeK8s, JobScript};
use crate::support::script_host;
use crate::support::script_host::{Run, run_with};

const CONFIG: &str = "tests/data/gym/e2e_three.yaml";

fn fake() -> FakeK8s {
    let fake = FakeK8s::builder().namespace("evals").start();
    fake.set_job_script(
        "*-gpqa",
        JobScript::succeeds().log("driver", "gpqa accuracy=0.41"),
    );
    fake.set_job_script(
        "*-math",
        JobScript::fails(3).log("driver", "Traceback: math harness crashed"),
    );
    fake.set_job_script("*-tau2", JobScript::succeeds());
    fake
}

fn run_on(
    fake: &FakeK8s,
    cache: &std::path::Path,
    text: &str,
    args: &[&str],
    dry_run: bool,
) -> Run {
    let kubeconfig = fake.kubeconfig_path().to_path_buf();
    let cache = cache.to_path_buf();
    run_with("gym.rhai", text, args, move |o| {
        o.connect.kubeconfig = Some(kubeconfig);
        o.dry_run = dry_run;
        let mut env = script_host::test_env();
        env.set("HF_TOKEN", "hf_script_token");
        env.set("XDG_CACHE_HOME", cache.to_str().unwrap_or_default());
        o.env = std::sync::Arc::new(env);
    })
}

fn playbook() -> String {
    std::fs::read_to_string(script_host::repo().join("scripts/gym_eval.rhai")).unwrap()
}

#[test]
fn the_playbook_runs_three_benchmarks_one_failing() {
    let fake = fake();
    let cache = tempfile::tempdir().unwrap();
    let r = run_on(
        &fake,
        cache.path(),
        &playbook(),
        &[
            "--config",
            CONFIG,
            "--run-id",
            "gym-script-1",
            "--tail",
            "5",
        ],
        false,
    );
    let out = r.stdout();
    assert_eq!(r.exit().code(), 1, "{out}\n{}", r.stderr());
    assert!(
        out.contains("run gym-script-1: 3 benchmark(s) in namespace evals"),
        "{out}"
    );
    assert!(out.contains("Job/gym-script-1-math"), "{out}");
    assert!(
        out.contains("Secret with [\"HF_TOKEN\"] (values not shown)"),
        "{out}"
    );
    let line = |b: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(b) && l.contains("gym-script-1-"))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("gpqa").contains("Succeeded") && line("tau2").contains("Succeeded"),
        "{out}"
    );
    assert!(
        line("math").contains("Failed") && line("math").contains("driver exited 3"),
        "{out}"
    );
    assert!(
        out.contains("--- math: driver exited 3 (Error); the last 5 lines of its driver log:"),
        "{out}"
    );
    assert!(out.contains("Traceback: math harness crashed"), "{out}");
    assert!(!out.contains("hf_script_token") && !r.stderr().contains("hf_script_token"));
    assert!(
        r.stderr()
            .contains("acting on context `fake`, namespace `evals`"),
        "{}",
        r.stderr()
    );
    assert!(r.stderr().contains("[gym] math: Failed"), "{}", r.stderr());
    // One watch for the run.
    assert_eq!(
        fake.requests(|q| q.watch && q.base_resource() == Some("jobs"))
            .len(),
        1
    );
}

#[test]
fn the_playbook_plans_without_touching_the_cluster() {
    let fake = fake();
    let cache = tempfile::tempdir().unwrap();
    let r = run_on(
        &fake,
        cache.path(),
        &playbook(),
        &["--config", CONFIG, "--run-id", "gym-plan-1"],
        true,
    );
    r.ok();
    let steps = r.host.plan.steps();
    let targets: Vec<&str> = steps.iter().map(|s| s.target.as_str()).collect();
    assert_eq!(
        targets,
        [
            "Secret/gym-plan-1-env",
            "Job/gym-plan-1-gpqa",
            "Job/gym-plan-1-math",
            "Job/gym-plan-1-tau2"
        ]
    );
    assert!(steps.iter().all(|s| s.action == "apply"));
    assert!(r.stdout().contains("Planned"), "{}", r.stdout());
    assert!(
        fake.requests(|q| q.verb != "get" || q.resource.is_some())
            .iter()
            .all(|q| !q.is_apply())
    );
}

#[test]
fn attach_status_logs_and_cancel() {
    let fake = fake();
    let cache = tempfile::tempdir().unwrap();
    let r = run_on(
        &fake,
        cache.path(),
        r#"let run = gym::submit(gym::load("tests/data/gym/e2e_three.yaml", #{run_id: "gym-script-2"}));
           run.wait();
           let again = gym::attach("gym-script-2");
           for row in again.status() { print(`${row.benchmark} ${row.state}`); }
           print(again.ok());
           print(again.logs("gpqa"));
           let elsewhere = gym::attach("gym-script-2", #{namespace: "evals"});
           print(elsewhere.namespace);
           let gone = again.cancel();
           print(gone.jobs.len());
           print(gone.secret);
           print(type_of(run));"#,
        &[],
        false,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "gpqa Succeeded\nmath Failed\ntau2 Succeeded\nfalse\ngpqa accuracy=0.41\n\nevals\n3\ngym-script-2-env\nGymRun\n"
    );
    assert!(
        fake.list("batch/v1", "Job", Some("evals"), "gym-job-id=gym-script-2")
            .is_empty()
    );
}

/// Jobs their TTL removed keep the outcome the run record saw, in `GymRun.status()` as
/// in `nrl gym status`: one library function serves both (issue 16 item 2; the built-in
/// showed them as Pending).
#[test]
fn status_keeps_the_recorded_outcome_of_jobs_their_ttl_removed() {
    let fake = fake();
    let cache = tempfile::tempdir().unwrap();
    let submit = run_on(
        &fake,
        cache.path(),
        r#"let run = gym::submit(gym::load("tests/data/gym/e2e_three.yaml", #{run_id: "gym-script-ttl"}));
           run.wait();"#,
        &[],
        false,
    );
    submit.ok();
    // The TTL controller removes the finished Jobs, and the garbage collector their pods.
    for b in ["gpqa", "math", "tau2"] {
        assert!(fake.delete(
            "batch/v1",
            "Job",
            "evals",
            &format!("gym-script-ttl-{b}"),
            None
        ));
    }
    // The fake's Job simulation may still be writing a pod of a Job it just lost: delete
    // until none is left, so the read below sees the cluster the TTL leaves.
    let gone = fake.wait_until_blocking(std::time::Duration::from_secs(10), |f| {
        let pods = f.pods("evals", "gym-job-id=gym-script-ttl");
        for pod in &pods {
            let name = pod["metadata"]["name"].as_str().unwrap_or_default();
            f.delete("v1", "Pod", "evals", name, None);
        }
        pods.is_empty()
    });
    assert!(gone, "the run's pods are gone");
    let r = run_on(
        &fake,
        cache.path(),
        r#"for row in gym::attach("gym-script-ttl").status() {
               print(`${row.benchmark} ${row.state} ${row.detail}`);
           }"#,
        &[],
        false,
    );
    r.ok();
    // math's failure is in the record as it was seen (the view starts from it).
    assert_eq!(
        r.stdout(),
        "gpqa Succeeded (Job no longer on the cluster)\n\
         math Failed driver exited 3 (Error) (Job no longer on the cluster)\n\
         tau2 Succeeded (Job no longer on the cluster)\n"
    );
}

#[test]
fn options_are_checked() {
    let fake = fake();
    let cache = tempfile::tempdir().unwrap();
    let r = run_on(
        &fake,
        cache.path(),
        r#"gym::load("tests/data/gym/e2e_three.yaml", #{overides: []});"#,
        &[],
        false,
    );
    let e = r.err();
    assert!(e.message.contains("no option `overides`"), "{}", e.message);
    assert!(e.help.as_deref().unwrap_or("").contains("overrides"));
    let r = run_on(
        &fake,
        cache.path(),
        r#"gym::load("tests/data/gym/e2e_three.yaml", #{overrides: ["driver.benchmark={}"]});"#,
        &[],
        false,
    );
    let text = r.err().render(false, 120);
    assert!(
        text.contains("nrl::config::unknown_key")
            && text.contains("did you mean `driver.benchmarks={}`"),
        "{text}"
    );
}

#[test]
fn the_playbook_dry_runs_the_example_through_the_binary() {
    let out = context::nrl()
        .env("HF_TOKEN", "x")
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args([
            "script",
            "scripts/gym_eval.rhai",
            "--dry-run",
            "--",
            "--config",
            "examples/gym/gpqa.yaml",
        ])
        .args([
            "--run-id",
            "gym-dry-1",
            "driver.benchmarks.gpqa.run.num_repeats=8",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Job/gym-dry-1-gpqa"), "{stdout}");
    assert!(
        stdout.contains("apply") && stdout.contains("Secret/gym-dry-1-env"),
        "{stdout}"
    );
}

/// Issue 19 point 6: `--dry-run` is offline, so the shipped example plans without
/// HF_TOKEN (its Secret holds a placeholder, and stderr says so).
#[test]
fn the_playbook_dry_runs_the_example_without_the_secret() {
    let out = context::nrl()
        .env_remove("HF_TOKEN")
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .args(["script", "scripts/gym_eval.rhai", "--dry-run", "--"])
        .args([
            "--config",
            "examples/gym/gpqa.yaml",
            "--run-id",
            "gym-dry-2",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("Secret/gym-dry-2-env"), "{stdout}");
    assert!(
        stderr.contains("`HF_TOKEN` not set here") && stderr.contains("<HF_TOKEN: set at submit>"),
        "{stderr}"
    );
}

/// A real `gym::submit` of a config whose secret is unset fails before any apply.
#[test]
fn a_submit_without_the_secret_fails_before_applying() {
    let fake = fake();
    let kubeconfig = fake.kubeconfig_path().to_path_buf();
    let r = run_with(
        "gym.rhai",
        r#"let cfg = gym::load("tests/data/gym/e2e_three.yaml", #{run_id: "gym-nosecret-1"});
           print(cfg.secret_keys());
           gym::submit(cfg);"#,
        &[],
        move |o| {
            o.connect.kubeconfig = Some(kubeconfig);
            o.env = std::sync::Arc::new(script_host::test_env());
        },
    );
    assert_eq!(r.stdout(), "[\"HF_TOKEN\"]\n");
    let e = r.err();
    assert!(e.message.contains("`HF_TOKEN` is not set"), "{}", e.message);
    assert!(fake.requests(|q| q.is_apply()).is_empty());
}

/// `gym::load(…, #{run_id})` and `gym::attach` check ids like `nrl run --run-id` (issue
/// 19 point 6: `Bad_ID` used to become the label `bad-id`).
#[test]
fn builtin_run_ids_follow_the_one_rule() {
    let fake = fake();
    let cache = tempfile::tempdir().unwrap();
    for script in [
        r#"gym::load("tests/data/gym/e2e_three.yaml", #{run_id: "Bad_ID"});"#,
        r#"gym::attach("Bad_ID");"#,
    ] {
        let r = run_on(&fake, cache.path(), script, &[], true);
        let text = r.err().render(false, 120);
        assert!(
            text.contains("nrl::run::run_id") && text.contains("run id `Bad_ID` contains `B`"),
            "{script}: {text}"
        );
    }
}

#[test]
fn the_builtins_are_documented() {
    let out = context::nrl()
        .args(["script", "--builtins"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for sig in [
        "gym::load(path: string, options: map) -> GymConfig",
        "gym::submit(cfg: GymConfig) -> GymRun",
        "gym::attach(run_id: string) -> GymRun",
        "GymConfig.jobs() -> array",
        "GymRun.wait() -> array",
        "GymRun.logs(benchmark: string, options: map) -> string",
        "GymRun.cancel() -> map",
    ] {
        assert!(text.contains(sig), "{sig}");
    }
}
