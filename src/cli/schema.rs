//! `nrl schema infra|gym|defaults`: the JSON Schema of a file users write, for editors.

use clap::{Args, ValueEnum};

use crate::diag::{Diag, Exit, Result};
use crate::json_schemas::{SchemaKind, json_schema};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// An infra file (`--infra FILE`).
    Infra,
    /// A Gym submit config (`nrl gym render|submit FILE`).
    Gym,
    /// The user defaults (`~/.config/nrl/defaults.yaml`).
    Defaults,
}

impl From<KindArg> for SchemaKind {
    fn from(k: KindArg) -> SchemaKind {
        match k {
            KindArg::Infra => SchemaKind::Infra,
            KindArg::Gym => SchemaKind::Gym,
            KindArg::Defaults => SchemaKind::Defaults,
        }
    }
}

/// Print the JSON Schema (draft 2020-12) of an infra file, a Gym config or the user
/// defaults, generated from the loader's own model: editors that speak the YAML language
/// server underline unknown keys, wrong types and enum values, and show each key's doc and
/// default.
#[derive(Debug, Args)]
#[command(after_help = "\
Point the YAML language server (VS Code's YAML extension, Neovim's yamlls, Helix) at it
with a modeline on the first line of the file:

  # yaml-language-server: $schema=./infra.schema.json

Examples:
  nrl schema infra > infra.schema.json
  nrl schema gym -o gym.schema.json
  nrl schema defaults > ~/.config/nrl/defaults.schema.json")]
pub struct SchemaArgs {
    #[arg(value_enum)]
    pub kind: KindArg,
    /// Write the schema to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
}

pub fn run(args: SchemaArgs) -> Result<Exit> {
    let schema = json_schema(args.kind.into());
    let mut text = serde_json::to_string_pretty(&schema).map_err(|e| {
        Diag::new(
            "nrl::schema::encode",
            format!("cannot encode the schema: {e}"),
        )
    })?;
    text.push('\n');
    match args.output {
        None => super::run::write_stdout(&text),
        Some(path) => {
            std::fs::write(&path, text).map_err(|e| {
                Diag::new(
                    "nrl::schema::write",
                    format!("cannot write {}: {e}", path.display()),
                )
                .help("check that the directory exists and is writable")
            })?;
            Ok(Exit::Ok)
        }
    }
}
