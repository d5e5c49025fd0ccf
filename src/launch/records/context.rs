//! What every executor of `nrl run` shares: the run id, the record, the run directory.

use std::path::{Path, PathBuf};

use crate::config::layers::LoadedConfig;
use crate::diag::{Diag, Result};
use crate::launch::records::{RunKind, RunRecord, RunStatus, RunStore};
use crate::run_id::RunId;

/// Name of the combined output log in a run directory.
pub const DRIVER_LOG: &str = "driver.log";

/// Where and as what a run is started.
#[derive(Debug, Clone)]
pub struct RunContext {
    pub run_id: RunId,
    pub store: RunStore,
    /// Upload paths are relative to this directory.
    pub repo_root: PathBuf,
    /// The `--infra` file as given (for the record).
    pub infra: Option<PathBuf>,
    /// The overrides as given (for the record).
    pub overrides: Vec<String>,
}

impl RunContext {
    /// The run's directory (`<store>/<id>/`).
    pub fn run_dir(&self) -> PathBuf {
        self.store.run_dir(&self.run_id)
    }

    pub fn record_path(&self) -> PathBuf {
        self.store.record_path(&self.run_id)
    }

    /// A fresh running record of this run.
    pub fn new_record(&self, cfg: &LoadedConfig, kind: RunKind) -> RunRecord {
        let mut record = RunRecord::new(&self.run_id, kind);
        record.recipe = Some(cfg.recipe_path.display().to_string());
        record.infra = self
            .infra
            .as_ref()
            .map(|p| absolute(p).display().to_string());
        record.overrides = self.overrides.clone();
        // context/namespace/cluster are for the executors that run on a cluster.
        record.run_dir = Some(self.run_dir().display().to_string());
        record
    }
}

/// `given` (validated and unused), or a fresh id for `recipe` that no run uses yet.
pub fn resolve_run_id(given: Option<&str>, recipe: &Path, store: &RunStore) -> Result<RunId> {
    if let Some(given) = given {
        let id = RunId::parse(given)?;
        if store.exists(&id) {
            return Err(Diag::new(
                "nrl::run::run_id_taken",
                format!("run id `{id}` is already used by a run on this machine"),
            )
            .help(format!(
                "pick another --run-id, or remove {} and {}",
                store.record_path(&id).display(),
                store.run_dir(&id).display()
            )));
        }
        return Ok(id);
    }
    // Four random characters per second: a clash is rare, and retried.
    let mut id = RunId::generate(recipe);
    for _ in 0..16 {
        if !store.exists(&id) {
            break;
        }
        id = RunId::generate(recipe);
    }
    Ok(id)
}

/// Save `record` off the async runtime's worker threads.
pub async fn save_record(store: &RunStore, record: &RunRecord) -> Result<()> {
    let (store, record) = (store.clone(), record.clone());
    tokio::task::spawn_blocking(move || store.save(&record))
        .await
        .map_err(|e| Diag::new("nrl::runtime", format!("record writer failed: {e}")))?
}

/// Set the final status and save; a failure to save is logged, not returned, so the
/// run's own outcome is what the command reports.
pub async fn finish_record(
    store: &RunStore,
    record: &mut RunRecord,
    status: RunStatus,
    exit_code: Option<i32>,
    message: Option<String>,
) {
    record.set_status(status, exit_code, message);
    if let Err(e) = save_record(store, record).await {
        tracing::warn!(%e, "cannot update the run record");
        crate::errln!("warning: {}", e.message);
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_ids_are_validated_and_must_be_unused() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path());
        let recipe = Path::new("quick.yaml");
        assert_eq!(
            resolve_run_id(Some("my-run"), recipe, &store)
                .unwrap()
                .as_str(),
            "my-run"
        );
        assert_eq!(
            resolve_run_id(Some("My_Run"), recipe, &store)
                .unwrap_err()
                .code,
            crate::run_id::CODE_RUN_ID
        );
        store
            .save(&RunRecord::new("my-run", RunKind::Local))
            .unwrap();
        assert_eq!(
            resolve_run_id(Some("my-run"), recipe, &store)
                .unwrap_err()
                .code,
            "nrl::run::run_id_taken"
        );
        let fresh = resolve_run_id(None, recipe, &store).unwrap();
        assert!(fresh.starts_with("quick-"), "{fresh}");
        crate::run_id::validate(&fresh).unwrap();
    }
}
