//! Byte-for-byte checks against the reference tool's golden outputs
//! (tests/data/reference/nrl-k8s-golden; tests/data/golden-no-aliases has the anchored documents with aliases expanded).
//!
//! Every golden document is loaded with nrl's own YAML loader and printed again. Documents
//! without anchors must come out identical to the golden file. Documents with the
//! reference's `&id001`/`*id001` (shared imagePullSecrets list) are compared with
//! `no-aliases/`, which PyYAML regenerated with aliases expanded (nrl never writes them).

use super::super::{to_json, to_yaml, to_yaml_stream};
use crate::config::node::Node;
use crate::config::source::{SourceKind, add_source};
use crate::config::yaml::parse_source;

macro_rules! golden {
    ($name:literal) => {
        (
            $name,
            include_str!(concat!(
                "../../../../tests/data/reference/nrl-k8s-golden/",
                $name
            )),
            include_str!(concat!("../../../../tests/data/golden-no-aliases/", $name)),
        )
    };
}

/// (file name, verbatim golden, alias-expanded golden)
type Golden = (&'static str, &'static str, &'static str);

const MANIFEST_STREAMS: [Golden; 3] = [
    golden!("qwen3_30b.check_manifests_only.yaml"),
    golden!("ultra_48n.check_manifests_only.yaml"),
    golden!("ultra_64n.check_manifests_only.yaml"),
];

const CLUSTER_UP: [Golden; 3] = [
    golden!("qwen3_30b.cluster_up_dry_run.txt"),
    golden!("ultra_48n.cluster_up_dry_run.txt"),
    golden!("ultra_64n.cluster_up_dry_run.txt"),
];

const RAYJOBS: [Golden; 3] = [
    golden!("qwen3_30b.run_rayjob_dry_run.txt"),
    golden!("ultra_48n.run_rayjob_dry_run.txt"),
    golden!("ultra_64n.run_rayjob_dry_run.txt"),
];

const BUNDLE_YAML: Golden = golden!("qwen3_30b.check_bundle.yaml");

const BUNDLE_JSON: &str =
    include_str!("../../../../tests/data/reference/nrl-k8s-golden/qwen3_30b.check_bundle.json");

fn load(name: &str, text: &str) -> Node {
    let id = add_source(name, None, text, SourceKind::Text);
    match parse_source(id) {
        Ok(node) => node,
        Err(e) => panic!("{name}: golden does not load: {}", e.message),
    }
}

/// The `--manifests-only` stream splits into its `safe_dump` documents at `"\n---\n"`.
fn stream_docs(text: &str) -> Vec<&str> {
    text.split("\n---\n").collect()
}

#[test]
fn manifest_streams_match_byte_for_byte() {
    for (name, verbatim, expanded) in MANIFEST_STREAMS {
        let golden_docs = stream_docs(verbatim);
        let nodes: Vec<Node> = golden_docs.iter().map(|d| load(name, d)).collect();
        let mut anchor_free = 0;
        for (doc, node) in golden_docs.iter().zip(&nodes) {
            if !doc.contains("&id0") {
                assert_eq!(to_yaml(node), *doc, "{name}: anchor-free document differs");
                anchor_free += 1;
            }
        }
        // ComputeDomain and ResourceClaimTemplate documents at least.
        assert!(
            anchor_free >= 2,
            "{name}: only {anchor_free} anchor-free docs"
        );
        assert_eq!(to_yaml_stream(&nodes), expanded, "{name}: stream differs");
    }
}

#[test]
fn dra_documents_are_checked_directly() {
    let (name, verbatim, _) = &MANIFEST_STREAMS[2];
    let kinds: Vec<&str> = stream_docs(verbatim)
        .into_iter()
        .filter(|d| d.contains("kind: ComputeDomain") || d.contains("kind: ResourceClaimTemplate"))
        .collect();
    assert!(kinds.len() >= 2, "{name}: DRA documents missing");
    for doc in kinds {
        assert_eq!(to_yaml(&load(name, doc)), doc);
    }
}

#[test]
fn cluster_up_dry_runs_match() {
    for (name, verbatim, expanded) in CLUSTER_UP {
        let mut out = String::new();
        let docs: Vec<&str> = verbatim.split("\n---\n").collect();
        assert_eq!(docs.last(), Some(&""), "{name}: ends with ---");
        for doc in &docs[..docs.len() - 1] {
            let printed = to_yaml(&load(name, doc));
            if !doc.contains("&id0") {
                assert_eq!(
                    printed.trim_end(),
                    *doc,
                    "{name}: anchor-free document differs"
                );
            }
            out.push_str(printed.trim_end());
            out.push_str("\n---\n");
        }
        assert_eq!(out, expanded, "{name}");
    }
}

#[test]
fn rayjob_dry_runs_match() {
    for (name, verbatim, expanded) in RAYJOBS {
        let printed = to_yaml(&load(name, verbatim));
        assert_eq!(format!("{}\n", printed.trim_end()), expanded, "{name}");
    }
}

#[test]
fn yaml_bundle_matches() {
    let (name, verbatim, expanded) = BUNDLE_YAML;
    assert_eq!(to_yaml(&load(name, verbatim)), expanded);
}

#[test]
fn json_bundle_matches_byte_for_byte() {
    let parsed: serde_json::Value = serde_json::from_str(BUNDLE_JSON).expect("bundle parses");
    let node = Node::from_json(&parsed);
    assert_eq!(to_json(&node, true), BUNDLE_JSON);
}
