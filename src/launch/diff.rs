//! `nrl diff`: what changed between two launches — two recorded runs, or a run and a
//! recipe as it would launch now — key by key over the resolved recipe, the infra, the
//! rendered objects and the code, each change with the layer and line that set it on
//! each side (from the runs' launch snapshots, `records::snapshot`).

use std::path::Path;

use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value as Json;

use crate::config::layers::LoadedConfig;
use crate::config::provenance::Decided;
use crate::config::schema::CodeSource;
use crate::diag::Result;
use crate::launch::records::RunStore;
use crate::launch::records::snapshot::{CodeSnapshot, LaunchSnapshot, capture, load_snapshot};

/// The other side of a diff.
pub enum DiffTarget<'a> {
    /// Another recorded run.
    Run(&'a str),
    /// A recipe + infra pair as it would launch now, its code read from `repo_root`.
    Config {
        cfg: &'a LoadedConfig,
        infra: Option<&'a Path>,
        overrides: &'a [String],
        repo_root: &'a Path,
    },
}

/// Which part of a launch a change is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Section {
    Recipe,
    Infra,
    Manifests,
    Code,
}

impl Section {
    pub fn as_str(self) -> &'static str {
        match self {
            Section::Recipe => "recipe",
            Section::Infra => "infra",
            Section::Manifests => "manifests",
            Section::Code => "code",
        }
    }
}

/// One key whose value differs. `a`/`b` absent: the key is not set on that side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub section: Section,
    /// `grpo.max_num_steps`, `infra.kuberay.training.workers.0.replicas`,
    /// `RayCluster/alice-grpo: spec.workerGroupSpecs.0.replicas`, `code`.
    pub key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a: Option<Json>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b: Option<Json>,
    /// The layer, file and line that set the key on each side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_set_by: Option<Decided>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_set_by: Option<Decided>,
}

/// The result of `nrl diff`. Field names are the `-o json|yaml` schema.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchDiff {
    /// `run <id>` or `recipe <path> [overrides…]`.
    pub a: String,
    pub b: String,
    pub changes: Vec<Change>,
}

impl LaunchDiff {
    pub fn is_same(&self) -> bool {
        self.changes.is_empty()
    }
}

/// Compare run `a` (its launch snapshot) with `b` (blocking: reads the snapshots, and
/// for a config the files its upload would send).
pub fn diff_launches(store: &RunStore, a: &str, b: &DiffTarget) -> Result<LaunchDiff> {
    let snap_a = load_snapshot(&store.load(a)?)?;
    let (label_b, snap_b) = match b {
        DiffTarget::Run(id) => (format!("run {id}"), load_snapshot(&store.load(id)?)?),
        DiffTarget::Config {
            cfg,
            infra,
            overrides,
            repo_root,
        } => {
            let code = code_as_it_would_launch(cfg, repo_root, snap_a.code.as_ref())?;
            let snap = capture(cfg, *infra, overrides, code)?.snapshot;
            let mut label = format!("recipe {}", cfg.recipe_path.display());
            for o in overrides.iter() {
                label.push(' ');
                label.push_str(o);
            }
            (label, snap)
        }
    };
    Ok(LaunchDiff {
        a: format!("run {a}"),
        b: label_b,
        changes: compare(&snap_a, &snap_b),
    })
}

/// The code a launch of `cfg` would use now: what it would upload from `repo_root` when
/// the run it is compared with uploaded (or the infra says upload), else the pods' code.
fn code_as_it_would_launch(
    cfg: &LoadedConfig,
    repo_root: &Path,
    like: Option<&CodeSnapshot>,
) -> Result<Option<CodeSnapshot>> {
    let uploads = match like {
        Some(c) => c.source == CodeSource::Upload.as_str(),
        None => cfg.infra.launch.code_source == CodeSource::Upload,
    };
    if !uploads {
        return Ok(Some(CodeSnapshot::on_pods(cfg)));
    }
    CodeSnapshot::upload_from(cfg, repo_root).map(Some)
}

