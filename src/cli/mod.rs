//! Command-line definitions (clap). One file per command; no business logic here: each
//! command parses its arguments and calls the library.

use clap::{Parser, Subcommand};

use crate::diag::{Exit, Result};

pub mod check;
pub mod common;
pub mod job;
pub mod job_runs;
pub mod run;
pub mod run_k8s;

/// Launch, watch and debug NeMo-RL and NeMo Gym runs on Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "nrl", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load, render and validate a recipe + infra pair; never contacts a cluster.
    Check(check::CheckArgs),
    /// Submit, list, follow and stop Ray jobs through a Ray dashboard (no Python needed).
    Job(job::JobArgs),
    /// Run a recipe on Kubernetes (RayJob or RayCluster), locally, or on a Ray dashboard.
    Run(run::RunArgs),
    /// Run the launch checklist for a run (objects, job status, W&B, generation, teardown).
    Verify(job_runs::VerifyArgs),
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<Exit> {
    match cli.command {
        Command::Check(a) => check::run(a),
        Command::Job(args) => job::run(args),
        Command::Run(args) => run::run(args),
        Command::Verify(args) => job_runs::run_verify(args),
    }
}
