//! Typing of unquoted primitive values, exactly as Hydra 1.3's override visitor does
//! (`hydra/core/override_parser/overrides_visitor.py: _createPrimitive`):
//! - a primitive that is a single INT / FLOAT / BOOL / NULL token (`1_000`, `3e-4`, `inf`,
//!   `TrUe`, `NULL`) gets that type;
//! - anything else (an ID, several tokens, escapes, interpolations) is a string. So `yes`,
//!   `off`, `0x10`, `010`, `1:30`, `.inf` and `1__000` are strings, unlike YAML 1.1 (values
//!   read from files keep OmegaConf's YAML 1.1 typing, see `config::yaml`).
//!
//! Quoted values are never typed (handled by the parser); `None` is the string "None".
//! Python ints are unbounded; nrl's are 64-bit, so an INT beyond that range is refused
//! with an error (docs/deviations.md) rather than silently turned into something else.

use super::CODE_TYPE;
use super::lexer::{Tok, Token, unescape_esc};
use crate::config::node::{Node, Value};
use crate::config::source::{Span, SrcId};
use crate::diag::{Diag, Result};

/// Type the primitive made of `toks` (leading/trailing whitespace tokens are dropped, as
/// Hydra does). `toks` must contain at least one non-whitespace token.
pub(crate) fn primitive(src: SrcId, text: &str, toks: &[Token]) -> Result<Node> {
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
    let span = Span::new(src, start, end);
    let tok_text = |t: &Token| text.get(t.start..t.end).unwrap_or("");
    if let [t] = toks {
        let s = tok_text(t);
        let value = match t.kind {
            Tok::Int => parse_int_token(s).ok_or_else(|| big_int_error(text, s, span))?,
            Tok::Float => Value::Float(parse_float_token(s)),
            Tok::Bool => Value::Bool(s.eq_ignore_ascii_case("true")),
            Tok::Null => Value::Null,
            Tok::Esc => Value::Str(unescape_esc(s)),
            _ => Value::Str(s.to_string()),
        };
        return Ok(Node::spanned(value, Some(span)));
    }
    let mut out = String::new();
    for t in toks {
        let s = tok_text(t);
        match t.kind {
            Tok::Esc => out.push_str(&unescape_esc(s)),
            _ => out.push_str(s),
        }
    }
    Ok(Node::spanned(Value::Str(out), Some(span)))
}

/// The error for an INT token outside the 64-bit range (Python would keep it as an int).
pub(crate) fn big_int_error(text: &str, digits: &str, span: Span) -> Diag {
    Diag::new(
        CODE_TYPE,
        format!("cannot parse override `{text}`: integer {digits} does not fit in 64 bits"),
    )
    .label(Some(span), "beyond the 64-bit range")
    .help(format!(
        "nrl's integers are 64-bit (-9223372036854775808..=9223372036854775807); \
             quote the value ('{digits}') to pass it as a string"
    ))
}

/// Hydra INT token: `[+-]?(0|[1-9](_?[0-9])*)`; `None` when it does not fit in an i64.
fn parse_int_token(s: &str) -> Option<Value> {
    let clean: String = s.chars().filter(|&c| c != '_').collect();
    clean.parse::<i64>().ok().map(Value::Int)
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
    fn big_ints_are_not_ints_of_64_bits() {
        assert_eq!(parse_int_token("99999999999999999999"), None);
        assert_eq!(parse_int_token("-1_0"), Some(Value::Int(-10)));
        assert_eq!(
            parse_int_token("-9223372036854775808"),
            Some(Value::Int(i64::MIN))
        );
    }
}
