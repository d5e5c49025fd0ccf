//! `TestContext`: the one way an integration test runs the `nrl` binary.
//!
//! Every command starts from an empty environment (`env_clear`), so nothing of the
//! machine running the tests reaches it: not `NRL_DEFAULTS`, `NRL_PATH`, `RAY_ADDRESS`,
//! `KUBECONFIG`, `XDG_*`, nor a recipe's `${oc.env:…}` lookups. What it gets is `PATH`,
//! a fresh temporary `HOME` (records, caches and user defaults land there and vanish
//! with the context; a path like `/nonexistent` would be created by a test running as
//! root), a fixed user, no colour, a fixed terminal width, the repository as working
//! directory and a timeout. A test adds what it needs (a fake cluster's kubeconfig, a
//! Ray address, a token) explicitly.
//!
//! `snapshot_settings()` gives insta filters that turn this context's varying parts
//! (its HOME, the repository path, the fake server's port) into stable placeholders.

use std::ffi::OsString;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tempfile::TempDir;

use super::data::repo;
use super::fake_k8s::FakeK8s;

/// The user every context acts as unless a test says otherwise (`NRL_USER`).
pub const USER: &str = "alice";

pub struct TestContext {
    home: TempDir,
    cwd: PathBuf,
    env: Vec<(OsString, OsString)>,
    timeout: Duration,
    /// Text → placeholder pairs for snapshots (literal, not regex).
    redactions: Vec<(String, &'static str)>,
    /// Regex → placeholder pairs for snapshots (what varies from run to run).
    filters: Vec<(&'static str, &'static str)>,
}

impl Default for TestContext {
    fn default() -> Self {
        Self::new()
    }
}

impl TestContext {
    pub fn new() -> TestContext {
        let home = tempfile::Builder::new()
            .prefix("nrl-test-home-")
            .tempdir()
            .expect("a temporary HOME");
        let redactions = vec![
            (home.path().display().to_string(), "[HOME]"),
            (repo().display().to_string(), "[REPO]"),
        ];
        TestContext {
            home,
            cwd: repo(),
            env: vec![
                ("NRL_USER".into(), USER.into()),
                ("NO_COLOR".into(), "1".into()),
                ("COLUMNS".into(), "100".into()),
            ],
            timeout: Duration::from_secs(120),
            redactions,
            filters: Vec::new(),
        }
    }

    /// A context whose commands talk to `fake` (its kubeconfig).
    pub fn with_fake(fake: &FakeK8s) -> TestContext {
        TestContext::new().fake(fake)
    }

    /// Point commands at `fake`'s kubeconfig.
    pub fn fake(mut self, fake: &FakeK8s) -> TestContext {
        for (k, v) in fake.env() {
            self = self.env(k, v);
        }
        self.redactions.push((
            format!("127.0.0.1:{}", fake.addr().port()),
            "127.0.0.1:[PORT]",
        ));
        self
    }

    /// Set (or replace) one variable of every command's environment.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> TestContext {
        let key = key.into();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.into()));
        self
    }

    /// Leave `key` out of every command's environment (e.g. no `NRL_USER`, to test the
    /// fallbacks).
    pub fn without(mut self, key: &str) -> TestContext {
        self.env.retain(|(k, _)| k != key);
        self
    }

    pub fn user(self, user: &str) -> TestContext {
        self.env("NRL_USER", user)
    }

    pub fn columns(self, columns: u16) -> TestContext {
        self.env("COLUMNS", columns.to_string())
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> TestContext {
        self.cwd = dir.into();
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> TestContext {
        self.timeout = timeout;
        self
    }

    /// Replace what matches `regex` by `placeholder` in this context's snapshots.
    pub fn filter(mut self, regex: &'static str, placeholder: &'static str) -> TestContext {
        self.filters.push((regex, placeholder));
        self
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// `nrl` with exactly this context's environment.
    pub fn nrl(&self) -> Nrl {
        Nrl {
            cmd: self.assert_cmd(),
            _home: None,
        }
    }

    /// The same command as a `std::process::Command`, for tests that spawn it and
    /// interact with it while it runs (no timeout: the test owns the child).
    pub fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(nrl_path());
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&self.cwd);
        c
    }

    fn assert_cmd(&self) -> assert_cmd::Command {
        let mut c = assert_cmd::Command::from_std(self.command());
        c.timeout(self.timeout);
        c
    }

    /// Consume the context into one command that keeps the temporary HOME alive.
    pub fn into_nrl(self) -> Nrl {
        Nrl {
            cmd: self.assert_cmd(),
            _home: Some(self.home),
        }
    }

    /// Insta settings whose filters replace this context's HOME, the repository path
    /// and the fake server's port by placeholders. Bind the result (`let _s =
    /// ctx.snapshot_settings().bind_to_scope();`) around the snapshot assertions.
    pub fn snapshot_settings(&self) -> insta::Settings {
        let mut s = insta::Settings::clone_current();
        // All of the binary's snapshots in one directory, modules in subdirectories too.
        s.set_snapshot_path(repo().join("tests/it/snapshots"));
        // Longest first, so a HOME inside the repository is not half-replaced.
        let mut pairs = self.redactions.clone();
        pairs.sort_by_key(|(text, _)| std::cmp::Reverse(text.len()));
        for (text, placeholder) in pairs {
            s.add_filter(&regex::escape(&text), placeholder);
        }
        for (regex, placeholder) in &self.filters {
            s.add_filter(regex, *placeholder);
        }
        s
    }
}

