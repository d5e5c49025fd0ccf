//! YAML in OmegaConf's dialect, with a span on every node.
//!
//! OmegaConf 2.3 loads YAML with PyYAML's SafeLoader (YAML 1.1 implicit typing) plus three
//! changes: duplicate keys are errors, timestamps stay strings, and floats may be written
//! `1e3` without a dot. Anchors, aliases and `<<` merge keys work within one document.
//! The event stream comes from `granit-parser` (already in the tree through kube); typing
//! of plain scalars is done here.

use std::cell::OnceCell;
use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle};

use super::implicit::{Yaml11Word, is_float, is_int, yaml11_word};
use super::node::{KeyKind, Map, Node, Value};
use super::source::{Span, SrcId, source};
use crate::diag::{Diag, Result};

/// Parse a registered source as a single YAML document. An empty document is `null`.
pub fn parse_source(src: SrcId) -> Result<Node> {
    let file = source(src);
    let text = file.text.clone();
    let mut b = Builder::new(src, &text);
    b.run()?;
    Ok(b.root
        .unwrap_or_else(|| Node::spanned(Value::Null, Some(Span::new(src, 0, 0)))))
}

/// Parse and require a mapping at the top (empty text gives an empty mapping).
pub fn parse_mapping(src: SrcId, what: &str) -> Result<Node> {
    let node = parse_source(src)?;
    match node.value {
        Value::Map(_) => Ok(node),
        Value::Null => Ok(Node::spanned(Value::Map(Map::new()), node.span)),
        _ => Err(Diag::new(
            "nrl::config::not_a_mapping",
            format!("{} did not load as a mapping", what),
        )
        .label(node.span, format!("the document is a {}", node.type_name()))
        .help("a recipe, infra or defaults file must be a YAML mapping of `key: value` lines")),
    }
}

/// A parse of a scalar written in YAML 1.1 / OmegaConf style, used also for override
/// values that nrl types like OmegaConf does.
pub fn resolve_plain(text: &str) -> Value {
    if is_null(text) {
        return Value::Null;
    }
    if let Some(b) = parse_bool(text) {
        return Value::Bool(b);
    }
    // Ints and floats start with a digit, a sign or a dot; most plain scalars are words.
    let numeric = matches!(
        text.as_bytes().first(),
        Some(b'0'..=b'9' | b'+' | b'-' | b'.')
    );
    if numeric && is_int(text) {
        if let Some(i) = parse_int(text) {
            return Value::Int(i);
        }
        // Out of i64 range: keep the digits rather than lose them.
        return Value::Str(text.to_string());
    }
    if numeric && is_float(text) {
        return Value::Float(parse_float(text));
    }
    Value::Str(text.to_string())
}

fn is_null(t: &str) -> bool {
    matches!(t, "" | "~") || yaml11_word(t) == Some(Yaml11Word::Null)
}

fn parse_bool(t: &str) -> Option<bool> {
    match yaml11_word(t) {
        Some(Yaml11Word::Bool(b)) => Some(b),
        _ => None,
    }
}

/// PyYAML `construct_yaml_int`. Computed in i128 so that `-9223372036854775808` fits.
fn parse_int(t: &str) -> Option<i64> {
    let clean: String = t.chars().filter(|&c| c != '_').collect();
    let (neg, body) = match clean.as_bytes().first() {
        Some(b'-') => (true, &clean[1..]),
        Some(b'+') => (false, &clean[1..]),
        _ => (false, clean.as_str()),
    };
    let v: i128 = if body == "0" || body.is_empty() {
        0
    } else if let Some(b) = body.strip_prefix("0b") {
        i128::from_str_radix(b, 2).ok()?
    } else if let Some(h) = body.strip_prefix("0x") {
        i128::from_str_radix(h, 16).ok()?
    } else if body.starts_with('0') {
        i128::from_str_radix(body, 8).ok()?
    } else if body.contains(':') {
        let mut v: i128 = 0;
        for part in body.split(':') {
            v = v.checked_mul(60)?.checked_add(part.parse::<i128>().ok()?)?;
        }
        v
    } else {
        body.parse().ok()?
    };
    i64::try_from(if neg { -v } else { v }).ok()
}

