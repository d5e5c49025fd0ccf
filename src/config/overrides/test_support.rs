//! Helpers shared by this module's tests.

use super::{Override, Side, apply_all, parse_override, partition};
use crate::config::node::{Node, Value};
use crate::config::source::{SourceKind, add_source};
use crate::config::yaml::parse_source;
use crate::diag::{Diag, Result};

/// Load YAML as a recipe file would be.
pub(super) fn yaml(text: &str) -> Node {
    parse_source(add_source("recipe.yaml", None, text, SourceKind::Recipe))
        .expect("test YAML loads")
}

/// The typed value of one override.
pub(super) fn value(text: &str) -> Value {
    parse_override(0, text)
        .unwrap_or_else(|e| panic!("`{text}` should parse: {}", e.render(false, 100)))
        .value
        .expect("override has a value")
        .value
}

pub(super) fn parse_err(text: &str) -> Diag {
    match parse_override(0, text) {
        Ok(ov) => panic!("`{text}` should not parse, got {:?}", ov.value),
        Err(e) => e,
    }
}

pub(super) fn parse_all(args: &[&str]) -> Result<Vec<Override>> {
    args.iter()
        .enumerate()
        .map(|(i, a)| parse_override(i, a))
        .collect()
}

/// Apply `args` to `config` on `side`; the resulting tree as JSON, or the error.
pub(super) fn run(config: &str, args: &[&str], side: Side) -> Result<serde_json::Value> {
    let mut root = yaml(config);
    let ovs = parse_all(args)?;
    apply_all(&mut root, &ovs, side)?;
    Ok(root.to_json())
}

pub(super) fn run_ok(config: &str, args: &[&str], side: Side) -> serde_json::Value {
    run(config, args, side)
        .unwrap_or_else(|e| panic!("{args:?} on {config:?}: {}", e.render(false, 100)))
}

pub(super) fn run_err(config: &str, args: &[&str], side: Side) -> Diag {
    match run(config, args, side) {
        Ok(v) => panic!("{args:?} on {config:?} should fail, got {v}"),
        Err(e) => e,
    }
}

/// Partition and apply to a recipe tree and an infra tree, as `nrl check` will.
pub(super) fn run_both(recipe: &str, infra: &str, args: &[&str]) -> Result<(Node, Node)> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (r, i) = partition(&args)?;
    let (mut rt, mut it) = (yaml(recipe), yaml(infra));
    apply_all(&mut rt, &r, Side::Recipe)?;
    apply_all(&mut it, &i, Side::Infra)?;
    Ok((rt, it))
}
