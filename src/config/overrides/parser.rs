//! Recursive-descent parser for one override argument (`OverrideParser.g4`).
//!
//! The key is parsed by hand (nrl is more lenient than Hydra there, see [`parse_key`]); the
//! value goes through the value-mode [`lexer`](super::lexer) and is turned straight into
//! spanned [`Node`]s, the way Hydra's visitor evaluates functions while it walks the tree.

use super::functions::{self, Arg};
use super::lexer::{self, LexError, Tok, Token};
use super::typing;
use super::{Op, syntax_error};
use crate::config::node::{KeyKind, Map, Node, Value};
use crate::config::source::{Span, SrcId};
use crate::diag::{Diag, Result};

/// A sweep value: legal only where runs are expanded ([`super::expand_sweep`]).
#[derive(Debug, Clone)]
pub(crate) enum Sweep {
    /// `a,b,c` (simple form) or `choice(a,b,c)`.
    Choice {
        items: Vec<Node>,
        simple: bool,
        shuffle: bool,
    },
    /// `range(start, stop, step)`.
    Range(Box<RangeSweep>),
    /// `interval(…)` or `glob(…)`: sweeps nrl recognises but cannot expand.
    Unsupported { function: &'static str },
}

/// `range(start, stop, step)` (bounds are int or float nodes).
#[derive(Debug, Clone)]
pub(crate) struct RangeSweep {
    pub start: Node,
    pub stop: Node,
    pub step: Node,
    pub shuffle: bool,
}

/// What a value (or a function argument) evaluates to.
#[derive(Debug, Clone)]
pub(crate) enum Parsed {
    Value(Node),
    Sweep(Sweep, Span),
    /// `extend_list(a, b)`: items appended to an existing list.
    Extend(Vec<Node>, Span),
}

/// The key part of an override: operator, path segments and where each segment is.
#[derive(Debug, Clone)]
pub(crate) struct ParsedKey {
    pub op: Op,
    pub path: Vec<String>,
    pub segment_spans: Vec<Span>,
    pub key_span: Span,
    /// Byte offset just past the `=`, when there is one.
    pub value_start: Option<usize>,
}

/// Characters a bare key segment may use (Hydra's KEY_SPECIAL plus `/` and `@`, so
/// Kubernetes label keys such as `nrl-k8s/owner` work without quoting).
fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'/' | b'@' | b'$')
}

/// Parse `[+|++|~] key [= …]`.
pub(crate) fn parse_key(src: SrcId, text: &str) -> Result<ParsedKey> {
    let b = text.as_bytes();
    let sp = |s: usize, e: usize| Span::new(src, s, e);
    let (op, mut pos) = if text.starts_with("++") {
        (Op::ForceAdd, 2)
    } else if text.starts_with('+') {
        (Op::Add, 1)
    } else if text.starts_with('~') {
        (Op::Delete, 1)
    } else {
        (Op::Set, 0)
    };
    if let Some(&c @ (b'+' | b'~')) = b.get(pos) {
        return Err(syntax_error(
            text,
            format!(
                "unexpected `{}` after the `{}` prefix",
                c as char,
                &text[..pos]
            ),
            sp(pos, pos + 1),
            "use one prefix: `+key=value` adds, `++key=value` adds or overrides, `~key` deletes",
        ));
    }
    let key_start = pos;
    let mut path = Vec::new();
    let mut spans = Vec::new();
    loop {
        let seg_start = pos;
        if b.get(pos) == Some(&b'[') {
            let (seg, end) = bracket_segment(src, text, pos)?;
            path.push(seg);
            spans.push(sp(seg_start, end));
            pos = end;
        } else {
            while pos < b.len() && is_key_char(b[pos]) {
                pos += 1;
            }
            if pos == seg_start {
                return Err(bad_key_char(src, text, pos, key_start));
            }
            path.push(text[seg_start..pos].to_string());
            spans.push(sp(seg_start, pos));
        }
        match b.get(pos) {
            Some(b'.') => {
                pos += 1;
                if pos >= b.len() || matches!(b[pos], b'=' | b'.') {
                    return Err(syntax_error(
                        text,
                        "empty key segment",
                        sp(pos - 1, pos),
                        "key segments are separated by single dots, as in `policy.optimizer.lr`",
                    ));
                }
            }
            Some(b'[') => {}
            Some(b'=') | None => break,
            Some(_) => return Err(bad_key_char(src, text, pos, key_start)),
        }
    }
    let key_span = sp(key_start, pos);
    let value_start = if pos < b.len() { Some(pos + 1) } else { None };
    if value_start.is_none() && op != Op::Delete {
        return Err(syntax_error(
            text,
            format!("`{text}` has no `=`"),
            key_span,
            format!(
                "write `{0}=VALUE`; to delete the key use `~{0}`; `{0}=` sets an empty string",
                &text[key_start..]
            ),
        ));
    }
    Ok(ParsedKey {
        op,
        path,
        segment_spans: spans,
        key_span,
        value_start,
    })
}

