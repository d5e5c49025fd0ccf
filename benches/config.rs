//! Load, resolve and validate the reference qwen3 recipe chain + infra pair (issue target:
//! under 5 ms), and render + validate its manifests.

use std::path::PathBuf;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use nrl::config::env::MapEnv;
use nrl::config::layers::{LoadRequest, load};

fn request() -> LoadRequest {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference/nemo-rl");
    let env = MapEnv::new([
        ("NRL_K8S_USER", "alice"),
        ("HOME", "/nonexistent/nrl-bench"),
    ]);
    let mut req = LoadRequest::new(
        root.join(
            "examples/configs/recipes/llm/performance/grpo-qwen3-30ba3b-4n4g-async-1off.yaml",
        ),
        Arc::new(env),
    );
    req.infra = Some(root.join("infra/nrl_k8s/examples/qwen3_30b_math_4n_4gpu.gb300.infra.yaml"));
    req.overrides = vec!["infra.namespace=nemo-rl".into()];
    req
}

fn bench(c: &mut Criterion) {
    let req = request();
    c.bench_function("load+resolve+validate qwen3 pair", |b| {
        b.iter(|| load(std::hint::black_box(&req)).expect("loads"))
    });
    c.bench_function("check (load, render, schema-validate) qwen3 pair", |b| {
        b.iter(|| nrl::launch::check::check(std::hint::black_box(&req), true).expect("checks"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
