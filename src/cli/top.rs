//! `nrl top [RUN_ID | RECIPE --infra FILE]`: the live view of a user's runs. The work is
//! in `crate::top`; this maps arguments, picks the screen or the one-shot table, and
//! prints.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

use super::common::{KubeArgs, Output, RecipeArgs, plain_table, run_async};
use crate::diag::{Diag, Exit, Result};
use crate::doctor::diagnose::Target;
use crate::k8s::K8s;
use crate::top::model::{Connection, RunDetail, TopView};
use crate::top::progress::ProgressPatterns;
use crate::top::session::{self, TopOptions};

/// A live view of your runs in a namespace: RayJobs, long-lived RayClusters and Gym runs
/// with their state; for the selected run its pods, the latest events, the driver log and
/// training progress read from it (step, loss, reward, throughput).
#[derive(Debug, Args)]
#[command(after_help = "\
On a terminal, a full screen that follows the cluster through one watch per kind (RayJobs,
RayClusters, pods, Gym Jobs, events; nothing is polled). Keys: ↑/↓ select a run, Enter
the full log (/ to search), d diagnose, p the dashboard's port-forward URL, s stop the run
(asks first; only your own runs), ? help, q quit.

With --once, -o json|yaml, or when stdout is not a terminal, the same view is printed once
and nrl exits. JSON fields: context, namespace, user, connection, runs[] (name, kind,
owner, state, finished, alert, created, age, wandb) and selected (name, kind, clusters[]
with pods[], events[], log {lines, source, note}, progress {step, max_steps, loss, reward,
throughput, step_time, prompts_done, prompts_total, validation_accuracy, history[]}).

Progress is read from NeMo-RL's log lines (GRPO, SFT, DPO, distillation); for other
trainers give patterns: --progress-pattern 'loss=train_loss=([0-9.]+)' (fields: step,
epoch, loss, reward, throughput, step_time, prompts, validation_accuracy).

Examples:
  nrl top
  nrl top grpo-20260101-120000-ab12
  nrl top recipe.yaml --infra infra.yaml
  nrl top --all-users -n rl-team --once
  nrl top -o json | jq '.runs[] | {name, state}'")]
pub struct TopArgs {
    /// A run id (its run is selected), or a recipe YAML (the RayJob or RayCluster it
    /// renders is selected); default: your newest run.
    #[arg(value_name = "RUN_ID|RECIPE", add = super::completions::run_or_recipe())]
    pub target: Option<String>,
    /// Infra YAML (recipe mode).
    #[arg(long, value_name = "FILE")]
    pub infra: Option<PathBuf>,
    /// Hydra-style overrides of the recipe (recipe mode).
    #[arg(value_name = "OVERRIDES", add = super::completions::overrides())]
    pub overrides: Vec<String>,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Everyone's runs, not only yours (`nrl-k8s/owner`).
    #[arg(long)]
    pub all_users: bool,
    /// Print the view once and exit (the default when stdout is not a terminal).
    #[arg(long)]
    pub once: bool,
    /// Output format of the one-shot view.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: Output,
    /// Log lines of the selected run in the one-shot view (the screen shows as many as
    /// fit).
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub tail: usize,
    /// A progress pattern, NAME=REGEX (repeatable): its first group is the value (`N/M`
    /// fields take two).
    #[arg(long = "progress-pattern", value_name = "NAME=REGEX")]
    pub progress_patterns: Vec<String>,
}

impl TopArgs {
    fn is_recipe(&self, target: &str) -> bool {
        self.infra.is_some() || !self.overrides.is_empty() || PathBuf::from(target).is_file()
    }
}

pub fn run(args: TopArgs) -> Result<Exit> {
    let patterns = ProgressPatterns::with_overrides(&args.progress_patterns)
        .map_err(|e| Diag::new("nrl::top::pattern", format!("--progress-pattern: {e}")))?;
    // A recipe is loaded (and its errors reported) before anything connects.
    let recipe_target = match &args.target {
        Some(t) if args.is_recipe(t) => {
            let recipe = RecipeArgs {
                recipe: PathBuf::from(t),
                infra: args.infra.clone(),
                overrides: args.overrides.clone(),
            };
            let cfg = args.kube.load(&recipe)?;
            Some((Target::of_config(&cfg, t)?, cfg.infra.namespace.clone()))
        }
        _ => None,
    };
    let interactive = !args.once
        && args.output == Output::Table
        && std::io::stdout().is_terminal()
        && std::io::stdin().is_terminal();
    let me = crate::config::env::username(&crate::config::env::ProcessEnv);
    run_async("nothing was changed", async move {
        let (k8s, focus) = connect(&args, recipe_target).await?;
        let opts = TopOptions {
            user: (!args.all_users).then(|| me.clone()),
            focus,
            tail: args.tail,
            patterns,
            width: super::doctor::style(false).1,
        };
        if interactive {
            return crate::top::screen::run(&k8s, &opts, &me)
                .await
                .map(|()| Exit::Ok);
        }
        let view = session::snapshot(&k8s, &opts).await?;
        match args.output.data(&view) {
            Some(text) => crate::outln!("{text}"),
            None => crate::out!("{}", render(&view)),
        }
        Ok(Exit::Ok)
    })
}

