//! Validation machinery with the reference's (pydantic 2, lax mode) semantics: unknown keys
//! rejected, schema strings stripped, strict strings, lax ints and bools, exact enums,
//! null only where optional. Every problem becomes a [`Diag`] collected in [`Cx`]; a
//! model whose fields all validated is returned so its cross-field rules can run.

use std::fmt;

use indexmap::IndexMap;

use super::enums::StrEnum;
use crate::config::node::{KeyKind, Map, Node, Value};
use crate::config::source::Span;
use crate::diag::Diag;

pub(super) const UNKNOWN_KEY: &str = "nrl::config::unknown_key";
pub(super) const TYPE: &str = "nrl::config::type";
pub(super) const ENUM: &str = "nrl::config::enum";
pub(super) const REQUIRED: &str = "nrl::config::required";
pub(super) const RULE: &str = "nrl::config::rule";

/// The errors found so far.
#[derive(Default)]
pub(super) struct Cx {
    pub errors: Vec<Diag>,
}

impl Cx {
    pub fn report(&mut self, d: Diag) {
        self.errors.push(d);
    }
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

/// Where a value sits (`infra.kuberay.training.segmentSize`); a borrowed chain so that
/// descending costs nothing until an error needs the text.
#[derive(Clone, Copy)]
pub(super) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    seg: Seg<'a>,
}

impl<'a> Path<'a> {
    pub const ROOT: Path<'static> = Path {
        parent: None,
        seg: Seg::Root,
    };

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
    fn yaml_lead(&self) -> String {
        match self.seg {
            Seg::Key(k) => format!("{k}:"),
            Seg::Index(_) => "-".into(),
            Seg::Root => "infra:".into(),
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = self.parent {
            write!(f, "{p}.")?;
        }
        match self.seg {
            Seg::Root => f.write_str("infra"),
            Seg::Key(k) => f.write_str(k),
            Seg::Index(i) => write!(f, "{i}"),
        }
    }
}

/// Python's `str.strip()`: Unicode whitespace plus the ASCII separators 0x1c-0x1f.
pub(super) fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

