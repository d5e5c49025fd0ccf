//! The `defaults:` inheritance walker (NeMo-RL's recipe inheritance, ref-config-render §3.4).
//!
//! `defaults:` names parent files (a string or a list), relative to the file that names
//! them. Parents load recursively and merge in list order (later wins), then the child
//! merges on top. Unlike the reference, cycles are detected and reported with the chain,
//! and a missing parent points at the line that names it.
//!
//! Recipes load with [`load_recipe_with_defaults`], which follows NeMo-RL's
//! `load_config_with_inheritance` / `merge_with_override` step by step, because its
//! order of operations shows in the result:
//! - each merge step first reads every top-level value of the incoming config (the
//!   merged parent, or the child file alone): a top-level `???` fails, and a top-level
//!   interpolation is resolved right there, against that config only, so
//!   `model_alias: ${policy.model_name}` next to `defaults: parent.yaml` fails in
//!   NeMo-RL (`InterpolationKeyError`) and therefore in nrl too;
//! - only top-level sections honour `_override_` (marker removed when truthy, the base
//!   section dropped, so the section moves to the end); a nested `_override_`, a falsy
//!   one, and one in a file without `defaults:` stay ordinary keys;
//! - the rest is plain `OmegaConf.merge`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::env::Env;
use super::interp;
use super::node::{Map, Node, Value, deep_merge, omegaconf_merge};
use super::source::{SourceKind, Span, SrcId, add_source};
use super::yaml::parse_mapping;
use crate::diag::{Diag, Result};

/// One file visited by the walker, in merge order (parents before children).
#[derive(Debug, Clone)]
pub struct LoadedFile {
    pub path: PathBuf,
    /// The file's own mapping with `defaults` removed (before merging).
    pub tree: Node,
    /// Its `defaults:` chain (parents, their parents…) as positions in the same file
    /// list: the walker visits a file's chain just before the file, so the chain is the
    /// run of files before it, in merge order. Empty for a file without `defaults:`.
    pub ancestors: std::ops::Range<usize>,
}

impl LoadedFile {
    /// A file with no `defaults:` chain of its own.
    pub fn alone(path: PathBuf, tree: Node) -> LoadedFile {
        LoadedFile {
            path,
            tree,
            ancestors: 0..0,
        }
    }
}

/// The merged result and the files that made it.
#[derive(Debug, Clone)]
pub struct Inherited {
    pub merged: Node,
    pub files: Vec<LoadedFile>,
}

/// Hook applied to each file's mapping before it is merged (e.g. unwrapping `infra:`).
pub type PerFile<'a> = &'a dyn Fn(Node, &Path) -> Result<Node>;

/// Load `path` and its `defaults:` chain.
pub fn load_with_defaults(path: &Path, kind: SourceKind, per_file: PerFile) -> Result<Inherited> {
    walk(path, kind, per_file, None)
}

/// Load a recipe and its `defaults:` chain in NeMo-RL's order (module docs); `env` is
/// what top-level interpolations read while the chain merges.
pub fn load_recipe_with_defaults(path: &Path, env: &dyn Env) -> Result<Inherited> {
    walk(path, SourceKind::Recipe, &|n, _| Ok(n), Some(env))
}

fn walk(
    path: &Path,
    kind: SourceKind,
    per_file: PerFile,
    nemo_rl: Option<&dyn Env>,
) -> Result<Inherited> {
    let abs = canonical(path).map_err(|e| read_error(path, &e, None))?;
    let mut w = Walker {
        kind,
        per_file,
        nemo_rl,
        stack: Vec::new(),
        read: HashMap::new(),
        files: Vec::new(),
    };
    let merged = w.load(&abs, None)?;
    Ok(Inherited {
        merged,
        files: w.files,
    })
}

/// Read and register one file without inheritance.
pub fn read_file(path: &Path, kind: SourceKind, referenced_at: Option<Span>) -> Result<Node> {
    let (id, name) = register_file(path, kind, referenced_at)?;
    parse_mapping(id, &name)
}

