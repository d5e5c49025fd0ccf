//! The schema files embedded in the binary, one per kind nrl renders (`schemas/` at the
//! repository root; see its README for where they come from and how they are trimmed).

use super::schema::Family;

pub(super) struct KindSource {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub family: Family,
    pub text: &'static str,
}

macro_rules! vendored {
    ($path:literal) => {
        include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/", $path))
    };
}

pub(super) const K8S_DEFINITIONS: &str = vendored!("kubernetes-v1.37/_definitions.json");
pub(super) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

pub(super) const KIND_SOURCES: &[KindSource] = &[
    KindSource {
        api_version: "ray.io/v1",
        kind: "RayCluster",
        family: Family::Crd,
        text: vendored!("kuberay/rayclusters.ray.io.v1.json"),
    },
    KindSource {
        api_version: "ray.io/v1",
        kind: "RayJob",
        family: Family::Crd,
        text: vendored!("kuberay/rayjobs.ray.io.v1.json"),
    },
    KindSource {
        api_version: "resource.nvidia.com/v1beta1",
        kind: "ComputeDomain",
        family: Family::Crd,
        text: vendored!("nvidia-dra/computedomains.resource.nvidia.com.v1beta1.json"),
    },
    KindSource {
        api_version: "resource.k8s.io/v1",
        kind: "ResourceClaimTemplate",
        family: Family::Kubernetes,
        text: vendored!("kubernetes-v1.37/resourceclaimtemplate-resource-v1.json"),
    },
    KindSource {
        api_version: "apps/v1",
        kind: "Deployment",
        family: Family::Kubernetes,
        text: vendored!("kubernetes-v1.37/deployment-apps-v1.json"),
    },
    KindSource {
        api_version: "v1",
        kind: "Service",
        family: Family::Kubernetes,
        text: vendored!("kubernetes-v1.37/service-v1.json"),
    },
    KindSource {
        api_version: "v1",
        kind: "ConfigMap",
        family: Family::Kubernetes,
        text: vendored!("kubernetes-v1.37/configmap-v1.json"),
    },
    KindSource {
        api_version: "v1",
        kind: "Secret",
        family: Family::Kubernetes,
        text: vendored!("kubernetes-v1.37/secret-v1.json"),
    },
    KindSource {
        api_version: "v1",
        kind: "Pod",
        family: Family::Kubernetes,
        text: vendored!("kubernetes-v1.37/pod-v1.json"),
    },
    KindSource {
        api_version: "batch/v1",
        kind: "Job",
        family: Family::Kubernetes,
        text: vendored!("kubernetes-v1.37/job-batch-v1.json"),
    },
];

/// `(apiVersion, kind)` of every kind with a bundled schema, for messages.
pub(super) fn supported_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    KIND_SOURCES.iter().map(|k| (k.api_version, k.kind))
}