/// The closest candidate to a misspelt word, if one is close enough. Case, `_` and `-` are
/// ignored first, so `hfCache` finds `hf_cache` and `Kai` finds `kai`.
pub(super) fn suggest<'c>(word: &str, candidates: &[&'c str]) -> Option<&'c str> {
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
fn shown(node: &Node) -> String {
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

fn a_type(node: &Node) -> &'static str {
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
fn wrong_type(node: &Node, path: &Path, expected: &str, help: String) -> Diag {
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

pub(super) fn not_null_help(path: &Path) -> String {
    format!(
        "`{path}` cannot be null: give it a value, or delete the `{}` line to use the default",
        path.yaml_lead()
    )
}

pub(super) fn strict_str(cx: &mut Cx, node: &Node, path: &Path) -> Option<String> {
    if let Value::Str(s) = &node.value {
        return Some(py_strip(s).to_string());
    }
    let help = match node.value {
        Value::Null => not_null_help(path),
        Value::Bool(_) | Value::Int(_) | Value::Float(_) => format!(
            "YAML reads unquoted `{0}` as {1}; quote it to keep it text: `{2} \"{0}\"`",
            shown(node),
            a_type(node),
            path.yaml_lead()
        ),
        _ => "write a single string value".into(),
    };
    cx.report(wrong_type(node, path, "a string", help));
    None
}

/// A string that must not be blank after stripping (`namespace`, `image`).
pub(super) fn nonblank_str(help: &'static str) -> impl Fn(&mut Cx, &Node, &Path) -> Option<String> {
    move |cx, node, path| {
        let s = strict_str(cx, node, path)?;
        if s.is_empty() {
            cx.report(
                Diag::new(RULE, format!("`{path}` must not be empty"))
                    .label(node.best_span(), "blank value")
                    .help(help),
            );
            return None;
        }
        Some(s)
    }
}

/// pydantic's lax int from a string: surrounding whitespace, a sign, `.000` or
/// single underscores between digits are fine.
fn int_from_str(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(i) = s.parse::<i64>() {
        return Some(i);
    }
    if let Some((int, frac)) = s.split_once('.')
        && frac.chars().all(|c| c == '0')
    {
        return int.parse().ok();
    }
    if s.contains('_') && !s.starts_with('_') && !s.ends_with('_') && !s.contains("__") {
        return s.replace('_', "").parse().ok();
    }
    None
}

pub(super) fn lax_int(cx: &mut Cx, node: &Node, path: &Path) -> Option<i64> {
    let bad = |why: &str| {
        let help = if node.is_null() {
            not_null_help(path)
        } else {
            format!("{why}write a whole number, e.g. `{} 4`", path.yaml_lead())
        };
        wrong_type(node, path, "an integer", help)
    };
    let err = match &node.value {
        Value::Int(i) => return Some(*i),
        Value::Bool(b) => return Some(i64::from(*b)),
        Value::Float(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18 => {
            return Some(*f as i64);
        }
        Value::Float(f) if f.is_finite() && f.fract() != 0.0 => {
            bad("the number has a fractional part; ")
        }
        Value::Float(_) => bad("the number is not finite; "),
        Value::Str(s) => match int_from_str(s) {
            Some(i) => return Some(i),
            None => bad("the text is not a number; "),
        },
        _ => bad(""),
    };
    cx.report(err);
    None
}

pub(super) fn lax_bool(cx: &mut Cx, node: &Node, path: &Path) -> Option<bool> {
    let parsed = match &node.value {
        Value::Bool(b) => Some(*b),
        Value::Int(0) => Some(false),
        Value::Int(1) => Some(true),
        Value::Float(f) if *f == 0.0 => Some(false),
        Value::Float(f) if *f == 1.0 => Some(true),
        Value::Str(s) => {
            let is = |words: &[&str]| words.iter().any(|w| s.eq_ignore_ascii_case(w));
            if is(&["0", "f", "n", "no", "off", "false"]) {
                Some(false)
            } else if is(&["1", "t", "y", "yes", "on", "true"]) {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    };
    if parsed.is_none() {
        let help = if node.is_null() {
            not_null_help(path)
        } else {
            format!(
                "write `{} true` or `{} false`",
                path.yaml_lead(),
                path.yaml_lead()
            )
        };
        cx.report(wrong_type(node, path, "a boolean", help));
    }
    parsed
}

/// "'a', 'b' or 'c'", the way the reference lists allowed values.
fn one_of(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.join(""),
    }
}

pub(super) fn enum_value<E: StrEnum>(cx: &mut Cx, node: &Node, path: &Path) -> Option<E> {
    if let Some(v) = node.as_str().and_then(E::parse) {
        return Some(v);
    }
    let got = shown(node);
    let help = match node.as_str().and_then(|s| suggest(py_strip(s), E::VALUES)) {
        Some(s) => format!(
            "did you mean `{s}`? Values are exact and case-sensitive: write `{} {s}`",
            path.yaml_lead()
        ),
        None if node.is_null() => not_null_help(path),
        None => format!("use one of: {}", E::VALUES.join(", ")),
    };
    cx.report(
        Diag::new(
            ENUM,
            format!("`{path}` must be {}, got `{got}`", one_of(E::VALUES)),
        )
        .label(node.best_span(), "not an allowed value")
        .help(help),
    );
    None
}

/// A non-string key where the schema needs string keys.
fn non_string_key(cx: &mut Cx, key: &str, value: &Node, path: &Path) {
    let kind = match value.key_kind {
        KeyKind::Int => "an integer",
        KeyKind::Float => "a float",
        KeyKind::Bool => "a boolean",
        KeyKind::Null => "null",
        KeyKind::Str => "a string",
    };
    cx.report(
        Diag::new(
            TYPE,
            format!("keys of `{path}` must be strings, but YAML read the key `{key}` as {kind}"),
        )
        .label(value.key_span.or(value.span), "expected a string key")
        .help(format!("quote the key: `\"{key}\": ...`")),
    );
}

/// `dict[str, str]`: keys and values strict strings, both stripped.
pub(super) fn str_map(cx: &mut Cx, node: &Node, path: &Path) -> Option<IndexMap<String, String>> {
    let Value::Map(m) = &node.value else {
        let help = if node.is_null() {
            format!(
                "write `{} {{}}` for none, or delete the line",
                path.yaml_lead()
            )
        } else {
            "write `key: value` lines (values quoted when they look like numbers)".into()
        };
        cx.report(wrong_type(node, path, "a mapping of strings", help));
        return None;
    };
    let mut out = IndexMap::with_capacity(m.len());
    let mut ok = true;
    for (k, v) in m {
        if v.key_kind != KeyKind::Str {
            non_string_key(cx, k, v, path);
            ok = false;
            continue;
        }
        match strict_str(cx, v, &path.key(k)) {
            Some(s) => {
                out.insert(py_strip(k).to_string(), s);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// `list[str]`: items strict strings, stripped.
pub(super) fn str_list(cx: &mut Cx, node: &Node, path: &Path) -> Option<Vec<String>> {
    list_of(strict_str)(cx, node, path)
}

/// A list whose items are validated by `item`; every bad item is reported.
pub(super) fn list_of<T>(
    item: impl Fn(&mut Cx, &Node, &Path) -> Option<T>,
) -> impl Fn(&mut Cx, &Node, &Path) -> Option<Vec<T>> {
    move |cx, node, path| {
        let Value::List(items) = &node.value else {
            let help = match node.value {
                Value::Null => format!(
                    "write `{} []` for none, or delete the line",
                    path.yaml_lead()
                ),
                Value::Str(_) => format!(
                    "write a YAML list, even for one item: `{} [{}]`",
                    path.yaml_lead(),
                    shown(node)
                ),
                _ => "write a YAML list (`- item` lines or `[a, b]`)".into(),
            };
            cx.report(wrong_type(node, path, "a list", help));
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, n) in items.iter().enumerate() {
            match item(cx, n, &path.index(i)) {
                Some(v) => out.push(v),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

/// `dict[str, Model]`: keys strict strings (stripped), values validated by `item`.
pub(super) fn map_of<T>(
    item: impl Fn(&mut Cx, &Node, &Path) -> Option<T>,
) -> impl Fn(&mut Cx, &Node, &Path) -> Option<IndexMap<String, T>> {
    move |cx, node, path| {
        let Value::Map(m) = &node.value else {
            let help = if node.is_null() {
                format!(
                    "write `{} {{}}` for none, or delete the line",
                    path.yaml_lead()
                )
            } else {
                "write one `name:` entry per item".into()
            };
            cx.report(wrong_type(node, path, "a mapping", help));
            return None;
        };
        let mut out = IndexMap::with_capacity(m.len());
        let mut ok = true;
        for (k, v) in m {
            if v.key_kind != KeyKind::Str {
                non_string_key(cx, k, v, path);
                ok = false;
                continue;
            }
            match item(cx, v, &path.key(k)) {
                Some(x) => {
                    out.insert(py_strip(k).to_string(), x);
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

/// A free-form mapping (`spec`, `affinity`): kept exactly as loaded, but it must be a
/// mapping and its top-level keys must be strings.
pub(super) fn free_map(cx: &mut Cx, node: &Node, path: &Path) -> Option<Node> {
    let Value::Map(m) = &node.value else {
        let help = if node.is_null() {
            format!(
                "`{path}` needs a mapping body (`{}` then indented fields)",
                path.yaml_lead()
            )
        } else {
            "write the body as a YAML mapping of `field: value` lines".into()
        };
        cx.report(wrong_type(node, path, "a mapping", help));
        return None;
    };
    let mut ok = true;
    for (k, v) in m {
        if v.key_kind != KeyKind::Str {
            non_string_key(cx, k, v, path);
            ok = false;
        }
    }
    ok.then(|| node.clone())
}

/// One model's mapping while its fields are read. Readers record problems in [`Cx`] and
/// remember that something failed; [`Obj::finish`] then withholds the model.
pub(super) struct Obj<'n, 'p> {
    node: &'n Node,
    map: &'n Map,
    path: Path<'p>,
    ok: bool,
}

impl<'n, 'p> Obj<'n, 'p> {
    /// Start reading `node` as a model with `fields`; unknown keys are reported here.
    pub fn open(cx: &mut Cx, node: &'n Node, path: &Path<'p>, fields: &[&str]) -> Option<Self> {
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
                cx.report(unknown_key(key, value, path, fields));
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
                    "set it in the infra file or the user defaults, or on the command line with `{path}=...`"
                )),
            );
            self.ok = false;
            return Err(());
        }
        Ok(Some(n))
    }

    /// Where to point when a field is absent: the model's key, else its first key.
    fn anchor(&self) -> Option<Span> {
        self.node
            .key_span
            .or_else(|| self.map.values().find_map(|v| v.key_span))
            .or(self
                .node
                .span
                .map(|s| Span::new(s.src, s.start as usize, s.start as usize)))
    }

    /// A required field: `None` (and the model fails) when absent or invalid.
    pub fn req<T>(
        &mut self,
        cx: &mut Cx,
        name: &str,
        conv: impl FnOnce(&mut Cx, &Node, &Path) -> Option<T>,
    ) -> Option<T> {
        let node = match self.lookup(cx, name) {
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

fn unknown_key(key: &str, value: &Node, path: &Path, fields: &[&str]) -> Diag {
    let help = match suggest(key, fields) {
        Some(s) => format!(
            "did you mean `{s}`? Write `{s}:` instead; infra keys are spelled exactly as the schema spells them (no aliases)"
        ),
        None => format!("remove it; `{path}` accepts only: {}", fields.join(", ")),
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
    fn int_strings_like_pydantic() {
        assert_eq!(int_from_str("18265"), Some(18265));
        assert_eq!(int_from_str(" 7 "), Some(7));
        assert_eq!(int_from_str("4.00"), Some(4));
        assert_eq!(int_from_str("1_000"), Some(1000));
        assert_eq!(int_from_str("-3"), Some(-3));
        assert_eq!(int_from_str("1.5"), None);
        assert_eq!(int_from_str("_1"), None);
        assert_eq!(int_from_str("abc"), None);
    }

    #[test]
    fn one_of_lists_like_the_reference() {
        assert_eq!(
            one_of(&["kai", "kueue", "default"]),
            "'kai', 'kueue' or 'default'"
        );
        assert_eq!(one_of(&["a"]), "'a'");
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
