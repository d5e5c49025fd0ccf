//! Small text helpers: narrowing a value's span to a piece of it, masking secrets.

use crate::config::source::Span;

/// The span of the `nth` occurrence of `needle` (its first line) inside `span`'s source
/// text; the whole span when it cannot be found (the value was built by interpolation or
/// written with escapes the resolved text no longer has).
pub fn narrow(span: Option<Span>, needle: &str, nth: usize) -> Option<Span> {
    let span = span?;
    let first = needle.lines().next().unwrap_or("").trim_end();
    if first.is_empty() {
        return Some(span);
    }
    let text = span.text();
    match text.match_indices(first).nth(nth) {
        Some((pos, _)) => {
            let from = span.start as usize + pos;
            Some(Span::new(span.src, from, from + first.len()))
        }
        None => Some(span),
    }
}

/// Which occurrence of `needle` in `haystack` starts at byte `at` (0 when it is not one).
pub fn occurrence(haystack: &str, needle: &str, at: usize) -> usize {
    haystack
        .match_indices(needle)
        .position(|(i, _)| i == at)
        .unwrap_or(0)
}

/// Show the start of a secret, never all of it.
pub fn mask(value: &str) -> String {
    let shown: String = value.chars().take(4).collect();
    if value.chars().count() <= 4 {
        "****".to_string()
    } else {
        format!("{shown}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::{SourceKind, add_source};

    #[test]
    fn narrows_to_the_nth_occurrence_or_keeps_the_span() {
        let id = add_source("n.yaml", None, "e: |\n  cd /a\n  cd /a\n", SourceKind::Text);
        let whole = Some(Span::new(id, 3, 21));
        let second = narrow(whole, "cd /a", 1).unwrap();
        assert_eq!(second.location(), "n.yaml:3:3");
        assert_eq!(second.text(), "cd /a");
        assert_eq!(narrow(whole, "cd /b", 0), whole);
        assert_eq!(occurrence("x y x", "x", 4), 1);
    }

    #[test]
    fn masks_secrets() {
        assert_eq!(mask("hf_abcdefgh"), "hf_a…");
        assert_eq!(mask("abc"), "****");
    }
}
