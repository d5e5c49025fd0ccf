//! Orchestration: composes config, render, k8s and ray into the things users run,
//! grouped by what runs: `rayjob/` (the ephemeral RayJob of `nrl run`), `raycluster/`
//! (long-lived RayClusters: `cluster up|down`, `run --raycluster`, submitters, daemons),
//! `local/` (the local executor), `records/` (run ids, run records and their cluster
//! copies); beside them what several of those share (dashboards, logs, staging, the
//! checklist, output).

pub mod attach;
pub mod check;
pub mod checks;
pub mod collect;
pub mod dashboard;
pub mod diff;
pub mod follow;
pub mod health;
pub mod inspect;
pub mod local;
pub mod logs;
pub mod logscan;
pub mod output;
pub mod output_file;
pub mod owned;
pub mod progress;
pub mod ray_run;
pub mod raycluster;
pub mod rayjob;
pub mod records;
pub mod stage;
pub mod verify;

pub use progress::Progress;