/// PyYAML `construct_yaml_float`.
fn parse_float(t: &str) -> f64 {
    let clean: String = t
        .chars()
        .filter(|&c| c != '_')
        .collect::<String>()
        .to_lowercase();
    let (neg, body) = match clean.as_bytes().first() {
        Some(b'-') => (true, &clean[1..]),
        Some(b'+') => (false, &clean[1..]),
        _ => (false, clean.as_str()),
    };
    let v = if body == ".inf" {
        f64::INFINITY
    } else if body == ".nan" {
        f64::NAN
    } else if body.contains(':') {
        let mut v = 0.0;
        for part in body.split(':') {
            v = v * 60.0 + part.parse::<f64>().unwrap_or(0.0);
        }
        v
    } else {
        // Python's float() accepts "1." and ".5"; Rust needs a digit on both sides.
        let mut s = body.to_string();
        if s.starts_with('.') {
            s.insert(0, '0');
        }
        if let Some(pos) = s.find('.') {
            let after = &s[pos + 1..];
            if after.is_empty() || after.starts_with('e') {
                s.insert(pos + 1, '0');
            }
        }
        s.parse::<f64>().unwrap_or(f64::NAN)
    };
    if neg { -v } else { v }
}

/// How many nodes aliases may bring into one document, counting every node of each
/// aliased subtree at every use. Aliases share nothing once built, so nine levels of
/// nine-item lists that alias the level below ("billion laughs") would otherwise build
/// 9^9 nodes, and a chain of `<<: *previous` merge keys grows with the square of its
/// length. go-yaml (what kubectl loads YAML with) refuses "excessive aliasing" the same
/// way (yaml.v2/v3 `decode.go`, `allowedAliasRatio`); a budget of a million nodes is
/// thousands of times what real recipes expand.
pub const ALIAS_NODE_BUDGET: usize = 1_000_000;

enum Frame {
    Seq {
        items: Vec<Node>,
        start: usize,
        anchor: usize,
        /// Nodes in this subtree so far (itself included), for the alias budget.
        size: usize,
    },
    Map {
        pairs: Vec<(Node, Node)>,
        /// Key waiting for its value.
        pending_key: Option<Node>,
        start: usize,
        anchor: usize,
        size: usize,
    },
}

struct Builder<'t> {
    src: SrcId,
    text: &'t str,
    /// char index -> byte offset, for a marker without a byte offset (the parser gives
    /// both for text input, so this is built only if that ever changes).
    /// `None` for ASCII text, where the two are the same.
    char_to_byte: OnceCell<Option<Vec<u32>>>,
    stack: Vec<Frame>,
    /// Anchor id → its node and the number of nodes in it.
    anchors: HashMap<usize, (Node, usize)>,
    /// Nodes built by alias expansion so far, against [`ALIAS_NODE_BUDGET`].
    alias_nodes: usize,
    root: Option<Node>,
    docs: usize,
}

