//! Implicit typing for the emitter: which strings may be written plain (PyYAML's YAML 1.1
//! `Resolver`, plus nrl's own OmegaConf-dialect loader), and the text PyYAML's
//! `SafeRepresenter` gives floats and non-string keys.

use crate::config::implicit::{is_pyyaml_implicit, yaml11_word};
use crate::config::node::{KeyKind, Value, python_float_repr};
use crate::config::yaml::resolve_plain;

/// Whether a string may be written plain as far as typing goes: PyYAML's resolver reads
/// it back as a string (the serializer's `implicit[0]`), and so does nrl's own
/// OmegaConf-dialect loader, which also types `1e3` and `1.0e3` as floats. The second
/// check only adds quotes where PyYAML would write a plain scalar that nrl would misread.
pub(super) fn str_is_implicit_plain(s: &str) -> bool {
    // Every implicit type of either resolver starts with one of these characters (or is
    // the empty string); most manifest strings are decided here without scanning further.
    match s.as_bytes().first() {
        None => return false,
        Some(b) if !b"yYnNtTfFoO-+.0123456789<~=!&*".contains(b) => return true,
        // Python's `$` also matches before a final newline.
        Some(b) if b.is_ascii_alphabetic() => {
            return yaml11_word(s.strip_suffix('\n').unwrap_or(s)).is_none();
        }
        Some(_) => {}
    }
    let pyyaml_typed =
        is_pyyaml_implicit(s) || s.strip_suffix('\n').is_some_and(is_pyyaml_implicit);
    if pyyaml_typed {
        return false;
    }
    matches!(resolve_plain(s), Value::Str(ref t) if t == s)
}

/// PyYAML `SafeRepresenter.represent_float`.
pub(super) fn yaml_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let repr = python_float_repr(f).to_ascii_lowercase();
    if !repr.contains('.') && repr.contains('e') {
        repr.replacen('e', ".0e", 1)
    } else {
        repr
    }
}

/// The text of a non-string key as PyYAML prints the Python value OmegaConf loaded.
pub(super) fn key_text(key: &str, kind: KeyKind) -> Option<String> {
    match kind {
        KeyKind::Str => None,
        KeyKind::Int => Some(key.to_string()),
        KeyKind::Bool => Some(if key == "True" { "true" } else { "false" }.into()),
        KeyKind::Null => Some("null".into()),
        KeyKind::Float => Some(match resolve_plain(key) {
            Value::Float(f) => yaml_float(f),
            Value::Int(i) => yaml_float(i as f64),
            _ => key.to_string(),
        }),
    }
}
