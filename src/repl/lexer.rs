//! A small, forgiving Rhai tokenizer for the line editor: highlighting, completion
//! context, "is this input finished?" and the `import` statements of a line.
//!
//! It never fails: unterminated strings and comments become tokens that run to the end,
//! unknown characters become `Other`. Rhai's own parser decides what is valid; this only
//! needs to know where strings, comments, identifiers and brackets are.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Space,
    /// `// …` or `/* … */` (nested, as Rhai allows).
    Comment,
    /// `"…"` (escapes, `\` + newline continues) or `` `…` `` (multi-line, `${…}` inside).
    Str,
    /// `'x'`.
    Char,
    Number,
    Ident,
    Keyword,
    /// Operators and brackets; `::` and `#{` are single tokens.
    Punct,
    Other,
}

/// A token: its kind and byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    /// Strings, characters and block comments: whether the closing delimiter was found.
    pub closed: bool,
}

impl Token {
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }

    /// Not space or a comment.
    pub fn significant(&self) -> bool {
        !matches!(self.kind, Kind::Space | Kind::Comment)
    }
}

/// Rhai's keywords (and the literals `true`/`false`).
pub const KEYWORDS: &[&str] = &[
    "as", "break", "catch", "const", "continue", "do", "else", "export", "false", "fn", "for",
    "global", "if", "import", "in", "let", "loop", "private", "return", "switch", "this", "throw",
    "true", "try", "until", "while",
];

/// Two-character operators kept as one token.
const PAIRS: &[&str] = &[
    "::", "#{", "==", "!=", "<=", ">=", "&&", "||", "=>", "+=", "-=", "*=", "/=", "%=", "..", "?.",
    "??", "?[", "|=", "&=", "^=", "<<", ">>", "**",
];

/// Split `src` into tokens covering every byte.
pub fn tokenize(src: &str) -> Vec<Token> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let c = bytes[i];
        let (kind, end, closed) = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                let end = scan_while(bytes, i, |b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'));
                (Kind::Space, end, true)
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map(|n| i + n).unwrap_or(src.len());
                (Kind::Comment, end, true)
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let (end, closed) = block_comment(bytes, i);
                (Kind::Comment, end, closed)
            }
            b'"' => {
                let (end, closed) = quoted(bytes, i, b'"');
                (Kind::Str, end, closed)
            }
            b'\'' => {
                let (end, closed) = quoted(bytes, i, b'\'');
                (Kind::Char, end, closed)
            }
            b'`' => {
                let (end, closed) = backtick(bytes, i);
                (Kind::Str, end, closed)
            }
            b'0'..=b'9' => (Kind::Number, number(bytes, i), true),
            c if c == b'_' || c.is_ascii_alphabetic() => {
                let end = scan_while(bytes, i, |b| b == b'_' || b.is_ascii_alphanumeric());
                let kind = if KEYWORDS.contains(&&src[i..end]) {
                    Kind::Keyword
                } else {
                    Kind::Ident
                };
                (kind, end, true)
            }
            c if c.is_ascii_punctuation() => {
                let two = src.get(i..i + 2).unwrap_or("");
                let len = if PAIRS.contains(&two) { 2 } else { 1 };
                (Kind::Punct, i + len, true)
            }
            _ => {
                // One character, whatever its width.
                let len = src[i..].chars().next().map(char::len_utf8).unwrap_or(1);
                (Kind::Other, i + len, true)
            }
        };
        out.push(Token {
            kind,
            start,
            end,
            closed,
        });
        i = end;
    }
    out
}

fn scan_while(bytes: &[u8], mut i: usize, f: impl Fn(u8) -> bool) -> usize {
    while i < bytes.len() && f(bytes[i]) {
        i += 1;
    }
    i
}

fn number(bytes: &[u8], i: usize) -> usize {
    let mut end = scan_while(bytes, i, |b| b.is_ascii_alphanumeric() || b == b'_');
    // A fraction, but not a range (`1..3`) or a method call (`1.max(2)`).
    if bytes.get(end) == Some(&b'.') && bytes.get(end + 1).is_some_and(u8::is_ascii_digit) {
        end = scan_while(bytes, end + 1, |b| b.is_ascii_alphanumeric() || b == b'_');
    }
    end
}

/// A `"` string or `'` character: ends at the closing quote, or unterminated at a raw
/// newline (Rhai refuses those) or at the end; `\` + newline continues the string.
fn quoted(bytes: &[u8], i: usize, quote: u8) -> (usize, bool) {
    let mut j = i + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'\\' => j += 2,
            b'\n' => return (j, false),
            b if b == quote => return (j + 1, true),
            _ => j += 1,
        }
    }
    (bytes.len(), false)
}

/// A back-tick string: multi-line, `${ … }` interpolations (whose own braces and strings
/// are skipped), no escapes.
fn backtick(bytes: &[u8], i: usize) -> (usize, bool) {
    let mut j = i + 1;
    while j < bytes.len() {
        match bytes[j] {
            b'`' => return (j + 1, true),
            b'$' if bytes.get(j + 1) == Some(&b'{') => {
                let mut depth = 1;
                j += 2;
                while j < bytes.len() && depth > 0 {
                    match bytes[j] {
                        b'{' => depth += 1,
                        b'}' => depth -= 1,
                        b'"' => j = quoted(bytes, j, b'"').0 - 1,
                        _ => {}
                    }
                    j += 1;
                }
            }
            _ => j += 1,
        }
    }
    (bytes.len(), false)
}

fn block_comment(bytes: &[u8], i: usize) -> (usize, bool) {
    let mut depth = 0;
    let mut j = i;
    while j + 1 < bytes.len() {
        match (bytes[j], bytes[j + 1]) {
            (b'/', b'*') => {
                depth += 1;
                j += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    return (j, true);
                }
            }
            _ => j += 1,
        }
    }
    (bytes.len(), false)
}

