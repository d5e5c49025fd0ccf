//! Daemon submission (ref-orchestration §4.5 with DESIGN §3): a role's long-running Ray
//! job (a Gym server, a generation server) submitted to its RayCluster's dashboard.
//!
//! Idempotency is keyed on the newest job named `<id>` or `<id>-<unix seconds>`: one
//! that is running, pending or succeeded is kept; a failed or stopped one needs
//! `--replace`, which stops the newest if it is still in flight and submits
//! `<id>-<now>`. A daemon without a configured `submissionId` uses `<cluster>-daemon`,
//! so it is not resubmitted on every run.
//!
//! Its `env` travels as `export` lines in front of the entrypoint, like training's (Ray
//! refuses to merge a job's `runtime_env.env_vars` with a cluster-level runtime env), and
//! its code follows the run's code source: uploaded from the repo root, or (code in the
//! image or on Lustre) already at `code_path`, where the entrypoint starts (ref §11 B5).

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::layers::LoadedConfig;
use crate::config::schema::{ClusterSpec, DaemonSpec, Role};
use crate::diag::{Diag, Result};
use crate::k8s::K8s;
use crate::ray::{
    DEFAULT_UPLOAD_PATHS, JobDetails, JobSpec, JobStatus, RayClient, SubmitRequest, UploadSet,
    stop_job, submit_job,
};

use crate::launch::dashboard::dashboard_session;
use crate::launch::health::health_check;
use crate::launch::progress::Progress;
use crate::launch::raycluster::cluster_of;
use crate::render::rayjob::{check_env_name, shell_quote};

/// Options of [`submit_daemon`].
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    /// Stop the newest daemon job if in flight and submit a fresh `<id>-<ts>`.
    pub replace: bool,
    /// Where the daemon's `rayUploadPaths` are taken from.
    pub repo_root: PathBuf,
    /// The code is already on the pods here (codeSource image/lustre): no upload, the
    /// entrypoint starts in this directory. `None` uploads.
    pub code_path: Option<String>,
}

/// The infra's code location for daemons: `launch.codePath` when `launch.codeSource` is
/// image or lustre, `None` (upload) otherwise.
pub fn code_path_of(cfg: &LoadedConfig) -> Option<String> {
    match cfg.infra.launch.code_source {
        crate::config::schema::CodeSource::Upload => None,
        _ => cfg.infra.launch.code_path.clone().filter(|p| !p.is_empty()),
    }
}

/// What a daemon runs: its `env` exported, a `cd` into `code_path` when the code is on
/// the pods, then its entrypoint; and the working_dir to upload when it is not (the
/// daemon's `rayUploadPaths`, else `launch`'s, else the default list).
pub fn daemon_job(
    cfg: &LoadedConfig,
    daemon: &DaemonSpec,
    opts: &DaemonOptions,
) -> Result<(String, Option<UploadSet>)> {
    let mut entrypoint = String::new();
    for (k, v) in &daemon.env {
        check_env_name(k)?;
        entrypoint.push_str(&format!("export {k}={}\n", shell_quote(v)));
    }
    let working_dir = match &opts.code_path {
        Some(dir) => {
            entrypoint.push_str(&format!("cd {}\n", shell_quote(dir)));
            None
        }
        None => {
            let paths: Vec<String> = daemon
                .ray_upload_paths
                .clone()
                .filter(|p| !p.is_empty())
                .or_else(|| cfg.infra.launch.ray_upload_paths.clone())
                .unwrap_or_else(|| DEFAULT_UPLOAD_PATHS.iter().map(|s| s.to_string()).collect());
            let set = UploadSet::from_include_paths(&opts.repo_root, &paths)?;
            (!set.is_empty()).then_some(set)
        }
    };
    entrypoint.push_str(&daemon.entrypoint);
    Ok((entrypoint, working_dir))
}

/// What [`submit_daemon`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonOutcome {
    pub submission_id: String,
    /// `false` when a live daemon was kept.
    pub submitted: bool,
}

/// The id daemons of this cluster are keyed on.
pub fn daemon_base_id(cluster: &ClusterSpec, daemon: &DaemonSpec) -> String {
    daemon
        .submission_id
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{}-daemon", cluster.name))
}

/// Whether `id` is `base` or `base-<digits>`.
pub fn is_daemon_id(id: &str, base: &str) -> bool {
    id == base
        || id
            .strip_prefix(base)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|ts| !ts.is_empty() && ts.bytes().all(|b| b.is_ascii_digit()))
}

/// The newest job (by start time; a missing one counts as 0) named `base` or
/// `base-<ts>`. Driver jobs (no submission id) never match.
pub fn latest_daemon_job<'a>(jobs: &'a [JobDetails], base: &str) -> Option<&'a JobDetails> {
    jobs.iter()
        .filter(|j| {
            j.submission_id
                .as_deref()
                .is_some_and(|id| is_daemon_id(id, base))
        })
        .max_by_key(|j| (j.start_time.unwrap_or(0), j.submission_id.clone()))
}

