//! `nrl diagnose RUN_ID` against the fake API server: a RayJob run whose pods are
//! scheduled (or not) and fail the way the scheduler and kubelet report it
//! (kuberay-and-apiserver-semantics §6), one test per finding code that needs a cluster,
//! a snapshot of the report, and the request count of a 64-worker run.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::context::TestContext;
use crate::support::fake_k8s::{FakeK8s, PodFate};

/// The brief's example, in the older `{key: value}` taint form (seen on v1.33 clusters).
const GPU_AND_TAINT: &str = "0/12 nodes are available: 4 Insufficient nvidia.com/gpu, 8 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/12 nodes are available: 12 No preemption victims found for incoming pod.";

const RUN: &str = "grpo-20260101-120000-ab12";

fn rayjob(name: &str, workers: i64) -> Value {
    let container = |c: &str, limits: Value| {
        json!({"spec": {"containers": [{"name": c, "image": "nvcr.io/nvidia/nemo-rl:v0.4.0",
            "resources": {"limits": limits}}]}})
    };
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"entrypoint": "python train.py", "submissionMode": "HTTPMode",
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": container("ray-head", json!({"memory": "16Gi"}))},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers, "minReplicas": workers,
                    "maxReplicas": workers, "rayStartParams": {},
                    "template": container("ray-worker", json!({"nvidia.com/gpu": 8, "memory": "64Gi"}))}]}}})
}

fn node(name: &str, gpus: i64, tainted: bool) -> Value {
    let mut n = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name,
            "labels": {"kubernetes.io/hostname": name}},
        "spec": {}, "status": {"allocatable": {"cpu": "96", "memory": "1024Gi", "nvidia.com/gpu": gpus.to_string()}}});
    if tainted {
        n["spec"]["taints"] =
            json!([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]);
    }
    n
}

/// 12 nodes: 4 with 4 GPUs, 8 with 8 GPUs behind a taint the pods do not tolerate.
fn twelve_nodes(fake: &FakeK8s) {
    for i in 0..4 {
        fake.put(node(&format!("small-{i}"), 4, false));
    }
    for i in 0..8 {
        fake.put(node(&format!("gpu-{i}"), 8, true));
    }
}

/// The record `nrl run` would have written for a RayJob run, with a kept driver log.
fn record(ctx: &TestContext, rayjob: &str, driver_log: Option<&str>) {
    let runs = ctx.home().join(".cache/nrl/runs");
    let dir = runs.join(RUN);
    std::fs::create_dir_all(&dir).unwrap();
    if let Some(log) = driver_log {
        std::fs::write(dir.join("driver.log"), log).unwrap();
    }
    let rec = json!({"id": RUN, "kind": "rayjob", "created_at": "2026-01-01T12:00:00Z",
        "context": "fake", "namespace": "default", "cluster": rayjob,
        "run_dir": dir.display().to_string(),
        "k8s": {"rayjob": rayjob, "submission_id": RUN}});
    std::fs::write(
        runs.join(format!("{RUN}.json")),
        serde_json::to_string(&rec).unwrap(),
    )
    .unwrap();
}

/// Start a RayJob and wait until the simulated kubelet gave its worker pods their fate.
fn launch(fake: &FakeK8s, name: &str, workers: usize, settled: impl Fn(&Value) -> bool) {
    fake.put(rayjob(name, workers as i64));
    let ok = fake.wait_until_blocking(Duration::from_secs(30), |f| {
        let pods = f.pods("default", "ray.io/node-type=worker");
        // The head runs (its fate is not under test), and KubeRay has seen it ready.
        let head_ready = f
            .list("ray.io/v1", "RayCluster", Some("default"), "")
            .iter()
            .any(|rc| {
                rc.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "HeadPodReady" && c["status"] == "True")
                    })
            });
        head_ready && pods.len() == workers && pods.iter().all(&settled)
    });
    assert!(ok, "worker pods never settled");
}

fn waiting(reason: &'static str) -> impl Fn(&Value) -> bool {
    move |p| p.pointer("/status/containerStatuses/0/state/waiting/reason") == Some(&json!(reason))
}

