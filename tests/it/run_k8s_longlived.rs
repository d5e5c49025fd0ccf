//! `nrl run --raycluster` end to end (the real binary, the fake API server, a real Ray
//! head behind every head pod's dashboard port): clusters, a daemon, training with both
//! submitters, reuse without drift, `--replace`. With a Ray head of their own: `--replace`
//! stops every running job on the head.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::support::context::TestContext;
use crate::support::data::repo;
use crate::support::fake_k8s::FakeK8s;
use crate::support::ray_head::{RayHead, SharedHead};

const QS_RECIPE: &str = "examples/quickstart/recipe.yaml";
const LL_INFRA: &str = "tests/data/run/longlived.infra.yaml";
const QS_INFRA: &str = "examples/quickstart/infra.yaml";

struct World {
    /// HOME, user tester, the fake's kubeconfig.
    ctx: TestContext,
    /// Where exec runs keep their directories (the fake's "pods" are this machine).
    exec_tmp: tempfile::TempDir,
    fake: FakeK8s,
    head: &'static RayHead,
}

/// `--replace` stops every running job on the head behind the clusters, so these tests
/// have a head no other test submits to, and run one at a time.
static HEAD: SharedHead = SharedHead::new();
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn world() -> Option<World> {
    let head = HEAD.get()?;
    let fake = FakeK8s::start();
    fake.use_ray_dashboard(Some(head.address()));
    Some(World {
        ctx: TestContext::with_fake(&fake)
            .user("tester")
            .columns(200)
            .timeout(Duration::from_secs(300)),
        exec_tmp: tempfile::tempdir().unwrap(),
        fake,
        head,
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn record(w: &World, id: &str) -> Value {
    let path = w.ctx.home().join(format!(".cache/nrl/runs/{id}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn exec_tmp(w: &World) -> String {
    format!("infra.submit.execTmpDir={}", w.exec_tmp.path().display())
}

/// A Ray job's details straight from the head.
fn ray_job(head: &RayHead, id: &str) -> Value {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = nrl::ray::RayClient::new(head.address(), Default::default()).unwrap();
        serde_json::to_value(client.status(id).await.unwrap()).unwrap()
    })
}

#[test]
fn long_lived_daemon_and_training_then_reuse_then_replace() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(w) = world() else { return };
    let suffix = fastrand::u32(..) % 1_000_000;
    let (first, second, sleeper, replaced) = (
        format!("ll-a-{suffix}"),
        format!("ll-b-{suffix}"),
        format!("ll-c-{suffix}"),
        format!("ll-d-{suffix}"),
    );

    // 1. Both clusters created, the gym daemon submitted, training followed to its end.
    let out = w
        .ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            LL_INFRA,
            "--raycluster",
            "--run-id",
            &first,
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("[run] mode=interactive submitter=portForward code_source=upload wait=yes"),
        "{stderr}"
    );
    for line in [
        "[gym] applying RayCluster tester-ll-gym in namespace `default`",
        "[gym] daemon submitted as job gym-daemon",
        "[training] applying RayCluster tester-ll-train in namespace `default`",
        &format!("run {first} SUCCEEDED"),
    ] {
        assert!(stderr.contains(line), "missing {line:?} in\n{stderr}");
    }
    let gym = stderr.find("[gym] applying").unwrap();
    let training = stderr.find("[training] applying").unwrap();
    assert!(gym < training, "roles in order");
    assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");
    let rec = record(&w, &first);
    assert_eq!(rec["kind"], "raycluster-portforward");
    assert_eq!(rec["status"], "succeeded");
    assert_eq!(ray_job(w.head, "gym-daemon")["status"], "RUNNING");
    let cm = w
        .fake
        .get("v1", "ConfigMap", "default", &format!("nrl-run-{first}"))
        .unwrap();
    assert_eq!(
        cm["metadata"]["ownerReferences"][0]["name"],
        "tester-ll-train"
    );

    // 2. A rerun reuses both clusters (no drift: a server-side dry run), keeps the daemon.
    w.fake.clear_request_log();
    let out = w
        .ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            LL_INFRA,
            "--raycluster",
            "--run-id",
            &second,
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("[gym] RayCluster tester-ll-gym already exists and matches — reusing"),
        "{stderr}"
    );
    assert!(
        stderr
            .contains("[training] RayCluster tester-ll-train already exists and matches — reusing"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[gym] daemon gym-daemon already RUNNING — skipping submit"),
        "{stderr}"
    );
    assert!(!stderr.contains("drift"), "{stderr}");
    let cluster_writes = w.fake.requests(|r| {
        r.resource.as_deref() == Some("rayclusters") && r.is_apply() && !r.is_dry_run()
    });
    assert!(
        cluster_writes.is_empty(),
        "reused clusters are not re-applied"
    );

    // 3. A long exec run, the endpoint registry, then --replace.
    let out = w
        .ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            LL_INFRA,
            "--raycluster",
            "--run-id",
            &sleeper,
        ])
        .args([
            "--submitter",
            "exec",
            "--code-source",
            "image",
            "--code-path",
        ])
        .arg(repo())
        .args([
            "--no-wait",
            &exec_tmp(&w),
            "infra.launch.entrypoint='sleep 60'",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    w.fake.put(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "nemo-rl-endpoints-run-k", "namespace": "default"},
        "data": {"gen": "http://stale:8000"}}));
    let clock = (Instant::now(), SystemTime::now());
    w.fake.clear_request_log();
    let out = w
        .ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            LL_INFRA,
            "--raycluster",
            "--run-id",
            &replaced,
        ])
        .arg("--replace")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("[replace] stopping gym-daemon (RUNNING)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("[replace] stopping exec run {sleeper}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("[replace] deleted endpoint registry ConfigMap nemo-rl-endpoints-run-k"),
        "{stderr}"
    );
    assert!(
        stderr.contains("[gym] --replace: using fresh submissionId gym-daemon-"),
        "{stderr}"
    );
    assert!(
        w.fake
            .get("v1", "ConfigMap", "default", "nemo-rl-endpoints-run-k")
            .is_none()
    );

    // The request log: the exec stop, then the registry reset (once).
    let log = w.fake.request_log();
    let stop_at = log
        .iter()
        .position(|r| r.resource.as_deref() == Some("pods/exec") && r.query.contains("signalled"))
        .expect("an exec stop");
    let resets: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|(_, r)| r.verb == "delete" && r.name.as_deref() == Some("nemo-rl-endpoints-run-k"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(resets.len(), 1, "the registry is reset once");
    assert!(
        stop_at < resets[0],
        "jobs are stopped before the registry reset"
    );
    // The Ray daemon had ended before the reset too.
    let reset_wall = clock.1 + (log[resets[0]].at - clock.0);
    let reset_ms = reset_wall.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    let daemon = ray_job(w.head, "gym-daemon");
    assert_eq!(daemon["status"], "STOPPED");
    assert!(daemon["end_time"].as_i64().unwrap() <= reset_ms, "{daemon}");
    assert_eq!(record(&w, &replaced)["status"], "succeeded");
    let sleeper_dir = w.exec_tmp.path().join(format!("nrl-{sleeper}"));
    assert_eq!(
        std::fs::read_to_string(sleeper_dir.join("exitcode"))
            .unwrap()
            .trim(),
        "143"
    );
}

