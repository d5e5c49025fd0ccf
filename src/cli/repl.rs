//! `nrl repl [FILE…]`: an interactive Rhai console with nrl's built-ins.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::config::env::ProcessEnv;
use crate::diag::{Diag, Exit, Result};
use crate::k8s::ConnectOptions;
use crate::repl::{ReplOptions, history_path};
use crate::script::HostOptions;

/// An interactive Rhai console with the built-ins of `nrl script`.
#[derive(Debug, Args)]
#[command(after_help = "\
Inputs run in one session: `let` variables, functions and `import \"…\" as name` stay.
Tab completes built-ins, methods (by the value's type), a Config's keys inside
cfg.get(\"…, cfg.set(\"…, cfg.explain(\"…, cfg.override(\"… and the overrides of a
recipe already loaded, variables, module paths after `import` and file paths inside
strings; the hint shows the signature of the call under the cursor, or the value of the
config key being typed. Enter on unfinished input (open brackets, blocks, back-tick
strings) continues it at a `...> ` prompt. Ctrl-C stops a running input and keeps the
session; Ctrl-D leaves.
History: $XDG_STATE_HOME/nrl/history, else ~/.local/state/nrl/history.

Commands: :help [name], :doc name, :load FILE, :vars, :ctx [context], :ns [namespace],
:plan [on|off], :clear, :quit.

Results: arrays of maps print as tables (Kubernetes objects as NAME/STATUS/AGE), maps
and manifests as YAML, handles as one line.

With stdin not a terminal, lines are evaluated as they arrive (no prompt) and the exit
code is that of the first input that failed: 2 (syntax), 1 (runtime), 3 (cluster API),
0 when none did; :quit ends the input, exit(n) ends with n, Ctrl-C with 130.

Examples:
  nrl repl
  nrl repl --context kind-dev -n team-a
  nrl repl --dry-run scripts/helpers.rhai
  echo 'k8s::list(\"RayCluster\")' | nrl repl")]
pub struct ReplArgs {
    /// Scripts to load before the first prompt (as `:load FILE`).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Start in plan mode: built-ins that would change a cluster record the action
    /// instead (`:plan off` switches it off, `:plan` shows the plan); reads of a cluster
    /// or dashboard are refused unless `--allow-reads`.
    #[arg(long)]
    pub dry_run: bool,
    /// In plan mode, let built-ins read clusters and dashboards (listed as `read` steps).
    #[arg(long)]
    pub allow_reads: bool,
    /// Stop an input after N operations (guards against endless loops).
    #[arg(long, value_name = "N", default_value_t = 50_000_000)]
    pub max_operations: u64,
    /// Where the k8s and launch built-ins act (`:ctx` and `:ns` switch later).
    #[command(flatten)]
    pub kube: super::common::KubeArgs,
}

pub fn run(args: ReplArgs) -> Result<Exit> {
    let runtime = super::common::runtime()?;
    let workdir = std::env::current_dir()
        .map_err(|e| Diag::new("nrl::io", format!("cannot read the working directory: {e}")))?;
    let interactive = std::io::stdin().is_terminal();
    let mut host = HostOptions::new(workdir);
    host.dry_run = args.dry_run;
    host.live_reads = args.allow_reads;
    host.interactive = interactive;
    host.runtime = Some(runtime.handle().clone());
    host.cancel = CancellationToken::new();
    host.limits.max_operations = args.max_operations;
    host.connect = ConnectOptions {
        context: args.kube.context.clone(),
        namespace: args.kube.namespace.clone(),
        kubeconfig: args.kube.kubeconfig.clone(),
        request_timeout: Some(args.kube.request_timeout),
        watch_timeout: Some(args.kube.watch_timeout),
        body_limits: None,
    };
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let result = crate::repl::run(ReplOptions {
        host,
        preload: args.files,
        history: history_path(&ProcessEnv),
        interactive,
        color,
        width: width(),
    });
    // A prompt may still be reading stdin on a blocking thread; do not wait for it.
    runtime.shutdown_background();
    result
}

/// `COLUMNS`, else the terminal's width, else 100.
fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .or_else(|| {
            std::io::stdout()
                .is_terminal()
                .then(|| crossterm::terminal::size().ok())
                .flatten()
                .map(|(w, _)| usize::from(w))
        })
        .unwrap_or(100)
}
