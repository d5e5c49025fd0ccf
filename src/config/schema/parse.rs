//! One reader per model: fields in declaration order, then the model's cross-field rules
//! (only when every field validated; the first failing rule is the one reported).

use super::enums::*;
use super::models::*;
use crate::config::node::Node;
use crate::config::typed::check::*;
use crate::config::typed::convert::*;
use crate::diag::Diag;

/// The keys each model accepts, in declaration order.
const INFRA: Shape = Shape {
    fields: &[
        "namespace",
        "image",
        "imagePullSecrets",
        "rayVersion",
        "serviceAccount",
        "scheduler",
        "placement",
        "networking",
        "workspace",
        "hf_cache",
        "checkpoints",
        "submit",
        "launch",
        "resources",
        "kuberay",
        "deployments",
        "labels",
        "annotations",
        "dev",
    ],
    sections: &[
        ("scheduler", &SCHEDULER),
        ("placement", &PLACEMENT),
        ("networking", &NETWORKING),
        ("workspace", &WORKSPACE),
        ("hf_cache", &HF_CACHE),
        ("checkpoints", &CHECKPOINTS),
        ("submit", &SUBMIT),
        ("launch", &LAUNCH),
        ("kuberay", &CLUSTERS),
        ("dev", &super::dev::DEV),
    ],
};
const SCHEDULER: Shape = Shape {
    fields: &["kind", "queue"],
    sections: &[],
};
const TOLERATION: Shape = Shape {
    fields: &["key", "operator", "value", "effect", "tolerationSeconds"],
    sections: &[],
};
const PLACEMENT: Shape = Shape {
    fields: &["nodeSelector", "tolerations", "affinity"],
    sections: &[],
};
const NETWORKING: Shape = Shape {
    fields: &[
        "hostNetwork",
        "gloo_socket_ifname",
        "nccl_socket_ifname",
        "nccl_ib_disable",
        "nccl_net",
        "extra_env",
    ],
    sections: &[],
};
const WORKSPACE: Shape = Shape {
    fields: &[
        "kind",
        "pvcName",
        "mountPath",
        "repoSubdir",
        "size",
        "hostPath",
    ],
    sections: &[],
};
const HF_CACHE: Shape = Shape {
    fields: &["kind", "pvcName", "mountPath"],
    sections: &[],
};
const CHECKPOINTS: Shape = Shape {
    fields: &["kind", "pvcName", "mountPath"],
    sections: &[],
};
const SUBMIT: Shape = Shape {
    fields: &[
        "kind",
        "portForward",
        "devPod",
        "localDashboardPort",
        "submitter",
        "execTmpDir",
    ],
    sections: &[],
};
const ATTACH: Shape = Shape {
    fields: &["generation", "gym", "training"],
    sections: &[],
};
const LAUNCH: Shape = Shape {
    fields: &[
        "mode",
        "runMode",
        "attach",
        "peerWatcher",
        "entrypoint",
        "env",
        "rayUploadPaths",
        "codeSource",
        "codePath",
    ],
    sections: &[("attach", &ATTACH)],
};
const POD_RESOURCES: Shape = Shape {
    fields: &["cpu", "memory", "gpu"],
    sections: &[],
};
const RESOURCE_PROFILE: Shape = Shape {
    fields: &["head", "worker"],
    sections: &[],
};
const RESOURCES: Shape = Shape {
    fields: &["training", "generation", "gym"],
    sections: &[],
};
const DAEMON: Shape = Shape {
    fields: &[
        "entrypoint",
        "submissionId",
        "env",
        "healthCheckUrl",
        "healthCheckTimeoutS",
        "rayUploadPaths",
    ],
    sections: &[],
};
const CLUSTER: Shape = Shape {
    fields: &[
        "name",
        "spec",
        "labels",
        "annotations",
        "segmentSize",
        "daemon",
    ],
    sections: &[("daemon", &DAEMON)],
};
const CLUSTERS: Shape = Shape {
    fields: &["training", "generation", "gym"],
    sections: &[],
};
const DEPLOYMENT: Shape = Shape {
    fields: &[
        "name",
        "spec",
        "labels",
        "annotations",
        "healthCheckUrl",
        "healthCheckTimeoutS",
    ],
    sections: &[],
};

