//! Typing of unquoted primitive values.
//!
//! nrl types a value the way *either* of its two ancestors would have:
//! - Hydra's lexer: a value that is a single INT / FLOAT / BOOL / NULL token (`1_000`,
//!   `3e-4`, `inf`, `TrUe`, `NULL`) gets that type;
//! - otherwise OmegaConf's YAML 1.1 typing, which the reference nrl-k8s applied to every
//!   override (`yes`/`off` are bools, `010` is 8, `0x10` is 16, `1:30` is 90; dates stay
//!   strings), unless the text contains an escape or an interpolation.
//!
//! Quoted values are never typed (handled by the parser); `None` is the string "None".

use super::lexer::{Tok, Token, unescape_esc};
use crate::config::node::{Node, Value};
use crate::config::source::{Span, SrcId};
use crate::config::yaml::resolve_plain;

/// Type the primitive made of `toks` (leading/trailing whitespace tokens are dropped, as
/// Hydra does). `toks` must contain at least one non-whitespace token.
pub(crate) fn primitive(src: SrcId, text: &str, toks: &[Token]) -> Node {
    let first = toks.iter().position(|t| t.kind != Tok::Ws).unwrap_or(0);
    let last = toks
        .iter()
        .rposition(|t| t.kind != Tok::Ws)
        .unwrap_or(first);
    let toks = toks.get(first..=last).unwrap_or(&[]);
    let (start, end) = match (toks.first(), toks.last()) {
        (Some(a), Some(b)) => (a.start, b.end),
        _ => (text.len(), text.len()),
    };
    let span = Some(Span::new(src, start, end));
    let tok_text = |t: &Token| text.get(t.start..t.end).unwrap_or("");
    if let [t] = toks {
        let s = tok_text(t);
        let value = match t.kind {
            Tok::Int => parse_int_token(s),
            Tok::Float => Value::Float(parse_float_token(s)),
            Tok::Bool => Value::Bool(s.eq_ignore_ascii_case("true")),
            Tok::Null => Value::Null,
            Tok::Esc => Value::Str(unescape_esc(s)),
            Tok::Interpolation => Value::Str(s.to_string()),
            _ => yaml_typed(s),
        };
        return Node::spanned(value, span);
    }
    let mut out = String::new();
    let mut literal = false;
    for t in toks {
        let s = tok_text(t);
        match t.kind {
            Tok::Esc => {
                literal = true;
                out.push_str(&unescape_esc(s));
            }
            Tok::Interpolation => {
                literal = true;
                out.push_str(s);
            }
            _ => out.push_str(s),
        }
    }
    let value = if literal {
        Value::Str(out)
    } else {
        yaml_typed(&out)
    };
    Node::spanned(value, span)
}

/// YAML 1.1 scalar typing, keeping only the typed outcomes (a YAML null spelling that is
/// not Hydra's `null`, such as `~`, cannot reach here; an empty string stays a string).
fn yaml_typed(s: &str) -> Value {
    match resolve_plain(s) {
        v @ (Value::Bool(_) | Value::Int(_) | Value::Float(_)) => v,
        _ => Value::Str(s.to_string()),
    }
}

/// Hydra INT token: `[+-]?(0|[1-9](_?[0-9])*)`. Out of i64 range keeps the digits as a
/// string rather than losing them (as the YAML loader does).
fn parse_int_token(s: &str) -> Value {
    let clean: String = s.chars().filter(|&c| c != '_').collect();
    match clean.parse::<i64>() {
        Ok(i) => Value::Int(i),
        Err(_) => Value::Str(s.to_string()),
    }
}

/// Hydra FLOAT token: point/exponent forms with underscores, or `inf`/`nan` in any case.
pub(crate) fn parse_float_token(s: &str) -> f64 {
    let clean: String = s
        .chars()
        .filter(|&c| c != '_')
        .collect::<String>()
        .to_ascii_lowercase();
    let (neg, body) = match clean.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, clean.strip_prefix('+').unwrap_or(&clean)),
    };
    let v = match body {
        "inf" => f64::INFINITY,
        "nan" => f64::NAN,
        _ => body.parse::<f64>().unwrap_or_else(|_| {
            // Rust wants a digit after the point before an exponent (`1.e5`).
            body.replacen(".e", ".0e", 1).parse().unwrap_or(f64::NAN)
        }),
    };
    if neg { -v } else { v }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_tokens() {
        assert_eq!(parse_float_token("3e-4"), 3e-4);
        assert_eq!(parse_float_token("1."), 1.0);
        assert_eq!(parse_float_token("-.5"), -0.5);
        assert_eq!(parse_float_token("1.e5"), 1e5);
        assert_eq!(parse_float_token("1_0e1_0"), 1e11);
        assert_eq!(parse_float_token("-InF"), f64::NEG_INFINITY);
        assert!(parse_float_token("NaN").is_nan());
    }

    #[test]
    fn big_ints_keep_their_digits() {
        assert_eq!(
            parse_int_token("99999999999999999999"),
            Value::Str("99999999999999999999".into())
        );
        assert_eq!(parse_int_token("-1_0"), Value::Int(-10));
    }
}
