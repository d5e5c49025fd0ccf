//! Talking to Ray directly: the Job Submission REST API ([`RayClient`]), working_dir
//! packaging and upload, the log websocket, and following a job to its end. Knows
//! nothing about recipes; `launch/` composes it with the rest.

pub mod archive;
pub mod client;
pub mod driver_file;
pub mod error;
pub mod follow;
pub mod logs_stream;
pub mod package;
pub mod retry;
pub mod submit;
pub mod tail;
pub mod types;
pub mod upload;
pub mod zip_stream;

pub use client::{RayClient, RayClientOptions};
pub use follow::{FollowOptions, StopOutcome, follow_job, stop_job, wait_terminal};
pub use package::{DEFAULT_UPLOAD_PATHS, RAY_PACKAGE_LIMIT, UploadSet};
pub use retry::RetryPolicy;
pub use submit::{JobSpec, Submitted, submit_job};
pub use tail::LogTail;
pub use types::{
    JobDetails, JobStatus, NodeInfo, NodeLogFile, RayVersion, RuntimeEnv, SubmitRequest,
    SubmitResponse,
};
pub use upload::{PackageOptions, PackageUpload, ensure_package};