/// Whether `src` is unfinished and should continue on the next line: an open bracket,
/// block or map literal; an open back-tick string or block comment; a `"` string whose
/// line ends in `\`. Mismatched brackets are not "unfinished" (Rhai reports them).
pub fn unfinished(src: &str) -> bool {
    let tokens = tokenize(src);
    if let Some(last) = tokens.last().filter(|t| !t.closed) {
        let text = last.text(src);
        match last.kind {
            Kind::Comment => return true,
            Kind::Str if text.starts_with('`') => return true,
            Kind::Str if last.end == src.len() && text.ends_with('\\') => return true,
            // A `"` string or a character cut by the line's end is an error: say so now
            // rather than gather more lines that cannot fix it.
            Kind::Str | Kind::Char => return false,
            _ => {}
        }
    }
    let mut stack = Vec::new();
    for t in tokens.iter().filter(|t| t.kind == Kind::Punct) {
        match t.text(src) {
            "(" => stack.push(')'),
            "[" | "?[" => stack.push(']'),
            "{" | "#{" => stack.push('}'),
            close @ (")" | "]" | "}") if stack.pop() != close.chars().next() => return false,
            _ => {}
        }
    }
    !stack.is_empty()
}

/// One `import "path" as alias;` statement at the top level of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub path: String,
    pub alias: String,
}

/// The `import "literal" as name` statements at the top level of `src` (not inside
/// blocks or functions), in order. Imports of computed paths are not listed.
pub fn top_level_imports(src: &str) -> Vec<Import> {
    let tokens: Vec<Token> = tokenize(src)
        .into_iter()
        .filter(Token::significant)
        .collect();
    let mut depth = 0i32;
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let text = t.text(src);
        match text {
            "{" | "#{" | "(" | "[" => depth += 1,
            "}" | ")" | "]" => depth -= 1,
            "import" if depth == 0 && t.kind == Kind::Keyword => {
                let at_statement_start = i == 0 || matches!(tokens[i - 1].text(src), ";" | "}");
                let (Some(path), Some(kw), Some(alias)) =
                    (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3))
                else {
                    continue;
                };
                if at_statement_start
                    && path.kind == Kind::Str
                    && path.closed
                    && kw.text(src) == "as"
                    && alias.kind == Kind::Ident
                    && let Some(p) = string_value(path.text(src))
                {
                    out.push(Import {
                        path: p,
                        alias: alias.text(src).to_string(),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// The value of a simple string literal (`"a/b"`, `` `a/b` ``); `None` when it has
/// escapes or interpolation (then the REPL does not guess).
pub fn string_value(literal: &str) -> Option<String> {
    let inner = literal
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .or_else(|| literal.strip_prefix('`').and_then(|s| s.strip_suffix('`')))?;
    if inner.contains('\\') || inner.contains("${") {
        return None;
    }
    Some(inner.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Kind, &str)> {
        tokenize(src)
            .into_iter()
            .filter(Token::significant)
            .map(|t| (t.kind, t.text(src)))
            .collect()
    }

    #[test]
    fn tokens_cover_the_text() {
        let src = "let x = k8s::list(\"Pod\", #{a: 1.5}); // done\n`a ${x + \"}\"} b` 'c' é";
        let tokens = tokenize(src);
        assert_eq!(tokens.first().unwrap().start, 0);
        assert_eq!(tokens.last().unwrap().end, src.len());
        for w in tokens.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        assert_eq!(
            kinds(src),
            vec![
                (Kind::Keyword, "let"),
                (Kind::Ident, "x"),
                (Kind::Punct, "="),
                (Kind::Ident, "k8s"),
                (Kind::Punct, "::"),
                (Kind::Ident, "list"),
                (Kind::Punct, "("),
                (Kind::Str, "\"Pod\""),
                (Kind::Punct, ","),
                (Kind::Punct, "#{"),
                (Kind::Ident, "a"),
                (Kind::Punct, ":"),
                (Kind::Number, "1.5"),
                (Kind::Punct, "}"),
                (Kind::Punct, ")"),
                (Kind::Punct, ";"),
                (Kind::Str, "`a ${x + \"}\"} b`"),
                (Kind::Char, "'c'"),
                (Kind::Other, "é"),
            ]
        );
        assert_eq!(kinds("1..3")[0], (Kind::Number, "1"));
        assert_eq!(kinds("x.len()")[1], (Kind::Punct, "."));
    }

    #[test]
    fn unfinished_input_continues() {
        for src in [
            "fn f() {",
            "let x = [1,",
            "let m = #{a: 1",
            "print(`abc",
            "let s = `a\nb",
            "print(\"abc\\",
            "/* open",
            "if x { foo(",
        ] {
            assert!(unfinished(src), "{src:?} is unfinished");
        }
        for src in [
            "fn f() { 1 }",
            "print(\"abc",
            "print(\"a\nb\")",
            "foo(]",
            "}",
            "let x = 1; // {",
            "\"{\"",
            ":load x",
        ] {
            assert!(!unfinished(src), "{src:?} is finished (or an error)");
        }
    }

    #[test]
    fn imports_at_the_top_level() {
        let src = r#"import "nrl/checklist" as checklist; let x = 1;
            fn f() { import "inner" as inner; }
            import `lib/x` as x; import base + "y" as y; import "nrl/retry";"#;
        assert_eq!(
            top_level_imports(src),
            vec![
                Import {
                    path: "nrl/checklist".into(),
                    alias: "checklist".into()
                },
                Import {
                    path: "lib/x".into(),
                    alias: "x".into()
                },
            ]
        );
    }
}
