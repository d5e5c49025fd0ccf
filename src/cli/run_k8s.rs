//! `nrl run` on Kubernetes: the ephemeral RayJob (default), the long-lived RayCluster run
//! (`--raycluster`) and `--dry-run`. Parsing and printing only; the work is in
//! `crate::launch`.

use super::common::{block_on, cancel_on_signals};
use super::run::{RunArgs, run_context, write_stdout};
use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::diag::{Exit, Result};
use crate::k8s::K8s;
use crate::launch::output::{Console, Output};
use crate::launch::raycluster::run::{self as longlived, LongLivedOptions};
use crate::launch::raycluster::submit::ModeFlags;
use crate::launch::rayjob::run::rayjob_run;
use crate::launch::rayjob::{self, DEFAULT_TTL_SECONDS, RayJobRunOptions, RunEnd, Teardown};
use crate::launch::records::runid;
use crate::launch::verify::verify;
use crate::render::emit;

/// `--code-source` / `--code-path` replace the infra's values (the baseline).
fn apply_code_flags(args: &RunArgs, cfg: &mut LoadedConfig) {
    if let Some(cs) = args.code_source {
        cfg.infra.launch.code_source = cs;
    }
    if let Some(p) = &args.code_path {
        cfg.infra.launch.code_path = Some(p.clone());
    }
}

fn rayjob_options(args: &RunArgs, run_id: String) -> RayJobRunOptions {
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
        Some(id) => runid::validate(id).map(|_| id.to_string())?,
        None => runid::generate(&args.recipe.recipe),
    };
    let opts = rayjob_options(args, run_id);
    let (manifest, dra) = rayjob::manifests(&cfg, &opts, opts.validate)?;
    let mut docs = dra;
    docs.push(manifest);
    let text = format!("{}\n", emit::to_yaml_stream(&docs).trim_end());
    write_stdout(&text)
}

/// Connect and run the doctor gate (unless `--skip-doctor`) before anything is applied.
/// The launch itself says which context and namespace it acts on.
async fn connect(args: &RunArgs, cfg: &LoadedConfig, launch: &[Node]) -> Result<K8s> {
    let k8s = args.kube.connect(Some(&cfg.infra.namespace)).await?;
    if !args.skip_doctor {
        let mut manifests = crate::render::check_manifests(&cfg.infra)?;
        manifests.extend(launch.iter().cloned());
        let opts = crate::doctor::Options {
            code_source: args.code_source,
            repo_root: args.repo_root.clone(),
            rayjob: !args.raycluster,
        };
        let (color, width) = super::doctor::style(true);
        crate::doctor::gate::gate(&k8s, cfg, &manifests, &opts, color, width).await?;
    }
    Ok(k8s)
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
    block_on(async move {
        let cancel = cancel_on_signals()?;
        let launch: Vec<Node> = std::iter::once(&plan.manifest)
            .chain(&plan.dra)
            .map(Node::from_json)
            .collect();
        let k8s = connect(args, &cfg, &launch).await?;
        let mut console = Console::new();
        let (outcome, record) =
            rayjob_run(&k8s, &cfg, ctx, plan, opts, &mut console, &cancel).await?;
        let id = &outcome.run_id;
        let mut exit = outcome.exit();
        match &outcome.end {
            RunEnd::Submitted => console.status(&format!(
                "run {id} submitted; nrl is not waiting (--no-wait)"
            )),
            RunEnd::Cancelled => {
                console.status(&format!(
                    "\ninterrupted: run {id} was not started; what it had created was removed"
                ));
                return Ok(Exit::Interrupted);
            }
            RunEnd::Detached => {
                console.status(&format!(
                    "\ninterrupted: stopped following run {id}; the job keeps running."
                ));
                console.status(&format!("re-attach: nrl job logs {id} -f"));
                console.status(&format!("stop it:   nrl job stop {id}"));
                return Ok(Exit::Interrupted);
            }
            RunEnd::Finished { teardown, .. } => {
                let status = outcome.job_status().unwrap_or_else(|| "failed".to_string());
                console.status(&format!("run {id} {status}"));
                if *teardown == Teardown::StillPresent {
                    console.status("warning: the RayCluster is still there after its TTL");
                }
            }
        }
        if args.verify {
            let scan = match outcome.end {
                RunEnd::Finished { .. } => Some(outcome.scan.clone()),
                _ => None,
            };
            let report = verify(&k8s, &record, scan).await;
            if let Some(url) = &report.wandb_url {
                console.status(&format!("W&B run: {url}"));
            }
            crate::err!("{report}");
            if !report.ok() && exit == Exit::Ok {
                exit = Exit::Failed;
            }
        }
        Ok(exit)
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
    let plan = longlived::plan(&cfg, &ctx, &opts)?;
    block_on(async move {
        let cancel = cancel_on_signals()?;
        let k8s = connect(args, &cfg, &[]).await?;
        let mut console = Console::new();
        let outcome = longlived::run(&k8s, &cfg, &ctx, &plan, &opts, &mut console, &cancel).await?;
        let id = outcome.record.id.clone();
        let mut exit = outcome.exit();
        if exit == Exit::Interrupted {
            console.status(&format!(
                "\ninterrupted: stopped following run {id}; it keeps running."
            ));
            console.status(&format!("re-attach: nrl job logs {id} -f"));
            console.status(&format!("stop it:   nrl job stop {id}"));
            return Ok(exit);
        }
        if args.verify {
            let report = verify(&k8s, &outcome.record, outcome.scan.clone()).await;
            if let Some(url) = &report.wandb_url {
                console.status(&format!("W&B run: {url}"));
            }
            crate::err!("{report}");
            if !report.ok() && exit == Exit::Ok {
                exit = Exit::Failed;
            }
        }
        Ok(exit)
    })
}
