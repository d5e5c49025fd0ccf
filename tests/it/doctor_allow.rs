//! Silencing doctor findings: `# nrl: allow` comments (same line, line above, file-wide)
//! and `doctor.allow` in user defaults.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nrl::config::env::MapEnv;
use nrl::config::layers::LoadRequest;
use nrl::doctor::allow::AllowedBy;
use nrl::doctor::{self, Report};
use nrl::launch::check::check;

use crate::support::data;

fn base(name: &str) -> String {
    data::repo()
        .join("tests/data/doctor")
        .join(name)
        .display()
        .to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

fn run(recipe: &Path, infra: &Path, home: &Path) -> Report {
    let env = MapEnv::new([
        ("NRL_K8S_USER", "alice"),
        ("HOME", &home.display().to_string()),
    ]);
    let mut req = LoadRequest::new(recipe, Arc::new(env));
    req.infra = Some(infra.to_path_buf());
    let c = check(&req, true).unwrap_or_else(|e| panic!("{}", e.render(false, 100)));
    doctor::offline(&c.config, &c.manifests)
}

fn codes(r: &Report) -> Vec<&str> {
    r.codes()
}

/// A recipe whose `gpus_per_node` disagrees with the base infra; `comment` decorates it.
fn gpu_recipe(dir: &Path, line: &str, above: &str) -> PathBuf {
    write(
        dir,
        "recipe.yaml",
        &format!(
            "defaults: {}\ncluster:\n{above}  gpus_per_node: 8{line}\n",
            base("recipe.yaml")
        ),
    )
}

#[test]
fn same_line_and_line_above_comments_silence_the_finding() {
    let d = tempfile::tempdir().expect("tempdir");
    let infra = PathBuf::from(base("infra.yaml"));
    let home = d.path().join("home");

    let r = run(&gpu_recipe(d.path(), "", ""), &infra, &home);
    assert_eq!(codes(&r), ["nrl::doctor::gpu_mismatch"]);

    let r = run(
        &gpu_recipe(d.path(), "  # nrl: allow gpu_mismatch", ""),
        &infra,
        &home,
    );
    assert!(r.is_empty(), "{}", r.render(false, 100));
    assert_eq!(r.silenced.len(), 1);
    assert!(
        matches!(&r.silenced[0].1, AllowedBy::Comment(loc) if loc.ends_with("recipe.yaml:3:21"))
    );
    assert_eq!(r.summary(), "doctor: no problems found (1 silenced)");

    let r = run(
        &gpu_recipe(
            d.path(),
            "",
            "  # nrl: allow nrl::doctor::gpu_mismatch  8-GPU nodes next week\n  # (comment lines in between are fine)\n",
        ),
        &infra,
        &home,
    );
    assert!(r.is_empty(), "{}", r.render(false, 100));

    // A different code silences nothing.
    let r = run(
        &gpu_recipe(d.path(), "  # nrl: allow no_tolerations", ""),
        &infra,
        &home,
    );
    assert_eq!(codes(&r), ["nrl::doctor::gpu_mismatch"]);
}

#[test]
fn a_comment_on_the_related_line_also_counts() {
    let d = tempfile::tempdir().expect("tempdir");
    let infra_text = std::fs::read_to_string(base("infra.yaml")).expect("read");
    let infra_text = infra_text.replace(
        "nvidia.com/gpu: \"4\"}",
        "nvidia.com/gpu: \"4\"}  # nrl: allow gpu_mismatch",
    );
    let infra = write(d.path(), "infra.yaml", &infra_text);
    let r = run(
        &gpu_recipe(d.path(), "", ""),
        &infra,
        &d.path().join("home"),
    );
    assert!(r.is_empty(), "{}", r.render(false, 100));
}

#[test]
fn file_wide_comment_and_unknown_codes() {
    let d = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(base("no_tolerations.infra.yaml")).expect("read");
    let text = format!(
        "# nrl: allow-file no_tolerations, no_toleration  CPU-only test nodes\n{}",
        text.replace(
            "defaults: infra.yaml",
            &format!("defaults: {}", base("infra.yaml"))
        )
    );
    let infra = write(d.path(), "infra.yaml", &text);
    let recipe = PathBuf::from(base("recipe.yaml"));
    let r = run(&recipe, &infra, &d.path().join("home"));
    // The real code is silenced; the misspelt one is reported with a suggestion.
    assert_eq!(codes(&r), ["nrl::doctor::unknown_allow"]);
    assert!(!r.has_errors());
    assert!(
        r.findings[0].fix.contains("`no_tolerations`"),
        "{}",
        r.findings[0].fix
    );
    assert_eq!(r.silenced.len(), 1);
}

#[test]
fn user_defaults_allow_list() {
    let d = tempfile::tempdir().expect("tempdir");
    let home = d.path().join("home");
    let cfg = home.join(".config/nrl");
    std::fs::create_dir_all(&cfg).expect("mkdir");
    // A bare (unwrapped) user-defaults file: `doctor` is not taken for an infra key.
    write(
        &cfg,
        "defaults.yaml",
        "labels:\n  team: rl\ndoctor:\n  allow: [no_tolerations, nrl::doctor::gpu_mismatch, bogus_code]\n",
    );
    let recipe = PathBuf::from(base("gpu_mismatch.recipe.yaml"));
    let infra = PathBuf::from(base("no_tolerations.infra.yaml"));
    let r = run(&recipe, &infra, &home);
    assert_eq!(codes(&r), ["nrl::doctor::unknown_allow"]);
    assert_eq!(r.silenced.len(), 2);
    assert!(
        r.silenced.iter().all(
            |(_, by)| matches!(by, AllowedBy::UserDefaults(p) if p.ends_with("defaults.yaml"))
        )
    );

    // Malformed sections are errors pointing at the file.
    write(
        &cfg,
        "defaults.yaml",
        "infra:\n  labels: {team: rl}\ndoctor:\n  allow: no_tolerations\n",
    );
    let r = run(&recipe, &infra, &home);
    assert!(
        r.codes().contains(&"nrl::doctor::allow_config"),
        "{:?}",
        r.codes()
    );
    assert!(r.has_errors());
}
