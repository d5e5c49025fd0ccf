//! Dev pod settings set once in the user defaults reach every pair's infra (user
//! defaults merge into infra), the infra file can refine them, and the rendered pod
//! validates clean with spans at the file that set each value.

use std::path::Path;
use std::sync::Arc;

use nrl::config::env::MapEnv;
use nrl::config::layers::{LoadRequest, LoadedConfig, load};
use nrl::launch::check::{bundle, check};
use nrl::render::devpod::dev_pod;
use nrl::render::validate::validate_object;

use crate::support::data::*;

const USER_DEFAULTS: &str = "\
infra:
  dev:
    pvcName: team-workspace
    imagePullSecrets: [nvcr-secret]
    resources:
      limits: {cpu: 8}
";

fn env_with_defaults(dir: &Path) -> MapEnv {
    let path = dir.join("defaults.yaml");
    std::fs::write(&path, USER_DEFAULTS).expect("defaults");
    let mut env = golden_env();
    env.set("NRL_DEFAULTS", path.to_str().expect("utf-8 path"));
    env
}

fn load_with(dir: &Path, infra: &str) -> LoadedConfig {
    std::fs::write(dir.join("recipe.yaml"), "policy: {lr: 0.1}\n").expect("recipe");
    std::fs::write(dir.join("dev.infra.yaml"), infra).expect("infra");
    let mut req = LoadRequest::new(dir.join("recipe.yaml"), Arc::new(env_with_defaults(dir)));
    req.infra = Some(dir.join("dev.infra.yaml"));
    load(&req).unwrap_or_else(|e| panic!("{}", e.render(false, 100)))
}

#[test]
fn user_defaults_configure_the_dev_pod_and_the_infra_file_refines_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = load_with(
        dir.path(),
        "namespace: ns\nimage: img:1\ndev:\n  image: img:dev\n",
    );
    let pod = dev_pod(&cfg.infra, "alice").expect("renders");
    let problems = validate_object(&pod);
    assert!(problems.is_empty(), "{problems:?}");
    let json = pod.to_json();
    let c = &json["spec"]["containers"][0];
    assert_eq!(c["image"], "img:dev");
    assert_eq!(c["resources"]["limits"]["cpu"], "8");
    assert_eq!(c["resources"]["limits"]["memory"], "10Gi");
    assert_eq!(json["spec"]["imagePullSecrets"][0]["name"], "nvcr-secret");
    let claim = pod
        .get_path("spec.volumes.0.persistentVolumeClaim.claimName")
        .expect("claim");
    assert_eq!(claim.as_str(), Some("team-workspace"));
    let span = claim.span.expect("spanned");
    assert_eq!(
        span.file().path.as_deref(),
        Some(dir.path().join("defaults.yaml").as_path())
    );
    assert_eq!(span.line_col(), (3, 14));
}

#[test]
fn a_set_dev_section_shows_in_the_bundle_infra() {
    let dir = tempfile::tempdir().expect("tempdir");
    load_with(dir.path(), "namespace: ns\nimage: img:1\n");
    let mut req = LoadRequest::new(
        dir.path().join("recipe.yaml"),
        Arc::new(env_with_defaults(dir.path())),
    );
    req.infra = Some(dir.path().join("dev.infra.yaml"));
    let checked = check(&req, true).expect("checks");
    let b = bundle(&checked).expect("bundle").to_json();
    assert_eq!(b["infra"]["dev"]["pvcName"], "team-workspace");
    let last = b["infra"]
        .as_object()
        .and_then(|m| m.keys().next_back().cloned());
    assert_eq!(last.as_deref(), Some("dev"));
}

/// The reference example pairs never mention `dev:`, so their bundles stay exactly the
/// reference's (tests/it/parity.rs compares them in full); here: no `dev` key at all.
#[test]
fn without_a_dev_section_the_bundle_has_no_dev_key() {
    let req = golden_request(TRIVIAL_RECIPE, "qwen3_30b_math_4n_4gpu");
    let checked = check(&req, true).expect("checks");
    let b = bundle(&checked).expect("bundle").to_json();
    assert!(b["infra"].get("dev").is_none());
    // The dev pod still renders from the defaults.
    let pod = dev_pod(&checked.config.infra, "alice").expect("renders");
    assert!(validate_object(&pod).is_empty());
}
