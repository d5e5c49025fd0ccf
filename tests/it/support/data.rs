//! Helpers shared by integration tests: reference data paths and a hermetic environment.

use std::path::PathBuf;
use std::sync::Arc;

use nrl::config::env::MapEnv;
use nrl::config::layers::LoadRequest;
use nrl::config::node::Node;
use nrl::config::source::{SourceKind, add_source};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn reference(rel: &str) -> PathBuf {
    repo().join("tests/data/reference").join(rel)
}

pub fn golden(name: &str) -> PathBuf {
    reference("nrl-k8s-golden").join(name)
}

pub const QWEN_RECIPE: &str =
    "nemo-rl/examples/configs/recipes/llm/performance/grpo-qwen3-30ba3b-4n4g-async-1off.yaml";
pub const TRIVIAL_RECIPE: &str = "nrl-k8s-golden/trivial_recipe.yaml";

pub fn infra_example(name: &str) -> PathBuf {
    reference(&format!(
        "nemo-rl/infra/nrl_k8s/examples/{name}.gb300.infra.yaml"
    ))
}

/// The environment the goldens were produced in (README of nrl-k8s-golden): user alice,
/// no user defaults, no kube context.
pub fn golden_env() -> MapEnv {
    MapEnv::new([
        ("NRL_K8S_USER", "alice"),
        ("HOME", "/nonexistent/nrl-test-home"),
    ])
}

pub fn golden_request(recipe: &str, infra: &str) -> LoadRequest {
    let mut req = LoadRequest::new(reference(recipe), Arc::new(golden_env()));
    req.infra = Some(infra_example(infra));
    req.overrides = vec!["infra.namespace=nemo-rl".to_string()];
    req
}

/// Split a YAML stream on `---` lines and parse each document.
pub fn parse_stream(text: &str) -> Vec<Node> {
    let mut docs = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if line == "---" {
            if !cur.trim().is_empty() {
                docs.push(parse_doc(&cur));
            }
            cur.clear();
        } else {
            cur.push_str(line);
            cur.push('\n');
        }
    }
    if !cur.trim().is_empty() {
        docs.push(parse_doc(&cur));
    }
    docs
}

pub fn parse_doc(text: &str) -> Node {
    let id = add_source("<golden>", None, text.to_string(), SourceKind::Text);
    nrl::config::yaml::parse_source(id).expect("golden YAML parses")
}

/// Compare documents as JSON, with a readable message on the first difference.
pub fn assert_docs_equal(ours: &[serde_json::Value], golden: &[serde_json::Value], what: &str) {
    assert_eq!(ours.len(), golden.len(), "{what}: document count");
    for (i, (a, b)) in ours.iter().zip(golden).enumerate() {
        if a != b {
            let mut diffs = Vec::new();
            nrl::k8s::objects::diff_paths("", a, b, &mut diffs);
            panic!("{what}: document {i} differs at {diffs:?}");
        }
    }
}
