//! Command-line definitions (clap). One file per command; no business logic here: each
//! command parses its arguments and calls the library.

use clap::{Parser, Subcommand};

use crate::diag::{Exit, Result};

pub mod check;
pub mod cluster;
pub mod common;
pub mod completions;
pub mod dashboard;
pub mod dev;
pub mod diagnose;
pub mod diff;
pub mod doctor;
pub mod gym;
pub mod job;
pub mod job_runs;
pub mod logs;
pub mod repl;
pub mod run;
pub mod run_k8s;
pub mod runs;
pub mod schema;
pub mod script;
pub mod status;
pub mod top;
pub mod value_parsers;

/// The widest help text gets: wider terminals leave the lines at this length, so
/// examples written to fit are never wrapped.
pub const HELP_WIDTH: usize = 100;

/// Launch, watch and debug NeMo-RL and NeMo Gym runs on Kubernetes.
#[derive(Debug, Parser)]
#[command(name = "nrl", version, about, long_about = None, propagate_version = true,
          max_term_width = HELP_WIDTH)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load, render and validate a recipe + infra pair; never contacts a cluster.
    Check(check::CheckArgs),
    /// Bring long-lived RayClusters and Deployments up and down; list them; open a dashboard.
    Cluster(cluster::ClusterArgs),
    /// Each role's RayCluster state, head and worker pods, and daemon job.
    Status(status::StatusArgs),
    /// A role's daemon job log, or its head or worker pod's log.
    Logs(logs::LogsArgs),
    /// Check a recipe + infra pair against the launch playbook's rules, offline and
    /// against the cluster (read-only).
    Doctor(doctor::DoctorArgs),
    /// What went wrong with a launched run: pods, events, nodes, RayJob/RayCluster
    /// states and the driver log (read-only).
    Diagnose(diagnose::DiagnoseArgs),
    /// What changed between two runs, or a run and a recipe: recipe, infra, objects and
    /// code, key by key, with the line that set each side.
    Diff(diff::DiffArgs),
    /// Submit, list, follow and stop Ray jobs through a Ray dashboard (no Python needed).
    Job(job::JobArgs),
    /// Run a recipe on Kubernetes (RayJob or RayCluster), locally, or on a Ray dashboard.
    Run(run::RunArgs),
    /// Every recorded run, newest first: where, status (refreshed), age, W&B URL.
    Runs(runs::RunsArgs),
    /// A live view of your runs: state, pods, events, driver log and training progress.
    Top(top::TopArgs),
    /// Run the launch checklist for a run (objects, job status, W&B, generation, teardown).
    Verify(job_runs::VerifyArgs),
    /// Your personal CPU pod in the cluster: secrets, connect, stop.
    Dev(dev::DevArgs),
    /// Run a Rhai playbook (`--dry-run` prints the plan instead of acting).
    Script(script::ScriptArgs),
    /// Run NeMo Gym benchmarks as Kubernetes Jobs: render, submit, status, logs, cancel.
    Gym(gym::GymArgs),
    /// An interactive Rhai console onto the same built-ins (completion, hints, history).
    Repl(repl::ReplArgs),
    /// Print the shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(completions::CompletionsArgs),
    /// Man pages: nrl(1) on stdout, or every command's page into a directory.
    Man(completions::ManArgs),
    /// The JSON Schema of an infra file, a Gym config or the user defaults, for editors.
    Schema(schema::SchemaArgs),
}

/// The cluster flags every cluster command takes, with a value each.
const KUBE_FLAGS: &[&str] = &[
    "--context",
    "-n",
    "--namespace",
    "--kubeconfig",
    "--request-timeout",
    "--watch-timeout",
];

