//! Orchestration: composes config, render, k8s and ray into the things users run.

pub mod check;
pub mod rayjob;
pub mod dev;