/// Every difference between two snapshots, section by section, keys in the order `a`
/// has them (then the keys only `b` has).
pub fn compare(a: &LaunchSnapshot, b: &LaunchSnapshot) -> Vec<Change> {
    let mut out = Vec::new();
    let set_by = |s: &LaunchSnapshot, key: &str| s.decided_by.get(key).cloned();
    let trees = [
        (Section::Recipe, &a.recipe, &b.recipe, ""),
        (Section::Infra, &a.infra, &b.infra, "infra"),
    ];
    for (section, ta, tb, prefix) in trees {
        for (key, va, vb) in leaf_changes(ta, tb, prefix) {
            out.push(Change {
                section,
                a_set_by: va.as_ref().and_then(|_| set_by(a, &key)),
                b_set_by: vb.as_ref().and_then(|_| set_by(b, &key)),
                key,
                a: va,
                b: vb,
            });
        }
    }
    let by_name = |s: &LaunchSnapshot| -> IndexMap<String, Json> {
        s.manifests
            .iter()
            .map(|m| (object_name(m), m.clone()))
            .collect()
    };
    let (ma, mb) = (by_name(a), by_name(b));
    let names = ma.keys().chain(mb.keys().filter(|k| !ma.contains_key(*k)));
    for name in names {
        match (ma.get(name), mb.get(name)) {
            (Some(x), Some(y)) => {
                for (key, va, vb) in leaf_changes(x, y, "") {
                    out.push(manifest_change(format!("{name}: {key}"), va, vb));
                }
            }
            // A whole object on one side only: one change, not one per field.
            (x, y) => out.push(manifest_change(
                name.clone(),
                x.map(|_| Json::from("present")),
                y.map(|_| Json::from("present")),
            )),
        }
    }
    let code = |s: &LaunchSnapshot| s.code.as_ref().map(describe_code);
    if code(a) != code(b) {
        out.push(Change {
            section: Section::Code,
            key: "code".into(),
            a: code(a).map(Json::from),
            b: code(b).map(Json::from),
            a_set_by: None,
            b_set_by: None,
        });
    }
    out
}

fn manifest_change(key: String, a: Option<Json>, b: Option<Json>) -> Change {
    Change {
        section: Section::Manifests,
        key,
        a,
        b,
        a_set_by: None,
        b_set_by: None,
    }
}

/// `upload gcs://_ray_pkg_….zip (120 files)`, `image /opt/nemo-rl`.
fn describe_code(c: &CodeSnapshot) -> String {
    match (&c.digest, c.files) {
        (Some(d), Some(n)) => format!("{} {d} ({n} files)", c.source),
        (Some(d), None) => format!("{} {d}", c.source),
        _ => match &c.path {
            Some(p) => format!("{} {p}", c.source),
            None => c.source.clone(),
        },
    }
}

/// `Kind/name` of a rendered object.
fn object_name(m: &Json) -> String {
    let kind = m.get("kind").and_then(Json::as_str).unwrap_or("?");
    let name = m
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or("?");
    format!("{kind}/{name}")
}

/// The leaves (scalars and empty containers) of `a` and `b` whose values differ, as
/// `(dotted key, a's value, b's value)`; list items by index.
fn leaf_changes(a: &Json, b: &Json, prefix: &str) -> Vec<(String, Option<Json>, Option<Json>)> {
    let (la, lb) = (leaves(a, prefix), leaves(b, prefix));
    let mut out = Vec::new();
    for (key, va) in &la {
        match lb.get(key) {
            Some(vb) if vb == va => {}
            vb => out.push((key.clone(), Some((*va).clone()), vb.map(|v| (*v).clone()))),
        }
    }
    for (key, vb) in &lb {
        if !la.contains_key(key) {
            out.push((key.clone(), None, Some((*vb).clone())));
        }
    }
    out
}

