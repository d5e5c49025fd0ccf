//! The Ray Job Submission API's JSON shapes (Ray 2.x, API contract version 4).
//!
//! Requests carry only keys Ray knows: its `JobSubmitRequest` is a dataclass built with
//! `**body`, so any unknown key is a 400.

use std::collections::BTreeMap;
use std::fmt;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::diag::Exit;

/// A job's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStatus {
    Pending,
    Running,
    Succeeded,
    Failed,
    Stopped,
    /// A state this client does not know (a newer Ray); treated as not terminal.
    #[serde(other)]
    Unknown,
}

impl JobStatus {
    /// The job will not change any more.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobStatus::Succeeded | JobStatus::Failed | JobStatus::Stopped
        )
    }

    /// Process exit code for a command that waited on the job: SUCCEEDED 0; FAILED and
    /// STOPPED 1. A job still in flight maps to 0 (the command itself succeeded).
    pub fn exit(self) -> Exit {
        match self {
            JobStatus::Failed | JobStatus::Stopped => Exit::Failed,
            _ => Exit::Ok,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "PENDING",
            JobStatus::Running => "RUNNING",
            JobStatus::Succeeded => "SUCCEEDED",
            JobStatus::Failed => "FAILED",
            JobStatus::Stopped => "STOPPED",
            JobStatus::Unknown => "UNKNOWN",
        }
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `GET /api/jobs/{id}` and the elements of `GET /api/jobs/`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobDetails {
    /// `SUBMISSION` or `DRIVER` (a script that called `ray.init()` directly).
    #[serde(rename = "type", default)]
    pub job_type: Option<String>,
    /// The Ray job id (`02000000`); null until the entrypoint calls `ray.init()`.
    #[serde(default)]
    pub job_id: Option<String>,
    /// The submission id; null for driver jobs.
    #[serde(default)]
    pub submission_id: Option<String>,
    pub status: JobStatus,
    #[serde(default)]
    pub entrypoint: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub error_type: Option<String>,
    /// Epoch milliseconds.
    #[serde(default)]
    pub start_time: Option<i64>,
    /// Epoch milliseconds; null while running.
    #[serde(default)]
    pub end_time: Option<i64>,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub runtime_env: Option<serde_json::Value>,
    #[serde(default)]
    pub driver_exit_code: Option<i64>,
    /// The node the driver runs on (and writes its log on); set once the job runs.
    #[serde(default)]
    pub driver_node_id: Option<String>,
}

impl JobDetails {
    /// The id to address this job with: the submission id, else the Ray job id.
    pub fn id(&self) -> Option<&str> {
        self.submission_id.as_deref().or(self.job_id.as_deref())
    }
}

/// Ray's `runtime_env`, restricted to what nrl sets.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RuntimeEnv {
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub env_vars: IndexMap<String, String>,
    /// A package URI such as `gcs://_ray_pkg_<hex>.zip`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
}

impl RuntimeEnv {
    pub fn is_empty(&self) -> bool {
        self.env_vars.is_empty() && self.working_dir.is_none()
    }
}

/// `POST /api/jobs/` body. Unset options are left out of the JSON entirely.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SubmitRequest {
    /// Shell command run on the head node.
    pub entrypoint: String,
    /// Client-chosen id; Ray generates `raysubmit_…` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission_id: Option<String>,
    #[serde(skip_serializing_if = "RuntimeEnv::is_empty")]
    pub runtime_env: RuntimeEnv,
    /// String to string only (Ray validates this).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_cpus: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_num_gpus: Option<f64>,
    /// Bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_memory: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint_resources: Option<BTreeMap<String, f64>>,
}

impl SubmitRequest {
    pub fn new(entrypoint: impl Into<String>) -> SubmitRequest {
        SubmitRequest {
            entrypoint: entrypoint.into(),
            ..SubmitRequest::default()
        }
    }
}

/// `POST /api/jobs/` answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SubmitResponse {
    pub submission_id: String,
    #[serde(default)]
    pub job_id: Option<String>,
}

/// `GET /api/version`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RayVersion {
    /// The Job API contract version ("4" for Ray 2.60).
    pub version: String,
    pub ray_version: String,
    #[serde(default)]
    pub ray_commit: Option<String>,
    #[serde(default)]
    pub session_name: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct LogsResponse {
    pub logs: String,
}

#[derive(Debug, Deserialize)]
pub(crate) struct StopResponse {
    pub stopped: bool,
}

