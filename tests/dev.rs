//! `nrl dev …` through the real binary against the fake Kubernetes API server: the secret
//! (server-side apply, removal, first use), the pod lifecycle (create, wait, run a
//! command, image mismatch, recreate, stop waits), the RBAC checks, and an interactive
//! session through a pseudo-terminal.

mod support;

#[path = "dev/common.rs"]
mod common;
#[path = "dev/connect.rs"]
mod connect;
#[path = "dev/pty_session.rs"]
mod pty_session;
#[path = "dev/rbac.rs"]
mod rbac;
#[path = "dev/secrets.rs"]
mod secrets;
