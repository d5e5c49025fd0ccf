//! The local record of a Gym run: an nrl run record (`launch::records`, kind `gym`,
//! `<cache>/nrl/runs/<run id>.json`) whose `gym` field holds the Gym specifics.
//!
//! Everything `status`/`logs`/`cancel` need is also on the cluster (the Jobs' labels), so
//! the record is a convenience, not a requirement: with `--namespace` they work from any
//! machine.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::env::Env;
use crate::diag::{Diag, Result};
use crate::launch::records::{CODE_NOT_FOUND, CODE_RECORD, RunKind, RunRecord, RunStore};

/// One benchmark of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordBenchmark {
    pub benchmark: String,
    /// The Job's name.
    pub job: String,
    /// `<output_path>/<run id>/<benchmark>` in the driver (on the PVC).
    pub run_dir: String,
    /// Why the Job could not be created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The last state seen (`Succeeded`, `Failed`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The `gym` field of a run record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GymPart {
    /// The config file as given.
    pub config: String,
    /// `<output_path>/<run id>` on the PVC.
    pub base_run_dir: String,
    #[serde(default)]
    pub submitted_by: Option<String>,
    /// The run's Secret, when it has one.
    #[serde(default)]
    pub secret: Option<String>,
    pub benchmarks: Vec<RecordBenchmark>,
}

/// A Gym run's record: the common run record plus its `gym` part.
#[derive(Debug, Clone, PartialEq)]
pub struct GymRecord {
    pub run: RunRecord,
    pub gym: GymPart,
}

impl GymRecord {
    pub fn new(id: &str, gym: GymPart) -> GymRecord {
        GymRecord {
            run: RunRecord::new(id, RunKind::Gym),
            gym,
        }
    }

    /// The record as stored: the run record with `gym` among its fields.
    pub fn to_run_record(&self) -> RunRecord {
        let mut run = self.run.clone();
        run.kind = RunKind::Gym;
        if let Ok(v) = serde_json::to_value(&self.gym) {
            run.extra.insert("gym".into(), v);
        }
        run
    }

    /// Read a stored run record; an error when it is not a Gym run's.
    pub fn from_run_record(mut run: RunRecord) -> Result<GymRecord> {
        if run.kind != RunKind::Gym {
            return Err(Diag::new(
                CODE_RECORD,
                format!(
                    "run `{}` is a `{}` run, not a Gym run",
                    run.id,
                    run.kind.as_str()
                ),
            )
            .help("use `nrl run`/`nrl job` commands for it"));
        }
        let gym = run.extra.remove("gym").ok_or_else(|| {
            Diag::new(
                CODE_RECORD,
                format!("the record of run `{}` has no `gym` part", run.id),
            )
        })?;
        let gym: GymPart = serde_json::from_value(gym).map_err(|e| {
            Diag::new(CODE_RECORD, format!("the `gym` part of run `{}` is not valid: {e}", run.id))
                .help("remove the record if the run no longer matters; the Jobs are still found by label with --namespace")
        })?;
        Ok(GymRecord { run, gym })
    }

    /// Write atomically into the run store; returns the path.
    pub fn save(&self, env: &dyn Env) -> Result<PathBuf> {
        let store = RunStore::from_env(env)?;
        store.save(&self.to_run_record())?;
        Ok(store.record_path(&self.run.id))
    }

    /// The record of `id`, `Ok(None)` when there is none.
    pub fn load(env: &dyn Env, id: &str) -> Result<Option<GymRecord>> {
        match RunStore::from_env(env)?.load(id) {
            Ok(run) => GymRecord::from_run_record(run).map(Some),
            Err(e) if e.code == CODE_NOT_FOUND => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::MapEnv;

    fn record() -> GymRecord {
        let mut r = GymRecord::new(
            "gym-job-x",
            GymPart {
                config: "gym.yaml".into(),
                base_run_dir: "tmp/jobs/gym-job-x".into(),
                submitted_by: Some("alice".into()),
                secret: None,
                benchmarks: vec![RecordBenchmark {
                    benchmark: "bench_a".into(),
                    job: "gym-job-x-bench-a".into(),
                    run_dir: "tmp/jobs/gym-job-x/bench_a".into(),
                    error: None,
                    phase: None,
                    detail: None,
                }],
            },
        );
        r.run.namespace = Some("eng-test".into());
        r.run.context = Some("ctx".into());
        r
    }

    // ref §5.1 test 10, with nrl's record location.
    #[test]
    fn saved_under_the_cache_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let env = MapEnv::new([
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
            ("HOME", "/nonexistent"),
        ]);
        let r = record();
        let path = r.save(&env).unwrap();
        assert_eq!(path, cache.join("nrl/runs/gym-job-x.json"));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["kind"], "gym");
        assert_eq!(v["gym"]["benchmarks"][0]["job"], "gym-job-x-bench-a");
        assert_eq!(GymRecord::load(&env, "gym-job-x").unwrap(), Some(r));
        assert_eq!(GymRecord::load(&env, "other").unwrap(), None);
    }

    #[test]
    fn other_kinds_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let env = MapEnv::new([("XDG_CACHE_HOME", dir.path().to_str().unwrap())]);
        let store = RunStore::from_env(&env).unwrap();
        store.save(&RunRecord::new("ray-1", RunKind::Ray)).unwrap();
        let e = GymRecord::load(&env, "ray-1").unwrap_err();
        assert!(e.message.contains("not a Gym run"), "{}", e.message);
    }
}