fn unschedulable(p: &Value) -> bool {
    p.pointer("/status/conditions/0/reason") == Some(&json!("Unschedulable"))
}

/// `nrl diagnose RUN` with lines not wrapped (so assertions can look for whole phrases).
fn diagnose(ctx: &TestContext, extra: &[&str]) -> (i32, String, String) {
    let out = ctx
        .nrl()
        .env("COLUMNS", "2000")
        .args(["diagnose", RUN])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn codes(stdout: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_string())
        .collect()
}

fn settings(ctx: &TestContext) -> insta::Settings {
    let mut s = ctx.snapshot_settings();
    // KubeRay's random cluster and pod suffixes.
    s.add_filter(r"rj-[a-z0-9]{5}", "rj-[RAND]");
    s.add_filter(r"worker-[a-z0-9]{5}", "worker-[RAND]");
    s.add_filter(r"head-[a-z0-9]{5}", "head-[RAND]");
    s
}

#[test]
fn pending_workers_name_the_missing_gpus_and_the_taint_with_what_the_nodes_have() {
    let fake = FakeK8s::start();
    twelve_nodes(&fake);
    fake.set_pod_fate(
        "ray.io/node-type=worker",
        PodFate::FailedScheduling(GPU_AND_TAINT.into()),
    );
    launch(&fake, "rj", 2, unschedulable);
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some("step 1/100\n"));
    let out = ctx.nrl().args(["diagnose", RUN]).output().unwrap();
    let (code, out) = (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    );
    assert_eq!(code, Some(1), "{out}");
    let _s = settings(&ctx).bind_to_scope();
    insta::assert_snapshot!("diagnose_pending_gpus_and_taint", out);
    let (_, json, _) = diagnose(&ctx, &["-o", "json"]);
    assert_eq!(
        codes(&json),
        [
            "nrl::diagnose::raycluster_not_ready",
            "nrl::diagnose::insufficient_resources",
            "nrl::diagnose::untolerated_taint",
        ]
    );
}

#[test]
fn the_newest_taint_form_is_named_from_the_nodes() {
    let fake = FakeK8s::start();
    twelve_nodes(&fake);
    fake.set_pod_fate(
        "ray.io/node-type=worker",
        PodFate::FailedScheduling("0/12 nodes are available: 4 Insufficient nvidia.com/gpu, 8 node(s) had untolerated taint(s). no new claims to deallocate, preemption: 0/12 nodes are available: 12 No preemption victims found for incoming pod.".into()),
    );
    launch(&fake, "rj", 1, unschedulable);
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some(""));
    let (code, out, _) = diagnose(&ctx, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("nvidia.com/gpu=present:NoSchedule (8 nodes)"),
        "{out}"
    );
    assert!(
        out.contains("key: nvidia.com/gpu, operator: Exists"),
        "{out}"
    );
}

#[test]
fn nodes_that_may_not_be_listed_are_a_note_not_a_failure() {
    let fake = FakeK8s::start();
    twelve_nodes(&fake);
    fake.deny("list", "nodes", "*");
    fake.set_pod_fate(
        "ray.io/node-type=worker",
        PodFate::FailedScheduling(GPU_AND_TAINT.into()),
    );
    launch(&fake, "rj", 1, unschedulable);
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", None);
    let (code, out, err) = diagnose(&ctx, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("nrl::diagnose::insufficient_resources"),
        "{out}"
    );
    assert!(out.contains("you may not list nodes (403)"), "{out}");
    assert!(out.contains("driver log: not reachable"), "{out}");
}

#[test]
fn image_pull_backoff_names_the_image_and_the_registry_message() {
    let fake = FakeK8s::start();
    fake.set_pod_fate("ray.io/node-type=worker", PodFate::ImagePullBackOff);
    launch(&fake, "rj", 2, waiting("ImagePullBackOff"));
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some(""));
    let (code, out, _) = diagnose(&ctx, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nrl::diagnose::image_pull"), "{out}");
    assert!(
        out.contains("image nvcr.io/nvidia/nemo-rl:v0.4.0 cannot be pulled (ImagePullBackOff)"),
        "{out}"
    );
    assert!(
        out.contains("Failed to pull image \"nvcr.io/nvidia/nemo-rl:v0.4.0\": not found"),
        "{out}"
    );
    // One finding for both workers.
    assert_eq!(out.matches("nrl::diagnose::image_pull").count(), 1, "{out}");
    assert!(out.contains("2 pods: "), "{out}");
}

