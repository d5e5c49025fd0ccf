//! NeMo Gym benchmark runs as Kubernetes Jobs (ref-nemo-gym-k8s): the submit config
//! ([`config`]), one Job per benchmark with vLLM sidecars and a driver ([`render`],
//! [`plan`]), and the run's lifecycle on a cluster: submit, watch, status, logs, cancel.

pub mod config;
pub mod hydra_args;
pub mod names;
pub mod ops;
pub mod plan;
pub mod quantity;
pub mod record;
pub mod render;
pub mod script;
pub mod session;
pub mod state;
pub mod table;
pub mod view;

pub use config::{GymLoadRequest, LoadedGym, SubmitConfig, load, load_text};
pub use plan::{PlannedJob, RunMeta, RunPlan, plan};

#[cfg(test)]
mod tests_hydra_oracle;
#[cfg(test)]
mod tests_render;
#[cfg(test)]
mod testutil;
