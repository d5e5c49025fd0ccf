//! `gym eval run|prepare` arguments written in Hydra's override grammar, so the real Hydra
//! in the pod reads back exactly the configured value (hydra-core 1.3
//! `hydra/grammar/OverrideLexer.g4` and `OverrideParser.g4`; values then go through
//! OmegaConf, which resolves `${…}` in strings).
//!
//! - Keys: each segment of `+a.b.c` must be one `KEY_SPECIAL` token of the lexer's key mode
//!   (`[A-Za-z_$][A-Za-z0-9_$-]*`); any other key (a leading digit, a space, a dot, a
//!   non-ASCII letter) is refused at render time, because Hydra cannot parse it or would
//!   read a different path.
//! - Strings: left unquoted only when made of characters the value-mode lexer takes
//!   unquoted (`ID`, `INT`/`FLOAT` pieces, `UNQUOTED_CHAR` without `$` and `\`, and outside
//!   containers `:` and inner spaces) and the whole is not one `INT`, `FLOAT`, `BOOL` or `NULL` token (which Hydra
//!   would type). Everything else is quoted (`QUOTED_VALUE`; backslashes before a quote and
//!   at the end are escaped the way `_unescape_quoted_string` undoes them). The empty
//!   string is `''`.
//! - `${` is written `\${` (backslashes right before it doubled), OmegaConf's escape, so a
//!   literal `${X}` stays literal instead of becoming an interpolation.
//! - Numbers, booleans and null in Hydra's spelling; lists `[a,b]` (no spaces, as the
//!   reference writes them), mappings `{k: v, …}` whose keys are `dictKey` tokens (escaped with
//!   `ESC`); a key Hydra would read as a number, boolean or null, or cannot lex, is refused.

use crate::config::node::{Node, Value, python_float_repr};
use crate::diag::{Diag, Result};

pub const KEY_CODE: &str = "nrl::gym::run_key";
pub const VALUE_CODE: &str = "nrl::gym::run_value";

/// Whether `seg` is one `KEY_SPECIAL` (or `ID`) token: a segment of an override key.
pub fn is_key_segment(seg: &str) -> bool {
    let mut chars = seg.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '$'))
}

/// Refuse a `run:`/`prepare:` key segment Hydra cannot express; `key` labels the mapping key.
pub fn check_key_segment(seg: &str, key: &Node, full: &str) -> Result<()> {
    if is_key_segment(seg) {
        return Ok(());
    }
    let why = if seg.is_empty() {
        "it is empty".to_string()
    } else if seg.starts_with(|c: char| c.is_ascii_digit()) {
        "it starts with a digit".to_string()
    } else if let Some(c) = seg
        .chars()
        .find(|c| !c.is_ascii_alphanumeric() && !matches!(c, '_' | '-' | '$'))
    {
        match c {
            ' ' => "it contains a space".to_string(),
            '.' => "it contains a dot, which Hydra reads as a nested key".to_string(),
            c => format!("it contains `{c}`"),
        }
    } else {
        "Hydra cannot parse it".to_string()
    };
    Err(Diag::new(
        KEY_CODE,
        format!("`{seg}` cannot be a Hydra override key (in `+{full}=…`): {why}"),
    )
    .label(key.key_span.or(key.span), "this key")
    .help(
        "Hydra override keys are letters, digits, `_`, `-` and `$`, starting with a letter, \
         `_` or `$`; rename the key, or pass the value inside a mapping or list one level up",
    ))
}

/// `v` as the value of a `+key=` override (top level: lists without spaces).
pub fn value_text(v: &Node) -> Result<String> {
    element(v, true)
}

fn element(v: &Node, top: bool) -> Result<String> {
    Ok(match &v.value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => python_float_repr(*f),
        Value::Str(s) => string_text(s, top),
        Value::List(items) => {
            let parts = items
                .iter()
                .map(|i| element(i, false))
                .collect::<Result<Vec<_>>>()?;
            format!("[{}]", parts.join(","))
        }
        Value::Map(m) => {
            let mut parts = Vec::with_capacity(m.len());
            for (k, x) in m {
                let key = dict_key(k).ok_or_else(|| {
                    Diag::new(
                        VALUE_CODE,
                        format!("the mapping key `{k}` cannot be written in a Hydra override"),
                    )
                    .label(x.key_span.or(x.span).or(v.best_span()), "this key")
                    .help(
                        "Hydra reads a mapping key made of digits as a number, `true`/`null` as \
                         a boolean/null, and cannot read quotes, non-ASCII letters or `#!&~^<>;` \
                         there; rename the key",
                    )
                })?;
                parts.push(format!("{key}: {}", element(x, false)?));
            }
            format!("{{{}}}", parts.join(", "))
        }
    })
}

