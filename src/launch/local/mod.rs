//! The local executor (`nrl run … --local`): the staged run written into its run
//! directory, the entrypoint run there as a child process, output streamed and logged,
//! the run record kept up to date.

pub mod process;
pub mod reaper;

use std::path::PathBuf;

use tokio::io::AsyncWrite;

use crate::config::layers::LoadedConfig;
use crate::diag::{Diag, Exit, Result};
use crate::launch::local::process::{Ended, Interrupts, LocalCommand, STOP_GRACE, find_shell};
use crate::launch::local::reaper::ProcessId;
use crate::launch::records::context::{DRIVER_LOG, RunContext, finish_record, save_record};
use crate::launch::records::snapshot::save_snapshot;
use crate::launch::records::{LocalProcess, RunKind, RunRecord, RunStatus};
use crate::launch::stage::{StagedRun, stage};

/// A staged local run, ready to execute.
#[derive(Debug)]
pub struct LocalRun {
    pub ctx: RunContext,
    pub staged: StagedRun,
    pub record: RunRecord,
    pub command: LocalCommand,
}

/// How a local run ended, with its final record.
#[derive(Debug, Clone)]
pub struct LocalOutcome {
    pub ended: Ended,
    /// Pids of the run's processes that even SIGKILL did not end (normally none).
    pub survivors: Vec<u32>,
    pub record: RunRecord,
    pub log: PathBuf,
}

/// Stage `cfg` into the run directory and write the run's record. Blocking file I/O:
/// call it before entering async code (or from `spawn_blocking`).
pub fn prepare(cfg: &LoadedConfig, ctx: RunContext) -> Result<LocalRun> {
    let mut staged = stage(cfg, &ctx.run_id, &ctx.repo_root)?;
    let run_dir = ctx.run_dir();
    if let Err(e) = staged.files.materialize(&run_dir) {
        let _ = std::fs::remove_dir_all(&run_dir);
        return Err(e);
    }
    if let Err(e) = save_snapshot(cfg, &ctx, &staged) {
        staged.warnings.push(e.message.clone());
    }
    let mut env = staged.env.clone();
    env.insert("NRL_RUN_DIR".into(), run_dir.display().to_string());
    // Stream Python output as it is printed, as Ray's job supervisor does.
    if std::env::var_os("PYTHONUNBUFFERED").is_none() {
        env.entry("PYTHONUNBUFFERED".into())
            .or_insert_with(|| "1".into());
    }
    let command = LocalCommand {
        script: staged.entrypoint.clone(),
        shell: find_shell(std::env::var_os("PATH").as_deref()),
        cwd: run_dir.clone(),
        env,
        log: run_dir.join(DRIVER_LOG),
        stop_grace: STOP_GRACE,
    };
    let mut record = ctx.new_record(cfg, RunKind::Local);
    // Readers tell a run whose nrl was killed (SIGKILL) by this process being gone.
    record.supervisor = ProcessId::this();
    ctx.store.save(&record)?;
    Ok(LocalRun {
        ctx,
        staged,
        record,
        command,
    })
}

impl LocalRun {
    pub fn log_path(&self) -> PathBuf {
        self.command.log.clone()
    }

    /// Run the entrypoint to its end, streaming to `out`/`err`; interrupts stop it.
    pub async fn execute<O, E>(
        mut self,
        out: &mut O,
        err: &mut E,
        interrupts: &mut Interrupts,
    ) -> Result<LocalOutcome>
    where
        O: AsyncWrite + Unpin + ?Sized,
        E: AsyncWrite + Unpin + ?Sized,
    {
        let store = self.ctx.store.clone();
        let child = match self.command.spawn().await {
            Ok(child) => child,
            Err(e) => {
                let message = Some(e.message.clone());
                finish_record(&store, &mut self.record, RunStatus::Failed, None, message).await;
                return Err(e);
            }
        };
        self.record.local = Some(LocalProcess {
            pid: child.pid(),
            start_time: ProcessId::of(child.pid()).map(|p| p.start_time),
        });
        if let Err(e) = save_record(&store, &self.record).await {
            tracing::warn!(%e, "cannot record the run's pid");
        }
        let (ended, survivors) = match child.run_to_end(out, err, interrupts).await {
            Ok(f) => (f.ended, f.survivors),
            Err(e) => {
                let message = Some(e.message.clone());
                finish_record(&store, &mut self.record, RunStatus::Failed, None, message).await;
                return Err(e);
            }
        };
        let (status, message) = match ended {
            Ended::Exited(0) => (RunStatus::Succeeded, "exited with code 0".to_string()),
            Ended::Exited(c) => (RunStatus::Failed, format!("exited with code {c}")),
            Ended::Signalled(c) => (RunStatus::Failed, format!("killed by signal {}", c - 128)),
            Ended::Interrupted(_) => (RunStatus::Stopped, "interrupted; stopped by nrl".into()),
        };
        finish_record(
            &store,
            &mut self.record,
            status,
            Some(ended.code()),
            Some(message),
        )
        .await;
        Ok(LocalOutcome {
            ended,
            survivors,
            record: self.record,
            log: self.command.log,
        })
    }
}

