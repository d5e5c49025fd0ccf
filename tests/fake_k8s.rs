//! Tests of the fake Kubernetes API server in `tests/support/fake_k8s`, driven through kube-rs
//! itself, so the fake is held to what a real client expects.

mod support;

#[path = "fake_k8s/common.rs"]
mod common;
#[path = "fake_k8s/crud.rs"]
mod crud;
#[path = "fake_k8s/faulting.rs"]
mod faulting;
#[path = "fake_k8s/pods.rs"]
mod pods;
#[path = "fake_k8s/ray_runner.rs"]
mod ray_runner;
#[path = "fake_k8s/sims.rs"]
mod sims;
#[path = "fake_k8s/ssa.rs"]
mod ssa;
#[path = "fake_k8s/units.rs"]
mod units;
#[path = "fake_k8s/watching.rs"]
mod watching;
