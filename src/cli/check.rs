//! `nrl check`: validate a recipe + infra pair and show what would be applied.

use clap::{Args, ValueEnum};

use super::common::RecipeArgs;
use super::value_parsers::OutputTarget;
use crate::diag::{Exit, Result};
use crate::doctor;
use crate::launch::check::{Checked, bundle, check, written_secrets_warning};
use crate::launch::output_file::write_output;
use crate::render::{emit, summary};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Yaml,
    Json,
}

/// Load, render and validate a recipe + infra pair; print a summary, the manifests, or
/// a full bundle. Never contacts a cluster.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  nrl check recipe.yaml --infra infra.yaml
  nrl check recipe.yaml --infra infra.yaml --manifests-only
  nrl check recipe.yaml --infra infra.yaml -o bundle.json
  nrl check recipe.yaml --infra infra.yaml -o - --format json | jq .config.infra
  nrl check recipe.yaml --infra infra.yaml --explain infra.kuberay.training.name
  nrl check recipe.yaml --infra infra.yaml policy.optimizer.kwargs.lr=3e-4 infra.labels.team=rl
  nrl check recipe.yaml --infra infra.yaml --skip-doctor")]
pub struct CheckArgs {
    #[command(flatten)]
    pub recipe: RecipeArgs,
    /// Write the full bundle (config + manifests) to FILE, or to stdout with `-` (a
    /// file's directory must exist; never one of the input files). With
    /// --manifests-only, the manifests instead.
    #[arg(short, long, value_name = "FILE|-", value_parser = super::value_parsers::parse_output_target)]
    pub output: Option<OutputTarget>,
    /// Bundle format (default: from the -o extension; .json is JSON, anything else YAML).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Print only the rendered manifests, as a YAML stream.
    #[arg(long)]
    pub manifests_only: bool,
    /// Show which layer, file and line set KEY (repeatable), e.g. `infra.image`.
    #[arg(long, value_name = "KEY", add = super::completions::explain_keys())]
    pub explain: Vec<String>,
    /// Skip validation of the rendered objects against the bundled schemas.
    #[arg(long)]
    pub no_validate: bool,
    /// Skip the offline `nrl doctor` rules (errors from them otherwise fail `check`).
    #[arg(long)]
    pub skip_doctor: bool,
}

pub fn run(args: CheckArgs) -> Result<Exit> {
    let req = args.recipe.load_request();
    if !args.explain.is_empty() {
        let cfg = crate::config::layers::load(&req)?;
        for key in &args.explain {
            crate::out!("{}", crate::config::provenance::explain(&cfg, key)?);
        }
        return Ok(Exit::Ok);
    }
    let checked = check(&req, !args.no_validate)?;
    let exit = emit_and_doctor(&args, &checked);
    // The process ends right after this command: freeing the loaded trees one small
    // allocation at a time would cost more than emitting them (DESIGN §6).
    std::mem::forget(checked);
    exit
}

fn emit_and_doctor(args: &CheckArgs, checked: &Checked) -> Result<Exit> {
    emit_output(args, checked)?;
    if args.skip_doctor {
        return Ok(Exit::Ok);
    }
    // The doctor's findings go to stderr so stdout stays the summary or the manifests.
    let report = doctor::offline(&checked.config, &checked.manifests);
    if !report.is_empty() {
        let (color, width) = super::doctor::style(true);
        crate::err!("{}", report.render(color, width));
    }
    Ok(report.exit())
}

fn emit_output(args: &CheckArgs, checked: &Checked) -> Result<()> {
    if args.manifests_only {
        let text = emit::to_yaml_stream(&checked.manifests);
        match &args.output {
            Some(OutputTarget::File(path)) => {
                write_output(path, &text, &checked.config.input_files())?;
                crate::outln!(
                    "wrote {} manifest(s) to {}",
                    checked.manifests.len(),
                    path.display()
                );
                if let Some(warning) = written_secrets_warning(checked, path) {
                    crate::errln!("{warning}");
                }
            }
            Some(OutputTarget::Stdout) | None => crate::out!("{text}"),
        }
        return Ok(());
    }
    if let Some(target) = &args.output {
        let path = match target {
            OutputTarget::File(path) => path.as_path(),
            OutputTarget::Stdout => std::path::Path::new("-"),
        };
        let format = args.format.unwrap_or_else(|| {
            if path.extension().is_some_and(|e| e == "json") {
                Format::Json
            } else {
                Format::Yaml
            }
        });
        let b = bundle(checked)?;
        let text = match format {
            Format::Json => emit::to_json(&b, true),
            Format::Yaml => emit::to_yaml(&b),
        };
        if *target == OutputTarget::Stdout {
            crate::out!("{text}");
            return Ok(());
        }
        write_output(path, &text, &checked.config.input_files())?;
        crate::outln!(
            "wrote full config + {} manifest(s) to {}",
            checked.manifests.len(),
            path.display()
        );
        if let Some(warning) = written_secrets_warning(checked, path) {
            crate::errln!("{warning}");
        }
        return Ok(());
    }
    crate::out!(
        "{}",
        summary::summary(&checked.config.infra, &checked.manifests)
    );
    Ok(())
}
