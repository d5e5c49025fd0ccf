//! Rendering and validating every object of the 64-node reference example (ultra_64n:
//! DRA objects, the segmented RayCluster, the NeMo-Skills Deployment and Service, and the
//! RayJob with its staging preamble). The pair is loaded once, outside the timed loops.
//! Targets for optimised builds: render < 2 ms, validate < 20 ms.
//!
//! `cargo bench --bench render` (`--profile dev` on shared machines). The first
//! validation also compiles the schema patterns it meets; its time is printed before the
//! measurements.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, criterion_group};
use nrl::config::env::MapEnv;
use nrl::config::layers::{LoadRequest, LoadedConfig, load};
use nrl::config::node::Node;
use nrl::launch::rayjob::manifest::rayjob_manifest;
use nrl::render::check_manifests;
use nrl::render::rayjob::RayJobOptions;
use nrl::render::validate::validate_all;
use nrl::run_id::RunId;

fn load_ultra_64n() -> LoadedConfig {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference");
    let env = MapEnv::new([
        ("NRL_K8S_USER", "alice"),
        ("HOME", "/nonexistent/nrl-bench"),
    ]);
    let mut req = LoadRequest::new(
        root.join("nrl-k8s-golden/trivial_recipe.yaml"),
        Arc::new(env),
    );
    req.infra =
        Some(root.join("nemo-rl/infra/nrl_k8s/examples/ultra_64n_pipeclean.gb300.infra.yaml"));
    req.overrides = vec!["infra.namespace=nemo-rl".into()];
    load(&req).expect("the ultra_64n pair loads")
}

/// Everything a launch of the pair renders: `check_manifests` plus the RayJob.
fn render_all(cfg: &LoadedConfig) -> Vec<Node> {
    let mut objs = check_manifests(&cfg.infra).expect("renders");
    objs.push(
        rayjob_manifest(
            cfg,
            &RunId::parse("bench-run-1").unwrap(),
            &RayJobOptions::default(),
        )
        .expect("RayJob"),
    );
    objs
}

fn bench(c: &mut Criterion) {
    let cfg = load_ultra_64n();
    c.bench_function("render ultra_64n (check_manifests + RayJob)", |b| {
        b.iter(|| render_all(std::hint::black_box(&cfg)))
    });
    c.bench_function("render ultra_64n check_manifests only", |b| {
        b.iter(|| check_manifests(std::hint::black_box(&cfg.infra)))
    });
    let objs = render_all(&cfg);
    c.bench_function("validate ultra_64n (all rendered objects)", |b| {
        b.iter(|| validate_all(std::hint::black_box(&objs)))
    });
}

criterion_group!(benches, bench);

fn main() {
    let cfg = load_ultra_64n();
    let objs = render_all(&cfg);
    let started = Instant::now();
    let first = validate_all(&objs);
    eprintln!(
        "{} objects; first validation, including compiling the schema patterns: {:?} ({})",
        objs.len(),
        started.elapsed(),
        if first.is_ok() { "clean" } else { "PROBLEMS" }
    );
    benches();
    Criterion::default().configure_from_args().final_summary();
}
