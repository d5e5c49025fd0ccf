//! `nrl job …`: submit, list, inspect, follow and stop Ray jobs through a dashboard's Job
//! REST API. No Python, no `ray` CLI. Parsing and printing only; the work is in
//! `crate::ray`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use tokio_util::sync::CancellationToken;

use super::common::Output;
use super::value_parsers::{
    parse_duration, parse_env_arg, parse_metadata_arg, parse_resources_arg,
};
use crate::diag::{Diag, Exit, Result};
use crate::ray::follow::CODE_OUTPUT_CLOSED;
use crate::ray::package::mib;
use crate::ray::submit::entrypoint_from_words;
use crate::ray::{
    FollowOptions, JobDetails, JobSpec, JobStatus, PackageOptions, RayClient, RayClientOptions,
    SubmitRequest, UploadSet, follow_job, stop_job, submit_job,
};
use crate::terminal_text::{self, Wrap};

/// Submit, list, inspect, follow and stop Ray jobs.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  nrl job submit --address http://127.0.0.1:8265 --working-dir . -- python main.py
  nrl job list --address http://127.0.0.1:8265
  RAY_ADDRESS=http://127.0.0.1:8265 nrl job logs raysubmit_abc -f")]
pub struct JobArgs {
    #[command(subcommand)]
    pub command: JobCommand,
}

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Submit a job and follow its log until it ends (exit code from the job's status).
    #[command(after_help = "\
Exit codes: 0 SUCCEEDED (or --no-wait), 1 FAILED or STOPPED, 2 bad input, 3 Ray API error,
130 Ctrl-C (the job keeps running).

Examples:
  nrl job submit --address http://127.0.0.1:8265 -- python -c 'print(42)'
  nrl job submit --working-dir ./proj --env WANDB_MODE=offline -- python train.py --lr 1e-4
  nrl job submit --submission-id sweep-7 --no-wait -- 'bash run.sh && echo done'")]
    Submit(SubmitArgs),
    /// List the jobs the dashboard knows.
    #[command(
        after_help = "Examples:\n  nrl job list --address http://127.0.0.1:8265\n  nrl job list --address http://127.0.0.1:8265 -o json"
    )]
    List(ListArgs),
    /// Show one job's status and details.
    #[command(
        after_help = "Example:\n  nrl job status raysubmit_abc --address http://127.0.0.1:8265"
    )]
    Status(StatusArgs),
    /// Print a job's log; with -f, follow it until the job ends.
    #[command(after_help = "\
With -f the exit code comes from the job's final status (0 SUCCEEDED, 1 FAILED/STOPPED);
the stream is reopened if it drops, without printing anything twice.

Without --address the id is a run id from `nrl run`: its record (this machine's, else the
copy in the cluster's namespace) says where the run is — a RayJob, a long-lived RayCluster
(portForward or exec submitter) or a Ray dashboard.

Examples:
  nrl job logs quickstart-20260101-120000-ab12 -f
  nrl job logs quickstart-20260101-120000-ab12 --context prod -n rl-team
  nrl job logs raysubmit_abc --address http://127.0.0.1:8265
  nrl job logs raysubmit_abc --address http://127.0.0.1:8265 -f")]
    Logs(LogsArgs),
    /// Stop a job and wait until Ray reports it stopped.
    #[command(after_help = "\
Without --address the id is a run id from `nrl run`: Ray runs are stopped through their
cluster's dashboard; exec runs get SIGTERM (SIGKILL with --force) on their own process
group only.

Examples:
  nrl job stop quickstart-20260101-120000-ab12
  nrl job stop grpo-20260101-120000-ab12 --force
  nrl job stop raysubmit_abc --address http://127.0.0.1:8265")]
    Stop(StopArgs),
}

