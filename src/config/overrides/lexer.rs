//! The value-mode lexer of Hydra's override grammar (`OverrideLexer.g4`, VALUE_MODE).
//!
//! ANTLR lexers take the longest match at each position and break ties by rule order; this
//! hand-written lexer does the same with one matcher per rule, tried in the grammar's
//! order. Token offsets are byte offsets into the whole override argument, so every token
//! maps straight onto a [`Span`](crate::config::source::Span) of the registered source.
//!
//! One deliberate difference: non-ASCII characters (`name=café`) are accepted as plain
//! characters of an unquoted string, where Hydra's lexer rejects them.

/// Token kinds, in the grammar's rule order (which breaks ties between equal-length matches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    /// `WS? ( WS?`
    Popen,
    /// `WS? , WS?`
    Comma,
    /// `WS? )`
    Pclose,
    /// `[ WS?`
    BracketOpen,
    /// `WS? ]`
    BracketClose,
    /// `{ WS?`
    BraceOpen,
    /// `WS? }`
    BraceClose,
    /// `WS? : WS?`
    Colon,
    /// `WS? = WS?` (named function arguments)
    Equal,
    Float,
    Int,
    Bool,
    Null,
    /// One of `/ - \ + . $ % * @ ?` and `|`.
    UnquotedChar,
    Id,
    /// A run of backslash escapes (`\\ \( \) \[ \] \{ \} \: \= \, \<space> \<tab>`).
    Esc,
    Ws,
    /// `'…'` or `"…"`.
    Quoted,
    /// `${…}` without nested braces.
    Interpolation,
    /// A non-ASCII character (nrl extension: part of an unquoted string).
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

/// Why the text could not be split into tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LexError {
    /// A quote that is never closed (an escaped quote `\'` does not close it).
    UnterminatedQuote { start: usize },
    /// `${…${…}…}` outside quotes: the override lexer's interpolation has no nested braces.
    NestedInterpolation { start: usize, end: usize },
    /// A character no rule accepts (`#`, `~`, `;`, a lone quote, …).
    BadChar { pos: usize, ch: char },
}

const ESCAPABLE: &[u8] = b"\\()[]{}:=, \t";
const UNQUOTED: &[u8] = b"/-\\+.$%*@?|";

/// Split `text[from..]` into value-mode tokens.
pub(crate) fn lex_value(text: &str, from: usize) -> Result<Vec<Token>, LexError> {
    let b = text.as_bytes();
    let mut pos = from;
    let mut out = Vec::new();
    while pos < b.len() {
        if b[pos] >= 0x80 {
            let len = text
                .get(pos..)
                .and_then(|s| s.chars().next())
                .map(char::len_utf8)
                .unwrap_or(1);
            out.push(Token {
                kind: Tok::Other,
                start: pos,
                end: pos + len,
            });
            pos += len;
            continue;
        }
        let (kind, len) = longest_match(b, pos)?;
        if len == 0 {
            let ch = text
                .get(pos..)
                .and_then(|s| s.chars().next())
                .unwrap_or('?');
            return Err(LexError::BadChar { pos, ch });
        }
        if kind == Tok::Interpolation {
            // The body may not open another interpolation: Hydra would stop at the first
            // `}` and then fail on the rest; name the real problem instead.
            if let Some(inner) = b.get(pos + 2..pos + len - 1)
                && inner.windows(2).any(|w| w == b"${")
            {
                return Err(LexError::NestedInterpolation {
                    start: pos,
                    end: nested_interpolation_end(b, pos),
                });
            }
        }
        out.push(Token {
            kind,
            start: pos,
            end: pos + len,
        });
        pos += len;
    }
    Ok(out)
}

/// The longest rule match at `pos`; ties go to the rule listed first in the grammar.
fn longest_match(b: &[u8], pos: usize) -> Result<(Tok, usize), LexError> {
    let candidates: [(Tok, usize); 19] = [
        (Tok::Popen, ws_around(b, pos, b'(', true, true)),
        (Tok::Comma, ws_around(b, pos, b',', true, true)),
        (Tok::Pclose, ws_around(b, pos, b')', true, false)),
        (Tok::BracketOpen, ws_around(b, pos, b'[', false, true)),
        (Tok::BracketClose, ws_around(b, pos, b']', true, false)),
        (Tok::BraceOpen, ws_around(b, pos, b'{', false, true)),
        (Tok::BraceClose, ws_around(b, pos, b'}', true, false)),
        (Tok::Colon, ws_around(b, pos, b':', true, true)),
        (Tok::Equal, ws_around(b, pos, b'=', true, true)),
        (Tok::Float, float_len(b, pos)),
        (Tok::Int, int_len(b, pos)),
        (
            Tok::Bool,
            keyword_len(b, pos, "true").max(keyword_len(b, pos, "false")),
        ),
        (Tok::Null, keyword_len(b, pos, "null")),
        (Tok::UnquotedChar, usize::from(UNQUOTED.contains(&b[pos]))),
        (Tok::Id, id_len(b, pos)),
        (Tok::Esc, esc_len(b, pos)),
        (Tok::Ws, ws_len(b, pos)),
        (Tok::Quoted, quoted_len(b, pos)?),
        (Tok::Interpolation, interpolation_len(b, pos)),
    ];
    let mut best = (Tok::Ws, 0);
    for (kind, len) in candidates {
        if len > best.1 {
            best = (kind, len);
        }
    }
    Ok(best)
}

