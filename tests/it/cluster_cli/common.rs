//! Running `nrl` against a fake API server.

use std::process::{Command, Output};
use std::time::Duration;

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

/// `nrl` with a clean environment pointed at `fake`, acting as user `alice`.
pub fn nrl(fake: &FakeK8s) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nrl"));
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent/nrl-test-home")
        .env("NRL_USER", "alice")
        .env("NO_COLOR", "1")
        .env("COLUMNS", "200")
        .current_dir(repo().join("tests/data/cluster"));
    for (k, v) in fake.env() {
        c.env(k, v);
    }
    c
}

/// `nrl <cmd…> RECIPE --infra INFRA <args…>`.
pub fn with_recipe(fake: &FakeK8s, cmd: &[&str], args: &[&str]) -> Command {
    let mut c = nrl(fake);
    c.args(cmd)
        .arg(recipe())
        .arg("--infra")
        .arg(infra())
        .args(args);
    c
}

/// Run and capture, with a deadline so a hang fails the test instead of blocking it.
pub fn run(mut c: Command) -> Output {
    use std::io::Read;
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("nrl starts");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("nrl did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = child.wait().expect("wait");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    child.stderr.take().unwrap().read_to_end(&mut err).unwrap();
    Output {
        status,
        stdout: out,
        stderr: err,
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Run, assert success, return (stdout, stderr).
pub fn ok(c: Command) -> (String, String) {
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
pub fn fails(c: Command, code: i32) -> String {
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
