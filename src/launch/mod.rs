//! Orchestration: composes config, render, k8s and ray into the things users run.

pub mod check;
pub mod cluster;
pub mod daemon;
pub mod dashboard;
pub mod health;
pub mod inspect;
pub mod logs;
pub mod progress;
pub mod rayjob;

pub use progress::Progress;
