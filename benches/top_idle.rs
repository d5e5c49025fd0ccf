//! `nrl top` idling on a 64-worker run: the full screen in a pseudo-terminal, against the
//! fake API server (a RayJob with 64 running workers) and a stand-in dashboard serving
//! its driver log. After the screen has settled, nrl's CPU time (`/proc/<pid>/stat`) and
//! the API requests are counted over a window in which nothing changes. Target: under 2%
//! of one core; requests: watches renewing, nothing else.
//!
//! `cargo bench --profile release --bench top_idle` (a 60 s window); under `cargo test` a
//! 3 s smoke run.

// The fake API server, the pseudo-terminal driver and the stand-in dashboard of the
// integration tests, at the module paths their files use there.
#[path = "../tests/it/support/fake_k8s/mod.rs"]
mod fake_k8s;
#[allow(dead_code)]
#[path = "../tests/it/support/stub_ray.rs"]
mod stub_ray;
#[allow(dead_code)]
#[path = "../tests/it/support/terminal.rs"]
mod terminal;
mod support {
    pub(crate) use super::fake_k8s;
}

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use stub_ray::StubRay;
use support::fake_k8s::FakeK8s;
use terminal::Terminal;

const WORKERS: i64 = 64;

fn rayjob() -> serde_json::Value {
    let container = |c: &str| {
        json!({"spec": {"containers": [{"name": c, "image": "nvcr.io/nvidia/nemo-rl:v0.4.0",
            "resources": {"limits": {"nvidia.com/gpu": 8}}}]}})
    };
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "alice-grpo", "namespace": "default", "labels": {"nrl-k8s/owner": "alice"}},
        "spec": {"entrypoint": "python train.py", "submissionMode": "HTTPMode", "jobId": "alice-grpo-sub",
            "rayClusterSpec": {
                "headGroupSpec": {"rayStartParams": {}, "template": container("ray-head")},
                "workerGroupSpecs": [{"groupName": "gpu", "replicas": WORKERS, "minReplicas": WORKERS,
                    "maxReplicas": WORKERS, "rayStartParams": {}, "template": container("ray-worker")}]}}})
}

/// User + system CPU seconds of process `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command name (which may hold spaces): utime is the 12th, stime 13th.
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 =
        fields[11].parse::<f64>().expect("utime") + fields[12].parse::<f64>().expect("stime");
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / hz
}

fn main() {
    let window = if std::env::args().any(|a| a == "--bench") {
        Duration::from_secs(60)
    } else {
        Duration::from_secs(3)
    };
    let fake = FakeK8s::start();
    let ray = StubRay::start();
    ray.add_job("alice-grpo-sub", "RUNNING", 1_767_268_800_000);
    let mut log = String::new();
    for step in 1..=50 {
        log.push_str(&format!(
            "========================= Step {step}/100 =========================\n\n📊 Training Results:\n  • Loss: -0.01{step:02}\n  • Avg Reward: 0.5{step:02}\n\n⏱️  Timing:\n  • Total step time: 41.{step:02}s\n\n"
        ));
    }
    ray.set_log("alice-grpo-sub", &log);
    fake.forward_port("default", "*head*", 8265, ray.addr);
    fake.put(rayjob());
    let settled = fake.wait_until_blocking(Duration::from_secs(60), |f| {
        let pods = f.pods("default", "ray.io/cluster");
        pods.len() == WORKERS as usize + 1
            && pods
                .iter()
                .all(|p| p.pointer("/status/phase") == Some(&json!("Running")))
    });
    assert!(settled, "the 64 workers never ran");
    let home = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nrl"));
    cmd.arg("top")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(fake.env())
        .env("HOME", home.path())
        .env("NRL_USER", "alice")
        .env("NO_COLOR", "1");
    let mut t = Terminal::spawn(cmd);
    t.wait_for("alice-grpo");
    t.wait_for("step 50/100");
    // Let the first reads and the log follow settle.
    std::thread::sleep(Duration::from_secs(2));
    let pid = t.pid();
    let requests_before = fake.request_log().len();
    let (cpu_before, started) = (cpu_seconds(pid), Instant::now());
    std::thread::sleep(window);
    let (cpu, elapsed) = (
        cpu_seconds(pid) - cpu_before,
        started.elapsed().as_secs_f64(),
    );
    let idle: Vec<String> = fake.request_log()[requests_before..]
        .iter()
        .map(|r| format!("{} {}", r.verb, r.resource.clone().unwrap_or_default()))
        .collect();
    t.send(b"q");
    let status = t.wait();
    assert!(status.success(), "nrl top exited {status:?}");
    let watches = idle.iter().filter(|r| r.starts_with("watch ")).count();
    println!(
        "top_idle: {} workers, {elapsed:.0} s idle: nrl CPU {:.2} s = {:.2}% of one core; {} API requests ({watches} watch renewals, {} others)",
        WORKERS,
        cpu,
        100.0 * cpu / elapsed,
        idle.len(),
        idle.len() - watches,
    );
}
