//! `nrl script test`: a test runner for playbook libraries.
//!
//! Convention: a test file is a `*_test.rhai` file (found by walking the given
//! directories, hidden ones and `target/` left out; a file named on the command line is
//! taken whatever its name); a test is a public function `test_*()` without parameters,
//! run in the file's order. Each test runs on a fresh host and engine (its own plan,
//! simulation, exit code and imports) in plan mode: changes are recorded, reads answer
//! from the simulated cluster the test scripts with `sim::…` ([`super::sim`]), never
//! from a real one. The file's top level (imports, constants) runs before each test.
//! Relative paths in a test (`run_script`, recipes) are taken from the working
//! directory, as for `nrl script`.
//!
//! A test passes when its function returns; it fails on any uncaught error, a failed
//! `assert…` included, reported with its file:line. A syntax error in any file, or no
//! test at all, stops the run before a test runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rhai::{AST, CallFnOptions, Dynamic, EvalAltResult, FnAccess, Scope};

use super::engine::new_engine;
use super::errors::{eval_error, parse_error};
use super::host::{Host, HostOptions};
use super::output::CapturedOutput;
use super::sim::Simulation;
use crate::config::source::{SourceKind, SrcId, add_source};
use crate::diag::{Diag, Exit, Result};

/// The suffix of test files.
pub const TEST_FILE_SUFFIX: &str = "_test.rhai";
/// The prefix of test functions.
pub const TEST_FN_PREFIX: &str = "test_";

/// Directories a walk does not enter (besides hidden ones): build output.
const SKIPPED_DIRS: [&str; 2] = ["target", "node_modules"];

/// One compiled test file.
pub struct TestFile {
    /// The path as found (relative when the argument was).
    pub path: PathBuf,
    /// Its test functions, in the file's order.
    pub tests: Vec<String>,
    name: String,
    source: SrcId,
    ast: AST,
}

/// How one test went.
#[derive(Debug, Clone)]
pub struct TestResult {
    pub file: PathBuf,
    pub name: String,
    pub elapsed: Duration,
    /// `None` when it passed.
    pub failure: Option<Failure>,
}

/// Why a test failed.
#[derive(Debug, Clone)]
pub struct Failure {
    pub message: String,
    /// `file:line:col` of the failing call (an `assert`, a built-in, a `throw`).
    pub location: Option<String>,
    /// What the test printed (stdout, then stderr).
    pub output: String,
}

/// The whole run.
#[derive(Debug, Default)]
pub struct Summary {
    pub results: Vec<TestResult>,
    pub elapsed: Duration,
}

impl Summary {
    pub fn passed(&self) -> usize {
        self.results.iter().filter(|r| r.failure.is_none()).count()
    }

    pub fn failed(&self) -> usize {
        self.results.len() - self.passed()
    }

    /// `Exit::Ok` when every test passed, else `Exit::Failed`.
    pub fn exit(&self) -> Exit {
        if self.failed() == 0 {
            Exit::Ok
        } else {
            Exit::Failed
        }
    }

    /// The failures with where they happened, then `N passed, M failed in T`.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let failures: Vec<&TestResult> = self
            .results
            .iter()
            .filter(|r| r.failure.is_some())
            .collect();
        if !failures.is_empty() {
            out.push_str("\nfailures:\n");
        }
        for r in failures {
            let Some(f) = &r.failure else { continue };
            out.push_str(&format!("\n--- {} ---\n", test_id(r)));
            if let Some(at) = &f.location {
                out.push_str(&format!("at {at}\n"));
            }
            for line in f.message.lines() {
                out.push_str(&format!("  {line}\n"));
            }
            if !f.output.is_empty() {
                out.push_str("output:\n");
                for line in f.output.lines() {
                    out.push_str(&format!("  | {line}\n"));
                }
            }
        }
        out.push_str(&format!(
            "\n{} passed, {} failed in {}\n",
            self.passed(),
            self.failed(),
            duration(self.elapsed)
        ));
        out
    }
}

/// `file::name`.
fn test_id(r: &TestResult) -> String {
    format!("{}::{}", r.file.display(), r.name)
}

/// The line of one test: `ok      file::test_name (3 ms)` or `FAILED  …`.
pub fn render_result(r: &TestResult) -> String {
    let verdict = if r.failure.is_none() { "ok" } else { "FAILED" };
    format!("{verdict:<7} {} ({})", test_id(r), duration(r.elapsed))
}

