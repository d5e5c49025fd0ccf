//! The local record of a Gym run: `<cache>/nrl/runs/<run id>.json` (`<cache>` is
//! `$XDG_CACHE_HOME` when absolute, else `~/.cache`), written atomically.
//!
//! The layout is nrl's run-record layout (`id`, `kind: gym`, `created_at`, `context`,
//! `namespace`, `status`, …) with the Gym specifics under `gym`, so `nrl` commands that
//! list runs can read it. Everything `status`/`logs`/`cancel` need is also on the cluster
//! (the Jobs' labels), so the record is a convenience, not a requirement.

use std::io::Write;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::env::Env;
use crate::diag::{Diag, Result};

pub const CODE_RECORD: &str = "nrl::run::record";
pub const CODE_NOT_FOUND: &str = "nrl::run::not_found";

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

/// The Gym part of a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GymPart {
    /// The config file as given.
    pub config: String,
    pub base_run_dir: String,
    /// The run's Secret, when it has one.
    #[serde(default)]
    pub secret: Option<String>,
    pub benchmarks: Vec<RecordBenchmark>,
}

/// One Gym run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GymRecord {
    pub id: String,
    /// Always `gym`.
    pub kind: String,
    pub created_at: String,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub overrides: Vec<String>,
    /// The kube context used (`None`: the kubeconfig's current one).
    #[serde(default)]
    pub context: Option<String>,
    pub namespace: String,
    #[serde(default)]
    pub submitted_by: Option<String>,
    /// `running`, `succeeded`, `failed`, `stopped`.
    pub status: String,
    #[serde(default)]
    pub message: Option<String>,
    pub gym: GymPart,
    /// Fields from other nrl versions, written back unchanged.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// `<cache>/nrl/runs`.
pub fn runs_dir(env: &dyn Env) -> Option<PathBuf> {
    let cache = env
        .var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env.home().map(|h| h.join(".cache")))?;
    Some(cache.join("nrl").join("runs"))
}

fn path_of(env: &dyn Env, id: &str) -> Result<PathBuf> {
    runs_dir(env)
        .map(|d| d.join(format!("{id}.json")))
        .ok_or_else(|| {
            Diag::new(
                CODE_RECORD,
                "cannot place run records: neither XDG_CACHE_HOME nor HOME is set",
            )
            .help("set HOME (or XDG_CACHE_HOME to an absolute directory)")
        })
}

impl GymRecord {
    /// Write atomically (temp file + rename); returns the path.
    pub fn save(&self, env: &dyn Env) -> Result<PathBuf> {
        let path = path_of(env, &self.id)?;
        let dir = path.parent().map(PathBuf::from).unwrap_or_default();
        let io = |e: std::io::Error| {
            Diag::new(
                CODE_RECORD,
                format!("cannot write the run record {}: {e}", path.display()),
            )
            .help("check that the cache directory is writable")
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| Diag::new(CODE_RECORD, e.to_string()))?;
        text.push('\n');
        let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io)?;
        tmp.write_all(text.as_bytes()).map_err(io)?;
        tmp.persist(&path).map_err(|e| io(e.error))?;
        Ok(path)
    }

    /// The record of `id`, `Ok(None)` when there is none.
    pub fn load(env: &dyn Env, id: &str) -> Result<Option<GymRecord>> {
        let path = path_of(env, id)?;
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(Diag::new(
                    CODE_RECORD,
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        };
        let rec: GymRecord = serde_json::from_str(&text).map_err(|e| {
            Diag::new(CODE_RECORD, format!("{} is not a Gym run record: {e}", path.display()))
                .help("delete the file if it is damaged; the run's Jobs are still found by label with --namespace")
        })?;
        if rec.kind != "gym" {
            return Err(Diag::new(
                CODE_RECORD,
                format!("run `{id}` is a `{}` run, not a Gym run", rec.kind),
            )
            .help("use `nrl job`/`nrl run` commands for it"));
        }
        Ok(Some(rec))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::MapEnv;

    fn record() -> GymRecord {
        GymRecord {
            id: "gym-job-x".into(),
            kind: "gym".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: None,
            overrides: vec!["a=1".into()],
            context: Some("ctx".into()),
            namespace: "eng-test".into(),
            submitted_by: Some("alice".into()),
            status: "running".into(),
            message: None,
            gym: GymPart {
                config: "gym.yaml".into(),
                base_run_dir: "tmp/jobs/gym-job-x".into(),
                secret: None,
                benchmarks: vec![RecordBenchmark {
                    benchmark: "bench_a".into(),
                    job: "gym-gym-job-x-bench-a".into(),
                    run_dir: "tmp/jobs/gym-job-x/bench_a".into(),
                    error: None,
                    phase: None,
                    detail: None,
                }],
            },
            extra: Default::default(),
        }
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
        assert_eq!(GymRecord::load(&env, "gym-job-x").unwrap(), Some(r));
        assert_eq!(GymRecord::load(&env, "other").unwrap(), None);
        // HOME is the fallback; a relative XDG_CACHE_HOME is ignored.
        let env = MapEnv::new([("XDG_CACHE_HOME", "rel"), ("HOME", "/h")]);
        assert_eq!(runs_dir(&env).unwrap(), PathBuf::from("/h/.cache/nrl/runs"));
    }

    #[test]
    fn unknown_fields_survive_and_other_kinds_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let env = MapEnv::new([("XDG_CACHE_HOME", dir.path().to_str().unwrap())]);
        let mut v = serde_json::to_value(record()).unwrap();
        v["future_field"] = serde_json::json!(7);
        std::fs::create_dir_all(dir.path().join("nrl/runs")).unwrap();
        std::fs::write(dir.path().join("nrl/runs/gym-job-x.json"), v.to_string()).unwrap();
        let r = GymRecord::load(&env, "gym-job-x").unwrap().unwrap();
        assert_eq!(r.extra["future_field"], 7);
        v["kind"] = serde_json::json!("rayjob");
        std::fs::write(dir.path().join("nrl/runs/gym-job-x.json"), v.to_string()).unwrap();
        assert!(GymRecord::load(&env, "gym-job-x").is_err());
    }
}
