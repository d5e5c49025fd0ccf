//! Parity with the reference tool: for every golden file, nrl's output parsed as
//! YAML/JSON equals the golden document by document (DESIGN §3 "Render"). RayJob dry runs
//! differ only in `spec.entrypoint`, which carries nrl's staging preamble.

use nrl::config::layers::load;
use nrl::config::schema::Role;
use nrl::launch::check::{bundle, check};
use nrl::launch::rayjob::manifest::rayjob_manifest;
use nrl::render::rayjob::RayJobOptions;
use nrl::render::targets::{parse_targets, up_manifests};
use nrl::run_id::RunId;

use crate::support::data::*;

const PAIRS: &[(&str, &str, &str)] = &[
    ("qwen3_30b", QWEN_RECIPE, "qwen3_30b_math_4n_4gpu"),
    ("ultra_48n", TRIVIAL_RECIPE, "ultra_48n_pipeclean"),
    ("ultra_64n", TRIVIAL_RECIPE, "ultra_64n_pipeclean"),
];

fn pair(prefix: &str) -> (&'static str, &'static str) {
    let p = PAIRS.iter().find(|p| p.0 == prefix).expect("known pair");
    (p.1, p.2)
}

fn golden_docs(name: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(golden(name)).expect("golden file");
    parse_stream(&text).iter().map(|n| n.to_json()).collect()
}

fn manifests_only(prefix: &str) {
    let (recipe, infra) = pair(prefix);
    let checked = check(&golden_request(recipe, infra), true).expect("check passes");
    let ours: Vec<_> = checked.manifests.iter().map(|n| n.to_json()).collect();
    let name = format!("{prefix}.check_manifests_only.yaml");
    assert_docs_equal(&ours, &golden_docs(&name), &name);
}

fn cluster_up_dry_run(prefix: &str) {
    let (recipe, infra) = pair(prefix);
    let cfg = load(&golden_request(recipe, infra)).expect("loads");
    let targets = parse_targets(&cfg.infra, &[]).expect("targets");
    let ours: Vec<_> = up_manifests(&cfg.infra, &targets)
        .expect("renders")
        .iter()
        .map(|n| n.to_json())
        .collect();
    let name = format!("{prefix}.cluster_up_dry_run.txt");
    assert_docs_equal(&ours, &golden_docs(&name), &name);
}

fn rayjob_dry_run(prefix: &str) {
    let (recipe, infra) = pair(prefix);
    let cfg = load(&golden_request(recipe, infra)).expect("loads");
    let mut ours = rayjob_manifest(
        &cfg,
        &RunId::parse("parity-run-1").unwrap(),
        &RayJobOptions::default(),
    )
    .expect("renders")
    .to_json();
    let name = format!("{prefix}.run_rayjob_dry_run.txt");
    let mut golden = golden_docs(&name).remove(0);
    let ours_ep = ours["spec"]["entrypoint"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let golden_ep = golden["spec"]["entrypoint"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The preamble stages the run; the user's entrypoint follows it, with `--config`
    // pointed at the staged recipe.
    assert!(ours_ep.starts_with("# nrl: run parity-run-1"), "{ours_ep}");
    assert!(ours_ep.contains("export NRL_RUN_ID=parity-run-1\n"));
    let (user_part, _) =
        nrl::render::rayjob::rewrite_config_flag(&golden_ep, "/tmp/nrl-parity-run-1/nrl_run.yaml");
    assert!(
        ours_ep.ends_with(&user_part),
        "entrypoint tail differs:\n{ours_ep}"
    );
    ours["spec"]["entrypoint"] = serde_json::Value::Null;
    golden["spec"]["entrypoint"] = serde_json::Value::Null;
    assert_docs_equal(&[ours], &[golden], &name);
}

fn bundle_matches(ext: &str) {
    let (_, infra) = pair("qwen3_30b");
    let checked = check(&golden_request(TRIVIAL_RECIPE, infra), true).expect("check passes");
    let ours = bundle(&checked).expect("bundle").to_json();
    let name = format!("qwen3_30b.check_bundle.{ext}");
    let text = std::fs::read_to_string(golden(&name)).expect("golden");
    let golden: serde_json::Value = if ext == "json" {
        serde_json::from_str(&text).expect("json")
    } else {
        parse_doc(&text).to_json()
    };
    assert_docs_equal(&[ours], &[golden], &name);
}

#[test]
fn qwen3_30b_check_manifests_only() {
    manifests_only("qwen3_30b");
}
#[test]
fn ultra_48n_check_manifests_only() {
    manifests_only("ultra_48n");
}
#[test]
fn ultra_64n_check_manifests_only() {
    manifests_only("ultra_64n");
}
#[test]
fn qwen3_30b_cluster_up_dry_run() {
    cluster_up_dry_run("qwen3_30b");
}
#[test]
fn ultra_48n_cluster_up_dry_run() {
    cluster_up_dry_run("ultra_48n");
}
#[test]
fn ultra_64n_cluster_up_dry_run() {
    cluster_up_dry_run("ultra_64n");
}
#[test]
fn qwen3_30b_run_rayjob_dry_run() {
    rayjob_dry_run("qwen3_30b");
}
#[test]
fn ultra_48n_run_rayjob_dry_run() {
    rayjob_dry_run("ultra_48n");
}
#[test]
fn ultra_64n_run_rayjob_dry_run() {
    rayjob_dry_run("ultra_64n");
}
#[test]
fn qwen3_30b_check_bundle_yaml() {
    bundle_matches("yaml");
}
#[test]
fn qwen3_30b_check_bundle_json() {
    bundle_matches("json");
}

/// Issue 2's acceptance: the real recipe chain + qwen3 infra resolve to the golden infra.
#[test]
fn recipe_chain_with_qwen3_infra_gives_golden_infra() {
    let cfg = load(&golden_request(QWEN_RECIPE, "qwen3_30b_math_4n_4gpu")).expect("loads");
    let text = std::fs::read_to_string(golden("qwen3_30b.check_bundle.json")).expect("golden");
    let golden: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(cfg.infra.to_node().to_json(), golden["infra"]);
    assert!(cfg.infra.kuberay.get(Role::Training).is_some());
    // The recipe chain is three files deep and the child's deletions took effect.
    assert_eq!(cfg.layers.recipe_files.len(), 3);
    assert!(
        cfg.recipe
            .get_path("policy.optimizer")
            .is_some_and(|n| n.is_null())
    );
}
