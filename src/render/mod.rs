//! Rendering: pure functions from the resolved configuration to Kubernetes manifests, and
//! the serializers that print them.

pub mod emit;
