//! Installing nrl the way uv and ruff are installed: maturin builds a wheel whose only
//! content is the `nrl` binary; pip puts it on a fresh venv's PATH (no Rust, no network);
//! the installed binary works, also under kubectl's plugin name `kubectl-nrl`.
//!
//! maturin comes from the CI venv (`make venv`; `NRL_PYTHON` names its python). Without it
//! the test is skipped, except under `CI=true`, where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::data::repo;
use crate::support::ray_head::in_ci;

fn venv_bin() -> Option<PathBuf> {
    let python = std::env::var_os("NRL_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"));
    let bin = python.parent()?.to_path_buf();
    bin.join("maturin").is_file().then_some(bin)
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_wheel_puts_a_working_nrl_on_a_fresh_venvs_path() {
    let Some(bin) = venv_bin() else {
        assert!(!in_ci(), "maturin is missing from the CI venv (make venv)");
        eprintln!("skipped: no maturin in the venv (make venv)");
        return;
    };
    // maturin's cargo build relinks target/debug/nrl; the tests run the link made here
    // first (see `nrl_path`), so they keep this run's binary while it does.
    crate::support::context::nrl_path();
    let tmp = tempfile::tempdir().unwrap();
    let wheels = tmp.path().join("wheels");
    // The dev profile: the binary the tests already built, so packaging is seconds.
    run(Command::new(bin.join("maturin"))
        .args(["build", "--profile", "dev", "--quiet", "--out"])
        .arg(&wheels)
        .current_dir(repo()));
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");
    let venv = tmp.path().join("venv");
    run(Command::new(bin.join("python"))
        .args(["-m", "venv"])
        .arg(&venv));
    run(Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--no-index",
            "--disable-pip-version-check",
        ])
        .arg(&wheel));
    let nrl = venv.join("bin/nrl");
    let version = run(Command::new(&nrl).arg("--version"));
    assert_eq!(version.trim(), concat!("nrl ", env!("CARGO_PKG_VERSION")));
    let check = |program: &Path| {
        run(Command::new(program)
            .args([
                "check",
                "examples/quickstart/recipe.yaml",
                "--infra",
                "examples/quickstart/infra.yaml",
            ])
            .current_dir(repo())
            .env("NRL_USER", "alice")
            .env("HOME", tmp.path()))
    };
    let summary = check(&nrl);
    assert!(summary.contains("alice-quickstart"), "{summary}");
    // kubectl runs `kubectl-nrl ARGS…` for `kubectl nrl ARGS…`.
    let plugin = venv.join("bin/kubectl-nrl");
    std::os::unix::fs::symlink(&nrl, &plugin).unwrap();
    assert_eq!(check(&plugin), summary);
}