/// The cluster client and the run to select: a run id's record says where it is, a
/// recipe what it renders.
async fn connect(
    args: &TopArgs,
    recipe: Option<(Target, String)>,
) -> Result<(K8s, Option<String>)> {
    if let Some((target, ns)) = recipe {
        let k8s = args.kube.connect(Some(&ns)).await?;
        return Ok((k8s, session::focus_of(&target)));
    }
    match &args.target {
        Some(id) => session::connect_run(id, &args.kube.connect_options()).await,
        None => Ok((args.kube.connect(None).await?, None)),
    }
}

/// The one-shot view as text: the runs, then the selected run's clusters and pods,
/// progress, events and log tail.
pub fn render(view: &TopView) -> String {
    let whose = match &view.user {
        Some(u) => format!("runs of {u}"),
        None => "everyone's runs".to_string(),
    };
    let mut out = format!(
        "nrl top: context {}, namespace `{}`, {whose}\n",
        view.context, view.namespace
    );
    if let Connection::Reconnecting { watches, error } = &view.connection {
        out.push_str(&format!(
            "reconnecting… ({}: {error})\n",
            watches.join(", ")
        ));
    }
    out.push('\n');
    if view.runs.is_empty() {
        out.push_str("(no runs)\n");
        return out;
    }
    let dash = |s: &Option<String>| s.clone().unwrap_or_else(|| "-".to_string());
    let rows = view
        .runs
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.kind.as_str().to_string(),
                dash(&r.owner),
                r.state.clone(),
                r.age.clone(),
                dash(&r.wandb),
            ]
        })
        .collect();
    out.push_str(&plain_table(
        &["RUN", "KIND", "OWNER", "STATE", "AGE", "W&B"],
        rows,
    ));
    out.push('\n');
    if let Some(d) = &view.selected {
        out.push('\n');
        out.push_str(&detail(d));
    }
    out
}

fn detail(d: &RunDetail) -> String {
    let mut out = format!("{} ({})\n", d.name, d.kind.as_str());
    let p = &d.progress;
    let mut facts = Vec::new();
    if let (Some(s), Some(m)) = (p.step, p.max_steps) {
        facts.push(format!("step {s}/{m}"));
    }
    let num = |v: Option<f64>| v.map(|v| format!("{v:.4}"));
    if let Some(v) = num(p.loss) {
        facts.push(format!("loss {v}"));
    }
    if let Some(v) = num(p.reward) {
        facts.push(format!("reward {v}"));
    }
    if let Some(v) = p.throughput {
        let unit = p.throughput_unit.as_deref().unwrap_or("");
        facts.push(format!("throughput {v:.2} {unit}").trim_end().to_string());
    }
    if let Some(v) = p.step_time {
        facts.push(format!("step time {v:.2}s"));
    }
    if let (Some(done), Some(total)) = (p.prompts_done, p.prompts_total) {
        facts.push(format!("prompts {done}/{total}"));
    }
    if let Some(v) = num(p.validation_accuracy) {
        facts.push(format!("validation accuracy {v}"));
    }
    if !facts.is_empty() {
        out.push_str(&format!("progress: {}\n", facts.join(", ")));
    }
    for c in &d.clusters {
        let role = c
            .role
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        out.push_str(&format!("\n{}{role}: {}\n", c.name, c.state));
        if c.pods.is_empty() {
            out.push_str("(no pods)\n");
            continue;
        }
        let rows = c
            .pods
            .iter()
            .map(|p| {
                vec![
                    p.name.clone(),
                    p.group.clone(),
                    match &p.reason {
                        Some(r) => format!("{} ({r})", p.phase),
                        None => p.phase.clone(),
                    },
                    p.ready.clone(),
                    p.restarts.to_string(),
                    p.node.clone().unwrap_or_else(|| "-".to_string()),
                    p.gpus.to_string(),
                ]
            })
            .collect();
        out.push_str(&plain_table(
            &["POD", "GROUP", "PHASE", "READY", "RESTARTS", "NODE", "GPUS"],
            rows,
        ));
        out.push('\n');
    }
    if !d.events.is_empty() {
        out.push('\n');
        let rows = d
            .events
            .iter()
            .map(|e| {
                vec![
                    e.age.clone(),
                    e.kind.clone(),
                    e.object.clone(),
                    e.reason.clone(),
                    e.message.clone(),
                ]
            })
            .collect();
        out.push_str(&plain_table(
            &["AGE", "TYPE", "OBJECT", "REASON", "MESSAGE"],
            rows,
        ));
        out.push('\n');
    }
    let log = &d.log;
    let source = log.source.as_deref().unwrap_or("log");
    out.push_str(&format!("\n{source}:\n"));
    if let Some(note) = &log.note {
        out.push_str(&format!("({note})\n"));
    }
    for line in &log.lines {
        out.push_str(&crate::terminal_text::escape_keeping_lines(line));
        out.push('\n');
    }
    out
}
