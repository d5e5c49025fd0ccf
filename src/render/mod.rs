//! Rendering: pure functions from resolved configuration to Kubernetes objects, and the
//! offline checks every rendered object passes before anything is applied.

pub mod validate;
