//! `nrl diff RUN_A RUN_B | RUN_A RECIPE [--infra FILE] [OVERRIDES…]`: what changed between
//! two launches. The work is in `crate::launch::diff`; this maps arguments and prints.

use std::path::PathBuf;

use clap::Args;

use super::common::{Output, RecipeArgs};
use crate::config::env::ProcessEnv;
use crate::diag::{Diag, Exit, Result};
use crate::launch::diff::{DiffTarget, diff_launches, render};
use crate::launch::records::RunStore;

/// What changed between two launches: the resolved recipe, the infra, the rendered
/// objects and the code, key by key, each change with the layer, file and line that set
/// it on each side. "What changed since the last good run."
#[derive(Debug, Args)]
#[command(after_help = "\
Runs are compared from the launch snapshot each run keeps in its run directory
(~/.cache/nrl/runs/<id>/.nrl/): what it was launched with, not what the files say now.

B is another run id, or a recipe (then --infra and overrides apply, and the code is what
a launch from --repo-root would upload now).

Exit codes: 0 no differences, 1 differences, 2 bad input (an unknown run, a run with no
snapshot).

Examples:
  nrl diff grpo-20261201-090000-ab12 grpo-20261202-100000-cd34
  nrl diff grpo-20261201-090000-ab12 recipe.yaml --infra infra.yaml grpo.max_num_steps=500
  nrl diff grpo-20261201-090000-ab12 grpo-20261202-100000-cd34 -o json")]
pub struct DiffArgs {
    /// The run to compare from (`a`).
    #[arg(value_name = "RUN_A", add = super::completions::run_ids())]
    pub a: String,
    /// Another run id, or a recipe YAML (`b`).
    #[arg(value_name = "RUN_B|RECIPE", add = super::completions::run_or_recipe())]
    pub b: String,
    /// Infra YAML when B is a recipe.
    #[arg(long, value_name = "FILE")]
    pub infra: Option<PathBuf>,
    /// Hydra-style overrides of the recipe B.
    #[arg(value_name = "OVERRIDES", add = super::completions::overrides())]
    pub overrides: Vec<String>,
    /// Where B's upload paths are read (default: the current directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub repo_root: PathBuf,
    /// Output format: the report (`table`), JSON or YAML.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: Output,
}

pub fn run(args: DiffArgs) -> Result<Exit> {
    let store = RunStore::from_env(&ProcessEnv)?;
    let b_is_run = args.infra.is_none() && args.overrides.is_empty() && store.exists(&args.b);
    let diff = if b_is_run {
        diff_launches(&store, &args.a, &DiffTarget::Run(&args.b))?
    } else {
        if !PathBuf::from(&args.b).is_file() {
            return Err(Diag::new(
                "nrl::diff::target",
                format!(
                    "`{}` is neither a run recorded here nor a recipe file",
                    args.b
                ),
            )
            .help("pass a run id from `nrl runs`, or the path of a recipe YAML"));
        }
        let recipe = RecipeArgs {
            recipe: PathBuf::from(&args.b),
            infra: args.infra.clone(),
            overrides: args.overrides.clone(),
        };
        let cfg = crate::config::layers::load(&recipe.load_request())?;
        let target = DiffTarget::Config {
            cfg: &cfg,
            infra: args.infra.as_deref(),
            overrides: &args.overrides,
            repo_root: &args.repo_root,
        };
        diff_launches(&store, &args.a, &target)?
    };
    match args.output.data(&diff) {
        Some(text) => crate::outln!("{text}"),
        None => crate::out!("{}", render(&diff)),
    }
    Ok(if diff.is_same() {
        Exit::Ok
    } else {
        Exit::Failed
    })
}
