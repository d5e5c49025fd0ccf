//! A role's daemon on its long-lived RayCluster (ref-orchestration §4.5 with the fixes of
//! ref §11 B4-B6):
//! - idempotency is keyed on the newest job of `<id>` or `<id>-<timestamp>`, so a plain
//!   run after a `--replace` finds the fresh daemon, and PENDING counts as alive;
//! - a daemon without `submissionId` gets `<cluster>-daemon`, so it is not resubmitted on
//!   every run;
//! - `daemon.env` travels as `export` lines, like training's;
//! - the code follows the run's code source (no upload with image/lustre);
//! - the health check runs on the head pod (cluster DNS resolves there), and any answer
//!   below 500 passes.

use std::path::Path;
use std::time::Duration;

use indexmap::IndexMap;

use crate::config::layers::LoadedConfig;
use crate::config::schema::{CodeSource, DaemonSpec, Role};
use crate::diag::{Diag, Result};
use crate::k8s::K8s;
use crate::launch::follow::head_dashboard;
use crate::launch::output::Output;
use crate::launch::submit::{Resolved, head_pod};
use crate::ray::{
    DEFAULT_UPLOAD_PATHS, JobDetails, JobSpec, JobStatus, PackageOptions, SubmitRequest, UploadSet,
    stop_job, submit_job,
};
use crate::render::rayjob::{check_env_name, shell_quote};

/// `daemon.submissionId`, or `<cluster>-daemon`.
pub fn base_id(cluster: &str, daemon: &DaemonSpec) -> String {
    daemon
        .submission_id
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("{cluster}-daemon"))
}

/// Whether `id` is `base` or `base-<digits>`.
fn is_generation_of(id: &str, base: &str) -> bool {
    id == base
        || id
            .strip_prefix(base)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|ts| !ts.is_empty() && ts.chars().all(|c| c.is_ascii_digit()))
}

/// The newest job of `base` (by start time, then by the numeric suffix).
pub fn newest<'a>(jobs: &'a [JobDetails], base: &str) -> Option<&'a JobDetails> {
    let suffix = |j: &JobDetails| {
        j.submission_id
            .as_deref()
            .and_then(|id| id.strip_prefix(base))
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|ts| ts.parse::<u64>().ok())
            .unwrap_or(0)
    };
    jobs.iter()
        .filter(|j| {
            j.submission_id
                .as_deref()
                .is_some_and(|id| is_generation_of(id, base))
        })
        .max_by_key(|j| (j.start_time.unwrap_or(0), suffix(j)))
}

/// What to do about a daemon, given its newest job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DaemonAction {
    /// It is RUNNING, PENDING or SUCCEEDED: keep it.
    Keep(String),
    /// It FAILED or was STOPPED and `--replace` is off.
    Refuse { id: String, status: JobStatus },
    /// `--replace` and it is alive: stop it, then submit a fresh one.
    StopThenSubmit(String),
    /// Submit (none yet, or `--replace` of an ended one).
    Submit,
}

/// The decision of ref-orchestration §4.5 with the fixes of §11 B4 (PENDING is alive).
pub fn decide(current: Option<&JobDetails>, replace: bool) -> DaemonAction {
    let Some(job) = current else {
        return DaemonAction::Submit;
    };
    let id = job.submission_id.clone().unwrap_or_default();
    let alive = matches!(job.status, JobStatus::Running | JobStatus::Pending);
    match (replace, job.status) {
        (false, JobStatus::Running | JobStatus::Pending | JobStatus::Succeeded) => {
            DaemonAction::Keep(id)
        }
        (false, status) => DaemonAction::Refuse { id, status },
        (true, _) if alive => DaemonAction::StopThenSubmit(id),
        (true, _) => DaemonAction::Submit,
    }
}

/// `export K=V` lines for `env`.
fn exports(env: &IndexMap<String, String>) -> Result<String> {
    let mut out = String::new();
    for (k, v) in env {
        check_env_name(k)?;
        out.push_str(&format!("export {k}={}\n", shell_quote(v)));
    }
    Ok(out)
}

