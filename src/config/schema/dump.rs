//! `to_node`: the reference's JSON-mode dump of the validated model. Every field of every
//! model in declaration order, defaults included, enums as their strings, nulls as null,
//! free-form maps exactly as loaded.

use super::enums::StrEnum;
use super::models::*;
use crate::config::node::{Map, Node};

/// Builds one mapping in field order.
pub(super) struct Fields(Map);

impl Fields {
    pub(super) fn new() -> Fields {
        Fields(Map::new())
    }

    pub(super) fn put(mut self, key: &str, value: Node) -> Fields {
        self.0.insert(key.to_string(), value);
        self
    }

    pub(super) fn done(self) -> Node {
        Node::from_map(self.0)
    }
}

pub(super) fn str_or_null(s: &Option<String>) -> Node {
    s.as_deref().map_or_else(Node::null, Node::str)
}

fn int_or_null(i: Option<i64>) -> Node {
    i.map_or_else(Node::null, Node::int)
}

fn enum_node<E: StrEnum>(e: E) -> Node {
    Node::str(e.as_str())
}

fn enum_or_null<E: StrEnum>(e: Option<E>) -> Node {
    e.map_or_else(Node::null, enum_node)
}

pub(super) fn str_map(m: &StrMap) -> Node {
    Node::from_map(
        m.iter()
            .map(|(k, v)| (k.clone(), Node::str(v.as_str())))
            .collect(),
    )
}

pub(super) fn str_list(l: &[String]) -> Node {
    Node::list(l.iter().map(|s| Node::str(s.as_str())).collect())
}

pub(super) fn opt_node<T>(v: &Option<T>, f: impl Fn(&T) -> Node) -> Node {
    v.as_ref().map_or_else(Node::null, f)
}

impl InfraConfig {
    /// The validated config as a plain tree (the `infra` of a `check -o` bundle).
    pub fn to_node(&self) -> Node {
        let fields = Fields::new()
            .put("namespace", Node::str(self.namespace.as_str()))
            .put("image", Node::str(self.image.as_str()))
            .put("imagePullSecrets", str_list(&self.image_pull_secrets))
            .put("rayVersion", str_or_null(&self.ray_version))
            .put("serviceAccount", str_or_null(&self.service_account))
            .put("scheduler", self.scheduler.to_node())
            .put("placement", self.placement.to_node())
            .put("networking", self.networking.to_node())
            .put("workspace", self.workspace.to_node())
            .put("hf_cache", self.hf_cache.to_node())
            .put("checkpoints", self.checkpoints.to_node())
            .put("submit", self.submit.to_node())
            .put("launch", self.launch.to_node())
            .put("resources", self.resources.to_node())
            .put("kuberay", self.kuberay.to_node())
            .put(
                "deployments",
                Node::from_map(
                    self.deployments
                        .iter()
                        .map(|(k, d)| (k.clone(), d.to_node()))
                        .collect(),
                ),
            )
            .put("labels", str_map(&self.labels))
            .put("annotations", str_map(&self.annotations));
        // nrl's own section: absent from the reference's dump, so only shown when set.
        match &self.dev {
            Some(dev) => fields.put("dev", dev.to_node()).done(),
            None => fields.done(),
        }
    }
}

impl SchedulerSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("kind", enum_node(self.kind))
            .put("queue", str_or_null(&self.queue))
            .done()
    }
}

impl Toleration {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("key", Node::str(self.key.as_str()))
            .put("operator", enum_node(self.operator))
            .put("value", str_or_null(&self.value))
            .put("effect", enum_node(self.effect))
            .put("tolerationSeconds", int_or_null(self.toleration_seconds))
            .done()
    }
}

impl PlacementSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("nodeSelector", str_map(&self.node_selector))
            .put(
                "tolerations",
                Node::list(self.tolerations.iter().map(Toleration::to_node).collect()),
            )
            .put("affinity", opt_node(&self.affinity, Node::clone))
            .done()
    }
}

impl NetworkingSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("hostNetwork", Node::bool(self.host_network))
            .put("gloo_socket_ifname", str_or_null(&self.gloo_socket_ifname))
            .put("nccl_socket_ifname", str_or_null(&self.nccl_socket_ifname))
            .put("nccl_ib_disable", Node::bool(self.nccl_ib_disable))
            .put("nccl_net", enum_or_null(self.nccl_net))
            .put("extra_env", str_map(&self.extra_env))
            .done()
    }
}

