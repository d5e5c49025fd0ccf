//! Run records: one JSON file per run, `<cache>/nrl/runs/<id>.json`, next to the run's
//! directory `<cache>/nrl/runs/<id>/`. `<cache>` is `$XDG_CACHE_HOME` (when absolute)
//! or `~/.cache`.
//!
//! Records are written atomically (a temp file in the same directory, then a rename), so
//! a reader never sees half a record. New fields are optional with serde defaults, and
//! fields this version does not know are kept (`extra`) and written back unchanged, so
//! records from older and newer nrl versions stay readable and survive status updates.

pub mod cluster_copy;
pub mod context;
pub mod k8s;
pub mod listing;
pub mod lookup;
pub mod snapshot;

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::env::Env;
use crate::diag::{Diag, Result};
use crate::launch::local::reaper::ProcessId;

/// Error code for records that cannot be read or written.
pub const CODE_RECORD: &str = "nrl::run::record";
/// Error code for a run id with no record.
pub const CODE_NOT_FOUND: &str = "nrl::run::not_found";

/// How a run was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunKind {
    /// A local process (`nrl run --local`).
    Local,
    /// A job submitted to a Ray dashboard (`nrl run --ray-address`).
    Ray,
    /// An ephemeral KubeRay RayJob.
    Rayjob,
    /// A job on a long-lived RayCluster, submitted through a port-forward.
    RayclusterPortforward,
    /// A job on a long-lived RayCluster, started by exec in the head pod.
    RayclusterExec,
    /// A NeMo Gym benchmark run.
    Gym,
    /// A kind written by a newer nrl.
    #[serde(other)]
    Unknown,
}

impl RunKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::Local => "local",
            RunKind::Ray => "ray",
            RunKind::Rayjob => "rayjob",
            RunKind::RayclusterPortforward => "raycluster-portforward",
            RunKind::RayclusterExec => "raycluster-exec",
            RunKind::Gym => "gym",
            RunKind::Unknown => "unknown",
        }
    }

    /// Runs whose objects live on Kubernetes (a RayJob, or a job on a RayCluster).
    pub fn is_on_kubernetes(self) -> bool {
        matches!(
            self,
            RunKind::Rayjob | RunKind::RayclusterPortforward | RunKind::RayclusterExec
        )
    }
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    #[default]
    Running,
    Succeeded,
    Failed,
    /// Stopped by the user (Ctrl-C, `job stop`).
    Stopped,
    /// The nrl process that kept the record is gone (killed with SIGKILL, or the machine
    /// went down) without recording how the run ended.
    Lost,
    /// A status written by a newer nrl.
    #[serde(other)]
    Unknown,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Stopped => "stopped",
            RunStatus::Lost => "lost",
            RunStatus::Unknown => "unknown",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Succeeded | RunStatus::Failed | RunStatus::Stopped | RunStatus::Lost
        )
    }

    /// The statuses a user may ask for, by name (`running`, `failed`, …).
    pub const KNOWN: [RunStatus; 5] = [
        RunStatus::Running,
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Stopped,
        RunStatus::Lost,
    ];

    /// One of [`RunStatus::KNOWN`] by its name.
    pub fn parse(name: &str) -> Option<RunStatus> {
        RunStatus::KNOWN.into_iter().find(|s| s.as_str() == name)
    }
}

/// The Ray job behind a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RayJobRef {
    /// Dashboard URL.
    pub address: String,
    pub submission_id: String,
}

/// The local process behind a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LocalProcess {
    /// Also the process group id (the child leads its own group).
    pub pid: u32,
    /// Its start time (`/proc/<pid>/stat` field 22): with the pid, names the process
    /// even after the pid is reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
}

impl LocalProcess {
    /// Whether this very process still runs (`None`: cannot tell, no start time).
    pub fn is_alive(&self) -> Option<bool> {
        let start_time = self.start_time?;
        Some(
            ProcessId {
                pid: self.pid,
                start_time,
            }
            .is_alive(),
        )
    }
}

