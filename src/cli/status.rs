//! `nrl status RECIPE …`: per declared role, the RayCluster's state, its head and worker
//! pods, and its daemon job. Read-only.

use clap::Args;

use super::common::{KubeArgs, Output, RecipeArgs, plain_table, run_async};
use crate::diag::{Exit, Result};
use crate::launch::inspect::{RoleStatus, status};

/// Show each role's RayCluster state, head and worker pods, and daemon job.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  nrl status recipe.yaml --infra infra.yaml
  nrl status recipe.yaml --infra infra.yaml -o json | jq '.[] | {role, state}'")]
pub struct StatusArgs {
    #[command(flatten)]
    pub recipe: RecipeArgs,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: Output,
}

pub fn run(args: StatusArgs) -> Result<Exit> {
    let cfg = args.kube.load(&args.recipe)?;
    run_async("nothing was changed", async move {
        if cfg.infra.kuberay.roles().next().is_none() {
            crate::outln!("(no clusters declared in recipe)");
            return Ok(Exit::Ok);
        }
        let k8s = args.kube.connect(Some(&cfg.infra.namespace)).await?;
        let rows = status(&k8s, &cfg).await?;
        match args.output.data(&rows) {
            Some(text) => crate::outln!("{text}"),
            None => crate::outln!("{}", table(&rows)),
        }
        Ok(Exit::Ok)
    })
}

/// ROLE, NAME, STATE, HEAD, WORKERS, DAEMON.
pub fn table(rows: &[RoleStatus]) -> String {
    let dash = || "-".to_string();
    let body = rows
        .iter()
        .map(|r| {
            let state = match (&r.state, r.exists) {
                (_, false) => "(not found)".to_string(),
                (Some(s), true) => s.clone(),
                (None, true) => "pending".to_string(),
            };
            let workers = if r.pods.workers.is_empty() {
                dash()
            } else {
                format!(
                    "{}/{} ready: {}",
                    r.workers_ready,
                    r.workers_desired,
                    r.pods.worker_summary()
                )
            };
            let daemon = match &r.daemon {
                None => dash(),
                Some(d) => format!("{}={}", d.id, d.status.as_deref().unwrap_or("unknown")),
            };
            vec![
                r.role.clone(),
                r.name.clone(),
                state,
                r.pods
                    .head
                    .as_ref()
                    .map(|h| h.describe())
                    .unwrap_or_else(dash),
                workers,
                daemon,
            ]
        })
        .collect();
    plain_table(
        &["ROLE", "NAME", "STATE", "HEAD", "WORKERS", "DAEMON"],
        body,
    )
}
