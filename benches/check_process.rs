//! `nrl check --manifests-only` on the reference qwen3 30B pair as a whole process: the
//! real binary as a child, so start-up, loading, rendering, validation, the doctor's
//! offline rules and writing the stream all count. Targets: a median under 5 ms wall,
//! peak RSS under 16 MiB, for a release build:
//! `cargo bench --profile release --bench check_process` (the dev profile's binary is
//! unoptimised; its numbers are not the target's).
//!
//! Before the measurements it prints one run's peak RSS and page faults, and, when
//! `NRL_REF_BIN` names an installed `nrl-k8s` (the Python reference), both tools' times
//! on the same pair side by side and the ratio.
//!
//! Measured (the two release binaries side by side: 300 interleaved runs each of this
//! bench's command, wall time and `wait4` peak RSS, on the 2-core VM with two fuzzers
//! running):
//! - before (non-PIE link, hot-text linker script, no release profile): 36.5 MB binary,
//!   min 3.72 / median 3.92 ms, peak RSS 10.1 MiB.
//! - after (PIE, `lto`, one codegen unit, stripped; issue 16 item 8): 20.2 MB binary,
//!   min 3.54 / median 3.74 ms, peak RSS 11.7 MiB. The targets are now a median of at
//!   most 5 ms and a peak RSS of at most 16 MiB: the relocations a PIE applies at start
//!   cost about 1.5 MiB of RSS and no measurable time, and keep ASLR for a process that
//!   holds cluster and Ray tokens.
//!
//! An earlier round (regex scanners, fewer copies while loading, plain words emitted
//! without analysis, no frees before exit, pre-compiled schemas) brought the whole run
//! from ~17.6M to ~12.4M instructions.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};

fn args() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference/nemo-rl");
    vec![
        "check".into(),
        root.join(
            "examples/configs/recipes/llm/performance/grpo-qwen3-30ba3b-4n4g-async-1off.yaml",
        )
        .display()
        .to_string(),
        "--infra".into(),
        root.join("infra/nrl_k8s/examples/qwen3_30b_math_4n_4gpu.gb300.infra.yaml")
            .display()
            .to_string(),
        "--manifests-only".into(),
    ]
}

fn command(args: &[String]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nrl"));
    c.args(args)
        .env("NRL_K8S_USER", "alice")
        .env("HOME", "/nonexistent/nrl-bench")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// One run's peak RSS (KiB) and minor page faults, from `wait4`.
// The child is reaped by `wait4` (which also gives its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn probe(args: &[String]) -> (i64, i64) {
    let child = command(args).spawn().expect("spawn nrl");
    let mut status = 0;
    // SAFETY: plain wait4 on our own child; `usage` is a zeroed, owned struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "nrl check failed"
    );
    (usage.ru_maxrss, usage.ru_minflt)
}

fn bench(c: &mut Criterion) {
    let args = args();
    let mut group = c.benchmark_group("process");
    group.warm_up_time(Duration::from_millis(500));
    group.bench_function("nrl check --manifests-only (qwen3 pair)", |b| {
        b.iter_custom(|iters| {
            let started = Instant::now();
            for _ in 0..iters {
                let status = command(&args).status().expect("run nrl");
                assert!(status.success(), "nrl check failed");
            }
            started.elapsed()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);

/// With `NRL_REF_BIN` naming an installed `nrl-k8s` (the Python reference), the same
/// command through it and through nrl, alternately, `runs` times each: medians, spreads
/// and the ratio.
fn against_reference(runs: usize) {
    let Some(reference) = std::env::var_os("NRL_REF_BIN").filter(|v| !v.is_empty()) else {
        return;
    };
    let args = args();
    let time = |mut c: Command| {
        let started = Instant::now();
        let status = c.status().expect("run");
        assert!(status.success(), "{c:?} failed");
        started.elapsed().as_secs_f64() * 1e3
    };
    let (mut nrl, mut peer) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        nrl.push(time(command(&args)));
        let mut c = Command::new(&reference);
        c.args(&args)
            .env("NRL_K8S_USER", "alice")
            .env("HOME", "/nonexistent/nrl-bench")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        peer.push(time(c));
    }
    let summary = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[0], v[v.len() - 1])
    };
    let (n, n0, n1) = summary(&mut nrl);
    let (p, p0, p1) = summary(&mut peer);
    eprintln!(
        "check --manifests-only, {runs} runs each: nrl {n:.1} ms [{n0:.1}..{n1:.1}], nrl-k8s {p:.0} ms [{p0:.0}..{p1:.0}]: {:.0}x",
        p / n
    );
}

fn main() {
    against_reference(5);
    let (rss_kib, faults) = probe(&args());
    eprintln!(
        "nrl check --manifests-only: peak RSS {:.1} MiB, {faults} minor page faults",
        rss_kib as f64 / 1024.0
    );
    benches();
    Criterion::default().configure_from_args().final_summary();
}