/// Report a broken cross-field rule at the first of `at` that is present in the model.
pub(super) fn rule<T>(
    cx: &mut Cx,
    node: &Node,
    at: &[&str],
    message: String,
    label: &str,
    help: String,
) -> Option<T> {
    // Point at what the user wrote: a value from the shipped defaults (`queue: null`) is
    // never the line to fix when the user's `kind: kai` triggered the rule.
    let spans: Vec<_> = at
        .iter()
        .filter_map(|f| node.get(f).and_then(Node::best_span))
        .collect();
    let span = spans
        .iter()
        .copied()
        .find(|s| s.kind() != crate::config::source::SourceKind::Shipped)
        .or(spans.first().copied())
        .or(node.key_span)
        .or(node.span);
    cx.report(Diag::new(RULE, message).label(span, label).help(help));
    None
}

fn blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(str::is_empty)
}

pub(super) fn infra(cx: &mut Cx, node: &Node, path: &Path) -> Option<InfraConfig> {
    let mut o = Obj::open(cx, node, path, &INFRA)?;
    let namespace = o.req(
        cx,
        "namespace",
        nonblank_str(
            "set `namespace:` in the infra file or pass `infra.namespace=<namespace>`; when it is absent nrl uses the kube context's namespace",
        ),
    );
    let image = o.req(
        cx,
        "image",
        nonblank_str(
            "set `image:` to the container image the Ray pods run, e.g. `image: nvcr.io/nvidia/nemo-rl:latest`",
        ),
    );
    let cfg = InfraConfig {
        namespace: namespace.unwrap_or_default(),
        image: image.unwrap_or_default(),
        image_pull_secrets: o.or(cx, "imagePullSecrets", str_list, Vec::new()),
        ray_version: o.opt(cx, "rayVersion", strict_str),
        service_account: o.opt(cx, "serviceAccount", strict_str),
        scheduler: o.or(cx, "scheduler", scheduler, SchedulerSpec::default()),
        placement: o.or(cx, "placement", placement, PlacementSpec::default()),
        networking: o.or(cx, "networking", networking, NetworkingSpec::default()),
        workspace: o.or(cx, "workspace", workspace, WorkspaceSpec::default()),
        hf_cache: o.or(cx, "hf_cache", hf_cache, HFCacheSpec::default()),
        checkpoints: o.or(cx, "checkpoints", checkpoints, CheckpointsSpec::default()),
        submit: o.or(cx, "submit", submit, SubmitSpec::default()),
        launch: o.or(cx, "launch", launch, LaunchSpec::default()),
        resources: o.or(cx, "resources", resources, ResourcesSpec::default()),
        kuberay: o.or(cx, "kuberay", clusters, ClustersSpec::default()),
        deployments: o.or(cx, "deployments", map_of(deployment), Default::default()),
        labels: o.or(cx, "labels", str_map, StrMap::new()),
        annotations: o.or(cx, "annotations", str_map, StrMap::new()),
        dev: o.opt(cx, "dev", super::dev::dev),
        source: node.clone(),
    };
    o.finish(cfg)
}

pub(super) fn scheduler(cx: &mut Cx, node: &Node, path: &Path) -> Option<SchedulerSpec> {
    let mut o = Obj::open(cx, node, path, &SCHEDULER)?;
    let v = SchedulerSpec {
        kind: o.or(cx, "kind", enum_value, SchedulerKind::Default),
        queue: o.opt(cx, "queue", strict_str),
    };
    let v = o.finish(v)?;
    if matches!(v.kind, SchedulerKind::Kai | SchedulerKind::Kueue) && blank(&v.queue) {
        let which = if v.kind == SchedulerKind::Kai {
            "KAI"
        } else {
            "Kueue"
        };
        return rule(
            cx,
            node,
            &["queue", "kind"],
            format!("`{path}.queue` is required when scheduler.kind={}", v.kind),
            "no queue for this scheduler",
            format!("set `queue:` to the {which} queue to submit to, or use `kind: default`"),
        );
    }
    Some(v)
}

fn toleration(cx: &mut Cx, node: &Node, path: &Path) -> Option<Toleration> {
    let mut o = Obj::open(cx, node, path, &TOLERATION)?;
    let key = o.req(cx, "key", strict_str);
    let v = Toleration {
        key: key.unwrap_or_default(),
        operator: o.or(cx, "operator", enum_value, TolerationOperator::Equal),
        value: o.opt(cx, "value", strict_str),
        effect: o.or(cx, "effect", enum_value, TolerationEffect::NoSchedule),
        toleration_seconds: o.opt(cx, "tolerationSeconds", lax_int),
    };
    o.finish(v)
}

