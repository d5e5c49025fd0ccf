//! The YAML loader (OmegaConf's dialect with spans): no input may crash it, and what
//! nrl emits from a loaded document loads back to the same document (bundles and
//! manifests are written this way).

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use nrl::config::source::{SourceKind, add_source};
use nrl::config::yaml::parse_source;
use nrl::render::emit::to_yaml;

fuzz_target!(|data: &[u8]| {
    common::on_text(data, |text| {
        let id = add_source("fuzz.yaml", None, text, SourceKind::Text);
        match parse_source(id) {
            Err(e) => common::render(&e),
            Ok(node) => {
                let emitted = to_yaml(&node);
                let back = add_source("emitted.yaml", None, emitted.clone(), SourceKind::Text);
                let reparsed = match parse_source(back) {
                    Ok(n) => n,
                    Err(e) => panic!(
                        "nrl's own YAML does not load back:\n{emitted}\n{}",
                        e.render(false, 100)
                    ),
                };
                assert_eq!(
                    to_yaml(&reparsed),
                    emitted,
                    "nrl's own YAML loads back as another document"
                );
            }
        }
    });
});
