//! `nrl dev …` through the real binary against the fake Kubernetes API server: the secret
//! (server-side apply, removal, first use), the pod lifecycle (create, wait, run a
//! command, image mismatch, recreate, stop waits), the RBAC checks, and an interactive
//! session through a pseudo-terminal.

mod connect;
mod pty_session;
mod rbac;
mod secrets;
