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
        /// Namespace of every object. When absent or blank, the kube context's namespace.
        namespace: String = "namespace", nonblank_str(
            "set `namespace:` in the infra file or pass `infra.namespace=<namespace>`; when it is absent nrl uses the kube context's namespace",
        ), req;
        /// Container image of every Ray pod (head and workers).
        image: String = "image", nonblank_str(
            "set `image:` to the container image the Ray pods run, e.g. `image: nvcr.io/nvidia/nemo-rl:latest`",
        ), req;
        /// Names of the image pull Secrets of every pod.
        image_pull_secrets: Vec<String> = "imagePullSecrets", str_list, or(Vec::new());
        /// Informational: KubeRay reads the inline spec's own `rayVersion`.
        ray_version: Option<String> = "rayVersion", strict_str, opt;
        /// Service account of every Ray pod; null leaves the spec's `serviceAccountName` as
        /// written.
        service_account: Option<String> = "serviceAccount", strict_str, opt;
        /// The gang scheduler: `kai` or `kueue` (with a queue), or the cluster's default.
        scheduler: SchedulerSpec = "scheduler", scheduler, or(SchedulerSpec::default()),
            section SchedulerSpec;
        /// Node selection and tolerations (validated, not rendered).
        placement: PlacementSpec = "placement", placement, or(PlacementSpec::default()),
            section PlacementSpec;
        /// Host networking and the NCCL/Gloo settings (validated, not rendered).
        networking: NetworkingSpec = "networking", networking, or(NetworkingSpec::default()),
            section NetworkingSpec;
        /// Where the training code lives in the pods.
        workspace: WorkspaceSpec = "workspace", workspace, or(WorkspaceSpec::default()),
            section WorkspaceSpec;
        /// The Hugging Face cache volume.
        hf_cache: HFCacheSpec = "hf_cache", hf_cache, or(HFCacheSpec::default()),
            section HFCacheSpec;
        /// The checkpoint volume.
        checkpoints: CheckpointsSpec = "checkpoints", checkpoints,
            or(CheckpointsSpec::default()), section CheckpointsSpec;
        /// How a job reaches a RayCluster.
        submit: SubmitSpec = "submit", submit, or(SubmitSpec::default()), section SubmitSpec;
        /// What runs: the entrypoint, its environment and the uploaded paths.
        launch: LaunchSpec = "launch", launch, or(LaunchSpec::default()), section LaunchSpec;
        // Not a section hint: `training:` one level too high means `kuberay.training`.
        /// Per-role resource hints (validated, never rendered).
        resources: ResourcesSpec = "resources", resources, or(ResourcesSpec::default());
        /// The RayClusters, one per role: `training`, `generation`, `gym`.
        kuberay: ClustersSpec = "kuberay", clusters, or(ClustersSpec::default()),
            section ClustersSpec;
        /// Plain Kubernetes Deployments next to the RayClusters, keyed by a name of your
        /// choice (whitespace-stripped).
        deployments: IndexMap<String, DeploymentSpec> = "deployments", map_of(deployment),
            or(IndexMap::new());
        /// Labels of every object and every pod template.
        labels: StrMap = "labels", str_map, or(StrMap::new());
        /// Annotations of every object (not of pod templates).
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
        /// `kai`, `kueue`, or `default` (the cluster's default scheduler).
        kind: SchedulerKind = "kind", enum_value, or(SchedulerKind::Default);
        /// The scheduler's queue; required when `kind` is `kai` or `kueue`.
        queue: Option<String> = "queue", strict_str, opt;
    }
    read scheduler, rules scheduler_rules;
    impl Default;
}

infra_model! {
    pub struct Toleration {
        /// The taint key tolerated.
        key: String = "key", strict_str, req;
        /// `Equal` (the taint's value must match `value`) or `Exists`.
        operator: TolerationOperator = "operator", enum_value, or(TolerationOperator::Equal);
        /// The taint value, with `operator: Equal`.
        value: Option<String> = "value", strict_str, opt;
        /// The taint effect tolerated.
        effect: TolerationEffect = "effect", enum_value, or(TolerationEffect::NoSchedule);
        /// How long a `NoExecute` taint is tolerated.
        toleration_seconds: Option<i64> = "tolerationSeconds", lax_int, opt;
    }
    read toleration;
}

infra_model! {
    pub struct PlacementSpec {
        /// Node labels the pods must match.
        node_selector: StrMap = "nodeSelector", str_map, or(StrMap::new());
        /// Taints the pods tolerate.
        tolerations: Vec<Toleration> = "tolerations", list_of(toleration), or(Vec::new());
        /// A Kubernetes affinity, kept as written.
        affinity: Option<Node> = "affinity", free_map, opt;
    }
    read placement;
    impl Default;
}