/// The newest daemon job of a role on a live dashboard: (id, status).
pub async fn daemon_status(client: &RayClient, base: &str) -> Result<Option<(String, JobStatus)>> {
    let jobs = client.list_jobs().await?;
    Ok(latest_daemon_job(&jobs, base).and_then(|j| Some((j.submission_id.clone()?, j.status))))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Submit the role's daemon (no-op without one; `Ok(None)`). The RayCluster must be
/// ready. Runs the daemon's health check afterwards when it has a `healthCheckUrl`.
pub async fn submit_daemon(
    k8s: &K8s,
    cfg: &LoadedConfig,
    role: Role,
    opts: &DaemonOptions,
    progress: &Progress,
) -> Result<Option<DaemonOutcome>> {
    let cluster = cluster_of(cfg, role)?;
    let Some(daemon) = &cluster.daemon else {
        return Ok(None);
    };
    let tag = role.as_str();
    let base = daemon_base_id(cluster, daemon);
    let session = dashboard_session(k8s, &cfg.infra.namespace, &cluster.name).await?;
    let client = &session.client;
    let mut submission_id = base.clone();
    match (daemon_status(client, &base).await?, opts.replace) {
        (Some((id, status)), false) => match status {
            JobStatus::Failed | JobStatus::Stopped => {
                return Err(Diag::api(
                    "nrl::daemon::failed",
                    format!("daemon {id} is {status}"),
                )
                .with_exit(crate::diag::Exit::Failed)
                .help(format!(
                    "re-run with --replace (or bump infra.kuberay.{tag}.daemon.submissionId); `nrl logs … --role {tag} --source daemon` shows why"
                )));
            }
            _ => {
                progress.line(format!(
                    "[{tag}] daemon {id} already {status} — skipping submit"
                ));
                return Ok(Some(DaemonOutcome {
                    submission_id: id,
                    submitted: false,
                }));
            }
        },
        (Some((id, status)), true) => {
            if !status.is_terminal() {
                progress.line(format!("[{tag}] --replace: stopping {id}"));
                match stop_job(client, &id, Duration::from_secs(60)).await {
                    Ok(s) => {
                        progress.line(format!("[{tag}] previous job {id} → {}", s.details.status))
                    }
                    Err(e) => progress.line(format!("[{tag}] warning: stop failed: {}", e.message)),
                }
            }
            submission_id = format!("{base}-{}", unix_now());
            progress.line(format!(
                "[{tag}] --replace: using fresh submissionId {submission_id}"
            ));
        }
        (None, _) => {}
    }
    let (entrypoint, working_dir) = daemon_job(cfg, daemon, opts)?;
    if let Some(set) = &working_dir {
        progress.line(format!(
            "[{tag}] staging working_dir for daemon ({} files)",
            set.file_count()
        ));
    }
    let mut request = SubmitRequest::new(entrypoint);
    request.submission_id = Some(submission_id.clone());
    progress.line(format!("[{tag}] submitting daemon via {}", session.url));
    let submitted = submit_job(
        client,
        JobSpec {
            request,
            working_dir,
            ..JobSpec::default()
        },
    )
    .await?;
    progress.line(format!(
        "[{tag}] daemon submitted as job {}",
        submitted.submission_id
    ));
    if let Some(url) = &daemon.health_check_url {
        let budget = Duration::from_secs(daemon.health_check_timeout_s.max(0) as u64);
        health_check(k8s, url, budget, tag, progress).await?;
    }
    Ok(Some(DaemonOutcome {
        submission_id: submitted.submission_id,
        submitted: true,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: Option<&str>, start: Option<i64>, status: JobStatus) -> JobDetails {
        serde_json::from_value(serde_json::json!({
            "submission_id": id, "start_time": start, "status": status, "type": "SUBMISSION"
        }))
        .unwrap()
    }

    #[test]
    fn prefers_most_recent_suffixed() {
        // ref-orchestration §10.6 #4
        let jobs = [
            job(Some("gym-daemon"), Some(1000), JobStatus::Failed),
            job(Some("gym-daemon-123"), Some(5000), JobStatus::Running),
            job(Some("unrelated"), Some(9999), JobStatus::Running),
            job(None, Some(99999), JobStatus::Running),
            job(Some("gym-daemon-v2"), Some(99999), JobStatus::Running),
        ];
        let j = latest_daemon_job(&jobs, "gym-daemon").unwrap();
        assert_eq!(
            (j.submission_id.as_deref(), j.status),
            (Some("gym-daemon-123"), JobStatus::Running)
        );
    }

    #[test]
    fn falls_back_to_none_when_no_match() {
        // ref-orchestration §10.6 #5 (a driver job with a null id no longer breaks it: #6)
        let jobs = [
            job(Some("someone-else"), Some(1), JobStatus::Running),
            job(None, None, JobStatus::Running),
        ];
        assert!(latest_daemon_job(&jobs, "gym-daemon").is_none());
    }

    #[test]
    fn ids() {
        assert!(is_daemon_id("d", "d"));
        assert!(is_daemon_id("d-17", "d"));
        assert!(!is_daemon_id("d-", "d"));
        assert!(!is_daemon_id("d-x1", "d"));
        assert!(!is_daemon_id("dd-1", "d"));
    }
}