/// What a daemon runs: `daemon.env` exported, then (code in the image or on Lustre) a
/// `cd` into the code path, then its entrypoint; and the working_dir to upload, only when
/// the code source is `upload` (the daemon's `rayUploadPaths`, else `launch`'s, else the
/// default list).
pub fn daemon_job(
    cfg: &LoadedConfig,
    daemon: &DaemonSpec,
    code: &Resolved,
    repo_root: &Path,
) -> Result<(String, Option<UploadSet>)> {
    let mut entrypoint = exports(&daemon.env)?;
    let working_dir = match code.code_source {
        CodeSource::Upload => {
            let paths: Vec<String> = daemon
                .ray_upload_paths
                .clone()
                .filter(|p| !p.is_empty())
                .or_else(|| cfg.infra.launch.ray_upload_paths.clone())
                .unwrap_or_else(|| DEFAULT_UPLOAD_PATHS.iter().map(|s| s.to_string()).collect());
            Some(UploadSet::from_include_paths(repo_root, &paths)?)
        }
        CodeSource::Image | CodeSource::Lustre => {
            if let Some(p) = &code.code_path {
                entrypoint.push_str(&format!("cd {}\n", shell_quote(p)));
            }
            None
        }
    };
    entrypoint.push_str(&daemon.entrypoint);
    Ok((entrypoint, working_dir))
}

/// Submit (or keep) `role`'s daemon on `cluster`; returns the daemon's submission id.
#[allow(clippy::too_many_arguments)]
pub async fn submit_daemon(
    k8s: &K8s,
    cfg: &LoadedConfig,
    role: Role,
    cluster: &str,
    daemon: &DaemonSpec,
    replace: bool,
    code: &Resolved,
    repo_root: &Path,
    progress: &mut dyn Output,
) -> Result<String> {
    let ns = &cfg.infra.namespace;
    let base = base_id(cluster, daemon);
    let dash = head_dashboard(k8s, ns, cluster).await?;
    let jobs = dash.client.list_jobs().await?;
    let current = newest(&jobs, &base).cloned();
    if let Some(job) = &current {
        let id = job.submission_id.clone().unwrap_or_default();
        let alive = matches!(job.status, JobStatus::Running | JobStatus::Pending);
        match (replace, job.status) {
            (false, JobStatus::Running | JobStatus::Pending | JobStatus::Succeeded) => {
                progress.status(&format!(
                    "[{role}] daemon {id} already {} — skipping submit",
                    job.status
                ));
                return Ok(id);
            }
            (false, status) => {
                return Err(Diag::new(
                    "nrl::run::daemon_failed",
                    format!("daemon {id} on RayCluster {cluster} is {status}"),
                )
                .help(format!(
                    "re-run with --replace to start a fresh one (its log: nrl job logs {id} --address <dashboard>)"
                )));
            }
            (true, _) if alive => {
                progress.status(&format!("[{role}] --replace: stopping daemon {id}"));
                let out = stop_job(&dash.client, &id, Duration::from_secs(60)).await?;
                progress.status(&format!("[{role}] daemon {id} → {}", out.details.status));
            }
            (true, _) => {}
        }
    }
    let taken = jobs
        .iter()
        .any(|j| j.submission_id.as_deref() == Some(base.as_str()));
    let id = if taken {
        let fresh = format!("{base}-{}", jiff::Timestamp::now().as_second());
        progress.status(&format!(
            "[{role}] using fresh daemon submission id {fresh}"
        ));
        fresh
    } else {
        base.clone()
    };

    let (entrypoint, working_dir) = daemon_job(cfg, daemon, code, repo_root)?;
    if let Some(files) = &working_dir {
        progress.status(&format!(
            "[{role}] staging working_dir for the daemon ({} files)",
            files.file_count()
        ));
    }
    let mut request = SubmitRequest::new(entrypoint);
    request.submission_id = Some(id.clone());
    request
        .metadata
        .insert("nrl_daemon".into(), role.as_str().into());
    progress.status(&format!(
        "[{role}] submitting daemon {id} to RayCluster {cluster}"
    ));
    let submitted = submit_job(
        &dash.client,
        JobSpec {
            request,
            working_dir,
            package: PackageOptions::default(),
        },
    )
    .await?;
    progress.status(&format!(
        "[{role}] daemon submitted as job {}",
        submitted.submission_id
    ));
    if let Some(url) = &daemon.health_check_url {
        health_check(
            k8s,
            ns,
            cluster,
            url,
            daemon.health_check_timeout_s,
            role,
            progress,
        )
        .await?;
    }
    Ok(submitted.submission_id)
}

