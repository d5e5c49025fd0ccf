//! JSON exactly as Python's `json.dumps(doc, indent=2, sort_keys=…)` writes it: 2-space
//! indentation, `,` at line ends and `": "` after keys, `ensure_ascii` escapes (lower-case
//! `\uXXXX`, surrogate pairs above the BMP), floats as `repr()`, `NaN`/`Infinity`, and no
//! trailing newline.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;

use super::yaml::push_spaces;
use crate::config::node::{KeyKind, Node, Value, python_float_repr};
use crate::config::yaml::resolve_plain;

pub(super) fn dumps(doc: &Node, sort_keys: bool) -> String {
    let mut w = JsonWriter {
        out: String::with_capacity(4096),
        sort_keys,
    };
    w.value(doc, 0);
    w.out
}

struct JsonWriter {
    out: String,
    sort_keys: bool,
}

impl JsonWriter {
    fn value(&mut self, node: &Node, level: usize) {
        match &node.value {
            Value::Null => self.out.push_str("null"),
            Value::Bool(b) => self.out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(self.out, "{i}");
            }
            Value::Float(f) => self.out.push_str(&json_float(*f)),
            Value::Str(s) => self.string(s),
            Value::List(items) => {
                if items.is_empty() {
                    return self.out.push_str("[]");
                }
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.newline(level + 1);
                    self.value(item, level + 1);
                }
                self.newline(level);
                self.out.push(']');
            }
            Value::Map(map) => {
                if map.is_empty() {
                    return self.out.push_str("{}");
                }
                self.out.push('{');
                let mut entries: Vec<Entry<'_>> = map
                    .iter()
                    .map(|(k, v)| Entry {
                        key: json_key(k, v.key_kind),
                        number: numeric_key(k, v.key_kind),
                        value: v,
                    })
                    .collect();
                if self.sort_keys {
                    sort_entries(&mut entries);
                }
                for (
                    i,
                    Entry {
                        key, value: item, ..
                    },
                ) in entries.iter().enumerate()
                {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.newline(level + 1);
                    self.string(key);
                    self.out.push_str(": ");
                    self.value(item, level + 1);
                }
                self.newline(level);
                self.out.push('}');
            }
        }
    }

    fn newline(&mut self, level: usize) {
        self.out.push('\n');
        push_spaces(&mut self.out, 2 * level);
    }

    /// `py_encode_basestring_ascii`.
    fn string(&mut self, s: &str) {
        self.out.push('"');
        let mut run_start = 0;
        for (at, c) in s.char_indices() {
            if matches!(c, ' '..='~') && c != '"' && c != '\\' {
                continue;
            }
            self.out.push_str(&s[run_start..at]);
            run_start = at + c.len_utf8();
            let _ = match c {
                '"' => write!(self.out, "\\\""),
                '\\' => write!(self.out, "\\\\"),
                '\n' => write!(self.out, "\\n"),
                '\r' => write!(self.out, "\\r"),
                '\t' => write!(self.out, "\\t"),
                '\x08' => write!(self.out, "\\b"),
                '\x0C' => write!(self.out, "\\f"),
                _ => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        let _ = write!(self.out, "\\u{unit:04x}");
                    }
                    Ok(())
                }
            };
        }
        self.out.push_str(&s[run_start..]);
        self.out.push('"');
    }
}

/// `float.__repr__` plus json's names for the non-finite values.
fn json_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        python_float_repr(f)
    }
}

/// How `json.dumps` turns a non-string key (as OmegaConf loaded it) into a string.
fn json_key(key: &str, kind: KeyKind) -> Cow<'_, str> {
    match kind {
        KeyKind::Str | KeyKind::Int => Cow::Borrowed(key),
        KeyKind::Bool => Cow::Borrowed(if key == "True" { "true" } else { "false" }),
        KeyKind::Null => Cow::Borrowed("null"),
        KeyKind::Float => match numeric_key(key, kind) {
            Some(f) => Cow::Owned(json_float(f)),
            None => Cow::Borrowed(key),
        },
    }
}

/// The Python number a non-string key stands for (bools compare as 0/1 in Python).
fn numeric_key(key: &str, kind: KeyKind) -> Option<f64> {
    match kind {
        KeyKind::Str | KeyKind::Null => None,
        KeyKind::Bool => Some(if key == "True" { 1.0 } else { 0.0 }),
        KeyKind::Int | KeyKind::Float => match resolve_plain(key) {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        },
    }
}

/// `sorted(dct.items())`: Python compares the original keys, so all-numeric keys sort
/// numerically; anything else sorts by the key text (code point order, as Python's `str`).
/// Python would raise on mixed kinds; nrl sorts those by text instead.
fn sort_entries(entries: &mut [Entry<'_>]) {
    if entries.iter().all(|e| e.number.is_some()) {
        entries.sort_by(|a, b| a.number.partial_cmp(&b.number).unwrap_or(Ordering::Equal));
    } else {
        entries.sort_by(|a, b| a.key.cmp(&b.key));
    }
}

struct Entry<'a> {
    key: Cow<'a, str>,
    number: Option<f64>,
    value: &'a Node,
}