fn ws_len(b: &[u8], pos: usize) -> usize {
    b[pos..]
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count()
}

/// `WS? c WS?` with either side optional per the rule.
fn ws_around(b: &[u8], pos: usize, c: u8, before: bool, after: bool) -> usize {
    let mut p = pos;
    if before {
        p += ws_len(b, p);
    }
    if b.get(p) != Some(&c) {
        return 0;
    }
    p += 1;
    if after && p < b.len() {
        p += ws_len(b, p);
    }
    p - pos
}

/// `'0' | [1-9] ('_'? DIGIT)*`
fn int_unsigned_len(b: &[u8], pos: usize) -> usize {
    match b.get(pos) {
        Some(b'0') => 1,
        Some(c) if c.is_ascii_digit() => 1 + digits_len(b, pos + 1),
        _ => 0,
    }
}

/// `('_'? DIGIT)*` starting at `pos`.
fn digits_len(b: &[u8], pos: usize) -> usize {
    let mut p = pos;
    loop {
        match (b.get(p), b.get(p + 1)) {
            (Some(c), _) if c.is_ascii_digit() => p += 1,
            (Some(b'_'), Some(c)) if c.is_ascii_digit() => p += 2,
            _ => return p - pos,
        }
    }
}

fn sign_len(b: &[u8], pos: usize) -> usize {
    usize::from(matches!(b.get(pos), Some(b'+' | b'-')))
}

fn int_len(b: &[u8], pos: usize) -> usize {
    let s = sign_len(b, pos);
    match int_unsigned_len(b, pos + s) {
        0 => 0,
        n => s + n,
    }
}

/// `[+-]? (POINT_FLOAT | EXPONENT_FLOAT | inf | nan)`, case-insensitive constants.
fn float_len(b: &[u8], pos: usize) -> usize {
    let s = sign_len(b, pos);
    let p = pos + s;
    let special = keyword_len(b, p, "inf").max(keyword_len(b, p, "nan"));
    let int_part = int_unsigned_len(b, p);
    // POINT_FLOAT: INT_UNSIGNED '.' | INT_UNSIGNED? '.' DIGIT ('_'? DIGIT)*
    let mut point = 0;
    if b.get(p + int_part) == Some(&b'.') {
        let after = p + int_part + 1;
        let frac = match b.get(after) {
            Some(c) if c.is_ascii_digit() => 1 + digits_len(b, after + 1),
            _ => 0,
        };
        if int_part > 0 || frac > 0 {
            point = int_part + 1 + frac;
        }
    }
    // EXPONENT_FLOAT: (INT_UNSIGNED | POINT_FLOAT) [eE] [+-]? DIGIT ('_'? DIGIT)*
    let base = point.max(int_part);
    let mut exponent = 0;
    if base > 0 && matches!(b.get(p + base), Some(b'e' | b'E')) {
        let e = p + base + 1;
        let es = sign_len(b, e);
        if matches!(b.get(e + es), Some(c) if c.is_ascii_digit()) {
            exponent = base + 1 + es + 1 + digits_len(b, e + es + 1);
        }
    }
    match special.max(point).max(exponent) {
        0 => 0,
        n => s + n,
    }
}

fn keyword_len(b: &[u8], pos: usize, word: &str) -> usize {
    match b.get(pos..pos + word.len()) {
        Some(s) if s.eq_ignore_ascii_case(word.as_bytes()) => word.len(),
        _ => 0,
    }
}

/// `(CHAR | '_') (CHAR | DIGIT | '_' | '-')*`
fn id_len(b: &[u8], pos: usize) -> usize {
    match b.get(pos) {
        Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
            1 + b[pos + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_' || **c == b'-')
                .count()
        }
        _ => 0,
    }
}

fn esc_len(b: &[u8], pos: usize) -> usize {
    let mut p = pos;
    while b.get(p) == Some(&b'\\') && matches!(b.get(p + 1), Some(c) if ESCAPABLE.contains(c)) {
        p += 2;
    }
    p - pos
}

/// A quoted value ends at the first matching quote preceded by an even number of
/// backslashes (an odd run escapes the quote).
fn quoted_len(b: &[u8], pos: usize) -> Result<usize, LexError> {
    let q = b[pos];
    if q != b'\'' && q != b'"' {
        return Ok(0);
    }
    let mut backslashes = 0usize;
    for (i, &c) in b.iter().enumerate().skip(pos + 1) {
        if c == q && backslashes.is_multiple_of(2) {
            return Ok(i + 1 - pos);
        }
        backslashes = if c == b'\\' { backslashes + 1 } else { 0 };
    }
    Err(LexError::UnterminatedQuote { start: pos })
}

