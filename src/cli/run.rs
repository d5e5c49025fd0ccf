//! `nrl run`: run a recipe + infra pair — on Kubernetes (an ephemeral RayJob, or a
//! long-lived RayCluster with `--raycluster`), as a local process, or on a Ray dashboard;
//! `--dry-run` shows the RayJob. The Kubernetes paths are in `run_k8s.rs`.

use std::path::{Path, PathBuf};

use clap::Args;

use super::common::RecipeArgs;
use crate::config::env::ProcessEnv;
use crate::config::layers::LoadedConfig;
use crate::config::schema::{CodeSource, RunMode, StrEnum, SubmitterMode};
use crate::diag::{Diag, Exit, Result};
use crate::launch::local;
use crate::launch::local::process::Interrupts;
use crate::launch::ray_run::{self, RayEnded};
use crate::launch::records::RunStore;
use crate::launch::records::context::{RunContext, resolve_run_id};
use crate::launch::records::snapshot::{self, Relaunch};
use crate::ray::package::mib;
use crate::ray::{RayClient, RayClientOptions};

/// Run a recipe + infra pair: on Kubernetes as an ephemeral RayJob (the default) or on
/// long-lived RayClusters (`--raycluster`), as a local process (`--local`), on a Ray
/// dashboard (`--ray-address`), or print the RayJob (`--dry-run`).
///
/// The run is staged the same way everywhere: the upload paths (`launch.rayUploadPaths`)
/// at the root of the run's directory, the resolved recipe (overrides applied) beside
/// them as `nrl_run.yaml`, `--config X.yaml` in the entrypoint pointed at it, and
/// `launch.env`, `NRL_RUN_ID` and `NRL_K8S_RUN_ID` exported.
#[derive(Debug, Args)]
#[command(after_help = "\
Runs and their records live in ~/.cache/nrl/runs/ ($XDG_CACHE_HOME/nrl/runs/): <id>.json
and the run directory <id>/ (staged files, driver.log).

On Kubernetes the record is also kept in the namespace (ConfigMap nrl-run-<id>), so
`nrl job logs|stop <id>` and `nrl verify <id>` work from another machine.

Exit codes: 0 the run succeeded (or was submitted with --no-wait), 1 it failed (Ray job
FAILED or STOPPED, the RayJob failed, --timeout passed), 2 bad input, 3 cluster or Ray
API error, 130 Ctrl-C (--local stops the run; otherwise nrl detaches and the job keeps
running; a RayJob whose job was not submitted yet is deleted).

Examples:
  nrl run examples/quickstart/recipe.yaml --infra examples/quickstart/infra.yaml
  nrl run recipe.yaml --infra infra.yaml --ttl 0 --verify grpo.max_num_steps=2
  nrl run recipe.yaml --infra infra.yaml --no-wait --rayjob-name grpo-try-3 --replace
  nrl run recipe.yaml --infra infra.yaml --code-source image --code-path /opt/nemo-rl
  nrl run recipe.yaml --infra infra.yaml --raycluster
  nrl run recipe.yaml --infra infra.yaml --raycluster --mode batch --code-path /opt/nemo-rl
  nrl run recipe.yaml --infra infra.yaml --raycluster --replace --skip-daemons
  nrl run examples/quickstart/recipe.yaml --infra examples/quickstart/infra.yaml --local
  nrl run recipe.yaml --infra infra.yaml --local infra.launch.env.WANDB_MODE=offline
  nrl run recipe.yaml --infra infra.yaml --ray-address http://127.0.0.1:8265
  nrl run recipe.yaml --infra infra.yaml --dry-run --rayjob-name my-job --ttl 600
  nrl run recipe.yaml --infra infra.yaml --local --run-id grpo-try-3 --repo-root ~/nemo-rl
  nrl run --from grpo-try-3 --context prod -n rl-team
  nrl run --from grpo-try-3 --local grpo.max_num_steps=5")]
