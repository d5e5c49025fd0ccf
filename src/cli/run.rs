//! `nrl run`: run a recipe + infra pair — as a local process, on a Ray dashboard, or
//! (with `--dry-run`) show the RayJob it becomes on Kubernetes.

use std::path::{Path, PathBuf};

use clap::Args;

use super::common::RecipeArgs;
use crate::config::env::ProcessEnv;
use crate::config::layers::load;
use crate::diag::{Diag, Exit, Result};
use crate::launch::check::validate_manifests;
use crate::launch::process::Interrupts;
use crate::launch::ray_run::{self, RayEnded};
use crate::launch::rayjob::rayjob_manifest;
use crate::launch::records::RunStore;
use crate::launch::run::{RunContext, resolve_run_id};
use crate::launch::{local, runid};
use crate::ray::package::mib;
use crate::ray::{RayClient, RayClientOptions};
use crate::render::emit;
use crate::render::rayjob::RayJobOptions;

const DEFAULT_TTL: i64 = 3600;

/// Run a recipe + infra pair: as a local process (`--local`), on a Ray dashboard
/// (`--ray-address`), or print the RayJob it becomes on Kubernetes (`--dry-run`).
///
/// The run is staged the same way everywhere: the upload paths (`launch.rayUploadPaths`)
/// at the root of the run's directory, the resolved recipe (overrides applied) beside
/// them as `nrl_run.yaml`, `--config X.yaml` in the entrypoint pointed at it, and
/// `launch.env`, `NRL_RUN_ID` and `NRL_K8S_RUN_ID` exported.
#[derive(Debug, Args)]
#[command(after_help = "\
Runs and their records live in ~/.cache/nrl/runs/ ($XDG_CACHE_HOME/nrl/runs/): <id>.json
and the run directory <id>/ (staged files, driver.log).

Exit codes: 0 the run succeeded, 1 it failed, 2 bad input, 3 Ray API error, 130 Ctrl-C
(--local stops the run; --ray-address detaches and the job keeps running).

Examples:
  nrl run examples/quickstart/recipe.yaml --infra examples/quickstart/infra.yaml --local
  nrl run recipe.yaml --infra infra.yaml --local grpo.max_num_steps=2 infra.launch.env.WANDB_MODE=offline
  nrl run recipe.yaml --infra infra.yaml --ray-address http://127.0.0.1:8265
  nrl run recipe.yaml --infra infra.yaml --dry-run --rayjob-name my-job --ttl 600
  nrl run recipe.yaml --infra infra.yaml --local --run-id grpo-try-3 --repo-root ~/nemo-rl")]
pub struct RunArgs {
    #[command(flatten)]
    pub recipe: RecipeArgs,
    /// Run the entrypoint here, as a local process in the run directory; its output is
    /// streamed and kept in driver.log. Ctrl-C stops it and everything it started.
    #[arg(long, conflicts_with_all = ["ray_address", "dry_run"])]
    pub local: bool,
    /// Submit to the Ray dashboard at URL (e.g. http://127.0.0.1:8265) and follow the
    /// job to its end. RAY_ADDRESS is not read: the flag chooses this mode.
    #[arg(long, value_name = "URL", conflicts_with = "dry_run")]
    pub ray_address: Option<String>,
    /// Token for a Ray dashboard with token auth (sent as `Authorization: Bearer`).
    #[arg(
        long,
        env = "RAY_AUTH_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub ray_token: Option<String>,
    /// Run id: lower-case letters, digits and `-`, at most 40 characters (default:
    /// `<recipe name>-<UTC yyyymmdd-hhmmss>-<4 random>`, e.g. recipe-20260304-050607-k3x9).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Directory the upload paths are relative to (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "dry_run")]
    pub repo_root: Option<PathBuf>,
    /// Print the RayJob `nrl run` would apply on Kubernetes (validated against the
    /// bundled schemas) and exit; nothing is contacted.
    #[arg(long)]
    pub dry_run: bool,
    /// RayJob name (default: the training cluster's name).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["local", "ray_address"])]
    pub rayjob_name: Option<String>,
    /// Tear the RayJob's RayCluster down when the job finishes (the default).
    #[arg(long, overrides_with = "no_shutdown", conflicts_with_all = ["local", "ray_address"])]
    pub shutdown: bool,
    /// Keep the RayJob's RayCluster after the job finishes.
    #[arg(long, overrides_with = "shutdown", conflicts_with_all = ["local", "ray_address"])]
    pub no_shutdown: bool,
    /// RayJob `ttlSecondsAfterFinished` (default 3600). With shutdown on, KubeRay waits
    /// this long after the job finishes before deleting the RayCluster (time to read
    /// logs on it); it does not keep or delete the RayJob object itself.
    #[arg(
        long,
        value_name = "SECONDS",
        value_parser = clap::value_parser!(i64).range(0..),
        conflicts_with_all = ["local", "ray_address"]
    )]
    pub ttl: Option<i64>,
    /// Skip validation of the RayJob against the bundled schemas.
    #[arg(long, conflicts_with_all = ["local", "ray_address"])]
    pub no_validate: bool,
}

