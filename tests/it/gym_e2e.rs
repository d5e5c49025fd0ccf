//! `nrl gym` end to end against the fake API server's Job simulation: three benchmarks,
//! one failing, give the right table, logs and exit code; cancel deletes the run's Jobs
//! and Secret; the ref §5.1 submit tests (record, apply failure, apply timeout).

use std::sync::Arc;
use std::time::Duration;

use nrl::config::env::MapEnv;
use nrl::gym::GymLoadRequest;
use nrl::gym::ops::apply::ApplySettings;
use nrl::gym::session;
use nrl::gym::state::Phase;
use serde_json::Value as Json;

use crate::support::context::{TestContext, snapshot};
use crate::support::data;
use crate::support::fake_k8s::{FakeK8s, FaultAction, FaultMatch, JobScript};

const CONFIG: &str = "tests/data/gym/e2e_three.yaml";
const TOKEN: &str = "hf_e2e_secret_token";

fn fake() -> FakeK8s {
    let fake = FakeK8s::builder().namespace("evals").start();
    fake.set_job_script(
        "*-gpqa",
        JobScript::succeeds().log("driver", "gpqa accuracy=0.41"),
    );
    fake.set_job_script(
        "*-math",
        JobScript::fails(3)
            .log("driver", "Traceback: math harness crashed")
            .log("policy", "INFO vllm serving org/model"),
    );
    fake.set_job_script("*-tau2", JobScript::succeeds().log("driver", "tau2 done"));
    fake
}

/// A fresh context on `fake`, with the token the gym configs read.
fn context(fake: &FakeK8s) -> TestContext {
    TestContext::with_fake(fake)
        .env("HF_TOKEN", TOKEN)
        .columns(200)
        .timeout(Duration::from_secs(60))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn row<'a>(table: &'a str, bench: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(bench))
        .unwrap_or_else(|| panic!("no row for {bench} in\n{table}"))
}

