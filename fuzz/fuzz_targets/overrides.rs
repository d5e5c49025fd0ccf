//! Hydra override arguments: parsing, sweeps, and applying to a recipe and an infra
//! tree. Errors must be diagnostics, never a panic.

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use nrl::config::overrides::{Side, apply_all, expand_sweep, parse_override};
use nrl::config::source::{SourceKind, add_source};
use nrl::config::yaml::parse_source;
use nrl::render::emit::to_yaml;

const TREE: &str = "policy:\n  lr: 1.0e-4\n  model: {name: qwen, layers: [1, 2, 3]}\n  tags: [a, b]\ngrpo: {steps: 5, 'a.b': 1}\nlist: [{x: 1}, {y: [2]}]\nempty: {}\nnone: null\n";

fuzz_target!(|data: &[u8]| {
    common::on_text(data, |text| {
        // An empty sweep (`range(5,2)`) is allowed: Hydra's expands to no points too.
        if let Err(e) = expand_sweep(text) {
            common::render(&e);
        }
        let ov = match parse_override(0, text) {
            Err(e) => return common::render(&e),
            Ok(ov) => ov,
        };
        for side in [Side::Recipe, Side::Infra, Side::Gym] {
            let id = add_source("tree.yaml", None, TREE, SourceKind::Text);
            let Ok(mut tree) = parse_source(id) else {
                unreachable!("the base tree is valid YAML");
            };
            match apply_all(&mut tree, std::slice::from_ref(&ov), side) {
                Err(e) => common::render(&e),
                Ok(()) => {
                    let _ = to_yaml(&tree);
                }
            }
        }
    });
});
