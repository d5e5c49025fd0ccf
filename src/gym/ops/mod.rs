//! A run on a cluster: apply its objects, watch it through one label-selected watch,
//! read its status and logs, cancel it. Everything goes through [`crate::k8s::K8s`].

pub mod apply;
pub mod cancel;
pub mod logs;
pub mod watch;

use kube::discovery::ApiResource;

use crate::diag::Result;
use crate::k8s::resources::api_resource;

pub(crate) fn jobs() -> Result<ApiResource> {
    api_resource("batch/v1", "Job")
}

pub(crate) fn pods() -> Result<ApiResource> {
    api_resource("v1", "Pod")
}

pub(crate) fn secrets() -> Result<ApiResource> {
    api_resource("v1", "Secret")
}
