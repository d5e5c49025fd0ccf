//! Python's conversions as Hydra's casts use them: `int(str)`, `float(str)`, and
//! `json.dumps` with default settings.

use crate::config::node::{Node, Value, python_float_repr};

/// Python's `int(str)`: optional sign and surrounding whitespace, underscores between digits.
pub(crate) fn python_int(s: &str) -> Option<i64> {
    let t = s.trim();
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return None;
    }
    if !digits.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return None;
    }
    t.replace('_', "").parse().ok()
}

/// Python's `float(str)`.
pub(crate) fn python_float(s: &str) -> Option<f64> {
    let t = s.trim().to_ascii_lowercase();
    let body = t.strip_prefix(['+', '-']).unwrap_or(&t);
    let neg = t.starts_with('-');
    let v = match body {
        "inf" | "infinity" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => {
            if body.is_empty()
                || !body
                    .chars()
                    .all(|c| c.is_ascii_digit() || "._e+-".contains(c))
            {
                return None;
            }
            body.replace('_', "").parse::<f64>().ok()?
        }
    };
    Some(if neg { -v } else { v })
}

/// Python's `json.dumps` with default settings (`", "` and `": "` separators, ASCII only,
/// `Infinity`/`NaN` for non-finite floats).
pub(crate) fn python_json(n: &Node) -> String {
    match &n.value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) if f.is_nan() => "NaN".into(),
        Value::Float(f) if f.is_infinite() => {
            if *f > 0.0 {
                "Infinity".into()
            } else {
                "-Infinity".into()
            }
        }
        Value::Float(f) => python_float_repr(*f),
        Value::Str(s) => json_string(s),
        Value::List(l) => format!(
            "[{}]",
            l.iter().map(python_json).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", json_string(k), python_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
