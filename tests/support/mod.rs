//! Test infrastructure shared by integration tests: a real local Ray head, a fake
//! Kubernetes API server and a pseudo-terminal driver. A test binary that uses any of
//! them declares `mod support;`.

pub mod fake_k8s;
pub mod ray_head;
pub mod terminal;