infra_model! {
    pub struct NetworkingSpec {
        /// Run the pods in the node's network namespace.
        host_network: bool = "hostNetwork", lax_bool, or(false);
        /// `GLOO_SOCKET_IFNAME`: the interface Gloo uses.
        gloo_socket_ifname: Option<String> = "gloo_socket_ifname", strict_str, opt;
        /// `NCCL_SOCKET_IFNAME`: the interface NCCL uses.
        nccl_socket_ifname: Option<String> = "nccl_socket_ifname", strict_str, opt;
        /// `NCCL_IB_DISABLE`: turn InfiniBand off for NCCL.
        nccl_ib_disable: bool = "nccl_ib_disable", lax_bool, or(false);
        /// `NCCL_NET`: `Socket`, `IB` or `OFI`.
        nccl_net: Option<NcclNet> = "nccl_net", enum_value, opt;
        /// More environment variables for the pods.
        extra_env: StrMap = "extra_env", str_map, or(StrMap::new());
    }
    read networking;
    impl Default;
}

infra_model! {
    pub struct WorkspaceSpec {
        /// `rayUpload` (Ray uploads the code as the job's working_dir), `pvc` or `lustre`
        /// (a PersistentVolumeClaim), `hostPath`, or `auto`.
        kind: WorkspaceKind = "kind", enum_value, or(WorkspaceKind::RayUpload);
        /// The claim; required when `kind` is `pvc` or `lustre`.
        pvc_name: Option<String> = "pvcName", strict_str, opt;
        /// Where the workspace is mounted.
        mount_path: String = "mountPath", strict_str, or("/mnt/nemo-rl".into());
        /// The directory under `mountPath` that holds the code copies.
        repo_subdir: String = "repoSubdir", strict_str, or("workdirs".into());
        /// The requested size of the workspace claim (a quantity, e.g. `100Gi`).
        size: Option<String> = "size", strict_str, opt;
        /// The node's directory; required when `kind` is `hostPath`.
        host_path: Option<String> = "hostPath", strict_str, opt;
    }
    read workspace, rules workspace_rules;
    impl Default;
}

infra_model! {
    pub struct HFCacheSpec {
        /// `pvc` or `lustre` (a PersistentVolumeClaim), `emptyDir`, or `none`.
        kind: HFCacheKind = "kind", enum_value, or(HFCacheKind::None);
        /// The claim; required when `kind` is `pvc` or `lustre`.
        pvc_name: Option<String> = "pvcName", strict_str, opt;
        /// Where the cache is mounted.
        mount_path: String = "mountPath", strict_str, or("/root/.cache/huggingface".into());
    }
    read hf_cache, rules hf_cache_rules;
    impl Default;
}

infra_model! {
    pub struct CheckpointsSpec {
        /// `pvc` or `lustre` (a PersistentVolumeClaim), or `none`.
        kind: CheckpointsKind = "kind", enum_value, or(CheckpointsKind::None);
        /// The claim; required when `kind` is `pvc` or `lustre`.
        pvc_name: Option<String> = "pvcName", strict_str, opt;
        /// Where the checkpoints are mounted.
        mount_path: String = "mountPath", strict_str, or("/mnt/nemo-rl/checkpoints".into());
    }
    read checkpoints, rules checkpoints_rules;
    impl Default;
}

infra_model! {
    pub struct SubmitSpec {
        /// Informational (validated, unused).
        kind: SubmitKind = "kind", enum_value, or(SubmitKind::Sdk);
        /// Informational (validated, unused).
        port_forward: PortForwardMode = "portForward", enum_value, or(PortForwardMode::Auto);
        /// Informational (validated, unused).
        dev_pod: DevPodMode = "devPod", enum_value, or(DevPodMode::Auto);
        /// Informational (validated, unused).
        local_dashboard_port: i64 = "localDashboardPort", lax_int, or(18265);
        /// How a job reaches a RayCluster: `portForward` (Ray's Job API through a
        /// port-forward) or `exec` (`ray job submit` run inside the head pod).
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
        /// The existing generation RayCluster.
        generation: Option<String> = "generation", strict_str, opt;
        /// The existing gym RayCluster.
        gym: Option<String> = "gym", strict_str, opt;
        /// The existing training RayCluster.
        training: Option<String> = "training", strict_str, opt;
    }
    read attach;
    impl Default;
}

