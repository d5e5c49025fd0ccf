//! Orchestration: composes config, render, k8s and ray into the things users run.

pub mod check;
pub mod ephemeral;
pub mod follow;
pub mod logscan;
pub mod owned;
pub mod progress;
pub mod rayjob;
