//! Converters from a [`Node`] to one schema type, with the reference's coercions. Each
//! reports its problems in [`Cx`] and returns `None` exactly when it reported one.

use indexmap::IndexMap;

use super::StrEnum;
use super::check::*;
use crate::config::node::{KeyKind, Node, Value};
use crate::config::source::SourceKind;
use crate::diag::Diag;

/// Whether the value was written in a command-line override rather than a YAML file.
fn from_override(node: &Node) -> bool {
    node.span.is_some_and(|s| s.kind() == SourceKind::Override)
}

pub(crate) fn strict_str(cx: &mut Cx, node: &Node, path: &Path) -> Option<String> {
    if let Value::Str(s) = &node.value {
        return Some(py_strip(s).to_string());
    }
    let help = match node.value {
        Value::Null => not_null_help(path),
        Value::Bool(_) | Value::Int(_) | Value::Float(_) if from_override(node) => format!(
            "override values are read as YAML, so `{0}` is {1}; quote it inside shell quotes: `'{path}=\"{0}\"'`",
            shown(node),
            a_type(node),
        ),
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
pub(crate) fn nonblank_str(help: &'static str) -> impl Fn(&mut Cx, &Node, &Path) -> Option<String> {
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

pub(crate) fn lax_int(cx: &mut Cx, node: &Node, path: &Path) -> Option<i64> {
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

pub(crate) fn lax_bool(cx: &mut Cx, node: &Node, path: &Path) -> Option<bool> {
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

pub(crate) fn enum_value<E: StrEnum>(cx: &mut Cx, node: &Node, path: &Path) -> Option<E> {
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
pub(crate) fn non_string_key(cx: &mut Cx, key: &str, value: &Node, path: &Path) {
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
pub(crate) fn str_map(cx: &mut Cx, node: &Node, path: &Path) -> Option<IndexMap<String, String>> {
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
pub(crate) fn str_list(cx: &mut Cx, node: &Node, path: &Path) -> Option<Vec<String>> {
    list_of(strict_str)(cx, node, path)
}

/// A list whose items are validated by `item`; every bad item is reported.
pub(crate) fn list_of<T>(
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
pub(crate) fn map_of<T>(
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
pub(crate) fn free_map(cx: &mut Cx, node: &Node, path: &Path) -> Option<Node> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