/// A string as Hydra reads it back: bare when safe, else quoted.
fn string_text(s: &str, top: bool) -> String {
    // At the top level inner spaces are kept (`WS` tokens are joined back in, only
    // leading and trailing ones dropped), unless next to a `:` whose token takes them.
    let spaces = top && !s.contains(':') && !s.starts_with(' ') && !s.ends_with(' ');
    let bare = !s.is_empty()
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '_' | '-' | '/' | '+' | '.' | '%' | '*' | '@' | '?' | '|')
                || (top && c == ':')
                || (spaces && c == ' ')
        })
        && !is_typed_token(s);
    if bare {
        return s.to_string();
    }
    quote(&escape_interpolations(s))
}

/// Whether `s` as a whole is one `INT`, `FLOAT`, `BOOL` or `NULL` token of the value lexer.
fn is_typed_token(s: &str) -> bool {
    let lower = s.to_ascii_lowercase();
    if matches!(lower.as_str(), "true" | "false" | "null") {
        return true;
    }
    let unsigned = lower.strip_prefix(['+', '-']).unwrap_or(&lower);
    matches!(unsigned, "inf" | "nan") || is_int_unsigned(unsigned) || is_float_unsigned(unsigned)
}

/// `DIGIT (('_')? DIGIT)*`, the whole of `s`.
fn is_digits(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('_')
        && !s.ends_with('_')
        && !s.contains("__")
        && s.chars().all(|c| c.is_ascii_digit() || c == '_')
}

/// `INT_UNSIGNED: '0' | [1-9] (('_')? DIGIT)*`.
fn is_int_unsigned(s: &str) -> bool {
    s == "0" || (s.starts_with(|c: char| matches!(c, '1'..='9')) && is_digits(s))
}

/// `POINT_FLOAT: INT_UNSIGNED '.' | INT_UNSIGNED? '.' DIGIT (('_')? DIGIT)*`.
fn is_point_float(s: &str) -> bool {
    match s.split_once('.') {
        Some((int, "")) => is_int_unsigned(int),
        Some((int, frac)) => (int.is_empty() || is_int_unsigned(int)) && is_digits(frac),
        None => false,
    }
}

/// `POINT_FLOAT | EXPONENT_FLOAT` (no sign), `s` lower-cased.
fn is_float_unsigned(s: &str) -> bool {
    if let Some((mant, exp)) = s.split_once('e') {
        let exp = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        return (is_int_unsigned(mant) || is_point_float(mant)) && is_digits(exp);
    }
    is_point_float(s)
}

/// OmegaConf's escape: `${` becomes `\${`, and the backslashes right before it are
/// doubled so they stay literal (only backslashes before `${` are special there).
fn escape_interpolations(s: &str) -> String {
    if !s.contains("${") {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 4);
    let mut backslashes = 0usize;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => backslashes += 1,
            '$' if chars.peek() == Some(&'{') => {
                out.extend(std::iter::repeat_n('\\', 2 * backslashes + 1));
                out.push('$');
                backslashes = 0;
            }
            c => {
                out.extend(std::iter::repeat_n('\\', backslashes));
                out.push(c);
                backslashes = 0;
            }
        }
    }
    out.extend(std::iter::repeat_n('\\', backslashes));
    out
}

/// A `QUOTED_VALUE`: single quotes unless the text has `'` and no `"`. Backslashes before
/// the quote character get doubled plus one, trailing backslashes doubled; the rest is
/// literal inside quotes.
fn quote(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    let mut backslashes = 0usize;
    for c in s.chars() {
        if c == '\\' {
            backslashes += 1;
            continue;
        }
        let n = if c == q {
            2 * backslashes + 1
        } else {
            backslashes
        };
        out.extend(std::iter::repeat_n('\\', n));
        out.push(c);
        backslashes = 0;
    }
    out.extend(std::iter::repeat_n('\\', 2 * backslashes));
    out.push(q);
    out
}