#[test]
fn three_benchmarks_one_failing_cli() {
    let fake = fake();
    let home = context(&fake);
    let run = "gym-e2e-three";

    // submit: watch to the end, exit 1 because `math` failed.
    let out = home
        .nrl()
        .args(["gym", "submit", CONFIG, "--run-id", run])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("context `fake`, namespace `evals`"),
        "{stderr}"
    );
    snapshot!(home, "submit_table", stdout);
    // Not a terminal: one line per transition on stderr.
    assert!(stderr.contains("math: Failed"), "{stderr}");

    // One watch for the whole run, on Jobs by its label.
    let watches = fake.requests(|r| r.watch && r.base_resource() == Some("jobs"));
    assert_eq!(watches.len(), 1, "{watches:?}");
    assert!(
        watches[0].query.contains("gym-job-id%3Dgym-e2e-three")
            || watches[0].query.contains("gym-job-id=gym-e2e-three"),
        "{:?}",
        watches[0]
    );

    // The token is only in the Secret, which the Jobs own.
    let secret = fake
        .get("v1", "Secret", "evals", "gym-e2e-three-env")
        .expect("the run's Secret");
    let owners = secret["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(owners.len(), 3);
    // The Secret and the Jobs are labelled with the user (issue 15 item 8).
    let owner = secret["metadata"]["labels"]["nrl-k8s/owner"].clone();
    assert!(owner.as_str().is_some_and(|o| !o.is_empty()), "{secret}");
    for job in fake.list("batch/v1", "Job", Some("evals"), "gym-job-id=gym-e2e-three") {
        assert!(!job.to_string().contains(TOKEN));
        assert_eq!(job["metadata"]["labels"]["nrl-k8s/owner"], owner);
    }

    // The record.
    let record: Json = serde_json::from_str(
        &std::fs::read_to_string(home.home().join(".cache/nrl/runs/gym-e2e-three.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["kind"], "gym");
    assert_eq!(record["status"], "failed");
    assert_eq!(record["namespace"], "evals");
    assert_eq!(record["gym"]["benchmarks"][1]["phase"], "Failed");
    assert_eq!(
        record["gym"]["base_run_dir"],
        "/mnt/gym-output/gym-e2e-three"
    );

    // status: same table from the cluster, exit 1.
    let out = home.nrl().args(["gym", "status", run]).output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    snapshot!(home, "status_table", stdout);
    // The same as data, same exit code.
    let out = home
        .nrl()
        .args(["gym", "status", run, "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let data: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(data["run"], run);
    let phases: Vec<String> = data["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            format!(
                "{} {}",
                b["benchmark"].as_str().unwrap(),
                b["phase"].as_str().unwrap()
            )
        })
        .collect();
    assert!(phases.iter().any(|p| p == "math Failed"), "{phases:?}");

    // logs: one benchmark's driver, a sidecar, and all benchmarks prefixed.
    let out = home
        .nrl()
        .args(["gym", "logs", run, "math"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Traceback: math harness crashed\n");
    let out = home
        .nrl()
        .args(["gym", "logs", run, "math", "--container", "policy"])
        .output()
        .unwrap();
    assert_eq!(
        text(&out.stdout),
        "INFO vllm serving org/model\n",
        "{}",
        text(&out.stderr)
    );
    let out = home
        .nrl()
        .args(["gym", "logs", run, "math", "--container", "polcy"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--container policy"),
        "{}",
        text(&out.stderr)
    );
    let out = home.nrl().args(["gym", "logs", run]).output().unwrap();
    let all = text(&out.stdout);
    assert!(
        all.contains("[gpqa] gpqa accuracy=0.41")
            && all.contains("[math] Traceback")
            && all.contains("[tau2] tau2 done"),
        "{all}"
    );

    // Another user's cancel is refused by the owner check before anything is deleted
    // (issue 15 item 8).
    fake.clear_request_log();
    let out = home
        .nrl()
        .env("NRL_USER", "mallory")
        .args(["gym", "cancel", run])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("(you are 'mallory')"), "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert!(fake.requests(|r| r.verb == "delete").is_empty());

    // cancel: the Jobs and the Secret are gone.
    let out = home.nrl().args(["gym", "cancel", run]).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("context `fake`, namespace `evals`"));
    assert!(
        stdout.contains("deleted Job gym-e2e-three-math")
            && stdout.contains("deleted Secret gym-e2e-three-env"),
        "{stdout}"
    );
    assert!(
        fake.list("batch/v1", "Job", Some("evals"), "gym-job-id=gym-e2e-three")
            .is_empty()
    );
    assert!(
        fake.get("v1", "Secret", "evals", "gym-e2e-three-env")
            .is_none()
    );
}

async fn prepared(run: &str, cache: &std::path::Path) -> (session::Prepared, Arc<MapEnv>) {
    let mut e = MapEnv::new([("HF_TOKEN", TOKEN), ("USER", "alice")]);
    e.set("XDG_CACHE_HOME", cache.to_str().unwrap());
    let env = Arc::new(e);
    let req = GymLoadRequest::new(data::repo().join(CONFIG), env.clone());
    (session::prepare(&req, Some(run)).unwrap(), env)
}

/// A run whose Jobs keep running for 30 s, started through the library as `alice`.
async fn long_run_started(run: &str) -> (FakeK8s, nrl::k8s::K8s, tempfile::TempDir) {
    let fake = fake();
    fake.set_job_script(
        "*",
        JobScript::succeeds().running_for(Duration::from_secs(30)),
    );
    let cache = tempfile::tempdir().unwrap();
    let (p, env) = prepared(run, cache.path()).await;
    let k8s = session::connect(&p.plan, None, Some(fake.kubeconfig_path().to_path_buf()))
        .await
        .unwrap();
    let mut warn = |_: nrl::diag::Diag| {};
    session::start(
        &k8s,
        &p,
        &ApplySettings::default(),
        env.as_ref(),
        |_| {},
        &mut warn,
    )
    .await
    .unwrap();
    (fake, k8s, cache)
}

// ref §5.1 tests 8 and 10: every benchmark applied in order, a record saved locally.
#[tokio::test]
async fn submit_applies_in_order_and_records() {
    let fake = fake();
    let cache = tempfile::tempdir().unwrap();
    let (p, env) = prepared("gym-lib-ok", cache.path()).await;
    let k8s = session::connect(&p.plan, None, Some(fake.kubeconfig_path().to_path_buf()))
        .await
        .unwrap();
    let mut warn = |d: nrl::diag::Diag| panic!("unexpected warning {d}");
    let started = session::start(
        &k8s,
        &p,
        &ApplySettings::default(),
        env.as_ref(),
        |_| {},
        &mut warn,
    )
    .await
    .unwrap();
    let names: Vec<&str> = started
        .applied
        .iter()
        .map(|a| a.benchmark.as_str())
        .collect();
    assert_eq!(names, ["gpqa", "math", "tau2"]);
    assert!(
        started
            .applied
            .iter()
            .all(|a| a.uid.is_some() && a.error.is_none())
    );
    let r = &started.record;
    assert_eq!(r.run.kind, nrl::launch::records::RunKind::Gym);
    assert_eq!(r.run.namespace.as_deref(), Some("evals"));
    assert_eq!(r.run.context.as_deref(), Some("fake"));
    assert!(r.gym.base_run_dir.ends_with("gym-lib-ok"));
    let saved = nrl::gym::record::GymRecord::load(env.as_ref(), "gym-lib-ok")
        .unwrap()
        .unwrap();
    assert_eq!(&saved, r);
}

// ref §5.1 test 9: one apply fails, the others go on; the failure is in the table.
#[tokio::test]
async fn one_failed_apply_does_not_stop_the_others() {
    let fake = fake();
    fake.inject(
        FaultMatch::verb("patch", "jobs").name("gym-lib-forbid-math"),
        FaultAction::Status(403),
        None,
    );
    let cache = tempfile::tempdir().unwrap();
    let (p, env) = prepared("gym-lib-forbid", cache.path()).await;
    let k8s = session::connect(&p.plan, None, Some(fake.kubeconfig_path().to_path_buf()))
        .await
        .unwrap();
    let mut warn = |_: nrl::diag::Diag| {};
    let mut started = session::start(
        &k8s,
        &p,
        &ApplySettings::default(),
        env.as_ref(),
        |_| {},
        &mut warn,
    )
    .await
    .unwrap();
    let math = &started.applied[1];
    assert!(math.uid.is_none());
    assert!(
        math.error
            .as_deref()
            .unwrap()
            .to_lowercase()
            .contains("forbidden"),
        "{math:?}"
    );
    assert!(started.applied[0].error.is_none() && started.applied[2].error.is_none());
    assert!(started.record.gym.benchmarks[1].error.is_some());
    let exit = session::follow(&k8s, &mut started, env.as_ref(), |_| {}, &mut warn)
        .await
        .unwrap();
    assert_eq!(exit, nrl::diag::Exit::Failed);
    let phases: Vec<Phase> = started.view.rows().iter().map(|r| r.phase).collect();
    // `math` never ran: its scripted failure is not what failed it.
    assert_eq!(
        phases,
        [Phase::Succeeded, Phase::ApplyFailed, Phase::Succeeded]
    );
}

// ref §5.1 test 18: a hung apply times out; the record still comes back.
#[tokio::test]
async fn a_hung_apply_times_out() {
    let fake = fake();
    fake.inject(
        FaultMatch::verb("patch", "jobs").name("gym-lib-hang-gpqa"),
        FaultAction::Hang,
        None,
    );
    let cache = tempfile::tempdir().unwrap();
    let (p, env) = prepared("gym-lib-hang", cache.path()).await;
    let k8s = session::connect(&p.plan, None, Some(fake.kubeconfig_path().to_path_buf()))
        .await
        .unwrap();
    let settings = ApplySettings {
        parallel: 4,
        timeout: Duration::from_millis(500),
    };
    let mut warn = |_: nrl::diag::Diag| {};
    let started = session::start(&k8s, &p, &settings, env.as_ref(), |_| {}, &mut warn)
        .await
        .unwrap();
    let gpqa = &started.applied[0];
    assert!(
        gpqa.error.as_deref().unwrap().contains("timed out"),
        "{gpqa:?}"
    );
    assert!(started.applied[1].uid.is_some());
    assert_eq!(started.record.gym.benchmarks[0].error, gpqa.error);
}

// Cancelling one benchmark leaves the others and the Secret.
#[tokio::test]
async fn cancel_one_benchmark() {
    let (fake, k8s, _cache) = long_run_started("gym-lib-cancel").await;
    // Cancel once the pods exist (a pod the Job controller creates mid-deletion is a race
    // the fake does not model).
    assert!(
        fake.wait_until(Duration::from_secs(10), |f| f
            .pods("evals", "gym-job-id=gym-lib-cancel")
            .len()
            == 3)
            .await
    );
    let done = nrl::gym::ops::cancel::cancel_run(
        &k8s,
        "evals",
        "gym-lib-cancel",
        Some("math"),
        Some(Duration::from_secs(10)),
        &nrl::gym::ops::cancel::Canceller {
            me: "alice",
            force: false,
            progress: &nrl::launch::Progress::capture(),
        },
    )
    .await
    .unwrap();
    assert_eq!(done.jobs, ["gym-lib-cancel-math"]);
    assert_eq!(done.secret, None);
    let left: Vec<String> = fake
        .list(
            "batch/v1",
            "Job",
            Some("evals"),
            "gym-job-id=gym-lib-cancel",
        )
        .iter()
        .map(|j| j["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(left, ["gym-lib-cancel-gpqa", "gym-lib-cancel-tau2"]);
    assert!(fake.pods("evals", "gym-benchmark=math").is_empty());
    assert!(
        fake.get("v1", "Secret", "evals", "gym-lib-cancel-env")
            .is_some()
    );
}

// Cancelling another user's run is refused before anything is deleted; --force cancels
// it (issue 15 item 8).
#[tokio::test]
async fn cancel_refuses_another_users_run_unless_forced() {
    let (fake, k8s, _cache) = long_run_started("gym-lib-theirs").await;
    let owner = fake
        .get("v1", "Secret", "evals", "gym-lib-theirs-env")
        .unwrap()["metadata"]["labels"]["nrl-k8s/owner"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(owner, "mallory");
    let cancel = |force: bool| {
        let k8s = k8s.clone();
        async move {
            nrl::gym::ops::cancel::cancel_run(
                &k8s,
                "evals",
                "gym-lib-theirs",
                None,
                None,
                &nrl::gym::ops::cancel::Canceller {
                    me: "mallory",
                    force,
                    progress: &nrl::launch::Progress::capture(),
                },
            )
            .await
        }
    };
    fake.clear_request_log();
    let err = cancel(false).await.unwrap_err();
    assert_eq!(err.code, "nrl::cluster::owner");
    assert!(
        err.message
            .contains(&format!("is owned by '{owner}' (you are 'mallory')")),
        "{}",
        err.message
    );
    assert!(fake.requests(|r| r.verb == "delete").is_empty());
    let done = cancel(true).await.unwrap();
    assert_eq!(done.jobs.len(), 3, "{done:?}");
    assert_eq!(done.secret.as_deref(), Some("gym-lib-theirs-env"));
}

// Following: `logs -f` waits for the pod and ends with it; `status` works without the
// local record (another machine) given the namespace; Ctrl-C detaches with 130.
#[test]
fn follow_status_elsewhere_and_detach() {
    let fake = FakeK8s::builder().namespace("evals").start();
    fake.set_job_script(
        "*",
        JobScript::succeeds()
            .running_for(Duration::from_millis(1500))
            .log("driver", "step 1"),
    );
    let home = context(&fake);
    let run = "gym-e2e-follow";
    let out = home
        .nrl()
        .args(["gym", "submit", CONFIG, "--run-id", run, "--no-wait"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{run}\n"));

    let out = home
        .nrl()
        .args(["gym", "logs", run, "gpqa", "-f"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "step 1\n");

    // No record on this "machine": the Jobs are found by label in the given namespace.
    let elsewhere = context(&fake);
    let out = elsewhere
        .nrl()
        .args(["gym", "status", run, "-n", "evals"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for b in ["gpqa", "math", "tau2"] {
        assert!(row(&stdout, b).contains("gym-e2e-follow-"), "{stdout}");
    }
    let out = elsewhere
        .nrl()
        .args(["gym", "status", "gym-nothing", "-n", "evals"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no Jobs of run `gym-nothing`"));

    // Ctrl-C while watching: detach, the run keeps going.
    fake.set_job_script(
        "*",
        JobScript::succeeds().running_for(Duration::from_secs(60)),
    );
    let child = home
        .command()
        .args(["gym", "submit", CONFIG, "--run-id", "gym-e2e-detach"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(fake.wait_until_blocking(Duration::from_secs(20), |f| {
        f.requests(|r| r.watch && r.base_resource() == Some("jobs"))
            .len()
            == 1
    }));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("detached") && stderr.contains("nrl gym status gym-e2e-detach"),
        "{stderr}"
    );
    assert_eq!(
        fake.list(
            "batch/v1",
            "Job",
            Some("evals"),
            "gym-job-id=gym-e2e-detach"
        )
        .len(),
        3
    );
}

/// Issue 19 point 6: `gym submit|status|logs|cancel` take `-n` and `--kubeconfig` like
/// the other cluster commands, and `-n` is the namespace every request goes to (on
/// submit it replaces the config's `compute.cluster.namespace`, in the Jobs too).
#[test]
fn namespace_and_kubeconfig_flags_reach_the_api() {
    let fake = fake();
    fake.create_namespace("evals-b");
    fake.set_job_script("*", JobScript::succeeds().log("driver", "done here"));
    let kubeconfig = fake.kubeconfig_path().to_str().unwrap().to_string();
    // No KUBECONFIG in the environment: only --kubeconfig finds the fake.
    let home = TestContext::new()
        .env("HF_TOKEN", TOKEN)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .columns(200)
        .timeout(Duration::from_secs(60));
    let flags = ["-n", "evals-b", "--kubeconfig", kubeconfig.as_str()];
    let run = "gym-e2e-ns";
    let out = home
        .nrl()
        .args(["gym", "submit", CONFIG, "--run-id", run])
        .args(flags)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("namespace `evals-b`"), "{stderr}");
    let jobs = fake.list("batch/v1", "Job", Some("evals-b"), "gym-job-id=gym-e2e-ns");
    assert_eq!(jobs.len(), 3);
    assert!(
        fake.list("batch/v1", "Job", Some("evals"), "gym-job-id=gym-e2e-ns")
            .is_empty()
    );
    let namespaced = |f: &FakeK8s| {
        f.requests(|q| q.namespace.is_some())
            .iter()
            .map(|q| q.namespace.clone().unwrap_or_default())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(
        namespaced(&fake).into_iter().collect::<Vec<_>>(),
        ["evals-b"]
    );

    // Another machine (no record): the flags alone find the run.
    let elsewhere = TestContext::new()
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .columns(200)
        .timeout(Duration::from_secs(60));
    let out = elsewhere
        .nrl()
        .args(["gym", "status", run])
        .args(flags)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("namespace `evals-b`"), "{stdout}");
    assert!(row(&stdout, "gpqa").contains("Succeeded"), "{stdout}");
    let out = elsewhere
        .nrl()
        .args(["gym", "logs", run, "gpqa"])
        .args(flags)
        .output()
        .unwrap();
    assert_eq!(text(&out.stdout), "done here\n", "{}", text(&out.stderr));
    let out = elsewhere
        .nrl()
        .args(["gym", "cancel", run])
        .args(flags)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        fake.list("batch/v1", "Job", Some("evals-b"), "gym-job-id=gym-e2e-ns")
            .is_empty()
    );
    assert_eq!(
        namespaced(&fake).into_iter().collect::<Vec<_>>(),
        ["evals-b"]
    );
}
