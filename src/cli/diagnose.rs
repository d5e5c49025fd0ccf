//! `nrl diagnose RUN_ID | RECIPE`: what went wrong with a launched run (read-only). The
//! work is in `crate::doctor::diagnose`; this maps arguments and prints.

use std::path::PathBuf;

use clap::Args;

use super::common::{KubeArgs, Output, RecipeArgs, run_async};
use crate::diag::{Exit, Result};
use crate::doctor::diagnose::{self, Diagnosis};

/// Look at a launched run and say what is wrong: its RayJob and RayClusters, their pods
/// (why Pending ones are not scheduled, image pulls, crash loops with the previous log,
/// OOM kills, evictions, exit codes), the events, the nodes, DRA claims, the KAI queue and
/// the driver log. Read-only. `nrl doctor` checks before launch; `diagnose` after.
#[derive(Debug, Args)]
#[command(after_help = "\
TARGET is a run id (from `nrl run`; its record, on this machine or in the cluster, says
where the run is) or, when it is a file or --infra is given, a recipe: then the RayJob and
RayClusters the recipe renders are looked up by name.

Every finding has a stable code (`nrl doctor --rules` lists them, stage `diagnose`), the
evidence (the event, the pod's state, the log lines) and a fix.

Exit codes: 0 nothing wrong found, 1 something is wrong, 2 bad input, 3 the cluster could
not be reached.

Examples:
  nrl diagnose grpo-20260101-120000-ab12
  nrl diagnose grpo-20260101-120000-ab12 --context prod -n rl-team -o json
  nrl diagnose recipe.yaml --infra infra.yaml cluster.num_nodes=8")]
pub struct DiagnoseArgs {
    /// A run id, or a recipe YAML.
    #[arg(value_name = "RUN_ID|RECIPE", add = super::completions::run_or_recipe())]
    pub target: String,
    /// Infra YAML (recipe mode); alternatively the recipe may carry an `infra:` block.
    #[arg(long, value_name = "FILE")]
    pub infra: Option<PathBuf>,
    /// Hydra-style overrides of the recipe (recipe mode).
    #[arg(value_name = "OVERRIDES", add = super::completions::overrides())]
    pub overrides: Vec<String>,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Output format: the report (`table`), JSON or YAML.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: Output,
}

impl DiagnoseArgs {
    fn is_recipe(&self) -> bool {
        self.infra.is_some() || !self.overrides.is_empty() || PathBuf::from(&self.target).is_file()
    }
}

pub fn run(args: DiagnoseArgs) -> Result<Exit> {
    let output = args.output;
    if args.is_recipe() {
        let recipe = RecipeArgs {
            recipe: PathBuf::from(&args.target),
            infra: args.infra.clone(),
            overrides: args.overrides.clone(),
        };
        let cfg = args.kube.load(&recipe)?;
        let kube = args.kube.clone();
        let name = args.target.clone();
        run_async("nothing was changed", async move {
            let k8s = kube.connect(Some(&cfg.infra.namespace)).await?;
            let d = diagnose::diagnose_config(&k8s, &cfg, &name).await?;
            Ok(print(&d, output))
        })
    } else {
        let id = args.target.clone();
        let kube = args.kube.clone();
        run_async("nothing was changed", async move {
            let (record, k8s, _) = super::job_runs::resolve(&id, &kube).await?;
            let Some(k8s) = k8s else {
                return Err(crate::diag::Diag::new(
                    "nrl::diagnose::kind",
                    format!(
                        "run `{id}` is a {} run; diagnose looks at runs on Kubernetes",
                        record.kind.as_str()
                    ),
                )
                .help("for a local run, its log is `nrl job logs RUN_ID`"));
            };
            let d = diagnose::diagnose_run(&k8s, &record).await?;
            Ok(print(&d, output))
        })
    }
}

fn print(d: &Diagnosis, output: Output) -> Exit {
    match output.data(&d.to_json()) {
        Some(text) => crate::outln!("{text}"),
        None => {
            let (color, width) = super::doctor::style(false);
            crate::outln!("diagnose: {} in namespace `{}`", d.subject, d.namespace);
            crate::out!("{}", d.render(color, width));
        }
    }
    d.exit()
}