/// A mapping key as a `dictKey` (`ID`, `INT`, … `UNQUOTED_CHAR`, `ESC`, `WS` tokens), or
/// `None` when Hydra would not read it back as this string.
fn dict_key(k: &str) -> Option<String> {
    if k.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(k.len());
    let mut escaped = false;
    for c in k.chars() {
        match c {
            '\\' | '(' | ')' | '[' | ']' | '{' | '}' | ':' | '=' | ',' | ' ' | '\t' => {
                out.push('\\');
                out.push(c);
                escaped = true;
            }
            c if c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    '_' | '-' | '/' | '+' | '.' | '$' | '%' | '*' | '@' | '?' | '|'
                ) =>
            {
                out.push(c)
            }
            _ => return None,
        }
    }
    // Unescaped, a key that is one typed token is read as that type.
    if !escaped && is_typed_token(k) {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_tokens_follow_the_lexer() {
        for s in [
            "1", "-5", "+0", "1_000", "1.5", ".5", "5.", "1e5", "1E-05", "1.5e+3", "inf", "-Inf",
            "NaN", "TRUE", "false", "Null",
        ] {
            assert!(is_typed_token(s), "{s}");
        }
        for s in [
            "010", "0x10", "1_", "1__0", "_1", "1.5.3", "e5", "1e", "infinity", "nan_x", "truex",
            "yes", "1:30", "1-a", "",
        ] {
            assert!(!is_typed_token(s), "{s}");
        }
    }

    #[test]
    fn strings_are_bare_only_when_hydra_reads_them_back() {
        let t = |s: &str| string_text(s, true);
        assert_eq!(t("benchmark"), "benchmark");
        assert_eq!(t("http://localhost:8000/v1"), "http://localhost:8000/v1");
        assert_eq!(t("a.yaml"), "a.yaml");
        assert_eq!(t(""), "''");
        assert_eq!(t("4"), "'4'");
        assert_eq!(t("true"), "'true'");
        assert_eq!(t("héllo"), "'héllo'");
        assert_eq!(t("a b"), "a b");
        assert_eq!(t(" a"), "' a'");
        assert_eq!(t("a :b"), "'a :b'");
        assert_eq!(string_text("a b", false), "'a b'");
        assert_eq!(t("a,b"), "'a,b'");
        assert_eq!(t("it's"), "\"it's\"");
        assert_eq!(t("'\""), r#"'\'"'"#);
        assert_eq!(t(r"C:\dir\"), r"'C:\dir\\'");
        assert_eq!(string_text("a:b", false), "'a:b'");
    }

    #[test]
    fn interpolations_are_escaped_for_omegaconf() {
        assert_eq!(escape_interpolations("${X}"), r"\${X}");
        assert_eq!(escape_interpolations(r"\${X}"), r"\\\${X}");
        assert_eq!(escape_interpolations(r"a\b ${X} $ {"), r"a\b \${X} $ {");
        assert_eq!(escape_interpolations(r"no\ interp"), r"no\ interp");
        assert_eq!(string_text("${X}", true), r"'\${X}'");
    }

    #[test]
    fn dict_keys_are_escaped_or_refused() {
        assert_eq!(dict_key("a b").as_deref(), Some(r"a\ b"));
        assert_eq!(dict_key("x:y").as_deref(), Some(r"x\:y"));
        assert_eq!(dict_key("${k}").as_deref(), Some(r"$\{k\}"));
        assert_eq!(dict_key("name").as_deref(), Some("name"));
        for k in ["1", "1.5", "null", "True", "", "é", "a'b", "a#b"] {
            assert_eq!(dict_key(k), None, "{k}");
        }
    }

    #[test]
    fn key_segments() {
        for k in ["a", "_a", "$a", "a-b", "a1", "A$"] {
            assert!(is_key_segment(k), "{k}");
        }
        for k in ["", "1st", "0", "a b", "a.b", "-a", "é", "a/b", "a@b"] {
            assert!(!is_key_segment(k), "{k}");
        }
    }
}