impl WorkspaceSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("kind", enum_node(self.kind))
            .put("pvcName", str_or_null(&self.pvc_name))
            .put("mountPath", Node::str(self.mount_path.as_str()))
            .put("repoSubdir", Node::str(self.repo_subdir.as_str()))
            .put("size", str_or_null(&self.size))
            .put("hostPath", str_or_null(&self.host_path))
            .done()
    }
}

impl HFCacheSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("kind", enum_node(self.kind))
            .put("pvcName", str_or_null(&self.pvc_name))
            .put("mountPath", Node::str(self.mount_path.as_str()))
            .done()
    }
}

impl CheckpointsSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("kind", enum_node(self.kind))
            .put("pvcName", str_or_null(&self.pvc_name))
            .put("mountPath", Node::str(self.mount_path.as_str()))
            .done()
    }
}

impl SubmitSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("kind", enum_node(self.kind))
            .put("portForward", enum_node(self.port_forward))
            .put("devPod", enum_node(self.dev_pod))
            .put("localDashboardPort", Node::int(self.local_dashboard_port))
            .put("submitter", enum_node(self.submitter))
            .put("execTmpDir", Node::str(self.exec_tmp_dir.as_str()))
            .done()
    }
}

impl AttachSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("generation", str_or_null(&self.generation))
            .put("gym", str_or_null(&self.gym))
            .put("training", str_or_null(&self.training))
            .done()
    }
}

impl LaunchSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("mode", enum_node(self.mode))
            .put("runMode", enum_node(self.run_mode))
            .put("attach", self.attach.to_node())
            .put("peerWatcher", Node::bool(self.peer_watcher))
            .put("entrypoint", str_or_null(&self.entrypoint))
            .put("env", str_map(&self.env))
            .put(
                "rayUploadPaths",
                opt_node(&self.ray_upload_paths, |l| str_list(l)),
            )
            .put("codeSource", enum_node(self.code_source))
            .put("codePath", str_or_null(&self.code_path))
            .done()
    }
}

impl PodResources {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("cpu", str_or_null(&self.cpu))
            .put("memory", str_or_null(&self.memory))
            .put("gpu", int_or_null(self.gpu))
            .done()
    }
}

impl ResourceProfile {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("head", self.head.to_node())
            .put("worker", self.worker.to_node())
            .done()
    }
}

impl ResourcesSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("training", self.training.to_node())
            .put("generation", self.generation.to_node())
            .put("gym", self.gym.to_node())
            .done()
    }
}

impl DaemonSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("entrypoint", Node::str(self.entrypoint.as_str()))
            .put("submissionId", str_or_null(&self.submission_id))
            .put("env", str_map(&self.env))
            .put("healthCheckUrl", str_or_null(&self.health_check_url))
            .put(
                "healthCheckTimeoutS",
                Node::int(self.health_check_timeout_s),
            )
            .put(
                "rayUploadPaths",
                opt_node(&self.ray_upload_paths, |l| str_list(l)),
            )
            .done()
    }
}

impl ClusterSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("name", Node::str(self.name.as_str()))
            .put("spec", self.spec.clone())
            .put("labels", str_map(&self.labels))
            .put("annotations", str_map(&self.annotations))
            .put("segmentSize", int_or_null(self.segment_size))
            .put("daemon", opt_node(&self.daemon, DaemonSpec::to_node))
            .done()
    }
}

impl ClustersSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("training", opt_node(&self.training, ClusterSpec::to_node))
            .put(
                "generation",
                opt_node(&self.generation, ClusterSpec::to_node),
            )
            .put("gym", opt_node(&self.gym, ClusterSpec::to_node))
            .done()
    }
}

impl DeploymentSpec {
    pub fn to_node(&self) -> Node {
        Fields::new()
            .put("name", Node::str(self.name.as_str()))
            .put("spec", self.spec.clone())
            .put("labels", str_map(&self.labels))
            .put("annotations", str_map(&self.annotations))
            .put("healthCheckUrl", str_or_null(&self.health_check_url))
            .put(
                "healthCheckTimeoutS",
                Node::int(self.health_check_timeout_s),
            )
            .done()
    }
}
