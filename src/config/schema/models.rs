//! The typed infra models, each declared once (see [`infra_model!`]): a field's line
//! gives its Rust name and type, its YAML key, how it is read and its default. Fields are
//! in the reference's declaration order, which is the key order of `to_node`.
//!
//! [`infra_model!`]: super::declare

use indexmap::IndexMap;

use super::declare::infra_model;
use super::dev::DevSpec;
use super::dump::unless_absent;
use super::enums::*;
use super::parse::{
    checkpoints_rules, hf_cache_rules, launch_rules, scheduler_rules, segment_size, workspace_rules,
};
use crate::config::node::Node;
use crate::config::source::Span;
use crate::config::typed::convert::*;

/// An ordered `dict[str, str]` (labels, annotations, env, nodeSelector, extra_env).
pub type StrMap = IndexMap<String, String>;

infra_model! {
    /// The validated `infra` section.
    pub struct InfraConfig {
        namespace: String = "namespace", nonblank_str(
            "set `namespace:` in the infra file or pass `infra.namespace=<namespace>`; when it is absent nrl uses the kube context's namespace",
        ), req;
        image: String = "image", nonblank_str(
            "set `image:` to the container image the Ray pods run, e.g. `image: nvcr.io/nvidia/nemo-rl:latest`",
        ), req;
        /// Secret names.
        image_pull_secrets: Vec<String> = "imagePullSecrets", str_list, or(Vec::new());
        /// Never rendered; the inline spec's own `rayVersion` is what KubeRay sees.
        ray_version: Option<String> = "rayVersion", strict_str, opt;
        /// `None` leaves `serviceAccountName` alone.
        service_account: Option<String> = "serviceAccount", strict_str, opt;
        scheduler: SchedulerSpec = "scheduler", scheduler, or(SchedulerSpec::default()),
            section SchedulerSpec;
        placement: PlacementSpec = "placement", placement, or(PlacementSpec::default()),
            section PlacementSpec;
        networking: NetworkingSpec = "networking", networking, or(NetworkingSpec::default()),
            section NetworkingSpec;
        workspace: WorkspaceSpec = "workspace", workspace, or(WorkspaceSpec::default()),
            section WorkspaceSpec;
        hf_cache: HFCacheSpec = "hf_cache", hf_cache, or(HFCacheSpec::default()),
            section HFCacheSpec;
        checkpoints: CheckpointsSpec = "checkpoints", checkpoints,
            or(CheckpointsSpec::default()), section CheckpointsSpec;
        submit: SubmitSpec = "submit", submit, or(SubmitSpec::default()), section SubmitSpec;
        launch: LaunchSpec = "launch", launch, or(LaunchSpec::default()), section LaunchSpec;
        // Not a section hint: `training:` one level too high means `kuberay.training`.
        resources: ResourcesSpec = "resources", resources, or(ResourcesSpec::default());
        kuberay: ClustersSpec = "kuberay", clusters, or(ClustersSpec::default()),
            section ClustersSpec;
        /// Keyed by their (whitespace-stripped) name in the YAML.
        deployments: IndexMap<String, DeploymentSpec> = "deployments", map_of(deployment),
            or(IndexMap::new());
        labels: StrMap = "labels", str_map, or(StrMap::new());
        annotations: StrMap = "annotations", str_map, or(StrMap::new());
        /// The dev pod's settings; `None` when the section is absent (nrl's addition, see
        /// [`DevSpec`]), and then absent from `to_node` too.
        dev: Option<DevSpec> = "dev", super::dev::dev, opt, section DevSpec,
            dump unless_absent;
    }
    derived {
        /// The resolved infra mapping this was validated from; look spans up here
        /// (see [`InfraConfig::span_of`]).
        source: Node = Node::clone;
    }
    read infra;
}

impl InfraConfig {
    /// Where the value at a dotted infra path (`kuberay.training.spec.headGroupSpec`) was
    /// written: the value's span, else its key's.
    pub fn span_of(&self, path: &str) -> Option<Span> {
        self.source.get_path(path).and_then(Node::best_span)
    }
}

infra_model! {
    pub struct SchedulerSpec {
        kind: SchedulerKind = "kind", enum_value, or(SchedulerKind::Default);
        queue: Option<String> = "queue", strict_str, opt;
    }
    read scheduler, rules scheduler_rules;
    impl Default;
}

