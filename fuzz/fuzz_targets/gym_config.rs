//! A NeMo Gym submit config through nrl's loader: YAML, interpolation, the typed model
//! and its rules, then the Job rendering. Bad configs must be diagnostics.

#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use nrl::config::env::MapEnv;
use nrl::gym::config::load_text;
use nrl::gym::plan::{RunMeta, plan};

fuzz_target!(|data: &[u8]| {
    common::on_text(data, |text| {
        let env = MapEnv::new([("HF_TOKEN", "hf_fuzz"), ("USER", "u"), ("HOME", "/home/u")]);
        match load_text("gym.yaml", text, &[], &env) {
            Err(e) => common::render(&e),
            Ok(loaded) => {
                for w in &loaded.warnings {
                    common::render(w);
                }
                let meta = RunMeta {
                    run_id: "gym-fuzz-1".into(),
                    submitted_at: "2026-12-01T00:00:00Z".into(),
                    submitted_by: "fuzz".into(),
                };
                if let Err(e) = plan(&loaded.config, &meta) {
                    common::render(&e);
                }
            }
        }
    });
});
