//! Recipe keys a file adds one edit away from a key of its `defaults:` chain.
//!
//! NeMo-RL merges a recipe onto its parents with a plain `OmegaConf.merge`, which accepts
//! new keys: `grpo: {max_num_step: 5}` under a parent with `grpo.max_num_steps` loads
//! without a word, and the run keeps the parent's value. (Command-line overrides are in
//! struct mode and already fail with a did-you-mean.) For every key a file adds that no
//! file of its chain has, a sibling of the chain one edit away is reported; keys far from
//! every key of the chain are new on purpose and pass.

use std::collections::HashSet;
use std::path::Path;

use super::rules::RECIPE_KEY_TYPO;
use super::{Ctx, Finding};
use crate::config::defaults::LoadedFile;
use crate::config::node::Node;
use crate::config::source::Span;
use crate::config::suggest::one_edit_away;

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    out.extend(findings(&ctx.cfg.layers.recipe_files));
}

/// The findings over a recipe's files, in merge order, each with its chain
/// ([`LoadedFile::ancestors`]), as `LoadedConfig::layers.recipe_files` holds them.
pub fn findings(files: &[LoadedFile]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut done: HashSet<&Path> = HashSet::new();
    for f in files {
        // A file reached twice (a grandparent shared by two parents) has the same chain.
        if f.ancestors.is_empty() || !done.insert(&f.path) {
            continue;
        }
        let chain: Vec<&Node> = files
            .get(f.ancestors.clone())
            .unwrap_or_default()
            .iter()
            .map(|a| &a.tree)
            .collect();
        compare(&f.tree, &chain, &mut Vec::new(), &mut out);
    }
    out
}

/// `node`: a mapping of the file at `path`; `chain`: the chain's mappings at `path`, in
/// merge order.
fn compare<'a>(
    node: &'a Node,
    chain: &[&'a Node],
    path: &mut Vec<&'a str>,
    out: &mut Vec<Finding>,
) {
    let Some(map) = node.as_map() else { return };
    // The chain's keys here that this file does not set, once a new key needs them.
    let mut siblings: Option<Vec<&str>> = None;
    for (key, child) in map {
        // `infra:` is checked against the infra schema; `_override_` is a merge marker.
        if key == "_override_" || (path.is_empty() && key == "infra") {
            continue;
        }
        if chain.iter().any(|c| c.get(key).is_some()) {
            if child.as_map().is_some() {
                let maps: Vec<&Node> = chain
                    .iter()
                    .filter_map(|c| c.get(key))
                    .filter(|n| n.as_map().is_some())
                    .collect();
                if !maps.is_empty() {
                    path.push(key);
                    compare(child, &maps, path, out);
                    path.pop();
                }
            }
            continue;
        }
        // New here. A key of the chain this file also sets is not what it meant.
        let siblings = siblings.get_or_insert_with(|| {
            let mut keys: Vec<&str> = Vec::new();
            for k in chain
                .iter()
                .filter_map(|c| c.as_map())
                .flat_map(|m| m.keys())
            {
                if !map.contains_key(k) && !keys.contains(&k.as_str()) {
                    keys.push(k);
                }
            }
            keys
        });
        let Some(meant) = one_edit_away(key, siblings.iter().copied()) else {
            continue;
        };
        // The line that decides the chain's value: the last file in merge order writing it.
        let Some(parent) = chain.iter().rev().find_map(|c| c.get(meant)) else {
            continue;
        };
        out.push(finding(path, key, child, meant, parent));
    }
}

fn finding(path: &[&str], key: &str, child: &Node, meant: &str, parent: &Node) -> Finding {
    let full = |last: &str| {
        let mut segs = path.to_vec();
        segs.push(last);
        dotted(&segs)
    };
    let (mine, theirs) = (full(key), full(meant));
    let here = child.key_span.or(child.span);
    let there = parent.key_span.or(parent.span);
    // The parent's value, when it is short enough to quote.
    let written = parent
        .span
        .filter(|_| !parent.value.is_container())
        .map(|s| s.text().trim().to_string())
        .filter(|t| t.len() <= 40 && !t.contains('\n'));
    let kept = match written {
        Some(t) => format!(" (the chain writes `{meant}: {t}`)"),
        None => String::new(),
    };
    Finding::new(
        RECIPE_KEY_TYPO,
        format!(
            "`{mine}`{} is new; the parent chain has `{theirs}`{}: a typo?",
            line_of(here),
            line_of(there)
        ),
    )
    .at(here, "new key, not in the `defaults:` chain")
    .also(there, format!("`{theirs}` in the parent chain"))
    .fix(format!(
        "rename `{key}` to `{meant}` if it is meant to set the parent's key{kept}; if `{mine}` is new on purpose, silence this with `# nrl: allow recipe_key_typo` on its line"
    ))
}

/// ` (recipe.yaml:12)`, or nothing when the key has no line.
fn line_of(span: Option<Span>) -> String {
    match span {
        Some(s) => format!(" ({}:{})", s.file().name, s.line_col().0),
        None => String::new(),
    }
}