#[derive(Debug, Deserialize)]
pub(crate) struct DeleteResponse {
    pub deleted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys of Ray 2.60's `JobSubmitRequest` dataclass; anything else is a 400.
    const RAY_SUBMIT_KEYS: &[&str] = &[
        "entrypoint",
        "submission_id",
        "job_id",
        "runtime_env",
        "metadata",
        "entrypoint_num_cpus",
        "entrypoint_num_gpus",
        "entrypoint_memory",
        "entrypoint_resources",
        "entrypoint_label_selector",
    ];

    #[test]
    fn minimal_request_is_just_the_entrypoint() {
        let json = serde_json::to_value(SubmitRequest::new("python main.py")).unwrap();
        assert_eq!(json, serde_json::json!({"entrypoint": "python main.py"}));
    }

    #[test]
    fn full_request_uses_only_keys_ray_knows() {
        let mut req = SubmitRequest::new("python main.py");
        req.submission_id = Some("nrl-1".into());
        req.runtime_env
            .env_vars
            .insert("NRL_GREETING".into(), "hi".into());
        req.runtime_env.working_dir = Some("gcs://_ray_pkg_0123456789abcdef.zip".into());
        req.metadata.insert("owner".into(), "nrl".into());
        req.entrypoint_num_cpus = Some(0.5);
        req.entrypoint_num_gpus = Some(1.0);
        req.entrypoint_memory = Some(1 << 30);
        req.entrypoint_resources = Some(BTreeMap::from([("custom".to_string(), 2.0)]));
        let json = serde_json::to_value(&req).unwrap();
        let obj = json.as_object().unwrap();
        for key in obj.keys() {
            assert!(RAY_SUBMIT_KEYS.contains(&key.as_str()), "unknown key {key}");
        }
        assert_eq!(obj.len(), 8);
        assert_eq!(
            json["runtime_env"],
            serde_json::json!({
                "env_vars": {"NRL_GREETING": "hi"},
                "working_dir": "gcs://_ray_pkg_0123456789abcdef.zip"
            })
        );
    }

    #[test]
    fn job_details_parse_ray_260_answer() {
        let body = r#"{"type": "SUBMISSION", "job_id": null, "submission_id": "nrl-test-1",
            "driver_info": null, "status": "SUCCEEDED", "entrypoint": "python -c ...",
            "message": "Job finished successfully.", "error_type": null,
            "start_time": 1795982326574, "end_time": 1795982330713,
            "metadata": {"owner": "nrl"}, "runtime_env": {"env_vars": {"A": "1"}},
            "driver_agent_http_address": "http://127.0.0.1:52365",
            "driver_node_id": "d3ca", "driver_exit_code": 0}"#;
        let d: JobDetails = serde_json::from_str(body).unwrap();
        assert_eq!(d.status, JobStatus::Succeeded);
        assert_eq!(d.id(), Some("nrl-test-1"));
        assert_eq!(d.start_time, Some(1795982326574));
        assert_eq!(d.driver_exit_code, Some(0));
    }

    #[test]
    fn driver_jobs_fall_back_to_job_id_and_unknown_states_are_not_terminal() {
        let body = r#"{"type": "DRIVER", "job_id": "02000000", "submission_id": null,
            "status": "RESCHEDULING"}"#;
        let d: JobDetails = serde_json::from_str(body).unwrap();
        assert_eq!(d.id(), Some("02000000"));
        assert_eq!(d.status, JobStatus::Unknown);
        assert!(!d.status.is_terminal());
    }

    #[test]
    fn terminal_states_and_exit_codes() {
        use JobStatus::*;
        assert!(!Pending.is_terminal() && !Running.is_terminal());
        assert!(Succeeded.is_terminal() && Failed.is_terminal() && Stopped.is_terminal());
        assert_eq!(Succeeded.exit(), Exit::Ok);
        assert_eq!(Failed.exit(), Exit::Failed);
        assert_eq!(Stopped.exit(), Exit::Failed);
    }
}

/// One node of `GET /api/v0/nodes` (Ray's state API `NodeState`; fields this client reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeInfo {
    pub node_id: String,
    #[serde(default)]
    pub node_ip: String,
    #[serde(default)]
    pub is_head_node: bool,
    /// `ALIVE` or `DEAD`; only alive nodes' agents serve their log files.
    #[serde(default)]
    pub state: String,
    #[serde(default)]
    pub node_name: String,
}

/// A log file fetched through `GET /api/v0/logs/file`, possibly only its tail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLogFile {
    /// The bytes kept: the whole answer, or its last `keep_bytes` (from a line start).
    pub bytes: Vec<u8>,
    /// Bytes Ray sent.
    pub received: u64,
    /// Whether the file may hold more than `bytes`: Ray sent as many lines as asked for,
    /// or more bytes than were kept.
    pub truncated: bool,
}
