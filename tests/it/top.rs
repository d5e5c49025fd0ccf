//! `nrl top` against the fake API server: the one-shot view of a RayJob whose worker the
//! scheduler cannot place (kubelet simulation: Pending, Unschedulable, a FailedScheduling
//! event), with its driver log read from a stand-in dashboard through the port-forward;
//! and the cost of a live session in API requests, for 2 and for 64 workers.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::context::{AGE, TestContext};
use crate::support::fake_k8s::{FakeK8s, PodFate};
use crate::support::stub_ray::StubRay;

const JOB_ID: &str = "alice-grpo-sub";

/// A NeMo-RL GRPO driver log: the W&B line, two steps with results and timing.
const DRIVER_LOG: &str = "\
wandb: 🚀 View run at https://wandb.ai/team/grpo/runs/abc123

========================= Step 1/10 =========================
▶ Generating responses for batch of size 64...

📊 Training Results:
  • Loss: -0.0132
  • Avg Reward: 0.4785

⏱️  Timing:
  • Total step time: 42.10s

========================= Step 2/10 =========================
▶ Generating responses for batch of size 64...

📊 Training Results:
  • Loss: -0.0098
  • Avg Reward: 0.5210

⏱️  Timing:
  • Total step time: 40.55s
";

fn rayjob(name: &str, owner: &str, workers: i64) -> Value {
    let container = |c: &str, limits: Value| {
        json!({"spec": {"containers": [{"name": c, "image": "nvcr.io/nvidia/nemo-rl:v0.4.0",
            "resources": {"limits": limits}}]}})
    };
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default", "labels": {"nrl-k8s/owner": owner}},
        "spec": {"entrypoint": "python train.py", "submissionMode": "HTTPMode", "jobId": JOB_ID,
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": container("ray-head", json!({"memory": "16Gi"}))},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers, "minReplicas": workers,
                    "maxReplicas": workers, "rayStartParams": {},
                    "template": container("ray-worker", json!({"nvidia.com/gpu": 8}))}]}}})
}

/// Wait until the RayJob's head runs and its `workers` worker pods satisfy `settled`.
fn wait_for_pods(fake: &FakeK8s, workers: usize, settled: impl Fn(&Value) -> bool) {
    let ok = fake.wait_until_blocking(Duration::from_secs(30), |f| {
        let head = f.pods("default", "ray.io/node-type=head");
        let pods = f.pods("default", "ray.io/node-type=worker");
        head.iter()
            .any(|p| p.pointer("/status/phase") == Some(&json!("Running")))
            && pods.len() == workers
            && pods.iter().all(&settled)
    });
    assert!(ok, "the pods never settled");
}

fn ctx(fake: &FakeK8s) -> TestContext {
    TestContext::with_fake(fake)
        .filter(r"alice-grpo-[a-z0-9]{5}", "alice-grpo-[RAND]")
        .filter(r"(worker|head)-[a-z0-9]{5}", "$1-[RAND]")
        .filter(AGE, "[AGE]  ")
}