pub fn run(args: RunArgs) -> Result<Exit> {
    if !args.local && args.ray_address.is_none() && !args.dry_run {
        return Err(kubernetes_launch_pending());
    }
    let cfg = load(&args.recipe.load_request())?;
    if args.dry_run {
        let run_id = match args.run_id.as_deref() {
            Some(id) => runid::validate(id).map(|_| id.to_string())?,
            None => runid::generate(&args.recipe.recipe),
        };
        let opts = RayJobOptions {
            name: args.rayjob_name.clone(),
            shutdown_after_finishes: !args.no_shutdown,
            ttl_seconds_after_finished: args.ttl.unwrap_or(DEFAULT_TTL),
            ..RayJobOptions::default()
        };
        let manifest = rayjob_manifest(&cfg, &run_id, &opts)?;
        if !args.no_validate {
            validate_manifests(std::slice::from_ref(&manifest))?;
        }
        let text = format!("{}\n", emit::to_yaml(&manifest).trim_end());
        return write_stdout(&text);
    }

    let store = RunStore::from_env(&ProcessEnv)?;
    let ctx = RunContext {
        run_id: resolve_run_id(args.run_id.as_deref(), &args.recipe.recipe, &store)?,
        store,
        repo_root: args.repo_root.clone().unwrap_or_else(|| PathBuf::from(".")),
        infra: args.recipe.infra.clone(),
        overrides: args.recipe.overrides.clone(),
    };
    match &args.ray_address {
        Some(address) => run_on_ray(&cfg, ctx, address, args.ray_token.clone()),
        None => run_local(&cfg, ctx),
    }
}

/// Until the Kubernetes launch lands, only the three working modes are offered.
fn kubernetes_launch_pending() -> Diag {
    Diag::new(
        "nrl::run::mode",
        "launching on Kubernetes from `nrl run` is not available yet",
    )
    .help(
        "choose a mode: --local (run here), --ray-address URL (a Ray dashboard), \
         or --dry-run (print the RayJob)",
    )
}

fn run_local(cfg: &crate::config::layers::LoadedConfig, ctx: RunContext) -> Result<Exit> {
    let run = local::prepare(cfg, ctx)?;
    warn_all(&run.staged.warnings);
    let id = run.ctx.run_id.clone();
    eprintln!("run id:  {id}");
    eprintln!("run dir: {}", run.ctx.run_dir().display());
    eprintln!("log:     {}", run.log_path().display());
    eprintln!("record:  {}", run.ctx.record_path().display());
    runtime()?.block_on(async move {
        let mut interrupts = Interrupts::from_signals()?;
        let outcome = run
            .execute(
                &mut tokio::io::stdout(),
                &mut tokio::io::stderr(),
                &mut interrupts,
            )
            .await?;
        match outcome.ended {
            crate::launch::process::Ended::Exited(0) => eprintln!("run {id} succeeded"),
            crate::launch::process::Ended::Interrupted(_) => {
                eprintln!("\ninterrupted: run {id} stopped (its processes were ended)")
            }
            _ => {}
        }
        outcome.into_exit()
    })
}

