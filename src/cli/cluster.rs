//! `nrl cluster up|down|list|dashboard`: long-lived RayClusters and Deployments.
//! Parsing and printing only; the work is in `crate::launch::raycluster`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::common::{KubeArgs, Output, RecipeArgs, banner, plain_table, run_async};
use super::dashboard::DashboardArgs;
use super::value_parsers::parse_duration;
use crate::config::layers::LoadedConfig;
use crate::diag::{Exit, Result};
use crate::launch::Progress;
use crate::launch::check::validate_manifests;
use crate::launch::inspect::{age, list_clusters};
use crate::launch::raycluster::{
    DownOptions, EnsureAction, UpOptions, UpOutcome, cluster_down, cluster_up, stamp_owner,
    up_objects,
};
use crate::render::emit;
use crate::render::targets::{Target, parse_targets, up_manifests};

/// Bring long-lived RayClusters and Deployments up and down, list them, open a dashboard.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  nrl cluster up recipe.yaml --infra infra.yaml
  nrl cluster up recipe.yaml --infra infra.yaml --target kuberay.gym --no-wait
  nrl cluster list -n my-team
  nrl cluster dashboard rc-train --port 0
  nrl cluster down recipe.yaml --infra infra.yaml --target kuberay.training")]
pub struct ClusterArgs {
    #[command(subcommand)]
    pub command: ClusterCommand,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Apply RayClusters (per role, in order; their DRA objects first) and Deployments
    /// with their Services; wait until ready and submit daemons.
    #[command(after_help = "\
Existing objects are updated in place (server-side apply, field manager `nrl`). Objects
labelled `nrl-k8s/owner` with another user's name are refused without --force.

Examples:
  nrl cluster up recipe.yaml --infra infra.yaml
  nrl cluster up recipe.yaml --infra infra.yaml --target kuberay.generation --timeout 30m
  nrl cluster up recipe.yaml --infra infra.yaml --role gym --no-wait
  nrl cluster up recipe.yaml --infra infra.yaml --dry-run --target deployments.vllm")]
    Up(UpArgs),
    /// Delete RayClusters (and their DRA objects) and Deployments (and their Services),
    /// waiting until their pods are gone.
    #[command(after_help = "\
Examples:
  nrl cluster down recipe.yaml --infra infra.yaml
  nrl cluster down recipe.yaml --infra infra.yaml --target kuberay.gym --no-wait
  nrl cluster down recipe.yaml --infra infra.yaml --force   # someone else's cluster")]
    Down(DownArgs),
    /// List the RayClusters of a namespace: state, age, owner, workers ready.
    #[command(after_help = "\
Examples:
  nrl cluster list
  nrl cluster list -n my-team -o json")]
    List(ListArgs),
    /// Port-forward a RayCluster's dashboard to localhost and print its URL.
    Dashboard(DashboardArgs),
}

/// Which targets, shared by up and down.
#[derive(Debug, Clone, Args)]
pub struct TargetArgs {
    /// `kuberay.<role>` or `deployments.<name>`, repeatable (default: every declared role,
    /// then every deployment).
    #[arg(long = "target", value_name = "KIND.NAME", add = super::completions::targets())]
    pub targets: Vec<String>,
    /// Shorthand for `--target kuberay.ROLE`, repeatable.
    #[arg(long = "role", value_name = "ROLE", add = super::completions::roles())]
    pub roles: Vec<String>,
}

impl TargetArgs {
    fn resolve(&self, cfg: &LoadedConfig) -> Result<Vec<Target>> {
        let mut all = self.targets.clone();
        all.extend(self.roles.iter().map(|r| format!("kuberay.{r}")));
        parse_targets(&cfg.infra, &all)
    }
}