#[test]
fn top_once_shows_the_run_its_pods_events_log_and_progress() {
    let fake = FakeK8s::start();
    fake.set_pod_fate(
        "ray.io/node-type=worker",
        PodFate::FailedScheduling("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.".into()),
    );
    let ray = StubRay::start();
    ray.add_job(JOB_ID, "RUNNING", 1_767_268_800_000);
    ray.set_log(JOB_ID, DRIVER_LOG);
    fake.forward_port("default", "*head*", 8265, ray.addr);
    fake.put(rayjob("alice-grpo", "alice", 1));
    fake.put(rayjob("bob-sft", "bob", 0));
    wait_for_pods(&fake, 1, |p| {
        p.pointer("/status/conditions/0/reason") == Some(&json!("Unschedulable"))
    });
    let ctx = ctx(&fake);
    let out = ctx.nrl().args(["top", "--once"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _s = ctx.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("top_once_rayjob", stdout);

    // The same view as data; bob's RayJob only with --all-users.
    let json_of = |extra: &[&str]| -> Value {
        let out = ctx
            .nrl()
            .args(["top", "-o", "json"])
            .args(extra)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    };
    let view = json_of(&[]);
    let names = |v: &Value| -> Vec<String> {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&view), ["alice-grpo"]);
    assert_eq!(view["runs"][0]["alert"], true, "{view}");
    assert_eq!(view["selected"]["progress"]["step"], 2, "{view}");
    assert_eq!(
        view["runs"][0]["wandb"],
        "https://wandb.ai/team/grpo/runs/abc123"
    );
    let mut everyone = names(&json_of(&["--all-users"]));
    everyone.sort();
    assert_eq!(everyone, ["alice-grpo", "bob-sft"]);

    // The built-in is the same call: the same view (ages aside, which move with the clock).
    let script = ctx.home().join("top.rhai");
    std::fs::write(&script, "print(dump_json(top::snapshot()));").unwrap();
    let out = ctx.nrl().arg("script").arg(&script).output().unwrap();
    let mut from_script: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let mut from_command = json_of(&[]);
    for v in [&mut from_script, &mut from_command] {
        strip_ages(v);
    }
    assert_eq!(from_script, from_command);
}

/// A run id selects what its record names, in the command (`nrl top RUN_ID`) and in the
/// built-in (`top::snapshot(#{run: RUN_ID})`) alike; another name selects that object.
#[test]
fn a_run_id_selects_the_rayjob_its_record_names() {
    const RUN: &str = "grpo-20260101-120000-ab12";
    let fake = FakeK8s::start();
    fake.put(rayjob("alice-grpo", "alice", 0));
    fake.put(rayjob("alice-sft", "alice", 0));
    let ctx = ctx(&fake);
    let runs = ctx.home().join(".cache/nrl/runs");
    std::fs::create_dir_all(&runs).unwrap();
    let rec = json!({"id": RUN, "kind": "rayjob", "created_at": "2026-01-01T12:00:00Z",
        "context": "fake", "namespace": "default", "cluster": "alice-sft",
        "k8s": {"rayjob": "alice-sft", "submission_id": RUN}});
    std::fs::write(runs.join(format!("{RUN}.json")), rec.to_string()).unwrap();

    let selected = |out: std::process::Output| -> String {
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{e}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        v["selected"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let command = |target: &str| {
        selected(
            ctx.nrl()
                .args(["top", target, "-o", "json", "--tail", "0"])
                .output()
                .unwrap(),
        )
    };
    let script = ctx.home().join("top.rhai");
    let builtin = |target: &str| {
        std::fs::write(
            &script,
            format!("print(dump_json(top::snapshot(#{{ run: \"{target}\", tail: 0 }})));"),
        )
        .unwrap();
        selected(ctx.nrl().arg("script").arg(&script).output().unwrap())
    };
    // Without a selection the view opens on alice-grpo; the run's record names alice-sft.
    assert_eq!(builtin("no-such-run"), "alice-grpo");
    assert_eq!(command(RUN), "alice-sft");
    assert_eq!(builtin(RUN), "alice-sft");
    assert_eq!(builtin("alice-sft"), "alice-sft");
}

/// `age` fields removed (they follow the clock between two reads).
fn strip_ages(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("age");
            m.values_mut().for_each(strip_ages);
        }
        Value::Array(a) => a.iter_mut().for_each(strip_ages),
        _ => {}
    }
}

/// The full screen, in a pseudo-terminal: it starts on an empty namespace, shows a RayJob
/// as soon as it is created (a watch event, not a poll), opens its help and the stop
/// confirmation (declined), and quits on `q` with the terminal given back (the alternate
/// screen left, the cursor shown).
#[test]
fn the_screen_shows_a_new_run_takes_keys_and_quits_cleanly() {
    use crate::support::terminal::Terminal;

    let fake = FakeK8s::start();
    let ctx = ctx(&fake);
    let mut t = Terminal::spawn({
        let mut c = ctx.command();
        c.arg("top");
        c
    });
    t.wait_for("user alice");
    t.wait_for("live");
    fake.put(rayjob("alice-grpo", "alice", 1));
    t.wait_for("alice-grpo");
    t.send(b"?");
    t.wait_for("select a run");
    t.send(b"?");
    t.send(b"s");
    t.wait_for("Stop RayJob alice-grpo in namespace default?");
    t.send(b"n");
    t.send(b"q");
    let status = t.wait();
    assert!(status.success(), "{status:?}\n{}", t.screen());
    let raw = String::from_utf8_lossy(&t.raw()).into_owned();
    let left = raw
        .rfind("\x1b[?1049l")
        .expect("the alternate screen is left");
    let entered = raw
        .rfind("\x1b[?1049h")
        .expect("the alternate screen was entered");
    assert!(left > entered, "left the alternate screen last");
    assert!(
        raw[left..].contains("\x1b[?25h")
            || raw[..left].rfind("\x1b[?25h") > raw[..left].rfind("\x1b[?25l"),
        "the cursor is shown again"
    );
    // Nothing was stopped: the RayJob is still there.
    assert!(
        fake.get("ray.io/v1", "RayJob", "default", "alice-grpo")
            .is_some()
    );
}

/// One list and one watch per kind, whatever the number of pods; after that, only the
/// watches renewing themselves (every `--watch-timeout`, 1 s here): a 64-worker run costs
/// what a 2-worker run costs.
#[test]
fn a_live_session_costs_the_same_requests_for_2_or_64_workers() {
    let counts: Vec<(usize, Vec<(String, usize)>)> = [2usize, 64]
        .iter()
        .map(|&workers| (workers, live_requests(workers)))
        .collect();
    for (workers, c) in &counts {
        println!("{workers} workers: {c:?}");
    }
    let (small, large) = (&counts[0].1, &counts[1].1);
    assert_eq!(small, large, "2 workers: {small:?}\n64 workers: {large:?}");
}

/// Requests by `verb resource` during a live session on a run with `workers` workers:
/// the start (to the first complete view and its log), then 3 seconds of steady state.
fn live_requests(workers: usize) -> Vec<(String, usize)> {
    use nrl::k8s::{ConnectOptions, K8s};
    use nrl::top::model::{Action, ScreenUpdate};
    use nrl::top::session::{TopOptions, live};

    let fake = FakeK8s::start();
    let ray = StubRay::start();
    ray.add_job(JOB_ID, "RUNNING", 1_767_268_800_000);
    ray.set_log(JOB_ID, DRIVER_LOG);
    fake.forward_port("default", "*head*", 8265, ray.addr);
    fake.put(rayjob("alice-grpo", "alice", workers as i64));
    wait_for_pods(&fake, workers, |p| {
        p.pointer("/status/phase") == Some(&json!("Running"))
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let k8s = K8s::connect(&ConnectOptions {
            kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
            watch_timeout: Some(Duration::from_secs(1)),
            ..ConnectOptions::default()
        })
        .await
        .unwrap();
        fake.clear_request_log();
        let (updates_tx, mut updates) = tokio::sync::mpsc::channel(64);
        let (actions, actions_rx) = tokio::sync::mpsc::channel(4);
        let opts = TopOptions {
            user: Some("alice".into()),
            ..TopOptions::default()
        };
        let session =
            tokio::spawn(async move { live(&k8s, &opts, "alice", updates_tx, actions_rx).await });
        // The start: every pod seen, and the driver log read.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            assert!(Instant::now() < deadline, "no complete view");
            let Some(ScreenUpdate::View(view)) = updates.recv().await else {
                continue;
            };
            let Some(d) = &view.selected else { continue };
            let pods: usize = d.clusters.iter().map(|c| c.pods.len()).sum();
            if pods == workers + 1 && d.log.lines.len() > 1 {
                break;
            }
        }
        let started = fake.request_log().len();
        let window = Instant::now();
        while window.elapsed() < Duration::from_secs(3) {
            let _ = tokio::time::timeout(Duration::from_millis(200), updates.recv()).await;
        }
        let steady: Vec<String> = fake.request_log()[started..]
            .iter()
            .map(|r| format!("{} {}", r.verb, r.resource.clone().unwrap_or_default()))
            .collect();
        // Steady state is watches renewing (and at most a second connection through the
        // dashboard's port-forward, opened by the log follow's status polls).
        assert!(
            steady
                .iter()
                .all(|r| r.starts_with("watch ") || r == "create pods/portforward"),
            "{workers} workers, steady state: {steady:?}"
        );
        actions.send(Action::Quit).await.unwrap();
        session.await.unwrap().unwrap();
    });
    // The start's requests by kind (steady-state renewals depend on timing, so they are
    // checked above for their verb and here left out).
    let mut by_kind: std::collections::BTreeMap<String, usize> = Default::default();
    for r in fake.request_log() {
        if r.verb == "watch" {
            continue;
        }
        *by_kind
            .entry(format!("{} {}", r.verb, r.resource.unwrap_or_default()))
            .or_default() += 1;
    }
    by_kind.into_iter().collect()
}