#[test]
fn crash_loops_show_the_last_lines_of_the_previous_container() {
    let fake = FakeK8s::start();
    fake.set_pod_fate("ray.io/node-type=worker", PodFate::CrashLoopBackOff);
    launch(&fake, "rj", 2, waiting("CrashLoopBackOff"));
    for p in fake.pods("default", "ray.io/node-type=worker") {
        let name = p["metadata"]["name"].as_str().unwrap();
        fake.append_previous_log(
            "default",
            name,
            "ray-worker",
            &[
                "starting ray worker",
                "ModuleNotFoundError: No module named 'nemo_rl'",
            ],
        );
    }
    fake.clear_request_log();
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some(""));
    let (code, out, _) = diagnose(&ctx, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nrl::diagnose::crash_loop"), "{out}");
    assert!(
        out.contains("ModuleNotFoundError: No module named 'nemo_rl'"),
        "{out}"
    );
    assert!(out.contains("exit code 1"), "{out}");
    // One previous-log call for the group, not one per pod.
    let logs = fake.requests(|r| r.path.ends_with("/log"));
    assert_eq!(logs.len(), 1, "{logs:#?}");
    assert_eq!(logs[0].query_param("previous").as_deref(), Some("true"));
}

#[test]
fn oom_kills_name_the_memory_limit() {
    let fake = FakeK8s::start();
    fake.set_pod_fate("ray.io/node-type=worker", PodFate::OomKilled);
    launch(&fake, "rj", 1, waiting("CrashLoopBackOff"));
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some(""));
    let (code, out, _) = diagnose(&ctx, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("container ray-worker was OOMKilled (exit 137) at its memory limit 64Gi"),
        "{out}"
    );
    assert!(!out.contains("nrl::diagnose::crash_loop"), "{out}");
}

#[test]
fn evicted_pods_carry_the_kubelet_message() {
    let fake = FakeK8s::start();
    let msg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container ray-worker was using 70Gi, request is 0, has larger consumption of memory.";
    fake.set_pod_fate("ray.io/node-type=worker", PodFate::Evicted(msg.into()));
    launch(&fake, "rj", 1, |p| {
        p.pointer("/status/reason") == Some(&json!("Evicted"))
    });
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some(""));
    let (code, out, _) = diagnose(&ctx, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nrl::diagnose::evicted"), "{out}");
    assert!(
        out.contains("The node was low on resource: memory"),
        "{out}"
    );
}

#[test]
fn a_rayjob_kuberay_refused_says_validation_failed_with_its_message() {
    let fake = FakeK8s::start();
    let mut rj = rayjob("rj", 1);
    rj["spec"]["suspend"] = json!(true);
    fake.put(rj);
    assert!(fake.wait_until_blocking(Duration::from_secs(30), |f| {
        f.field(
            "ray.io/v1",
            "RayJob",
            "default",
            "rj",
            "status.jobDeploymentStatus",
        ) == Some(json!("ValidationFailed"))
    }));
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some(""));
    let (code, out, _) = diagnose(&ctx, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("nrl::diagnose::rayjob_validation_failed"),
        "{out}"
    );
    assert!(
        out.contains("not allowed to be suspended"),
        "KubeRay's message: {out}"
    );
    assert!(
        out.contains("event InvalidRayJobSpec on rayjob rj"),
        "{out}"
    );
}

#[test]
fn a_missing_rayjob_is_reported() {
    let fake = FakeK8s::start();
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "gone", None);
    let (code, out, _) = diagnose(&ctx, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("nrl::diagnose::rayjob_not_found"), "{out}");
}