/// Where the Ray dashboard is and how to talk to it.
#[derive(Debug, Clone, Args)]
pub struct RayConnectionArgs {
    /// Ray dashboard URL (e.g. http://127.0.0.1:8265); `host:port` means http. `logs` and
    /// `stop` without it take a run id and find the run from its record.
    #[arg(long, env = "RAY_ADDRESS", hide_env_values = true, value_name = "URL")]
    pub address: Option<String>,
    /// Token for dashboards with token auth, sent as `Authorization: Bearer TOKEN`.
    #[arg(
        long,
        env = "RAY_AUTH_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
    /// Deadline for each API call, retries included (e.g. 30s, 2m, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    pub connection: RayConnectionArgs,
    /// Directory uploaded as the job's working directory (its contents at the root;
    /// __pycache__, .git, .venv, *.pyc and similar are left out; at most 100 MiB).
    #[arg(long, value_name = "DIR")]
    pub working_dir: Option<PathBuf>,
    /// Environment variable for the job, repeatable: --env NAME=value.
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = parse_env_arg)]
    pub env: Vec<(String, String)>,
    /// Metadata attached to the job, repeatable: --metadata owner=me.
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_metadata_arg)]
    pub metadata: Vec<(String, String)>,
    /// Submission id (default: Ray generates raysubmit_…).
    #[arg(long, value_name = "ID")]
    pub submission_id: Option<String>,
    /// Print the submission id and return instead of following the log.
    #[arg(long)]
    pub no_wait: bool,
    /// CPUs reserved for the entrypoint process.
    #[arg(long, value_name = "N")]
    pub entrypoint_num_cpus: Option<f64>,
    /// GPUs reserved for the entrypoint process.
    #[arg(long, value_name = "N")]
    pub entrypoint_num_gpus: Option<f64>,
    /// Memory reserved for the entrypoint process, in bytes.
    #[arg(long, value_name = "BYTES")]
    pub entrypoint_memory: Option<u64>,
    /// Custom resources for the entrypoint, as JSON: '{"accel": 1}'.
    #[arg(long, value_name = "JSON", value_parser = parse_resources_arg)]
    pub entrypoint_resources: Option<std::collections::BTreeMap<String, f64>>,
    /// The command to run, after `--`. One word is used as-is (a whole shell command);
    /// several words are shell-quoted and joined.
    #[arg(last = true, required = true, num_args = 1.., value_name = "ENTRYPOINT")]
    pub entrypoint: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub connection: RayConnectionArgs,
    /// Output format; json and yaml carry the fields of Ray's Job API as it sends them
    /// (`submission_id`, `status`, `start_time`, … in epoch milliseconds).
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: Output,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Submission id (or Ray job id).
    #[arg(add = super::completions::run_ids())]
    pub id: String,
    #[command(flatten)]
    pub connection: RayConnectionArgs,
    /// Output format; json and yaml carry the fields of Ray's Job API.
    #[arg(short, long, value_enum, default_value = "table")]
    pub output: Output,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// A run id (from `nrl run`), or with --address a submission id (or Ray job id).
    #[arg(add = super::completions::run_ids())]
    pub id: String,
    #[command(flatten)]
    pub connection: RayConnectionArgs,
    /// For a run id: the cluster to find it on (default: the context and namespace in the
    /// run's record on this machine, else the current context).
    #[command(flatten)]
    pub lookup: super::common::KubeArgs,
    /// Follow the log until the job ends; the exit code comes from its final status.
    #[arg(short, long)]
    pub follow: bool,
}

#[derive(Debug, Args)]
pub struct StopArgs {
    /// A run id (from `nrl run`), or with --address a submission id (or Ray job id).
    #[arg(add = super::completions::run_ids())]
    pub id: String,
    #[command(flatten)]
    pub connection: RayConnectionArgs,
    /// For a run id: the cluster to find it on (default: the context and namespace in the
    /// run's record on this machine, else the current context).
    #[command(flatten)]
    pub lookup: super::common::KubeArgs,
    /// Exec runs: SIGKILL instead of SIGTERM. Also stops a run whose RayJob or RayCluster
    /// is labelled `nrl-k8s/owner` as another user's, or has no such label.
    #[arg(long)]
    pub force: bool,
    /// How long to wait for the job to reach a terminal state.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub stop_timeout: Duration,
}

/// Run `nrl job …`.
pub fn run(args: JobArgs) -> Result<Exit> {
    super::common::block_on(async move {
        let cancel = super::common::cancel_on_signals()?;
        match args.command {
            JobCommand::Submit(a) => submit(a, &cancel).await,
            JobCommand::List(a) => list(a).await,
            JobCommand::Status(a) => status(a).await,
            JobCommand::Logs(a) => logs(a, &cancel).await,
            JobCommand::Stop(a) => stop(a).await,
        }
    })
}

fn client(conn: &RayConnectionArgs) -> Result<RayClient> {
    let Some(address) = conn.address.as_deref() else {
        return Err(Diag::new(
            "nrl::ray::address",
            "no Ray dashboard address: pass --address URL or set RAY_ADDRESS",
        )
        .help("e.g. --address http://127.0.0.1:8265 (a `kubectl port-forward` or `nrl cluster dashboard`)"));
    };
    RayClient::new(
        address,
        RayClientOptions {
            token: conn.token.clone(),
            timeout: conn.timeout,
            ..RayClientOptions::default()
        },
    )
}