/// Read one file into the source registry: its id and display name.
fn register_file(
    path: &Path,
    kind: SourceKind,
    referenced_at: Option<Span>,
) -> Result<(SrcId, String)> {
    let text = super::input::read_text(path).map_err(|e| read_error(path, &e, referenced_at))?;
    let name = display_path(path);
    let id = add_source(name.clone(), Some(path), text, kind);
    Ok((id, name))
}

/// A path as users like to see it: relative to the current directory when inside it.
pub fn display_path(path: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| path.strip_prefix(&cwd).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

fn canonical(p: &Path) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(p)
}

fn read_error(path: &Path, e: &std::io::Error, referenced_at: Option<Span>) -> Diag {
    let (code, what) = match e.kind() {
        std::io::ErrorKind::NotFound => {
            ("nrl::config::file_not_found", "file not found".to_string())
        }
        _ => ("nrl::config::read", format!("cannot read file ({e})")),
    };
    let d = Diag::new(code, format!("{what}: {}", path.display()));
    match referenced_at {
        Some(sp) => d
            .label(Some(sp), "named in `defaults:` here")
            .help("`defaults:` paths are relative to the file that names them; fix the path or create the file"),
        None => d.help(format!("check the path ({e})")),
    }
}

struct Walker<'a> {
    kind: SourceKind,
    per_file: PerFile<'a>,
    /// NeMo-RL's recipe semantics, with the environment top-level reads resolve in.
    nemo_rl: Option<&'a dyn Env>,
    /// Files being loaded, with the span of the `defaults` entry that led to each.
    stack: Vec<(PathBuf, Option<Span>)>,
    /// Files already read: a file reached twice (two parents sharing a grandparent) is
    /// parsed again from its registered text rather than kept as a second tree.
    read: HashMap<PathBuf, (SrcId, String)>,
    files: Vec<LoadedFile>,
}

impl Walker<'_> {
    fn load(&mut self, abs: &Path, referenced_at: Option<Span>) -> Result<Node> {
        if let Some(pos) = self.stack.iter().position(|(p, _)| p == abs) {
            let mut chain: Vec<String> = self.stack[pos..]
                .iter()
                .map(|(p, _)| display_name(p))
                .collect();
            chain.push(display_name(abs));
            return Err(Diag::new(
                "nrl::config::defaults_cycle",
                format!("`defaults:` inheritance cycle: {}", chain.join(" -> ")),
            )
            .label(referenced_at, "this entry closes the cycle")
            .help("a file may not inherit from itself, directly or through its parents; remove one of the `defaults:` entries"));
        }
        let (id, name) = match self.read.get(abs) {
            Some(known) => known.clone(),
            None => {
                let known = register_file(abs, self.kind, referenced_at)?;
                self.read.insert(abs.to_path_buf(), known.clone());
                known
            }
        };
        let mut tree = parse_mapping(id, &name)?;
        let parents = take_defaults(&mut tree)?;
        let tree = (self.per_file)(tree, abs)?;
        let first_ancestor = self.files.len();
        self.stack.push((abs.to_path_buf(), referenced_at));
        let dir = abs.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut base: Option<Node> = None;
        for (entry, span) in parents {
            let joined = dir.join(&entry);
            let parent_abs = canonical(&joined).map_err(|e| read_error(&joined, &e, span))?;
            let parent = self.load(&parent_abs, span)?;
            base = Some(match (base, self.nemo_rl) {
                (None, None) => parent,
                (Some(mut b), None) => {
                    merge_or_diag(&mut b, parent)?;
                    b
                }
                // NeMo-RL starts from an empty config, so the first parent goes through
                // a merge step (and its top-level reads) too.
                (b, Some(env)) => {
                    let mut b = b.unwrap_or_else(|| Node::from_map(Map::new()));
                    nemo_rl_merge(&mut b, parent, &parent_abs, env)?;
                    b
                }
            });
        }
        self.stack.pop();
        self.files.push(LoadedFile {
            path: abs.to_path_buf(),
            tree: tree.clone(),
            ancestors: first_ancestor..self.files.len(),
        });
        match (base, self.nemo_rl) {
            (None, _) => Ok(tree),
            (Some(mut b), None) => {
                merge_or_diag(&mut b, tree)?;
                Ok(b)
            }
            (Some(mut b), Some(env)) => {
                if b.span.is_none() {
                    b.span = tree.span;
                }
                nemo_rl_merge(&mut b, tree, abs, env)?;
                Ok(b)
            }
        }
    }
}

