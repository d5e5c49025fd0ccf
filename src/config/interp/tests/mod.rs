//! Tests for interpolation. `golden` replays a corpus produced by real OmegaConf 2.3.0;
//! the other files name one rule (or one edge case of the specs) per test.

mod diagnostics;
mod golden;
mod grammar;
mod props;
mod reference;
mod resolve;
mod resolvers;

use super::resolve;
use crate::config::env::MapEnv;
use crate::config::node::Node;
use crate::config::source::{SourceKind, add_source};
use crate::config::yaml;
use crate::diag::Diag;

/// Load YAML text as a registered source (so nodes carry spans).
fn load(name: &str, text: &str) -> Node {
    let id = add_source(name, None, text, SourceKind::Infra);
    yaml::parse_mapping(id, name).unwrap_or_else(|d| panic!("{}", d.render(false, 100)))
}

fn env() -> MapEnv {
    MapEnv::new([("NRL_USER", "Alice_B"), ("NRL_TEST_PORT", "3308")])
}

fn resolved(text: &str) -> Node {
    resolve(&load("t.yaml", text), &env()).unwrap_or_else(|d| panic!("{}", d.render(false, 100)))
}

fn failure(text: &str) -> Diag {
    match resolve(&load("t.yaml", text), &env()) {
        Ok(n) => panic!("expected an error, got {}", n.to_json()),
        Err(d) => d,
    }
}

fn json(n: &Node) -> serde_json::Value {
    n.to_json()
}