/// `'${' ~'}'+ '}'`
fn interpolation_len(b: &[u8], pos: usize) -> usize {
    if b.get(pos..pos + 2) != Some(b"${") {
        return 0;
    }
    match b[pos + 2..].iter().position(|&c| c == b'}') {
        Some(0) | None => 0,
        Some(n) => n + 3,
    }
}

/// Where a nested interpolation that starts at `pos` really ends (brace counting), for
/// the error label.
fn nested_interpolation_end(b: &[u8], pos: usize) -> usize {
    let mut depth = 0usize;
    for (i, &c) in b.iter().enumerate().skip(pos) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// Hydra's un-escaping of a quoted value (quotes included in `raw`): inside the quotes, a
/// run of backslashes followed by a quote of the same kind is halved (the quote kept);
/// every other backslash is literal (`'C:\foo'` is `C:\foo`).
pub(crate) fn unescape_quoted(raw: &str) -> String {
    let mut chars = raw.chars();
    let Some(q) = chars.next() else {
        return String::new();
    };
    let body: Vec<char> = chars.collect();
    // The closing quote is the last char; the run before it counts as "before a quote".
    let mut out = String::with_capacity(body.len());
    let mut run = 0usize;
    for (i, &c) in body.iter().enumerate() {
        if c == '\\' {
            run += 1;
            continue;
        }
        let is_last = i + 1 == body.len();
        if c == q {
            out.extend(std::iter::repeat_n('\\', run / 2));
            if !is_last {
                out.push(q);
            }
        } else {
            out.extend(std::iter::repeat_n('\\', run));
            out.push(c);
        }
        run = 0;
    }
    out.extend(std::iter::repeat_n('\\', run));
    out
}

/// The characters of an ESC token with the escaping backslashes removed.
pub(crate) fn unescape_esc(raw: &str) -> String {
    raw.chars().skip(1).step_by(2).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(Tok, &str)> {
        lex_value(s, 0)
            .unwrap()
            .into_iter()
            .map(|t| (t.kind, &s[t.start..t.end]))
            .collect()
    }

    #[test]
    fn numbers_follow_hydra_rules() {
        assert_eq!(kinds("1_000"), [(Tok::Int, "1_000")]);
        assert_eq!(kinds("010"), [(Tok::Int, "0"), (Tok::Int, "10")]);
        assert_eq!(kinds("3e-4"), [(Tok::Float, "3e-4")]);
        assert_eq!(kinds("1."), [(Tok::Float, "1.")]);
        assert_eq!(kinds(".5"), [(Tok::Float, ".5")]);
        assert_eq!(kinds("-INF"), [(Tok::Float, "-INF")]);
        assert_eq!(kinds("info"), [(Tok::Id, "info")]);
        assert_eq!(kinds("1e3_0"), [(Tok::Float, "1e3_0")]);
        assert_eq!(kinds("0x10"), [(Tok::Int, "0"), (Tok::Id, "x10")]);
    }

    #[test]
    fn keywords_win_ties_over_id() {
        assert_eq!(kinds("TrUe"), [(Tok::Bool, "TrUe")]);
        assert_eq!(kinds("null"), [(Tok::Null, "null")]);
        assert_eq!(kinds("trueish"), [(Tok::Id, "trueish")]);
    }

    #[test]
    fn structural_tokens_absorb_whitespace() {
        assert_eq!(
            kinds("[a , b ]"),
            [
                (Tok::BracketOpen, "["),
                (Tok::Id, "a"),
                (Tok::Comma, " , "),
                (Tok::Id, "b"),
                (Tok::BracketClose, " ]"),
            ]
        );
    }

    #[test]
    fn quotes_and_escapes() {
        assert_eq!(kinds(r"'a\'b'"), [(Tok::Quoted, r"'a\'b'")]);
        assert_eq!(unescape_quoted(r"'a\'b'"), "a'b");
        assert_eq!(unescape_quoted(r"'C:\foo'"), r"C:\foo");
        assert_eq!(unescape_quoted(r"'abc\\'"), r"abc\");
        assert_eq!(unescape_quoted(r#""abc\\\"def""#), r#"abc\"def"#);
        assert_eq!(unescape_quoted(r"'a\\b'"), r"a\\b");
        assert_eq!(
            lex_value("'abc", 0),
            Err(LexError::UnterminatedQuote { start: 0 })
        );
        assert_eq!(kinds(r"\,\="), [(Tok::Esc, r"\,\=")]);
        assert_eq!(unescape_esc(r"\,\="), ",=");
    }

    #[test]
    fn interpolations() {
        assert_eq!(
            kinds("${a.b}/x"),
            [
                (Tok::Interpolation, "${a.b}"),
                (Tok::UnquotedChar, "/"),
                (Tok::Id, "x")
            ]
        );
        assert_eq!(
            lex_value("${oc.env:X,${a}}", 0),
            Err(LexError::NestedInterpolation { start: 0, end: 16 })
        );
    }

    #[test]
    fn bad_characters_are_reported_with_position() {
        assert_eq!(
            lex_value("a#b", 0),
            Err(LexError::BadChar { pos: 1, ch: '#' })
        );
        assert_eq!(kinds("café"), [(Tok::Id, "caf"), (Tok::Other, "é")]);
    }
}
