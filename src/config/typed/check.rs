//! Validation machinery: the error sink [`Cx`], config paths, the model reader [`Obj`]
//! (unknown keys, required fields, defaults, optional fields, OmegaConf's `???`) and the
//! shared wording of type errors. The per-type converters live in `convert.rs`.
//!
//! Shared by every typed document (the infra schema, Gym submit configs); a [`Doc`] at the
//! root of each [`Path`] says how that document's paths print and how messages name it.

use std::fmt;

use crate::config::node::{Map, Node, Value};
use crate::config::source::Span;
use crate::diag::Diag;

pub(crate) const UNKNOWN_KEY: &str = "nrl::config::unknown_key";
pub(crate) const TYPE: &str = "nrl::config::type";
pub(crate) const ENUM: &str = "nrl::config::enum";
pub(crate) const REQUIRED: &str = "nrl::config::required";
pub(crate) const RULE: &str = "nrl::config::rule";

/// The errors found so far.
#[derive(Default)]
pub(crate) struct Cx {
    pub errors: Vec<Diag>,
}

impl Cx {
    pub fn report(&mut self, d: Diag) {
        self.errors.push(d);
    }
}

/// A typed document: how its paths print and how messages refer to it.
pub(crate) struct Doc {
    /// First segment of every printed path (`infra`); empty when paths start at the
    /// document's own keys (`driver.container`).
    pub root: &'static str,
    /// Where a value is set, for "set it in ..." advice.
    pub set_in: &'static str,
    /// What its keys are called, for unknown-key advice.
    pub keys: &'static str,
}

/// The infra mapping of a recipe + infra pair.
pub(crate) const INFRA_DOC: Doc = Doc {
    root: "infra",
    set_in: "the infra file or the user defaults",
    keys: "infra keys",
};

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root(&'static Doc),
    Key(&'a str),
    Index(usize),
}

/// Where a value sits (`infra.kuberay.training.segmentSize`); a borrowed chain so that
/// descending costs nothing until an error needs the text.
#[derive(Clone, Copy)]
pub(crate) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
}

impl<'a> Path<'a> {
    pub const ROOT: Path<'static> = Path::root(&INFRA_DOC);

    /// The root of a document's paths.
    pub const fn root(doc: &'static Doc) -> Path<'static> {
        Path {
            parent: None,
            seg: Seg::Root(doc),
        }
    }

    /// The document this path belongs to.
    pub fn doc(&self) -> &'static Doc {
        let mut cur = self;
        loop {
            match (cur.seg, cur.parent) {
                (Seg::Root(doc), _) => return doc,
                (_, Some(p)) => cur = p,
                (_, None) => return &INFRA_DOC,
            }
        }
    }

    /// Whether this is the root of a document whose paths print without a prefix.
    fn is_blank_root(&self) -> bool {
        matches!(self.seg, Seg::Root(doc) if doc.root.is_empty())
    }

    pub fn key<'b>(&'b self, key: &'b str) -> Path<'b> {
        Path {
            parent: Some(self),
            seg: Seg::Key(key),
        }
    }

    pub fn index(&self, i: usize) -> Path<'_> {
        Path {
            parent: Some(self),
            seg: Seg::Index(i),
        }
    }

    /// How the value is introduced in YAML: `key:` or `-` for a list item.
    pub fn yaml_lead(&self) -> String {
        match self.seg {
            Seg::Key(k) => format!("{k}:"),
            Seg::Index(_) => "-".into(),
            Seg::Root(doc) => format!("{}:", doc.root),
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.parent.filter(|p| !p.is_blank_root()) {
            write!(f, "{p}.")?;
        }
        match self.seg {
            Seg::Root(doc) if doc.root.is_empty() => f.write_str("the top level"),
            Seg::Root(doc) => f.write_str(doc.root),
            Seg::Key(k) => f.write_str(k),
            Seg::Index(i) => write!(f, "{i}"),
        }
    }
}