fn run_on_ray(
    cfg: &crate::config::layers::LoadedConfig,
    ctx: RunContext,
    address: &str,
    token: Option<String>,
) -> Result<Exit> {
    let client = RayClient::new(
        address,
        RayClientOptions {
            token,
            ..RayClientOptions::default()
        },
    )?;
    let mut run = ray_run::prepare(cfg, ctx, client)?;
    warn_all(&run.staged.warnings);
    let id = run.ctx.run_id.clone();
    let address = run.client.address().to_string();
    runtime()?.block_on(async move {
        let mut interrupts = Interrupts::from_signals()?;
        eprintln!("submitting run {id} to {address}");
        let submitted = tokio::select! {
            submitted = run.submit() => submitted?,
            _ = interrupts.recv() => {
                eprintln!("\ninterrupted while submitting; the job may have been submitted");
                eprintln!("check:   nrl job status {id} --address {address}");
                return Ok(Exit::Interrupted);
            }
        };
        if let Some(pkg) = &submitted.package {
            let how = if pkg.uploaded {
                "uploaded"
            } else {
                "already on the cluster"
            };
            eprintln!(
                "working_dir: {} files, {} ({how}) as {}",
                pkg.files,
                mib(pkg.content_bytes),
                pkg.uri
            );
        }
        eprint!(
            "{}",
            ray_followups(&id, &address, &run.ctx.record_path(), &run.log_path())
        );
        let ended = run.follow(&mut std::io::stdout(), &mut interrupts).await?;
        match &ended {
            RayEnded::Detached => {
                eprintln!("\ninterrupted: stopped following run {id}; the job keeps running.");
                eprintln!("re-attach: nrl job logs {id} --address {address} -f");
                eprintln!("stop it:   nrl job stop {id} --address {address}");
            }
            RayEnded::Finished(job) if job.status == crate::ray::JobStatus::Succeeded => {
                eprintln!("run {id} SUCCEEDED")
            }
            RayEnded::Finished(_) => {}
        }
        ended.into_exit(&id, &address)
    })
}

/// What to type next for a run on a Ray dashboard.
pub fn ray_followups(id: &str, address: &str, record: &Path, log: &Path) -> String {
    format!(
        "run id:  {id}\n\
         follow:  nrl job logs {id} --address {address} -f\n\
         status:  nrl job status {id} --address {address}\n\
         stop:    nrl job stop {id} --address {address}\n\
         record:  {}\n\
         log:     {} (a local copy, written while following)\n",
        record.display(),
        log.display()
    )
}

/// Print to stdout; a reader that went away (`| head`) is not an error.
fn write_stdout(text: &str) -> Result<Exit> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Diag::from(e)),
        _ => Ok(Exit::Ok),
    }
}

fn warn_all(warnings: &[String]) {
    for w in warnings {
        eprintln!("warning: {w}");
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            Diag::new(
                "nrl::runtime",
                format!("cannot start the async runtime: {e}"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> std::result::Result<RunArgs, clap::Error> {
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            run: RunArgs,
        }
        let mut all = vec!["nrl", "r.yaml"];
        all.extend_from_slice(args);
        Wrap::try_parse_from(all).map(|w| w.run)
    }

    #[test]
    fn modes_exclude_each_other_and_rayjob_flags_need_rayjob_mode() {
        assert!(parse(&["--local"]).is_ok());
        assert!(parse(&["--local", "--ray-address", "http://h"]).is_err());
        assert!(parse(&["--local", "--dry-run"]).is_err());
        assert!(parse(&["--ray-address", "h", "--dry-run"]).is_err());
        assert!(parse(&["--local", "--ttl", "5"]).is_err());
        assert!(parse(&["--ray-address", "h", "--rayjob-name", "x"]).is_err());
        assert!(parse(&["--dry-run", "--repo-root", "."]).is_err());
        assert!(parse(&["--dry-run", "--ttl", "-1"]).is_err());
        let a = parse(&["--dry-run", "--no-shutdown", "--ttl", "60", "a.b=1"]).unwrap();
        assert!(a.no_shutdown && a.ttl == Some(60));
        assert_eq!(a.recipe.overrides, ["a.b=1"]);
        let a = parse(&["--dry-run", "--no-shutdown", "--shutdown"]).unwrap();
        assert!(!a.no_shutdown, "the last of the pair wins");
    }

    #[test]
    fn without_a_mode_the_error_lists_the_three_that_work() {
        let err = run(parse(&[]).unwrap()).unwrap_err();
        assert_eq!(err.code, "nrl::run::mode");
        assert_eq!(err.exit, Exit::Input);
        let help = err.help.clone().unwrap();
        for mode in ["--local", "--ray-address", "--dry-run"] {
            assert!(help.contains(mode), "{help}");
        }
    }

    #[test]
    fn ray_followups_name_the_commands() {
        let text = ray_followups(
            "r-1",
            "http://127.0.0.1:8265",
            Path::new("/c/r-1.json"),
            Path::new("/c/r-1/driver.log"),
        );
        assert!(text.contains("nrl job logs r-1 --address http://127.0.0.1:8265 -f\n"));
        assert!(text.contains("nrl job stop r-1 --address http://127.0.0.1:8265\n"));
        assert!(text.contains("/c/r-1.json"));
    }
}
