//! `nrl logs RECIPE … --role R`: a role's daemon job log (through the Ray dashboard), or
//! its head or first worker pod's log (through the API). `nrl logs --collect DIR
//! RUN_ID|RECIPE`: every log of a run or a recipe's roles into DIR (`launch::collect`).

use clap::{Args, ValueEnum};

use std::path::PathBuf;

use super::common::{KubeArgs, RecipeArgs, run_async};
use crate::config::schema::Role;
use crate::diag::{Diag, Exit, Result};
use crate::launch::Progress;
use crate::launch::collect::{CollectOptions, CollectReport, CollectTarget, collect, size};
use crate::launch::logs::{LogSource, RoleLogOptions, role_logs};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Source {
    /// The daemon when the role declares one, else the head pod.
    Auto,
    /// The role's daemon Ray job (the newest `<id>` or `<id>-<ts>`).
    Daemon,
    /// The head pod.
    Head,
    /// The first worker pod.
    Worker,
}

/// Print (or follow) a role's daemon, head or worker log; or, with --collect, gather
/// every log of a run or of a recipe's roles into a directory.
#[derive(Debug, Args)]
#[command(after_help = "\
With --collect DIR, the first argument is a run id (from `nrl run`; its record, on this
machine or in the cluster, says where the run is) unless it is a file or --infra is given,
when it is a recipe: then the RayJob and RayClusters it renders are collected (all roles,
or --role's). DIR gets the driver log, each pod's container logs (current, and previous
for restarted containers), the objects and their events, each Ray node's session logs
(/tmp/ray/session_latest/logs, through the dashboard's log API: no exec needed), and
index.md: which file came from where, and what could not be fetched and why. Each file
keeps at most its last --max-file-mib MiB. --tar writes DIR.tar.gz instead.

Examples:
  nrl logs recipe.yaml --infra infra.yaml --role gym
  nrl logs recipe.yaml --infra infra.yaml --role training --source head -f
  nrl logs recipe.yaml --infra infra.yaml --role generation --source worker --tail 50
  nrl logs --collect ./postmortem grpo-20260101-120000-ab12
  nrl logs --collect ./postmortem --tar grpo-20260101-120000-ab12
  nrl logs --collect ./gen-logs recipe.yaml --infra infra.yaml --role generation")]
pub struct LogsArgs {
    #[command(flatten)]
    pub recipe: RecipeArgs,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// generation, gym or training (with --collect: default all roles).
    #[arg(long, value_name = "ROLE", add = super::completions::roles())]
    pub role: Option<String>,
    /// Gather every log of the run (or the recipe's roles) into DIR (created; must be
    /// empty) with an index.md. The first argument may then be a run id.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["follow", "container", "source"])]
    pub collect: Option<PathBuf>,
    /// With --collect: write one archive, DIR.tar.gz (or DIR when it ends in .tar.gz).
    #[arg(long, requires = "collect")]
    pub tar: bool,
    /// With --collect: keep at most the last N MiB of each file.
    #[arg(long, value_name = "N", default_value_t = 16, requires = "collect")]
    pub max_file_mib: u64,
    /// Which log.
    #[arg(long, value_enum, default_value = "auto")]
    pub source: Source,
    /// Keep streaming (reconnecting if the stream drops) until the pod or job ends.
    #[arg(short, long)]
    pub follow: bool,
    /// Only the last N lines.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub tail: i64,
    /// Container of the pod (default: its default or first container).
    #[arg(long, value_name = "NAME")]
    pub container: Option<String>,
}

fn parse_role(role: &str) -> Result<Role> {
    Role::parse(role).ok_or_else(|| {
        Diag::new("nrl::logs::role", format!("unknown role `{role}`"))
            .help("use generation, gym or training")
    })
}

pub fn run(args: LogsArgs) -> Result<Exit> {
    if let Some(dir) = args.collect.clone() {
        return run_collect(args, dir);
    }
    let Some(role) = args.role.as_deref() else {
        return Err(Diag::new("nrl::logs::role", "--role is required").help(
            "e.g. `nrl logs recipe.yaml --infra infra.yaml --role training`, or --collect DIR",
        ));
    };
    let role = parse_role(role)?;
    let cfg = args.kube.load(&args.recipe)?;
    let opts = RoleLogOptions {
        source: match args.source {
            Source::Auto => LogSource::Auto,
            Source::Daemon => LogSource::Daemon,
            Source::Head => LogSource::Head,
            Source::Worker => LogSource::Worker,
        },
        follow: args.follow,
        tail: Some(args.tail),
        container: args.container.clone(),
    };
    run_async("stopped following; the job keeps running", async move {
        let k8s = args.kube.connect(Some(&cfg.infra.namespace)).await?;
        let mut out = std::io::stdout();
        role_logs(&k8s, &cfg, role, &opts, &mut out, &Progress::auto()).await
    })
}

/// `nrl logs --collect DIR RUN_ID|RECIPE`
fn run_collect(args: LogsArgs, dir: PathBuf) -> Result<Exit> {
    let opts = CollectOptions {
        dir,
        tar: args.tar,
        max_file_bytes: args.max_file_mib.max(1).saturating_mul(1 << 20),
    };
    let r = &args.recipe;
    let is_recipe = r.infra.is_some() || !r.overrides.is_empty() || r.recipe.is_file();
    let kube = args.kube.clone();
    if is_recipe {
        let role = args.role.as_deref().map(parse_role).transpose()?;
        let cfg = args.kube.load(&args.recipe)?;
        let recipe = args.recipe.recipe.display().to_string();
        run_async(
            "stopped collecting; DIR holds what was fetched so far",
            async move {
                let k8s = kube.connect(Some(&cfg.infra.namespace)).await?;
                let target = CollectTarget::Recipe {
                    cfg: &cfg,
                    recipe,
                    role,
                };
                let report = collect(Some(&k8s), &target, &opts).await?;
                Ok(print_summary(&report))
            },
        )
    } else {
        if args.role.is_some() {
            return Err(Diag::new(
                "nrl::logs::role",
                "--role selects a recipe's role; a run is collected whole",
            )
            .help("drop --role, or pass the recipe and --infra"));
        }
        let id = args.recipe.recipe.display().to_string();
        run_async(
            "stopped collecting; DIR holds what was fetched so far",
            async move {
                let (record, k8s, _) = super::job_runs::resolve(&id, &kube).await?;
                let report = collect(k8s.as_ref(), &CollectTarget::Run(&record), &opts).await?;
                Ok(print_summary(&report))
            },
        )
    }
}

fn print_summary(report: &CollectReport) -> Exit {
    let at = match &report.archive {
        Some(a) => a.display().to_string(),
        None => report.dir.display().to_string(),
    };
    crate::errln!(
        "collected {} files ({}) of {} into {at}",
        report.files.len(),
        size(report.bytes()),
        report.subject
    );
    if !report.skipped.is_empty() {
        crate::errln!(
            "{} items not fetched (see index.md): {}",
            report.skipped.len(),
            report
                .skipped
                .iter()
                .map(|s| s.what.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Exit::Ok
}