pub const CODE_READ_BEFORE_MERGE: &str = "nrl::config::read_before_merge";

/// One step of NeMo-RL's `merge_with_override(base, incoming)`.
fn nemo_rl_merge(base: &mut Node, mut incoming: Node, file: &Path, env: &dyn Env) -> Result<()> {
    read_top_level(&incoming, file, env)?;
    let keys: Vec<String> = incoming
        .as_map()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    for key in keys {
        // `incoming[key]` is the section, or, for `key: ${a.b}`, the node `a.b` itself
        // (DictConfig returns the referenced container), so a marker found through the
        // reference is popped from that node and drops `key` from the base.
        let target: Vec<String> = match incoming.as_map().and_then(|m| m.get(&key)) {
            Some(v) if refers_to_container(&incoming, v) => {
                let t = v.as_str().unwrap_or("");
                t[2..t.len() - 1].split('.').map(str::to_string).collect()
            }
            _ => vec![key.clone()],
        };
        let Some(sm) = node_at_mut(&mut incoming, &target).and_then(Node::as_map_mut) else {
            continue;
        };
        if sm.get("_override_").is_some_and(truthy) {
            sm.shift_remove("_override_");
            if let Some(bm) = base.as_map_mut() {
                bm.shift_remove(&key);
            }
        }
    }
    let base_span = base.span;
    let incoming_span = incoming.span;
    match incoming.value {
        // Key by key, so a dereference sees the keys merged before it (OmegaConf merges
        // in the incoming config's order).
        Value::Map(im) if base.as_map().is_some() => {
            for (key, value) in im {
                let mut path = Vec::new();
                let mut one = Map::new();
                one.insert(key, value);
                let one = Node::spanned(Value::Map(one), incoming_span);
                deref_for_merge(base, &mut path, &one, env);
                merge_plain(base, one)?;
            }
        }
        value => merge_plain(base, Node::spanned(value, incoming_span))?,
    }
    base.span = base_span.or(base.span);
    Ok(())
}

/// `OmegaConf.merge` (basecontainer.py `_map_merge`): where the incoming config sets a
/// key whose base value is an interpolation, the base value is dereferenced first and,
/// when it stands for a mapping or list, replaced by that container, which the incoming
/// value then merges into (a dict onto a list is then an error; `???` keeps it). A
/// failed resolution is ignored there, as OmegaConf does.
fn deref_for_merge(root: &mut Node, path: &mut Vec<String>, incoming: &Node, env: &dyn Env) {
    let Some(im) = incoming.as_map() else {
        return;
    };
    for (key, inc) in im {
        path.push(key.clone());
        let here = node_at(root, path);
        let interpolated =
            here.is_some_and(|n| matches!(&n.value, Value::Str(s) if s.contains("${")));
        if interpolated && !path.iter().any(|s| s.contains('.')) {
            let replacement = here.and_then(|n| {
                if refers_to_container(root, n) {
                    let target = n.as_str().unwrap_or("");
                    let target = &target[2..target.len() - 1];
                    // A reference to an enclosing mapping is left alone (the oracle shows
                    // OmegaConf then merges as if it were a plain value).
                    let enclosing = target.split('.').zip(path.iter()).all(|(a, b)| a == b)
                        && target.split('.').count() < path.len();
                    if enclosing {
                        None
                    } else {
                        root.get_path(target).cloned()
                    }
                } else if interp::yields_config_node(n.as_str().unwrap_or("")) {
                    interp::resolve_path(root, &path.join("."), env)
                        .ok()
                        .filter(|v| v.value.is_container())
                } else {
                    None
                }
            });
            if let (Some(mut r), Some(slot)) = (replacement, node_at_mut(root, path)) {
                r.key_span = slot.key_span;
                r.key_kind = slot.key_kind;
                *slot = r;
            }
        }
        if matches!(inc.value, Value::Map(_))
            && node_at(root, path).is_some_and(|n| n.as_map().is_some())
        {
            deref_for_merge(root, path, inc, env);
        }
        path.pop();
    }
}

