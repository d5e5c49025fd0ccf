//! Test infrastructure shared by integration tests: a real local Ray head and a fake
//! Kubernetes API server. A test binary that uses either declares `mod support;`.

pub mod fake_k8s;
pub mod ray_head;
