//! Shell-completion candidates (`nrl completions`): the override keys a recipe + infra
//! pair accepts, the targets and roles its infra declares, the recorded run ids and the
//! kubeconfig's contexts.
//!
//! Everything here reads local files through the library's own loaders (the recipe's
//! `defaults:` chain, the infra layers and schema, the run records, the kubeconfig) and
//! never the network. A completion never fails: what cannot be read gives no candidates.
//! `cli::completions` wires these functions to clap's completion engine.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::defaults::load_with_defaults;
use crate::config::env::Env;
use crate::config::layers::{LoadRequest, LoadedConfig, load, load_recipe_tree};
use crate::config::node::{Node, Value};
use crate::config::overrides::{dotted, parse_override, render_value};
use crate::config::schema::{InfraConfig, Role};
use crate::config::source::SourceKind;
use crate::config::typed::check::Shape;
use crate::launch::records::{RunKind, RunStore};
use crate::render::targets::parse_targets;

/// One completion: the text to insert and, for shells that show it, a short description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub value: String,
    pub help: Option<String>,
}

impl Candidate {
    fn new(value: impl Into<String>, help: Option<String>) -> Candidate {
        Candidate {
            value: value.into(),
            help,
        }
    }
}

/// The recipe (and `--infra`) the command line being completed names.
#[derive(Debug, Clone, Default)]
pub struct Pair {
    pub recipe: PathBuf,
    pub infra: Option<PathBuf>,
}

impl Pair {
    /// The pair loaded as the commands load it (no overrides, the `default` namespace
    /// fallback: inferring one would read the kubeconfig for nothing); `None` when it
    /// does not load.
    pub fn load(&self, env: Arc<dyn Env>) -> Option<LoadedConfig> {
        let mut req = LoadRequest::new(self.recipe.clone(), env);
        req.infra = self.infra.clone();
        load(&req).ok()
    }
}

/// Every key an override may name: the merged recipe and the infra, loaded once.
pub struct KeySpace {
    /// The merged recipe (its `defaults:` chain), without `infra`.
    recipe: Node,
    /// The infra trees, first wins: the validated model with every default (so each
    /// field of the schema is there), then the resolved mapping as written (free-form
    /// sections such as a role's `spec`). Empty when the infra does not validate.
    infra: Vec<Node>,
    /// Whether `infra.` keys exist (a Gym submit config has none).
    has_infra: bool,
}

/// The first segment of an infra-side override key.
const INFRA: &str = "infra";

impl KeySpace {
    /// The keys of `pair`; `None` when the recipe does not load. An infra that does not
    /// validate still offers the schema's keys.
    pub fn load(pair: &Pair, env: Arc<dyn Env>) -> Option<KeySpace> {
        if let Some(cfg) = pair.load(env.clone()) {
            return Some(KeySpace::of(&cfg));
        }
        let (_, mut recipe, _) = load_recipe_tree(&pair.recipe, env.as_ref()).ok()?;
        if let Some(m) = recipe.as_map_mut() {
            m.shift_remove(INFRA);
        }
        Some(KeySpace {
            recipe,
            infra: Vec::new(),
            has_infra: true,
        })
    }

    /// The keys of a Gym submit config and its `defaults:` chain (`nrl gym submit|render`
    /// take overrides of it); `None` when it does not load.
    pub fn gym(config: &Path) -> Option<KeySpace> {
        let inh = load_with_defaults(config, SourceKind::Gym, &|n, _| Ok(n)).ok()?;
        Some(KeySpace {
            recipe: inh.merged,
            infra: Vec::new(),
            has_infra: false,
        })
    }

    /// The keys of a loaded pair.
    pub fn of(cfg: &LoadedConfig) -> KeySpace {
        KeySpace {
            recipe: cfg.recipe.clone(),
            infra: vec![cfg.infra.to_node(), cfg.infra.source.clone()],
            has_infra: true,
        }
    }

    /// The completions of override `word` as typed so far: the next key segment under
    /// what is typed (`policy.opt` -> `policy.optimizer.`; `grpo.max` ->
    /// `grpo.max_num_steps=`), with the Hydra prefix kept (`+`, `++`, `~`). Values (after
    /// `=`) are not completed.
    pub fn complete(&self, word: &str) -> Vec<Candidate> {
        let (op, key) = split_op(word);
        // A `~` deletion needs no value.
        self.next_segment(op, key, if op == "~" { "" } else { "=" })
    }