fn placement(cx: &mut Cx, node: &Node, path: &Path) -> Option<PlacementSpec> {
    let mut o = Obj::open(cx, node, path, &PLACEMENT)?;
    let v = PlacementSpec {
        node_selector: o.or(cx, "nodeSelector", str_map, StrMap::new()),
        tolerations: o.or(cx, "tolerations", list_of(toleration), Vec::new()),
        affinity: o.opt(cx, "affinity", free_map),
    };
    o.finish(v)
}

fn networking(cx: &mut Cx, node: &Node, path: &Path) -> Option<NetworkingSpec> {
    let mut o = Obj::open(cx, node, path, &NETWORKING)?;
    let v = NetworkingSpec {
        host_network: o.or(cx, "hostNetwork", lax_bool, false),
        gloo_socket_ifname: o.opt(cx, "gloo_socket_ifname", strict_str),
        nccl_socket_ifname: o.opt(cx, "nccl_socket_ifname", strict_str),
        nccl_ib_disable: o.or(cx, "nccl_ib_disable", lax_bool, false),
        nccl_net: o.opt(cx, "nccl_net", enum_value),
        extra_env: o.or(cx, "extra_env", str_map, StrMap::new()),
    };
    o.finish(v)
}

pub(super) fn workspace(cx: &mut Cx, node: &Node, path: &Path) -> Option<WorkspaceSpec> {
    let mut o = Obj::open(cx, node, path, &WORKSPACE)?;
    let d = WorkspaceSpec::default();
    let v = WorkspaceSpec {
        kind: o.or(cx, "kind", enum_value, d.kind),
        pvc_name: o.opt(cx, "pvcName", strict_str),
        mount_path: o.or(cx, "mountPath", strict_str, d.mount_path),
        repo_subdir: o.or(cx, "repoSubdir", strict_str, d.repo_subdir),
        size: o.opt(cx, "size", strict_str),
        host_path: o.opt(cx, "hostPath", strict_str),
    };
    let v = o.finish(v)?;
    match v.kind {
        WorkspaceKind::Lustre | WorkspaceKind::Pvc if blank(&v.pvc_name) => rule(
            cx,
            node,
            &["pvcName", "kind"],
            format!("`{path}.pvcName` is required when kind={}", v.kind),
            "no PVC named",
            "set `pvcName:` to the PersistentVolumeClaim that holds the workspace, or use `kind: rayUpload`".into(),
        ),
        WorkspaceKind::HostPath if blank(&v.host_path) => rule(
            cx,
            node,
            &["hostPath", "kind"],
            format!("`{path}.hostPath` is required when kind=hostPath"),
            "no host directory named",
            "set `hostPath:` to the node directory to mount, e.g. `hostPath: /data`".into(),
        ),
        _ => Some(v),
    }
}

pub(super) fn hf_cache(cx: &mut Cx, node: &Node, path: &Path) -> Option<HFCacheSpec> {
    let mut o = Obj::open(cx, node, path, &HF_CACHE)?;
    let d = HFCacheSpec::default();
    let v = HFCacheSpec {
        kind: o.or(cx, "kind", enum_value, d.kind),
        pvc_name: o.opt(cx, "pvcName", strict_str),
        mount_path: o.or(cx, "mountPath", strict_str, d.mount_path),
    };
    let v = o.finish(v)?;
    if matches!(v.kind, HFCacheKind::Lustre | HFCacheKind::Pvc) && blank(&v.pvc_name) {
        return rule(
            cx,
            node,
            &["pvcName", "kind"],
            format!("`{path}.pvcName` is required when kind={}", v.kind),
            "no PVC named",
            "set `pvcName:` to the PVC that holds the Hugging Face cache, or use `kind: emptyDir` or `kind: none`".into(),
        );
    }
    Some(v)
}

