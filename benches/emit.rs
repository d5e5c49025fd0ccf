//! Serializer throughput on the largest golden manifest (64-node RayJob, ~28 KB).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use nrl::config::source::{SourceKind, add_source};
use nrl::config::yaml::parse_source;
use nrl::render::emit::{to_json, to_yaml};

const RAYJOB: &str =
    include_str!("../tests/data/reference/nrl-k8s-golden/ultra_64n.run_rayjob_dry_run.txt");

fn emit(c: &mut Criterion) {
    let id = add_source(
        "ultra_64n.run_rayjob_dry_run.txt",
        None,
        RAYJOB,
        SourceKind::Text,
    );
    let Ok(doc) = parse_source(id) else {
        panic!("golden RayJob does not load");
    };
    let mut group = c.benchmark_group("emit");
    group.throughput(Throughput::Bytes(RAYJOB.len() as u64));
    group.bench_function("to_yaml/rayjob_64n", |b| b.iter(|| to_yaml(&doc)));
    group.bench_function("to_json_sorted/rayjob_64n", |b| {
        b.iter(|| to_json(&doc, true))
    });
    group.finish();
}

criterion_group!(benches, emit);
criterion_main!(benches);
