//! `nrl gym submit` of 500 benchmarks against the fake API server, watched to completion:
//! the real binary as a child process, so its wall time and peak RSS are nrl's alone (the
//! fake server runs in this process). Targets (DESIGN §6): within 5 s, one watch per run,
//! peak RSS under 100 MB. Before the measurements, one probe each of 50, 500 and 5,000
//! benchmarks prints how the cost grows (time, CPU per Job, memory, requests).
//!
//! `cargo bench --profile dev --bench gym_submit` (or `--profile release`). Before the
//! measurements it prints one run's numbers: wall time and where it went (nrl's first
//! request, its last apply, the start of its watch), nrl's CPU time and peak RSS, requests
//! by kind (watches on Jobs) and the fake's write count (~4,500: ~9 per Job).
//!
//! Measured (2-core VM shared with other builds; `--parallel 32`, which makes no difference
//! from 4 to 64: the fake applies one object at a time):
//! - before: dev profile 8.2-9 s (9.2-31 s reported earlier under heavier load), release
//!   2.7-2.8 s; the fake's controllers dominated, copying whole objects several times on
//!   each of the ~4,500 writes and on every reconcile.
//! - after: dev profile 3.2-3.8 s (~5 s with the machine's load at 4), release 0.96-1.06 s
//!   (applies done at ~0.33 s, watch from ~0.43 s; the rest is the simulated Job lifetime,
//!   150 ms to start and 300 ms to run). One watch on Jobs, one list, 502 applies. Peak RSS
//!   of nrl 58 MiB (release), 73 MiB (dev).
//! - the curve (release, 50 / 500 / 5,000): CPU per Job 1.5 / 1.1 / 2.9 ms while every Job
//!   event compared and cloned the whole table, then 1.3 / 1.0 / 0.9 ms once only changed
//!   rows were printed; peak RSS 20 / 58 / 370 MiB, then 19 / 44 / 239 MiB once each Job
//!   rendered only its own benchmark's entry (not all of them: quadratic) and the rendered
//!   Jobs were dropped after applying; 173 MiB at 5,000 once watched objects dropped their
//!   `managedFields` (the initial list of 5,000 Jobs is held whole for one Reset).

// The fake API server of the integration tests (only it, not the other test helpers),
// reachable at the module path its files use there: `crate::support::fake_k8s`.
#[path = "../tests/it/support/fake_k8s/mod.rs"]
mod fake_k8s;
mod support {
    pub(crate) use super::fake_k8s;
}

#[path = "support/measured.rs"]
mod measured;

use std::path::Path;
use std::time::{Duration, Instant};

use measured::{Usage, measured};

use criterion::{Criterion, criterion_group};
use support::fake_k8s::{FakeK8s, JobScript};

/// 500 under `cargo bench`; a 20-benchmark smoke run when `cargo test --all-targets`
/// runs this file in criterion's test mode.
fn benchmarks() -> usize {
    if std::env::args().any(|a| a == "--bench") {
        500
    } else {
        20
    }
}

fn config(dir: &Path) -> std::path::PathBuf {
    config_of(dir, benchmarks())
}

/// A config with `n` benchmarks.
fn config_of(dir: &Path, n: usize) -> std::path::PathBuf {
    let mut text = String::from(
        "services:
  policy:
    type: vllm
    container: vllm/vllm-openai:v0.9.0
    model: org/model
    health_check: {timeout_seconds: 600}
    env: {HF_TOKEN: 'host:HF_TOKEN'}
compute:
  cluster: {type: kubernetes, namespace: evals, pvc_name: gym-results}
driver:
  container: python:3.12
  policy_model: policy
  benchmarks:
",
    );
    for i in 0..n {
        text.push_str(&format!(
            "    bench{i:04}: {{run: {{split: test, shard: {i}}}}}\n"
        ));
    }
    text.push_str("job: {output_path: /mnt/gym-output}\notel: {enabled: false}\n");
    let path = dir.join(format!("gym{n}.yaml"));
    std::fs::write(&path, text).expect("write config");
    path
}