async fn submit(args: SubmitArgs, cancel: &CancellationToken) -> Result<Exit> {
    // Everything that can be wrong locally is checked before the first request.
    let working_dir = match &args.working_dir {
        Some(dir) => {
            let set = UploadSet::from_directory(dir)?;
            let options = PackageOptions::default();
            set.check_size(options.limit)?;
            Some(set)
        }
        None => None,
    };
    let client = client(&args.connection)?;
    let mut request = SubmitRequest::new(entrypoint_from_words(&args.entrypoint));
    request.submission_id = args.submission_id.clone();
    request
        .runtime_env
        .env_vars
        .extend(args.env.iter().cloned());
    request.metadata.extend(args.metadata.iter().cloned());
    request.entrypoint_num_cpus = args.entrypoint_num_cpus;
    request.entrypoint_num_gpus = args.entrypoint_num_gpus;
    request.entrypoint_memory = args.entrypoint_memory;
    request.entrypoint_resources = args.entrypoint_resources.clone();
    let spec = JobSpec {
        request,
        working_dir,
        package: PackageOptions::default(),
    };
    let submitted = submit_job(&client, spec).await?;
    if let Some(pkg) = &submitted.package {
        if pkg.uploaded {
            crate::errln!(
                "uploaded working_dir: {} files, {} ({} zipped) as {}",
                pkg.files,
                mib(pkg.content_bytes),
                mib(pkg.archive_bytes.unwrap_or(0)),
                pkg.uri
            );
        } else {
            crate::errln!(
                "working_dir unchanged, already on the cluster as {} (upload skipped)",
                pkg.uri
            );
        }
    }
    let id = submitted.submission_id;
    crate::errln!("submitted job {id} to {}", client.address());
    if args.no_wait {
        crate::outln!("{id}");
        crate::errln!("follow it with: {}", reattach_command(&client, &id));
        return Ok(Exit::Ok);
    }
    follow_until_end(&client, &id, cancel).await
}

async fn list(args: ListArgs) -> Result<Exit> {
    let client = client(&args.connection)?;
    let jobs = client.list_jobs().await?;
    if let Some(text) = args.output.data(&jobs) {
        crate::outln!("{text}");
        return Ok(Exit::Ok);
    }
    if jobs.is_empty() {
        crate::errln!("no Ray jobs at {}", client.address());
        return Ok(Exit::Ok);
    }
    crate::outln!("{}", jobs_table(&jobs, std::io::stdout().is_terminal()));
    Ok(Exit::Ok)
}

async fn status(args: StatusArgs) -> Result<Exit> {
    let client = client(&args.connection)?;
    let job = client.status(&args.id).await?;
    match args.output.data(&job) {
        Some(text) => crate::outln!("{text}"),
        None => crate::out!("{}", describe(&job)),
    }
    Ok(Exit::Ok)
}

async fn logs(args: LogsArgs, cancel: &CancellationToken) -> Result<Exit> {
    if args.connection.address.is_none() {
        return super::job_runs::logs(&args.id, &args.lookup, args.follow).await;
    }
    let client = client(&args.connection)?;
    if args.follow {
        return follow_until_end(&client, &args.id, cancel).await;
    }
    client.logs_to(&args.id, &mut tokio::io::stdout()).await?;
    Ok(Exit::Ok)
}

async fn stop(args: StopArgs) -> Result<Exit> {
    if args.connection.address.is_none() {
        return super::job_runs::stop(&args.id, &args.lookup, args.force).await;
    }
    let client = client(&args.connection)?;
    let outcome = stop_job(&client, &args.id, args.stop_timeout).await?;
    if outcome.was_running {
        crate::errln!("stopped job {}: {}", args.id, outcome.details.status);
    } else {
        crate::errln!(
            "job {} had already ended: {}",
            args.id,
            outcome.details.status
        );
    }
    Ok(Exit::Ok)
}

/// Stream the log until the job ends, or until Ctrl-C detaches (the job keeps running).
async fn follow_until_end(
    client: &RayClient,
    id: &str,
    cancel: &CancellationToken,
) -> Result<Exit> {
    let mut out = std::io::stdout();
    let options = FollowOptions::default();
    tokio::select! {
        finished = follow_job(client, id, &mut out, &options) => match finished {
            Ok(job) => {
                crate::errln!("{}", final_line(id, &job));
                Ok(job.status.exit())
            }
            // The reader went away (`| head`): nothing left to show.
            Err(e) if e.code == CODE_OUTPUT_CLOSED => Ok(Exit::Ok),
            Err(e) => Err(e),
        },
        _ = cancel.cancelled() => {
            crate::errln!("\ninterrupted: stopped following job {id}; it keeps running.");
            crate::errln!("re-attach: {}", reattach_command(client, id));
            crate::errln!("stop it:   nrl job stop {id} --address {}", client.address());
            Ok(Exit::Interrupted)
        }
    }
}

fn reattach_command(client: &RayClient, id: &str) -> String {
    format!("nrl job logs {id} --address {} -f", client.address())
}

