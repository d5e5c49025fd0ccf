//! `nrl logs --collect DIR` against the fake API server (pods with current and previous
//! logs, events; a stand-in dashboard behind the head) and the real Ray head (its log
//! API: node list, file list, session log files); `nrl job logs` after the RayJob's
//! cluster is gone.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::context::{RunToEnd, TestContext};
use crate::support::fake_k8s::{FakeK8s, PodFate};
use crate::support::ray_head;
use crate::support::stub_ray::StubRay;

const RUN: &str = "grpo-20260101-120000-cd34";

fn rayjob(name: &str, workers: i64) -> Value {
    let container = |c: &str| json!({"spec": {"containers": [{"name": c, "image": "nvcr.io/nvidia/nemo-rl:v0.4.0"}]}});
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"entrypoint": "python train.py", "submissionMode": "HTTPMode",
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": container("ray-head")},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": workers, "minReplicas": workers,
                    "maxReplicas": workers, "rayStartParams": {}, "template": container("ray-worker")}]}}})
}

/// The record `nrl run` writes for a RayJob run, with a kept driver log.
fn record(ctx: &TestContext, rayjob: &str, driver_log: &str) {
    let runs = ctx.home().join(".cache/nrl/runs");
    let dir = runs.join(RUN);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("driver.log"), driver_log).unwrap();
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

/// A RayJob with 2 crash-looping workers, each with a current and a previous log, and a
/// running head whose dashboard is a stand-in (the job API only: no log API).
fn crashing_run() -> (FakeK8s, StubRay, TestContext) {
    let fake = FakeK8s::start();
    let stub = StubRay::start();
    fake.forward_port("default", "*head*", 8265, stub.addr);
    fake.set_pod_fate("ray.io/node-type=worker", PodFate::CrashLoopBackOff);
    fake.put(rayjob("rj", 2));
    let ok = fake.wait_until_blocking(Duration::from_secs(30), |f| {
        let workers = f.pods("default", "ray.io/node-type=worker");
        let heads = f.pods("default", "ray.io/node-type=head");
        heads.len() == 1
            && heads[0].pointer("/status/phase") == Some(&json!("Running"))
            && workers.len() == 2
            && workers.iter().all(|p| {
                p.pointer("/status/containerStatuses/0/state/waiting/reason")
                    == Some(&json!("CrashLoopBackOff"))
            })
    });
    assert!(ok, "pods never settled");
    let mut pods = fake.pods("default", "ray.io/node-type=head");
    pods.extend(fake.pods("default", "ray.io/node-type=worker"));
    for p in pods {
        let name = p["metadata"]["name"].as_str().unwrap().to_string();
        let c = p["spec"]["containers"][0]["name"]
            .as_str()
            .unwrap()
            .to_string();
        fake.append_pod_log("default", &name, Some(&c), &format!("{name}: current line"));
        if c == "ray-worker" {
            fake.append_previous_log(
                "default",
                &name,
                &c,
                &[
                    "starting ray worker",
                    "ModuleNotFoundError: No module named 'nemo_rl'",
                ],
            );
        }
    }
    // What the kubelet reports about a crash-looping container (kubelet's
    // `BackOff` event, reason and message as in pkg/kubelet/events), and an event about
    // a pod of someone else.
    let worker = fake.pods("default", "ray.io/node-type=worker")[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    for (name, pod) in [("e1", worker.as_str()), ("e2", "someone-else")] {
        fake.put(json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": pod, "namespace": "default"},
            "reason": "BackOff", "type": "Warning", "count": 3,
            "lastTimestamp": "2026-01-01T12:05:00Z",
            "message": format!("Back-off restarting failed container ray-worker in pod {pod}")}));
    }
    let ctx = TestContext::with_fake(&fake).timeout(Duration::from_secs(120));
    record(&ctx, "rj", "step 1/100\nstep 2/100\n");
    (fake, stub, ctx)
}

/// Files under `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

fn settings(ctx: &TestContext, out: &Path) -> insta::Settings {
    let mut s = ctx.snapshot_settings();
    s.add_filter(&regex::escape(&out.display().to_string()), "[OUT]");
    // KubeRay's random cluster and pod suffixes.
    s.add_filter(r"rj-[a-z0-9]{5}", "rj-[RAND]");
    s.add_filter(r"worker-[a-z0-9]{5}", "worker-[RAND]");
    s.add_filter(r"head-[a-z0-9]{5}", "head-[RAND]");
    // Byte counts of files whose content carries those names or the time.
    s.add_filter(r"\| \d+ \|", "| [N] |");
    s.add_filter(r"http://127\.0\.0\.1:\d+", "http://127.0.0.1:[PORT]");
    s
}

