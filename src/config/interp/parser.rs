//! Parser for OmegaConf 2.3 interpolation strings (`OmegaConfGrammarParser.g4`).
//!
//! Two entry points: [`parse_template`] (rule `configValue`: literal text mixed with
//! interpolations) and [`parse_element`] (rule `singleElement`, used by `oc.decode`).
//! Escapes are decoded here, so the tree holds final literal text; primitives are typed
//! here (a lone `1_000` is the int 1000, `TrUe` a bool), as the grammar's visitor does.

use super::ast::{
    Element, Interp, InterpKind, KeyPart, KeySeg, NamePart, NodePath, Piece, SyntaxError, Template,
};
use super::lexer::{LexError, Mode, Tok, Token, tokenize};
use crate::config::node::Value;

type PResult<T> = Result<T, SyntaxError>;

/// Parse a config value (rule `configValue`).
pub(crate) fn parse_template(text: &str) -> PResult<Template> {
    let tokens = lex(text, Mode::Top)?;
    let mut p = Parser {
        text,
        tokens,
        pos: 0,
        open: Vec::new(),
        depth: 0,
    };
    let pieces = p.text_pieces(false)?;
    Ok(Template { pieces })
}

/// Parse `text` as a single element in value mode (rule `singleElement`).
pub(crate) fn parse_element(text: &str) -> PResult<Element> {
    let tokens = lex(text, Mode::Value)?;
    let mut p = Parser {
        text,
        tokens,
        pos: 0,
        open: Vec::new(),
        depth: 0,
    };
    if p.peek().is_none() {
        return Err(p.error(0, "expected a value, found an empty string".into()));
    }
    let el = p.element()?;
    if let Some(t) = p.peek() {
        return Err(p.error(
            t.start,
            format!("unexpected `{}` after the value", p.tok_text(&t)),
        ));
    }
    Ok(el)
}

fn lex(text: &str, mode: Mode) -> PResult<Vec<Token>> {
    match tokenize(text, mode) {
        Ok((tokens, _open)) => Ok(tokens),
        Err(LexError::Unbalanced { at }) => Err(SyntaxError {
            at,
            open: None,
            message: "unbalanced `}`".into(),
        }),
        Err(LexError::Unexpected { at, mode }) => Err(SyntaxError {
            at,
            open: enclosing_open(text, at),
            message: unexpected_char(text, at, mode),
        }),
    }
}

/// The last unmatched `${` before `at` (best effort, for labelling).
fn enclosing_open(text: &str, at: usize) -> Option<usize> {
    text.get(..at).and_then(|t| t.rfind("${"))
}

fn unexpected_char(text: &str, at: usize, mode: Mode) -> String {
    let ch = text.get(at..).and_then(|s| s.chars().next()).unwrap_or(' ');
    let shown = ch.escape_debug().to_string();
    match mode {
        Mode::Interp if ch == '{' && text[..at].ends_with('$') => {
            "an interpolation cannot be part of a key name (`${foo${bar}}` is not allowed); \
             use `${foo.${bar}}` or `${foo[${bar}]}`"
                .into()
        }
        Mode::Interp if ch == ' ' || ch == '\t' => {
            "unexpected whitespace inside `${…}` (only allowed after `${`, around `:` and before `}`)"
                .into()
        }
        Mode::Interp => format!("unexpected character `{shown}` inside `${{…}}`"),
        _ => format!(
            "unexpected character `{shown}` in resolver arguments (quote the argument or escape the character with `\\`)"
        ),
    }
}

/// Deepest nesting of interpolations, lists and dicts accepted (keeps the recursive
/// descent off the end of the stack on hostile input; real values nest two or three).
const MAX_NESTING: usize = 64;

