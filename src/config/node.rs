//! The configuration tree: ordered, typed like OmegaConf, every node spanned.
//!
//! One tree type serves recipes, infra layers, rendered manifests and Gym configs, so a
//! value keeps its source span from the YAML line that wrote it all the way to the
//! schema check of the manifest it ends up in.

use std::fmt;

use indexmap::IndexMap;
use serde::ser::{SerializeMap, SerializeSeq};

use super::source::Span;

/// Ordered mapping; keys are the text of the YAML key.
pub type Map = IndexMap<String, Node>;

/// A scalar or container value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Node>),
    Map(Map),
}

/// How a mapping key was written; OmegaConf allows non-string keys (`8080:`), the schema
/// refuses them where it needs string keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyKind {
    #[default]
    Str,
    Int,
    Float,
    Bool,
    Null,
}

/// A value plus where it came from.
#[derive(Debug, Clone)]
pub struct Node {
    pub value: Value,
    /// Span of the value text (None for values synthesised by nrl).
    pub span: Option<Span>,
    /// Span of the mapping key this node sits under, when it sits under one.
    pub key_span: Option<Span>,
    pub key_kind: KeyKind,
}

impl PartialEq for Node {
    /// Equality is by value only; spans are provenance, not content.
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

/// The OmegaConf "missing mandatory value" marker.
pub const MISSING: &str = "???";

impl Node {
    pub fn new(value: Value) -> Node {
        Node {
            value,
            span: None,
            key_span: None,
            key_kind: KeyKind::Str,
        }
    }

    pub fn spanned(value: Value, span: Option<Span>) -> Node {
        Node {
            value,
            span,
            key_span: None,
            key_kind: KeyKind::Str,
        }
    }

    pub fn null() -> Node {
        Node::new(Value::Null)
    }

    pub fn str(s: impl Into<String>) -> Node {
        Node::new(Value::Str(s.into()))
    }

    pub fn int(i: i64) -> Node {
        Node::new(Value::Int(i))
    }

    pub fn bool(b: bool) -> Node {
        Node::new(Value::Bool(b))
    }

    pub fn map() -> Node {
        Node::new(Value::Map(Map::new()))
    }

    pub fn list(items: Vec<Node>) -> Node {
        Node::new(Value::List(items))
    }

    pub fn from_map(m: Map) -> Node {
        Node::new(Value::Map(m))
    }