/// `['a.b']`, `["a.b"]` or `[0]` at `pos` (which holds the `[`).
fn bracket_segment(src: SrcId, text: &str, pos: usize) -> Result<(String, usize)> {
    let b = text.as_bytes();
    let help = "a bracketed key segment is a quoted name or an index: `labels['kai.scheduler/queue']`, `items[0]`";
    match b.get(pos + 1) {
        Some(&q @ (b'\'' | b'"')) => {
            let body = pos + 2;
            let close = b[body.min(b.len())..].iter().position(|&c| c == q);
            match close {
                Some(n) if b.get(body + n + 1) == Some(&b']') => {
                    Ok((text[body..body + n].to_string(), body + n + 2))
                }
                _ => Err(syntax_error(
                    text,
                    "unterminated bracketed key segment",
                    Span::new(src, pos, text.len()),
                    help,
                )),
            }
        }
        Some(c) if c.is_ascii_digit() => {
            let digits = b[pos + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            let end = pos + 1 + digits;
            if b.get(end) == Some(&b']') {
                Ok((text[pos + 1..end].to_string(), end + 1))
            } else {
                Err(syntax_error(
                    text,
                    "unterminated bracketed key segment",
                    Span::new(src, pos, end),
                    help,
                ))
            }
        }
        _ => Err(syntax_error(
            text,
            "invalid bracketed key segment",
            Span::new(src, pos, (pos + 1).min(text.len())),
            help,
        )),
    }
}

fn bad_key_char(src: SrcId, text: &str, pos: usize, key_start: usize) -> Diag {
    let span = |e: usize| Span::new(src, pos, e);
    let Some(ch) = text.get(pos..).and_then(|s| s.chars().next()) else {
        return syntax_error(
            text,
            "missing key",
            span(pos),
            "write `key=value`, e.g. `policy.optimizer.kwargs.lr=3e-4`",
        );
    };
    let end = pos + ch.len_utf8();
    if pos == key_start && ch == '=' {
        return syntax_error(
            text,
            "missing key before `=`",
            span(end),
            "write `key=value`, e.g. `policy.optimizer.kwargs.lr=3e-4`",
        );
    }
    let help = if ch == ' ' || ch == '\t' {
        "remove the whitespace: the key and `=` must be one word, as in `key=value`".to_string()
    } else {
        format!(
            "key segments use letters, digits and `_ - / @ $`; quote a segment with other characters: `a['{ch}b']`"
        )
    };
    syntax_error(
        text,
        format!("`{}` cannot appear in a key", ch.escape_debug()),
        span(end),
        help,
    )
}

/// Parse the value text starting at `from`: `element (',' element)*`.
pub(crate) fn parse_value(src: SrcId, text: &str, from: usize) -> Result<Parsed> {
    let tokens = lexer::lex_value(text, from).map_err(|e| lex_error(src, text, e))?;
    // `key=` and `key=   `: the `=` rule absorbs whitespace, leaving an empty value.
    if tokens.iter().all(|t| t.kind == Tok::Ws) {
        let at = text.len();
        return Ok(Parsed::Value(Node::spanned(
            Value::Str(String::new()),
            Some(Span::new(src, at, at)),
        )));
    }
    // The `=` token absorbs the whitespace that follows it.
    let mut p = Parser {
        src,
        text,
        toks: &tokens,
        pos: usize::from(tokens.first().is_some_and(|t| t.kind == Tok::Ws)),
    };
    let first = p.element()?;
    let mut items = vec![first];
    while p.eat(Tok::Comma) {
        items.push(p.element()?);
    }
    // Lenient: whitespace after a container, function or quoted value (Hydra rejects it).
    while p.peek() == Some(Tok::Ws) {
        p.pos += 1;
    }
    if let Some(t) = p.toks.get(p.pos) {
        return Err(p.unexpected(*t));
    }
    if items.len() == 1 {
        return Ok(items.remove(0));
    }
    let start = items.first().map(parsed_start).unwrap_or(from);
    let span = Span::new(src, start, text.len());
    let mut nodes = Vec::with_capacity(items.len());
    for it in items {
        nodes.push(functions::expect_value(
            text,
            it,
            "a comma-separated choice",
        )?);
    }
    Ok(Parsed::Sweep(
        Sweep::Choice {
            items: nodes,
            simple: true,
            shuffle: false,
        },
        span,
    ))
}

fn parsed_start(p: &Parsed) -> usize {
    match p {
        Parsed::Value(n) => n.span.map(|s| s.start as usize).unwrap_or(0),
        Parsed::Sweep(_, s) | Parsed::Extend(_, s) => s.start as usize,
    }
}

fn lex_error(src: SrcId, text: &str, e: LexError) -> Diag {
    match e {
        LexError::UnterminatedQuote { start } => syntax_error(
            text,
            "unterminated quoted string",
            Span::new(src, start, text.len()),
            "close the quote; inside a quoted value escape a quote of the same kind as `\\'`. \
             To use a lone quote in a value, quote the whole value with the other kind: `key=\"it's\"`",
        ),
        LexError::NestedInterpolation { start, end } => syntax_error(
            text,
            "nested interpolation in an unquoted value",
            Span::new(src, start, end),
            "Hydra's override grammar ends an unquoted `${…}` at the first `}`; quote the value \
             (in the shell: 'key=\"${oc.env:X,${a}}\"')",
        ),
        LexError::BadChar { pos, ch } => syntax_error(
            text,
            format!("`{}` cannot appear in an unquoted value", ch.escape_debug()),
            Span::new(src, pos, pos + ch.len_utf8()),
            match ch {
                '~' => "for null write `null`; for a literal `~` quote the value (in the shell: 'key=\"~\"')".to_string(),
                _ => format!("quote the value (in the shell: 'key=\"…{ch}…\"')"),
            },
        ),
    }
}

struct Parser<'a> {
    src: SrcId,
    text: &'a str,
    toks: &'a [Token],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Tok> {
        self.toks.get(self.pos).map(|t| t.kind)
    }

    fn peek_at(&self, n: usize) -> Option<Tok> {
        self.toks.get(self.pos + n).map(|t| t.kind)
    }

    fn eat(&mut self, k: Tok) -> bool {
        if self.peek() == Some(k) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.src, start, end)
    }

    fn tok_text(&self, t: Token) -> &str {
        self.text.get(t.start..t.end).unwrap_or("")
    }

    fn unexpected(&self, t: Token) -> Diag {
        let shown = self.tok_text(t).trim();
        let help = match t.kind {
            Tok::Comma => "a top-level comma makes a sweep (`a=1,2`); in a list or dict it \
                 separates items; escape a literal comma as `\\,` or quote the value"
                .to_string(),
            Tok::Quoted => "a quoted value must be the whole value or the whole list item; \
                 quote everything, as in `key='a b c'`"
                .to_string(),
            _ => match shown.chars().next() {
                Some(c) if "()[]{}:=,".contains(c) => format!(
                    "quote the value (in the shell: 'key=\"…\"') or escape the character with \
                     a backslash, as in `\\{c}`"
                ),
                _ => "quote the value (in the shell: 'key=\"…\"')".to_string(),
            },
        };
        syntax_error(
            self.text,
            format!("unexpected `{shown}`"),
            self.span(t.start, t.end),
            help,
        )
    }

    fn unexpected_end(&self, expected: &str) -> Diag {
        let at = self.text.len();
        syntax_error(
            self.text,
            format!("unexpected end of value; expected {expected}"),
            self.span(at, at),
            "close every `[`, `{` and `(`; items are separated by commas, as in `[1, 2]` or `{a: 1}`",
        )
    }

    fn element(&mut self) -> Result<Parsed> {
        let Some(t) = self.toks.get(self.pos).copied() else {
            return Err(self.unexpected_end("a value"));
        };
        match t.kind {
            Tok::Id if self.peek_at(1) == Some(Tok::Popen) => self.function(),
            Tok::BracketOpen => self.list().map(Parsed::Value),
            Tok::BraceOpen => self.dict().map(Parsed::Value),
            Tok::Quoted => {
                self.pos += 1;
                let raw = self.tok_text(t);
                let v = Value::Str(lexer::unescape_quoted(raw));
                Ok(Parsed::Value(Node::spanned(
                    v,
                    Some(self.span(t.start, t.end)),
                )))
            }
            _ => self.primitive().map(Parsed::Value),
        }
    }

    fn primitive(&mut self) -> Result<Node> {
        let start = self.pos;
        while matches!(
            self.peek(),
            Some(
                Tok::Id
                    | Tok::Null
                    | Tok::Int
                    | Tok::Float
                    | Tok::Bool
                    | Tok::Interpolation
                    | Tok::UnquotedChar
                    | Tok::Colon
                    | Tok::Esc
                    | Tok::Ws
                    | Tok::Other
            )
        ) {
            self.pos += 1;
        }
        let toks = &self.toks[start..self.pos];
        if toks.iter().all(|t| t.kind == Tok::Ws) {
            return Err(match self.toks.get(self.pos) {
                Some(t) => self.unexpected(*t),
                None => self.unexpected_end("a value"),
            });
        }
        typing::primitive(self.src, self.text, toks)
    }

    fn list(&mut self) -> Result<Node> {
        let open = self.toks[self.pos];
        self.pos += 1;
        let mut items = Vec::new();
        if !self.eat(Tok::BracketClose) {
            loop {
                let el = self.element()?;
                items.push(functions::expect_value(self.text, el, "a list item")?);
                match self.toks.get(self.pos).copied() {
                    Some(Token {
                        kind: Tok::Comma, ..
                    }) => self.pos += 1,
                    Some(Token {
                        kind: Tok::BracketClose,
                        ..
                    }) => {
                        self.pos += 1;
                        break;
                    }
                    Some(t) => return Err(self.unexpected(t)),
                    None => return Err(self.unexpected_end("`,` or `]`")),
                }
            }
        }
        let end = self.toks[self.pos - 1].end;
        Ok(Node::spanned(
            Value::List(items),
            Some(self.span(open.start, end)),
        ))
    }

    fn dict(&mut self) -> Result<Node> {
        let open = self.toks[self.pos];
        self.pos += 1;
        let mut map = Map::new();
        if !self.eat(Tok::BraceClose) {
            loop {
                let (key, kind, key_span) = self.dict_key()?;
                if !self.eat(Tok::Colon) {
                    return Err(match self.toks.get(self.pos) {
                        Some(t) => self.unexpected(*t),
                        None => self.unexpected_end("`:` after a dict key"),
                    });
                }
                let el = self.element()?;
                let mut v = functions::expect_value(self.text, el, "a dict value")?;
                v.key_span = Some(key_span);
                v.key_kind = kind;
                // Like a Python dict, a repeated key keeps the last value.
                map.shift_remove(&key);
                map.insert(key, v);
                match self.toks.get(self.pos).copied() {
                    Some(Token {
                        kind: Tok::Comma, ..
                    }) => self.pos += 1,
                    Some(Token {
                        kind: Tok::BraceClose,
                        ..
                    }) => {
                        self.pos += 1;
                        break;
                    }
                    Some(t) => return Err(self.unexpected(t)),
                    None => return Err(self.unexpected_end("`,` or `}`")),
                }
            }
        }
        let end = self.toks[self.pos - 1].end;
        Ok(Node::spanned(
            Value::Map(map),
            Some(self.span(open.start, end)),
        ))
    }

    /// `dictKey`: like a primitive but without `:` and interpolations; typed keys become
    /// their OmegaConf spelling (`True`, `None`, `1`).
    fn dict_key(&mut self) -> Result<(String, KeyKind, Span)> {
        let start = self.pos;
        while matches!(
            self.peek(),
            Some(
                Tok::Id
                    | Tok::Null
                    | Tok::Int
                    | Tok::Float
                    | Tok::Bool
                    | Tok::UnquotedChar
                    | Tok::Esc
                    | Tok::Ws
                    | Tok::Other
            )
        ) {
            self.pos += 1;
        }
        let toks = &self.toks[start..self.pos];
        if toks.iter().all(|t| t.kind == Tok::Ws) {
            return Err(match self.toks.get(self.pos) {
                Some(t) => self.unexpected(*t),
                None => self.unexpected_end("a dict key"),
            });
        }
        let node = typing::primitive(self.src, self.text, toks)?;
        let span = node.span.unwrap_or_else(|| self.span(0, 0));
        let (key, kind) = match &node.value {
            Value::Int(i) => (i.to_string(), KeyKind::Int),
            Value::Bool(b) => (if *b { "True" } else { "False" }.to_string(), KeyKind::Bool),
            Value::Null => ("None".to_string(), KeyKind::Null),
            Value::Float(_) => (span.text(), KeyKind::Float),
            Value::Str(s) => (s.clone(), KeyKind::Str),
            Value::List(_) | Value::Map(_) => (span.text(), KeyKind::Str),
        };
        Ok((key, kind, span))
    }

    /// `ID '(' (argName? element (',' argName? element)*)? ')'`, evaluated on the spot.
    fn function(&mut self) -> Result<Parsed> {
        let name_tok = self.toks[self.pos];
        self.pos += 2; // name and '('
        let mut args: Vec<Arg> = Vec::new();
        if !self.eat(Tok::Pclose) {
            loop {
                let name = if self.peek() == Some(Tok::Id) && self.peek_at(1) == Some(Tok::Equal) {
                    let t = self.toks[self.pos];
                    self.pos += 2;
                    Some((self.tok_text(t).to_string(), self.span(t.start, t.end)))
                } else {
                    None
                };
                let value = self.element()?;
                args.push(Arg { name, value });
                match self.toks.get(self.pos).copied() {
                    Some(Token {
                        kind: Tok::Comma, ..
                    }) => self.pos += 1,
                    Some(Token {
                        kind: Tok::Pclose, ..
                    }) => {
                        self.pos += 1;
                        break;
                    }
                    Some(t) => return Err(self.unexpected(t)),
                    None => return Err(self.unexpected_end("`,` or `)`")),
                }
            }
        }
        let end = self.toks[self.pos - 1].end;
        let call_span = self.span(name_tok.start, end);
        let name_span = self.span(name_tok.start, name_tok.end);
        functions::call(
            self.text,
            self.tok_text(name_tok),
            name_span,
            call_span,
            args,
        )
    }
}