fn node_at<'n>(root: &'n Node, path: &[String]) -> Option<&'n Node> {
    path.iter().try_fold(root, |n, seg| n.as_map()?.get(seg))
}

fn node_at_mut<'n>(root: &'n mut Node, path: &[String]) -> Option<&'n mut Node> {
    path.iter()
        .try_fold(root, |n, seg| n.as_map_mut()?.get_mut(seg))
}

/// Is `value` exactly `${a.b}` (absolute) naming a mapping or list of `root`?
fn refers_to_container(root: &Node, value: &Node) -> bool {
    let Some(path) = value
        .as_str()
        .and_then(|s| s.strip_prefix("${"))
        .and_then(|s| s.strip_suffix('}'))
    else {
        return false;
    };
    let simple = !path.is_empty()
        && !path.starts_with('.')
        && path
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'));
    simple && root.get_path(path).is_some_and(|n| n.value.is_container())
}

/// Python truthiness of a marker value as `DictConfig.get` returns it.
fn truthy(n: &Node) -> bool {
    match &n.value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Int(i) => *i != 0,
        Value::Float(f) => *f != 0.0,
        Value::Str(s) => !s.is_empty() && !n.is_missing(),
        Value::List(l) => !l.is_empty(),
        Value::Map(m) => !m.is_empty(),
    }
}

/// NeMo-RL reads `incoming[key]` for every top-level key before merging: a `???` raises
/// `MissingMandatoryValue`, an interpolation is resolved against `incoming` alone.
fn read_top_level(incoming: &Node, file: &Path, env: &dyn Env) -> Result<()> {
    let Some(map) = incoming.as_map() else {
        return Ok(());
    };
    let name = display_path(file);
    for (key, value) in map {
        let why = if value.is_missing() {
            format!("Missing mandatory value: {key}")
        } else if matches!(&value.value, Value::Str(s) if s.contains("${")) && !key.contains('.') {
            if refers_to_container(incoming, value) {
                // `incoming[key]` returns the container node itself; its values are only
                // read later, after the merge.
                continue;
            }
            match interp::resolve_path(incoming, key, env) {
                Ok(_) => continue,
                Err(d) => d.message.clone(),
            }
        } else {
            continue;
        };
        return Err(Diag::new(
            CODE_READ_BEFORE_MERGE,
            format!(
                "NeMo-RL's loader fails on `{key}` in {name}: it reads each top-level value \
                 before merging the file with its parents ({why})"
            ),
        )
        .label(value.best_span(), "read before the merge")
        .help(if value.is_missing() {
            format!(
                "a top-level `???` cannot be read by NeMo-RL's merge step; move `{key}` under \
                 a section, or give it a value and override it"
            )
        } else {
            format!(
                "a top-level interpolation only sees its own file at that point; move `{key}` \
                 under a section (nested values are read after the merge), or define what it \
                 points at in the same file"
            )
        })
        .note("NeMo-RL: nemo_rl/utils/config.py merge_with_override reads override_config[key]"));
    }
    Ok(())
}