    /// The completions of a key alone (`--explain KEY`): as [`KeySpace::complete`], a
    /// value's key without `=`.
    pub fn complete_key(&self, key: &str) -> Vec<Candidate> {
        self.next_segment("", key, "")
    }

    /// `op` + the keys one segment below what `key` has typed, each ending in `.` when it
    /// has keys of its own, else in `leaf_end`.
    fn next_segment(&self, op: &str, key: &str, leaf_end: &str) -> Vec<Candidate> {
        if key.contains('=') {
            return Vec::new();
        }
        let parent_text = parent_of(key);
        let Some(parent) = parse_path(parent_text) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for child in self.children(&parent) {
            let seg = dotted(std::slice::from_ref(&child.key));
            let bracketed = seg.starts_with('[');
            let full = if parent_text.is_empty() {
                seg
            } else if bracketed {
                format!("{parent_text}{seg}")
            } else {
                format!("{parent_text}.{seg}")
            };
            // `labels.` + a bracketed segment is `labels['a.b']`: the dot goes.
            let bracket_after_dot = bracketed && key == format!("{parent_text}.");
            if !full.starts_with(key) && !bracket_after_dot {
                continue;
            }
            let end = if child.has_keys { "." } else { leaf_end };
            out.push(Candidate::new(format!("{op}{full}{end}"), child.help));
        }
        out
    }

    /// The keys directly under `path` (`infra` first for the infra side).
    fn children(&self, path: &[String]) -> Vec<Child> {
        match path.split_first() {
            None if !self.has_infra => children_of(&[&self.recipe]),
            None => {
                let mut out = children_of(&[&self.recipe]);
                out.retain(|c| c.key != INFRA);
                out.push(Child {
                    key: INFRA.to_string(),
                    has_keys: true,
                    help: Some("the infra layer (--infra, or the recipe's `infra:`)".into()),
                });
                out
            }
            Some((first, rest)) if first == INFRA && self.has_infra => {
                let trees: Vec<&Node> = self.infra.iter().filter_map(|t| at(t, rest)).collect();
                let mut out = children_of(&trees);
                // The schema's own keys, also when the infra did not validate.
                if let Some(shape) = shape_at(&InfraConfig::SHAPE, rest) {
                    for field in shape.fields {
                        let has_keys = shape.sections.iter().any(|(k, _)| k == field);
                        match out.iter_mut().find(|c| c.key == *field) {
                            Some(c) => c.has_keys |= has_keys,
                            None => out.push(Child {
                                key: field.to_string(),
                                has_keys,
                                help: None,
                            }),
                        }
                    }
                }
                out
            }
            Some(_) => match at(&self.recipe, path) {
                Some(node) => children_of(&[node]),
                None => Vec::new(),
            },
        }
    }
}

/// A key under a prefix.
struct Child {
    key: String,
    /// A mapping: the key continues with `.`.
    has_keys: bool,
    /// A value's current setting, shortened.
    help: Option<String>,
}

/// The keys of the mappings `trees` (first wins for the order and the value shown).
fn children_of(trees: &[&Node]) -> Vec<Child> {
    let mut out: Vec<Child> = Vec::new();
    for tree in trees {
        let Some(map) = tree.as_map() else { continue };
        for (key, node) in map {
            let has_keys = matches!(node.value, Value::Map(_));
            match out.iter_mut().find(|c| c.key == *key) {
                Some(c) => c.has_keys |= has_keys,
                None => out.push(Child {
                    key: key.clone(),
                    has_keys,
                    help: if has_keys { None } else { value_help(node) },
                }),
            }
        }
    }
    out
}

/// The node at `path` under `root`, when every step is a mapping key.
fn at<'a>(root: &'a Node, path: &[String]) -> Option<&'a Node> {
    path.iter()
        .try_fold(root, |node, seg| node.as_map()?.get(seg))
}

/// The schema model at `path`, following the sections the models declare.
fn shape_at<'s>(root: &'s Shape, path: &[String]) -> Option<&'s Shape> {
    path.iter().try_fold(root, |shape, seg| {
        shape
            .sections
            .iter()
            .find(|(k, _)| k == seg)
            .map(|(_, s)| *s)
    })
}

