//! `nrl run … --ray-address URL`: the staged run submitted to a Ray dashboard (a local
//! `ray start --head` or a remote one) and followed to its end.
//!
//! The job's working_dir is the staged tree (upload set + `nrl_run.yaml` at the root),
//! its env vars are `launch.env` and the run ids, its submission id is the run id. The
//! run directory keeps the staged recipe and a copy of the followed log.

use std::io::Write;
use std::path::PathBuf;

use super::local::process::Interrupts;
use super::records::context::{DRIVER_LOG, RunContext, finish_record, save_record};
use super::records::snapshot::save_snapshot;
use super::records::{RayJobRef, RunKind, RunRecord, RunStatus};
use super::stage::{StagedRun, stage};
use crate::config::layers::LoadedConfig;
use crate::diag::{Diag, Exit, Result};
use crate::ray::follow::CODE_OUTPUT_CLOSED;
use crate::ray::{
    FollowOptions, JobDetails, JobSpec, JobStatus, PackageOptions, RayClient, SubmitRequest,
    Submitted, follow_job, submit_job,
};
use crate::render::rayjob::STAGED_RECIPE;

/// A staged run for a Ray dashboard.
#[derive(Debug)]
pub struct RayRun {
    pub ctx: RunContext,
    pub staged: StagedRun,
    pub record: RunRecord,
    pub client: RayClient,
    pub package: PackageOptions,
}

/// How following a Ray run ended.
#[derive(Debug, Clone)]
pub enum RayEnded {
    /// The job reached a terminal state.
    Finished(Box<JobDetails>),
    /// Interrupted: nrl stopped following; the job keeps running.
    Detached,
}

/// Stage `cfg` for `client`, check the package size, write the run directory (staged
/// recipe) and the record. Blocking file I/O: call before entering async code.
pub fn prepare(cfg: &LoadedConfig, ctx: RunContext, client: RayClient) -> Result<RayRun> {
    let mut staged = stage(cfg, &ctx.run_id, &ctx.repo_root)?;
    let package = PackageOptions::default();
    staged.files.check_size(package.limit)?;
    let run_dir = ctx.run_dir();
    std::fs::create_dir_all(&run_dir)
        .and_then(|_| std::fs::write(run_dir.join(STAGED_RECIPE), &staged.recipe_yaml))
        .map_err(|e| {
            Diag::new(
                "nrl::run::stage",
                format!("cannot write {}: {e}", run_dir.display()),
            )
            .help("check that the cache directory is writable")
        })?;
    if let Err(e) = save_snapshot(cfg, &ctx, &staged) {
        staged.warnings.push(e.message.clone());
    }
    let mut record = ctx.new_record(cfg, RunKind::Ray);
    record.ray = Some(RayJobRef {
        address: client.address().to_string(),
        submission_id: ctx.run_id.to_string(),
    });
    ctx.store.save(&record)?;
    Ok(RayRun {
        ctx,
        staged,
        record,
        client,
        package,
    })
}

impl RayRun {
    pub fn log_path(&self) -> PathBuf {
        self.ctx.run_dir().join(DRIVER_LOG)
    }

    /// The job request: staged entrypoint, env, submission id = run id.
    pub fn request(&self) -> SubmitRequest {
        let mut request = SubmitRequest::new(self.staged.entrypoint.clone());
        request.submission_id = Some(self.ctx.run_id.to_string());
        request.runtime_env.env_vars = self.staged.env.clone();
        request
            .metadata
            .insert("nrl_run_id".into(), self.ctx.run_id.to_string());
        request
    }

    /// Upload the working_dir (unless Ray has it) and submit the job.
    pub async fn submit(&mut self) -> Result<Submitted> {
        let spec = JobSpec {
            request: self.request(),
            working_dir: Some(self.staged.files.clone()),
            package: self.package.clone(),
        };
        match submit_job(&self.client, spec).await {
            Ok(submitted) => Ok(submitted),
            Err(e) => {
                let message = Some(format!("submit failed: {}", e.message));
                let store = self.ctx.store.clone();
                finish_record(&store, &mut self.record, RunStatus::Failed, None, message).await;
                Err(e)
            }
        }
    }