/// kubectl lets cluster flags come first (`kubectl --context prod -n team get pods`);
/// so does nrl: flags of [`KUBE_FLAGS`] before the command are moved to just after the
/// command's path (`nrl --context prod cluster list` is `nrl cluster list --context
/// prod`), where the command defines them. Anything else is left as it is, so clap
/// reports what does not parse.
pub fn hoist_cluster_flags(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let Some((program, rest)) = args.split_first() else {
        return args;
    };
    let mut hoisted = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let Some(word) = rest[i].to_str() else { break };
        let flag = word.split_once('=').map_or(word, |(f, _)| f);
        if !KUBE_FLAGS.contains(&flag) {
            break;
        }
        hoisted.push(rest[i].clone());
        if !word.contains('=') && i + 1 < rest.len() {
            hoisted.push(rest[i + 1].clone());
            i += 1;
        }
        i += 1;
    }
    if hoisted.is_empty() {
        return args;
    }
    // The command path: the words after the flags that name a subcommand, level by level.
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut end = i;
    while let Some(word) = rest.get(end).and_then(|w| w.to_str()) {
        let Some(sub) = cmd.find_subcommand(word).cloned() else {
            break;
        };
        cmd = sub;
        end += 1;
    }
    let mut out = vec![program.clone()];
    out.extend_from_slice(&rest[i..end]);
    out.extend(hoisted);
    out.extend_from_slice(&rest[end..]);
    out
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<Exit> {
    match cli.command {
        Command::Check(a) => check::run(a),
        Command::Cluster(args) => cluster::run(args),
        Command::Status(args) => status::run(args),
        Command::Logs(args) => logs::run(args),
        Command::Doctor(a) => doctor::run(a),
        Command::Diagnose(a) => diagnose::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Job(args) => job::run(args),
        Command::Run(args) => run::run(args),
        Command::Runs(args) => runs::run(args),
        Command::Top(args) => top::run(args),
        Command::Verify(args) => job_runs::run_verify(args),
        Command::Dev(args) => dev::run(args),
        Command::Script(args) => script::run(args),
        Command::Gym(args) => gym::run(args),
        Command::Repl(args) => repl::run(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
        Command::Schema(args) => schema::run(args),
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::Cli;

    /// Every command builds: clap's own consistency checks pass, and each of nrl's leaf
    /// commands shows an example (`after_help`).
    #[test]
    fn every_command_builds_and_has_an_example() {
        let mut cli = Cli::command();
        cli.build();
        cli.clone().debug_assert();
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            // clap's generated `help` subcommands are not ours to document.
            if cmd.get_name() == "help" {
                return;
            }
            let path = format!("{path} {}", cmd.get_name());
            if cmd.has_subcommands() {
                for sub in cmd.get_subcommands() {
                    walk(sub, &path, missing);
                }
            } else if cmd.get_after_help().is_none() {
                missing.push(path);
            }
        }
        let mut missing = Vec::new();
        for sub in cli.get_subcommands() {
            walk(sub, "nrl", &mut missing);
        }
        assert!(missing.is_empty(), "no example in: {missing:?}");
    }

    /// Help is wrapped at the terminal's width (at most 100 columns): an example line
    /// longer than that would be broken in the middle of a command, and a copied line
    /// would run a different command. Examples fit in 98 columns (2 of indent).
    #[test]
    fn cluster_flags_before_the_command_move_after_its_path() {
        let hoist = |words: &[&str]| -> Vec<String> {
            super::hoist_cluster_flags(words.iter().map(Into::into).collect())
                .into_iter()
                .map(|w| w.to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(
            hoist(&[
                "nrl",
                "--context",
                "prod",
                "-n",
                "team-a",
                "cluster",
                "list"
            ]),
            [
                "nrl",
                "cluster",
                "list",
                "--context",
                "prod",
                "-n",
                "team-a"
            ]
        );
        assert_eq!(
            hoist(&["nrl", "--namespace=x", "job", "logs", "r-1", "-f"]),
            ["nrl", "job", "logs", "--namespace=x", "r-1", "-f"]
        );
        // Nothing before the command, or another flag first: unchanged.
        for words in [
            &["nrl", "runs", "-n", "x"][..],
            &["nrl", "--version"],
            &["nrl", "--context"],
        ] {
            assert_eq!(hoist(words), words);
        }
        let cli =
            Cli::try_parse_from(hoist(&["nrl", "-n", "team-a", "runs", "--no-refresh"])).unwrap();
        match cli.command {
            super::Command::Runs(a) => assert_eq!(a.kube.namespace.as_deref(), Some("team-a")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn help_examples_fit_on_one_line() {
        let mut cli = Cli::command();
        cli.build();
        fn walk(cmd: &clap::Command, long: &mut Vec<String>) {
            if let Some(help) = cmd.get_after_help() {
                for line in help.to_string().lines() {
                    let command = line.trim_start();
                    let is_example = command.starts_with("nrl ") || command.contains(" nrl ");
                    if is_example && line.chars().count() > super::HELP_WIDTH - 2 {
                        long.push(line.to_string());
                    }
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, long);
            }
        }
        let mut long = Vec::new();
        walk(&cli, &mut long);
        assert!(long.is_empty(), "examples that would wrap: {long:#?}");
    }
}
