//! Kubernetes through kube-rs: connect, server-side apply, get/list/delete, watch-based
//! waits, pod logs, port-forward, exec (collected or attached to the terminal) and access
//! reviews. Knows nothing about recipes.

pub mod access;
pub mod body_limit;
pub mod client;
pub mod context;
pub mod discovery;
pub mod errors;
pub mod exec;
pub mod logs;
pub mod objects;
pub mod portforward;
pub mod resources;
pub mod retry;
pub mod status;
pub mod terminal;
pub mod wait;
pub mod watch;

pub use access::{Access, Permission, Subject};
pub use client::{ConnectOptions, K8s};
pub use context::ClusterContext;
pub use exec::{AttachedIo, ExecOutput};
pub use logs::LogOptions;
pub use objects::{ApplyOptions, Drift, ObjectRef, Propagation};
pub use portforward::{PodTarget, PortForward};
pub use wait::Verdict;