    /// Follow the job's log into `out` (and the run's `driver.log`) until it ends or an
    /// interrupt detaches; the record gets the final status.
    pub async fn follow<W: Write>(
        &mut self,
        out: &mut W,
        interrupts: &mut Interrupts,
    ) -> Result<RayEnded> {
        let log = {
            let path = self.log_path();
            tokio::task::spawn_blocking(move || std::fs::File::create(path))
                .await
                .ok()
                .and_then(|f| f.ok())
        };
        let mut tee = Tee {
            out,
            out_open: true,
            log,
        };
        let id = self.ctx.run_id.clone();
        let options = FollowOptions::default();
        let finished = tokio::select! {
            finished = follow_job(&self.client, &id, &mut tee, &options) => finished,
            _ = interrupts.recv() => return Ok(RayEnded::Detached),
        };
        let job = match finished {
            Ok(job) => job,
            Err(e) if e.code == CODE_OUTPUT_CLOSED => {
                // Unreachable with the tee (it swallows a closed stdout), kept for safety.
                return Ok(RayEnded::Detached);
            }
            Err(e) => return Err(e),
        };
        let status = match job.status {
            JobStatus::Succeeded => RunStatus::Succeeded,
            JobStatus::Stopped => RunStatus::Stopped,
            _ => RunStatus::Failed,
        };
        let message = job
            .message
            .as_deref()
            .and_then(|m| m.lines().next())
            .map(|m| format!("{}: {m}", job.status))
            .or_else(|| Some(job.status.to_string()));
        let exit_code = job.driver_exit_code.and_then(|c| i32::try_from(c).ok());
        let store = self.ctx.store.clone();
        finish_record(&store, &mut self.record, status, exit_code, message).await;
        Ok(RayEnded::Finished(Box::new(job)))
    }

    /// Save the record as it is now (after a detach, for instance).
    pub async fn save(&self) -> Result<()> {
        save_record(&self.ctx.store, &self.record).await
    }
}

impl RayEnded {
    /// 0 SUCCEEDED, 130 detached, else a failure (exit 1) with the job's message.
    pub fn into_exit(self, run_id: &str, address: &str) -> Result<Exit> {
        match self {
            RayEnded::Detached => Ok(Exit::Interrupted),
            RayEnded::Finished(job) if job.status == JobStatus::Succeeded => Ok(Exit::Ok),
            RayEnded::Finished(job) => {
                let detail = job
                    .message
                    .as_deref()
                    .and_then(|m| m.lines().next())
                    .filter(|m| !m.is_empty())
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default();
                Err(Diag::new(
                    "nrl::run::failed",
                    format!("run {run_id} {}{detail}", job.status),
                )
                .with_exit(Exit::Failed)
                .help(format!(
                    "see the whole log: nrl job logs {run_id} --address {address}"
                )))
            }
        }
    }
}

/// The terminal plus the run's log copy. A closed terminal (`| head`) or a failing log
/// file never stops following.
struct Tee<'a, W: Write> {
    out: &'a mut W,
    out_open: bool,
    log: Option<std::fs::File>,
}

impl<W: Write> Write for Tee<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(log) = &mut self.log
            && log.write_all(buf).is_err()
        {
            self.log = None;
        }
        if self.out_open && self.out.write_all(buf).is_err() {
            self.out_open = false;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.out_open && self.out.flush().is_err() {
            self.out_open = false;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(status: &str, message: Option<&str>) -> Box<JobDetails> {
        serde_json::from_value(serde_json::json!({"status": status, "message": message})).unwrap()
    }

    #[test]
    fn exits_follow_the_job_status() {
        let ok = RayEnded::Finished(job("SUCCEEDED", None));
        assert_eq!(ok.into_exit("r", "http://h").unwrap(), Exit::Ok);
        assert_eq!(
            RayEnded::Detached.into_exit("r", "http://h").unwrap(),
            Exit::Interrupted
        );
        let failed = RayEnded::Finished(job(
            "FAILED",
            Some("Job entrypoint command failed with exit code 3, last available logs:\n..."),
        ));
        let err = failed.into_exit("r-1", "http://h:1").unwrap_err();
        assert_eq!(err.exit, Exit::Failed);
        assert_eq!(
            err.message,
            "run r-1 FAILED: Job entrypoint command failed with exit code 3, last available logs:"
        );
        assert!(
            err.help
                .as_deref()
                .unwrap()
                .contains("nrl job logs r-1 --address http://h:1")
        );
        let stopped = RayEnded::Finished(job("STOPPED", None));
        assert_eq!(
            stopped.into_exit("r", "h").unwrap_err().message,
            "run r STOPPED"
        );
    }

    #[test]
    fn the_tee_survives_a_closed_terminal() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driver.log");
        let mut closed = Closed;
        let mut tee = Tee {
            out: &mut closed,
            out_open: true,
            log: Some(std::fs::File::create(&path).unwrap()),
        };
        tee.write_all(b"one\n").unwrap();
        tee.write_all(b"two\n").unwrap();
        tee.flush().unwrap();
        assert!(!tee.out_open);
        drop(tee);
        assert_eq!(std::fs::read_to_string(path).unwrap(), "one\ntwo\n");
    }
}
