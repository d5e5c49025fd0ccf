//! Configuration engine: YAML with spans, `defaults:` inheritance, the four infra layers,
//! Hydra overrides, OmegaConf interpolation, provenance and the typed infra schema.

pub mod defaults;
pub mod env;
pub mod implicit;
pub mod infra_only;
pub mod input;
pub mod interp;
pub mod layers;
pub mod namespace;
pub mod node;
pub mod overrides;
pub mod provenance;
pub mod schema;
pub mod source;
pub mod suggest;
pub mod typed;
pub mod yaml;

pub use node::{Map, Node, Value};
pub use source::{SourceKind, Span};
