//! The Kubernetes layer (`nrl::k8s`) against the fake API server: apply, get/list,
//! delete, drift, watch-based waits, retries and faults, logs, port-forward and exec.

mod catalogue;
mod common;
mod connect;
mod exec;
mod faults;
mod logs;
mod objects;
mod portforward;
mod waits;