/// Where a run on Kubernetes lives (kube context, namespace and `cluster` are in the
/// record itself).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct K8sRun {
    /// The RayJob of an ephemeral run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rayjob: Option<String>,
    /// The RayCluster the job runs on (a RayJob's cluster once KubeRay named it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raycluster: Option<String>,
    /// The Ray submission id (the run id, except for runs of older tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submission_id: Option<String>,
    /// Exec runs: the head pod at submit time and the run's directory on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_dir: Option<String>,
    /// RayJob runs: `shutdownAfterJobFinishes` and `ttlSecondsAfterFinished`.
    #[serde(default)]
    pub shutdown: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<i64>,
    /// The recipe's `logger.wandb_enabled` (the checklist then wants a W&B run URL).
    #[serde(default)]
    pub wandb: bool,
}

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub id: String,
    pub kind: RunKind,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// RFC 3339, UTC; the last status change.
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub recipe: Option<String>,
    #[serde(default)]
    pub infra: Option<String>,
    #[serde(default)]
    pub overrides: Vec<String>,
    /// Kube context, for runs on a cluster.
    #[serde(default)]
    pub context: Option<String>,
    #[serde(default)]
    pub namespace: Option<String>,
    /// RayCluster (or RayJob) name, for runs on a cluster.
    #[serde(default)]
    pub cluster: Option<String>,
    #[serde(default)]
    pub ray: Option<RayJobRef>,
    /// The run directory: staged files and `driver.log`.
    #[serde(default)]
    pub run_dir: Option<String>,
    #[serde(default)]
    pub local: Option<LocalProcess>,
    /// Local runs: the nrl process that keeps this record up to date. When it is gone
    /// and the record still says running, readers mark the run `lost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<ProcessId>,
    /// Runs on Kubernetes: the objects behind the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8s: Option<K8sRun>,
    #[serde(default)]
    pub status: RunStatus,
    /// The entrypoint's exit code (128 + N when a signal N ended it).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// One line on how the run ended.
    #[serde(default)]
    pub message: Option<String>,
    /// Fields from a newer nrl, kept as they are.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl RunRecord {
    /// A new running record created now.
    pub fn new(id: impl Into<String>, kind: RunKind) -> RunRecord {
        RunRecord {
            id: id.into(),
            kind,
            created_at: now(),
            updated_at: None,
            recipe: None,
            infra: None,
            overrides: Vec::new(),
            context: None,
            namespace: None,
            cluster: None,
            ray: None,
            run_dir: None,
            local: None,
            supervisor: None,
            k8s: None,
            status: RunStatus::Running,
            exit_code: None,
            message: None,
            extra: serde_json::Map::new(),
        }
    }

    /// Record a status change (stamps `updated_at`).
    pub fn set_status(
        &mut self,
        status: RunStatus,
        exit_code: Option<i32>,
        message: Option<String>,
    ) {
        self.status = status;
        self.exit_code = exit_code;
        self.message = message;
        self.updated_at = Some(now());
    }

    /// Why this record is lost: it says running, but the nrl process that keeps it is
    /// gone (same pid and start time, or none). `None` when it is not lost or nrl cannot
    /// tell (records without a supervisor).
    pub fn lost_reason(&self) -> Option<String> {
        if self.status != RunStatus::Running || self.kind != RunKind::Local {
            return None;
        }
        let supervisor = self.supervisor?;
        if supervisor.is_alive() {
            return None;
        }
        let entrypoint = match &self.local {
            Some(l) => match l.is_alive() {
                Some(true) => format!("; its entrypoint (pid {}) is still running", l.pid),
                Some(false) => format!("; its entrypoint (pid {}) is gone", l.pid),
                None => String::new(),
            },
            None => "; it had not started its entrypoint".into(),
        };
        Some(format!(
            "nrl (pid {}) ended without recording how the run ended{entrypoint}",
            supervisor.pid
        ))
    }

    fn created(&self) -> Option<jiff::Timestamp> {
        self.created_at.parse().ok()
    }
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

