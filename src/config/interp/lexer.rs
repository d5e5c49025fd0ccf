//! Tokeniser for OmegaConf 2.3 interpolation strings.
//!
//! Mirrors `OmegaConfGrammarLexer.g4`: five modes on a stack (top-level text, resolver
//! argument values, the inside of `${…}`, and single/double quoted strings), and ANTLR's
//! rule for choosing a token: the longest match wins, ties go to the rule listed first.
//! Modes change only through lexer actions, so the whole string is tokenised before
//! parsing, exactly like the generated lexer.
//!
//! All characters with a meaning are ASCII; every other byte (including each byte of a
//! multi-byte UTF-8 character) is an "other" character, so token boundaries always fall
//! on character boundaries.

/// Token kinds, named after the grammar's token types (after `-> type(...)` rewrites).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    /// Literal text at top level or inside quotes (also lone `$` and odd backslash runs).
    AnyStr,
    /// `\${` optionally preceded by escaped backslashes: a literal `${`.
    EscInter,
    /// An even run of backslashes at top level.
    TopEsc,
    /// An even run of backslashes inside quotes.
    QuotedEsc,
    /// `${` plus optional whitespace.
    InterOpen,
    BraceOpen,
    BraceClose,
    QuoteOpenSingle,
    QuoteOpenDouble,
    QuoteClose,
    Comma,
    BracketOpen,
    BracketClose,
    Colon,
    Float,
    Int,
    Bool,
    Null,
    UnquotedChar,
    Id,
    /// Escape sequences (`\\`, `\,`, `\:` …) in values, and escaped quotes in quotes.
    Esc,
    Ws,
    InterClose,
    Dot,
    InterKey,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Top,
    Value,
    Interp,
    QuotedSingle,
    QuotedDouble,
}

/// Why the text could not be tokenised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LexError {
    /// No rule of the current mode matches at this byte offset.
    Unexpected { at: usize, mode: Mode },
    /// A `}` closed more than was opened (only possible when starting in value mode).
    Unbalanced { at: usize },
}

/// Tokenise `text`, starting in `mode` (`Top` for config values, `Value` for
/// `oc.decode`). Returns the tokens and the modes still open at the end (non-empty
/// means an unterminated interpolation or quote).
pub(crate) fn tokenize(text: &str, mode: Mode) -> Result<(Vec<Token>, Vec<Mode>), LexError> {
    let b = text.as_bytes();
    let mut stack = vec![mode];
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < b.len() {
        let cur = *stack.last().unwrap_or(&Mode::Top);
        let (kind, len, action) = match cur {
            Mode::Top => top_rule(b, pos),
            Mode::Value => value_rule(b, pos),
            Mode::Interp => interp_rule(b, pos),
            Mode::QuotedSingle => quoted_rule(b, pos, b'\''),
            Mode::QuotedDouble => quoted_rule(b, pos, b'"'),
        }
        .ok_or(LexError::Unexpected { at: pos, mode: cur })?;
        match action {
            Action::None => {}
            Action::Push(m) => stack.push(m),
            Action::Pop => {
                stack.pop();
                if stack.is_empty() {
                    return Err(LexError::Unbalanced { at: pos });
                }
            }
            Action::Switch(m) => {
                if let Some(top) = stack.last_mut() {
                    *top = m;
                }
            }
        }
        out.push(Token {
            kind,
            start: pos,
            end: pos + len,
        });
        pos += len;
    }
    stack.remove(0);
    Ok((out, stack))
}

#[derive(Clone, Copy)]
enum Action {
    None,
    Push(Mode),
    Pop,
    Switch(Mode),
}

type Rule = Option<(Tok, usize, Action)>;

/// Pick the longest candidate; on a tie the earlier one (grammar order) wins.
fn longest(cands: &[(Tok, Option<usize>, Action)]) -> Rule {
    let mut best: Rule = None;
    for &(kind, len, action) in cands {
        if let Some(len) = len.filter(|&l| l > 0)
            && best.is_none_or(|(_, l, _)| len > l)
        {
            best = Some((kind, len, action));
        }
    }
    best
}

fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

