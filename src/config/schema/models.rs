//! The typed infra models, fields in the reference's declaration order (that order is the
//! key order of `to_node`). YAML names are given in each field's doc comment where they
//! differ from the Rust name.

use indexmap::IndexMap;

use super::enums::*;
use crate::config::node::Node;
use crate::config::source::Span;

/// An ordered `dict[str, str]` (labels, annotations, env, nodeSelector, extra_env).
pub type StrMap = IndexMap<String, String>;

/// The validated `infra` section.
#[derive(Debug, Clone, PartialEq)]
pub struct InfraConfig {
    pub namespace: String,
    pub image: String,
    /// `imagePullSecrets`: secret names.
    pub image_pull_secrets: Vec<String>,
    /// `rayVersion` (never rendered; the inline spec's own `rayVersion` is what KubeRay sees).
    pub ray_version: Option<String>,
    /// `serviceAccount`: `None` leaves `serviceAccountName` alone.
    pub service_account: Option<String>,
    pub scheduler: SchedulerSpec,
    pub placement: PlacementSpec,
    pub networking: NetworkingSpec,
    pub workspace: WorkspaceSpec,
    pub hf_cache: HFCacheSpec,
    pub checkpoints: CheckpointsSpec,
    pub submit: SubmitSpec,
    pub launch: LaunchSpec,
    pub resources: ResourcesSpec,
    pub kuberay: ClustersSpec,
    /// Deployments keyed by their (whitespace-stripped) name in the YAML.
    pub deployments: IndexMap<String, DeploymentSpec>,
    pub labels: StrMap,
    pub annotations: StrMap,
    /// `dev`: the dev pod's settings; `None` when the section is absent (nrl's addition,
    /// see [`DevSpec`](super::DevSpec)).
    pub dev: Option<super::dev::DevSpec>,
    /// The resolved infra mapping this was validated from; look spans up here
    /// (see [`InfraConfig::span_of`]).
    pub source: Node,
}