pub(super) fn checkpoints(cx: &mut Cx, node: &Node, path: &Path) -> Option<CheckpointsSpec> {
    let mut o = Obj::open(cx, node, path, &CHECKPOINTS)?;
    let d = CheckpointsSpec::default();
    let v = CheckpointsSpec {
        kind: o.or(cx, "kind", enum_value, d.kind),
        pvc_name: o.opt(cx, "pvcName", strict_str),
        mount_path: o.or(cx, "mountPath", strict_str, d.mount_path),
    };
    let v = o.finish(v)?;
    if matches!(v.kind, CheckpointsKind::Lustre | CheckpointsKind::Pvc) && blank(&v.pvc_name) {
        return rule(
            cx,
            node,
            &["pvcName", "kind"],
            format!("`{path}.pvcName` is required when kind={}", v.kind),
            "no PVC named",
            "set `pvcName:` to the PVC for checkpoints, or use `kind: none`".into(),
        );
    }
    Some(v)
}

pub(super) fn submit(cx: &mut Cx, node: &Node, path: &Path) -> Option<SubmitSpec> {
    let mut o = Obj::open(cx, node, path, &SUBMIT)?;
    let d = SubmitSpec::default();
    let v = SubmitSpec {
        kind: o.or(cx, "kind", enum_value, d.kind),
        port_forward: o.or(cx, "portForward", enum_value, d.port_forward),
        dev_pod: o.or(cx, "devPod", enum_value, d.dev_pod),
        local_dashboard_port: o.or(cx, "localDashboardPort", lax_int, d.local_dashboard_port),
        submitter: o.or(cx, "submitter", enum_value, d.submitter),
        exec_tmp_dir: o.or(cx, "execTmpDir", strict_str, d.exec_tmp_dir),
    };
    o.finish(v)
}

fn attach(cx: &mut Cx, node: &Node, path: &Path) -> Option<AttachSpec> {
    let mut o = Obj::open(cx, node, path, &ATTACH)?;
    let v = AttachSpec {
        generation: o.opt(cx, "generation", strict_str),
        gym: o.opt(cx, "gym", strict_str),
        training: o.opt(cx, "training", strict_str),
    };
    o.finish(v)
}

pub(super) fn launch(cx: &mut Cx, node: &Node, path: &Path) -> Option<LaunchSpec> {
    let mut o = Obj::open(cx, node, path, &LAUNCH)?;
    let d = LaunchSpec::default();
    let v = LaunchSpec {
        mode: o.or(cx, "mode", enum_value, d.mode),
        run_mode: o.or(cx, "runMode", enum_value, d.run_mode),
        attach: o.or(cx, "attach", attach, d.attach),
        peer_watcher: o.or(cx, "peerWatcher", lax_bool, d.peer_watcher),
        entrypoint: o.opt(cx, "entrypoint", strict_str),
        env: o.or(cx, "env", str_map, d.env),
        ray_upload_paths: o.opt(cx, "rayUploadPaths", str_list),
        code_source: o.or(cx, "codeSource", enum_value, d.code_source),
        code_path: o.opt(cx, "codePath", strict_str),
    };
    let v = o.finish(v)?;
    let a = &v.attach;
    if v.mode == LaunchMode::Attach && blank(&a.generation) && blank(&a.gym) && blank(&a.training) {
        return rule(
            cx,
            node,
            &["attach", "mode"],
            format!(
                "`{path}.mode=attach` requires at least one of `{path}.attach.{{generation,gym,training}}`"
            ),
            "nothing to attach to",
            "name the RayCluster to attach to, e.g. `attach: {training: my-raycluster}`, or use another launch mode".into(),
        );
    }
    if matches!(v.code_source, CodeSource::Image | CodeSource::Lustre) && blank(&v.code_path) {
        let place = if v.code_source == CodeSource::Image {
            "inside the image"
        } else {
            "on the Lustre mount"
        };
        return rule(
            cx,
            node,
            &["codePath", "codeSource"],
            format!(
                "`{path}.codePath` is required when codeSource={}",
                v.code_source
            ),
            "no code path",
            format!(
                "set `codePath:` to where the code lives {place}, e.g. `codePath: /opt/nemo-rl`, or use `codeSource: upload`"
            ),
        );
    }
    Some(v)
}

fn pod_resources(cx: &mut Cx, node: &Node, path: &Path) -> Option<PodResources> {
    let mut o = Obj::open(cx, node, path, &POD_RESOURCES)?;
    let v = PodResources {
        cpu: o.opt(cx, "cpu", strict_str),
        memory: o.opt(cx, "memory", strict_str),
        gpu: o.opt(cx, "gpu", lax_int),
    };
    o.finish(v)
}

