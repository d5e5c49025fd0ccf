//! The Kubernetes layer (`nrl::k8s`) against the fake API server: apply, get/list,
//! delete, drift, watch-based waits, retries and faults, logs, port-forward and exec.

mod support;

#[path = "k8s_layer/catalogue.rs"]
mod catalogue;
#[path = "k8s_layer/common.rs"]
mod common;
#[path = "k8s_layer/connect.rs"]
mod connect;
#[path = "k8s_layer/exec.rs"]
mod exec;
#[path = "k8s_layer/faults.rs"]
mod faults;
#[path = "k8s_layer/logs.rs"]
mod logs;
#[path = "k8s_layer/objects.rs"]
mod objects;
#[path = "k8s_layer/portforward.rs"]
mod portforward;
#[path = "k8s_layer/waits.rs"]
mod waits;