fn display_name(p: &Path) -> String {
    p.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// Remove the top-level `defaults` key and return its entries with their spans.
fn take_defaults(tree: &mut Node) -> Result<Vec<(String, Option<Span>)>> {
    let Some(map) = tree.as_map_mut() else {
        return Ok(Vec::new());
    };
    let Some(node) = map.shift_remove("defaults") else {
        return Ok(Vec::new());
    };
    match node.value {
        Value::Null => Ok(Vec::new()),
        Value::Str(s) => Ok(vec![(s, node.span)]),
        Value::List(items) => items
            .into_iter()
            .map(|it| match it.value {
                Value::Str(s) => Ok((s, it.span)),
                _ => Err(Diag::new(
                    "nrl::config::defaults_entry",
                    format!(
                        "a `defaults:` entry must be a file path, not a {}",
                        it.type_name()
                    ),
                )
                .label(it.span, "not a path")
                .help("write `defaults: ../base.yaml` or a list of paths")),
            })
            .collect(),
        _ => Err(Diag::new(
            "nrl::config::defaults_entry",
            format!(
                "`defaults:` must be a path or a list of paths, not a {}",
                node.type_name()
            ),
        )
        .label(node.span, "here")
        .help("write `defaults: ../base.yaml` or a list of paths")),
    }
}

/// Merge with a diagnostic that points at both sides of a mapping/list clash.
pub fn merge_or_diag(base: &mut Node, over: Node) -> Result<()> {
    deep_merge(base, over).map_err(merge_diag)
}

fn merge_plain(base: &mut Node, over: Node) -> Result<()> {
    omegaconf_merge(base, over).map_err(merge_diag)
}

fn merge_diag(c: super::node::MergeConflict) -> Diag {
    {
        Diag::new(
            "nrl::config::merge",
            format!(
                "cannot merge a {} into a {} at `{}`",
                c.over_type, c.base_type, c.path
            ),
        )
        .label(c.over_span, format!("this {} …", c.over_type))
        .label(c.base_span, format!("… cannot replace this {}", c.base_type))
        .help("a mapping and a list never merge; use the same shape in both files, or set the key to null first")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn identity(n: Node, _: &Path) -> Result<Node> {
        Ok(n)
    }

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn chain_with_relative_paths_and_late_binding_shape() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "base.yaml",
            "policy: {lr: 1, opt: {a: 1}}\nlist: [1, 2]\n",
        );
        write(
            d.path(),
            "sub/mid.yaml",
            "defaults: ../base.yaml\npolicy: {opt: null}\n",
        );
        let leaf = write(
            d.path(),
            "sub/leaf.yaml",
            "defaults: ./mid.yaml\npolicy: {lr: 2}\n",
        );
        let r = load_with_defaults(&leaf, SourceKind::Recipe, &identity).unwrap();
        assert_eq!(r.merged.get_path("policy.lr").unwrap().as_i64(), Some(2));
        assert!(r.merged.get_path("policy.opt").unwrap().is_null());
        assert!(r.merged.get("defaults").is_none());
        assert_eq!(r.files.len(), 3);
        assert!(r.files[0].path.ends_with("base.yaml"));
    }

    #[test]
    fn list_form_last_parent_wins_child_wins_over_all() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "a.yaml", "lr: 1\nx: a\n");
        write(d.path(), "b.yaml", "lr: 2\ny: b\n");
        let c = write(d.path(), "c.yaml", "defaults: [a.yaml, b.yaml]\ny: c\n");
        let r = load_with_defaults(&c, SourceKind::Recipe, &identity).unwrap();
        assert_eq!(r.merged.get("lr").unwrap().as_i64(), Some(2));
        assert_eq!(r.merged.get("x").unwrap().as_str(), Some("a"));
        assert_eq!(r.merged.get("y").unwrap().as_str(), Some("c"));
    }

    #[test]
    fn a_shared_grandparent_is_read_once_and_merged_under_each_parent() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "base.yaml", "lr: 1\nx: base\n");
        write(d.path(), "a.yaml", "defaults: base.yaml\nx: a\n");
        write(d.path(), "b.yaml", "defaults: base.yaml\ny: b\n");
        let c = write(d.path(), "c.yaml", "defaults: [a.yaml, b.yaml]\n");
        let r = load_with_defaults(&c, SourceKind::Recipe, &identity).unwrap();
        // b's copy of base comes after a, so base's `x` wins again (OmegaConf order).
        assert_eq!(r.merged.get("x").unwrap().as_str(), Some("base"));
        assert_eq!(r.merged.get("y").unwrap().as_str(), Some("b"));
        let paths: Vec<_> = r.files.iter().map(|f| display_name(&f.path)).collect();
        assert_eq!(
            paths,
            ["base.yaml", "a.yaml", "base.yaml", "b.yaml", "c.yaml"]
        );
        // Both visits point into the one registered text of base.yaml.
        let src = |i: usize| r.files[i].tree.get("lr").unwrap().span.unwrap().src;
        assert_eq!(src(0), src(2));
        assert_eq!(r.merged.get("lr").unwrap().span.unwrap().text(), "1");
        // Each file's chain is the run of files just before it.
        let chains: Vec<_> = r.files.iter().map(|f| f.ancestors.clone()).collect();
        assert_eq!(chains, [0..0, 0..1, 2..2, 2..3, 0..4]);
    }

    #[test]
    fn cycle_is_reported_with_chain() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "a.yaml", "defaults: b.yaml\n");
        write(d.path(), "b.yaml", "defaults: c.yaml\n");
        let c = write(d.path(), "c.yaml", "defaults: a.yaml\n");
        let e = load_with_defaults(&c, SourceKind::Recipe, &identity).unwrap_err();
        assert_eq!(e.code, "nrl::config::defaults_cycle");
        assert!(
            e.message.contains("c.yaml -> a.yaml -> b.yaml -> c.yaml"),
            "{}",
            e.message
        );
        assert!(
            e.location().unwrap().ends_with("b.yaml:1:11"),
            "{:?}",
            e.location()
        );
    }

    #[test]
    fn missing_parent_points_at_referencing_line() {
        let d = tempfile::tempdir().unwrap();
        let c = write(d.path(), "c.yaml", "x: 1\ndefaults:\n  - nope.yaml\n");
        let e = load_with_defaults(&c, SourceKind::Recipe, &identity).unwrap_err();
        assert_eq!(e.code, "nrl::config::file_not_found");
        assert!(e.message.contains("nope.yaml"));
        assert!(
            e.location().unwrap().ends_with("c.yaml:3:5"),
            "{:?}",
            e.location()
        );
    }

    #[test]
    fn non_string_entry_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let c = write(d.path(), "c.yaml", "defaults: [1]\n");
        let e = load_with_defaults(&c, SourceKind::Recipe, &identity).unwrap_err();
        assert_eq!(e.code, "nrl::config::defaults_entry");
    }

    #[test]
    fn merge_conflict_names_both_sides() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "a.yaml", "x: {k: 1}\n");
        let c = write(d.path(), "c.yaml", "defaults: a.yaml\nx: [1]\n");
        let e = load_with_defaults(&c, SourceKind::Recipe, &identity).unwrap_err();
        assert_eq!(e.code, "nrl::config::merge");
        assert_eq!(e.labels.len(), 2);
    }

    fn recipe(dir: &Path, root: &str) -> Result<Inherited> {
        let env = crate::config::env::MapEnv::new([("NRL_USER", "t")]);
        load_recipe_with_defaults(&dir.join(root), &env)
    }

    #[test]
    fn top_level_interpolation_into_the_parent_fails_like_nemo_rl() {
        // Issue 14 item 11: NeMo-RL's merge_with_override reads each top-level value of
        // the child before the merge (real OmegaConf 2.3: InterpolationKeyError).
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "parent.yaml", "policy:\n  model_name: m\n");
        write(
            d.path(),
            "child.yaml",
            "defaults: parent.yaml\nmodel_alias: ${policy.model_name}\n",
        );
        let e = recipe(d.path(), "child.yaml").unwrap_err();
        assert_eq!(e.code, CODE_READ_BEFORE_MERGE);
        let text = e.render(false, 100);
        let text = text.replace(&display_path(&canonical(d.path()).unwrap()), "<dir>");
        insta::assert_snapshot!(text);
        // Nested, the same interpolation is read after the merge and works.
        write(
            d.path(),
            "nested.yaml",
            "defaults: parent.yaml\nlogger:\n  alias: ${policy.model_name}\n",
        );
        assert!(recipe(d.path(), "nested.yaml").is_ok());
        // A file without `defaults:` is never merged, so nothing is read early.
        write(d.path(), "alone.yaml", "alias: ${policy.model_name}\n");
        assert!(recipe(d.path(), "alone.yaml").is_ok());
    }

    #[test]
    fn other_reads_before_the_merge() {
        // Each expectation checked with tests/oracle/nemo_rl_loader.py.
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "p.yaml", "m: ???\npolicy:\n  a: ???\n");
        write(d.path(), "c.yaml", "defaults: p.yaml\nx: 1\n");
        let e = recipe(d.path(), "c.yaml").unwrap_err();
        assert!(
            e.message.contains("Missing mandatory value: m"),
            "{}",
            e.message
        );
        write(d.path(), "q.yaml", "m: 1\n");
        write(d.path(), "c2.yaml", "defaults: q.yaml\nx: ???\n");
        assert_eq!(
            recipe(d.path(), "c2.yaml").unwrap_err().code,
            CODE_READ_BEFORE_MERGE
        );
        write(d.path(), "c3.yaml", "defaults: q.yaml\nx: ${oc.env:NOPE}\n");
        assert_eq!(
            recipe(d.path(), "c3.yaml").unwrap_err().code,
            CODE_READ_BEFORE_MERGE
        );
        // The child's own keys are fine, and they win.
        write(d.path(), "c4.yaml", "defaults: q.yaml\nx: ${m}\nm: 2\n");
        let r = recipe(d.path(), "c4.yaml").unwrap();
        assert_eq!(r.merged.get("m").unwrap().as_i64(), Some(2));
        // A parent with its own defaults is read alone at its own merge step.
        write(d.path(), "g.yaml", "g: 5\n");
        write(d.path(), "p2.yaml", "defaults: g.yaml\ny: ${g}\n");
        write(d.path(), "c5.yaml", "defaults: p2.yaml\nx: 1\n");
        assert_eq!(
            recipe(d.path(), "c5.yaml").unwrap_err().code,
            CODE_READ_BEFORE_MERGE
        );
    }

    #[test]
    fn a_marker_read_through_a_top_level_reference_is_honoured_like_nemo_rl() {
        // Found by the NeMo-RL oracle (seed 498976): reading `incoming["alias"]` returns
        // the node `policy.a`, so its nested marker is popped there and `alias` is dropped
        // from the base (and moves to the end), whichever of the two keys comes first.
        // Expected results from real OmegaConf via tests/oracle/nemo_rl_loader.py.
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "p.yaml", "policy: {a: 3, b: 2}\nalias: 7\nw: 1\n");
        for child in [
            "defaults: p.yaml\nalias: ${policy.a}\npolicy: {a: {_override_: true, x: 1}}\n",
            "defaults: p.yaml\npolicy: {a: {_override_: true, x: 1}}\nalias: ${policy.a}\n",
        ] {
            write(d.path(), "c.yaml", child);
            let r = recipe(d.path(), "c.yaml").unwrap();
            let resolved =
                interp::resolve(&r.merged, &crate::config::env::MapEnv::new([])).unwrap();
            assert_eq!(
                serde_json::to_string(&resolved.to_json()).unwrap(),
                r#"{"policy":{"a":{"x":1},"b":2},"w":1,"alias":{"x":1}}"#,
                "{child}"
            );
        }
    }

    #[test]
    fn override_markers_only_on_top_level_sections() {
        // NeMo-RL: top-level sections only, the replaced section moves to the end, a
        // nested or falsy marker stays an ordinary key, as does one in a file without
        // `defaults:` (results from real OmegaConf via tests/oracle/nemo_rl_loader.py).
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "p.yaml",
            "policy: {a: 1, b: 2}\nz: {q: {s: 1}}\nw: 1\n",
        );
        write(
            d.path(),
            "c.yaml",
            "defaults: p.yaml\npolicy: {_override_: true, a: 5}\nz: {q: {_override_: true, r: 1}}\n",
        );
        let r = recipe(d.path(), "c.yaml").unwrap();
        assert_eq!(
            serde_json::to_string(&r.merged.to_json()).unwrap(),
            r#"{"z":{"q":{"s":1,"_override_":true,"r":1}},"w":1,"policy":{"a":5}}"#
        );
        write(
            d.path(),
            "f.yaml",
            "defaults: p.yaml\npolicy: {_override_: false, a: 5}\n",
        );
        let r = recipe(d.path(), "f.yaml").unwrap();
        assert_eq!(
            serde_json::to_string(&r.merged.get("policy").unwrap().to_json()).unwrap(),
            r#"{"a":5,"b":2,"_override_":false}"#
        );
        write(d.path(), "alone.yaml", "policy: {_override_: true, a: 5}\n");
        let r = recipe(d.path(), "alone.yaml").unwrap();
        assert_eq!(
            serde_json::to_string(&r.merged.to_json()).unwrap(),
            r#"{"policy":{"_override_":true,"a":5}}"#
        );
    }

    #[test]
    fn merge_dereferences_an_interpolated_container_like_omegaconf() {
        // Found by the NeMo-RL oracle; OmegaConf's _map_merge replaces a base
        // interpolation that stands for a container before merging into it.
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "p.yaml",
            "x: {a: 1}\ny: ${x}\nl: [1]\nz: ${l}\nw: \"${oc.decode:'[1]'}\"\n",
        );
        write(
            d.path(),
            "c.yaml",
            "defaults: p.yaml\ny: {b: 2}\nw: {c: 3}\n",
        );
        let r = recipe(d.path(), "c.yaml").unwrap();
        assert_eq!(
            r.merged.get("y").unwrap().to_json(),
            serde_json::json!({"a": 1, "b": 2})
        );
        // oc.decode gives a plain value, not a config node: replaced as usual.
        assert_eq!(
            r.merged.get("w").unwrap().to_json(),
            serde_json::json!({"c": 3})
        );
        write(d.path(), "c2.yaml", "defaults: p.yaml\nz: {b: 2}\n");
        assert_eq!(
            recipe(d.path(), "c2.yaml").unwrap_err().code,
            "nrl::config::merge"
        );
    }

    #[test]
    fn a_top_level_reference_to_a_section_is_not_resolved_inside() {
        // `incoming["alias"]` returns the section node; its own values are read later.
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "p.yaml", "policy: {a: 1}\n");
        write(
            d.path(),
            "c.yaml",
            "defaults: p.yaml\ngrpo:\n  lr: ${policy.a}\nalias: ${grpo}\n",
        );
        let r = recipe(d.path(), "c.yaml").unwrap();
        assert_eq!(r.merged.get("alias").unwrap().as_str(), Some("${grpo}"));
    }

    #[test]
    fn a_reference_to_the_enclosing_section_is_not_dereferenced_by_the_merge() {
        // NeMo-RL oracle, seed 4: `policy.flag: ${policy}` overridden by a mapping.
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "p.yaml", "policy:\n  a: 3\n  flag: ${policy}\n");
        write(
            d.path(),
            "c.yaml",
            "defaults: p.yaml\npolicy:\n  flag:\n    b: 1\n",
        );
        let r = recipe(d.path(), "c.yaml").unwrap();
        assert_eq!(
            r.merged.get_path("policy.flag").unwrap().to_json(),
            serde_json::json!({"b": 1})
        );
    }
}