fn is_ws(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn ws_len(b: &[u8], pos: usize) -> usize {
    b[pos.min(b.len())..]
        .iter()
        .take_while(|&&c| is_ws(c))
        .count()
}

fn backslashes(b: &[u8], pos: usize) -> usize {
    b[pos.min(b.len())..]
        .iter()
        .take_while(|&&c| c == b'\\')
        .count()
}

/// `'${' WS?`
fn inter_open(b: &[u8], pos: usize) -> Option<usize> {
    (at(b, pos) == b'$' && at(b, pos + 1) == b'{').then(|| 2 + ws_len(b, pos + 2))
}

/// `ESC_BACKSLASH* '\' <tail>`: an odd backslash run directly followed by `tail`.
fn escaped(b: &[u8], pos: usize, tail: &[u8]) -> Option<usize> {
    let n = backslashes(b, pos);
    (n % 2 == 1 && b[pos + n..].starts_with(tail)).then_some(n + tail.len())
}

/// `ESC_BACKSLASH+`: the longest even run of backslashes.
fn even_backslashes(b: &[u8], pos: usize) -> Option<usize> {
    let n = backslashes(b, pos) / 2 * 2;
    (n > 0).then_some(n)
}

/// `~[$ stops]* ~[\\ $ stops]`: text up to the next `$` (or stop byte) that does not end
/// in a backslash.
fn plain_text(b: &[u8], pos: usize, stop: Option<u8>) -> Option<usize> {
    let end = b[pos..]
        .iter()
        .position(|&c| c == b'$' || Some(c) == stop)
        .map_or(b.len(), |p| pos + p);
    let last = b[pos..end].iter().rposition(|&c| c != b'\\')?;
    Some(last + 1)
}

fn top_rule(b: &[u8], pos: usize) -> Rule {
    let open = Action::Push(Mode::Interp);
    longest(&[
        (Tok::InterOpen, inter_open(b, pos), open),
        (Tok::AnyStr, plain_text(b, pos, None), Action::None),
        (Tok::EscInter, escaped(b, pos, b"${"), Action::None),
        (Tok::TopEsc, even_backslashes(b, pos), Action::None),
        (Tok::AnyStr, Some(backslashes(b, pos)), Action::None),
        (
            Tok::AnyStr,
            Some(usize::from(at(b, pos) == b'$')),
            Action::None,
        ),
    ])
}

fn quoted_rule(b: &[u8], pos: usize, quote: u8) -> Rule {
    let close = (at(b, pos) == quote).then_some(1);
    longest(&[
        (
            Tok::InterOpen,
            inter_open(b, pos),
            Action::Push(Mode::Interp),
        ),
        (Tok::QuoteClose, close, Action::Pop),
        (Tok::AnyStr, plain_text(b, pos, Some(quote)), Action::None),
        (Tok::EscInter, escaped(b, pos, b"${"), Action::None),
        (Tok::Esc, escaped(b, pos, &[quote]), Action::None),
        (Tok::QuotedEsc, even_backslashes(b, pos), Action::None),
        (Tok::AnyStr, Some(backslashes(b, pos)), Action::None),
        (
            Tok::AnyStr,
            Some(usize::from(at(b, pos) == b'$')),
            Action::None,
        ),
    ])
}

/// `WS? <c> WS?` with optional leading and trailing whitespace.
fn padded(b: &[u8], pos: usize, c: u8, lead: bool, trail: bool) -> Option<usize> {
    let l = if lead { ws_len(b, pos) } else { 0 };
    if at(b, pos + l) != c {
        return None;
    }
    let t = if trail { ws_len(b, pos + l + 1) } else { 0 };
    Some(l + 1 + t)
}

fn value_rule(b: &[u8], pos: usize) -> Rule {
    let c = at(b, pos);
    longest(&[
        (
            Tok::InterOpen,
            inter_open(b, pos),
            Action::Push(Mode::Interp),
        ),
        (
            Tok::BraceOpen,
            padded(b, pos, b'{', false, true),
            Action::Push(Mode::Value),
        ),
        (
            Tok::BraceClose,
            padded(b, pos, b'}', true, false),
            Action::Pop,
        ),
        (
            Tok::QuoteOpenSingle,
            (c == b'\'').then_some(1),
            Action::Push(Mode::QuotedSingle),
        ),
        (
            Tok::QuoteOpenDouble,
            (c == b'"').then_some(1),
            Action::Push(Mode::QuotedDouble),
        ),
        (Tok::Comma, padded(b, pos, b',', true, true), Action::None),
        (
            Tok::BracketOpen,
            padded(b, pos, b'[', false, true),
            Action::None,
        ),
        (
            Tok::BracketClose,
            padded(b, pos, b']', true, false),
            Action::None,
        ),
        (Tok::Colon, padded(b, pos, b':', true, true), Action::None),
        (Tok::Float, float_len(b, pos), Action::None),
        (Tok::Int, int_len(b, pos), Action::None),
        (Tok::Bool, keyword(b, pos, &["true", "false"]), Action::None),
        (Tok::Null, keyword(b, pos, &["null"]), Action::None),
        (
            Tok::UnquotedChar,
            b"/-\\+.$%*@?|".contains(&c).then_some(1),
            Action::None,
        ),
        (Tok::Id, id_len(b, pos), Action::None),
        (Tok::Esc, esc_len(b, pos), Action::None),
        (Tok::Ws, Some(ws_len(b, pos)), Action::None),
    ])
}

fn interp_rule(b: &[u8], pos: usize) -> Rule {
    let c = at(b, pos);
    longest(&[
        (
            Tok::InterOpen,
            inter_open(b, pos),
            Action::Push(Mode::Interp),
        ),
        (
            Tok::Colon,
            padded(b, pos, b':', true, true),
            Action::Switch(Mode::Value),
        ),
        (
            Tok::InterClose,
            padded(b, pos, b'}', true, false),
            Action::Pop,
        ),
        (Tok::Dot, (c == b'.').then_some(1), Action::None),
        (Tok::BracketOpen, (c == b'[').then_some(1), Action::None),
        (Tok::BracketClose, (c == b']').then_some(1), Action::None),
        (Tok::Id, id_len(b, pos), Action::None),
        (Tok::InterKey, inter_key_len(b, pos), Action::None),
    ])
}

fn is_digit(c: u8) -> bool {
    c.is_ascii_digit()
}

/// `DIGIT (('_')? DIGIT)*` starting at `pos`; returns the end offset.
fn digits_end(b: &[u8], pos: usize) -> Option<usize> {
    if !is_digit(at(b, pos)) {
        return None;
    }
    let mut i = pos + 1;
    loop {
        if is_digit(at(b, i)) {
            i += 1;
        } else if at(b, i) == b'_' && is_digit(at(b, i + 1)) {
            i += 2;
        } else {
            return Some(i);
        }
    }
}

/// `INT_UNSIGNED: '0' | [1-9] (('_')? DIGIT)*`; returns the end offset.
fn int_unsigned_end(b: &[u8], pos: usize) -> Option<usize> {
    match at(b, pos) {
        b'0' => Some(pos + 1),
        b'1'..=b'9' => digits_end(b, pos),
        _ => None,
    }
}

fn sign_len(b: &[u8], pos: usize) -> usize {
    usize::from(matches!(at(b, pos), b'+' | b'-'))
}

fn int_len(b: &[u8], pos: usize) -> Option<usize> {
    int_unsigned_end(b, pos + sign_len(b, pos)).map(|e| e - pos)
}

/// Ends of `POINT_FLOAT` matches starting at `pos` (at most two).
fn point_float_ends(b: &[u8], pos: usize) -> [Option<usize>; 2] {
    let int_end = int_unsigned_end(b, pos);
    // INT_UNSIGNED '.'
    let a = int_end.filter(|&e| at(b, e) == b'.').map(|e| e + 1);
    // INT_UNSIGNED? '.' DIGIT (('_')? DIGIT)*
    let dot = int_end.unwrap_or(pos);
    let c = if at(b, dot) == b'.' {
        digits_end(b, dot + 1)
    } else {
        None
    };
    [a, c]
}

fn float_len(b: &[u8], pos: usize) -> Option<usize> {
    let start = pos + sign_len(b, pos);
    let mut best: Option<usize> = None;
    let mut offer = |end: Option<usize>| {
        if let Some(e) = end {
            best = Some(best.map_or(e, |b: usize| b.max(e)));
        }
    };
    let points = point_float_ends(b, start);
    points.iter().for_each(|&e| offer(e));
    // EXPONENT_FLOAT: (INT_UNSIGNED | POINT_FLOAT) [eE] [+-]? DIGIT (('_')? DIGIT)*
    let bases = [int_unsigned_end(b, start), points[0], points[1]];
    for base in bases.into_iter().flatten() {
        if matches!(at(b, base), b'e' | b'E') {
            offer(digits_end(b, base + 1 + sign_len(b, base + 1)));
        }
    }
    offer(keyword(b, start, &["inf", "nan"]).map(|l| start + l));
    best.map(|e| e - pos)
}

/// Case-insensitive keyword match.
fn keyword(b: &[u8], pos: usize, words: &[&str]) -> Option<usize> {
    words
        .iter()
        .find(|w| {
            b.get(pos..pos + w.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(w.as_bytes()))
        })
        .map(|w| w.len())
}

/// `ID: (CHAR|'_') (CHAR|DIGIT|'_'|'-')*`
fn id_len(b: &[u8], pos: usize) -> Option<usize> {
    let c = at(b, pos);
    if !(c.is_ascii_alphabetic() || c == b'_') {
        return None;
    }
    let rest = b[pos + 1..]
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        .count();
    Some(1 + rest)
}

/// `ESC`: one or more of `\\ \( \) \[ \] \{ \} \: \= \, \<space> \<tab>`.
fn esc_len(b: &[u8], pos: usize) -> Option<usize> {
    let mut i = pos;
    while at(b, i) == b'\\' && b"\\()[]{}:=, \t".contains(&at(b, i + 1)) {
        i += 2;
    }
    (i > pos).then_some(i - pos)
}

/// `INTER_KEY: ~[\\{}()[\]:. \t'"]+`
fn inter_key_len(b: &[u8], pos: usize) -> Option<usize> {
    let n = b[pos..]
        .iter()
        .take_while(|&&c| !b"\\{}()[]:. \t'\"".contains(&c))
        .count();
    (n > 0).then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str, mode: Mode) -> Vec<(Tok, &str)> {
        let (toks, _) = tokenize(text, mode).unwrap();
        toks.iter()
            .map(|t| (t.kind, &text[t.start..t.end]))
            .collect()
    }

    #[test]
    fn top_level_backslash_runs_follow_the_antlr_longest_match() {
        use Tok::*;
        assert_eq!(
            kinds(r"C:\\${d}", Mode::Top),
            [
                (AnyStr, "C:"),
                (TopEsc, r"\\"),
                (InterOpen, "${"),
                (Id, "d"),
                (InterClose, "}")
            ]
        );
        assert_eq!(
            kinds(r"a\\\${x}", Mode::Top),
            [(AnyStr, "a"), (EscInter, r"\\\${"), (AnyStr, "x}")]
        );
        assert_eq!(kinds(r"x\y$", Mode::Top), [(AnyStr, r"x\y"), (AnyStr, "$")]);
    }

    #[test]
    fn value_mode_numbers_keywords_and_ids() {
        use Tok::*;
        let k = |s| kinds(s, Mode::Value);
        assert_eq!(k("1_000"), [(Int, "1_000")]);
        assert_eq!(k("-INF"), [(Float, "-INF")]);
        assert_eq!(k("1.e5"), [(Float, "1.e5")]);
        assert_eq!(k(".5"), [(Float, ".5")]);
        assert_eq!(k("1e"), [(Int, "1"), (Id, "e")]);
        assert_eq!(k("007"), [(Int, "0"), (Int, "0"), (Int, "7")]);
        assert_eq!(k("TrUe"), [(Bool, "TrUe")]);
        assert_eq!(k("infinity"), [(Id, "infinity")]);
        assert_eq!(k("a-b"), [(Id, "a-b")]);
        assert_eq!(k(r"\,\ "), [(Esc, r"\,\ ")]);
        assert_eq!(k("a , b"), [(Id, "a"), (Comma, " , "), (Id, "b")]);
    }

    #[test]
    fn interp_mode_keys_and_unbalanced_close() {
        use Tok::*;
        assert_eq!(
            kinds("${ a-b.$x[0] }", Mode::Top),
            [
                (InterOpen, "${ "),
                (Id, "a-b"),
                (Dot, "."),
                (InterKey, "$x"),
                (BracketOpen, "["),
                (InterKey, "0"),
                (BracketClose, "]"),
                (InterClose, " }")
            ]
        );
        assert_eq!(
            tokenize("${foo${bar}}", Mode::Top).unwrap_err(),
            LexError::Unexpected {
                at: 6,
                mode: Mode::Interp
            }
        );
        assert_eq!(
            tokenize("a}", Mode::Value).unwrap_err(),
            LexError::Unbalanced { at: 1 }
        );
        let (_, open) = tokenize("${a", Mode::Top).unwrap();
        assert_eq!(open, [Mode::Interp]);
    }
}
