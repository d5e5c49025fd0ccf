//! `nrl doctor`: the launch playbook's rules as checks, offline and against the cluster.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

use super::common::RecipeArgs;
use crate::config::schema::{CodeSource, StrEnum};
use crate::diag::{Diag, Exit, Result};
use crate::doctor::{self, Options, RULES, Report};
use crate::k8s::K8s;
use crate::launch::check::check;

/// Check a recipe + infra pair against the launch playbook's rules: offline lint rules
/// over the resolved config and rendered manifests, then read-only preflight checks of the
/// target cluster (referenced objects, CRDs, access, KAI queues). Exit 2 on errors.
///
/// Silence a finding with a `# nrl: allow CODE` comment on (or the line above) the line it
/// points at, `# nrl: allow-file CODE` anywhere in the file, or `doctor: {allow: [CODE]}`
/// in ~/.config/nrl/defaults.yaml.
#[derive(Debug, Args)]
#[command(after_help = "\
Silence a finding with `# nrl: allow CODE[, CODE…] [reason]` at the end of the line it points
at (or alone on the line above it), `# nrl: allow-file CODE` anywhere in a file, or
`doctor: {allow: [CODE]}` in ~/.config/nrl/defaults.yaml. Codes: `nrl doctor --rules`.

Exit codes: 0 no errors (warnings may be listed), 2 errors found or bad input, 3 the
cluster could not be reached.

Examples:
  nrl doctor recipe.yaml --infra infra.yaml
  nrl doctor recipe.yaml --infra infra.yaml --offline
  nrl doctor recipe.yaml --infra infra.yaml --offline -o json | jq '.findings[].code'
  nrl doctor recipe.yaml --infra infra.yaml --context prod-gb300 cluster.num_nodes=8
  nrl doctor recipe.yaml --infra infra.yaml --code-source upload --repo-root ~/RL
  nrl doctor --rules")]
pub struct DoctorArgs {
    /// The NeMo-RL recipe YAML (its `defaults:` chain is followed).
    #[arg(required_unless_present = "rules")]
    pub recipe: Option<PathBuf>,
    /// Infra YAML; alternatively the recipe may carry an `infra:` block (not both).
    #[arg(long, value_name = "FILE")]
    pub infra: Option<PathBuf>,
    /// Hydra-style overrides: `a.b=v`, `+a.b=v`, `++a.b=v`, `~a.b`; `infra.*` keys go to
    /// the infra layer.
    #[arg(value_name = "OVERRIDES", add = super::completions::overrides())]
    pub overrides: Vec<String>,
    /// Run only the offline rules; never contact a cluster.
    #[arg(long)]
    pub offline: bool,
    #[command(flatten)]
    pub kube: super::common::KubeArgs,
    /// Check as `run --code-source` would launch: upload rules apply to `upload`.
    #[arg(long, value_name = "SOURCE", value_parser = parse_code_source)]
    pub code_source: Option<CodeSource>,
    /// Where the upload is read from (as `run --repo-root`; default: current directory).
    #[arg(long, value_name = "DIR")]
    pub repo_root: Option<PathBuf>,
    /// List every rule code with its severity and what it checks, then exit.
    #[arg(long)]
    pub rules: bool,
    /// Output format: the report (`table`), or the findings as JSON or YAML (`code`,
    /// `severity`, `message`, `location`, `fix`, `notes`, `related`).
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: super::common::Output,
}

fn parse_code_source(s: &str) -> std::result::Result<CodeSource, String> {
    CodeSource::parse(s).ok_or_else(|| format!("expected one of {}", CodeSource::VALUES.join(", ")))
}

/// Colour and width for reports printed on stdout.
pub(crate) fn style(stderr: bool) -> (bool, usize) {
    let tty = if stderr {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    };
    let color = tty && std::env::var_os("NO_COLOR").is_none();
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100);
    (color, width)
}

pub fn run(args: DoctorArgs) -> Result<Exit> {
    if args.rules {
        crate::out!("{}", rules_table());
        return Ok(Exit::Ok);
    }
    let Some(recipe) = args.recipe.clone() else {
        return Err(
            Diag::new("nrl::usage", "a RECIPE is required").help("nrl doctor RECIPE --infra FILE")
        );
    };
    let mut req = RecipeArgs {
        recipe,
        infra: args.infra.clone(),
        overrides: args.overrides.clone(),
    }
    .load_request();
    req.namespace_fallback = args.kube.inferred_namespace();
    if let Some(ns) = &args.kube.namespace {
        req.overrides.push(format!("infra.namespace='{ns}'"));
    }
    let checked = check(&req, true)?;
    let opts = Options {
        code_source: args.code_source,
        repo_root: args.repo_root.clone(),
        rayjob: false,
    };
    let mut report = doctor::offline_with(&checked.config, &checked.manifests, &opts);
    let (color, width) = style(false);
    if !args.offline {
        // Preflight also checks what a RayJob launch creates.
        let manifests = doctor::preflight_manifests(&checked.config, &checked.manifests);
        match preflight(&checked.config, &manifests, &args.kube) {
            Ok((k8s, pre)) => {
                if args.output == super::common::Output::Table {
                    crate::outln!("preflight: {}", k8s.banner());
                }
                report.merge(pre);
            }
            Err(d) => {
                match args.output.data(&report.to_json()) {
                    Some(text) => crate::outln!("{text}"),
                    None => crate::out!(
                        "{}",
                        report.render_as(color, width, "doctor (offline rules only)")
                    ),
                }
                return Err(d.note(
                    "the preflight could not run; the offline rules' report is above (`--offline` skips the preflight)",
                ));
            }
        }
    }
    match args.output.data(&report.to_json()) {
        Some(text) => crate::outln!("{text}"),
        None => crate::out!("{}", report.render(color, width)),
    }
    Ok(report.exit())
}

fn preflight(
    cfg: &crate::config::layers::LoadedConfig,
    manifests: &[crate::config::node::Node],
    kube: &super::common::KubeArgs,
) -> Result<(K8s, Report)> {
    super::common::block_on(async {
        let cancel = super::common::cancel_on_signals()?;
        let preflight = async {
            let k8s = kube.connect(Some(&cfg.infra.namespace)).await?;
            let report = doctor::preflight(&k8s, cfg, manifests).await?;
            Ok((k8s, report))
        };
        tokio::select! {
            r = preflight => r,
            _ = cancel.cancelled() => Err(Diag::new("nrl::interrupted", "interrupted: nothing was changed")
                .with_exit(Exit::Interrupted)),
        }
    })
}

/// `nrl doctor --rules`: code, severity, stage (offline, preflight, or diagnose: what
/// `nrl diagnose` reports after launch), summary.
pub fn rules_table() -> String {
    let mut out = String::new();
    let w = RULES.iter().map(|r| r.short().len()).max().unwrap_or(0);
    for r in RULES {
        out.push_str(&format!(
            "{:<w$}  {:<7}  {:<9}  {}\n",
            r.short(),
            r.severity.as_str(),
            r.stage.as_str(),
            r.summary
        ));
    }
    out
}