#[derive(Debug, Args)]
pub struct UpArgs {
    #[command(flatten)]
    pub recipe: RecipeArgs,
    #[command(flatten)]
    pub kube: KubeArgs,
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Wait until RayClusters are ready and Deployments available, then submit daemons
    /// (the default).
    #[arg(long, overrides_with = "no_wait")]
    pub wait: bool,
    /// Return once everything is applied (daemons are then not submitted).
    #[arg(long, overrides_with = "wait")]
    pub no_wait: bool,
    /// Readiness deadline of each RayCluster and Deployment (e.g. 900s, 30m).
    #[arg(long, value_name = "DURATION", default_value = "900s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Print the RayCluster and Deployment manifests that would be applied; contact nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Skip the offline schema and name validation.
    #[arg(long)]
    pub no_validate: bool,
    /// Update objects labelled as owned by another user (the owner guard only; field
    /// ownership conflicts need --force-conflicts).
    #[arg(long)]
    pub force: bool,
    /// Delete and re-create a RayCluster whose spec drifted from the recipe. Needed for
    /// pod-template changes: KubeRay never rolls them into running pods.
    #[arg(long)]
    pub recreate: bool,
    /// Server-side apply with `force`: take over fields another field manager (kubectl
    /// edit, an autoscaler) owns and changed, instead of stopping on the conflict.
    #[arg(long)]
    pub force_conflicts: bool,
    /// Do not submit the roles' daemons.
    #[arg(long)]
    pub skip_daemons: bool,
    /// Directory daemons' `rayUploadPaths` are relative to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub repo_root: Option<PathBuf>,
    /// Apply even when `nrl doctor` (offline rules + read-only preflight) finds errors.
    #[arg(long)]
    pub skip_doctor: bool,
}

#[derive(Debug, Args)]
pub struct DownArgs {
    #[command(flatten)]
    pub recipe: RecipeArgs,
    #[command(flatten)]
    pub kube: KubeArgs,
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Wait until the objects and their pods are gone (the default).
    #[arg(long, overrides_with = "no_wait")]
    pub wait: bool,
    /// Return once deletion is requested.
    #[arg(long, overrides_with = "wait")]
    pub no_wait: bool,
    /// Deadline of each deletion wait (e.g. 600s, 10m).
    #[arg(long, value_name = "DURATION", default_value = "600s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Delete objects labelled as owned by another user.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: Output,
}

pub fn run(args: ClusterArgs) -> Result<Exit> {
    match args.command {
        ClusterCommand::Up(a) => up(a),
        ClusterCommand::Down(a) => down(a),
        ClusterCommand::List(a) => run_async("nothing was changed", list(a)),
        ClusterCommand::Dashboard(a) => super::dashboard::run(a),
    }
}

fn up(args: UpArgs) -> Result<Exit> {
    let cfg = args.kube.load(&args.recipe)?;
    let targets = args.targets.resolve(&cfg)?;
    let me = crate::config::env::username(&*cfg.env);
    let objects = up_objects(&cfg, &targets, &me)?;
    if !args.no_validate {
        validate_manifests(&objects)?;
    }
    if args.dry_run {
        let mut docs = up_manifests(&cfg.infra, &targets)?;
        for d in &mut docs {
            stamp_owner(d, &me);
        }
        crate::out!("{}", emit::to_yaml_stream(&docs));
        return Ok(Exit::Ok);
    }
    let opts = UpOptions {
        wait: !args.no_wait,
        timeout: args.timeout,
        force: args.force,
        recreate: args.recreate,
        force_conflicts: args.force_conflicts,
        daemons: !args.skip_daemons,
        repo_root: match args.repo_root {
            Some(r) => r,
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        },
    };
    let hint = "what was applied stays; run `nrl cluster up` again to continue or `nrl cluster down` to remove it";
    run_async(hint, async move {
        let k8s = args.kube.connect(Some(&cfg.infra.namespace)).await?;
        banner("cluster up", &k8s);
        if !args.skip_doctor {
            let (color, width) = super::doctor::style(true);
            let opts = crate::doctor::Options {
                repo_root: Some(opts.repo_root.clone()),
                ..crate::doctor::Options::default()
            };
            crate::doctor::gate::gate(&k8s, &cfg, &objects, &opts, color, width).await?;
        }
        let progress = Progress::auto();
        for o in cluster_up(&k8s, &cfg, &targets, &opts, &progress).await? {
            crate::outln!("{}", up_line(&o));
        }
        Ok(Exit::Ok)
    })
}

