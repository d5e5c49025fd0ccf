//! Validating every object rendered for the 64-node reference example (the ultra_64n
//! golden manifests: `check --manifests-only`, `cluster up --dry-run`, `run --rayjob
//! --dry-run`), schema and names. Target: well under 20 ms for the lot.
//!
//! `cargo bench --bench validate`. The schemas are embedded pre-compiled; the first call
//! still compiles the patterns it meets, so its time is printed separately before the
//! measurements.

use std::path::PathBuf;
use std::time::Instant;

use criterion::{Criterion, criterion_group};
use nrl::config::Node;
use nrl::config::source::{SourceKind, add_source};
use nrl::config::yaml::parse_source;
use nrl::render::validate::{validate_all, validate_object};

const FILES: &[&str] = &[
    "ultra_64n.check_manifests_only.yaml",
    "ultra_64n.cluster_up_dry_run.txt",
    "ultra_64n.run_rayjob_dry_run.txt",
];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference/nrl-k8s-golden")
}

/// Every `---`-separated document of the three files, parsed with spans.
fn load() -> Vec<Node> {
    let mut docs = Vec::new();
    for file in FILES {
        let text = std::fs::read_to_string(golden_dir().join(file)).expect("golden file");
        let mut current = String::new();
        for line in text.split_inclusive('\n').chain(std::iter::once("---\n")) {
            if line.trim_end() == "---" {
                if !current.trim().is_empty() {
                    let id = add_source(*file, None, current.clone(), SourceKind::Text);
                    docs.push(parse_source(id).expect("golden YAML parses"));
                }
                current.clear();
            } else {
                current.push_str(line);
            }
        }
    }
    docs
}

fn bench(c: &mut Criterion) {
    let docs = load();
    c.bench_function("validate_all(ultra_64n goldens)", |b| {
        b.iter(|| validate_all(std::hint::black_box(&docs)))
    });
    c.bench_function("validate_object(ultra_64n RayJob)", |b| {
        let rayjob = docs
            .iter()
            .find(|d| d.get("kind").and_then(Node::as_str) == Some("RayJob"))
            .expect("a RayJob");
        b.iter(|| validate_object(std::hint::black_box(rayjob)))
    });
}

criterion_group!(benches, bench);

fn main() {
    let docs = load();
    let started = Instant::now();
    let first = validate_all(&docs);
    eprintln!(
        "first validation of {} objects, including compiling the patterns: {:?} ({})",
        docs.len(),
        started.elapsed(),
        if first.is_ok() { "clean" } else { "PROBLEMS" }
    );
    benches();
    Criterion::default().configure_from_args().final_summary();
}