struct Parser<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    pos: usize,
    /// Starts of the `${` currently being parsed (innermost last).
    open: Vec<usize>,
    /// Current nesting of interpolations and containers.
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.pos).copied()
    }

    fn peek_kind(&self) -> Option<Tok> {
        self.peek().map(|t| t.kind)
    }

    fn next_kind_after(&self) -> Option<Tok> {
        self.tokens.get(self.pos + 1).map(|t| t.kind)
    }

    fn tok_text(&self, t: &Token) -> &str {
        self.text.get(t.start..t.end).unwrap_or("")
    }

    fn error(&self, at: usize, message: String) -> SyntaxError {
        SyntaxError {
            at,
            open: self.open.last().copied(),
            message,
        }
    }

    fn unexpected(&self, what: &str) -> SyntaxError {
        match self.peek() {
            None => self.error(self.text.len(), self.unterminated()),
            Some(t) => self.error(
                t.start,
                format!("unexpected `{}` {what}", self.tok_text(&t).trim()),
            ),
        }
    }

    fn unterminated(&self) -> String {
        match self.open.last() {
            Some(_) => "unterminated interpolation: `${` is never closed with `}`".into(),
            None => "unexpected end of text".into(),
        }
    }

    fn expect(&mut self, kind: Tok, what: &str) -> PResult<Token> {
        match self.peek() {
            Some(t) if t.kind == kind => {
                self.pos += 1;
                Ok(t)
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// Rule `text`: literal pieces and interpolations, up to the end (top level) or the
    /// closing quote (`quoted`, which is left for the caller).
    fn text_pieces(&mut self, quoted: bool) -> PResult<Vec<Piece>> {
        let mut pieces: Vec<Piece> = Vec::new();
        while let Some(t) = self.peek() {
            let raw = self.tok_text(&t);
            let next = self.next_kind_after();
            let lit: String = match t.kind {
                Tok::InterOpen => {
                    let i = self.interpolation()?;
                    pieces.push(Piece::Interp(i));
                    continue;
                }
                Tok::QuoteClose if quoted => break,
                Tok::AnyStr => raw.to_string(),
                // `\${` -> `${`; `\\\${` -> `\${`: keep the last len/2 + 1 characters.
                Tok::EscInter => raw[raw.len() - (raw.len() / 2 + 1)..].to_string(),
                // Escaped backslashes are only unescaped right before an interpolation
                // (and, in quotes, at the end of the string).
                Tok::TopEsc | Tok::QuotedEsc
                    if next == Some(Tok::InterOpen)
                        || (t.kind == Tok::QuotedEsc && next == Some(Tok::QuoteClose)) =>
                {
                    unescape(raw)
                }
                Tok::TopEsc | Tok::QuotedEsc => raw.to_string(),
                Tok::Esc => unescape(raw),
                _ => return Err(self.unexpected("in text")),
            };
            self.pos += 1;
            match pieces.last_mut() {
                Some(Piece::Lit(prev)) => prev.push_str(&lit),
                _ => pieces.push(Piece::Lit(lit)),
            }
        }
        Ok(pieces)
    }

    fn nest(&mut self, at: usize) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error(at, format!("nested more than {MAX_NESTING} levels deep")));
        }
        Ok(())
    }

    /// Rules `interpolationNode` and `interpolationResolver`, at `${`.
    fn interpolation(&mut self) -> PResult<Interp> {
        let at = self.peek().map_or(self.text.len(), |t| t.start);
        self.nest(at)?;
        let result = self.interpolation_inner();
        self.depth -= 1;
        result
    }

    fn interpolation_inner(&mut self) -> PResult<Interp> {
        let open = self.expect(Tok::InterOpen, "")?;
        self.open.push(open.start);
        let mut dots = 0;
        while self.peek_kind() == Some(Tok::Dot) {
            self.pos += 1;
            dots += 1;
        }
        let mut segs: Vec<KeySeg> = Vec::new();
        loop {
            let bracket = match self.peek_kind() {
                Some(Tok::BracketOpen) => {
                    self.pos += 1;
                    true
                }
                Some(Tok::Dot) if !segs.is_empty() => {
                    self.pos += 1;
                    false
                }
                _ if segs.is_empty() => false,
                Some(Tok::InterClose) | Some(Tok::Colon) => break,
                _ => return Err(self.unexpected("inside `${…}` (expected `.`, `[` or `}`)")),
            };
            let key = self.config_key(dots, segs.is_empty())?;
            if bracket {
                self.expect(Tok::BracketClose, "inside `[…]` (expected `]`)")?;
            }
            segs.push(KeySeg { key, bracket });
        }
        let kind = if self.peek_kind() == Some(Tok::Colon) {
            self.pos += 1;
            let name = self.resolver_name(dots, segs, open.start)?;
            let args = self.sequence(Tok::BraceClose)?;
            self.expect(Tok::BraceClose, "")?;
            InterpKind::Resolver { name, args }
        } else {
            self.expect(Tok::InterClose, "")?;
            InterpKind::Node(NodePath { dots, segs })
        };
        self.open.pop();
        let end = self
            .tokens
            .get(self.pos - 1)
            .map_or(self.text.len(), |t| t.end);
        Ok(Interp {
            kind,
            start: open.start,
            end,
        })
    }

    /// Rule `configKey`: an interpolation, an ID or any other key text.
    fn config_key(&mut self, dots: usize, first: bool) -> PResult<KeyPart> {
        match self.peek() {
            Some(t) if matches!(t.kind, Tok::Id | Tok::InterKey) => {
                self.pos += 1;
                Ok(KeyPart::Text(self.tok_text(&t).to_string()))
            }
            Some(t) if t.kind == Tok::InterOpen => {
                Ok(KeyPart::Interp(Box::new(self.interpolation()?)))
            }
            Some(t) if t.kind == Tok::InterClose && first && dots == 0 => Err(self.error(
                t.start,
                "empty interpolation `${}`: write a key (`${a.b}`) or a resolver call (`${name:}`)"
                    .into(),
            )),
            Some(t) if t.kind == Tok::InterClose && first => {
                Err(self.error(t.start, "expected a key after the leading dots".into()))
            }
            _ => Err(self.unexpected("inside `${…}` (expected a key)")),
        }
    }

    /// Rule `resolverName`: `ID` or interpolation parts separated by dots, no brackets.
    fn resolver_name(&self, dots: usize, segs: Vec<KeySeg>, at: usize) -> PResult<Vec<NamePart>> {
        let invalid = || {
            self.error(
                at,
                "invalid resolver name before `:` (a name is identifiers separated by dots, like `oc.env`)"
                    .into(),
            )
        };
        if dots > 0 || segs.is_empty() {
            return Err(invalid());
        }
        segs.into_iter()
            .map(|s| match (s.bracket, s.key) {
                (false, KeyPart::Interp(i)) => Ok(NamePart::Interp(*i)),
                (false, KeyPart::Text(t)) if is_id(&t) => Ok(NamePart::Id(t)),
                _ => Err(invalid()),
            })
            .collect()
    }

    /// Rule `sequence` (possibly empty), stopping before `end`. Missing elements between
    /// commas are empty strings, as OmegaConf 2.3 does (with a deprecation warning).
    fn sequence(&mut self, end: Tok) -> PResult<Vec<Element>> {
        let mut items = Vec::new();
        let mut after_comma = true;
        let mut any_comma = false;
        loop {
            match self.peek_kind() {
                None => return Err(self.unexpected("")),
                Some(k) if k == end => break,
                Some(Tok::Comma) => {
                    if after_comma {
                        items.push(Element::Scalar(Value::Str(String::new())));
                    }
                    after_comma = true;
                    any_comma = true;
                    self.pos += 1;
                }
                Some(_) if !after_comma => {
                    return Err(self.unexpected("after an argument (expected `,`)"));
                }
                Some(_) => {
                    items.push(self.element()?);
                    after_comma = false;
                }
            }
        }
        if any_comma && after_comma {
            items.push(Element::Scalar(Value::Str(String::new())));
        }
        Ok(items)
    }

    /// Rule `element`: quoted string, list, dict or primitive.
    fn element(&mut self) -> PResult<Element> {
        let at = self.peek().map_or(self.text.len(), |t| t.start);
        self.nest(at)?;
        let result = self.element_inner();
        self.depth -= 1;
        result
    }

    fn element_inner(&mut self) -> PResult<Element> {
        match self.peek_kind() {
            Some(Tok::QuoteOpenSingle | Tok::QuoteOpenDouble) => {
                self.pos += 1;
                let pieces = self.text_pieces(true)?;
                if self.peek_kind() != Some(Tok::QuoteClose) {
                    let at = self.peek().map_or(self.text.len(), |t| t.start);
                    return Err(self.error(at, "unterminated quoted string".into()));
                }
                self.pos += 1;
                Ok(Element::Str(pieces))
            }
            Some(Tok::BracketOpen) => {
                self.pos += 1;
                let items = self.sequence(Tok::BracketClose)?;
                self.expect(Tok::BracketClose, "")?;
                Ok(Element::List(items))
            }
            Some(Tok::BraceOpen) => {
                self.pos += 1;
                self.dict()
            }
            _ => self.primitive(),
        }
    }

    fn dict(&mut self) -> PResult<Element> {
        let mut pairs = Vec::new();
        if self.peek_kind() == Some(Tok::BraceClose) {
            self.pos += 1;
            return Ok(Element::Dict(pairs));
        }
        loop {
            let key = self.dict_key()?;
            self.expect(Tok::Colon, "in a dict (expected `:` after the key)")?;
            let value = self.element()?;
            pairs.push((key, value));
            match self.peek_kind() {
                Some(Tok::Comma) => self.pos += 1,
                Some(Tok::BraceClose) => {
                    self.pos += 1;
                    return Ok(Element::Dict(pairs));
                }
                _ => return Err(self.unexpected("in a dict (expected `,` or `}`)")),
            }
        }
    }

    /// Rule `dictKey`: like a primitive without `:`, interpolations or quotes.
    fn dict_key(&mut self) -> PResult<Value> {
        let start = self.pos;
        while matches!(
            self.peek_kind(),
            Some(
                Tok::Id
                    | Tok::Null
                    | Tok::Int
                    | Tok::Float
                    | Tok::Bool
                    | Tok::UnquotedChar
                    | Tok::Esc
                    | Tok::Ws
            )
        ) {
            self.pos += 1;
        }
        match &self.tokens[start..self.pos] {
            [] => Err(self.unexpected("in a dict (expected a key)")),
            [one] => Ok(self.typed(one)),
            many => Ok(Value::Str(self.concat_text(many))),
        }
    }

    /// Rule `primitive`: one or more tokens; a single token is typed, several make a string.
    fn primitive(&mut self) -> PResult<Element> {
        let mut pieces: Vec<Piece> = Vec::new();
        let mut count = 0;
        let mut single: Option<Element> = None;
        while let Some(t) = self.peek() {
            let el = match t.kind {
                Tok::InterOpen => Element::Interp(Box::new(self.interpolation()?)),
                Tok::Id
                | Tok::Null
                | Tok::Int
                | Tok::Float
                | Tok::Bool
                | Tok::UnquotedChar
                | Tok::Colon
                | Tok::Esc
                | Tok::Ws => {
                    self.pos += 1;
                    Element::Scalar(self.typed(&t))
                }
                _ => break,
            };
            count += 1;
            match &el {
                Element::Interp(i) => pieces.push(Piece::Interp((**i).clone())),
                _ => {
                    let lit = self.piece_text(&t);
                    match pieces.last_mut() {
                        Some(Piece::Lit(prev)) => prev.push_str(&lit),
                        _ => pieces.push(Piece::Lit(lit)),
                    }
                }
            }
            single = Some(el);
        }
        match (count, single) {
            (0, _) | (_, None) => Err(self.unexpected("(expected a value)")),
            (1, Some(el)) => Ok(el),
            _ => Ok(Element::Str(pieces)),
        }
    }

    /// Text a token contributes to a concatenation (escapes decoded, the rest verbatim).
    fn piece_text(&self, t: &Token) -> String {
        let raw = self.tok_text(t);
        if t.kind == Tok::Esc {
            unescape(raw)
        } else {
            raw.to_string()
        }
    }

    fn concat_text(&self, toks: &[Token]) -> String {
        toks.iter().map(|t| self.piece_text(t)).collect()
    }

    /// The value of a lone primitive token, typed like OmegaConf's visitor.
    fn typed(&self, t: &Token) -> Value {
        let raw = self.tok_text(t);
        match t.kind {
            Tok::Null => Value::Null,
            Tok::Bool => Value::Bool(raw.eq_ignore_ascii_case("true")),
            Tok::Int => {
                let clean = raw.replace('_', "");
                // Python ints are unbounded; one that does not fit in i64 stays text.
                clean
                    .parse::<i64>()
                    .map_or_else(|_| Value::Str(raw.to_string()), Value::Int)
            }
            Tok::Float => {
                let clean = raw.replace('_', "");
                clean
                    .parse::<f64>()
                    .map_or_else(|_| Value::Str(raw.to_string()), Value::Float)
            }
            Tok::Esc => Value::Str(unescape(raw)),
            // A lone WS cannot occur inside `${…}`; `oc.decode(" ")` reaches it, where
            // OmegaConf fails an internal assertion. nrl keeps the whitespace.
            _ => Value::Str(raw.to_string()),
        }
    }
}

/// Keep every second character: `\,` -> `,`, `\\` -> `\`, `\\\'` -> `\'`.
fn unescape(raw: &str) -> String {
    raw.chars().skip(1).step_by(2).collect()
}

/// `ID: [a-zA-Z_][a-zA-Z0-9_-]*`
fn is_id(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}