/// A leaf's value as an override would write it, on one short line.
fn value_help(node: &Node) -> Option<String> {
    const MAX: usize = 60;
    let text = render_value(node)?;
    let line = text.lines().next().unwrap_or_default();
    if line.chars().count() > MAX || line.len() < text.len() {
        let cut: String = line.chars().take(MAX).collect();
        Some(format!("{cut}…"))
    } else {
        Some(line.to_string())
    }
}

/// The Hydra prefix of an override (`++`, `+`, `~` or none) and its key text.
fn split_op(word: &str) -> (&'static str, &str) {
    for op in ["++", "+", "~"] {
        if let Some(rest) = word.strip_prefix(op) {
            return (op, rest);
        }
    }
    ("", word)
}

/// The complete segments of a key being typed: up to its last `.` or `[` outside
/// brackets (`a.b['x.y'].c` -> `a.b['x.y']`; `labels['k` -> `labels`).
fn parent_of(key: &str) -> &str {
    let mut cut = 0;
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    for (i, ch) in key.char_indices() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') if depth > 0 => quote = Some(ch),
            (None, '[') => {
                if depth == 0 {
                    cut = i;
                }
                depth += 1;
            }
            (None, ']') => depth = depth.saturating_sub(1),
            (None, '.') if depth == 0 => cut = i,
            _ => {}
        }
    }
    &key[..cut]
}

/// The segments of a complete key (`a.b['x.y']` -> `a`, `b`, `x.y`), by the override
/// grammar itself.
fn parse_path(key: &str) -> Option<Vec<String>> {
    if key.is_empty() {
        return Some(Vec::new());
    }
    parse_override(0, &format!("{key}=0"))
        .ok()
        .map(|ov| ov.path)
}

/// `--target` values: the roles (`kuberay.<role>`) and deployments
/// (`deployments.<name>`) the infra declares, in `cluster up`'s order.
pub fn targets(infra: &InfraConfig, prefix: &str) -> Vec<Candidate> {
    parse_targets(infra, &[])
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.label())
        .filter(|label| label.starts_with(prefix))
        .map(|label| Candidate::new(label, None))
        .collect()
}

/// `--role` values: the roles `infra` declares, else (no infra) every role.
pub fn roles(infra: Option<&InfraConfig>, prefix: &str) -> Vec<Candidate> {
    let roles: Vec<Role> = match infra {
        Some(infra) => infra.kuberay.roles().map(|(r, _)| r).collect(),
        None => Role::ALL.to_vec(),
    };
    roles
        .into_iter()
        .map(Role::as_str)
        .filter(|r| r.starts_with(prefix))
        .map(|r| Candidate::new(r, None))
        .collect()
}

/// Which recorded runs a command takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Runs of `nrl run` (every kind but Gym's).
    Launches,
    /// NeMo Gym runs (`nrl gym status|logs|cancel`).
    Gym,
}

/// Recorded run ids starting with `prefix`, newest first, as `nrl runs --no-refresh`
/// lists them; each described by its kind, status and recipe.
pub fn run_ids(store: &RunStore, which: Runs, prefix: &str) -> Vec<Candidate> {
    let records = store.list().unwrap_or_default();
    records
        .into_iter()
        .filter(|r| (r.kind == RunKind::Gym) == (which == Runs::Gym))
        .filter(|r| r.id.starts_with(prefix))
        .map(|r| {
            let mut help = format!("{}, {}", r.kind.as_str(), r.status.as_str());
            if let Some(recipe) = r.recipe.as_deref() {
                let name = Path::new(recipe).file_name().map(|n| n.to_string_lossy());
                help.push_str(&format!(", {}", name.unwrap_or_default()));
            }
            Candidate::new(r.id, Some(help))
        })
        .collect()
}

/// `--context` values: the kubeconfig's contexts (`--kubeconfig FILE`, else
/// `KUBECONFIG`, else `~/.kube/config`) starting with `prefix`, each with its namespace.
pub fn contexts(kubeconfig: Option<&Path>, env: &dyn Env, prefix: &str) -> Vec<Candidate> {
    crate::k8s::context::context_names(kubeconfig, env)
        .unwrap_or_default()
        .into_iter()
        .filter(|(name, _)| name.starts_with(prefix))
        .map(|(name, ns)| Candidate::new(name, ns.map(|ns| format!("namespace {ns}"))))
        .collect()
}

#[cfg(test)]
#[path = "completion_tests.rs"]
mod tests;
