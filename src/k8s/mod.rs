//! Kubernetes through kube-rs: connect, server-side apply, get/list/delete, watch-based
//! waits, pod logs, port-forward and exec. Knows nothing about recipes.

pub mod access;
pub mod client;
pub mod errors;
pub mod exec;
pub mod logs;
pub mod objects;
pub mod portforward;
pub mod resources;
pub mod retry;
pub mod wait;

pub use access::Access;
pub use client::{ConnectOptions, K8s};
pub use objects::{ApplyOptions, Drift, ObjectRef};
pub use wait::Verdict;