infra_model! {
    pub struct LaunchSpec {
        /// `single`, `rayjob`, `attach` or `bringup` (shown by `nrl check`; no other
        /// effect).
        mode: LaunchMode = "mode", enum_value, or(LaunchMode::Single);
        /// `interactive` or `batch`: how `nrl run --raycluster` runs the entrypoint.
        run_mode: RunMode = "runMode", enum_value, or(RunMode::Interactive);
        /// Names of existing RayClusters per role (informational); `mode: attach` needs
        /// one.
        attach: AttachSpec = "attach", attach, or(AttachSpec::default()), section AttachSpec;
        /// Informational (validated, unused).
        peer_watcher: bool = "peerWatcher", lax_bool, or(true);
        /// The command the job runs; `nrl run` requires it.
        ///
        /// Whitespace-stripped, so a YAML `|` block loses its final newline.
        entrypoint: Option<String> = "entrypoint", strict_str, opt;
        /// Environment exported before the entrypoint on a RayCluster (a RayJob ignores
        /// it).
        env: StrMap = "env", str_map, or(StrMap::new());
        /// Paths uploaded as the job's working_dir, relative to the repository; null means
        /// the built-in list.
        ray_upload_paths: Option<Vec<String>> = "rayUploadPaths", str_list, opt;
        /// Where the training code comes from: `upload`, `image` or `lustre`.
        code_source: CodeSource = "codeSource", enum_value, or(CodeSource::Upload);
        /// The code's directory in the image or on Lustre; required when `codeSource` is
        /// `image` or `lustre`.
        code_path: Option<String> = "codePath", strict_str, opt;
    }
    read launch, rules launch_rules;
    impl Default;
}

infra_model! {
    pub struct PodResources {
        /// CPUs, a Kubernetes quantity (`8`, `500m`).
        cpu: Option<String> = "cpu", strict_str, opt;
        /// Memory, a Kubernetes quantity (`64Gi`).
        memory: Option<String> = "memory", strict_str, opt;
        /// GPUs per pod.
        gpu: Option<i64> = "gpu", lax_int, opt;
    }
    read pod_resources;
    impl Default;
}

// `head` and `worker` are not section hints (as before this table): a key written one level
// too high gets the list of the profile's fields.
infra_model! {
    pub struct ResourceProfile {
        /// The head pod.
        head: PodResources = "head", pod_resources, or(PodResources::default());
        /// Each worker pod.
        worker: PodResources = "worker", pod_resources, or(PodResources::default());
    }
    read resource_profile;
    impl Default;
}

infra_model! {
    /// Per-role resource hints (validated, never rendered).
    pub struct ResourcesSpec {
        /// The training RayCluster.
        training: ResourceProfile = "training", resource_profile,
            or(ResourceProfile::default());
        /// The generation RayCluster.
        generation: ResourceProfile = "generation", resource_profile,
            or(ResourceProfile::default());
        /// The gym RayCluster.
        gym: ResourceProfile = "gym", resource_profile, or(ResourceProfile::default());
    }
    read resources;
    impl Default;
}

infra_model! {
    /// A long-lived process submitted to a RayCluster after it comes up.
    pub struct DaemonSpec {
        /// The command the daemon runs.
        entrypoint: String = "entrypoint", strict_str, req;
        /// The daemon's Ray job submission id.
        submission_id: Option<String> = "submissionId", strict_str, opt;
        /// The daemon's environment.
        env: StrMap = "env", str_map, or(StrMap::new());
        /// A URL that must answer before the run starts.
        health_check_url: Option<String> = "healthCheckUrl", strict_str, opt;
        /// Seconds to wait for `healthCheckUrl`.
        health_check_timeout_s: i64 = "healthCheckTimeoutS", lax_int, or(300);
        /// Paths uploaded as the daemon's working_dir; null means the built-in list.
        ray_upload_paths: Option<Vec<String>> = "rayUploadPaths", str_list, opt;
    }
    read daemon;
}

infra_model! {
    /// One RayCluster role.
    pub struct ClusterSpec {
        /// The RayCluster's `metadata.name`.
        ///
        /// It may be blank here: names are checked before apply.
        name: String = "name", strict_str, req;
        /// The RayCluster `.spec`, as KubeRay takes it.
        ///
        /// Kept as loaded: a mapping with string keys, spans intact.
        spec: Node = "spec", free_map, req;
        /// Labels of this RayCluster (and its pods).
        labels: StrMap = "labels", str_map, or(StrMap::new());
        /// Annotations of this RayCluster.
        annotations: StrMap = "annotations", str_map, or(StrMap::new());
        /// Split each worker group with more replicas into groups of this many (one per
        /// topology segment); greater than 0.
        segment_size: Option<i64> = "segmentSize", segment_size, opt;
        /// A long-lived process submitted to the cluster once it is up.
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
        /// The training RayCluster.
        training: Option<ClusterSpec> = "training", cluster, opt;
        /// The generation RayCluster.
        generation: Option<ClusterSpec> = "generation", cluster, opt;
        /// The gym RayCluster.
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
        /// The Deployment's `metadata.name`.
        name: String = "name", strict_str, req;
        /// The Deployment `.spec`, as Kubernetes takes it.
        spec: Node = "spec", free_map, req;
        /// Labels of this Deployment.
        labels: StrMap = "labels", str_map, or(StrMap::new());
        /// Annotations of this Deployment.
        annotations: StrMap = "annotations", str_map, or(StrMap::new());
        /// A URL that must answer before the run starts.
        health_check_url: Option<String> = "healthCheckUrl", strict_str, opt;
        /// Seconds to wait for `healthCheckUrl`.
        health_check_timeout_s: i64 = "healthCheckTimeoutS", lax_int, or(300);
    }
    read deployment;
}
