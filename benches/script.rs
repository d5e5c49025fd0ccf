//! `nrl script --dry-run scripts/launch.rhai` in-process: engine start (every built-in
//! module), compile, the stdlib imports, and the plan-mode run against the quickstart pair
//! (load, validate, render the RayJob, record the apply, the checklist). Target: under
//! 30 ms. The first run (schema compilation included) is printed before the measurements.
//!
//! Also `scripts/disagg_first_launch.rhai --dry-run -- … --offline` on the three-role test
//! pair: the offline doctor rules plus the playbook's own, the report, four planned
//! bring-ups and the planned status table. Target: under 50 ms.
//!
//! `cargo bench --bench script --profile dev` on shared machines.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use nrl::config::env::MapEnv;
use nrl::script::{CapturedOutput, Host, HostOptions, run_file};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn args() -> Vec<String> {
    [
        "--recipe",
        "examples/quickstart/recipe.yaml",
        "--infra",
        "examples/quickstart/infra.yaml",
        "--run-id",
        "bench-1",
        "grpo.max_num_steps=5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn disagg_args() -> Vec<String> {
    [
        "--recipe",
        "tests/data/cluster/recipe.yaml",
        "--infra",
        "tests/data/cluster/infra.yaml",
        "--offline",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// One whole plan-mode run; returns the number of recorded steps.
fn plan_launch(script: &Path, args: &[String]) -> usize {
    let mut opts = HostOptions::new(repo());
    opts.dry_run = true;
    opts.env = Arc::new(MapEnv::new([
        ("NRL_USER", "alice"),
        ("HOME", "/nonexistent/nrl-bench"),
    ]));
    opts.output = Arc::new(CapturedOutput::new());
    opts.search_path = Vec::new();
    let host = Host::new(opts);
    let outcome = run_file(&host, script, args).expect("plans");
    outcome.plan.len()
}

fn bench(c: &mut Criterion) {
    // Relative recipe paths resolve against the repository, as `nrl script` run there.
    std::env::set_current_dir(repo()).expect("cd repo");
    let script = repo().join("scripts/launch.rhai");
    let args = args();
    let first = Instant::now();
    assert_eq!(plan_launch(&script, &args), 1);
    eprintln!("first run (schemas compiled): {:?}", first.elapsed());
    c.bench_function(
        "engine start + compile + plan-mode run of scripts/launch.rhai",
        |b| b.iter(|| plan_launch(std::hint::black_box(&script), &args)),
    );
    let disagg = repo().join("scripts/disagg_first_launch.rhai");
    let disagg_args = disagg_args();
    assert_eq!(plan_launch(&disagg, &disagg_args), 4);
    c.bench_function(
        "engine start + compile + plan-mode run of scripts/disagg_first_launch.rhai",
        |b| b.iter(|| plan_launch(std::hint::black_box(&disagg), &disagg_args)),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
