//! `nrl script FILE [-- ARGS…]`: run a Rhai playbook.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

use crate::diag::{Diag, Exit, Result};
use crate::k8s::ConnectOptions;
use crate::script::errors::CODE_INTERRUPTED;
use crate::script::{Host, HostOptions, docs, run_on_thread};

/// Run a Rhai playbook with nrl's built-ins (config, render, k8s, ray, launch, cluster, dev,
/// doctor, run, util).
#[derive(Debug, Args)]
#[command(after_help = "\
Arguments after `--` reach the script as the map `args`: `--name value` → args.name,
`a.b=1` → args.overrides, other words → args.positional; a bare `--flag` is true.

Exit codes: 0 the script finished; n after exit(n); 1 an uncaught error or a limit
(--max-operations, --max-seconds, sizes); 2 a syntax error or bad arguments; 130 Ctrl-C.

Examples:
  nrl script scripts/launch.rhai -- --recipe examples/quickstart/recipe.yaml --infra examples/quickstart/infra.yaml
  nrl script scripts/launch.rhai --dry-run -- --recipe r.yaml --infra i.yaml grpo.max_num_steps=5
  nrl script scripts/postmortem.rhai -- --address http://127.0.0.1:8265 --job raysubmit_abc
  nrl script scripts/disagg_first_launch.rhai --dry-run -- --recipe r.yaml --infra disagg.yaml
  nrl script scripts/dev_loop.rhai -- --sync nemo_rl --cmd 'uv run pytest -x tests/unit'
  nrl script scripts/sweep.rhai --dry-run --max-seconds 60 -- --recipe r.yaml --infra i.yaml
  nrl script scripts/postmortem.rhai --dry-run --allow-reads -- --address http://127.0.0.1:8265 --job raysubmit_abc
  nrl script --builtins")]
pub struct ScriptArgs {
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
    /// List every built-in module and function with its signature and documentation.
    #[arg(long)]
    pub builtins: bool,
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

pub fn run(args: ScriptArgs) -> Result<Exit> {
    if args.builtins {
        crate::out!("{}", docs::builtins_reference());
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
            if args.dry_run {
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
