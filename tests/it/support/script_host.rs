//! Running Rhai scripts in-process for tests: captured output, a hermetic environment
//! (user alice, no user defaults), the repository as working directory.

use std::path::Path;
use std::sync::Arc;

use nrl::config::env::MapEnv;
use nrl::diag::{Diag, Exit};
use nrl::script::{CapturedOutput, Host, HostOptions, Outcome, run_source};

pub use super::data::repo;

/// The environment scripts see in tests.
pub fn test_env() -> MapEnv {
    MapEnv::new([
        ("NRL_USER", "alice"),
        ("HOME", "/nonexistent/nrl-test-home"),
        ("NRL_TEST_GREETING", "hello"),
    ])
}

/// One finished run.
pub struct Run {
    /// The run store of this run (`XDG_CACHE_HOME`), held so it lives as long as the run.
    _cache: tempfile::TempDir,
    pub out: Arc<CapturedOutput>,
    pub host: Arc<Host>,
    pub result: Result<Outcome, Diag>,
}

impl Run {
    pub fn stdout(&self) -> String {
        self.out.stdout()
    }

    pub fn stderr(&self) -> String {
        self.out.stderr()
    }

    /// The outcome; panics with the rendered diagnostic and output when the run failed.
    pub fn ok(&self) -> &Outcome {
        match &self.result {
            Ok(o) => o,
            Err(d) => panic!(
                "script failed:\n{}\nstdout:\n{}\nstderr:\n{}",
                d.render(false, 100),
                self.stdout(),
                self.stderr()
            ),
        }
    }

    /// The error; panics when the run succeeded.
    pub fn err(&self) -> &Diag {
        match &self.result {
            Ok(_) => panic!("expected an error; stdout:\n{}", self.stdout()),
            Err(d) => d,
        }
    }

    pub fn exit(&self) -> Exit {
        self.ok().exit
    }
}

/// Options for a test run in `workdir`.
pub fn options(workdir: &Path) -> (HostOptions, Arc<CapturedOutput>) {
    let out = Arc::new(CapturedOutput::new());
    let mut opts = HostOptions::new(workdir);
    opts.env = Arc::new(test_env());
    opts.output = out.clone();
    opts.search_path = Vec::new();
    (opts, out)
}

/// Run `text` (named `name`, as if it lived in the repo root) with `args`, after `setup`
/// adjusts the options. Runs on its own thread, as `nrl script` does.
pub fn run_with(
    name: &str,
    text: &str,
    args: &[&str],
    setup: impl FnOnce(&mut HostOptions),
) -> Run {
    let (mut opts, out) = options(&repo());
    // Run records go to a store of this run's own, never under the (fake) HOME.
    let cache = tempfile::tempdir().expect("temp dir");
    let mut env = test_env();
    env.set("XDG_CACHE_HOME", &cache.path().display().to_string());
    opts.env = Arc::new(env);
    setup(&mut opts);
    let host = Host::new(opts);
    let h = host.clone();
    let name = name.to_string();
    let text = text.to_string();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let result = std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(move || run_source(&h, &name, None, &text, &args))
        .expect("spawn")
        .join()
        .expect("script thread");
    Run {
        _cache: cache,
        out,
        host,
        result,
    }
}

/// Run `text` with default options.
pub fn run(text: &str) -> Run {
    run_with("test.rhai", text, &[], |_| {})
}

/// Run `text` in plan mode.
pub fn plan(text: &str) -> Run {
    run_with("test.rhai", text, &[], |o| o.dry_run = true)
}

/// Run `text` and return what it printed; panics on failure.
pub fn output_of(text: &str) -> String {
    let r = run(text);
    r.ok();
    r.stdout()
}