/// The stop key's library call: another user's run is refused by the one owner check, a
/// RayJob `nrl run` did not launch is refused with what to do instead, and a Gym run of
/// one's own is cancelled (its Jobs deleted).
#[test]
fn stop_checks_the_owner_and_cancels_a_gym_run() {
    use nrl::k8s::{ConnectOptions, K8s};
    use nrl::top::actions::stop;
    use nrl::top::model::RunKind;

    let fake = FakeK8s::start();
    let bobs = fake.put(rayjob("bob-sft", "bob", 0));
    let mine = fake.put(rayjob("alice-grpo", "alice", 0));
    let job = |bench: &str| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": format!("gym-1-{bench}"), "namespace": "default",
                "labels": {"gym-job-id": "gym-1", "gym-benchmark": bench,
                    "app.kubernetes.io/managed-by": "nemo-gym", "nrl-k8s/owner": "alice"}},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "driver", "image": "python:3.12"}]}}}})
    };
    let gym = fake.put(job("gpqa"));
    fake.put(job("aime"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let k8s = K8s::connect(&ConnectOptions {
            kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
            ..ConnectOptions::default()
        })
        .await
        .unwrap();
        let err = stop(
            &k8s,
            "default",
            "bob-sft",
            RunKind::RayJob,
            Some(&bobs),
            "alice",
        )
        .await
        .err()
        .expect("another user's run is refused");
        assert_eq!(err.code, "nrl::cluster::owner", "{}", err.message);
        let err = stop(
            &k8s,
            "default",
            "alice-grpo",
            RunKind::RayJob,
            Some(&mine),
            "alice",
        )
        .await
        .err()
        .expect("a RayJob without a run id is refused");
        assert_eq!(err.code, "nrl::top::not_a_run", "{}", err.message);
        assert!(
            err.help
                .as_deref()
                .is_some_and(|h| h.contains("kubectl delete rayjob alice-grpo")),
            "{:?}",
            err.help
        );
        let done = stop(
            &k8s,
            "default",
            "gym-1",
            RunKind::GymRun,
            Some(&gym),
            "alice",
        )
        .await
        .unwrap();
        assert_eq!(done.title, "stop GymRun gym-1");
        assert!(done.body.contains("deleted 2 Jobs"), "{}", done.body);
    });
    assert!(
        fake.list("batch/v1", "Job", Some("default"), "gym-job-id=gym-1")
            .iter()
            .all(|j| j.pointer("/metadata/deletionTimestamp").is_some()),
        "the run's Jobs are being deleted"
    );
    assert!(
        fake.get("ray.io/v1", "RayJob", "default", "bob-sft")
            .is_some()
    );
}