/// Python's `str.strip()`: Unicode whitespace plus the ASCII separators 0x1c-0x1f.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// The closest candidate to a misspelt word, if one is close enough. Case, `_` and `-` are
/// ignored first, so `hfCache` finds `hf_cache` and `Kai` finds `kai`.
pub(crate) fn suggest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
    let norm = |s: &str| -> String {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let w = norm(word);
    if w.is_empty() {
        return None;
    }
    let limit = (w.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(&w, &norm(c)), *c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// The value as the user wrote it, for messages: the source text of a short one-line
/// scalar, else a compact rendering.
pub(crate) fn shown(node: &Node) -> String {
    if let Some(span) = node.span
        && !node.value.is_container()
    {
        let t = span.text();
        if !t.is_empty() && t.len() <= 60 && !t.contains('\n') {
            return t;
        }
    }
    node.to_string()
}

pub(crate) fn a_type(node: &Node) -> &'static str {
    match node.value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Int(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Str(_) => "a string",
        Value::List(_) => "a list",
        Value::Map(_) => "a mapping",
    }
}

/// "must be X" for a value of the wrong type, with a help line that says what to write.
pub(crate) fn wrong_type(node: &Node, path: &Path, expected: &str, help: String) -> Diag {
    let message = if node.is_null() {
        format!("`{path}` must be {expected}, not null")
    } else {
        format!(
            "`{path}` must be {expected}, but `{}` is {}",
            shown(node),
            a_type(node)
        )
    };
    Diag::new(TYPE, message)
        .label(node.best_span(), format!("expected {expected}"))
        .help(help)
}

pub(crate) fn not_null_help(path: &Path) -> String {
    format!(
        "`{path}` cannot be null: give it a value, or delete the `{}` line",
        path.yaml_lead()
    )
}

/// The keys a model accepts, plus its sub-sections so that a key written one level too
/// high can be pointed at the section it belongs to.
pub(crate) struct Shape {
    pub fields: &'static [&'static str],
    pub sections: &'static [(&'static str, &'static Shape)],
}

/// One model's mapping while its fields are read. Readers record problems in [`Cx`] and
/// remember that something failed; [`Obj::finish`] then withholds the model.
pub(crate) struct Obj<'n, 'p> {
    node: &'n Node,
    map: &'n Map,
    path: Path<'p>,
    ok: bool,
}

impl<'n, 'p> Obj<'n, 'p> {
    /// Start reading `node` as a model with `fields`; unknown keys are reported here.
    pub fn open(cx: &mut Cx, node: &'n Node, path: &Path<'p>, shape: &Shape) -> Option<Self> {
        let fields = shape.fields;
        let Value::Map(map) = &node.value else {
            let help = if node.is_null() {
                not_null_help(path)
            } else {
                format!("`{path}` takes fields: {}", fields.join(", "))
            };
            cx.report(wrong_type(node, path, "a mapping", help));
            return None;
        };
        let mut ok = true;
        for (key, value) in map {
            if !fields.contains(&key.as_str()) {
                cx.report(unknown_key(key, value, path, shape));
                ok = false;
            }
        }
        Some(Obj {
            node,
            map,
            path: *path,
            ok,
        })
    }

    /// The field's node; `Err` when it holds OmegaConf's `???` marker (reported here).
    fn lookup(&mut self, cx: &mut Cx, name: &str) -> Result<Option<&'n Node>, ()> {
        let Some(n) = self.map.get(name) else {
            return Ok(None);
        };
        if n.is_missing() {
            let path = self.path.key(name);
            cx.report(
                Diag::new(
                    REQUIRED,
                    format!("`{path}` is `???`, a mandatory value that was never set"),
                )
                .label(n.best_span(), "still `???`")
                .help(format!(
                    "set it in {}, or on the command line with `{path}=...`",
                    path.doc().set_in
                )),
            );
            self.ok = false;
            return Err(());
        }
        Ok(Some(n))
    }

    /// Where to point when a field is absent: the model's key, else its first key.
    fn anchor(&self) -> Option<Span> {
        // Prefer a line the user wrote over one from the shipped defaults.
        let user_written = |s: &Span| s.kind() != crate::config::source::SourceKind::Shipped;
        self.node
            .key_span
            .or_else(|| {
                self.map
                    .values()
                    .filter_map(|v| v.key_span)
                    .find(user_written)
            })
            .or(self
                .node
                .span
                .filter(user_written)
                .map(|s| Span::new(s.src, s.start as usize, s.start as usize)))
            .or_else(|| self.map.values().find_map(|v| v.key_span))
    }

    /// A required field: `None` (and the model fails) when absent or invalid.
    pub fn req<T>(
        &mut self,
        cx: &mut Cx,
        name: &str,
        conv: impl FnOnce(&mut Cx, &Node, &Path) -> Option<T>,
    ) -> Option<T> {
        let node = match self.lookup(cx, name) {
            Ok(Some(n)) if n.is_null() => {
                let path = self.path.key(name);
                cx.report(
                    Diag::new(REQUIRED, format!("`{path}` is required, but it is null"))
                        .label(n.best_span(), "null here")
                        .help(format!("set `{name}:` to a value")),
                );
                self.ok = false;
                return None;
            }
            Ok(Some(n)) => n,
            Ok(None) => {
                let here = self.path;
                cx.report(
                    Diag::new(REQUIRED, format!("`{here}.{name}` is required"))
                        .label(self.anchor(), format!("`{name}` is missing here"))
                        .help(format!("add `{name}: ...` to `{here}`")),
                );
                self.ok = false;
                return None;
            }
            Err(()) => return None,
        };
        let here = self.path;
        let v = conv(cx, node, &here.key(name));
        self.ok &= v.is_some();
        v
    }

    /// A field with a default; null is a type error (left to `conv`).
    pub fn or<T>(
        &mut self,
        cx: &mut Cx,
        name: &str,
        conv: impl FnOnce(&mut Cx, &Node, &Path) -> Option<T>,
        default: T,
    ) -> T {
        match self.lookup(cx, name) {
            Ok(Some(node)) => {
                let here = self.path;
                match conv(cx, node, &here.key(name)) {
                    Some(v) => v,
                    None => {
                        self.ok = false;
                        default
                    }
                }
            }
            Ok(None) | Err(()) => default,
        }
    }

    /// An optional field: absent or null is `None`.
    pub fn opt<T>(
        &mut self,
        cx: &mut Cx,
        name: &str,
        conv: impl FnOnce(&mut Cx, &Node, &Path) -> Option<T>,
    ) -> Option<T> {
        match self.lookup(cx, name) {
            Ok(Some(node)) if !node.is_null() => {
                let here = self.path;
                let v = conv(cx, node, &here.key(name));
                self.ok &= v.is_some();
                v
            }
            _ => None,
        }
    }

    /// The model, if every field validated.
    pub fn finish<T>(self, value: T) -> Option<T> {
        self.ok.then_some(value)
    }
}