#[test]
fn a_healthy_run_exits_0_and_reads_the_kept_driver_log() {
    let fake = FakeK8s::start();
    fake.set_rayjob_script(
        "rj",
        crate::support::fake_k8s::RayJobScript::succeeds().running_for(Duration::from_secs(600)),
    );
    fake.put(rayjob("rj", 1));
    assert!(fake.wait_until_blocking(Duration::from_secs(30), |f| {
        f.field(
            "ray.io/v1",
            "RayJob",
            "default",
            "rj",
            "status.jobDeploymentStatus",
        ) == Some(json!("Running"))
    }));
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some("step 1/100\n"));
    let (code, out, err) = diagnose(&ctx, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("diagnose: no problems found"), "{out}");
    assert!(out.contains("driver log: the copy kept in"), "{out}");
}

fn requests_and_time(workers: usize) -> (usize, Duration, Vec<String>) {
    let fake = FakeK8s::start();
    twelve_nodes(&fake);
    fake.set_pod_fate(
        "ray.io/node-type=worker",
        PodFate::FailedScheduling(GPU_AND_TAINT.into()),
    );
    launch(&fake, "rj", workers, unschedulable);
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some("step 1/100\n"));
    fake.clear_request_log();
    let started = Instant::now();
    let (code, out, _) = diagnose(&ctx, &[]);
    let took = started.elapsed();
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("{workers} pods: ")), "{out}");
    let reqs: Vec<String> = fake
        .request_log()
        .iter()
        .map(|r| format!("{} {}", r.verb, r.path))
        .collect();
    (reqs.len(), took, reqs)
}

/// One diagnose reads a constant number of things: the RayJob, the RayCluster, one pod
/// list, one event list, one node list — not one call per worker.
#[test]
fn a_64_worker_run_costs_as_many_requests_as_a_2_worker_one() {
    let (small, _, small_reqs) = requests_and_time(2);
    let (big, took, big_reqs) = requests_and_time(64);
    assert_eq!(small, big, "{small_reqs:#?}\n{big_reqs:#?}");
    assert!(big <= 6, "{big_reqs:#?}");
    eprintln!(
        "diagnose of a 64-worker run: {big} API requests, {took:?} wall time (the nrl process)"
    );
    eprintln!("{big_reqs:#?}");
}

/// `diagnose::run(id)` is the command's library call, as data.
#[test]
fn the_script_built_in_returns_the_same_findings_as_data() {
    let fake = FakeK8s::start();
    fake.set_pod_fate("ray.io/node-type=worker", PodFate::OomKilled);
    launch(&fake, "rj", 1, waiting("CrashLoopBackOff"));
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some(""));
    let script = ctx.home().join("why.rhai");
    std::fs::write(
        &script,
        format!(
            r#"let f = diagnose::run("{RUN}");
               for x in f {{ print(`${{x.code}} ${{x.severity}}`); }}
               print(f.filter(|x| x.code == "nrl::diagnose::oom_killed")[0].message.contains("64Gi"));"#
        ),
    )
    .unwrap();
    let out = ctx.nrl().arg("script").arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        "nrl::diagnose::raycluster_not_ready error\nnrl::diagnose::oom_killed error\ntrue\n"
    );
    let (_, json, _) = diagnose(&ctx, &["-o", "json"]);
    assert_eq!(
        codes(&json),
        [
            "nrl::diagnose::raycluster_not_ready",
            "nrl::diagnose::oom_killed"
        ]
    );
}

/// Recipe mode looks up the RayJob the recipe renders (`${user:}-quickstart`) by name;
/// `cfg.diagnose()` is the same call from a script.
#[test]
fn a_recipe_finds_its_rayjob_by_name_from_the_command_and_a_script() {
    let fake = FakeK8s::start();
    fake.set_pod_fate("ray.io/node-type=worker", PodFate::ImagePullBackOff);
    launch(&fake, "alice-quickstart", 1, waiting("ImagePullBackOff"));
    let ctx = TestContext::with_fake(&fake);
    let args = [
        "diagnose",
        "examples/quickstart/recipe.yaml",
        "--infra",
        "examples/quickstart/infra.yaml",
        "-o",
        "json",
    ];
    let out = ctx.nrl().args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(
        codes(&stdout),
        [
            "nrl::diagnose::raycluster_not_ready",
            "nrl::diagnose::image_pull"
        ]
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["subject"], "recipe examples/quickstart/recipe.yaml");
    let script = ctx.home().join("why.rhai");
    std::fs::write(
        &script,
        r#"let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml"});
           for x in cfg.diagnose() { print(x.code); }"#,
    )
    .unwrap();
    let out = ctx.nrl().arg("script").arg(&script).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "nrl::diagnose::raycluster_not_ready\nnrl::diagnose::image_pull\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Nothing of the recipe on the cluster: said so, exit 1.
    let empty = FakeK8s::start();
    let ctx = TestContext::with_fake(&empty);
    let out = ctx.nrl().args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(codes(&stdout), ["nrl::diagnose::rayjob_not_found"]);
}

