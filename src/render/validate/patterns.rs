//! The `pattern`s of the bundled schemas, recognised by hand.
//!
//! Compiling the first pattern a validation meets cost `nrl check` more than the rest of
//! validating (a regex build, ~100 KB of regex code paged in, its caches on the heap).
//! The bundled schemas use three patterns; each has a scanner here, and the tests check
//! every bundled pattern has one and that each scanner agrees with its regex. A pattern
//! without a scanner (a schema update that brings a new one) still works: it is compiled
//! as a regex on first use.

/// Kubernetes `resource.Quantity`.
pub(super) const QUANTITY: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

/// A `metav1.Condition` reason: a letter first, then letters, digits and `_`, with `,` and
/// `:` allowed inside.
pub(super) const CONDITION_REASON: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/// A qualified name (a `metav1.Condition` type): an optional DNS-subdomain prefix and `/`,
/// then a name.
pub(super) const QUALIFIED_NAME: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// The scanner for a pattern's source, if it has one.
pub(super) fn scanner(source: &str) -> Option<fn(&str) -> bool> {
    match source {
        QUANTITY => Some(is_quantity),
        CONDITION_REASON => Some(is_condition_reason),
        QUALIFIED_NAME => Some(is_qualified_name),
        _ => None,
    }
}

/// `[0-9]+(\.[0-9]*)?|\.[0-9]+`: the rest after it, or `None`. Greedy is exact: what
/// may follow a number (a suffix letter, an exponent, the end) is never a digit or `.`.
fn number(s: &[u8]) -> Option<&[u8]> {
    let digits = |s: &[u8]| s.iter().take_while(|b| b.is_ascii_digit()).count();
    let int = digits(s);
    if int > 0 {
        let rest = &s[int..];
        return Some(match rest.split_first() {
            Some((b'.', frac)) => &frac[digits(frac)..],
            _ => rest,
        });
    }
    let frac = s.strip_prefix(b".")?;
    let n = digits(frac);
    (n > 0).then(|| &frac[n..])
}

fn strip_sign(s: &[u8]) -> &[u8] {
    match s.split_first() {
        Some((b'+' | b'-', rest)) => rest,
        _ => s,
    }
}

fn is_quantity(s: &str) -> bool {
    let Some(suffix) = number(strip_sign(s.as_bytes())) else {
        return false;
    };
    match suffix {
        [] | [b'K' | b'M' | b'G' | b'T' | b'P' | b'E', b'i'] => true,
        [b'n' | b'u' | b'm' | b'k' | b'M' | b'G' | b'T' | b'P' | b'E'] => true,
        [b'e' | b'E', exponent @ ..] => number(strip_sign(exponent)).is_some_and(<[u8]>::is_empty),
        _ => false,
    }
}

fn is_condition_reason(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':');
    match b {
        [first, rest @ ..] => {
            first.is_ascii_alphabetic()
                && rest.iter().all(inner)
                && rest
                    .last()
                    .is_none_or(|c| c.is_ascii_alphanumeric() || *c == b'_')
        }
        [] => false,
    }
}

/// Non-empty, `edge` at both ends, `edge` or `inner` between.
fn bracketed(s: &[u8], edge: fn(u8) -> bool, inner: fn(u8) -> bool) -> bool {
    match s {
        [] => false,
        [only] => edge(*only),
        [first, middle @ .., last] => {
            edge(*first) && edge(*last) && middle.iter().all(|&c| edge(c) || inner(c))
        }
    }
}

fn is_qualified_name(s: &str) -> bool {
    let lower = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let alnum = |c: u8| c.is_ascii_alphanumeric();
    let name = |n: &[u8]| bracketed(n, alnum, |c| matches!(c, b'-' | b'_' | b'.'));
    match s.split_once('/') {
        None => name(s.as_bytes()),
        Some((prefix, rest)) => {
            prefix
                .split('.')
                .all(|label| bracketed(label.as_bytes(), lower, |c| c == b'-'))
                && name(rest.as_bytes())
        }
    }
}

#[cfg(test)]
#[path = "patterns_tests.rs"]
mod tests;