const HEALTH: &str = r#"
import sys, time, urllib.request, urllib.error
url, deadline = sys.argv[1], time.time() + float(sys.argv[2])
while True:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            code = r.status
    except urllib.error.HTTPError as e:
        code = e.code
    except Exception:
        code = None
    if code is not None and code < 500:
        print(code)
        sys.exit(0)
    if time.time() > deadline:
        print("timeout")
        sys.exit(1)
    time.sleep(2)
"#;

/// Poll `url` from the head pod (where cluster DNS resolves) until it answers below 500.
pub async fn health_check(
    k8s: &K8s,
    ns: &str,
    cluster: &str,
    url: &str,
    timeout_s: i64,
    role: Role,
    progress: &mut dyn Output,
) -> Result<()> {
    progress.status(&format!(
        "[{role}] waiting for health-check {url} (timeout {timeout_s}s, from the head pod)"
    ));
    let pod = head_pod(k8s, ns, cluster).await?;
    let out = k8s
        .exec(
            ns,
            &pod,
            None,
            &["python3", "-c", HEALTH, url, &timeout_s.to_string()],
            None,
        )
        .await?;
    if out.exit_code == 0 {
        progress.status(&format!(
            "[{role}] health-check {url} responded {}",
            out.stdout_str().trim()
        ));
        Ok(())
    } else {
        Err(Diag::api(
            "nrl::run::health_check",
            format!("health-check {url} did not respond within {timeout_s}s"),
        )
        .help("check the daemon's log (`nrl job logs`) and infra.kuberay.<role>.daemon.healthCheckUrl"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, start: i64, status: &str) -> JobDetails {
        serde_json::from_value(serde_json::json!({
            "submission_id": id, "status": status, "start_time": start
        }))
        .unwrap()
    }

    /// ref §10.6 LatestDaemonJob/prefers_most_recent_suffixed, and the fix of §11 B4.
    #[test]
    fn newest_generation_of_the_base_id_wins() {
        let jobs = vec![
            job("gym-daemon", 1000, "FAILED"),
            job("gym-daemon-123", 5000, "RUNNING"),
            job("unrelated", 9999, "RUNNING"),
            job("gym-daemon-x", 9999, "RUNNING"),
        ];
        let n = newest(&jobs, "gym-daemon").unwrap();
        assert_eq!(n.submission_id.as_deref(), Some("gym-daemon-123"));
        assert_eq!(
            newest(&[job("someone-else", 1, "RUNNING")], "gym-daemon"),
            None
        );
    }

    /// ref §10.2 SubmitDaemon #3-#6, and PENDING (ref §11 B4: it was resubmitted and
    /// refused by Ray as a duplicate).
    #[test]
    fn daemon_decisions() {
        let d = |status: &str| job("gym-daemon", 1, status);
        assert_eq!(
            decide(Some(&d("RUNNING")), false),
            DaemonAction::Keep("gym-daemon".into())
        );
        assert_eq!(
            decide(Some(&d("SUCCEEDED")), false),
            DaemonAction::Keep("gym-daemon".into())
        );
        assert_eq!(
            decide(Some(&d("PENDING")), false),
            DaemonAction::Keep("gym-daemon".into())
        );
        match decide(Some(&d("FAILED")), false) {
            DaemonAction::Refuse { status, .. } => assert_eq!(status.to_string(), "FAILED"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            decide(Some(&d("RUNNING")), true),
            DaemonAction::StopThenSubmit("gym-daemon".into())
        );
        assert_eq!(decide(Some(&d("STOPPED")), true), DaemonAction::Submit);
        assert_eq!(decide(None, false), DaemonAction::Submit);
    }

    #[test]
    fn base_id_defaults_to_the_cluster() {
        let d = DaemonSpec {
            entrypoint: "x".into(),
            submission_id: None,
            env: IndexMap::new(),
            health_check_url: None,
            health_check_timeout_s: 300,
            ray_upload_paths: None,
        };
        assert_eq!(base_id("rc-gym", &d), "rc-gym-daemon");
        let d = DaemonSpec {
            submission_id: Some("gym-daemon".into()),
            ..d
        };
        assert_eq!(base_id("rc-gym", &d), "gym-daemon");
    }

    #[test]
    fn daemon_env_is_exported_quoted() {
        let env = IndexMap::from([("A".to_string(), "x y".to_string())]);
        assert_eq!(exports(&env).unwrap(), "export A='x y'\n");
        let bad = IndexMap::from([("1A".to_string(), "x".to_string())]);
        assert!(exports(&bad).is_err());
    }
}