fn leaves<'a>(root: &'a Json, prefix: &str) -> IndexMap<String, &'a Json> {
    fn walk<'a>(v: &'a Json, key: &mut String, out: &mut IndexMap<String, &'a Json>) {
        let len = key.len();
        let mut descend = |k: &str, child: &'a Json, key: &mut String| {
            if !key.is_empty() {
                key.push('.');
            }
            key.push_str(k);
            walk(child, key, out);
            key.truncate(len);
        };
        match v {
            Json::Object(m) if !m.is_empty() => {
                for (k, child) in m {
                    descend(k, child, key);
                }
            }
            Json::Array(l) if !l.is_empty() => {
                for (i, child) in l.iter().enumerate() {
                    descend(&i.to_string(), child, key);
                }
            }
            _ => {
                out.insert(key.clone(), v);
            }
        }
    }
    let mut out = IndexMap::new();
    walk(root, &mut prefix.to_string(), &mut out);
    out
}

/// One value on one line, at most `max` characters (`(not set)` when absent).
pub fn one_line(v: Option<&Json>, max: usize) -> String {
    let text = match v {
        None => return "(not set)".into(),
        Some(v) => v.to_string(),
    };
    if text.chars().count() <= max {
        return text;
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// The human report: one block per section, each change with where each side set it.
pub fn render(d: &LaunchDiff) -> String {
    use std::fmt::Write;
    let mut out = format!("--- a: {}\n+++ b: {}\n", d.a, d.b);
    if d.is_same() {
        out.push_str("\nno differences: same recipe, infra, objects and code\n");
        return out;
    }
    for section in [
        Section::Recipe,
        Section::Infra,
        Section::Manifests,
        Section::Code,
    ] {
        let changes: Vec<&Change> = d.changes.iter().filter(|c| c.section == section).collect();
        if changes.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{} ({} changed)", section.as_str(), changes.len());
        for c in changes {
            let _ = writeln!(
                out,
                "  {}: {} -> {}",
                c.key,
                one_line(c.a.as_ref(), 60),
                one_line(c.b.as_ref(), 60)
            );
            for (side, by) in [("a", &c.a_set_by), ("b", &c.b_set_by)] {
                if let Some(by) = by {
                    let _ = writeln!(
                        out,
                        "      {side}: {:<16} {}  {}",
                        by.layer, by.location, by.written
                    );
                }
            }
        }
    }
    let count = |s: Section| d.changes.iter().filter(|c| c.section == s).count();
    let _ = writeln!(
        out,
        "\ndiff: {} recipe, {} infra, {} object and {} code change(s)",
        count(Section::Recipe),
        count(Section::Infra),
        count(Section::Manifests),
        count(Section::Code)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leaves_compare_by_key_with_list_items_by_index() {
        let a = json!({"grpo": {"steps": 10, "seed": 1}, "tags": ["x", "y"], "empty": {}});
        let b = json!({"grpo": {"steps": 20, "seed": 1}, "tags": ["x"], "new": null});
        let got = leaf_changes(&a, &b, "");
        assert_eq!(
            got,
            vec![
                ("grpo.steps".into(), Some(json!(10)), Some(json!(20))),
                ("tags.1".into(), Some(json!("y")), None),
                ("empty".into(), Some(json!({})), None),
                ("new".into(), None, Some(json!(null))),
            ]
        );
        assert_eq!(
            leaf_changes(&json!({"a": 1}), &json!({"a": 1}), "infra"),
            vec![]
        );
        assert_eq!(
            leaf_changes(&json!({"ns": "a"}), &json!({"ns": "b"}), "infra")[0].0,
            "infra.ns"
        );
    }

    #[test]
    fn long_values_are_cut_on_one_line() {
        assert_eq!(one_line(None, 10), "(not set)");
        assert_eq!(one_line(Some(&json!("abc")), 10), "\"abc\"");
        assert_eq!(one_line(Some(&json!("abcdefghijkl")), 8), "\"abcdef…");
    }
}
