//! The reference renderings validate clean; shared helpers for loading YAML test input.

use std::path::Path;

use super::testdata::reference_dir;
use super::{validate_all, validate_object};
use crate::config::node::Node;
use crate::config::source::{SourceKind, add_source};
use crate::config::yaml;
use crate::diag::Diag;

/// Byte ranges of the documents of a multi-document stream, split on `---` lines.
pub fn document_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let mut start = 0;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" {
            ranges.push((start, pos));
            start = pos + line.len();
        }
        pos += line.len();
    }
    ranges.push((start, text.len()));
    ranges
        .into_iter()
        .filter(|(s, e)| !text[*s..*e].trim().is_empty())
        .collect()
}

/// Load every document of `text` with the project's YAML loader. Each document becomes a
/// source of its own named `name` in which the other documents are blanked to bare line
/// breaks, so locations carry the line numbers of the whole file.
pub fn load_documents(name: &str, text: &str) -> Vec<Node> {
    document_ranges(text)
        .into_iter()
        .map(|(s, e)| {
            let blank = |part: &str| "\n".repeat(part.matches('\n').count());
            let doc = format!("{}{}{}", blank(&text[..s]), &text[s..e], blank(&text[e..]));
            let id = add_source(name, None, doc, SourceKind::Text);
            yaml::parse_source(id).unwrap_or_else(|d| panic!("{name}: {}", d.render(false, 100)))
        })
        .collect()
}

pub fn load_file(path: &Path) -> Vec<Node> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    load_documents(&name, &text)
}

fn kinds(docs: &[Node]) -> Vec<String> {
    docs.iter()
        .map(|d| {
            d.get("kind")
                .and_then(Node::as_str)
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

fn render_all(problems: &[Diag]) -> String {
    problems
        .iter()
        .map(|d| d.render(false, 100))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn document_splitting_keeps_line_numbers() {
    let text = "a: 1\n---\nb: 2\nc: 3\n---\n";
    assert_eq!(document_ranges(text), vec![(0, 5), (9, 19)]);
    let docs = load_documents("split.yaml", text);
    assert_eq!(docs.len(), 2);
    let c = docs[1].get("c").expect("c");
    assert_eq!(c.span.expect("span").location(), "split.yaml:4:4");
}

#[test]
fn every_reference_rendering_validates_clean() {
    let dir = reference_dir("nrl-k8s-golden");
    let mut seen_kinds = std::collections::BTreeSet::new();
    let mut files = 0;
    for example in ["qwen3_30b", "ultra_48n", "ultra_64n"] {
        for suffix in [
            "check_manifests_only.yaml",
            "cluster_up_dry_run.txt",
            "run_rayjob_dry_run.txt",
        ] {
            let path = dir.join(format!("{example}.{suffix}"));
            let docs = load_file(&path);
            assert!(!docs.is_empty(), "{} has no documents", path.display());
            let problems: Vec<Diag> = docs.iter().flat_map(validate_object).collect();
            assert!(
                problems.is_empty(),
                "{}:\n{}",
                path.display(),
                render_all(&problems)
            );
            assert!(validate_all(&docs).is_ok());
            seen_kinds.extend(kinds(&docs));
            files += 1;
        }
    }
    assert_eq!(files, 9);
    let expected = [
        "ComputeDomain",
        "Deployment",
        "RayCluster",
        "RayJob",
        "ResourceClaimTemplate",
        "Service",
    ];
    for k in expected {
        assert!(seen_kinds.contains(k), "no {k} among {seen_kinds:?}");
    }
}

#[test]
fn manifests_only_stream_has_every_object() {
    let docs =
        load_file(&reference_dir("nrl-k8s-golden").join("ultra_64n.check_manifests_only.yaml"));
    assert_eq!(
        kinds(&docs),
        [
            "ComputeDomain",
            "ResourceClaimTemplate",
            "RayCluster",
            "Deployment",
            "Service"
        ]
    );
}
