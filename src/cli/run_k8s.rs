//! `nrl run` on Kubernetes: the ephemeral RayJob (default), the long-lived RayCluster run
//! (`--raycluster`) and `--dry-run`. Parsing and printing only; the work is in
//! `crate::launch`.

use super::common::{block_on, cancel_on_signals};
use super::run::{RunArgs, run_context, write_stdout};
use crate::config::layers::LoadedConfig;
use crate::diag::{Exit, Result};
use crate::launch::checks::{DoctorGate, LaunchChecks, offline_findings_before_connecting};
use crate::launch::output::Console;
use crate::launch::raycluster;
use crate::launch::raycluster::run::LongLivedOptions;
use crate::launch::raycluster::submit::ModeFlags;
use crate::launch::rayjob::run::launch_rayjob;
use crate::launch::rayjob::{self, DEFAULT_TTL_SECONDS, RayJobRunOptions};
use crate::render::emit;
use crate::run_id::RunId;

/// `--code-source` / `--code-path` replace the infra's values (the baseline).
fn apply_code_flags(args: &RunArgs, cfg: &mut LoadedConfig) {
    if let Some(cs) = args.code_source {
        cfg.infra.launch.code_source = cs;
    }
    if let Some(p) = &args.code_path {
        cfg.infra.launch.code_path = Some(p.clone());
    }
}

fn rayjob_options(args: &RunArgs, run_id: RunId) -> RayJobRunOptions {
    let shutdown = !args.no_shutdown;
    let mut opts = RayJobRunOptions::new(run_id);
    opts.name = args.rayjob_name.clone();
    opts.shutdown = shutdown;
    // KubeRay refuses a TTL without shutdown, so its default follows the choice.
    opts.ttl_seconds = args
        .ttl
        .unwrap_or(if shutdown { DEFAULT_TTL_SECONDS } else { 0 });
    opts.wait = !args.no_wait;
    opts.timeout = args.timeout;
    opts.replace = args.replace;
    opts.force = args.force;
    opts.validate = !args.no_validate;
    if let Some(root) = &args.repo_root {
        opts.repo_root = root.clone();
    }
    opts
}

/// `--dry-run`: the RayJob (and its DRA objects) exactly as `nrl run` would apply them.
pub fn dry_run(args: &RunArgs, mut cfg: LoadedConfig) -> Result<Exit> {
    apply_code_flags(args, &mut cfg);
    let run_id = match args.run_id.as_deref() {
        Some(id) => RunId::parse(id)?,
        None => RunId::generate(&args.recipe.recipe),
    };
    let opts = rayjob_options(args, run_id);
    let (manifest, dra) = rayjob::manifests(&cfg, &opts, opts.validate)?;
    let mut docs = dra;
    docs.push(manifest);
    let text = format!("{}\n", emit::to_yaml_stream(&docs).trim_end());
    write_stdout(&text)
}

/// The doctor gate (unless `--skip-doctor`) and the checklist (`--verify`).
fn checks(args: &RunArgs) -> LaunchChecks {
    let doctor = (!args.skip_doctor).then(|| {
        let (color, width) = super::doctor::style(true);
        DoctorGate {
            options: crate::doctor::Options {
                code_source: args.code_source,
                repo_root: args.repo_root.clone(),
                rayjob: !args.raycluster,
            },
            color,
            width,
        }
    });
    LaunchChecks {
        doctor,
        verify: args.verify,
    }
}

/// The Kubernetes launch.
pub fn run(args: &RunArgs, mut cfg: LoadedConfig) -> Result<Exit> {
    apply_code_flags(args, &mut cfg);
    if args.raycluster {
        return run_longlived(args, cfg);
    }
    let ctx = run_context(args)?;
    let opts = rayjob_options(args, ctx.run_id.clone());
    // Everything is validated before the first cluster call.
    let plan = rayjob::plan(&cfg, &opts)?;
    let checks = checks(args);
    block_on(async move {
        let cancel = cancel_on_signals()?;
        let k8s = match args.kube.connect(Some(&cfg.infra.namespace)).await {
            Ok(k) => k,
            Err(e) => {
                let launch = plan.manifests_as_nodes();
                offline_findings_before_connecting(&cfg, &launch, &checks);
                return Err(e);
            }
        };
        let mut console = Console::new();
        launch_rayjob(&k8s, &cfg, ctx, plan, opts, &checks, &mut console, &cancel).await
    })
}

fn run_longlived(args: &RunArgs, cfg: LoadedConfig) -> Result<Exit> {
    let ctx = run_context(args)?;
    let flags = ModeFlags {
        mode: args.mode,
        submitter: args.submitter,
        code_source: args.code_source,
        code_path: args.code_path.clone(),
        wait: match (args.wait, args.no_wait) {
            (true, _) => Some(true),
            (_, true) => Some(false),
            _ => None,
        },
    };
    let opts = LongLivedOptions {
        replace: args.replace,
        force: args.force,
        recreate: args.recreate,
        skip_daemons: args.skip_daemons,
        timeout: args.timeout,
        flags,
        validate: !args.no_validate,
    };
    let plan = raycluster::run::plan(&cfg, &ctx, &opts)?;
    let checks = checks(args);
    block_on(async move {
        let cancel = cancel_on_signals()?;
        let k8s = args.kube.connect(Some(&cfg.infra.namespace)).await?;
        let mut console = Console::new();
        raycluster::run::launch(
            &k8s,
            &cfg,
            &ctx,
            &plan,
            &opts,
            &checks,
            &mut console,
            &cancel,
        )
        .await
    })
}