    pub fn with_span(mut self, span: Option<Span>) -> Node {
        self.span = span;
        self
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// `???`: OmegaConf's mandatory-missing marker.
    pub fn is_missing(&self) -> bool {
        matches!(&self.value, Value::Str(s) if s == MISSING)
    }

    pub fn as_map(&self) -> Option<&Map> {
        match &self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_map_mut(&mut self) -> Option<&mut Map> {
        match &mut self.value {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&Vec<Node>> {
        match &self.value {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    pub fn as_list_mut(&mut self) -> Option<&mut Vec<Node>> {
        match &mut self.value {
            Value::List(l) => Some(l),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match &self.value {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match &self.value {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Child of a mapping by key.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map().and_then(|m| m.get(key))
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.as_map_mut().and_then(|m| m.get_mut(key))
    }

    /// Follow a dotted path (`a.b.0.c`); list segments must be integers.
    pub fn get_path(&self, path: &str) -> Option<&Node> {
        if path.is_empty() {
            return Some(self);
        }
        let mut cur = self;
        for seg in path.split('.') {
            cur = cur.child(seg)?;
        }
        Some(cur)
    }

    /// Child by one path segment: a mapping key, or a list index.
    pub fn child(&self, seg: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(m) => m.get(seg),
            Value::List(l) => seg.parse::<usize>().ok().and_then(|i| l.get(i)),
            _ => None,
        }
    }

    pub fn child_mut(&mut self, seg: &str) -> Option<&mut Node> {
        match &mut self.value {
            Value::Map(m) => m.get_mut(seg),
            Value::List(l) => seg.parse::<usize>().ok().and_then(|i| l.get_mut(i)),
            _ => None,
        }
    }

    pub fn get_path_mut(&mut self, path: &str) -> Option<&mut Node> {
        if path.is_empty() {
            return Some(self);
        }
        let mut cur = self;
        for seg in path.split('.') {
            cur = cur.child_mut(seg)?;
        }
        Some(cur)
    }

    /// Name of the value's type as users see it in messages.
    pub fn type_name(&self) -> &'static str {
        self.value.type_name()
    }

    /// Convert to JSON (insertion order kept). Non-finite floats become null because JSON
    /// cannot carry them.
    pub fn to_json(&self) -> serde_json::Value {
        match &self.value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Node::to_json).collect()),
            Value::Map(m) => {
                serde_json::Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
        }
    }

    /// Build an unspanned tree from JSON.
    pub fn from_json(v: &serde_json::Value) -> Node {
        Node::new(match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else {
                    Value::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            serde_json::Value::String(s) => Value::Str(s.clone()),
            serde_json::Value::Array(a) => Value::List(a.iter().map(Node::from_json).collect()),
            serde_json::Value::Object(o) => Value::Map(
                o.iter()
                    .map(|(k, v)| (k.clone(), Node::from_json(v)))
                    .collect(),
            ),
        })
    }

    /// Depth-first visit of every node with its dotted path.
    pub fn walk<'a>(&'a self, path: &mut Vec<String>, f: &mut dyn FnMut(&[String], &'a Node)) {
        f(path, self);
        match &self.value {
            Value::Map(m) => {
                for (k, v) in m {
                    path.push(k.clone());
                    v.walk(path, f);
                    path.pop();
                }
            }
            Value::List(l) => {
                for (i, v) in l.iter().enumerate() {
                    path.push(i.to_string());
                    v.walk(path, f);
                    path.pop();
                }
            }
            _ => {}
        }
    }

    /// Every node of the tree, depth first, without building paths (see [`Node::walk`]).
    pub fn visit<'a>(&'a self, f: &mut dyn FnMut(&'a Node)) {
        f(self);
        match &self.value {
            Value::Map(m) => m.values().for_each(|v| v.visit(f)),
            Value::List(l) => l.iter().for_each(|v| v.visit(f)),
            _ => {}
        }
    }

    /// The best span to point at for this node: the value, else its key.
    pub fn best_span(&self) -> Option<Span> {
        self.span.or(self.key_span)
    }
}

impl Value {
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::List(_) => "list",
            Value::Map(_) => "mapping",
        }
    }

    pub fn is_container(&self) -> bool {
        matches!(self, Value::List(_) | Value::Map(_))
    }
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form outside
/// `1e-4 <= |x| < 1e16`. OmegaConf stringifies floats this way inside interpolations.
pub fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // `{:e}` gives the shortest round-trip digits, e.g. "1.2345e-7".
    let sci = format!("{:e}", f);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let s = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        format!("{sign}{s}")
    } else {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.abs())
    }
}

/// Python's `str()` of a resolved value, which OmegaConf uses when an interpolation is
/// embedded in a longer string (`True`, `None`, `1.0`, `{'k': 1}`).
pub fn python_str(node: &Node) -> String {
    match &node.value {
        Value::Str(s) => s.clone(),
        _ => python_repr(node),
    }
}

fn python_repr(node: &Node) -> String {
    match &node.value {
        Value::Null => "None".into(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => python_float_repr(*f),
        Value::Str(s) => {
            if s.contains('\'') && !s.contains('"') {
                format!("\"{s}\"")
            } else {
                format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
            }
        }
        Value::List(l) => format!(
            "[{}]",
            l.iter().map(python_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("'{}': {}", k, python_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

impl fmt::Display for Node {
    /// Compact one-line rendering for messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Value::Str(s) => write!(f, "{s:?}"),
            Value::Null => write!(f, "null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Float(x) => write!(f, "{}", python_float_repr(*x)),
            _ => write!(f, "{}", self.to_json()),
        }
    }
}

impl serde::Serialize for Node {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match &self.value {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Str(v) => s.serialize_str(v),
            Value::List(l) => {
                let mut seq = s.serialize_seq(Some(l.len()))?;
                for v in l {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Map(m) => {
                let mut map = s.serialize_map(Some(m.len()))?;
                for (k, v) in m {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// Why two trees could not be merged.
#[derive(Debug, Clone)]
pub struct MergeConflict {
    /// Dotted path of the conflicting key.
    pub path: String,
    pub base_type: &'static str,
    pub base_span: Option<Span>,
    pub over_type: &'static str,
    pub over_span: Option<Span>,
}

/// OmegaConf's merge of untyped configs (the table of ref-config-render §3.4):
/// mappings merge recursively (base key order kept, new keys appended), lists and
/// scalars replace, `???` never overwrites, mapping against list is an error.
/// A child mapping carrying `_override_: true` replaces the base instead of merging
/// (NeMo-RL's loader; nrl honours it at every depth).
pub fn deep_merge(base: &mut Node, over: Node) -> Result<(), MergeConflict> {
    merge_at(base, over, true)
}

/// `OmegaConf.merge` itself: like [`deep_merge`] but `_override_` is an ordinary key
/// (NeMo-RL's recipe loader handles the marker only on top-level sections, before
/// merging; see `config::defaults`).
pub fn omegaconf_merge(base: &mut Node, over: Node) -> Result<(), MergeConflict> {
    merge_at(base, over, false)
}

/// The merge itself. A conflict's path is built while unwinding, so merging (which visits
/// every key of every layer) allocates nothing for paths.
fn merge_at(base: &mut Node, over: Node, markers: bool) -> Result<(), MergeConflict> {
    if over.is_missing() {
        return Ok(());
    }
    match (&mut base.value, over.value) {
        (Value::Map(bm), Value::Map(mut om)) => {
            let replace = markers
                && matches!(
                    om.get("_override_").map(|n| &n.value),
                    Some(Value::Bool(true))
                );
            if replace {
                om.shift_remove("_override_");
                *bm = om;
                base.span = over.span;
                return Ok(());
            }
            for (k, v) in om {
                match bm.get_mut(&k) {
                    Some(existing) => {
                        let key_span = v.key_span;
                        if let Err(mut c) = merge_at(existing, v, markers) {
                            c.path = if c.path.is_empty() {
                                k
                            } else {
                                format!("{k}.{}", c.path)
                            };
                            return Err(c);
                        }
                        if key_span.is_some() {
                            existing.key_span = key_span;
                        }
                    }
                    None => {
                        let mut v = v;
                        if markers {
                            strip_override_markers(&mut v);
                        }
                        bm.insert(k, v);
                    }
                }
            }
            Ok(())
        }
        (Value::Map(_), ov @ Value::List(_)) | (Value::List(_), ov @ Value::Map(_)) => {
            let over = Node { value: ov, ..over };
            Err(MergeConflict {
                path: String::new(),
                base_type: base.type_name(),
                base_span: base.best_span(),
                over_type: over.type_name(),
                over_span: over.best_span(),
            })
        }
        (_, ov) => {
            let mut new = Node {
                value: ov,
                span: over.span,
                key_span: over.key_span.or(base.key_span),
                key_kind: over.key_kind,
            };
            if markers {
                strip_override_markers(&mut new);
            }
            *base = new;
            Ok(())
        }
    }
}

/// `_override_` only means something while merging; never let it reach a result.
fn strip_override_markers(node: &mut Node) {
    match &mut node.value {
        Value::Map(m) => {
            if matches!(m.get("_override_").map(|n| &n.value), Some(Value::Bool(_))) {
                m.shift_remove("_override_");
            }
            for v in m.values_mut() {
                strip_override_markers(v);
            }
        }
        Value::List(l) => l.iter_mut().for_each(strip_override_markers),
        _ => {}
    }
}

#[cfg(test)]
#[path = "node_tests.rs"]
mod tests;
