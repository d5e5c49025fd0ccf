//! Scheduling rules: GPU workers without tolerations, KAI without a queue label, KAI
//! topology annotations on only some worker groups.

use super::pods::{GroupKind, cluster_pods, clusters, group_name, pods};
use super::rules::{KAI_QUEUE_LABEL, KAI_TOPOLOGY_PARTIAL, NO_TOLERATIONS};
use super::{Ctx, Finding};
use crate::config::node::Node;

pub const KAI_SCHEDULER: &str = "kai-scheduler";
pub const KAI_QUEUE: &str = "kai.scheduler/queue";
/// Annotations that put a worker group under a KAI topology constraint.
pub const KAI_TOPOLOGY: &[&str] = &[
    "kai.scheduler/topology",
    "kai.scheduler/topology-required-placement",
    "kai.scheduler/topology-preferred-placement",
];

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    for p in pods(ctx.manifests) {
        let Some(spec) = p.pod_spec() else { continue };
        let place = format!("{} {}", p.desc, p.place);
        let (gpus, gpu_node) = p.gpus();
        let tolerations = spec
            .get("tolerations")
            .and_then(Node::as_list)
            .is_some_and(|l| !l.is_empty());
        if p.kind == GroupKind::Worker && gpus > 0 && !tolerations {
            out.push(
                Finding::new(
                    NO_TOLERATIONS,
                    format!(
                        "GPU worker pods of {place} have no tolerations; GPU nodes are usually tainted, so they may stay Pending",
                    ),
                )
                .place(place.clone())
                .at(
                    gpu_node.and_then(Node::best_span).or(p.group_span()),
                    format!("{gpus} GPU(s) per pod, no tolerations"),
                )
                .fix("add the GPU nodes' tolerations to the worker template (`tolerations: [{operator: Exists}]` tolerates every taint)"),
            );
        }
        let scheduler = spec.get("schedulerName");
        if scheduler.and_then(Node::as_str) == Some(KAI_SCHEDULER) && p.label(KAI_QUEUE).is_none() {
            out.push(
                Finding::new(
                    KAI_QUEUE_LABEL,
                    format!(
                        "{place} uses schedulerName `{KAI_SCHEDULER}` but has no `{KAI_QUEUE}` label; KAI does not schedule pods without a queue",
                    ),
                )
                .place(place.clone())
                .at(scheduler.and_then(Node::best_span), "KAI scheduler without a queue")
                .fix(format!(
                    "add `{KAI_QUEUE}: <queue>` to the cluster's `labels:` in the infra file (or `infra.labels`)"
                )),
            );
        }
    }
    for c in clusters(ctx.manifests) {
        let workers: Vec<_> = cluster_pods(&c)
            .into_iter()
            .filter(|p| p.kind == GroupKind::Worker)
            .collect();
        let with: Vec<_> = workers
            .iter()
            .filter(|p| KAI_TOPOLOGY.iter().any(|k| p.annotation(k).is_some()))
            .collect();
        let Some(example) = with.first() else {
            continue;
        };
        let example_span = KAI_TOPOLOGY
            .iter()
            .find_map(|k| example.annotation(k))
            .and_then(|n| n.key_span.or(n.span));
        for p in workers
            .iter()
            .filter(|p| !with.iter().any(|w| std::ptr::eq(w.group, p.group)))
        {
            out.push(
                Finding::new(
                    KAI_TOPOLOGY_PARTIAL,
                    format!(
                        "worker group `{}` of {} has no KAI topology annotations but `{}` does; KAI places the gang under one constraint",
                        group_name(p.group),
                        c.desc,
                        group_name(example.group)
                    ),
                )
                .at(p.group_span(), "no kai.scheduler/topology annotations")
                .also(example_span, format!("set on `{}`", group_name(example.group)))
                .fix("give every worker group the same `kai.scheduler/topology*` annotations under `template.metadata.annotations`, or remove them from all"),
            );
        }
    }
}