/// The exec submitter, batch mode with waiting: an entrypoint failing under `set -eu`
/// records exit code 1 (ref §11 D4), the run exits 1, and the log is readable by run id.
#[test]
fn exec_run_failing_under_set_eu_records_exit_code_1() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(w) = world() else { return };
    let run = format!("ll-exec-{}", fastrand::u32(..) % 1_000_000);
    let out = w
        .ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            QS_INFRA,
            "--raycluster",
            "--mode",
            "batch",
        ])
        .args(["--wait", "--run-id", &run, "--code-path"])
        .arg(repo())
        .args([
            &exec_tmp(&w),
            "infra.launch.entrypoint='set -eu; echo before; false; echo unreachable'",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("mode=batch submitter=exec code_source=image wait=yes"),
        "{stderr}"
    );
    assert!(
        stdout.contains("before") && !stdout.contains("unreachable"),
        "{stdout}"
    );
    assert!(stderr.contains(&format!("run {run} exited 1")), "{stderr}");
    let rec = record(&w, &run);
    assert_eq!(rec["kind"], "raycluster-exec");
    assert_eq!(rec["status"], "failed");
    assert_eq!(rec["exit_code"], 1);
    let dir = w.exec_tmp.path().join(format!("nrl-{run}"));
    assert_eq!(
        std::fs::read_to_string(dir.join("exitcode"))
            .unwrap()
            .trim(),
        "1"
    );
    assert!(
        std::fs::read_to_string(dir.join("launch.sh"))
            .unwrap()
            .contains("NRL_RUN_ID")
    );

    let out = w.ctx.nrl().args(["job", "logs", &run]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "before\n");

    // A second exec run that succeeds, followed by run id, stopped by run id.
    let ok = format!("ll-exec-ok-{}", fastrand::u32(..) % 1_000_000);
    let out = w
        .ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            QS_INFRA,
            "--raycluster",
            "--mode",
            "batch",
        ])
        .args(["--run-id", &ok, "--code-path"])
        .arg(repo())
        .args([&exec_tmp(&w), "grpo.max_num_steps=1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = w
        .ctx
        .nrl()
        .args(["job", "logs", &ok, "-f"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");
    assert!(stdout.contains("step 1/1"), "{stdout}");

    // ref §10.2 #20 ResetEndpointRegistry/noop_when_no_gym: --replace without a gym daemon
    // resets nothing.
    w.fake.clear_request_log();
    let replaced = format!("ll-exec-r-{}", fastrand::u32(..) % 1_000_000);
    let out = w
        .ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            QS_INFRA,
            "--raycluster",
            "--mode",
            "batch",
        ])
        .args(["--replace", "--run-id", &replaced, "--code-path"])
        .arg(repo())
        .args([&exec_tmp(&w), "grpo.max_num_steps=1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        w.fake
            .requests(|r| r.verb == "delete" && r.resource.as_deref() == Some("configmaps"))
            .is_empty()
    );
}