fn duration(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

/// The test files under `paths` (the current directory when empty), sorted per
/// directory, each once.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let default = [PathBuf::from(".")];
    let paths = if paths.is_empty() {
        &default[..]
    } else {
        paths
    };
    let mut found = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut found)?;
        } else if p.is_file() {
            found.push(p.clone());
        } else {
            return Err(Diag::new(
                "nrl::script::test_path",
                format!("no file or directory {}", p.display()),
            )
            .with_exit(Exit::Input)
            .help("pass test files (`*_test.rhai`) or directories that hold them"));
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.retain(|p| seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())));
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| {
        Diag::new(
            "nrl::io",
            format!("cannot read directory {}: {e}", dir.display()),
        )
    })?;
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name.as_str()) {
                walk(&path, found)?;
            }
        } else if name.ends_with(TEST_FILE_SUFFIX) {
            found.push(path);
        }
    }
    Ok(())
}

/// A test file's display name: `./x` loses its `./`.
fn display_name(path: &Path) -> String {
    let shown = path.strip_prefix(".").unwrap_or(path);
    shown.display().to_string()
}

/// Read and compile each file and list its tests; the first syntax error (or unreadable
/// file) is the error, exit code 2.
pub fn load(paths: &[PathBuf], base: &HostOptions) -> Result<Vec<TestFile>> {
    let mut files = Vec::new();
    for path in paths {
        let text = crate::config::input::read_text(path).map_err(|e| {
            Diag::new(
                "nrl::script::not_found",
                format!("cannot read test file {}: {e}", path.display()),
            )
            .with_exit(Exit::Input)
        })?;
        let name = display_name(path);
        let source = add_source(
            name.clone(),
            Some(path.as_path()),
            text.clone(),
            SourceKind::Text,
        );
        let host = test_host(base, Arc::new(CapturedOutput::new()));
        host.add_source(&name, source);
        let engine = new_engine(&host);
        let mut ast = engine
            .compile(&text)
            .map_err(|e| parse_error(&host, &name, &e).with_exit(Exit::Input))?;
        ast.set_source(name.as_str());
        let mut tests: Vec<(usize, String)> = ast
            .iter_functions()
            .filter(|f| {
                f.name.starts_with(TEST_FN_PREFIX)
                    && f.params.is_empty()
                    && f.this_type.is_none()
                    && f.access == FnAccess::Public
            })
            .map(|f| {
                // The file's order: where `fn name(` is written.
                let at = text.find(&format!("fn {}(", f.name)).unwrap_or(usize::MAX);
                (at, f.name.to_string())
            })
            .collect();
        tests.sort();
        files.push(TestFile {
            path: PathBuf::from(&name),
            tests: tests.into_iter().map(|(_, n)| n).collect(),
            name,
            source,
            ast,
        });
    }
    Ok(files)
}

/// A fresh host for one test: plan mode over an empty simulated cluster, output kept.
fn test_host(base: &HostOptions, output: Arc<CapturedOutput>) -> Arc<Host> {
    let mut opts = base.clone();
    opts.dry_run = true;
    opts.live_reads = false;
    opts.interactive = false;
    opts.output = output;
    let sim = Simulation::default();
    opts.env = sim.env();
    let host = Host::new(opts);
    host.plan.simulate(sim);
    host
}

/// Run every test of `files`, calling `each` after each one. No test at all is an
/// error (exit code 2).
pub fn run(
    files: &[TestFile],
    base: &HostOptions,
    mut each: impl FnMut(&TestResult),
) -> Result<Summary> {
    let total: usize = files.iter().map(|f| f.tests.len()).sum();
    if total == 0 {
        let names: Vec<String> = files.iter().map(|f| f.name.clone()).collect();
        let looked = if names.is_empty() {
            format!("no `*{TEST_FILE_SUFFIX}` file was found")
        } else {
            format!("none of {} defines one", names.join(", "))
        };
        return Err(Diag::new(
            "nrl::script::no_tests",
            format!("no tests found: {looked}"),
        )
        .with_exit(Exit::Input)
        .help(format!(
            "a test is a function `fn {TEST_FN_PREFIX}name() {{ … }}` in a file named `*{TEST_FILE_SUFFIX}`"
        )));
    }
    let started = Instant::now();
    let mut summary = Summary::default();
    for file in files {
        for test in &file.tests {
            let r = run_one(file, test, base);
            let interrupted = base.cancel.is_cancelled();
            each(&r);
            summary.results.push(r);
            if interrupted {
                return Err(Diag::new(super::errors::CODE_INTERRUPTED, "interrupted")
                    .with_exit(Exit::Interrupted));
            }
        }
    }
    summary.elapsed = started.elapsed();
    Ok(summary)
}

