//! The `defaults:` inheritance walker (NeMo-RL's recipe inheritance, ref-config-render §3.4).
//!
//! `defaults:` names parent files (a string or a list), relative to the file that names
//! them. Parents load recursively and merge in list order (later wins), then the child
//! merges on top. Unlike the reference, cycles are detected and reported with the chain,
//! and a missing parent points at the line that names it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::node::{Node, Value, deep_merge};
use super::source::{SourceKind, Span, SrcId, add_source};
use super::yaml::parse_mapping;
use crate::diag::{Diag, Result};

/// One file visited by the walker, in merge order (parents before children).
#[derive(Debug, Clone)]
pub struct LoadedFile {
    pub path: PathBuf,
    /// The file's own mapping with `defaults` removed (before merging).
    pub tree: Node,
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
    let abs = canonical(path).map_err(|e| read_error(path, &e, None))?;
    let mut w = Walker {
        kind,
        per_file,
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
        self.stack.push((abs.to_path_buf(), referenced_at));
        let dir = abs.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut base: Option<Node> = None;
        for (entry, span) in parents {
            let joined = dir.join(&entry);
            let parent_abs = canonical(&joined).map_err(|e| read_error(&joined, &e, span))?;
            let parent = self.load(&parent_abs, span)?;
            base = Some(match base {
                None => parent,
                Some(mut b) => {
                    merge_or_diag(&mut b, parent)?;
                    b
                }
            });
        }
        self.stack.pop();
        self.files.push(LoadedFile {
            path: abs.to_path_buf(),
            tree: tree.clone(),
        });
        match base {
            None => Ok(tree),
            Some(mut b) => {
                merge_or_diag(&mut b, tree)?;
                Ok(b)
            }
        }
    }
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
    deep_merge(base, over).map_err(|c| {
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
    })
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
}