pub struct RunArgs {
    /// The NeMo-RL recipe YAML (its `defaults:` chain is followed). With --from, a first
    /// override instead.
    #[arg(value_name = "RECIPE", required_unless_present = "from",
          add = super::completions::run_recipe())]
    pub recipe_file: Option<PathBuf>,
    /// Infra YAML; alternatively the recipe may carry an `infra:` block (not both).
    #[arg(long, value_name = "FILE", conflicts_with = "from")]
    pub infra: Option<PathBuf>,
    /// Hydra-style overrides: `a.b=v`, `+a.b=v`, `++a.b=v`, `~a.b`; `infra.*` keys go to
    /// the infra layer.
    #[arg(value_name = "OVERRIDES", add = super::completions::overrides())]
    pub overrides: Vec<String>,
    /// Launch again what run RUN_ID was launched with: its merged recipe and infra (from
    /// the launch snapshot in its run directory) and its code, checked by content hash
    /// (a local run's staged tree, else the checkout it was staged from). Overrides and
    /// the mode flags apply on top: `--from SMOKE_ID` without --local makes a local smoke
    /// test a RayJob.
    #[arg(long, value_name = "RUN_ID", add = super::completions::run_ids())]
    pub from: Option<String>,
    /// The recipe, infra and overrides to load (from the arguments above, or --from's
    /// snapshot); set by [`RunArgs::resolve_recipe`].
    #[arg(skip)]
    pub recipe: RecipeArgs,
    /// The run --from relaunches.
    #[arg(skip)]
    pub relaunch: Option<Box<Relaunch>>,
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
    /// RayJob name (default: the training cluster's name; at most 47 characters).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["local", "ray_address", "raycluster"])]
    pub rayjob_name: Option<String>,
    /// Tear the RayJob's RayCluster down when the job finishes (the default).
    #[arg(long, overrides_with = "no_shutdown", conflicts_with_all = ["local", "ray_address", "raycluster"])]
    pub shutdown: bool,
    /// Keep the RayJob's RayCluster after the job finishes (delete the RayJob to free it).
    #[arg(long, overrides_with = "shutdown", conflicts_with_all = ["local", "ray_address", "raycluster"])]
    pub no_shutdown: bool,
    /// RayJob `ttlSecondsAfterFinished` (default 3600 with shutdown, 0 without). KubeRay
    /// waits this long after the job ends before it deletes the RayCluster, so the
    /// cluster's resources (GPUs) stay allocated meanwhile; it does not keep or delete
    /// the RayJob object, which stays until deleted (`--replace` deletes it). nrl waits
    /// for the deletion when the TTL is at most 300 s.
    #[arg(
        long,
        value_name = "SECONDS",
        value_parser = clap::value_parser!(i64).range(0..),
        conflicts_with_all = ["local", "ray_address", "raycluster"]
    )]
    pub ttl: Option<i64>,
    /// Skip the offline validation of the rendered objects (bundled schemas, names) before
    /// they are printed (--dry-run) or applied; the API server still checks them.
    #[arg(long, conflicts_with_all = ["local", "ray_address"])]
    pub no_validate: bool,
    /// Long-lived mode: for each role (generation, gym, training) ensure its RayCluster
    /// (reused when it matches), submit its daemon, then submit training to the training
    /// cluster. The default is an ephemeral RayJob.
    #[arg(long, overrides_with = "rayjob", conflicts_with_all = ["local", "ray_address", "dry_run"])]
    pub raycluster: bool,
    /// Ephemeral mode (the default): one RayJob with its own RayCluster.
    #[arg(long, overrides_with = "raycluster")]
    pub rayjob: bool,
    /// Wait for the end, streaming the driver log (the default, except --mode batch).
    #[arg(long, overrides_with = "no_wait", conflicts_with_all = ["local", "ray_address", "dry_run"])]
    pub wait: bool,
    /// Return once the job is submitted, printing the commands to follow and stop it.
    #[arg(long, overrides_with = "wait", conflicts_with_all = ["local", "ray_address", "dry_run"])]
    pub no_wait: bool,
    /// How long to wait for the run to end (e.g. 30m, 12h; default 24h). The run keeps
    /// going after it; exit code 1.
    #[arg(long, value_name = "DURATION", default_value = "24h", value_parser = super::value_parsers::parse_duration)]
    pub timeout: std::time::Duration,
    /// RayJob: delete an earlier RayJob of the same name (and its cluster) first.
    /// --raycluster: stop the running and pending jobs first, then reset the endpoint
    /// registry ConfigMap; daemons get a fresh `<id>-<timestamp>` submission id.
    #[arg(long, conflicts_with_all = ["local", "ray_address", "dry_run"])]
    pub replace: bool,
    /// Act on existing objects labelled `nrl-k8s/owner` with another user's name, or with
    /// no such label at all (made by kubectl or another tool): the RayJob --replace
    /// deletes, the RayClusters a --raycluster run replaces or updates. Refused otherwise.
    #[arg(long, conflicts_with_all = ["local", "ray_address", "dry_run"])]
    pub force: bool,
    /// --raycluster: delete and re-create a RayCluster whose spec drifted.
    #[arg(long, requires = "raycluster")]
    pub recreate: bool,
    /// --raycluster: do not submit the daemons of the generation and gym roles.
    #[arg(long, requires = "raycluster")]
    pub skip_daemons: bool,
    /// --raycluster: interactive (portForward + upload + wait) or batch (exec + image +
    /// no wait); flags and the infra's submit.submitter / launch.codeSource refine it.
    #[arg(long, value_name = "MODE", value_parser = parse_enum::<RunMode>, requires = "raycluster")]
    pub mode: Option<RunMode>,
    /// --raycluster: how training reaches the head: portForward (Ray Job API) or exec.
    #[arg(long, value_name = "SUBMITTER", value_parser = parse_enum::<SubmitterMode>, requires = "raycluster")]
    pub submitter: Option<SubmitterMode>,
    /// Where the code comes from: upload (working_dir from the upload paths), image (in
    /// the image at --code-path) or lustre (mounted at --code-path). Default:
    /// infra.launch.codeSource. For a RayJob, upload means nrl uploads and submits once
    /// the cluster is up (KubeRay InteractiveMode); image/lustre let KubeRay submit.
    #[arg(long, value_name = "SOURCE", value_parser = parse_enum::<CodeSource>, conflicts_with_all = ["local", "ray_address"])]
    pub code_source: Option<CodeSource>,
    /// Where the code is on the pods (image/lustre); the entrypoint starts there.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["local", "ray_address"])]
    pub code_path: Option<String>,
    /// After the run (or the submit, with --no-wait), run the launch checklist (exit 1
    /// when a point fails); see `nrl verify`.
    #[arg(long, conflicts_with_all = ["local", "ray_address", "dry_run"])]
    pub verify: bool,
    /// Launch even when `nrl doctor` (offline rules + read-only preflight, run before
    /// anything is applied) finds errors.
    #[arg(long)]
    pub skip_doctor: bool,
    #[command(flatten)]
    pub kube: super::common::KubeArgs,
}