fn unknown_key(key: &str, value: &Node, path: &Path, shape: &Shape) -> Diag {
    let owners: Vec<&str> = shape
        .sections
        .iter()
        .filter(|(_, sub)| sub.fields.contains(&key))
        .map(|(name, _)| *name)
        .collect();
    let from_override = value
        .key_span
        .filter(|sp| sp.kind() == crate::config::source::SourceKind::Override);
    let help = match (suggest(key, shape.fields), owners.as_slice(), from_override) {
        // An override: the same override with the key fixed, not a YAML edit.
        (Some(s), _, Some(sp)) => {
            let written = sp.text();
            let fixed_key = match written.strip_suffix(key) {
                Some(head) => format!("{head}{s}"),
                None => written.clone(),
            };
            let text = sp.file().text.to_string();
            let fixed = match text.find(&written) {
                Some(at) => format!("{}{fixed_key}{}", &text[..at], &text[at + written.len()..]),
                None => text,
            };
            format!("did you mean `{fixed}`?")
        }
        (Some(s), _, None) => format!(
            "did you mean `{s}`? Write `{s}:` instead; {} are spelled exactly as the schema spells them (no aliases)",
            path.doc().keys
        ),
        (None, [one], _) => {
            format!("`{key}` belongs under `{path}.{one}`: write it as `{one}: {{{key}: ...}}`")
        }
        (None, [], _) => format!(
            "remove it; `{path}` accepts only: {}",
            shape.fields.join(", ")
        ),
        (None, many, _) => format!(
            "`{key}` is a field of {}; move it under the section you meant",
            many.iter()
                .map(|m| format!("`{path}.{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Diag::new(UNKNOWN_KEY, format!("unknown key `{key}` in `{path}`"))
        .label(
            value.key_span.or(value.span),
            format!("not a field of `{path}`"),
        )
        .help(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggest_ignores_case_and_separators() {
        let fields = [
            "kind",
            "pvcName",
            "mountPath",
            "hf_cache",
            "imagePullSecrets",
        ];
        assert_eq!(suggest("hfCache", &fields), Some("hf_cache"));
        assert_eq!(suggest("pvc_name", &fields), Some("pvcName"));
        assert_eq!(
            suggest("imagePullSecret", &fields),
            Some("imagePullSecrets")
        );
        assert_eq!(suggest("knd", &fields), Some("kind"));
        assert_eq!(suggest("totally_fake_key", &fields), None);
    }

    #[test]
    fn python_strip_semantics() {
        assert_eq!(py_strip(" \t a b \n"), "a b");
        assert_eq!(py_strip("\u{1c}x\u{a0}"), "x");
    }

    #[test]
    fn paths_render_dotted() {
        let root = Path::ROOT;
        let k = root.key("kuberay");
        let t = k.key("training");
        let i = t.index(0);
        assert_eq!(
            t.key("segmentSize").to_string(),
            "infra.kuberay.training.segmentSize"
        );
        assert_eq!(i.to_string(), "infra.kuberay.training.0");
    }
}
