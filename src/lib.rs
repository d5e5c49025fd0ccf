//! `nrl`: launch, watch and debug NeMo-RL training runs and NeMo Gym benchmark jobs on
//! Kubernetes. The binary is a thin front door; everything lives in this library so the
//! commands and the Rhai built-ins share one code path.

// Output goes through `stdio` (a closed pipe must not panic), never `print!`.
#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod cli;
pub mod completion;
pub mod config;
pub mod dev;
pub mod diag;
pub mod doctor;
pub mod durations;
pub mod gym;
pub mod json_schemas;
pub mod k8s;
pub mod launch;
pub mod ray;
pub mod render;
pub mod repl;
pub mod run_id;
pub mod script;
pub mod stdio;
pub mod terminal_text;
pub mod top;
