//! The cluster commands through the `nrl` binary against the fake API server (and a stub
//! or real Ray dashboard behind the head pods' port 8265): `cluster up|down|list|
//! dashboard`, `status`, `logs`, asserting on what reached the API server.

mod support;

#[path = "cluster_cli/common.rs"]
mod common;
#[path = "cluster_cli/dashboard.rs"]
mod dashboard;
#[path = "cluster_cli/faults.rs"]
mod faults;
#[path = "cluster_cli/lifecycle.rs"]
mod lifecycle;
#[path = "cluster_cli/orchestrate.rs"]
mod orchestrate;
#[path = "cluster_cli/owner.rs"]
mod owner;
#[path = "cluster_cli/stub_ray.rs"]
mod stub_ray;
#[path = "cluster_cli/update.rs"]
mod update;