/// A running job whose kept driver log holds a CUDA OOM and a W&B URL: the finding, with
/// the numbers from PyTorch's message, and the URL and last progress as notes.
#[test]
fn the_kept_driver_log_is_read_for_its_findings_and_facts() {
    let fake = FakeK8s::start();
    fake.set_rayjob_script(
        "rj",
        crate::support::fake_k8s::RayJobScript::succeeds().running_for(Duration::from_secs(600)),
    );
    fake.put(rayjob("rj", 1));
    assert!(fake.wait_until_blocking(Duration::from_secs(30), |f| {
        f.field("ray.io/v1", "RayJob", "default", "rj", "status.jobStatus")
            == Some(json!("RUNNING"))
    }));
    let ctx = TestContext::with_fake(&fake);
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/diagnose/logs");
    let log = ["grpo_traceback.log", "cuda_oom.log"]
        .iter()
        .map(|f| std::fs::read_to_string(fixtures.join(f)).expect("fixture"))
        .collect::<String>();
    record(&ctx, "rj", Some(&log));
    let (code, out, err) = diagnose(&ctx, &[]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("nrl::diagnose::cuda_oom"), "{out}");
    assert!(
        out.contains(
            "CUDA ran out of memory allocating 3.91 GiB (GPU 0: 2.07 GiB free of 79.19 GiB)"
        ),
        "{out}"
    );
    assert!(
        out.contains("W&B run: https://wandb.ai/nvidia-rl/grpo-math/runs/3kq9x2mz"),
        "{out}"
    );
    assert!(
        out.contains("last progress: line 23: Processed prompts: 100%|██████████| 64/64"),
        "{out}"
    );
    // The traceback that is the OOM's is not reported twice; the earlier, separate one is
    // not the last traceback of the log.
    let (_, json_out, _) = diagnose(&ctx, &["-o", "json"]);
    assert_eq!(codes(&json_out), ["nrl::diagnose::cuda_oom"]);
}

/// The postmortem playbook on a real failure: the newest failed run from `run::list`, its
/// findings from `diagnose::run` (as `nrl diagnose` prints them) and its logs gathered
/// with `diagnose::collect`, exit 1 because something is wrong.
#[test]
fn the_postmortem_playbook_diagnoses_and_collects_the_last_failed_run() {
    let fake = FakeK8s::start();
    fake.set_pod_fate("ray.io/node-type=worker", PodFate::OomKilled);
    launch(&fake, "rj", 1, waiting("CrashLoopBackOff"));
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", Some(""));
    // The record says failed, so `--last-failed` picks it.
    let path = ctx.home().join(format!(".cache/nrl/runs/{RUN}.json"));
    let mut rec: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    rec["status"] = "failed".into();
    std::fs::write(&path, rec.to_string()).unwrap();
    let work = tempfile::tempdir().unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/postmortem.rhai");
    let out = ctx
        .nrl()
        .current_dir(work.path())
        .arg("script")
        .arg(&script)
        .args(["--", "--last-failed", "--collect", "pm"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.starts_with(&format!("run {RUN}\n")), "{stdout}");
    assert!(stdout.contains("nrl::diagnose::oom_killed"), "{stdout}");
    assert!(stdout.contains("see index.md"), "{stdout}");
    let index = std::fs::read_to_string(work.path().join("pm/index.md")).unwrap();
    assert!(index.contains("pods/"), "{index}");
}
