//! Orchestration: composes config, render, k8s and ray into the things users run.

pub mod check;
pub mod cluster;
pub mod daemon;
pub mod dashboard;
pub mod dev;
pub mod health;
pub mod inspect;
pub mod local;
pub mod logs;
pub mod process;
pub mod progress;
pub mod ray_run;
pub mod rayjob;
pub mod records;
pub mod run;
pub mod runid;
pub mod stage;

pub use progress::Progress;