fn up_line(o: &UpOutcome) -> String {
    match o {
        UpOutcome::Cluster { cluster, daemon } => {
            let action = match &cluster.action {
                EnsureAction::Created => "created".to_string(),
                EnsureAction::Unchanged => "unchanged".to_string(),
                EnsureAction::Updated(p) => format!("updated ({})", p.join(", ")),
                EnsureAction::DriftIgnored(p) => format!("drifted, left as is ({})", p.join(", ")),
                EnsureAction::Recreated(p) => format!("recreated ({})", p.join(", ")),
            };
            let mut line = format!(
                "kuberay.{}: RayCluster {} {action}{}",
                cluster.role.as_str(),
                cluster.name,
                if cluster.ready.is_some() {
                    ", ready"
                } else {
                    ""
                }
            );
            if !cluster.template_drift.is_empty() {
                line.push_str(&format!(
                    "; pod templates drifted, not applied ({}): run with --recreate to apply them",
                    cluster.template_drift.join(", ")
                ));
            }
            if let Some(d) = daemon {
                let verb = if d.submitted { "submitted" } else { "kept" };
                line.push_str(&format!("; daemon {} {verb}", d.submission_id));
            }
            line
        }
        UpOutcome::Deployment(d) => format!(
            "deployments.{}: Deployment {} applied{}{}",
            d.key,
            d.name,
            if d.available { ", available" } else { "" },
            d.dns
                .as_deref()
                .map(|s| format!("; DNS {s}"))
                .unwrap_or_default()
        ),
    }
}

fn down(args: DownArgs) -> Result<Exit> {
    let cfg = args.kube.load(&args.recipe)?;
    let targets = args.targets.resolve(&cfg)?;
    let opts = DownOptions {
        wait: !args.no_wait,
        timeout: args.timeout,
        force: args.force,
    };
    let hint = "deletion already requested goes on; `nrl cluster list` shows what is left";
    run_async(hint, async move {
        let k8s = args.kube.connect(Some(&cfg.infra.namespace)).await?;
        banner("cluster down", &k8s);
        let progress = Progress::auto();
        let gone = cluster_down(&k8s, &cfg, &targets, &opts, &progress).await?;
        if gone.is_empty() {
            crate::outln!("nothing to delete");
        } else {
            crate::outln!("deleted: {}", gone.join(", "));
        }
        Ok(Exit::Ok)
    })
}

async fn list(args: ListArgs) -> Result<Exit> {
    let k8s = args.kube.connect(None).await?;
    let rows = list_clusters(&k8s, &k8s.namespace).await?;
    if let Some(text) = args.output.data(&rows) {
        crate::outln!("{text}");
        return Ok(Exit::Ok);
    }
    if rows.is_empty() {
        crate::outln!("(no RayClusters in {})", k8s.namespace);
        return Ok(Exit::Ok);
    }
    let now = jiff::Timestamp::now();
    let dash = || "-".to_string();
    let table = rows
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.state.clone().unwrap_or_else(dash),
                r.created
                    .as_deref()
                    .map(|c| age(c, now))
                    .unwrap_or_else(dash),
                r.owner.clone().unwrap_or_else(dash),
                format!("{}/{}", r.workers_ready, r.workers_desired),
            ]
        })
        .collect();
    crate::outln!(
        "{}",
        plain_table(&["NAME", "STATE", "AGE", "OWNER", "WORKERS READY"], table)
    );
    Ok(Exit::Ok)
}
