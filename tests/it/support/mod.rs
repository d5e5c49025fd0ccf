//! Test infrastructure shared by the integration tests (`crate::support::…`): the
//! repository's test data, a real local Ray head, a fake Kubernetes API server, a stand-in
//! Ray dashboard, a dev pod environment, the in-process script host and a
//! pseudo-terminal driver.

pub mod context;
pub mod data;
pub mod dev_env;
pub mod fake_k8s;
pub mod ray_head;
pub mod script_host;
pub mod stub_ray;
pub mod terminal;
pub mod testbed;
