//! Running `nrl` against a fake API server.

use std::process::Output;

use crate::support::context::{Nrl, TestContext};

pub use crate::support::data::repo;
pub use crate::support::fake_k8s::*;

pub fn recipe() -> String {
    repo()
        .join("tests/data/cluster/recipe.yaml")
        .display()
        .to_string()
}

pub fn infra() -> String {
    repo()
        .join("tests/data/cluster/infra.yaml")
        .display()
        .to_string()
}

/// A fresh context (user alice) pointed at `fake`, in the cluster test data.
pub fn context(fake: &FakeK8s) -> TestContext {
    TestContext::with_fake(fake)
        .cwd(repo().join("tests/data/cluster"))
        .columns(200)
}

pub fn nrl(fake: &FakeK8s) -> Nrl {
    context(fake).into_nrl()
}

/// `<cmd…> RECIPE --infra INFRA <args…>`.
pub fn recipe_args(cmd: &[&str], args: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = cmd.iter().map(|a| a.to_string()).collect();
    all.extend([recipe(), "--infra".into(), infra()]);
    all.extend(args.iter().map(|a| a.to_string()));
    all
}

/// `nrl <cmd…> RECIPE --infra INFRA <args…>`.
pub fn with_recipe(fake: &FakeK8s, cmd: &[&str], args: &[&str]) -> Nrl {
    let mut c = nrl(fake);
    c.args(recipe_args(cmd, args));
    c
}

/// Run and capture; the context's timeout (120 s) fails a hang instead of blocking.
pub fn run(mut c: Nrl) -> Output {
    c.output().expect("nrl finishes within its timeout")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run, assert success, return (stdout, stderr).
pub fn ok(c: Nrl) -> (String, String) {
    let o = run(c);
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    (stdout(&o), stderr(&o))
}

/// Run, assert the exit code, return stderr.
pub fn fails(c: Nrl, code: i32) -> String {
    let o = run(c);
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&o),
        stderr(&o)
    );
    stderr(&o)
}

/// Requests to one resource, as (verb, status).
pub fn calls(fake: &FakeK8s, resource: &str) -> Vec<(String, u16)> {
    fake.requests(|r| r.resource.as_deref() == Some(resource))
        .iter()
        .map(|r| (r.verb.clone(), r.status))
        .collect()
}
