//! Shared helpers of the fake-server tests.

pub use crate::support::fake_k8s::*;

/// A started fake and a client for it.
pub async fn setup() -> (FakeK8s, kube::Client) {
    let fake = FakeK8s::start();
    let client = fake.client().await;
    (fake, client)
}
