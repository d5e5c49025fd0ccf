//! The RayJob a run applies is validated offline first (schema, names, the 47-character
//! RayJob limit), with diagnostics pointing at the option or infra line behind each value.

use std::path::Path;
use std::sync::Arc;

use nrl::config::layers::{LoadRequest, LoadedConfig, load};
use nrl::config::source::{SourceKind, Span, add_source};
use nrl::diag::Diag;
use nrl::launch::check::check;
use nrl::launch::rayjob::manifest::{rayjob_manifest, validated_rayjob_manifest};
use nrl::render::rayjob::RayJobOptions;
use nrl::run_id::RunId;

use crate::support::data::golden_env;

const INFRA: &str = "\
namespace: team-ns
image: registry/img:1
labels:
  team: rl
launch:
  entrypoint: python run.py --config recipe.yaml
kuberay:
  training:
    name: rc-train
    spec:
      headGroupSpec:
        rayStartParams: {}
        template:
          spec:
            containers:
            - name: ray-head
";

/// Write a recipe and the infra text next to it, and load the pair.
fn load_pair(dir: &Path, infra: &str) -> LoadedConfig {
    std::fs::write(dir.join("recipe.yaml"), "policy:\n  lr: 0.1\n").expect("recipe");
    std::fs::write(dir.join("job.infra.yaml"), infra).expect("infra");
    let mut req = LoadRequest::new(dir.join("recipe.yaml"), Arc::new(golden_env()));
    req.infra = Some(dir.join("job.infra.yaml"));
    load(&req).unwrap_or_else(|e| panic!("loads: {}", e.render(false, 100)))
}

/// Options as the CLI builds them from `--rayjob-name NAME`: the name is registered as a
/// source so problems with it point at the option.
fn named(name: &str) -> RayJobOptions {
    let text = format!("--rayjob-name={name}");
    let id = add_source("<command line>", None, text.clone(), SourceKind::Override);
    let start = text.len() - name.len();
    RayJobOptions {
        name: Some(name.to_string()),
        name_span: Some(Span::new(id, start, text.len())),
        ..RayJobOptions::default()
    }
}

fn all_problems(d: &Diag) -> Vec<&Diag> {
    std::iter::once(d).chain(d.related.iter()).collect()
}

#[test]
fn a_valid_rayjob_is_returned_unchanged_with_the_preamble() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = load_pair(dir.path(), INFRA);
    let opts = named(&"a".repeat(47));
    let checked = validated_rayjob_manifest(&cfg, &RunId::parse("r-1").unwrap(), &opts)
        .unwrap_or_else(|e| panic!("{}", e.render(false, 100)));
    let plain = rayjob_manifest(&cfg, &RunId::parse("r-1").unwrap(), &opts).expect("renders");
    assert_eq!(checked.to_json(), plain.to_json());
    let ep = checked
        .get_path("spec.entrypoint")
        .and_then(|n| n.as_str())
        .unwrap_or_default();
    assert!(ep.starts_with("# nrl: run r-1"), "{ep}");
    // codeSource upload (the default): the recipe is staged at the working_dir's root.
    assert!(ep.ends_with("python run.py --config nrl_run.yaml"), "{ep}");
}

#[test]
fn a_48_character_rayjob_name_is_refused_at_the_option() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = load_pair(dir.path(), INFRA);
    let name = "a".repeat(48);
    let e = validated_rayjob_manifest(&cfg, &RunId::parse("r-1").unwrap(), &named(&name))
        .expect_err("48 > 47");
    assert_eq!(e.code, "nrl::render::name");
    assert!(e.message.contains("RayJob"), "{}", e.message);
    assert!(e.related.is_empty(), "one problem: {:?}", e.related);
    assert_eq!(e.labels[0].span.text(), name);
    assert_eq!(e.labels[0].span.file().name, "<command line>");
    assert!(
        e.help.as_deref().unwrap_or("").contains("47"),
        "{:?}",
        e.help
    );
}

#[test]
fn an_invalid_infra_label_value_points_at_the_infra_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = load_pair(dir.path(), &INFRA.replace("team: rl", "team: not a label!"));
    let e = validated_rayjob_manifest(
        &cfg,
        &RunId::parse("r-1").unwrap(),
        &RayJobOptions::default(),
    )
    .expect_err("a label value with spaces");
    // The label reaches the RayJob and both pod templates; every copy points at line 4.
    let problems = all_problems(&e);
    assert!(!problems.is_empty());
    for p in &problems {
        assert_eq!(p.code, "nrl::render::name", "{}", p.message);
        let label = &p.labels[0];
        assert!(label.span.file().name.ends_with("job.infra.yaml"));
        assert_eq!(label.span.line_col(), (4, 9), "{}", p.render(false, 100));
    }
}

#[test]
fn name_and_label_problems_are_reported_together() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = load_pair(dir.path(), &INFRA.replace("team: rl", "team: not a label!"));
    let e = validated_rayjob_manifest(&cfg, &RunId::parse("r-1").unwrap(), &named(&"b".repeat(48)))
        .expect_err("both");
    let texts: Vec<String> = all_problems(&e)
        .iter()
        .map(|p| p.labels[0].span.text())
        .collect();
    assert!(texts.contains(&"b".repeat(48)), "{texts:?}");
    assert!(texts.contains(&"not a label!".to_string()), "{texts:?}");
}

#[test]
fn rendering_errors_come_before_validation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = load_pair(
        dir.path(),
        &INFRA.replace(
            "  entrypoint: python run.py --config recipe.yaml\n",
            "  mode: single\n",
        ),
    );
    let e = validated_rayjob_manifest(
        &cfg,
        &RunId::parse("r-1").unwrap(),
        &RayJobOptions::default(),
    )
    .expect_err("no entrypoint");
    assert_eq!(e.code, "nrl::run::entrypoint");
}

/// `nrl check` reports a name problem once (it used to run the name checks twice).
#[test]
fn check_reports_a_too_long_raycluster_name_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    load_pair(dir.path(), &INFRA.replace("rc-train", &"c".repeat(54)));
    let mut req = LoadRequest::new(dir.path().join("recipe.yaml"), Arc::new(golden_env()));
    req.infra = Some(dir.path().join("job.infra.yaml"));
    let e = check(&req, true).expect_err("54 > 53");
    assert_eq!(e.code, "nrl::render::name");
    assert!(e.related.is_empty(), "{:?}", e.related);
    assert_eq!(e.labels[0].span.line_col(), (9, 11));
}
