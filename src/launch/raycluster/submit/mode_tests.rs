//! Mode resolution: ref-orchestration §10.1 "ModeResolution" (cases 16-21) and the
//! regression of ref §11 A1 (the infra's submitter and codeSource were dead inputs).

use std::sync::Arc;

use super::*;
use crate::config::env::MapEnv;
use crate::config::layers::{LoadRequest, load};

fn cfg(launch_yaml: &str) -> LoadedConfig {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("recipe.yaml"), "policy: {x: 1}\n").unwrap();
    std::fs::write(
        dir.path().join("infra.yaml"),
        format!("namespace: ns\nimage: img\nlaunch:\n  entrypoint: python run.py\n{launch_yaml}"),
    )
    .unwrap();
    let mut req = LoadRequest::new(
        dir.path().join("recipe.yaml"),
        Arc::new(MapEnv::new([("NRL_USER", "t"), ("HOME", "/nonexistent")])),
    );
    req.infra = Some(dir.path().join("infra.yaml"));
    load(&req).unwrap()
}

fn flags() -> ModeFlags {
    ModeFlags::default()
}

fn tuple(r: &Resolved) -> (RunMode, SubmitterMode, CodeSource, bool) {
    (r.mode, r.submitter, r.code_source, r.wait)
}

#[test]
fn interactive_defaults() {
    let r = resolve(&cfg(""), &flags()).unwrap();
    assert_eq!(
        tuple(&r),
        (
            RunMode::Interactive,
            SubmitterMode::PortForward,
            CodeSource::Upload,
            true
        )
    );
}

#[test]
fn batch_defaults() {
    let f = ModeFlags {
        mode: Some(RunMode::Batch),
        code_path: Some("/opt/nemo-rl".into()),
        ..flags()
    };
    let r = resolve(&cfg(""), &f).unwrap();
    assert_eq!(
        tuple(&r),
        (
            RunMode::Batch,
            SubmitterMode::Exec,
            CodeSource::Image,
            false
        )
    );
}

#[test]
fn explicit_submitter_overrides_mode() {
    let f = ModeFlags {
        mode: Some(RunMode::Batch),
        submitter: Some(SubmitterMode::PortForward),
        code_path: Some("/opt/nemo-rl".into()),
        ..flags()
    };
    let r = resolve(&cfg(""), &f).unwrap();
    assert_eq!(
        tuple(&r),
        (
            RunMode::Batch,
            SubmitterMode::PortForward,
            CodeSource::Image,
            false
        )
    );
}

#[test]
fn explicit_code_source_overrides_mode() {
    let f = ModeFlags {
        mode: Some(RunMode::Batch),
        code_source: Some(CodeSource::Lustre),
        code_path: Some("/lustre/rl".into()),
        ..flags()
    };
    assert_eq!(
        resolve(&cfg(""), &f).unwrap().code_source,
        CodeSource::Lustre
    );
}

#[test]
fn wait_flag_overrides_mode_default() {
    let f = ModeFlags {
        mode: Some(RunMode::Batch),
        wait: Some(true),
        code_path: Some("/opt/nemo-rl".into()),
        ..flags()
    };
    assert!(resolve(&cfg(""), &f).unwrap().wait);
}

#[test]
fn infra_run_mode_used_without_cli_flag() {
    let r = resolve(
        &cfg("  runMode: batch\n  codePath: /opt/nemo-rl\n"),
        &flags(),
    )
    .unwrap();
    assert_eq!(
        tuple(&r),
        (
            RunMode::Batch,
            SubmitterMode::Exec,
            CodeSource::Image,
            false
        )
    );
}

/// Regression of ref §11 A1: the shipped GB300 examples say portForward + image +
/// runMode batch and mean it; the reference gave them the exec submitter.
#[test]
fn infra_submitter_and_code_source_are_the_baseline() {
    let c = cfg(
        "  runMode: batch\n  codeSource: image\n  codePath: /opt/nemo-rl\nsubmit:\n  submitter: portForward\n",
    );
    let r = resolve(&c, &flags()).unwrap();
    assert_eq!(
        tuple(&r),
        (
            RunMode::Batch,
            SubmitterMode::PortForward,
            CodeSource::Image,
            false
        )
    );
    // An explicit --mode overrides the infra's choices.
    let f = ModeFlags {
        mode: Some(RunMode::Interactive),
        ..flags()
    };
    assert_eq!(
        resolve(&c, &f).unwrap().submitter,
        SubmitterMode::PortForward
    );
    let c = cfg("submit:\n  submitter: exec\n  execTmpDir: /scratch\n");
    let f = ModeFlags {
        code_source: Some(CodeSource::Image),
        code_path: Some("/opt".into()),
        ..flags()
    };
    assert_eq!(resolve(&c, &f).unwrap().submitter, SubmitterMode::Exec);
}

#[test]
fn impossible_combinations_are_refused() {
    let f = ModeFlags {
        code_source: Some(CodeSource::Image),
        ..flags()
    };
    let e = resolve(&cfg(""), &f).unwrap_err();
    assert_eq!(e.code, "nrl::run::code_path");
    assert!(
        e.message
            .contains("--code-source image requires --code-path")
    );
    let f = ModeFlags {
        submitter: Some(SubmitterMode::Exec),
        ..flags()
    };
    assert_eq!(
        resolve(&cfg(""), &f).unwrap_err().code,
        "nrl::run::exec_upload"
    );
}