#[test]
fn collect_a_run_gathers_pod_logs_previous_logs_events_and_an_index() {
    let (fake, _stub, ctx) = crashing_run();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("postmortem");
    fake.clear_request_log();
    let started = Instant::now();
    let ran = ctx
        .nrl()
        .args(["logs", "--collect"])
        .arg(&out)
        .arg(RUN)
        .run();
    let took = started.elapsed();
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let got = files(&out);
    let pods: Vec<&String> = got.iter().filter(|f| f.starts_with("pods/")).collect();
    // 3 current logs (head, 2 workers) and the 2 workers' previous ones.
    assert_eq!(pods.len(), 5, "{got:#?}");
    assert_eq!(
        pods.iter().filter(|f| f.ends_with(".previous.log")).count(),
        2,
        "{got:#?}"
    );
    for f in ["index.md", "driver.log", "events.txt", "objects.json"] {
        assert!(got.iter().any(|g| g == f), "{f} in {got:#?}");
    }
    let previous = pods.iter().find(|f| f.ends_with(".previous.log")).unwrap();
    let text = std::fs::read_to_string(out.join(previous)).unwrap();
    assert!(text.contains("ModuleNotFoundError"), "{text}");
    // The live dashboard's log comes first (the stand-in's: `log of <job id>`).
    let driver = std::fs::read_to_string(out.join("driver.log")).unwrap();
    assert!(driver.starts_with("log of rj-"), "{driver}");
    // The kubelet's BackOff event about a worker is kept; one about another pod is not.
    let events = std::fs::read_to_string(out.join("events.txt")).unwrap();
    assert!(
        events.contains("Back-off restarting failed container ray-worker"),
        "{events}"
    );
    assert!(!events.contains("someone-else"), "{events}");
    // One log request per container, plus one per restarted container's previous run.
    let logs = fake.requests(|r| r.path.ends_with("/log"));
    assert_eq!(logs.len(), 5, "{logs:#?}");
    let lists = fake.requests(|r| r.verb == "list");
    eprintln!(
        "collect: {} API requests ({} lists, {} logs) in {took:?}",
        fake.request_log().len(),
        lists.len(),
        logs.len()
    );
    assert!(ran.stderr.contains("collected 9 files"), "{}", ran.stderr);
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    let _s = settings(&ctx, &out).bind_to_scope();
    insta::assert_snapshot!("logs_collect_index", index);
}

#[test]
fn collect_tar_writes_one_archive() {
    let (_fake, _stub, ctx) = crashing_run();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("pm");
    let ran = ctx
        .nrl()
        .args(["logs", "--tar", "--collect"])
        .arg(&out)
        .arg(RUN)
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let archive = tmp.path().join("pm.tar.gz");
    assert!(
        ran.stderr.contains(&archive.display().to_string()),
        "{}",
        ran.stderr
    );
    // Only the archive is left.
    let left: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["pm.tar.gz"]);
    let listed = std::process::Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let names = String::from_utf8_lossy(&listed.stdout).into_owned();
    for want in [
        "pm/index.md",
        "pm/driver.log",
        "pm/events.txt",
        "pm/objects.json",
    ] {
        assert!(names.lines().any(|l| l == want), "{want} in {names}");
    }
    assert_eq!(
        names
            .lines()
            .filter(|l| l.ends_with(".previous.log"))
            .count(),
        2,
        "{names}"
    );
    // The archive's driver log is the file itself.
    let cat = std::process::Command::new("tar")
        .arg("-xzOf")
        .arg(&archive)
        .arg("pm/driver.log")
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&cat.stdout).starts_with("log of rj-"),
        "{cat:?}"
    );
}

#[test]
fn collect_refuses_a_directory_that_is_not_empty() {
    let fake = FakeK8s::start();
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", "x\n");
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("keep.txt"), "mine").unwrap();
    let ran = ctx
        .nrl()
        .args(["logs", "--collect"])
        .arg(tmp.path())
        .arg(RUN)
        .run();
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("nrl::collect::not_empty"),
        "{}",
        ran.stderr
    );
}