/// The directory of run records and run directories.
#[derive(Debug, Clone)]
pub struct RunStore {
    dir: PathBuf,
}

impl RunStore {
    /// A store in `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> RunStore {
        RunStore { dir: dir.into() }
    }

    /// `$XDG_CACHE_HOME/nrl/runs` (when set and absolute), else `~/.cache/nrl/runs`.
    pub fn from_env(env: &dyn Env) -> Result<RunStore> {
        let cache = match env.var("XDG_CACHE_HOME") {
            Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
            _ => match env.home() {
                Some(home) => home.join(".cache"),
                None => {
                    return Err(Diag::new(
                        CODE_RECORD,
                        "cannot find a cache directory for run records",
                    )
                    .help("set HOME or XDG_CACHE_HOME"));
                }
            },
        };
        Ok(RunStore::new(cache.join("nrl").join("runs")))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `<dir>/<id>.json`
    pub fn record_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// `<dir>/<id>/`: the run's staged files and logs.
    pub fn run_dir(&self, id: &str) -> PathBuf {
        self.dir.join(id)
    }

    /// Whether a record or run directory already uses `id`.
    pub fn exists(&self, id: &str) -> bool {
        self.record_path(id).exists() || self.run_dir(id).exists()
    }

    /// Write `record` atomically (temp file + rename in the same directory).
    pub fn save(&self, record: &RunRecord) -> Result<()> {
        let write_error = |e: &dyn std::fmt::Display| {
            Diag::new(
                CODE_RECORD,
                format!("cannot write the run record for `{}`: {e}", record.id),
            )
            .help(format!("check that {} is writable", self.dir.display()))
        };
        std::fs::create_dir_all(&self.dir).map_err(|e| write_error(&e))?;
        let mut json = serde_json::to_vec_pretty(record).map_err(|e| write_error(&e))?;
        json.push(b'\n');
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", record.id))
            .suffix(".tmp")
            .tempfile_in(&self.dir)
            .map_err(|e| write_error(&e))?;
        tmp.write_all(&json)
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(|e| write_error(&e))?;
        tmp.persist(self.record_path(&record.id))
            .map_err(|e| write_error(&e.error))?;
        Ok(())
    }

    /// The record of run `id`. A local run whose nrl process is gone while the record
    /// says running is marked `lost` (and saved so).
    pub fn load(&self, id: &str) -> Result<RunRecord> {
        let record = self.read(id)?;
        if record.lost_reason().is_none() {
            return Ok(record);
        }
        // The supervisor is gone, so it writes no more: what is on disk now is its last
        // word (it may have recorded the end between the read above and the check).
        let mut record = self.read(id)?;
        if let Some(reason) = record.lost_reason() {
            record.set_status(RunStatus::Lost, None, Some(reason));
            if let Err(e) = self.save(&record) {
                tracing::warn!(%e, "cannot mark the run lost in its record");
            }
        }
        Ok(record)
    }

    fn read(&self, id: &str) -> Result<RunRecord> {
        let path = self.record_path(id);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(
                    Diag::new(CODE_NOT_FOUND, format!("no run `{id}`")).help(format!(
                        "run records are kept in {}; check the id",
                        self.dir.display()
                    )),
                );
            }
            Err(e) => {
                return Err(Diag::new(
                    CODE_RECORD,
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        };
        serde_json::from_str(&text).map_err(|e| {
            Diag::new(
                CODE_RECORD,
                format!("run record {} is not valid: {e}", path.display()),
            )
            .help("remove the file if the run no longer matters")
        })
    }

    /// All readable records, newest first. Files that are not records are skipped.
    pub fn list(&self) -> Result<Vec<RunRecord>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => {
                return Err(Diag::new(
                    CODE_RECORD,
                    format!("cannot list {}: {e}", self.dir.display()),
                ));
            }
        };
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if id.starts_with('.') {
                continue; // an unfinished atomic write
            }
            match self.load(id) {
                Ok(record) => records.push(record),
                Err(e) => tracing::warn!(%e, "skipping unreadable run record"),
            }
        }
        records.sort_by(|a, b| b.created().cmp(&a.created()).then_with(|| b.id.cmp(&a.id)));
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::MapEnv;

    fn store() -> (tempfile::TempDir, RunStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path().join("runs"));
        (dir, store)
    }

    #[test]
    fn base_directory_follows_xdg_then_home() {
        let env = MapEnv::new([("HOME", "/h"), ("XDG_CACHE_HOME", "/x/cache")]);
        assert_eq!(
            RunStore::from_env(&env).unwrap().dir(),
            Path::new("/x/cache/nrl/runs")
        );
        // A relative XDG_CACHE_HOME is invalid per the spec and ignored.
        let env = MapEnv::new([("HOME", "/h"), ("XDG_CACHE_HOME", "rel")]);
        assert_eq!(
            RunStore::from_env(&env).unwrap().dir(),
            Path::new("/h/.cache/nrl/runs")
        );
        let env = MapEnv::new([]);
        assert_eq!(RunStore::from_env(&env).unwrap_err().code, CODE_RECORD);
    }

    #[test]
    fn records_round_trip() {
        let (_tmp, store) = store();
        let mut rec = RunRecord::new("quick-20260101-000000-abcd", RunKind::Ray);
        rec.recipe = Some("/r/recipe.yaml".into());
        rec.infra = Some("/r/infra.yaml".into());
        rec.overrides = vec!["grpo.max_num_steps=2".into()];
        rec.ray = Some(RayJobRef {
            address: "http://127.0.0.1:8265".into(),
            submission_id: rec.id.clone(),
        });
        rec.run_dir = Some(store.run_dir(&rec.id).display().to_string());
        store.save(&rec).unwrap();
        assert_eq!(store.load(&rec.id).unwrap(), rec);

        rec.set_status(RunStatus::Failed, Some(3), Some("exit code 3".into()));
        store.save(&rec).unwrap();
        let back = store.load(&rec.id).unwrap();
        assert_eq!(back.status, RunStatus::Failed);
        assert_eq!(back.exit_code, Some(3));
        assert!(back.updated_at.is_some());
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(store.record_path(&rec.id)).unwrap())
                .unwrap();
        assert_eq!(json["kind"], "ray");
        assert_eq!(json["status"], "failed");
    }

    #[test]
    fn saving_replaces_atomically_and_leaves_no_temp_files() {
        let (_tmp, store) = store();
        let mut rec = RunRecord::new("a-1", RunKind::Local);
        store.save(&rec).unwrap();
        // Hold the old file open: a rename swaps the name, the reader keeps the old
        // contents, and the new file is complete when it appears.
        let old = std::fs::read_to_string(store.record_path("a-1")).unwrap();
        rec.local = Some(LocalProcess {
            pid: 42,
            start_time: None,
        });
        store.save(&rec).unwrap();
        let new = std::fs::read_to_string(store.record_path("a-1")).unwrap();
        assert_ne!(old, new);
        assert!(new.ends_with("}\n"));
        let names: Vec<String> = std::fs::read_dir(store.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a-1.json"]);
    }

    #[test]
    fn old_and_new_records_stay_readable() {
        let (_tmp, store) = store();
        std::fs::create_dir_all(store.dir()).unwrap();
        // An old record: only the first fields existed.
        std::fs::write(
            store.record_path("old-1"),
            r#"{"id": "old-1", "kind": "local", "created_at": "2026-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        let old = store.load("old-1").unwrap();
        assert_eq!(old.status, RunStatus::Running);
        assert!(old.overrides.is_empty() && old.local.is_none());

        // A newer record: an unknown kind, status and field survive a rewrite.
        std::fs::write(
            store.record_path("new-1"),
            r#"{"id": "new-1", "kind": "warp-drive", "created_at": "2026-01-02T00:00:00Z",
                "status": "paused", "gym": {"benchmarks": 3}}"#,
        )
        .unwrap();
        let mut new = store.load("new-1").unwrap();
        assert_eq!(new.kind, RunKind::Unknown);
        assert_eq!(new.status, RunStatus::Unknown);
        new.message = Some("seen".into());
        store.save(&new).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(store.record_path("new-1")).unwrap())
                .unwrap();
        assert_eq!(json["gym"]["benchmarks"], 3);
    }

    #[test]
    fn list_is_newest_first_and_skips_junk() {
        let (_tmp, store) = store();
        for (id, created) in [
            ("b", "2026-01-02T00:00:00Z"),
            ("a", "2026-01-03T00:00:00Z"),
            ("c", "2026-01-01T00:00:00Z"),
        ] {
            let mut rec = RunRecord::new(id, RunKind::Local);
            rec.created_at = created.into();
            store.save(&rec).unwrap();
        }
        std::fs::write(store.dir().join("junk.json"), "not json").unwrap();
        std::fs::write(store.dir().join(".x.json.tmp"), "{").unwrap();
        std::fs::create_dir_all(store.run_dir("a")).unwrap();
        let ids: Vec<String> = store.list().unwrap().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        assert!(store.exists("a") && !store.exists("zzz"));
        assert!(RunStore::new("/nonexistent/nrl").list().unwrap().is_empty());
    }

    #[test]
    fn missing_records_are_not_found() {
        let (_tmp, store) = store();
        assert_eq!(store.load("nope").unwrap_err().code, CODE_NOT_FOUND);
    }

    fn local_record(store: &RunStore, id: &str, supervisor: Option<ProcessId>) -> RunRecord {
        let mut rec = RunRecord::new(id, RunKind::Local);
        rec.supervisor = supervisor;
        store.save(&rec).unwrap();
        rec
    }

    #[test]
    fn a_running_local_record_whose_nrl_is_gone_reads_as_lost() {
        let (_tmp, store) = store();
        let me = ProcessId::this().unwrap();
        // Same pid, another start time: the pid was reused, the supervisor is gone.
        let reused = ProcessId {
            start_time: me.start_time + 1,
            ..me
        };
        let mut rec = local_record(&store, "lost-1", Some(reused));
        rec.local = Some(LocalProcess {
            pid: me.pid,
            start_time: Some(me.start_time),
        });
        store.save(&rec).unwrap();
        let back = store.load("lost-1").unwrap();
        assert_eq!(back.status, RunStatus::Lost);
        assert!(back.status.is_terminal());
        assert_eq!(
            back.message.as_deref(),
            Some(
                format!(
                    "nrl (pid {}) ended without recording how the run ended; \
                     its entrypoint (pid {}) is still running",
                    me.pid, me.pid
                )
                .as_str()
            )
        );
        // Saved so: the file says lost, and so does the listing.
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(store.record_path("lost-1")).unwrap())
                .unwrap();
        assert_eq!(json["status"], "lost");
        assert_eq!(store.list().unwrap()[0].status, RunStatus::Lost);
    }

    #[test]
    fn only_running_local_records_with_a_dead_supervisor_are_lost() {
        let (_tmp, store) = store();
        let me = ProcessId::this().unwrap();
        let dead = ProcessId {
            start_time: me.start_time + 1,
            ..me
        };
        local_record(&store, "alive-1", Some(me));
        local_record(&store, "old-1", None);
        let mut done = local_record(&store, "done-1", Some(dead));
        done.set_status(RunStatus::Succeeded, Some(0), None);
        store.save(&done).unwrap();
        let mut ray = RunRecord::new("ray-1", RunKind::Ray);
        ray.supervisor = Some(dead);
        store.save(&ray).unwrap();
        for (id, want) in [
            ("alive-1", RunStatus::Running),
            ("old-1", RunStatus::Running),
            ("done-1", RunStatus::Succeeded),
            ("ray-1", RunStatus::Running),
        ] {
            assert_eq!(store.load(id).unwrap().status, want, "{id}");
        }
        let json = std::fs::read_to_string(store.record_path("alive-1")).unwrap();
        assert!(json.contains("\"supervisor\""), "{json}");
    }
}
