//! How `nrl check` grows with the cluster: the reference qwen3 pair with its worker group
//! scaled to 8, 64, 512 and 4,096 GPUs (4 per host, split into segments of 16 hosts,
//! so up to 64 worker groups), as a whole process (load, render, schema validation, the
//! doctor's offline rules, writing the manifests). Prints one line per size: GPUs, worker
//! groups, the manifests' size, the median and spread of 5 runs, peak RSS, and the cost
//! per GPU, so a step that is not linear shows.
//!
//! `cargo bench --profile release --bench check_scaling`; under `cargo test` it runs the
//! two smallest sizes once (a smoke test).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

fn reference() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference/nemo-rl")
}

/// The qwen3 infra with `hosts` worker hosts in segments of 16.
fn infra(dir: &Path, hosts: usize) -> PathBuf {
    let text = std::fs::read_to_string(
        reference().join("infra/nrl_k8s/examples/qwen3_30b_math_4n_4gpu.gb300.infra.yaml"),
    )
    .expect("reference infra");
    let replicas = format!(
        "replicas: {hosts}\n          minReplicas: {hosts}\n          maxReplicas: {hosts}"
    );
    let scaled = text
        .replacen(
            "replicas: 4\n          minReplicas: 4\n          maxReplicas: 4",
            &replicas,
            1,
        )
        .replacen(
            "segmentSize: 1",
            &format!("segmentSize: {}", hosts.min(16)),
            1,
        );
    assert_ne!(scaled, text, "the reference infra changed shape");
    let path = dir.join(format!("infra-{hosts}.yaml"));
    std::fs::write(&path, scaled).expect("write infra");
    path
}

/// Wall time and peak RSS (KiB) of one `nrl check`, and the manifests' size.
// The child is reaped by `wait4` (which also gives its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run(infra: &Path, hosts: usize, out: &Path) -> (f64, i64, u64) {
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_nrl"))
        .arg("check")
        .arg(
            reference()
                .join("examples/configs/recipes/llm/performance/grpo-qwen3-30ba3b-4n4g.yaml"),
        )
        .arg("--infra")
        .arg(infra)
        .arg(format!("cluster.num_nodes={hosts}"))
        .args(["--manifests-only", "-o"])
        .arg(out)
        .env("NRL_K8S_USER", "alice")
        .env("HOME", "/nonexistent/nrl-bench")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn nrl");
    let mut status = 0;
    // SAFETY: plain wait4 on our own child; `usage` is a zeroed, owned struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = started.elapsed().as_secs_f64() * 1e3;
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "nrl check failed for {hosts} hosts"
    );
    let size = std::fs::metadata(out).map_or(0, |m| m.len());
    (wall, usage.ru_maxrss, size)
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (gpus, runs): (&[usize], usize) = if full {
        (&[8, 64, 512, 4096], 5)
    } else {
        (&[8, 64], 1)
    };
    let dir = tempfile::tempdir().expect("tempdir");
    println!(
        "check_scaling: GPUs, worker groups, manifests, median [min..max] ms, peak RSS, per GPU"
    );
    for &n in gpus {
        let hosts = n / 4;
        let infra = infra(dir.path(), hosts);
        let out = dir.path().join(format!("manifests-{hosts}.yaml"));
        let mut walls = Vec::new();
        let mut rss = 0;
        let mut size = 0;
        for _ in 0..runs {
            let (wall, r, s) = run(&infra, hosts, &out);
            walls.push(wall);
            rss = rss.max(r);
            size = s;
        }
        walls.sort_by(f64::total_cmp);
        let median = walls[walls.len() / 2];
        let groups = hosts.div_ceil(16);
        println!(
            "  {n:>5} GPUs  {groups:>3} groups  {:>8.1} KiB  {median:>7.1} ms [{:.1}..{:.1}]  {:>6.1} MiB  {:>6.1} µs/GPU",
            size as f64 / 1024.0,
            walls[0],
            walls[walls.len() - 1],
            rss as f64 / 1024.0,
            median * 1e3 / n as f64,
        );
    }
}