impl<'t> Builder<'t> {
    fn new(src: SrcId, text: &'t str) -> Builder<'t> {
        Builder {
            src,
            text,
            char_to_byte: OnceCell::new(),
            stack: Vec::new(),
            anchors: HashMap::new(),
            alias_nodes: 0,
            root: None,
            docs: 0,
        }
    }

    fn byte(&self, m: &granit_parser::Marker) -> usize {
        if let Some(b) = m.byte_offset() {
            return b.min(self.text.len());
        }
        let table = self.char_to_byte.get_or_init(|| {
            (!self.text.is_ascii()).then(|| {
                let mut v: Vec<u32> = self.text.char_indices().map(|(b, _)| b as u32).collect();
                v.push(self.text.len() as u32);
                v
            })
        });
        match table {
            None => m.index().min(self.text.len()),
            Some(v) => v.get(m.index()).copied().unwrap_or(self.text.len() as u32) as usize,
        }
    }

    fn span(&self, start: usize, end: usize) -> Option<Span> {
        Some(Span::new(self.src, start, end))
    }

    fn run(&mut self) -> Result<()> {
        let text = self.text;
        let opts = granit_parser::options! { emit_comments: false };
        let parser = Parser::new_from_str_with_options(text, opts);
        for ev in parser {
            let (event, span) = match ev {
                Ok(x) => x,
                Err(e) => {
                    let at = self.byte(e.marker());
                    return Err(Diag::new(
                        "nrl::config::yaml_syntax",
                        format!("YAML syntax error: {}", e.info()),
                    )
                    .label(self.span(at, at), e.info().to_string())
                    .help("fix the YAML at the marked position"));
                }
            };
            let start = self.byte(&span.start);
            let end = self.byte(&span.end);
            match event {
                Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
                Event::DocumentStart(..) => {
                    self.docs += 1;
                    if self.docs > 1 {
                        return Err(Diag::new(
                            "nrl::config::yaml_syntax",
                            "expected a single YAML document, found another `---` document",
                        )
                        .label(
                            self.span(start, end.max(start + 3)),
                            "second document starts here",
                        )
                        .help("split the documents into separate files"));
                    }
                }
                Event::Alias(id) => {
                    let Some(size) = self.anchors.get(&id).map(|(_, size)| *size) else {
                        return Err(Diag::new(
                            "nrl::config::yaml_syntax",
                            "alias refers to an unknown anchor",
                        )
                        .label(self.span(start, end), "unknown anchor"));
                    };
                    // Count before cloning: the clone is what would exhaust memory.
                    self.alias_nodes = self.alias_nodes.saturating_add(size);
                    if self.alias_nodes > ALIAS_NODE_BUDGET {
                        return Err(self.alias_budget_exceeded(start, end));
                    }
                    // The aliased content keeps the anchor definition's spans; the alias
                    // site becomes the node's own span. (The anchor was found just above.)
                    let mut n = self.anchors[&id].0.clone();
                    n.span = self.span(start, end);
                    self.push_node(n, size)?;
                }
                Event::Scalar(value, style, anchor, tag) => {
                    let node = self.scalar(&value, style, tag.as_deref(), start, end)?;
                    if anchor != 0 {
                        self.anchors.insert(anchor, (node.clone(), 1));
                    }
                    self.push_node(node, 1)?;
                }
                Event::SequenceStart(_, anchor, tag) => {
                    self.check_container_tag(tag.as_deref(), "seq", start, end)?;
                    self.stack.push(Frame::Seq {
                        items: Vec::new(),
                        start,
                        anchor,
                        size: 1,
                    });
                }
                Event::SequenceEnd => {
                    if let Some(Frame::Seq {
                        items,
                        start: s,
                        anchor,
                        size,
                    }) = self.stack.pop()
                    {
                        let node = Node::spanned(Value::List(items), self.span(s, end));
                        if anchor != 0 {
                            self.anchors.insert(anchor, (node.clone(), size));
                        }
                        self.push_node(node, size)?;
                    }
                }
                Event::MappingStart(_, anchor, tag) => {
                    self.check_container_tag(tag.as_deref(), "map", start, end)?;
                    self.stack.push(Frame::Map {
                        pairs: Vec::new(),
                        pending_key: None,
                        start,
                        anchor,
                        size: 1,
                    });
                }
                Event::MappingEnd => {
                    if let Some(Frame::Map {
                        pairs,
                        start: s,
                        anchor,
                        size,
                        ..
                    }) = self.stack.pop()
                    {
                        let map = self.build_map(pairs)?;
                        let node = Node::spanned(Value::Map(map), self.span(s, end));
                        if anchor != 0 {
                            self.anchors.insert(anchor, (node.clone(), size));
                        }
                        self.push_node(node, size)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn check_container_tag(
        &self,
        tag: Option<&granit_parser::Tag>,
        expect: &str,
        start: usize,
        end: usize,
    ) -> Result<()> {
        if let Some(t) = tag {
            let ok = t.handle() == "tag:yaml.org,2002:" && t.suffix() == expect;
            if !ok {
                return Err(Diag::new(
                    "nrl::config::yaml_tag",
                    format!("unsupported YAML tag `{}{}`", t.handle(), t.suffix()),
                )
                .label(self.span(start, end), "this tag")
                .help("remove the tag; configuration YAML uses plain values"));
            }
        }
        Ok(())
    }

    fn scalar(
        &self,
        value: &str,
        style: ScalarStyle,
        tag: Option<&granit_parser::Tag>,
        start: usize,
        end: usize,
    ) -> Result<Node> {
        let span = self.span(start, end);
        let v = if let Some(t) = tag {
            let suffix = if t.handle() == "tag:yaml.org,2002:" || t.handle() == "!!" {
                t.suffix()
            } else {
                ""
            };
            match suffix {
                "str" => Value::Str(value.to_string()),
                "null" => Value::Null,
                "bool" => match parse_bool(value) {
                    Some(b) => Value::Bool(b),
                    None => return Err(self.bad_tagged(value, "bool", span)),
                },
                "int" => match parse_int(value) {
                    Some(i) if is_int(value) => Value::Int(i),
                    _ => return Err(self.bad_tagged(value, "int", span)),
                },
                "float" => {
                    if is_float(value) || is_int(value) {
                        Value::Float(parse_float(value))
                    } else {
                        return Err(self.bad_tagged(value, "float", span));
                    }
                }
                _ => {
                    return Err(Diag::new(
                        "nrl::config::yaml_tag",
                        format!("unsupported YAML tag `{}{}`", t.handle(), t.suffix()),
                    )
                    .label(span, "this value is tagged")
                    .help("remove the tag or use one of !!str, !!int, !!float, !!bool, !!null"));
                }
            }
        } else if style == ScalarStyle::Plain {
            match resolve_plain(value) {
                Value::Str(_) if is_int(value) => {
                    return Err(Diag::new(
                        "nrl::config::big_int",
                        format!("integer `{value}` does not fit in 64 bits"),
                    )
                    .label(span, "beyond the 64-bit range")
                    .help(
                        "nrl's integers are 64-bit (-9223372036854775808..=9223372036854775807); \
                         quote the value to keep it as a string",
                    ));
                }
                v => v,
            }
        } else {
            Value::Str(value.to_string())
        };
        Ok(Node::spanned(v, span))
    }

    fn bad_tagged(&self, value: &str, ty: &str, span: Option<Span>) -> Diag {
        Diag::new(
            "nrl::config::yaml_tag",
            format!("`{value}` is not a valid !!{ty}"),
        )
        .label(span, format!("tagged !!{ty}"))
    }

    fn alias_budget_exceeded(&self, start: usize, end: usize) -> Diag {
        Diag::new(
            "nrl::config::yaml_alias_budget",
            format!("YAML aliases expand to more than {ALIAS_NODE_BUDGET} nodes (an alias bomb?)"),
        )
        .label(self.span(start, end), "this alias crossed the budget")
        .help(
            "each use of an alias copies the whole anchored value; nest fewer aliases \
             (or `<<:` merges of merges), or write the repeated values out",
        )
    }

    /// Add a finished node (of `size` nodes) to the container being built.
    fn push_node(&mut self, node: Node, size: usize) -> Result<()> {
        match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                Ok(())
            }
            Some(Frame::Seq { items, size: s, .. }) => {
                *s = s.saturating_add(size);
                items.push(node);
                Ok(())
            }
            Some(Frame::Map {
                pairs,
                pending_key,
                size: s,
                ..
            }) => {
                *s = s.saturating_add(size);
                match pending_key.take() {
                    None => *pending_key = Some(node),
                    Some(k) => pairs.push((k, node)),
                }
                Ok(())
            }
        }
    }

    /// Turn the raw key/value pairs of a mapping into a [`Map`]: duplicate-key check on
    /// string keys (OmegaConf), then `<<` merge flattening the way PyYAML does it.
    fn build_map(&self, pairs: Vec<(Node, Node)>) -> Result<Map> {
        let mut merged: Vec<(String, Node)> = Vec::new();
        let mut explicit = Map::with_capacity(pairs.len());
        // String keys a non-string key of the same text replaced (`"1": a` then `1: b`):
        // a later `"1"` is still a duplicate of the first.
        let mut shadowed: Vec<(String, Option<Span>)> = Vec::new();
        for (k, mut v) in pairs {
            let is_merge =
                k.as_str() == Some("<<") && k.span.map(|s| s.text() == "<<").unwrap_or(false);
            if is_merge {
                let sources: Vec<Node> = match v.value {
                    Value::Map(_) => vec![v],
                    Value::List(items) => {
                        for it in &items {
                            if it.as_map().is_none() {
                                return Err(Diag::new(
                                    "nrl::config::yaml_merge",
                                    "a `<<` merge list may only contain mappings",
                                )
                                .label(it.span, format!("this is a {}", it.type_name())));
                            }
                        }
                        items
                    }
                    _ => {
                        return Err(Diag::new(
                            "nrl::config::yaml_merge",
                            "`<<` expects a mapping or a list of mappings",
                        )
                        .label(v.span, format!("this is a {}", v.type_name()))
                        .help("write `<<: *anchor` where the anchor names a mapping"));
                    }
                };
                // PyYAML: later sources in a list lose to earlier ones.
                let mut chunk = Vec::new();
                for s in sources.into_iter().rev() {
                    if let Value::Map(m) = s.value {
                        chunk.extend(m);
                    }
                }
                merged.extend(chunk);
                continue;
            }
            let (key, kind) = match &k.value {
                Value::Str(s) => (s.clone(), KeyKind::Str),
                Value::Int(i) => (i.to_string(), KeyKind::Int),
                Value::Float(_) => (k.span.map(|s| s.text()).unwrap_or_default(), KeyKind::Float),
                Value::Bool(b) => (if *b { "True" } else { "False" }.to_string(), KeyKind::Bool),
                Value::Null => ("None".to_string(), KeyKind::Null),
                Value::List(_) | Value::Map(_) => {
                    return Err(Diag::new(
                        "nrl::config::yaml_key",
                        "a mapping key must be a scalar",
                    )
                    .label(k.span, format!("this key is a {}", k.type_name())));
                }
            };
            let earlier = explicit.get(&key);
            let earlier_str = earlier
                .filter(|e| e.key_kind == KeyKind::Str)
                .map(|e| e.key_span);
            if kind == KeyKind::Str {
                let first = earlier_str.or_else(|| {
                    shadowed
                        .iter()
                        .find(|(s, _)| *s == key)
                        .map(|(_, span)| *span)
                });
                if let Some(prev) = first {
                    return Err(Diag::new(
                        "nrl::config::duplicate_key",
                        format!("duplicate key `{key}`"),
                    )
                    .label(k.span, "repeated here")
                    .label(prev, "first defined here")
                    .help("YAML keys must be unique within a mapping (OmegaConf rejects duplicates); delete one of them"));
                }
            } else if let Some(span) = earlier_str {
                shadowed.push((key.clone(), span));
            }
            v.key_span = k.span;
            v.key_kind = kind;
            explicit.insert(key, v);
        }
        // Keys brought in by `<<` come first; the mapping's own keys override them.
        if merged.is_empty() {
            return Ok(explicit);
        }
        let mut map = Map::with_capacity(merged.len() + explicit.len());
        for (k, v) in merged.into_iter().chain(explicit) {
            map.insert(k, v);
        }
        Ok(map)
    }
}

#[cfg(test)]
#[path = "yaml_tests.rs"]
mod tests;
