//! The recipe's `cluster.gpus_per_node` / `cluster.num_nodes` against the training
//! cluster's GPU workers.
//!
//! Asking for more than the cluster has is an error: Ray's placement groups wait for GPUs
//! or nodes that never come. Asking for less is a warning: the extra GPUs or workers sit
//! idle unless something else (Gym judges, servers) uses them.

use super::effective::{Effective, EntryOverride, effective};
use super::pods::{GroupKind, PodSite, cluster_pods, group_name, training_cluster};
use super::rules::{GPU_MISMATCH, NODE_COUNT_MISMATCH};
use super::{Ctx, Finding, Severity};
use crate::config::node::Node;

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    let Some(mut cluster) = training_cluster(&ctx.cfg.infra, ctx.manifests) else {
        return;
    };
    // Count on the infra's own worker groups: segment expansion keeps the totals, and the
    // labels then point at each group's `replicas:` line rather than `segmentSize`.
    if let Some(t) = &ctx.cfg.infra.kuberay.training {
        cluster.spec = &t.spec;
    }
    let workers: Vec<PodSite> = cluster_pods(&cluster)
        .into_iter()
        .filter(|p| p.kind == GroupKind::Worker)
        .collect();
    if workers.is_empty() {
        return;
    }
    let gpu_workers: Vec<&PodSite> = workers.iter().filter(|p| p.gpus().0 > 0).collect();
    let ovs = ctx.entry_overrides();
    gpus(ctx, ovs, &cluster.desc, &gpu_workers, out);
    // Without GPU workers the recipe's nodes are whatever workers there are.
    let counted: Vec<&PodSite> = if gpu_workers.is_empty() {
        workers.iter().collect()
    } else {
        gpu_workers
    };
    nodes(ctx, ovs, &cluster.desc, &counted, out);
}

fn int_of(e: &Effective) -> Option<i64> {
    super::pods::quantity(&e.value)
}

fn source_label(e: &Effective, key: &str, v: i64) -> String {
    if e.from_entrypoint {
        format!("the entrypoint sets {key}={v}")
    } else {
        format!("{key}: {v}")
    }
}

fn gpus(
    ctx: &Ctx,
    ovs: &[EntryOverride],
    desc: &str,
    gpu_workers: &[&PodSite],
    out: &mut Vec<Finding>,
) {
    const KEY: &str = "cluster.gpus_per_node";
    let Some(want) = effective(ctx.cfg, ovs, KEY) else {
        return;
    };
    let Some(per_node) = int_of(&want) else {
        return;
    };
    let off: Vec<(&PodSite, i64, Option<&Node>)> = gpu_workers
        .iter()
        .map(|p| {
            let (n, node) = p.gpus();
            (*p, n, node)
        })
        .filter(|(_, n, _)| *n != per_node)
        .collect();
    let Some(&(_, first_gpus, _)) = off.first() else {
        return;
    };
    let too_many = off.iter().any(|(_, n, _)| per_node > *n);
    let groups = off
        .iter()
        .map(|(p, n, _)| format!("{} has {n}", group_name(p.group)))
        .collect::<Vec<_>>()
        .join(", ");
    let (severity, why) = if too_many {
        (
            Severity::Error,
            "Ray would wait for GPUs the worker pods do not have",
        )
    } else {
        (
            Severity::Warning,
            "the extra GPUs of each worker pod would sit idle",
        )
    };
    let mut f = Finding::new(
        GPU_MISMATCH,
        format!(
            "{KEY} is {per_node} but the GPU worker pods of {desc} have a different nvidia.com/gpu limit ({groups}): {why}"
        ),
    )
    .with_severity(severity)
    .at(want.span, source_label(&want, KEY, per_node));
    for (p, n, node) in &off {
        f = f.also(
            node.and_then(Node::best_span).or(p.group_span()),
            format!("{n} GPU(s) per pod in {}", group_name(p.group)),
        );
    }
    out.push(f.fix(format!(
        "make them agree: set `{KEY}={first_gpus}` (recipe or entrypoint override) or give the workers `nvidia.com/gpu: {per_node}`"
    )));
}

fn nodes(
    ctx: &Ctx,
    ovs: &[EntryOverride],
    desc: &str,
    counted: &[&PodSite],
    out: &mut Vec<Finding>,
) {
    const KEY: &str = "cluster.num_nodes";
    let Some(want) = effective(ctx.cfg, ovs, KEY) else {
        return;
    };
    let Some(num_nodes) = int_of(&want) else {
        return;
    };
    let total: i64 = counted.iter().map(|p| p.pod_count()).sum();
    if total == num_nodes {
        return;
    }
    let kind = if counted.iter().any(|p| p.gpus().0 > 0) {
        "GPU worker pods"
    } else {
        "worker pods"
    };
    let groups = counted
        .iter()
        .map(|p| format!("{}: {}", group_name(p.group), p.pod_count()))
        .collect::<Vec<_>>();
    // Segment expansion repeats one group many times; keep the message short.
    let shown = if groups.len() > 4 {
        format!("{} groups", groups.len())
    } else {
        groups.join(", ")
    };
    let (severity, why) = if num_nodes > total {
        (
            Severity::Error,
            "the job would wait for nodes that never come",
        )
    } else {
        (
            Severity::Warning,
            "the other workers would sit idle unless something else uses them",
        )
    };
    let mut f = Finding::new(
        NODE_COUNT_MISMATCH,
        format!("{KEY} is {num_nodes} but {desc} has {total} {kind} ({shown}): {why}"),
    )
    .with_severity(severity)
    .at(want.span, source_label(&want, KEY, num_nodes));
    for p in counted {
        let replicas = p
            .group
            .get("replicas")
            .or_else(|| p.group.get("minReplicas"));
        f = f.also(
            replicas.and_then(Node::best_span).or(p.group_span()),
            format!("{} pod(s) in {}", p.pod_count(), group_name(p.group)),
        );
    }
    out.push(f.fix(format!(
        "make them agree: set `{KEY}={total}` (recipe or entrypoint override) or change the workers' replicas to add up to {num_nodes}"
    )));
}
