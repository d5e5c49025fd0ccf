//! Against the reference's own data: the golden `check -o` bundle, the three shipped infra
//! examples and the shipped defaults file; plus one fully rendered diagnostic.

use super::test_schema::{ok, yaml};
use super::*;
use crate::config::node::Map;

const GOLDEN_BUNDLE: &str =
    include_str!("../../../tests/data/reference/nrl-k8s-golden/qwen3_30b.check_bundle.yaml");
pub(super) const QWEN3: &str = include_str!(
    "../../../tests/data/reference/nemo-rl/infra/nrl_k8s/examples/qwen3_30b_math_4n_4gpu.gb300.infra.yaml"
);
pub(super) const ULTRA_48N: &str = include_str!(
    "../../../tests/data/reference/nemo-rl/infra/nrl_k8s/examples/ultra_48n_pipeclean.gb300.infra.yaml"
);
pub(super) const ULTRA_64N: &str = include_str!(
    "../../../tests/data/reference/nemo-rl/infra/nrl_k8s/examples/ultra_64n_pipeclean.gb300.infra.yaml"
);
pub(super) const SHIPPED_DEFAULTS: &str = include_str!(
    "../../../tests/data/reference/nemo-rl/infra/nrl_k8s/src/nrl_k8s/defaults/defaults.example.yaml"
);

pub(super) fn golden_infra() -> Node {
    match yaml(GOLDEN_BUNDLE).get("infra") {
        Some(n) => n.clone(),
        None => panic!("golden bundle has no infra"),
    }
}

/// What the loader would hand over for an example file, done by hand for these inputs:
/// `${user:}` resolved for user alice, escaped `\${` unescaped, `_`-keys dropped and
/// `infra.namespace=nemo-rl` applied (the golden bundles' environment).
pub(super) fn resolved_example(text: &str) -> Node {
    let text = text.replace("${user:}", "alice").replace("\\${", "${");
    let node = yaml(&text);
    let mut map = Map::new();
    map.insert("namespace".into(), Node::str("nemo-rl"));
    if let Some(m) = node.as_map() {
        for (k, v) in m {
            if !k.starts_with('_') {
                map.insert(k.clone(), v.clone());
            }
        }
    }
    Node::from_map(map)
}

#[test]
fn golden_bundle_infra_round_trips() {
    let infra = golden_infra();
    let cfg = ok(validate(&infra));
    assert_eq!(cfg.to_node().to_json(), infra.to_json());
    // Key order too (the YAML bundle keeps declaration order).
    let keys = |n: &Node| -> Vec<String> {
        n.as_map()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(keys(&cfg.to_node()), keys(&infra));
    let l = |n: &Node| n.get("launch").map(keys).unwrap_or_default();
    assert_eq!(l(&cfg.to_node()), l(&infra));
}

#[test]
fn qwen3_example_validates_to_the_golden_infra() {
    let cfg = ok(validate(&resolved_example(QWEN3)));
    assert_eq!(cfg.to_node(), golden_infra());
    let training = cfg.kuberay.get(Role::Training);
    assert_eq!(training.and_then(|t| t.segment_size), Some(1));
    assert!(
        cfg.launch
            .entrypoint
            .as_deref()
            .is_some_and(|e| e.ends_with("tee \"${LOG}\""))
    );
}

#[test]
fn ultra_examples_validate() {
    for (text, replicas) in [(ULTRA_48N, 48), (ULTRA_64N, 64)] {
        let cfg = ok(validate(&resolved_example(text)));
        let t = cfg.kuberay.training.as_ref();
        assert_eq!(t.and_then(|t| t.segment_size), Some(16));
        let groups = t.and_then(|t| t.spec.get_path("workerGroupSpecs.0.replicas"));
        assert_eq!(groups.and_then(Node::as_i64), Some(replicas));
        let tools = &cfg.deployments["nemo_skills"];
        assert_eq!(tools.name, "alice-ultra-pipeclean-ns-tools");
        assert_eq!(tools.health_check_timeout_s, 300);
        assert_eq!(cfg.labels["nrl-k8s/owner"], "alice");
        assert_eq!(
            cfg.kuberay.roles().map(|(r, _)| r).collect::<Vec<_>>(),
            [Role::Training]
        );
    }
}

#[test]
fn shipped_defaults_restate_the_schema_defaults() {
    let shipped = yaml(SHIPPED_DEFAULTS);
    let mut infra = match shipped.get("infra") {
        Some(n) => n.clone(),
        None => panic!("shipped defaults have no infra"),
    };
    if let Some(m) = infra.as_map_mut() {
        m.insert("namespace".into(), Node::str("ns"));
        m.insert("image".into(), Node::str("img"));
    }
    let from_file = ok(validate(&infra)).to_node();
    let from_schema = ok(validate(&yaml("namespace: ns\nimage: img\n"))).to_node();
    assert_eq!(from_file, from_schema);
}

#[test]
fn unknown_key_renders_with_did_you_mean() {
    let id = crate::config::source::add_source(
        "team.infra.yaml",
        None,
        "namespace: ns\nimage: img\nhfCache:\n  kind: none\n",
        crate::config::source::SourceKind::Infra,
    );
    let node = match crate::config::yaml::parse_source(id) {
        Ok(n) => n,
        Err(e) => panic!("{e}"),
    };
    let e = match validate(&node) {
        Ok(_) => panic!("hfCache must be rejected"),
        Err(e) => e,
    };
    let expected = "\
nrl::config::unknown_key

  × unknown key `hfCache` in `infra`
   ╭─[team.infra.yaml:3:1]
 2 │ image: img
 3 │ hfCache:
   · ───┬───
   ·    ╰── not a field of `infra`
 4 │   kind: none
   ╰────
  help: did you mean `hf_cache`? Write `hf_cache:` instead; infra keys are
        spelled exactly as the schema spells them (no aliases)
";
    assert_eq!(e.render(false, 80), expected);
}