/// A schema enum from its exact YAML spelling.
fn parse_enum<T: StrEnum + Send + Sync>(text: &str) -> std::result::Result<T, String> {
    T::parse(text).ok_or_else(|| format!("expected one of: {}", T::VALUES.join(", ")))
}

impl RunArgs {
    /// Fill [`RunArgs::recipe`]: the arguments as given, or with --from the recorded run's
    /// snapshot (the positional RECIPE is then the first override) and, unless
    /// --repo-root is given, the run's code.
    pub fn resolve_recipe(&mut self) -> Result<()> {
        let Some(id) = &self.from else {
            self.recipe = RecipeArgs {
                recipe: self.recipe_file.clone().unwrap_or_default(),
                infra: self.infra.clone(),
                overrides: self.overrides.clone(),
            };
            return Ok(());
        };
        let store = RunStore::from_env(&ProcessEnv)?;
        let relaunch = snapshot::relaunch(&store, id)?;
        let mut overrides: Vec<String> = self
            .recipe_file
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        overrides.extend(self.overrides.iter().cloned());
        self.recipe = RecipeArgs {
            recipe: relaunch.recipe.clone(),
            infra: Some(relaunch.infra.clone()),
            overrides,
        };
        if self.repo_root.is_none() {
            self.repo_root = relaunch.repo_root.clone();
        }
        self.relaunch = Some(Box::new(relaunch));
        Ok(())
    }

    /// --from: the code this launch uploads must be the recorded run's. A RayJob or
    /// RayCluster run uploads only with `codeSource: upload`.
    fn verify_relaunched_code(&self, cfg: &LoadedConfig) -> Result<()> {
        let Some(relaunch) = &self.relaunch else {
            return Ok(());
        };
        let on_kubernetes = !self.local && self.ray_address.is_none();
        let source = self.code_source.unwrap_or(cfg.infra.launch.code_source);
        if self.dry_run || (on_kubernetes && source != CodeSource::Upload) {
            return Ok(());
        }
        let root = self.repo_root.clone().unwrap_or_else(|| PathBuf::from("."));
        relaunch.verify_code(cfg, &root)?;
        crate::errln!(
            "relaunching run {}: recipe and infra from its launch snapshot, code from {}",
            relaunch.from,
            root.display()
        );
        Ok(())
    }
}

pub fn run(mut args: RunArgs) -> Result<Exit> {
    args.resolve_recipe()?;
    let cfg = args.kube.load(&args.recipe)?;
    args.verify_relaunched_code(&cfg)?;
    if args.dry_run {
        return super::run_k8s::dry_run(&args, cfg);
    }
    if !args.local && args.ray_address.is_none() {
        return super::run_k8s::run(&args, cfg);
    }
    let ctx = run_context(&args)?;
    match &args.ray_address {
        Some(address) => run_on_ray(&cfg, ctx, address, args.ray_token.clone()),
        None => run_local(&cfg, ctx),
    }
}

/// Run id, store and paths of a new run.
pub fn run_context(args: &RunArgs) -> Result<RunContext> {
    let store = RunStore::from_env(&ProcessEnv)?;
    Ok(RunContext {
        run_id: resolve_run_id(args.run_id.as_deref(), &args.recipe.recipe, &store)?,
        store,
        repo_root: args.repo_root.clone().unwrap_or_else(|| PathBuf::from(".")),
        infra: args.recipe.infra.clone(),
        overrides: args.recipe.overrides.clone(),
    })
}