impl LocalOutcome {
    /// What became of the run's processes, for the interrupt message.
    pub fn processes_note(&self) -> String {
        match self.survivors.as_slice() {
            [] => "its processes were ended".into(),
            pids => format!(
                "{} of its processes could not be ended: pid {}",
                pids.len(),
                pids.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// The command's result: 0 on success, 130 when interrupted, else a failure (exit 1)
    /// naming the exit code and the log.
    pub fn into_exit(self) -> Result<Exit> {
        let log = self.log.display();
        match self.ended {
            Ended::Exited(0) => Ok(Exit::Ok),
            Ended::Interrupted(_) => Ok(Exit::Interrupted),
            Ended::Exited(code) => Err(Diag::new(
                "nrl::run::failed",
                format!(
                    "run {} failed: the entrypoint exited with code {code}",
                    self.record.id
                ),
            )
            .with_exit(Exit::Failed)
            .help(format!("its whole output is in {log}"))),
            Ended::Signalled(code) => Err(Diag::new(
                "nrl::run::failed",
                format!(
                    "run {} failed: the entrypoint was killed by signal {}",
                    self.record.id,
                    code - 128
                ),
            )
            .with_exit(Exit::Failed)
            .help(format!("its whole output is in {log}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::MapEnv;
    use crate::config::layers::{LoadRequest, load};
    use crate::launch::records::RunStore;
    use std::path::Path;
    use std::sync::Arc;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn setup(entrypoint: &str) -> (tempfile::TempDir, LoadedConfig, RunContext) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        write(&root, "app/recipe.yaml", "steps: 3\n");
        write(&root, "app/__pycache__/x.pyc", "bytecode");
        write(
            &root,
            "app/infra.yaml",
            &format!(
                "namespace: ns\nimage: img\nlaunch:\n  rayUploadPaths: [app]\n  env: {{GREETING: hi}}\n  \
                 entrypoint: {entrypoint}\n"
            ),
        );
        let mut req = LoadRequest::new(
            root.join("app/recipe.yaml"),
            Arc::new(MapEnv::new([("NRL_USER", "t"), ("HOME", "/nonexistent")])),
        );
        req.infra = Some(root.join("app/infra.yaml"));
        req.overrides = vec!["steps=5".into()];
        let cfg = load(&req).unwrap();
        let ctx = RunContext {
            run_id: crate::run_id::RunId::parse("local-1").unwrap(),
            store: RunStore::new(dir.path().join("cache/runs")),
            repo_root: root,
            infra: req.infra.clone(),
            overrides: req.overrides.clone(),
        };
        (dir, cfg, ctx)
    }

    fn execute(run: LocalRun) -> (LocalOutcome, String) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (_tx, mut interrupts) = Interrupts::channel();
        let mut out = Vec::new();
        let outcome = rt
            .block_on(run.execute(&mut out, &mut tokio::io::sink(), &mut interrupts))
            .unwrap();
        (outcome, String::from_utf8(out).unwrap())
    }

    #[test]
    fn the_run_directory_has_the_working_dir_layout() {
        let (_dir, cfg, ctx) = setup("cat --config app/recipe.yaml");
        let run = prepare(&cfg, ctx.clone()).unwrap();
        let run_dir = ctx.run_dir();
        assert!(run_dir.join("app/recipe.yaml").is_file());
        assert!(run_dir.join("app/infra.yaml").is_file());
        assert!(!run_dir.join("app/__pycache__").exists());
        let staged = std::fs::read_to_string(run_dir.join("nrl_run.yaml")).unwrap();
        assert_eq!(staged, "steps: 5\n");
        assert_eq!(run.command.script, "cat --config nrl_run.yaml");
        assert_eq!(run.command.cwd, run_dir);
        assert_eq!(run.command.env["NRL_RUN_ID"], "local-1");
        assert_eq!(run.command.env["NRL_K8S_RUN_ID"], "local-1");
        assert_eq!(run.command.env["GREETING"], "hi");
        assert_eq!(
            run.command.env["NRL_RUN_DIR"],
            run_dir.display().to_string()
        );
        let record = ctx.store.load("local-1").unwrap();
        assert_eq!(record.kind, RunKind::Local);
        assert_eq!(record.status, RunStatus::Running);
        assert_eq!(record.overrides, ["steps=5"]);
    }

    #[test]
    fn a_successful_run_is_recorded_with_its_pid() {
        let (_dir, cfg, ctx) = setup("'echo \"$GREETING $NRL_RUN_ID\"; cat nrl_run.yaml'");
        let run = prepare(&cfg, ctx.clone()).unwrap();
        let (outcome, out) = execute(run);
        assert_eq!(out, "hi local-1\nsteps: 5\n");
        assert_eq!(outcome.ended, Ended::Exited(0));
        let record = ctx.store.load("local-1").unwrap();
        assert_eq!(record.status, RunStatus::Succeeded);
        assert_eq!(record.exit_code, Some(0));
        assert!(record.local.is_some_and(|l| l.pid > 0));
        let log = std::fs::read_to_string(ctx.run_dir().join(DRIVER_LOG)).unwrap();
        assert_eq!(log, out);
        assert_eq!(outcome.into_exit().unwrap(), Exit::Ok);
    }

    #[test]
    fn a_failing_run_exits_1_and_names_the_code_and_log() {
        let (_dir, cfg, ctx) = setup("'echo boom >&2; exit 4'");
        let run = prepare(&cfg, ctx.clone()).unwrap();
        let (outcome, _) = execute(run);
        let record = ctx.store.load("local-1").unwrap();
        assert_eq!(record.status, RunStatus::Failed);
        assert_eq!(record.exit_code, Some(4));
        let err = outcome.into_exit().unwrap_err();
        assert_eq!(err.exit, Exit::Failed);
        assert!(err.message.contains("code 4"), "{}", err.message);
        assert!(err.help.as_deref().unwrap().contains(DRIVER_LOG));
    }
}
