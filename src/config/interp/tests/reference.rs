//! The real NeMo-RL inputs resolve exactly as OmegaConf 2.3 resolves them.

use std::time::Instant;

use super::super::{check_syntax, resolve};
use super::load;
use crate::config::env::MapEnv;

fn parity(name: &str, yaml: &str, expected: &str) {
    let root = load(name, yaml);
    check_syntax(&root).unwrap_or_else(|d| panic!("{}", d.render(false, 100)));
    let env = MapEnv::new([("NRL_K8S_USER", "alice")]);
    let got = resolve(&root, &env).unwrap_or_else(|d| panic!("{}", d.render(false, 100)));
    let want: serde_json::Value = serde_json::from_str(expected).expect("expected JSON");
    assert_eq!(got.to_json(), want, "{name}");
}

#[test]
fn qwen3_infra_matches_omegaconf() {
    parity(
        "qwen3_30b_math_4n_4gpu.gb300.infra.yaml",
        include_str!(
            "../../../../tests/data/reference/nemo-rl/infra/nrl_k8s/examples/qwen3_30b_math_4n_4gpu.gb300.infra.yaml"
        ),
        include_str!(
            "../../../../tests/data/interp/qwen3_30b_math_4n_4gpu.gb300.infra.omegaconf.json"
        ),
    );
}

#[test]
fn grpo_math_recipe_matches_omegaconf() {
    parity(
        "grpo_math_1B.yaml",
        include_str!("../../../../tests/data/reference/nemo-rl/examples/configs/grpo_math_1B.yaml"),
        include_str!("../../../../tests/data/interp/grpo_math_1B.omegaconf.json"),
    );
}

/// Not a timed assertion (the machine is shared); prints the figure the report quotes.
#[test]
fn qwen3_infra_resolution_cost() {
    let root = load(
        "qwen3.yaml",
        include_str!(
            "../../../../tests/data/reference/nemo-rl/infra/nrl_k8s/examples/qwen3_30b_math_4n_4gpu.gb300.infra.yaml"
        ),
    );
    let env = MapEnv::new([("NRL_K8S_USER", "alice")]);
    let mut nodes = 0;
    root.walk(&mut Vec::new(), &mut |_, _| nodes += 1);
    let runs = 400;
    let start = Instant::now();
    for _ in 0..runs {
        let out = resolve(&root, &env).expect("resolves");
        assert!(out.get("kuberay").is_some());
    }
    let per = start.elapsed() / runs;
    crate::outln!("resolve qwen3 infra ({nodes} nodes): {per:?} per run (debug build)");
}
