//! Shared pieces of rendering: the managed-by label, label/annotation merging in the
//! reference's "later wins, first position kept" order, and small tree helpers.

use indexmap::IndexMap;

use crate::config::node::{Map, Node, Value};
use crate::config::source::Span;

pub const MANAGED_BY_KEY: &str = "app.kubernetes.io/managed-by";
/// The value the reference writes; kept so objects created by either tool look alike.
pub const MANAGED_BY: &str = "nrl-k8s";

/// A string-to-string layer with an optional span lookup for each value.
pub struct StrLayer<'a> {
    pub entries: &'a IndexMap<String, String>,
    /// The spanned source mapping these entries were validated from, if any.
    pub source: Option<&'a Node>,
}

impl<'a> StrLayer<'a> {
    pub fn new(entries: &'a IndexMap<String, String>, source: Option<&'a Node>) -> Self {
        StrLayer { entries, source }
    }
}

/// Merge layers into a mapping node: a key keeps the position of its first occurrence,
/// the last layer's value wins. Values carry the span of the line that set them.
pub fn merge_str_layers(first: Option<(&str, &str)>, layers: &[StrLayer]) -> Map {
    let mut out = Map::new();
    if let Some((k, v)) = first {
        out.insert(k.to_string(), Node::str(v));
    }
    for layer in layers {
        for (k, v) in layer.entries {
            let span = layer.source.and_then(|s| s.get(k)).and_then(|n| n.span);
            let mut node = Node::str(v.clone()).with_span(span);
            node.key_span = layer.source.and_then(|s| s.get(k)).and_then(|n| n.key_span);
            out.insert(k.clone(), node);
        }
    }
    out
}

/// `managed-by` first, then each layer.
pub fn labels_with_managed_by(layers: &[StrLayer]) -> Map {
    merge_str_layers(Some((MANAGED_BY_KEY, MANAGED_BY)), layers)
}

/// Build a mapping node from `(key, node)` pairs in order.
pub fn map_of(pairs: Vec<(&str, Node)>) -> Node {
    Node::from_map(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// Set `key` on a mapping node: an existing key keeps its position, a new key is
/// appended at the end (the reference's ordering contract).
pub fn set(node: &mut Node, key: &str, value: Node) {
    if let Some(m) = node.as_map_mut() {
        m.insert(key.to_string(), value);
    }
}

/// Ensure `node[key]` is a mapping (appending an empty one if absent or null) and return it.
pub fn ensure_map<'a>(node: &'a mut Node, key: &str) -> Option<&'a mut Node> {
    let m = node.as_map_mut()?;
    let needs = !matches!(m.get(key).map(|n| &n.value), Some(Value::Map(_)));
    if needs {
        m.insert(key.to_string(), Node::map());
    }
    m.get_mut(key)
}

/// A string node with a span (used for values copied from infra fields).
pub fn str_at(s: &str, span: Option<Span>) -> Node {
    Node::str(s).with_span(span)
}