/// An AGE column, header and values (`5s`, `3m`, `2h`, `1d`) with their padding, so
/// `filter(AGE, "[AGE]  ")` keeps a table stable when an age gains a digit.
pub const AGE: &str = r"\b(AGE|\d+[smhd])\b +";

/// The `nrl` binary under test: a hard link to the one cargo built, made once per test
/// process. Cargo removes an uplifted binary (`target/debug/nrl`) while it relinks it, so a
/// cargo command running beside the tests (the install test's `maturin build`, a
/// developer's `cargo build`) would otherwise make `nrl` vanish, or change, under tests
/// that are running; the link keeps this run's build whatever happens to that path.
pub fn nrl_path() -> PathBuf {
    static UNDER_TEST: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    UNDER_TEST
        .get_or_init(|| {
            let built = PathBuf::from(env!("CARGO_BIN_EXE_nrl"));
            let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nrl-under-test");
            // Links of test runs that have ended (their pid is gone) are stale.
            for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
                let pid = entry.file_name();
                if !Path::new("/proc").join(&pid).exists() {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
            let dir = root.join(std::process::id().to_string());
            std::fs::create_dir_all(&dir).expect("create the directory of nrl under test");
            let link = dir.join("nrl");
            let _ = std::fs::remove_file(&link);
            std::fs::hard_link(&built, &link)
                .or_else(|_| std::fs::copy(&built, &link).map(|_| ()))
                .unwrap_or_else(|e| panic!("link {} to {}: {e}", built.display(), link.display()));
            link
        })
        .clone()
}

/// A hermetic `nrl` command from a fresh context of its own (see the module docs); use
/// a `TestContext` when several commands must share a HOME or a fake cluster.
pub fn nrl() -> Nrl {
    TestContext::new().into_nrl()
}

/// An `assert_cmd::Command` that may own the temporary HOME it runs in (so
/// `nrl().arg(…).assert()` keeps HOME alive for the whole statement).
pub struct Nrl {
    cmd: assert_cmd::Command,
    _home: Option<TempDir>,
}

impl Deref for Nrl {
    type Target = assert_cmd::Command;
    fn deref(&self) -> &assert_cmd::Command {
        &self.cmd
    }
}

impl DerefMut for Nrl {
    fn deref_mut(&mut self) -> &mut assert_cmd::Command {
        &mut self.cmd
    }
}

/// What one command did, its output as text.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// `.run()` at the end of a command chain (`ctx.nrl().args(…).run()`).
pub trait RunToEnd {
    /// Run to the end (within the context's timeout) and keep what it printed.
    fn run(&mut self) -> Ran;
}

impl RunToEnd for assert_cmd::Command {
    fn run(&mut self) -> Ran {
        let out = self.output().expect("nrl finishes within its timeout");
        Ran {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// `insta::assert_snapshot!` under `ctx`'s filters (its HOME, the repository, the
/// fake's port): `snapshot!(ctx, ran.stdout)`, or `snapshot!(ctx, "name", text)` for
/// several in one test.
macro_rules! snapshot {
    ($ctx:expr, $value:expr) => {
        $ctx.snapshot_settings()
            .bind(|| insta::assert_snapshot!($value))
    };
    ($ctx:expr, $name:expr, $value:expr) => {
        $ctx.snapshot_settings()
            .bind(|| insta::assert_snapshot!($name, $value))
    };
}
pub(crate) use snapshot;

#[test]
fn commands_see_only_the_context_environment() {
    let ctx = TestContext::new().env("NRL_TEST_VAR", "x");
    let cmd = ctx.command();
    let mut keys: Vec<String> = cmd
        .get_envs()
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "COLUMNS",
            "HOME",
            "NO_COLOR",
            "NRL_TEST_VAR",
            "NRL_USER",
            "PATH"
        ]
    );
    assert!(ctx.home().is_dir());
}
