//! The JSON Schemas (draft 2020-12) `nrl schema` prints, for editors: point the YAML
//! language server at one (`# yaml-language-server: $schema=infra.schema.json`) and a
//! misspelt key, a wrong type or an unknown enum value is underlined as you type, with the
//! loader's own descriptions and defaults. Each is generated from the declaration its loader
//! reads with (`infra_model!` for the infra model, `shape!` for the Gym config), so the
//! two cannot drift.

use serde_json::Value;

/// Which file a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaKind {
    /// An infra file (`--infra FILE`, or a recipe's `infra:` block).
    Infra,
    /// A Gym submit config (`nrl gym render|submit FILE`).
    Gym,
    /// The user defaults (`~/.config/nrl/defaults.yaml`, `$NRL_DEFAULTS`).
    Defaults,
}

impl SchemaKind {
    pub const ALL: [SchemaKind; 3] = [SchemaKind::Infra, SchemaKind::Gym, SchemaKind::Defaults];

    pub fn name(self) -> &'static str {
        match self {
            SchemaKind::Infra => "infra",
            SchemaKind::Gym => "gym",
            SchemaKind::Defaults => "defaults",
        }
    }
}

/// The schema of `kind`, as a JSON document.
pub fn json_schema(kind: SchemaKind) -> Value {
    match kind {
        SchemaKind::Infra => crate::config::schema::json::infra_file_schema(),
        SchemaKind::Gym => crate::gym::config::gym_json_schema(),
        SchemaKind::Defaults => crate::config::schema::json::defaults_file_schema(
            crate::doctor::allow::doctor_section_schema(),
        ),
    }
}
