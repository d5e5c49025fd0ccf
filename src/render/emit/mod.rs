//! Deterministic YAML and JSON output for manifests and bundles.
//!
//! Users diff what nrl prints against what the Python reference printed, so the bytes
//! follow PyYAML 6 `safe_dump(doc, sort_keys=False)` and Python's
//! `json.dumps(doc, indent=2, sort_keys=…)` (ref-nrl-k8s-config-render §5). One deliberate
//! difference: nrl never writes anchors/aliases. Its trees are values, not shared objects,
//! so a list the reference printed once as `&id001` and later as `*id001` is printed in
//! full each time (semantically equal YAML).
//!
//! Guarantee: re-reading `to_yaml` output with nrl's loader gives back an equal tree
//! (strings stay strings, ints stay ints), including strings such as `1e3` that PyYAML
//! would print plain but OmegaConf's dialect types as floats; those get quotes.

mod json;
mod resolve;
mod scalar;
mod yaml;

#[cfg(test)]
mod tests;

use crate::config::node::Node;

/// One document as PyYAML `safe_dump(doc, sort_keys=False)` writes it: block style,
/// indent 2, sequences in mappings not indented, width-80 folding, ASCII-only, ending in
/// a newline (and `...` after a root plain scalar, as PyYAML does).
pub fn to_yaml(doc: &Node) -> String {
    yaml::Emitter::new(4096).document(doc)
}

/// The `check --manifests-only` stream: each document dumped on its own, joined by
/// `"\n---\n"` (so an empty line precedes every `---`), nothing appended after the last.
/// Zero documents give the empty string.
pub fn to_yaml_stream(docs: &[Node]) -> String {
    to_yaml_docs(docs)
}

/// [`to_yaml_stream`] of documents that are not in one slice (no copies gathered first).
pub fn to_yaml_docs<'a>(docs: impl IntoIterator<Item = &'a Node>) -> String {
    let mut out = String::new();
    for (i, doc) in docs.into_iter().enumerate() {
        if i > 0 {
            out.push_str("\n---\n");
        }
        out.push_str(&to_yaml(doc));
    }
    out
}

/// Python `json.dumps(doc, indent=2, sort_keys=sort_keys)`: non-ASCII escaped as
/// `\uXXXX`, floats as Python's `repr`, `NaN`/`Infinity` for non-finite floats, no
/// trailing newline.
pub fn to_json(doc: &Node, sort_keys: bool) -> String {
    json::dumps(doc, sort_keys)
}
