//! `nrl script FILE [-- ARGS…]`: run a Rhai playbook; `nrl script test [PATH…]`: run
//! playbook tests.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::diag::{Diag, Exit, Result};
use crate::k8s::ConnectOptions;
use crate::script::errors::CODE_INTERRUPTED;
use crate::script::test_runner::{self, render_result};
use crate::script::{Host, HostOptions, docs, run_on_thread};

/// Run a Rhai playbook with nrl's built-ins (config, render, k8s, ray, launch, cluster, dev,
/// doctor, run, util).
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
#[command(after_help = "\
Arguments after `--` reach the script as the map `args`: `--name value` → args.name,
`a.b=1` → args.overrides, other words → args.positional; a bare `--flag` is true.
A playbook that declares its arguments gets them checked and typed instead: `-- --help`
lists them (with the script's header comment), unknown options get a did-you-mean, and
wrong types or missing required ones stop it with exit 2:

  let args = cli(#{
      recipe: file(#{required: true, help: \"the NeMo-RL recipe\"}),
      ttl: int(#{default_value: 600, metavar: \"SECONDS\"}),
      keep_cluster: flag(#{help: \"do not delete the cluster\"}),   // --keep-cluster
      overrides: overrides(),                                      // a.b=1 …
  });

Exit codes: 0 the script finished; n after exit(n); 1 an uncaught error or a limit
(--max-operations, --max-seconds, sizes); 2 a syntax error or bad arguments; 130 Ctrl-C.

Examples:
  nrl script scripts/launch.rhai -- --recipe examples/quickstart/recipe.yaml \\
      --infra examples/quickstart/infra.yaml
  nrl script scripts/launch.rhai --dry-run -- --recipe r.yaml --infra i.yaml grpo.max_num_steps=5
  nrl script scripts/launch.rhai -- --help
  nrl script scripts/postmortem.rhai -- --address http://127.0.0.1:8265 --job raysubmit_abc
  nrl script scripts/disagg_first_launch.rhai --dry-run -- --recipe r.yaml --infra disagg.yaml
  nrl script scripts/dev_loop.rhai -- --sync nemo_rl --cmd 'uv run pytest -x tests/unit'
  nrl script scripts/sweep.rhai --dry-run --max-seconds 60 -- --recipe r.yaml --infra i.yaml
  nrl script scripts/postmortem.rhai --dry-run --allow-reads -- \\
      --address http://127.0.0.1:8265 --job raysubmit_abc
  nrl script --builtins k8s
  nrl script --builtins -o json
  nrl script doc nrl/sweep
  nrl script test stdlib scripts")]
pub struct ScriptArgs {
    #[command(subcommand)]
    pub command: Option<ScriptCommand>,
    /// The Rhai script to run (`import "nrl/…"` loads the bundled stdlib; other imports
    /// are looked up next to the script, then along NRL_PATH).
    #[arg(value_name = "FILE", required_unless_present = "builtins")]
    pub file: Option<PathBuf>,
    /// Plan mode: record what would change a cluster (apply, delete, submit, stop, exec,
    /// sync, runs, shell, file writes) instead of doing it, and print the plan at the end.
    /// A plan touches no cluster or dashboard at all: a built-in that would read one
    /// (`k8s::get`, a job's status, a log) fails with `nrl::script::plan_live_read`
    /// unless reads are allowed (`--allow-reads`).
    #[arg(long)]
    pub dry_run: bool,
    /// In plan mode, let built-ins read clusters and dashboards (each target is listed in
    /// the plan as a `read` step); changes are still only recorded. A script can allow
    /// them itself with `plan_options(#{live_reads: true})`.
    #[arg(long, requires = "dry_run")]
    pub allow_reads: bool,
    /// List every built-in and stdlib module, each function with its signature and
    /// documentation; with MODULE (`k8s`, `sweep`), that module only.
    #[arg(long, value_name = "MODULE", num_args = 0..=1, default_missing_value = "")]
    pub builtins: Option<String>,
    /// Output of `--builtins`: text (default) or json.
    #[arg(short = 'o', long = "output", value_enum, requires = "builtins")]
    pub output: Option<DocFormat>,
    /// Stop the script after N operations (guards against endless loops).
    #[arg(long, value_name = "N", default_value_t = 50_000_000)]
    pub max_operations: u64,
    /// Stop the script after N seconds of wall-clock time, waits included (for CI use of
    /// playbooks; default: no limit). Exit code 1, like the other limits.
    #[arg(long, value_name = "N", value_parser = super::value_parsers::parse_seconds)]
    pub max_seconds: Option<std::time::Duration>,
    /// Where the k8s, launch, cluster, dev and doctor built-ins act.
    #[command(flatten)]
    pub kube: super::common::KubeArgs,
    /// Arguments for the script, after `--`.
    #[arg(last = true, value_name = "ARGS")]
    pub args: Vec<String>,
}

/// How reference documentation is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DocFormat {
    Text,
    Markdown,
    Json,
}

/// Subcommands of `nrl script` (a script file named like one needs a path: `./test`).
#[derive(Debug, Subcommand)]
pub enum ScriptCommand {
    Doc(DocArgs),
    Test(TestArgs),
}

/// Print a script's or module's reference as Markdown, generated from its header comment
/// and the `///` doc comments of its functions, so a team library documents itself.
#[derive(Debug, Args)]
#[command(after_help = "\
A file is looked up as given, then along NRL_PATH (`.rhai` may be left off); `nrl/<name>`
is a stdlib module.

Examples:
  nrl script doc nrl/sweep
  nrl script doc scripts/launch.rhai > docs/launch.md
  NRL_PATH=team/lib nrl script doc checks -o json")]
pub struct DocArgs {
    /// The script, module file or stdlib module (`nrl/sweep`).
    #[arg(value_name = "FILE|MODULE")]
    pub target: String,
    /// markdown (default) or json.
    #[arg(short = 'o', long = "output", value_enum, default_value = "markdown")]
    pub output: DocFormat,
}

/// Run playbook tests: every `test_*()` function of the `*_test.rhai` files under PATH,
/// each on a fresh engine in plan mode against a simulated cluster.
#[derive(Debug, Args)]
#[command(after_help = "\
A test file is a `*_test.rhai` file (directories are searched recursively, hidden ones
and target/ left out; a file named here is taken whatever its name). A test is a public
function `test_name()` without parameters; the file's top level (imports, constants)
runs before each. Each test runs in plan mode on a fresh engine: changes are recorded
(`plan_steps()`, `planned(…)`), and reads answer from a simulated cluster the test
scripts, never from a real one:
  sim::object(manifest)                 an object k8s::get / list / wait see
  sim::rayjob_ends(name, status[, msg]) how a planned RayJob (or a Ray job id) ends
  sim::log(name, text)                  the log of a RayJob, a Ray job id or a pod
  sim::pending_pod(name, reason, message, #{})  a pod the scheduler cannot place
Assertions: assert(cond, msg), assert_eq(a, b), assert_planned(action, kind, name),
planned(action, kind, name) (the rendered manifest of a planned apply);
run_script(path, [args…]) runs a script in plan mode and returns #{exit, error, plan,
stdout, stderr}. Paths in tests are taken from the working directory.

Exit codes: 0 every test passed; 1 a test failed; 2 a syntax error in a test file, a
missing PATH, or no tests found; 130 Ctrl-C.

Example (scripts/postmortem_test.rhai):
  fn test_a_failed_job_exits_1() {
      sim::rayjob_ends(\"raysubmit_1\", \"FAILED\");
      sim::log(\"raysubmit_1\", \"RuntimeError: CUDA out of memory\");
      let r = run_script(\"scripts/postmortem.rhai\",
                         [\"--address\", \"http://127.0.0.1:8265\", \"--job\", \"raysubmit_1\"]);
      assert_eq(r.exit, 1);
  }

  nrl script test stdlib scripts
  nrl script test scripts/launch_test.rhai")]
pub struct TestArgs {
    /// Test files or directories to search (default: the current directory).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

fn json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string_pretty(value)
        .map_err(|e| Diag::new("nrl::internal", format!("cannot encode the reference: {e}")))
}

pub fn run(args: ScriptArgs) -> Result<Exit> {
    if let Some(ScriptCommand::Test(t)) = args.command {
        return run_tests(t);
    }
    if let Some(ScriptCommand::Doc(doc)) = &args.command {
        let workdir = std::env::current_dir()
            .map_err(|e| Diag::new("nrl::io", format!("cannot read the working directory: {e}")))?;
        let module = docs::module_doc(&doc.target, &HostOptions::new(workdir))?;
        match doc.output {
            DocFormat::Json => crate::out!("{}", json(&module)?),
            DocFormat::Text | DocFormat::Markdown => crate::out!("{}", docs::markdown(&module)),
        }
        return Ok(Exit::Ok);
    }
    if let Some(only) = &args.builtins {
        let modules = docs::catalog(Some(only.as_str()).filter(|m| !m.is_empty()))?;
        match args.output.unwrap_or(DocFormat::Text) {
            DocFormat::Json => crate::out!("{}", json(&modules)?),
            DocFormat::Text => crate::out!("{}", docs::reference_text(&modules)),
            DocFormat::Markdown => {
                let pages: Vec<String> = modules.iter().map(docs::markdown).collect();
                crate::out!("{}", pages.join("\n"))
            }
        }
        return Ok(Exit::Ok);
    }
    let Some(file) = args.file.clone() else {
        return Err(Diag::new("nrl::script::usage", "no script given")
            .help("pass a .rhai file: `nrl script scripts/launch.rhai`"));
    };
    let runtime = super::common::runtime()?;
    // Registered before the script starts, so an early Ctrl-C is not lost.
    let cancel = runtime.block_on(async { super::common::cancel_on_signals() })?;

    let workdir = std::env::current_dir()
        .map_err(|e| Diag::new("nrl::io", format!("cannot read the working directory: {e}")))?;
    let mut opts = HostOptions::new(workdir);
    opts.dry_run = args.dry_run;
    opts.live_reads = args.allow_reads;
    opts.interactive = std::io::stdin().is_terminal();
    opts.runtime = Some(runtime.handle().clone());
    opts.cancel = cancel;
    opts.limits.max_operations = args.max_operations;
    opts.limits.max_duration = args.max_seconds;
    opts.connect = ConnectOptions {
        context: args.kube.context.clone(),
        namespace: args.kube.namespace.clone(),
        kubeconfig: args.kube.kubeconfig.clone(),
        request_timeout: Some(args.kube.request_timeout),
        watch_timeout: Some(args.kube.watch_timeout),
        body_limits: None,
    };
    let host = Host::new(opts);
    let result = run_on_thread(host.clone(), file, args.args.clone());
    // A prompt may still be reading stdin on a blocking thread; do not wait for it.
    runtime.shutdown_background();
    match result {
        Ok(outcome) => {
            if args.dry_run && !outcome.help_shown {
                crate::out!("{}", host.plan.render());
            }
            Ok(outcome.exit)
        }
        Err(d) if d.code == CODE_INTERRUPTED => {
            crate::errln!("\ninterrupted");
            Ok(Exit::Interrupted)
        }
        Err(d) => Err(d),
    }
}

/// `nrl script test`: one line per test as it ends, then the failures and the counts.
fn run_tests(args: TestArgs) -> Result<Exit> {
    let runtime = super::common::runtime()?;
    let cancel = runtime.block_on(async { super::common::cancel_on_signals() })?;
    let workdir = std::env::current_dir()
        .map_err(|e| Diag::new("nrl::io", format!("cannot read the working directory: {e}")))?;
    let mut opts = HostOptions::new(workdir);
    opts.runtime = Some(runtime.handle().clone());
    opts.cancel = cancel;
    let result = test_runner::run_on_thread(args.paths, opts, |r| {
        crate::outln!("{}", render_result(r));
    });
    runtime.shutdown_background();
    match result {
        Ok(summary) => {
            crate::out!("{}", summary.render());
            Ok(summary.exit())
        }
        Err(d) if d.code == CODE_INTERRUPTED => {
            crate::errln!("\ninterrupted");
            Ok(Exit::Interrupted)
        }
        Err(d) => Err(d),
    }
}
