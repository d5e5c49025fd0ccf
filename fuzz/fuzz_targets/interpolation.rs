//! OmegaConf interpolation: the grammar, the resolvers (`oc.env`, `oc.select`,
//! `oc.decode`, `oc.create`, `oc.dict.*`, NeMo-RL's arithmetic) and the walk over a tree
//! that refers to itself. Errors must be diagnostics; cycles and deep chains must end.

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use nrl::config::env::MapEnv;
use nrl::config::interp::{check_syntax, resolve};
use nrl::config::node::{Map, Node};

fuzz_target!(|data: &[u8]| {
    common::on_text(data, |text| {
        // A JSON object is a whole config (the seeds are OmegaConf's golden cases);
        // other text is a value that others refer to and that refers to them.
        let tree = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(json @ serde_json::Value::Object(_)) => Node::from_json(&json),
            _ => value_in_tree(text),
        };
        let env = MapEnv::new([("HOME", "/home/u"), ("USER", "u"), ("N", "7")]);
        if let Err(e) = check_syntax(&tree) {
            return common::render(&e);
        }
        if let Err(e) = resolve(&tree, &env) {
            common::render(&e);
        }
    });
});

/// `text` as the value `a` of a small tree that refers to it and that it can refer to.
fn value_in_tree(text: &str) -> Node {
    let mut inner = Map::new();
    inner.insert("c".into(), Node::int(3));
    inner.insert("d".into(), Node::str("${a}"));
    inner.insert("e".into(), Node::list(vec![Node::int(1), Node::str("x")]));
    let mut root = Map::new();
    root.insert("a".into(), Node::str(text));
    root.insert("b".into(), Node::from_map(inner));
    root.insert("f".into(), Node::str("pre-${b.c}-${a}"));
    Node::from_map(root)
}
