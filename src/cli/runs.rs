//! `nrl runs`: the recorded runs, newest first. The work is in
//! `crate::launch::records::listing`; this maps arguments and prints.

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::common::{KubeArgs, Output, plain_table, run_async};
use crate::config::env::ProcessEnv;
use crate::diag::{Exit, Result};
use crate::launch::records::listing::{RunRow, RunsFilter, RunsOptions, list_runs};
use crate::launch::records::{RunStatus, RunStore};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatusArg {
    Running,
    Succeeded,
    Failed,
    Stopped,
    Lost,
}

impl From<StatusArg> for RunStatus {
    fn from(s: StatusArg) -> RunStatus {
        match s {
            StatusArg::Running => RunStatus::Running,
            StatusArg::Succeeded => RunStatus::Succeeded,
            StatusArg::Failed => RunStatus::Failed,
            StatusArg::Stopped => RunStatus::Stopped,
            StatusArg::Lost => RunStatus::Lost,
        }
    }
}

/// List every recorded run, newest first: where it ran, its status (asked of the cluster
/// or the Ray dashboard while it runs; `lost` when the process or object behind it is
/// gone), age, recipe and W&B URL.
#[derive(Debug, Args)]
#[command(after_help = "\
Records are this machine's (`~/.cache/nrl/runs`); with --context or -n, the records kept
in that namespace of the cluster are listed too (runs launched from other machines).

A run that is still running is looked up where it runs: one list of RayJobs and one of
RayClusters per namespace, one job list per Ray dashboard. --no-refresh shows the records
as they are.

Examples:
  nrl runs
  nrl runs --status failed --status lost --since 2d
  nrl runs --recipe grpo --context prod -n rl-team -o json")]
pub struct RunsArgs {
    /// Only runs in this status (repeatable).
    #[arg(long, value_enum, value_name = "STATUS")]
    pub status: Vec<StatusArg>,
    /// Only runs whose recipe path contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub recipe: Option<String>,
    /// Only runs started within this long (e.g. 90m, 6h, 2d).
    #[arg(long, value_name = "DURATION", value_parser = super::value_parsers::parse_age)]
    pub since: Option<Duration>,
    /// Show the records as they are; ask no cluster or dashboard.
    #[arg(long)]
    pub no_refresh: bool,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: Output,
}

pub fn run(args: RunsArgs) -> Result<Exit> {
    run_async("nothing was changed", async move {
        let store = RunStore::from_env(&ProcessEnv)?;
        let cluster = if args.kube.context.is_some() || args.kube.namespace.is_some() {
            Some(args.kube.connect(None).await?)
        } else {
            None
        };
        let opts = RunsOptions {
            filter: RunsFilter {
                statuses: args.status.iter().map(|s| RunStatus::from(*s)).collect(),
                recipe: args.recipe.clone(),
                since: args.since,
            },
            refresh: !args.no_refresh,
            cluster,
            connect: args.kube.connect_options(),
            ray_timeout: args.kube.request_timeout.min(Duration::from_secs(10)),
        };
        let rows = list_runs(&store, &opts).await?;
        match args.output.data(&rows) {
            Some(text) => crate::outln!("{text}"),
            None if rows.is_empty() => {
                crate::outln!("(no runs recorded in {})", store.dir().display())
            }
            None => crate::outln!("{}", table(&rows, jiff::Timestamp::now())),
        }
        Ok(Exit::Ok)
    })
}

fn table(rows: &[RunRow], now: jiff::Timestamp) -> String {
    let body = rows
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.kind.to_string(),
                r.status.as_str().to_string(),
                r.age(now),
                r.location.clone(),
                r.recipe
                    .as_deref()
                    .and_then(|p| std::path::Path::new(p).file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                r.wandb_url.clone().unwrap_or_default(),
                r.detail.clone().unwrap_or_default(),
            ]
        })
        .collect();
    plain_table(
        &[
            "RUN ID", "KIND", "STATUS", "AGE", "WHERE", "RECIPE", "W&B", "DETAIL",
        ],
        body,
    )
}