/// One submit of the config: what it cost nrl, and when it started (the request log's
/// times are read against it).
fn submit_once(fake: &FakeK8s, cfg: &Path, home: &Path, run: &str) -> (Instant, Usage) {
    let started = Instant::now();
    let cfg = cfg.display().to_string();
    let u = measured(
        &["gym", "submit", &cfg, "--run-id", run, "--parallel", "32"],
        |c| {
            c.envs(fake.env())
                .env("HOME", home)
                .env_remove("XDG_CACHE_HOME")
                .env("HF_TOKEN", "hf_bench")
                .env("NO_COLOR", "1");
        },
    );
    (started, u)
}

fn fake() -> FakeK8s {
    let fake = FakeK8s::builder()
        .namespace("evals")
        .history_window(
            std::env::var("GYM_HISTORY")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(10_000),
        )
        .start();
    fake.set_job_script("*", JobScript::succeeds());
    fake
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = config(dir.path());
    let mut group = c.benchmark_group("gym");
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(1));
    group.measurement_time(Duration::from_secs(60));
    let mut n = 0;
    let name = format!("submit {} benchmarks, watched to completion", benchmarks());
    group.bench_function(&name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                // A fresh server each time, so runs do not share history.
                let fake = fake();
                n += 1;
                let (_, u) = submit_once(&fake, &cfg, dir.path(), &format!("gym-bench-{n}"));
                assert_eq!(u.exit, 0, "nrl gym submit failed");
                total += u.wall;
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench);

/// One submit of `n` benchmarks on a fresh fake, described in one line: wall time and
/// where it went, nrl's CPU and peak RSS, and the requests by kind (the cost per Job must
/// stay one apply, with one list and one watch for the run).
fn probe(dir: &Path, n: usize) {
    let cfg = config_of(dir, n);
    let fake = fake();
    let run = format!("gym-bench-probe-{n}");
    let (started, u) = submit_once(&fake, &cfg, dir, &run);
    let log = fake.request_log();
    let job_watches = log
        .iter()
        .filter(|r| r.watch && r.base_resource() == Some("jobs"))
        .count();
    let watches = log.iter().filter(|r| r.watch).count();
    let applies = log.iter().filter(|r| r.is_apply()).count();
    let lists = log.iter().filter(|r| r.verb == "list" && !r.watch).count();
    // Where the wall time went: nrl's start, the applies, and the watch to the end.
    let since = |r: &support::fake_k8s::RequestRecord| r.at.duration_since(started);
    let first = log.first().map(since).unwrap_or_default();
    let last_apply = log
        .iter()
        .filter(|r| r.is_apply())
        .map(since)
        .max()
        .unwrap_or_default();
    let writes = fake
        .state()
        .store
        .lock()
        .map(|s| s.current_rv())
        .unwrap_or_default();
    let watch_from = log.iter().find(|r| r.watch).map(since).unwrap_or_default();
    let done = fake
        .list(
            "batch/v1",
            "Job",
            Some("evals"),
            &format!("gym-job-id={run}"),
        )
        .iter()
        .filter(|j| j.pointer("/status/succeeded").and_then(|v| v.as_i64()) == Some(1))
        .count();
    eprintln!(
        "{n} benchmarks: exit {}, {done} Jobs succeeded, wall {:.2?} (first request at {first:.2?}, \
         last apply at {last_apply:.2?}, watch from {watch_from:.2?}; nrl CPU {:.2?}, {:.2?} per Job), \
         peak RSS {:.1} MiB, {job_watches} watch(es) on Jobs ({watches} in all), {applies} applies, \
         {lists} lists, {} requests, {writes} writes in the fake",
        u.exit,
        u.wall,
        u.cpu,
        u.cpu / n as u32,
        u.peak_rss_kib as f64 / 1024.0,
        log.len()
    );
}

fn main() {
    measured::spawner_main();
    let dir = tempfile::tempdir().expect("tempdir");
    // How the cost grows: 50, 500 and 5,000 benchmarks (the smoke size under cargo test;
    // `GYM_SIZES=50,2000` for others).
    let sizes: Vec<usize> = match std::env::var("GYM_SIZES") {
        Ok(v) => v.split(',').filter_map(|n| n.trim().parse().ok()).collect(),
        Err(_) if std::env::args().any(|a| a == "--bench") => vec![50, 500, 5000],
        Err(_) => vec![benchmarks()],
    };
    for n in sizes {
        probe(dir.path(), n);
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
