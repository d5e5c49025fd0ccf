//! Rendering: pure functions from resolved configuration to Kubernetes objects, the
//! offline checks every rendered object passes before anything is applied, and the
//! serializers that print them.

pub mod emit;
pub mod validate;
