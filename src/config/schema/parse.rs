//! The hand-written parts of the readers: each model's cross-field rules (run only when
//! every field validated; the first failing rule is the one reported) and the converters
//! no shared one covers. The readers themselves are generated from the model tables
//! (`models.rs`, `dev.rs`).

// The unit tests read single sections through these.
#[cfg(test)]
pub(super) use super::models::{
    checkpoints, cluster, hf_cache, launch, scheduler, submit, workspace,
};

use super::enums::*;
use super::models::*;
use crate::config::node::Node;
use crate::config::typed::check::*;
use crate::config::typed::convert::*;
use crate::diag::Diag;

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

pub(super) fn scheduler_rules(
    cx: &mut Cx,
    node: &Node,
    path: &Path,
    v: SchedulerSpec,
) -> Option<SchedulerSpec> {
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

pub(super) fn workspace_rules(
    cx: &mut Cx,
    node: &Node,
    path: &Path,
    v: WorkspaceSpec,
) -> Option<WorkspaceSpec> {
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

pub(super) fn hf_cache_rules(
    cx: &mut Cx,
    node: &Node,
    path: &Path,
    v: HFCacheSpec,
) -> Option<HFCacheSpec> {
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

pub(super) fn checkpoints_rules(
    cx: &mut Cx,
    node: &Node,
    path: &Path,
    v: CheckpointsSpec,
) -> Option<CheckpointsSpec> {
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

pub(super) fn launch_rules(
    cx: &mut Cx,
    node: &Node,
    path: &Path,
    v: LaunchSpec,
) -> Option<LaunchSpec> {
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

/// `segmentSize`: a lax int that must be greater than 0.
pub(super) fn segment_size(cx: &mut Cx, node: &Node, path: &Path) -> Option<i64> {
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