fn resource_profile(cx: &mut Cx, node: &Node, path: &Path) -> Option<ResourceProfile> {
    let mut o = Obj::open(cx, node, path, &RESOURCE_PROFILE)?;
    let v = ResourceProfile {
        head: o.or(cx, "head", pod_resources, PodResources::default()),
        worker: o.or(cx, "worker", pod_resources, PodResources::default()),
    };
    o.finish(v)
}

fn resources(cx: &mut Cx, node: &Node, path: &Path) -> Option<ResourcesSpec> {
    let mut o = Obj::open(cx, node, path, &RESOURCES)?;
    let v = ResourcesSpec {
        training: o.or(cx, "training", resource_profile, ResourceProfile::default()),
        generation: o.or(
            cx,
            "generation",
            resource_profile,
            ResourceProfile::default(),
        ),
        gym: o.or(cx, "gym", resource_profile, ResourceProfile::default()),
    };
    o.finish(v)
}

fn daemon(cx: &mut Cx, node: &Node, path: &Path) -> Option<DaemonSpec> {
    let mut o = Obj::open(cx, node, path, &DAEMON)?;
    let entrypoint = o.req(cx, "entrypoint", strict_str);
    let v = DaemonSpec {
        entrypoint: entrypoint.unwrap_or_default(),
        submission_id: o.opt(cx, "submissionId", strict_str),
        env: o.or(cx, "env", str_map, StrMap::new()),
        health_check_url: o.opt(cx, "healthCheckUrl", strict_str),
        health_check_timeout_s: o.or(cx, "healthCheckTimeoutS", lax_int, 300),
        ray_upload_paths: o.opt(cx, "rayUploadPaths", str_list),
    };
    o.finish(v)
}

/// `segmentSize`: a lax int that must be greater than 0.
fn segment_size(cx: &mut Cx, node: &Node, path: &Path) -> Option<i64> {
    let n = lax_int(cx, node, path)?;
    if n <= 0 {
        cx.report(
            Diag::new(RULE, format!("`{path}` must be greater than 0, got {n}"))
                .label(node.best_span(), "not a positive number")
                .help(
                    "set the number of worker replicas per segment (a positive whole number), or delete the line to keep worker groups whole",
                ),
        );
        return None;
    }
    Some(n)
}

pub(super) fn cluster(cx: &mut Cx, node: &Node, path: &Path) -> Option<ClusterSpec> {
    let mut o = Obj::open(cx, node, path, &CLUSTER)?;
    let name = o.req(cx, "name", strict_str);
    let spec = o.req(cx, "spec", free_map);
    let v = ClusterSpec {
        name: name.unwrap_or_default(),
        spec: spec.unwrap_or_else(Node::null),
        labels: o.or(cx, "labels", str_map, StrMap::new()),
        annotations: o.or(cx, "annotations", str_map, StrMap::new()),
        segment_size: o.opt(cx, "segmentSize", segment_size),
        daemon: o.opt(cx, "daemon", daemon),
    };
    o.finish(v)
}

fn clusters(cx: &mut Cx, node: &Node, path: &Path) -> Option<ClustersSpec> {
    let mut o = Obj::open(cx, node, path, &CLUSTERS)?;
    let v = ClustersSpec {
        training: o.opt(cx, "training", cluster),
        generation: o.opt(cx, "generation", cluster),
        gym: o.opt(cx, "gym", cluster),
    };
    o.finish(v)
}

fn deployment(cx: &mut Cx, node: &Node, path: &Path) -> Option<DeploymentSpec> {
    let mut o = Obj::open(cx, node, path, &DEPLOYMENT)?;
    let name = o.req(cx, "name", strict_str);
    let spec = o.req(cx, "spec", free_map);
    let v = DeploymentSpec {
        name: name.unwrap_or_default(),
        spec: spec.unwrap_or_else(Node::null),
        labels: o.or(cx, "labels", str_map, StrMap::new()),
        annotations: o.or(cx, "annotations", str_map, StrMap::new()),
        health_check_url: o.opt(cx, "healthCheckUrl", strict_str),
        health_check_timeout_s: o.or(cx, "healthCheckTimeoutS", lax_int, 300),
    };
    o.finish(v)
}