fn run_one(file: &TestFile, test: &str, base: &HostOptions) -> TestResult {
    let output = Arc::new(CapturedOutput::new());
    let host = test_host(base, output.clone());
    host.add_source(&file.name, file.source);
    let engine = new_engine(&host);
    let mut scope = Scope::new();
    let started = Instant::now();
    let outcome = engine.call_fn_with_options::<Dynamic>(
        CallFnOptions::new().eval_ast(true).rewind_scope(true),
        &mut scope,
        &file.ast,
        test,
        (),
    );
    let elapsed = started.elapsed();
    let failure = match outcome {
        Ok(_) => None,
        // `exit(0)` ends a test as a pass; another code is a failure.
        Err(e) if matches!(*e, EvalAltResult::Exit(..)) => match host.exit_code() {
            None | Some(0) => None,
            Some(n) => Some(Failure {
                message: format!("the test called exit({n})"),
                location: Some(file.name.clone()),
                output: String::new(),
            }),
        },
        Err(e) => {
            let d = eval_error(&host, &file.name, &e);
            Some(Failure {
                message: d.message.clone(),
                location: d.location(),
                output: String::new(),
            })
        }
    };
    let failure = failure.map(|mut f| {
        f.output = format!("{}{}", output.stdout(), output.stderr());
        f
    });
    TestResult {
        file: file.path.clone(),
        name: test.to_string(),
        elapsed,
        failure,
    }
}

/// Discover, load and run on a thread with a large stack (deep Rhai call chains), as
/// scripts run; `each` sees every result as it comes.
pub fn run_on_thread(
    paths: Vec<PathBuf>,
    base: HostOptions,
    each: impl FnMut(&TestResult) + Send + 'static,
) -> Result<Summary> {
    super::run::on_engine_thread("nrl-script-test", move || {
        let found = discover(&paths)?;
        let files = load(&found, &base)?;
        run(&files, &base, each)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn discovery_walks_directories_for_test_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "a_test.rhai", "");
        write(d, "a.rhai", "");
        write(d, "sub/b_test.rhai", "");
        write(d, ".hidden/c_test.rhai", "");
        write(d, "target/d_test.rhai", "");
        let explicit = write(d, "other.rhai", "");
        let found = discover(&[d.to_path_buf(), explicit.clone(), d.join("a_test.rhai")]).unwrap();
        let rel: Vec<String> = found
            .iter()
            .map(|p| p.strip_prefix(d).unwrap().display().to_string())
            .collect();
        assert_eq!(rel, ["a_test.rhai", "sub/b_test.rhai", "other.rhai"]);
        let missing = discover(&[d.join("nope")]).unwrap_err();
        assert_eq!(missing.code, "nrl::script::test_path");
        assert_eq!(missing.exit, Exit::Input);
    }

    #[test]
    fn tests_are_listed_in_file_order_and_run_each_on_a_fresh_host() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "x_test.rhai",
            "fn test_b() { assert_eq(plan_steps().len(), 0); k8s::delete(\"Pod\", \"p\"); }\n\
             fn helper(x) { x }\n\
             private fn test_private() { throw \"no\"; }\n\
             fn test_a() { assert_eq(plan_steps().len(), 0, \"fresh plan\"); assert(false, \"boom\"); }\n",
        );
        let base = HostOptions::new(dir.path());
        let files = load(&[p], &base).unwrap();
        assert_eq!(files[0].tests, ["test_b", "test_a"]);
        let summary = run(&files, &base, |_| {}).unwrap();
        assert_eq!((summary.passed(), summary.failed()), (1, 1));
        let f = summary.results[1].failure.as_ref().unwrap();
        assert_eq!(f.message, "assertion failed: boom");
        let at = f.location.as_deref().unwrap_or_default();
        assert!(at.contains("x_test.rhai:4:"), "{at}");
    }
}
