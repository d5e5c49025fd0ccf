//! The reference's tests/unit/test_schema.py catalogue (ref-nrl-k8s-config-render §7.1),
//! one module per reference test class, test names kept.

use super::*;
use crate::config::node::Node;
use crate::config::source::{SourceKind, add_source};
use crate::config::typed::check::{Cx, Path};
use crate::config::yaml::parse_source;
use crate::diag::Diag;

/// Parse YAML text registered as `infra.yaml`.
pub(super) fn yaml(text: &str) -> Node {
    let id = add_source("infra.yaml", None, text, SourceKind::Text);
    match parse_source(id) {
        Ok(n) => n,
        Err(e) => panic!("test YAML does not parse: {e}"),
    }
}

/// `MIN` of the reference tests plus extra top-level YAML.
pub(super) fn min_plus(extra: &str) -> Node {
    yaml(&format!(
        "namespace: nemo-rl\nimage: nvcr.io/nvidia/nemo-rl:test\n{extra}"
    ))
}

/// Validate YAML as the model read by `f`, sitting at `infra.<name>`.
pub(super) fn part<T>(
    f: fn(&mut Cx, &Node, &Path) -> Option<T>,
    name: &str,
    text: &str,
) -> Result<T, Diag> {
    let node = yaml(text);
    let mut cx = Cx::default();
    let root = Path::ROOT;
    match f(&mut cx, &node, &root.key(name)) {
        Some(v) if cx.errors.is_empty() => Ok(v),
        _ => Err(super::report(cx.errors)),
    }
}

/// The error, or a panic naming the unexpected success.
pub(super) fn err<T: std::fmt::Debug>(r: Result<T, Diag>) -> Diag {
    match r {
        Ok(v) => panic!("expected a validation error, got {v:?}"),
        Err(e) => e,
    }
}

pub(super) fn ok<T>(r: Result<T, Diag>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("expected success, got: {}", e.render(false, 100)),
    }
}

mod infra_config_required_fields {
    use super::*;

    #[test]
    fn test_minimal_config_validates() {
        let cfg = ok(validate(&min_plus("")));
        assert_eq!(cfg.namespace, "nemo-rl");
        assert_eq!(cfg.image, "nvcr.io/nvidia/nemo-rl:test");
        assert_eq!(cfg.scheduler.kind, SchedulerKind::Default);
        assert_eq!(cfg.workspace.kind, WorkspaceKind::RayUpload);
    }

    #[test]
    fn test_missing_namespace_is_rejected() {
        let e = err(validate(&yaml("image: foo:bar\n")));
        assert_eq!(e.code, "nrl::config::required");
        assert!(e.message.contains("infra.namespace"), "{}", e.message);
    }

    #[test]
    fn test_missing_image_is_rejected() {
        let e = err(validate(&yaml("namespace: ns\n")));
        assert_eq!(e.code, "nrl::config::required");
        assert!(e.message.contains("infra.image"), "{}", e.message);
    }

    #[test]
    fn test_blank_namespace_is_rejected() {
        let e = err(validate(&yaml("namespace: \"   \"\nimage: foo:bar\n")));
        assert_eq!(e.code, "nrl::config::rule");
        assert!(e.message.contains("must not be empty"), "{}", e.message);
    }
}

mod infra_config_strictness {
    use super::*;

    #[test]
    fn test_unknown_top_level_key_rejected() {
        let e = err(validate(&min_plus("totally_fake_key: true\n")));
        assert_eq!(e.code, "nrl::config::unknown_key");
        assert!(e.message.contains("totally_fake_key"), "{}", e.message);
    }

    #[test]
    fn test_unknown_nested_key_rejected() {
        let e = err(validate(&min_plus("scheduler: {kind: default, typo: x}\n")));
        assert_eq!(e.code, "nrl::config::unknown_key");
        assert!(e.message.contains("infra.scheduler"), "{}", e.message);
        assert!(e.related.is_empty());
    }
}

mod scheduler_spec {
    use super::*;
    use crate::config::schema::parse::scheduler;

    #[test]
    fn test_default_requires_no_queue() {
        let s = ok(part(scheduler, "scheduler", "{}"));
        assert_eq!(s, SchedulerSpec::default());
        assert_eq!(s.kind, SchedulerKind::Default);
        assert_eq!(s.queue, None);
    }

    #[test]
    fn test_kai_without_queue_rejected() {
        let e = err(part(scheduler, "scheduler", "{kind: kai}"));
        assert_eq!(e.code, "nrl::config::rule");
        assert!(
            e.message
                .contains("infra.scheduler.queue` is required when scheduler.kind=kai"),
            "{}",
            e.message
        );
    }

    #[test]
    fn test_kueue_without_queue_rejected() {
        let e = err(part(scheduler, "scheduler", "{kind: kueue}"));
        assert!(e.message.contains("scheduler.kind=kueue"), "{}", e.message);
    }