infra_model! {
    pub struct Toleration {
        key: String = "key", strict_str, req;
        operator: TolerationOperator = "operator", enum_value, or(TolerationOperator::Equal);
        value: Option<String> = "value", strict_str, opt;
        effect: TolerationEffect = "effect", enum_value, or(TolerationEffect::NoSchedule);
        toleration_seconds: Option<i64> = "tolerationSeconds", lax_int, opt;
    }
    read toleration;
}

infra_model! {
    pub struct PlacementSpec {
        node_selector: StrMap = "nodeSelector", str_map, or(StrMap::new());
        tolerations: Vec<Toleration> = "tolerations", list_of(toleration), or(Vec::new());
        /// Free-form mapping, kept as loaded.
        affinity: Option<Node> = "affinity", free_map, opt;
    }
    read placement;
    impl Default;
}

infra_model! {
    pub struct NetworkingSpec {
        host_network: bool = "hostNetwork", lax_bool, or(false);
        gloo_socket_ifname: Option<String> = "gloo_socket_ifname", strict_str, opt;
        nccl_socket_ifname: Option<String> = "nccl_socket_ifname", strict_str, opt;
        nccl_ib_disable: bool = "nccl_ib_disable", lax_bool, or(false);
        nccl_net: Option<NcclNet> = "nccl_net", enum_value, opt;
        extra_env: StrMap = "extra_env", str_map, or(StrMap::new());
    }
    read networking;
    impl Default;
}

infra_model! {
    pub struct WorkspaceSpec {
        kind: WorkspaceKind = "kind", enum_value, or(WorkspaceKind::RayUpload);
        pvc_name: Option<String> = "pvcName", strict_str, opt;
        mount_path: String = "mountPath", strict_str, or("/mnt/nemo-rl".into());
        repo_subdir: String = "repoSubdir", strict_str, or("workdirs".into());
        size: Option<String> = "size", strict_str, opt;
        host_path: Option<String> = "hostPath", strict_str, opt;
    }
    read workspace, rules workspace_rules;
    impl Default;
}

infra_model! {
    pub struct HFCacheSpec {
        kind: HFCacheKind = "kind", enum_value, or(HFCacheKind::None);
        pvc_name: Option<String> = "pvcName", strict_str, opt;
        mount_path: String = "mountPath", strict_str, or("/root/.cache/huggingface".into());
    }
    read hf_cache, rules hf_cache_rules;
    impl Default;
}

infra_model! {
    pub struct CheckpointsSpec {
        kind: CheckpointsKind = "kind", enum_value, or(CheckpointsKind::None);
        pvc_name: Option<String> = "pvcName", strict_str, opt;
        mount_path: String = "mountPath", strict_str, or("/mnt/nemo-rl/checkpoints".into());
    }
    read checkpoints, rules checkpoints_rules;
    impl Default;
}

infra_model! {
    pub struct SubmitSpec {
        kind: SubmitKind = "kind", enum_value, or(SubmitKind::Sdk);
        port_forward: PortForwardMode = "portForward", enum_value, or(PortForwardMode::Auto);
        dev_pod: DevPodMode = "devPod", enum_value, or(DevPodMode::Auto);
        local_dashboard_port: i64 = "localDashboardPort", lax_int, or(18265);
        submitter: SubmitterMode = "submitter", enum_value, or(SubmitterMode::PortForward);
        /// Where the exec submitter keeps launcher, stdout and pidfile.
        exec_tmp_dir: String = "execTmpDir", strict_str, or("/tmp".into());
    }
    read submit;
    impl Default;
}

infra_model! {
    /// `launch.attach`: names of existing RayClusters per role (informational).
    pub struct AttachSpec {
        generation: Option<String> = "generation", strict_str, opt;
        gym: Option<String> = "gym", strict_str, opt;
        training: Option<String> = "training", strict_str, opt;
    }
    read attach;
    impl Default;
}

