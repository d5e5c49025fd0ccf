//! Orchestration: composes config, render, k8s and ray into the things users run.

pub mod attach;
pub mod check;
pub mod cluster;
pub mod cluster_record;
pub mod daemon;
pub mod dashboard;
pub mod ephemeral;
pub mod follow;
pub mod health;
pub mod inspect;
pub mod k8s_run;
pub mod local;
pub mod logs;
pub mod logscan;
pub mod longlived;
pub mod output;
pub mod output_file;
pub mod owned;
pub mod process;
pub mod progress;
pub mod ray_run;
pub mod rayjob;
pub mod reaper;
pub mod records;
pub mod run;
pub mod runid;
pub mod stage;
pub mod submit;
pub mod verify;

pub use progress::Progress;