    #[test]
    fn test_kai_with_queue_accepted() {
        let s = ok(part(scheduler, "scheduler", "{kind: kai, queue: team-a}"));
        assert_eq!(s.kind, SchedulerKind::Kai);
        assert_eq!(s.queue.as_deref(), Some("team-a"));
    }

    #[test]
    fn test_invalid_kind_rejected() {
        let e = err(part(scheduler, "scheduler", "{kind: slurm}"));
        assert_eq!(e.code, "nrl::config::enum");
        assert!(
            e.message.contains("'kai', 'kueue' or 'default'"),
            "{}",
            e.message
        );
    }
}

mod workspace_spec {
    use super::*;
    use crate::config::schema::parse::workspace;

    #[test]
    fn test_default_is_ray_upload() {
        let w = ok(part(workspace, "workspace", "{}"));
        assert_eq!(w.kind, WorkspaceKind::RayUpload);
        assert_eq!(w, WorkspaceSpec::default());
    }

    #[test]
    fn test_pvc_kinds_require_pvc_name_lustre() {
        let e = err(part(workspace, "workspace", "{kind: lustre}"));
        assert!(
            e.message
                .contains("infra.workspace.pvcName` is required when kind=lustre"),
            "{}",
            e.message
        );
    }

    #[test]
    fn test_pvc_kinds_require_pvc_name_pvc() {
        let e = err(part(workspace, "workspace", "{kind: pvc}"));
        assert!(e.message.contains("kind=pvc"), "{}", e.message);
    }

    #[test]
    fn test_lustre_with_pvc_name_accepted() {
        let w = ok(part(
            workspace,
            "workspace",
            "{kind: lustre, pvcName: nemo-rl-lustre, size: 1200Gi}",
        ));
        assert_eq!(w.pvc_name.as_deref(), Some("nemo-rl-lustre"));
        assert_eq!(w.size.as_deref(), Some("1200Gi"));
        assert_eq!(w.mount_path, "/mnt/nemo-rl");
    }

    #[test]
    fn test_host_path_without_host_path_rejected() {
        let e = err(part(workspace, "workspace", "{kind: hostPath}"));
        assert!(
            e.message
                .contains("hostPath` is required when kind=hostPath"),
            "{}",
            e.message
        );
    }

    #[test]
    fn test_host_path_with_host_path_accepted() {
        let w = ok(part(
            workspace,
            "workspace",
            "{kind: hostPath, hostPath: /data}",
        ));
        assert_eq!(w.host_path.as_deref(), Some("/data"));
    }
}

mod hf_cache_spec {
    use super::*;
    use crate::config::schema::parse::hf_cache;

    #[test]
    fn test_default_is_none() {
        let h = ok(part(hf_cache, "hf_cache", "{}"));
        assert_eq!(h.kind, HFCacheKind::None);
    }

    #[test]
    fn test_pvc_kinds_require_name_lustre() {
        let e = err(part(hf_cache, "hf_cache", "{kind: lustre}"));
        assert!(
            e.message
                .contains("infra.hf_cache.pvcName` is required when kind=lustre"),
            "{}",
            e.message
        );
    }

    #[test]
    fn test_pvc_kinds_require_name_pvc() {
        let e = err(part(hf_cache, "hf_cache", "{kind: pvc}"));
        assert!(e.message.contains("kind=pvc"), "{}", e.message);
    }
}

mod checkpoints_spec {
    use super::*;
    use crate::config::schema::parse::checkpoints;

    #[test]
    fn test_default_is_none() {
        let c = ok(part(checkpoints, "checkpoints", "{}"));
        assert_eq!(c.kind, CheckpointsKind::None);
    }

    #[test]
    fn test_lustre_without_pvc_rejected() {
        let e = err(part(checkpoints, "checkpoints", "{kind: lustre}"));
        assert!(
            e.message
                .contains("infra.checkpoints.pvcName` is required when kind=lustre"),
            "{}",
            e.message
        );
    }
}

mod launch_spec {
    use super::*;
    use crate::config::schema::parse::launch;

    #[test]
    fn test_default_is_single() {
        let l = ok(part(launch, "launch", "{}"));
        assert_eq!(l.mode, LaunchMode::Single);
        assert!(l.peer_watcher);
    }

    #[test]
    fn test_attach_requires_a_target() {
        let e = err(part(launch, "launch", "{mode: attach, attach: {}}"));
        assert_eq!(e.code, "nrl::config::rule");
        assert!(
            e.message.contains("requires at least one of"),
            "{}",
            e.message
        );
    }

