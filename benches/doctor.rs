//! The offline doctor rules on the reference pairs: the 64-node ultra example (segmented
//! RayCluster, Deployment, RayJob) and the qwen3 30B recipe + infra. They run inside every
//! `nrl check`, so they must stay well under a millisecond in optimised builds.
//!
//! `cargo bench --bench doctor` (`--profile dev` on shared machines).

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{Criterion, criterion_group};
use nrl::config::env::MapEnv;
use nrl::config::layers::{LoadRequest, LoadedConfig, load};
use nrl::config::node::Node;
use nrl::launch::rayjob::manifest::rayjob_manifest;
use nrl::render::check_manifests;
use nrl::render::rayjob::RayJobOptions;
use nrl::run_id::RunId;

fn load_pair(recipe: &str, infra: &str) -> LoadedConfig {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference");
    let env = MapEnv::new([
        ("NRL_K8S_USER", "alice"),
        ("HOME", "/nonexistent/nrl-bench"),
    ]);
    let mut req = LoadRequest::new(root.join(recipe), Arc::new(env));
    req.infra = Some(root.join(format!(
        "nemo-rl/infra/nrl_k8s/examples/{infra}.gb300.infra.yaml"
    )));
    req.overrides = vec!["infra.namespace=nemo-rl".into()];
    load(&req).expect("the pair loads")
}

fn manifests(cfg: &LoadedConfig) -> Vec<Node> {
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
    let ultra = load_pair("nrl-k8s-golden/trivial_recipe.yaml", "ultra_64n_pipeclean");
    let ultra_objs = manifests(&ultra);
    c.bench_function("doctor offline ultra_64n (check_manifests + RayJob)", |b| {
        b.iter(|| nrl::doctor::offline(std::hint::black_box(&ultra), &ultra_objs))
    });
    let qwen = load_pair(
        "nemo-rl/examples/configs/recipes/llm/performance/grpo-qwen3-30ba3b-4n4g-async-1off.yaml",
        "qwen3_30b_math_4n_4gpu",
    );
    let qwen_objs = check_manifests(&qwen.infra).expect("renders");
    c.bench_function("doctor offline qwen3 30B (check_manifests)", |b| {
        b.iter(|| nrl::doctor::offline(std::hint::black_box(&qwen), &qwen_objs))
    });
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