infra_model! {
    pub struct LaunchSpec {
        mode: LaunchMode = "mode", enum_value, or(LaunchMode::Single);
        run_mode: RunMode = "runMode", enum_value, or(RunMode::Interactive);
        attach: AttachSpec = "attach", attach, or(AttachSpec::default()), section AttachSpec;
        peer_watcher: bool = "peerWatcher", lax_bool, or(true);
        /// Whitespace-stripped, so a YAML `|` block loses its final newline.
        entrypoint: Option<String> = "entrypoint", strict_str, opt;
        env: StrMap = "env", str_map, or(StrMap::new());
        /// `None` means the built-in default list.
        ray_upload_paths: Option<Vec<String>> = "rayUploadPaths", str_list, opt;
        /// Where the training code comes from.
        code_source: CodeSource = "codeSource", enum_value, or(CodeSource::Upload);
        code_path: Option<String> = "codePath", strict_str, opt;
    }
    read launch, rules launch_rules;
    impl Default;
}

infra_model! {
    pub struct PodResources {
        cpu: Option<String> = "cpu", strict_str, opt;
        memory: Option<String> = "memory", strict_str, opt;
        gpu: Option<i64> = "gpu", lax_int, opt;
    }
    read pod_resources;
    impl Default;
}

// `head` and `worker` are not section hints (as before this table): a key written one level
// too high gets the list of the profile's fields.
infra_model! {
    pub struct ResourceProfile {
        head: PodResources = "head", pod_resources, or(PodResources::default());
        worker: PodResources = "worker", pod_resources, or(PodResources::default());
    }
    read resource_profile;
    impl Default;
}

infra_model! {
    /// Per-role resource hints (validated, never rendered).
    pub struct ResourcesSpec {
        training: ResourceProfile = "training", resource_profile,
            or(ResourceProfile::default());
        generation: ResourceProfile = "generation", resource_profile,
            or(ResourceProfile::default());
        gym: ResourceProfile = "gym", resource_profile, or(ResourceProfile::default());
    }
    read resources;
    impl Default;
}

infra_model! {
    /// A long-lived process submitted to a RayCluster after it comes up.
    pub struct DaemonSpec {
        entrypoint: String = "entrypoint", strict_str, req;
        submission_id: Option<String> = "submissionId", strict_str, opt;
        env: StrMap = "env", str_map, or(StrMap::new());
        health_check_url: Option<String> = "healthCheckUrl", strict_str, opt;
        health_check_timeout_s: i64 = "healthCheckTimeoutS", lax_int, or(300);
        ray_upload_paths: Option<Vec<String>> = "rayUploadPaths", str_list, opt;
    }
    read daemon;
}

infra_model! {
    /// One RayCluster role.
    pub struct ClusterSpec {
        /// RayCluster `metadata.name` (may be blank here; names are checked before apply).
        name: String = "name", strict_str, req;
        /// The RayCluster `.spec` body as loaded: a mapping with string keys, spans intact.
        spec: Node = "spec", free_map, req;
        labels: StrMap = "labels", str_map, or(StrMap::new());
        annotations: StrMap = "annotations", str_map, or(StrMap::new());
        /// When set, always > 0.
        segment_size: Option<i64> = "segmentSize", segment_size, opt;
        daemon: Option<DaemonSpec> = "daemon", daemon, opt, section DaemonSpec;
    }
    read cluster;
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

// The roles are not section hints (as before this table): a key written one level too high
// gets the list of roles.
infra_model! {
    /// `kuberay`: the three RayCluster roles (fields in the reference's order).
    pub struct ClustersSpec {
        training: Option<ClusterSpec> = "training", cluster, opt;
        generation: Option<ClusterSpec> = "generation", cluster, opt;
        gym: Option<ClusterSpec> = "gym", cluster, opt;
    }
    read clusters;
    impl Default;
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

infra_model! {
    /// A plain Kubernetes Deployment managed next to the RayClusters.
    pub struct DeploymentSpec {
        name: String = "name", strict_str, req;
        /// The Deployment `.spec` body as loaded.
        spec: Node = "spec", free_map, req;
        labels: StrMap = "labels", str_map, or(StrMap::new());
        annotations: StrMap = "annotations", str_map, or(StrMap::new());
        health_check_url: Option<String> = "healthCheckUrl", strict_str, opt;
        health_check_timeout_s: i64 = "healthCheckTimeoutS", lax_int, or(300);
    }
    read deployment;
}