/// `a.b.c`, with a segment that would not read back written in brackets
/// (`labels['kai.scheduler/queue']`), as `--explain` takes keys.
fn dotted(segs: &[&str]) -> String {
    let mut out = String::new();
    for s in segs {
        let plain = !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-'));
        if plain {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(s);
        } else {
            out.push_str(&format!("['{s}']"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::{SourceKind, add_source};
    use crate::config::yaml::parse_mapping;
    use std::path::PathBuf;

    /// Files in merge order: `(name, text, ancestors)`.
    fn files(specs: &[(&str, &str, std::ops::Range<usize>)]) -> Vec<LoadedFile> {
        specs
            .iter()
            .map(|(name, text, ancestors)| {
                let id = add_source(*name, None, text.to_string(), SourceKind::Recipe);
                LoadedFile {
                    path: PathBuf::from(name),
                    tree: parse_mapping(id, name).unwrap(),
                    ancestors: ancestors.clone(),
                }
            })
            .collect()
    }

    fn messages(files: &[LoadedFile]) -> Vec<String> {
        findings(files).into_iter().map(|f| f.message).collect()
    }

    const PARENT: &str = "grpo:\n  max_num_steps: 500\n  val_period: 10\npolicy:\n  optimizer:\n    kwargs: {lr: 1.0e-6, weight_decay: 0.01}\n";

    #[test]
    fn a_key_one_edit_from_a_parent_key_warns_with_both_lines() {
        let f = files(&[
            ("parent.yaml", PARENT, 0..0),
            ("recipe.yaml", "grpo:\n  max_num_step: 5\n", 0..1),
        ]);
        let found = findings(&f);
        assert_eq!(found.len(), 1, "{found:?}");
        let w = &found[0];
        assert_eq!(w.code, RECIPE_KEY_TYPO);
        assert_eq!(w.severity, super::super::Severity::Warning);
        assert_eq!(
            w.message,
            "`grpo.max_num_step` (recipe.yaml:2) is new; the parent chain has `grpo.max_num_steps` (parent.yaml:2): a typo?"
        );
        assert_eq!(w.span.map(|s| s.text()).as_deref(), Some("max_num_step"));
        assert_eq!(w.related.len(), 1);
        assert_eq!(w.related[0].span.text(), "max_num_steps");
        assert!(
            w.fix.contains("rename `max_num_step` to `max_num_steps`"),
            "{}",
            w.fix
        );
        assert!(
            w.fix.contains("(the chain writes `max_num_steps: 500`)"),
            "{}",
            w.fix
        );
    }

    #[test]
    fn deeper_keys_a_swap_and_a_top_level_section_warn() {
        let f = files(&[
            ("p.yaml", PARENT, 0..0),
            (
                "c.yaml",
                "policy:\n  optimizer:\n    kwargs: {weight_decy: 0.1}\ngrpo:\n  val_peroid: 3\n",
                0..1,
            ),
            ("p.yaml", PARENT, 2..2),
            ("d.yaml", "polciy: {x: 1}\n", 2..3),
        ]);
        let m = messages(&f);
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(
            m[0].starts_with("`policy.optimizer.kwargs.weight_decy` (c.yaml:3)"),
            "{m:?}"
        );
        assert!(m[1].starts_with("`grpo.val_peroid` (c.yaml:5)"), "{m:?}");
        assert!(
            m[2].contains("the parent chain has `policy` (p.yaml:4)"),
            "{m:?}"
        );
    }

    #[test]
    fn new_keys_far_from_every_parent_key_and_present_keys_do_not_warn() {
        let f = files(&[
            ("p.yaml", PARENT, 0..0),
            (
                "c.yaml",
                // Present keys (also deep), new keys far from any, a new section's own
                // keys, a key whose near sibling the file sets too, and list items.
                "grpo:\n  max_num_epochs: 2\n  val_perio: 1\n  val_period: 3\n\
                 policy: {optimizer: {kwargs: {lr: 1, lf: 2, betas: [0.9, 0.99]}}}\n\
                 logger: {wandb_enabled: true, log_dir: x}\ninfra: {namespace: n}\n",
                0..1,
            ),
        ]);
        assert_eq!(messages(&f), Vec::<String>::new());
    }

    #[test]
    fn a_file_without_defaults_and_a_shared_grandparent_are_checked_once() {
        // c.yaml -> [a.yaml, b.yaml], both -> base.yaml (files as the walker lists them).
        let f = files(&[
            ("base.yaml", PARENT, 0..0),
            ("a.yaml", "grpo: {val_perod: 2}\n", 0..1),
            ("base.yaml", PARENT, 2..2),
            ("b.yaml", "grpo: {val_perod: 2}\n", 2..3),
            ("c.yaml", "grpo: {max_num_stepz: 1}\n", 0..4),
        ]);
        let m = messages(&f);
        // a and b each add `val_perod`; c adds `max_num_stepz` (a's and b's key is in
        // c's chain, so c's own file is compared with all of it).
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(m[0].starts_with("`grpo.val_perod` (a.yaml:1)"), "{m:?}");
        assert!(m[1].starts_with("`grpo.val_perod` (b.yaml:1)"), "{m:?}");
        assert!(m[2].starts_with("`grpo.max_num_stepz` (c.yaml:1)"), "{m:?}");
        // Alone, nothing is compared.
        assert!(messages(&f[..1]).is_empty());
    }

    #[test]
    fn keys_are_written_as_explain_takes_them() {
        assert_eq!(dotted(&["a", "b_c", "d-e"]), "a.b_c.d-e");
        assert_eq!(
            dotted(&["labels", "kai.scheduler/queue"]),
            "labels['kai.scheduler/queue']"
        );
    }
}