fn final_line(id: &str, job: &JobDetails) -> String {
    match job.status {
        JobStatus::Succeeded => format!("job {id} SUCCEEDED"),
        JobStatus::Stopped => format!("job {id} STOPPED"),
        status => {
            let message = terminal_text::first_line(job.message.as_deref().unwrap_or(""));
            if message.is_empty() {
                format!("job {id} {status}")
            } else {
                format!("job {id} {status}: {message}")
            }
        }
    }
}

/// Table of jobs: id, status, start, end, entrypoint (first line, truncated); cells
/// escaped, since anyone who can submit a job writes its entrypoint.
pub fn jobs_table(jobs: &[JobDetails], terminal: bool) -> String {
    let rows = jobs
        .iter()
        .map(|job| {
            let id = match (&job.submission_id, &job.job_id) {
                (Some(s), _) => s.clone(),
                (None, Some(j)) => format!("{j} (driver)"),
                (None, None) => "-".to_string(),
            };
            vec![
                id,
                job.status.to_string(),
                time_cell(job.start_time),
                time_cell(job.end_time),
                truncate_entrypoint(job.entrypoint.as_deref().unwrap_or(""), 60),
            ]
        })
        .collect();
    let wrap = if terminal {
        Wrap::ToTerminal
    } else {
        Wrap::Never
    };
    terminal_text::plain_table(&["ID", "STATUS", "START", "END", "ENTRYPOINT"], rows, wrap)
}

fn describe(job: &JobDetails) -> String {
    let mut out = String::new();
    // Every value but the times comes from the dashboard: escaped, one line each.
    let mut line =
        |k: &str, v: &str| out.push_str(&format!("{k:<12}{}\n", terminal_text::escape(v)));
    line("id:", job.id().unwrap_or("-"));
    line("status:", job.status.as_str());
    if let Some(kind) = &job.job_type {
        line("type:", kind);
    }
    line("entrypoint:", job.entrypoint.as_deref().unwrap_or("-"));
    line("start:", &time_cell(job.start_time));
    line("end:", &time_cell(job.end_time));
    if let Some(code) = job.driver_exit_code {
        line("exit code:", &code.to_string());
    }
    if let Some(kind) = &job.error_type {
        line("error:", kind);
    }
    if let Some(message) = job.message.as_deref().filter(|m| !m.is_empty()) {
        line("message:", message.lines().next().unwrap_or(""));
    }
    out
}

fn time_cell(epoch_ms: Option<i64>) -> String {
    let Some(ms) = epoch_ms.filter(|ms| *ms > 0) else {
        return "-".to_string();
    };
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(ts) => ts
            .to_zoned(jiff::tz::TimeZone::system())
            .strftime("%Y-%m-%d %H:%M:%S")
            .to_string(),
        Err(_) => ms.to_string(),
    }
}

fn truncate_entrypoint(entrypoint: &str, max: usize) -> String {
    let first = entrypoint.lines().next().unwrap_or("");
    let more_lines = entrypoint.lines().nth(1).is_some();
    if first.chars().count() <= max && !more_lines {
        return first.to_string();
    }
    let mut cut: String = first.chars().take(max).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entrypoints_are_truncated_to_their_first_line() {
        assert_eq!(truncate_entrypoint("python a.py", 60), "python a.py");
        assert_eq!(
            truncate_entrypoint("export A=1\npython a.py", 60),
            "export A=1…"
        );
        assert_eq!(
            truncate_entrypoint(&"x".repeat(70), 60),
            format!("{}…", "x".repeat(60))
        );
    }

    #[test]
    fn table_handles_driver_jobs_and_missing_fields() {
        let jobs: Vec<JobDetails> = serde_json::from_str(
            r#"[{"submission_id": "nrl-1", "status": "RUNNING", "entrypoint": "python a.py",
                 "start_time": 1795982326574},
                {"type": "DRIVER", "job_id": "02000000", "submission_id": null,
                 "status": "SUCCEEDED", "entrypoint": ""}]"#,
        )
        .unwrap();
        let table = jobs_table(&jobs, false);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[0].contains("ID") && lines[0].contains("ENTRYPOINT"));
        assert!(lines[1].contains("nrl-1") && lines[1].contains("RUNNING"));
        assert!(lines[1].contains("python a.py"));
        assert!(lines[2].contains("02000000 (driver)") && lines[2].contains("SUCCEEDED"));
    }

    #[test]
    fn final_lines_name_the_outcome() {
        let job: JobDetails = serde_json::from_str(
            r#"{"status": "FAILED", "message": "Job entrypoint command failed with exit code 3, last available logs:\nboom"}"#,
        )
        .unwrap();
        assert_eq!(
            final_line("j", &job),
            "job j FAILED: Job entrypoint command failed with exit code 3, last available logs:"
        );
    }
}