    #[test]
    fn test_attach_with_generation_only_ok() {
        let l = ok(part(
            launch,
            "launch",
            "{mode: attach, attach: {generation: rc-gen}}",
        ));
        assert_eq!(l.attach.generation.as_deref(), Some("rc-gen"));
        assert_eq!(l.attach.training, None);
    }

    #[test]
    fn test_run_mode_defaults_to_interactive() {
        assert_eq!(
            ok(part(launch, "launch", "{}")).run_mode,
            RunMode::Interactive
        );
    }

    #[test]
    fn test_code_source_defaults_to_upload() {
        assert_eq!(
            ok(part(launch, "launch", "{}")).code_source,
            CodeSource::Upload
        );
    }

    #[test]
    fn test_code_path_required_for_image() {
        let e = err(part(launch, "launch", "{codeSource: image}"));
        assert!(e.message.contains("codePath` is required"), "{}", e.message);
        assert!(e.message.contains("codeSource=image"), "{}", e.message);
    }

    #[test]
    fn test_code_path_required_for_lustre() {
        let e = err(part(launch, "launch", "{codeSource: lustre}"));
        assert!(e.message.contains("codePath` is required"), "{}", e.message);
    }

    #[test]
    fn test_code_path_ok_with_image() {
        let l = ok(part(
            launch,
            "launch",
            "{codeSource: image, codePath: /opt/nemo-rl}",
        ));
        assert_eq!(l.code_source, CodeSource::Image);
        assert_eq!(l.code_path.as_deref(), Some("/opt/nemo-rl"));
    }

    #[test]
    fn test_code_path_not_required_for_upload() {
        let l = ok(part(launch, "launch", "{codeSource: upload}"));
        assert_eq!(l.code_path, None);
    }
}

mod submitter_mode {
    use super::*;
    use crate::config::schema::parse::submit;

    #[test]
    fn test_default_is_port_forward() {
        assert_eq!(SubmitSpec::default().submitter, SubmitterMode::PortForward);
        let s = ok(part(submit, "submit", "{}"));
        assert_eq!(s.submitter, SubmitterMode::PortForward);
    }

    #[test]
    fn test_exec_tmp_dir_default() {
        assert_eq!(ok(part(submit, "submit", "{}")).exec_tmp_dir, "/tmp");
    }

    #[test]
    fn test_exec_tmp_dir_override() {
        let s = ok(part(
            submit,
            "submit",
            "{submitter: exec, execTmpDir: /workspace/tmp}",
        ));
        assert_eq!(s.submitter, SubmitterMode::Exec);
        assert_eq!(s.exec_tmp_dir, "/workspace/tmp");
    }
}

mod tolerations {
    use super::*;

    #[test]
    fn test_simple_toleration_accepted() {
        let cfg = ok(validate(&min_plus(
            "placement:\n  nodeSelector: {gpu: h100}\n  tolerations:\n    - {key: team, operator: Equal, value: rl, effect: NoSchedule}\n",
        )));
        assert_eq!(cfg.placement.node_selector["gpu"], "h100");
        assert_eq!(cfg.placement.tolerations.len(), 1);
        let t = &cfg.placement.tolerations[0];
        assert_eq!(t.key, "team");
        assert_eq!(t.operator, TolerationOperator::Equal);
        assert_eq!(t.value.as_deref(), Some("rl"));
        assert_eq!(t.effect, TolerationEffect::NoSchedule);
    }

    #[test]
    fn test_invalid_effect_rejected() {
        let e = err(validate(&min_plus(
            "placement:\n  tolerations:\n    - {key: k, effect: DoesntExist}\n",
        )));
        assert_eq!(e.code, "nrl::config::enum");
        assert!(
            e.message.contains("infra.placement.tolerations.0.effect"),
            "{}",
            e.message
        );
    }
}

mod cluster_spec_segment_size {
    use super::*;
    use crate::config::schema::parse::cluster;

    #[test]
    fn test_defaults_to_none() {
        let c = ok(part(cluster, "kuberay.training", "{name: x, spec: {}}"));
        assert_eq!(c.segment_size, None);
    }

    #[test]
    fn test_positive_accepted() {
        let c = ok(part(
            cluster,
            "kuberay.training",
            "{name: x, spec: {}, segmentSize: 16}",
        ));
        assert_eq!(c.segment_size, Some(16));
    }

    #[test]
    fn test_zero_rejected() {
        let e = err(part(
            cluster,
            "kuberay.training",
            "{name: x, spec: {}, segmentSize: 0}",
        ));
        assert_eq!(e.code, "nrl::config::rule");
        assert!(e.message.contains("greater than 0"), "{}", e.message);
    }

    #[test]
    fn test_negative_rejected() {
        let e = err(part(
            cluster,
            "kuberay.training",
            "{name: x, spec: {}, segmentSize: -1}",
        ));
        assert!(
            e.message.contains("greater than 0, got -1"),
            "{}",
            e.message
        );
    }
}