fn run_local(cfg: &crate::config::layers::LoadedConfig, ctx: RunContext) -> Result<Exit> {
    let run = local::prepare(cfg, ctx)?;
    warn_all(&run.staged.warnings);
    let id = run.ctx.run_id.clone();
    crate::errln!("run id:  {id}");
    crate::errln!("run dir: {}", run.ctx.run_dir().display());
    crate::errln!("log:     {}", run.log_path().display());
    crate::errln!("record:  {}", run.ctx.record_path().display());
    super::common::block_on(async move {
        let mut interrupts = Interrupts::from_signals()?;
        let outcome = run
            .execute(
                &mut tokio::io::stdout(),
                &mut tokio::io::stderr(),
                &mut interrupts,
            )
            .await?;
        match outcome.ended {
            crate::launch::local::process::Ended::Exited(0) => crate::errln!("run {id} succeeded"),
            crate::launch::local::process::Ended::Interrupted(_) => {
                crate::errln!(
                    "\ninterrupted: run {id} stopped ({})",
                    outcome.processes_note()
                )
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
    super::common::block_on(async move {
        let mut interrupts = Interrupts::from_signals()?;
        crate::errln!("submitting run {id} to {address}");
        let submitted = tokio::select! {
            submitted = run.submit() => submitted?,
            _ = interrupts.recv() => {
                crate::errln!("\ninterrupted while submitting; the job may have been submitted");
                crate::errln!("check:   nrl job status {id} --address {address}");
                return Ok(Exit::Interrupted);
            }
        };
        if let Some(pkg) = &submitted.package {
            let how = if pkg.uploaded {
                "uploaded"
            } else {
                "already on the cluster"
            };
            crate::errln!(
                "working_dir: {} files, {} ({how}) as {}",
                pkg.files,
                mib(pkg.content_bytes),
                pkg.uri
            );
        }
        crate::err!(
            "{}",
            ray_followups(&id, &address, &run.ctx.record_path(), &run.log_path())
        );
        let ended = run.follow(&mut std::io::stdout(), &mut interrupts).await?;
        match &ended {
            RayEnded::Detached => {
                crate::errln!("\ninterrupted: stopped following run {id}; the job keeps running.");
                crate::errln!("re-attach: nrl job logs {id} --address {address} -f");
                crate::errln!("stop it:   nrl job stop {id} --address {address}");
            }
            RayEnded::Finished(job) if job.status == crate::ray::JobStatus::Succeeded => {
                crate::errln!("run {id} SUCCEEDED")
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
pub(super) fn write_stdout(text: &str) -> Result<Exit> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Diag::from(e)),
        _ => Ok(Exit::Ok),
    }
}

pub(super) fn warn_all(warnings: &[String]) {
    for w in warnings {
        crate::errln!("warning: {w}");
    }
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
        Wrap::try_parse_from(all).map(|w| {
            let mut run = w.run;
            run.resolve_recipe().unwrap();
            run
        })
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
    fn kubernetes_flags_belong_to_their_mode() {
        let a = parse(&[]).unwrap();
        assert!(!a.raycluster && !a.local && a.ray_address.is_none());
        assert_eq!(a.timeout, std::time::Duration::from_secs(86400));
        // Long-lived flags need --raycluster; RayJob flags refuse it.
        for f in [
            &["--recreate"][..],
            &["--skip-daemons"],
            &["--mode", "batch"],
            &["--submitter", "exec"],
        ] {
            assert!(parse(f).is_err(), "{f:?} without --raycluster");
            let mut with = vec!["--raycluster"];
            with.extend_from_slice(f);
            assert!(parse(&with).is_ok(), "{with:?}");
        }
        for f in [
            &["--ttl", "5"][..],
            &["--rayjob-name", "x"],
            &["--no-shutdown"],
        ] {
            let mut with = vec!["--raycluster"];
            with.extend_from_slice(f);
            assert!(parse(&with).is_err(), "{with:?}");
        }
        assert!(parse(&["--raycluster", "--dry-run"]).is_err());
        assert!(parse(&["--local", "--verify"]).is_err());
        assert!(parse(&["--mode", "sometimes", "--raycluster"]).is_err());
        let a = parse(&["--raycluster", "--rayjob"]).unwrap();
        assert!(!a.raycluster, "the last of the pair wins");
        let a = parse(&[
            "--raycluster",
            "--submitter",
            "portForward",
            "--code-source",
            "lustre",
            "--code-path",
            "/l",
            "--no-wait",
            "--timeout",
            "90m",
        ])
        .unwrap();
        assert_eq!(a.submitter, Some(SubmitterMode::PortForward));
        assert_eq!(a.code_source, Some(CodeSource::Lustre));
        assert!(a.no_wait && a.timeout == std::time::Duration::from_secs(5400));
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
