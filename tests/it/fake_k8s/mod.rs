//! Tests of the fake Kubernetes API server in `tests/it/support/fake_k8s`, driven through kube-rs
//! itself, so the fake is held to what a real client expects.

mod common;
mod crud;
mod faulting;
mod pods;
mod ray_runner;
mod sims;
mod ssa;
mod units;
mod watching;