/// After the RayJob and its cluster are gone, `nrl job logs` shows the copy kept in the
/// run directory and says so on stderr; `--collect` still writes it, and says the pods
/// and the Ray logs went with the cluster.
#[test]
fn job_logs_after_the_cluster_is_gone_use_the_kept_copy_and_say_so() {
    let fake = FakeK8s::start();
    let ctx = TestContext::with_fake(&fake);
    record(&ctx, "rj", "step 1/100\nfinal loss 0.1\n");
    let ran = ctx.nrl().args(["job", "logs", RUN]).run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.stdout, "step 1/100\nfinal loss 0.1\n");
    assert!(
        ran.stderr.contains("[logs] from the copy kept in")
            && ran.stderr.contains("RayJob rj no longer exists"),
        "{}",
        ran.stderr
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("c");
    let ran = ctx
        .nrl()
        .args(["logs", "--collect"])
        .arg(&out)
        .arg(RUN)
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("driver.log")).unwrap(),
        "step 1/100\nfinal loss 0.1\n"
    );
}

/// The real Ray head's log API: its nodes, their files, and a session log fetched whole
/// and as a capped tail.
#[test]
fn the_ray_client_lists_nodes_and_fetches_session_logs() {
    let Some(head) = ray_head::shared() else {
        return;
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = nrl::ray::RayClient::new(head.address(), Default::default()).unwrap();
        let nodes = client.list_nodes().await.unwrap();
        let node = nodes.iter().find(|n| n.is_head_node).expect("a head node");
        assert_eq!(node.state, "ALIVE");
        assert_eq!(node.node_ip, "127.0.0.1");
        let files = client.list_node_logs(&node.node_id).await.unwrap();
        assert!(files.iter().any(|f| f == "gcs_server.out"), "{files:?}");
        let whole = client
            .node_log_file(&node.node_id, "gcs_server.out", 1_000_000, 64 << 20)
            .await
            .unwrap();
        assert!(!whole.truncated && !whole.bytes.is_empty());
        let tail = client
            .node_log_file(&node.node_id, "gcs_server.out", 1_000_000, 100)
            .await
            .unwrap();
        assert!(tail.truncated && tail.bytes.len() <= 100);
        assert!(whole.bytes.ends_with(&tail.bytes));
        let missing = client
            .node_log_file(&node.node_id, "no-such-file.log", 10, 100)
            .await;
        // Ray 2.60 answers a file that is not there with an empty 200.
        assert!(
            missing.as_ref().map_or(true, |f| f.bytes.is_empty()),
            "{missing:?}"
        );
    });
}

/// `nrl logs --collect` of a run on a Ray dashboard: the driver log from the dashboard
/// and every session log of the head node through the log API, in `index.md`.
#[test]
fn collect_reads_ray_session_logs_through_the_real_dashboard() {
    let Some(head) = ray_head::shared() else {
        return;
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let id = format!("collect-{}", fastrand::u32(..));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = nrl::ray::RayClient::new(head.address(), Default::default()).unwrap();
        let mut req = nrl::ray::SubmitRequest::new("echo collected-driver-line");
        req.submission_id = Some(id.clone());
        client.submit(&req).await.unwrap();
        nrl::ray::wait_terminal(&client, &id, Duration::from_secs(60))
            .await
            .unwrap();
    });
    let ctx = TestContext::new().timeout(Duration::from_secs(120));
    let runs = ctx.home().join(".cache/nrl/runs");
    std::fs::create_dir_all(&runs).unwrap();
    let rec = json!({"id": id, "kind": "ray", "created_at": "2026-01-01T12:00:00Z",
        "ray": {"address": head.address(), "submission_id": id}, "status": "succeeded"});
    std::fs::write(runs.join(format!("{id}.json")), rec.to_string()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("ray-run");
    let started = Instant::now();
    let ran = ctx
        .nrl()
        .args(["logs", "--collect"])
        .arg(&out)
        .arg(&id)
        .args(["--max-file-mib", "1"])
        .run();
    eprintln!("collect from the real head: {:?}", started.elapsed());
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let driver = std::fs::read_to_string(out.join("driver.log")).unwrap();
    assert!(driver.contains("collected-driver-line"), "{driver}");
    let got = files(&out);
    let gcs = got
        .iter()
        .find(|f| f.starts_with("ray/dashboard/head-127.0.0.1-") && f.ends_with("/gcs_server.out"))
        .unwrap_or_else(|| panic!("gcs_server.out in {got:#?}"));
    assert!(std::fs::metadata(out.join(gcs)).unwrap().len() > 0);
    // Ray keeps the job's driver log among the session logs too.
    assert!(
        got.iter()
            .any(|f| f.ends_with(&format!("job-driver-{id}.log"))),
        "{got:#?}"
    );
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    assert!(
        index.contains("`GET /api/v0/logs/file`") && index.contains("file gcs_server.out"),
        "{index}"
    );
    assert!(index.contains("| driver.log |"), "{index}");
}