impl InfraConfig {
    /// Where the value at a dotted infra path (`kuberay.training.spec.headGroupSpec`) was
    /// written: the value's span, else its key's.
    pub fn span_of(&self, path: &str) -> Option<Span> {
        self.source.get_path(path).and_then(Node::best_span)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerSpec {
    pub kind: SchedulerKind,
    pub queue: Option<String>,
}

impl Default for SchedulerSpec {
    fn default() -> Self {
        SchedulerSpec {
            kind: SchedulerKind::Default,
            queue: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Toleration {
    pub key: String,
    pub operator: TolerationOperator,
    pub value: Option<String>,
    pub effect: TolerationEffect,
    /// `tolerationSeconds`.
    pub toleration_seconds: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PlacementSpec {
    /// `nodeSelector`.
    pub node_selector: StrMap,
    pub tolerations: Vec<Toleration>,
    /// Free-form mapping, kept as loaded.
    pub affinity: Option<Node>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct NetworkingSpec {
    /// `hostNetwork`.
    pub host_network: bool,
    pub gloo_socket_ifname: Option<String>,
    pub nccl_socket_ifname: Option<String>,
    pub nccl_ib_disable: bool,
    pub nccl_net: Option<NcclNet>,
    pub extra_env: StrMap,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WorkspaceSpec {
    pub kind: WorkspaceKind,
    /// `pvcName`.
    pub pvc_name: Option<String>,
    /// `mountPath`.
    pub mount_path: String,
    /// `repoSubdir`.
    pub repo_subdir: String,
    pub size: Option<String>,
    /// `hostPath`.
    pub host_path: Option<String>,
}

impl Default for WorkspaceSpec {
    fn default() -> Self {
        WorkspaceSpec {
            kind: WorkspaceKind::RayUpload,
            pvc_name: None,
            mount_path: "/mnt/nemo-rl".into(),
            repo_subdir: "workdirs".into(),
            size: None,
            host_path: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct HFCacheSpec {
    pub kind: HFCacheKind,
    /// `pvcName`.
    pub pvc_name: Option<String>,
    /// `mountPath`.
    pub mount_path: String,
}

impl Default for HFCacheSpec {
    fn default() -> Self {
        HFCacheSpec {
            kind: HFCacheKind::None,
            pvc_name: None,
            mount_path: "/root/.cache/huggingface".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointsSpec {
    pub kind: CheckpointsKind,
    /// `pvcName`.
    pub pvc_name: Option<String>,
    /// `mountPath`.
    pub mount_path: String,
}

impl Default for CheckpointsSpec {
    fn default() -> Self {
        CheckpointsSpec {
            kind: CheckpointsKind::None,
            pvc_name: None,
            mount_path: "/mnt/nemo-rl/checkpoints".into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SubmitSpec {
    pub kind: SubmitKind,
    /// `portForward`.
    pub port_forward: PortForwardMode,
    /// `devPod`.
    pub dev_pod: DevPodMode,
    /// `localDashboardPort`.
    pub local_dashboard_port: i64,
    pub submitter: SubmitterMode,
    /// `execTmpDir`: where the exec submitter keeps launcher, stdout and pidfile.
    pub exec_tmp_dir: String,
}

impl Default for SubmitSpec {
    fn default() -> Self {
        SubmitSpec {
            kind: SubmitKind::Sdk,
            port_forward: PortForwardMode::Auto,
            dev_pod: DevPodMode::Auto,
            local_dashboard_port: 18265,
            submitter: SubmitterMode::PortForward,
            exec_tmp_dir: "/tmp".into(),
        }
    }
}

/// `launch.attach`: names of existing RayClusters per role (informational).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AttachSpec {
    pub generation: Option<String>,
    pub gym: Option<String>,
    pub training: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LaunchSpec {
    pub mode: LaunchMode,
    /// `runMode`.
    pub run_mode: RunMode,
    pub attach: AttachSpec,
    /// `peerWatcher`.
    pub peer_watcher: bool,
    /// Whitespace-stripped, so a YAML `|` block loses its final newline.
    pub entrypoint: Option<String>,
    pub env: StrMap,
    /// `rayUploadPaths`: `None` means the built-in default list.
    pub ray_upload_paths: Option<Vec<String>>,
    /// `codeSource`.
    pub code_source: CodeSource,
    /// `codePath`.
    pub code_path: Option<String>,
}

impl Default for LaunchSpec {
    fn default() -> Self {
        LaunchSpec {
            mode: LaunchMode::Single,
            run_mode: RunMode::Interactive,
            attach: AttachSpec::default(),
            peer_watcher: true,
            entrypoint: None,
            env: StrMap::new(),
            ray_upload_paths: None,
            code_source: CodeSource::Upload,
            code_path: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodResources {
    pub cpu: Option<String>,
    pub memory: Option<String>,
    pub gpu: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourceProfile {
    pub head: PodResources,
    pub worker: PodResources,
}

/// Per-role resource hints (validated, never rendered).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ResourcesSpec {
    pub training: ResourceProfile,
    pub generation: ResourceProfile,
    pub gym: ResourceProfile,
}

/// A long-lived process submitted to a RayCluster after it comes up.
#[derive(Debug, Clone, PartialEq)]
pub struct DaemonSpec {
    pub entrypoint: String,
    /// `submissionId`.
    pub submission_id: Option<String>,
    pub env: StrMap,
    /// `healthCheckUrl`.
    pub health_check_url: Option<String>,
    /// `healthCheckTimeoutS`.
    pub health_check_timeout_s: i64,
    /// `rayUploadPaths`.
    pub ray_upload_paths: Option<Vec<String>>,
}

/// One RayCluster role.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSpec {
    /// RayCluster `metadata.name` (may be blank here; names are checked before apply).
    pub name: String,
    /// The RayCluster `.spec` body as loaded: a mapping with string keys, spans intact.
    pub spec: Node,
    pub labels: StrMap,
    pub annotations: StrMap,
    /// `segmentSize`: when set, always > 0.
    pub segment_size: Option<i64>,
    pub daemon: Option<DaemonSpec>,
}

/// A RayCluster role. Iteration order everywhere is generation, gym, training.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    Generation,
    Gym,
    Training,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Generation, Role::Gym, Role::Training];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Generation => "generation",
            Role::Gym => "gym",
            Role::Training => "training",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `kuberay`: the three RayCluster roles (fields in the reference's order).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClustersSpec {
    pub training: Option<ClusterSpec>,
    pub generation: Option<ClusterSpec>,
    pub gym: Option<ClusterSpec>,
}

impl ClustersSpec {
    pub fn get(&self, role: Role) -> Option<&ClusterSpec> {
        match role {
            Role::Generation => self.generation.as_ref(),
            Role::Gym => self.gym.as_ref(),
            Role::Training => self.training.as_ref(),
        }
    }

    /// The declared roles in the order generation, gym, training.
    pub fn roles(&self) -> impl Iterator<Item = (Role, &ClusterSpec)> + '_ {
        Role::ALL
            .into_iter()
            .filter_map(move |r| self.get(r).map(|c| (r, c)))
    }
}

/// A plain Kubernetes Deployment managed next to the RayClusters.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentSpec {
    pub name: String,
    /// The Deployment `.spec` body as loaded.
    pub spec: Node,
    pub labels: StrMap,
    pub annotations: StrMap,
    /// `healthCheckUrl`.
    pub health_check_url: Option<String>,
    /// `healthCheckTimeoutS`.
    pub health_check_timeout_s: i64,
}
