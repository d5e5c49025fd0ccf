//! The kinds with a bundled schema, one schema file each under `schemas/` at the
//! repository root (see its README for where they come from and how they are trimmed).
//! The binary embeds them pre-compiled (`schemas/compiled.rs`, see `schema.rs`), in this
//! order.

use super::schema::Family;

pub(super) struct KindSource {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub family: Family,
    /// The schema file, relative to `schemas/`.
    #[cfg_attr(not(test), allow(dead_code, reason = "read by the test-only compiler"))]
    pub file: &'static str,
}

/// The definitions the Kubernetes kind files refer to, relative to `schemas/`.
#[cfg(test)]
pub(super) const K8S_DEFINITIONS: &str = "kubernetes-v1.37/_definitions.json";
#[cfg(test)]
pub(super) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

pub(super) const KIND_SOURCES: &[KindSource] = &[
    KindSource {
        api_version: "ray.io/v1",
        kind: "RayCluster",
        family: Family::Crd,
        file: "kuberay/rayclusters.ray.io.v1.json",
    },
    KindSource {
        api_version: "ray.io/v1",
        kind: "RayJob",
        family: Family::Crd,
        file: "kuberay/rayjobs.ray.io.v1.json",
    },
    KindSource {
        api_version: "resource.nvidia.com/v1beta1",
        kind: "ComputeDomain",
        family: Family::Crd,
        file: "nvidia-dra/computedomains.resource.nvidia.com.v1beta1.json",
    },
    KindSource {
        api_version: "resource.k8s.io/v1",
        kind: "ResourceClaimTemplate",
        family: Family::Kubernetes,
        file: "kubernetes-v1.37/resourceclaimtemplate-resource-v1.json",
    },
    KindSource {
        api_version: "apps/v1",
        kind: "Deployment",
        family: Family::Kubernetes,
        file: "kubernetes-v1.37/deployment-apps-v1.json",
    },
    KindSource {
        api_version: "v1",
        kind: "Service",
        family: Family::Kubernetes,
        file: "kubernetes-v1.37/service-v1.json",
    },
    KindSource {
        api_version: "v1",
        kind: "ConfigMap",
        family: Family::Kubernetes,
        file: "kubernetes-v1.37/configmap-v1.json",
    },
    KindSource {
        api_version: "v1",
        kind: "Secret",
        family: Family::Kubernetes,
        file: "kubernetes-v1.37/secret-v1.json",
    },
    KindSource {
        api_version: "v1",
        kind: "Pod",
        family: Family::Kubernetes,
        file: "kubernetes-v1.37/pod-v1.json",
    },
    KindSource {
        api_version: "batch/v1",
        kind: "Job",
        family: Family::Kubernetes,
        file: "kubernetes-v1.37/job-batch-v1.json",
    },
];

/// `(apiVersion, kind)` of every kind with a bundled schema, for messages.
pub(super) fn supported_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    KIND_SOURCES.iter().map(|k| (k.api_version, k.kind))
}