/// `diagnose::collect(id, dir, #{tar})` is the command's library call: the same files,
/// the report as data, the directory confined to the working directory.
#[test]
fn the_script_built_in_collects_the_same_files() {
    let (_fake, _stub, ctx) = crashing_run();
    let work = tempfile::tempdir().unwrap();
    let ctx = ctx.cwd(work.path());
    let script = work.path().join("pm.rhai");
    std::fs::write(
        &script,
        format!(
            r#"let c = diagnose::collect("{RUN}", "pm");
               print(`${{c.files.len()}} ${{c.skipped.len()}}`);
               print(c.files.filter(|f| f.path.ends_with(".previous.log")).len());
               let t = diagnose::collect("{RUN}", "pm2", #{{ tar: true, max_file_mib: 1 }});
               print(t.archive.ends_with("pm2.tar.gz"));
               try {{ diagnose::collect("{RUN}", "../outside"); }} catch (e) {{ print("refused"); }}"#
        ),
    )
    .unwrap();
    let ran = ctx.nrl().arg("script").arg(&script).run();
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    assert_eq!(ran.stdout, "9 1\n2\ntrue\nrefused\n", "{}", ran.stderr);
    assert!(work.path().join("pm/index.md").is_file());
    assert!(work.path().join("pm2.tar.gz").is_file());
    assert!(!work.path().parent().unwrap().join("outside").exists());
}

/// With a recipe, the RayJob it renders is found by name (`${user:}-quickstart`) and its
/// pods are collected, as for a run id; a role the recipe does not have is refused.
#[test]
fn collect_a_recipe_finds_what_it_renders_by_name() {
    let fake = FakeK8s::start();
    fake.set_pod_fate("ray.io/node-type=worker", PodFate::CrashLoopBackOff);
    fake.put(rayjob("alice-quickstart", 1));
    let ok = fake.wait_until_blocking(Duration::from_secs(30), |f| {
        let heads = f.pods("default", "ray.io/node-type=head");
        let workers = f.pods("default", "ray.io/node-type=worker");
        heads.len() == 1
            && heads[0].pointer("/status/phase") == Some(&json!("Running"))
            && workers.len() == 1
            && workers[0].pointer("/status/containerStatuses/0/state/waiting/reason")
                == Some(&json!("CrashLoopBackOff"))
    });
    assert!(ok, "pods never settled");
    let ctx = TestContext::with_fake(&fake).timeout(Duration::from_secs(120));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("qs-logs");
    let recipe = [
        "examples/quickstart/recipe.yaml",
        "--infra",
        "examples/quickstart/infra.yaml",
    ];
    let ran = ctx
        .nrl()
        .args(["logs", "--collect"])
        .arg(&out)
        .args(recipe)
        .args(["--role", "training"])
        .run();
    assert_eq!(ran.code, Some(0), "{}\n{}", ran.stdout, ran.stderr);
    let got = files(&out);
    let pods: Vec<&String> = got.iter().filter(|f| f.starts_with("pods/")).collect();
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    assert_eq!(pods.len(), 2, "head and worker: {got:#?}\n{index}");
    assert!(
        pods.iter().all(|p| p.contains("alice-quickstart")),
        "{got:#?}"
    );
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    assert!(index.contains("alice-quickstart"), "{index}");

    let ran = ctx
        .nrl()
        .args(["logs", "--collect"])
        .arg(tmp.path().join("gym-logs"))
        .args(recipe)
        .args(["--role", "gym"])
        .run();
    assert_eq!(ran.code, Some(2), "{}\n{}", ran.stdout, ran.stderr);
}
