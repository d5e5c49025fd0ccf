//! The run's pods: why Pending pods are not scheduled (FailedScheduling parsed, checked
//! against the nodes, DRA claims and KAI queues), and how running pods fail (image pulls,
//! crash loops, OOM kills, evictions, exit codes). Kubelet strings:
//! kuberay-and-apiserver-semantics §6.

use serde_json::Value as Json;

use super::scheduling::{self, FitError, NodeView, ReasonKind};
use super::{Evidence, Groups, Snapshot};
use crate::doctor::rules::{
    CONTAINER_FAILED, CRASH_LOOP, DRA_CLAIM_UNALLOCATED, EVICTED, GANG_WAITING, IMAGE_PULL,
    INSUFFICIENT_RESOURCES, NODE_SELECTOR_MISMATCH, OOM_KILLED, QUEUE_MISSING, QUEUE_OVER_QUOTA,
    UNBOUND_PVC, UNSCHEDULABLE, UNTOLERATED_TAINT,
};
use crate::doctor::scheduling::{KAI_QUEUE, KAI_SCHEDULER};
use crate::k8s::status::{ContainerStatus, PodStatus};

pub(super) fn name(pod: &Json) -> &str {
    pod.pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or("?")
}

/// The worker group (`ray.io/group`) a pod belongs to, for grouping findings.
fn group(pod: &Json) -> &str {
    pod.pointer("/metadata/labels/ray.io~1group")
        .and_then(Json::as_str)
        .unwrap_or("")
}

pub(super) fn scheduler(pod: &Json) -> &str {
    pod.pointer("/spec/schedulerName")
        .and_then(Json::as_str)
        .unwrap_or("default-scheduler")
}

pub(super) fn queue(pod: &Json) -> Option<&str> {
    pod.pointer(&format!(
        "/metadata/labels/{}",
        KAI_QUEUE.replace('/', "~1")
    ))
    .and_then(Json::as_str)
}

fn alive(pod: &Json) -> bool {
    pod.pointer("/metadata/deletionTimestamp").is_none()
}

/// Pending and not bound to a node.
pub(super) fn unscheduled(pod: &Json) -> bool {
    alive(pod)
        && PodStatus::of(pod).phase.as_deref().unwrap_or("Pending") == "Pending"
        && pod.pointer("/spec/nodeName").is_none()
}

fn container_limit(pod: &Json, container: &str, resource: &str) -> Option<String> {
    pod.pointer("/spec/containers")?
        .as_array()?
        .iter()
        .find(|c| c.get("name").and_then(Json::as_str) == Some(container))?
        .pointer(&format!("/resources/limits/{resource}"))
        .map(|v| match v {
            Json::String(s) => s.clone(),
            other => other.to_string(),
        })
}

fn container_image(pod: &Json, c: &ContainerStatus) -> String {
    pod.pointer("/spec/containers")
        .and_then(Json::as_array)
        .and_then(|l| {
            l.iter()
                .find(|s| s.get("name").and_then(Json::as_str) == Some(c.name.as_str()))
        })
        .and_then(|s| s.get("image"))
        .and_then(Json::as_str)
        .map(str::to_string)
        .or_else(|| c.image.clone())
        .unwrap_or_default()
}

/// The containers whose previous run's log diagnose reads: the first crash-looping (not
/// OOM-killed) container of each (group, container) pair, so a 64-worker crash costs one
/// log call, not 64.
pub(super) fn crashing(pods: &[Json]) -> Vec<(String, String)> {
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut out = Vec::new();
    for p in pods.iter().filter(|p| alive(p)) {
        let status = PodStatus::of(p);
        for c in status.all_containers() {
            let looping =
                c.waiting.as_ref().and_then(|w| w.reason.as_deref()) == Some("CrashLoopBackOff");
            let oom =
                c.last_terminated.as_ref().and_then(|t| t.reason.as_deref()) == Some("OOMKilled");
            if looping && !oom {
                let key = (group(p).to_string(), c.name.clone());
                if !seen.contains(&key) {
                    seen.push(key);
                    out.push((name(p).to_string(), c.name.clone()));
                }
            }
        }
    }
    out
}

/// Why each Pending pod is not scheduled.
pub(super) fn pending(snap: &Snapshot, pods: &[Json], out: &mut Groups) {
    for pod in pods.iter().filter(|p| unscheduled(p)) {
        let pname = name(pod);
        let event = snap
            .events_of("Pod", pname, Some(&["FailedScheduling", "Unschedulable"]))
            .into_iter()
            .last();
        let status = PodStatus::of(pod);
        let condition = status.unschedulable().cloned();
        let (message, evidence) = match (&event, &condition) {
            (Some(e), _) => (e.message.clone(), e.note("Pod", pname)),
            (None, Some(c)) => {
                let m = c.message.clone().unwrap_or_default();
                (
                    m.clone(),
                    format!(
                        "condition PodScheduled=False ({}) on pod {pname}: {m}",
                        c.reason.as_deref().unwrap_or("")
                    ),
                )
            }
            (None, None) => (String::new(), String::new()),
        };
        let kai = scheduler(pod) == KAI_SCHEDULER;
        let mut explained = false;
        if kai {
            explained |= kai_queue(snap, pod, pods, &evidence, out);
        }
        // A named unallocated claim says more than the scheduler's `cannot allocate`.
        let claimed = claims(snap, pod, &evidence, out);
        explained |= claimed;
        if let Some(fit) = scheduling::parse(&message) {
            explained |= fit_reasons(snap, pod, &fit, &evidence, claimed, out);
        } else if !message.is_empty() && !kai {
            out.add(UNSCHEDULABLE, &message, pname, || {
                (
                    format!("pods Pending: the scheduler says: {message}"),
                    "read the scheduler's message above; `kubectl describe pod` shows the same"
                        .to_string(),
                    vec![evidence.clone()],
                )
            });
            explained = true;
        }
        if kai && !explained {
            let total = pods.iter().filter(|p| alive(p)).count();
            let waiting = pods.iter().filter(|p| unscheduled(p)).count();
            out.add(GANG_WAITING, "kai", pname, || {
                (
                    format!("{waiting} of {total} pods Pending under kai-scheduler, which binds a gang only when all its pods fit at once"),
                    "free or add capacity for the whole group (every worker at once), or ask for fewer workers; `kubectl get podgroups` shows the group's state".to_string(),
                    [evidence.clone()].into_iter().filter(|e| !e.is_empty()).collect(),
                )
            });
        }
    }
}

fn nodes_note(snap: &Snapshot) -> Option<String> {
    match &snap.nodes {
        Some(_) => None,
        None => Some("nodes could not be read, so what the nodes have is not shown".to_string()),
    }
}

fn fit_reasons(
    snap: &Snapshot,
    pod: &Json,
    fit: &FitError,
    evidence: &str,
    claimed: bool,
    out: &mut Groups,
) -> bool {
    let pname = name(pod);
    let total = fit
        .total_nodes
        .map(|n| n.to_string())
        .unwrap_or_else(|| "?".into());
    let nodes: &[NodeView] = snap.nodes.as_deref().unwrap_or(&[]);
    let mut any = false;
    for r in &fit.reasons {
        any = true;
        // Per worker group: groups ask for different things.
        let gkey = format!("{}/{}", group(pod), r.text);
        let count = r
            .nodes
            .map(|n| format!("{n} of {total} nodes"))
            .unwrap_or_else(|| format!("all {total} nodes"));
        match &r.kind {
            ReasonKind::Insufficient(res) => {
                let ask = scheduling::pod_request(pod, res);
                out.add(INSUFFICIENT_RESOURCES, &gkey, pname, || {
                    let ask_text = ask
                        .map(|a| scheduling::show_quantity(res, a))
                        .unwrap_or_else(|| "?".into());
                    let mut notes = vec![evidence.to_string()];
                    let mut what = format!(
                        "pods Pending: {count} have too little {res} free (a pod asks {ask_text})"
                    );
                    if !nodes.is_empty() {
                        let max = nodes.iter().map(|n| n.allocatable(res)).fold(0.0, f64::max);
                        let fit = ask.map_or(0, |a| {
                            nodes.iter().filter(|n| n.allocatable(res) >= a).count()
                        });
                        what.push_str(&format!(
                            "; the most any node has allocatable is {}",
                            scheduling::show_quantity(res, max)
                        ));
                        notes.push(format!(
                            "{fit} of {} nodes could hold such a pod when empty; allocatable {res}: {}",
                            nodes.len(),
                            summarize(nodes.iter().map(|n| format!(
                                "{}={}",
                                n.name,
                                scheduling::show_quantity(res, n.allocatable(res))
                            )))
                        ));
                        notes.push("free = allocatable minus what pods already on a node request; diagnose does not list other namespaces' pods, `kubectl describe node` shows it".to_string());
                    }
                    notes.extend(nodes_note(snap));
                    let fix = if res == crate::doctor::pods::GPU {
                        "ask for no more GPUs per pod than a node has (the worker's `nvidia.com/gpu` limit and `cluster.gpus_per_node` must agree), fewer workers, or wait until GPUs are free"
                    } else {
                        "lower the pod's requests so that it fits a node, or wait until the nodes have room"
                    };
                    (what, fix.to_string(), notes)
                });
            }
            ReasonKind::Taint { key, value } => {
                let named: Vec<String> = match key {
                    Some(k) => vec![match value {
                        Some(v) => format!("{k}={v}"),
                        None => k.clone(),
                    }],
                    None => scheduling::untolerated(pod, nodes)
                        .into_iter()
                        .map(|(t, n)| format!("{t} ({n} nodes)"))
                        .collect(),
                };
                out.add(UNTOLERATED_TAINT, &gkey, pname, || {
                    let names = if named.is_empty() {
                        "(the message names none and the nodes could not be read)".to_string()
                    } else {
                        named.join(", ")
                    };
                    let tkey = key.clone().unwrap_or_else(|| {
                        named
                            .first()
                            .and_then(|t| t.split(['=', ':']).next())
                            .unwrap_or("KEY")
                            .to_string()
                    });
                    let mut notes = vec![evidence.to_string()];
                    notes.extend(nodes_note(snap).filter(|_| key.is_none()));
                    (
                        format!("pods Pending: {count} have a taint the pods do not tolerate: {names}"),
                        format!("add a toleration to the pod template (`tolerations: [{{key: {tkey}, operator: Exists, effect: NoSchedule}}]` in the worker group), or target nodes without the taint"),
                        notes,
                    )
                });
            }
            ReasonKind::NodeAffinity => {
                let unmatched = scheduling::unmatched_selector(pod, nodes);
                out.add(NODE_SELECTOR_MISMATCH, &gkey, pname, || {
                    let mut what = format!("pods Pending: {count} do not match the pods' node selector or affinity");
                    if !unmatched.is_empty() {
                        what.push_str(&format!("; no node has the label {}", unmatched.join(", ")));
                    }
                    let mut notes = vec![evidence.to_string()];
                    if let Some(sel) = pod.pointer("/spec/nodeSelector") {
                        notes.push(format!("nodeSelector: {sel}"));
                    }
                    notes.extend(nodes_note(snap));
                    (
                        what,
                        "fix the nodeSelector / affinity of the pod template (`kubectl get nodes --show-labels` lists the labels), or label the nodes".to_string(),
                        notes,
                    )
                });
            }
            ReasonKind::Volume => {
                let claims: Vec<String> = pod
                    .pointer("/spec/volumes")
                    .and_then(Json::as_array)
                    .map(|l| {
                        l.iter()
                            .filter_map(|v| v.pointer("/persistentVolumeClaim/claimName"))
                            .filter_map(Json::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                out.add(UNBOUND_PVC, &gkey, pname, || {
                    (
                        format!("pods Pending: {} (claims: {})", r.text, if claims.is_empty() { "?".to_string() } else { claims.join(", ") }),
                        "check the claim: `kubectl describe pvc NAME` (its StorageClass, provisioner and events); it must be Bound, in a zone the nodes are in".to_string(),
                        vec![evidence.to_string()],
                    )
                });
            }
            ReasonKind::Claim if claimed => {}
            ReasonKind::Claim => {
                out.add(DRA_CLAIM_UNALLOCATED, &gkey, pname, || {
                    (
                        format!("pods Pending: {count}: {}", r.text),
                        "check the ResourceClaims (`kubectl get resourceclaims`) and the DRA driver's pods; the claim's device class must match devices the nodes publish".to_string(),
                        vec![evidence.to_string()],
                    )
                });
            }
            ReasonKind::Cordoned | ReasonKind::Other => {
                out.add(UNSCHEDULABLE, &gkey, pname, || {
                    (
                        format!("pods Pending: {count}: {}", r.text),
                        "read the scheduler's reason; `kubectl describe pod` shows the same"
                            .to_string(),
                        vec![evidence.to_string()],
                    )
                });
            }
        }
    }
    any
}

/// Claims the pod uses (by the names in its status, else its spec's template-less
/// claims) that are not allocated.
fn claims(snap: &Snapshot, pod: &Json, evidence: &str, out: &mut Groups) -> bool {
    let Some(all) = &snap.claims else {
        return false;
    };
    let made = PodStatus::of(pod).resource_claims;
    let names: Vec<&str> = made.iter().map(String::as_str).collect();
    let spec_names: Vec<&str> = pod
        .pointer("/spec/resourceClaims")
        .and_then(Json::as_array)
        .map(|l| {
            l.iter()
                .filter_map(|c| c.get("resourceClaimName").and_then(Json::as_str))
                .collect()
        })
        .unwrap_or_default();
    let mut any = false;
    for claim in all {
        let cname = name(claim);
        let owned = claim
            .pointer("/metadata/ownerReferences")
            .and_then(Json::as_array)
            .is_some_and(|l| {
                l.iter()
                    .any(|o| o.get("name").and_then(Json::as_str) == Some(name(pod)))
            });
        if !(names.contains(&cname) || spec_names.contains(&cname) || owned) {
            continue;
        }
        if crate::k8s::status::claim_is_allocated(claim) {
            continue;
        }
        any = true;
        out.add(DRA_CLAIM_UNALLOCATED, cname, name(pod), || {
            let mut notes = vec![format!("ResourceClaim {cname} has no status.allocation")];
            if !evidence.is_empty() {
                notes.push(evidence.to_string());
            }
            (
                format!("pods Pending: DRA ResourceClaim {cname} is not allocated"),
                "check the claim's device class and the DRA driver (`kubectl describe resourceclaim NAME`); for ComputeDomains, that the ComputeDomain is Ready".to_string(),
                notes,
            )
        });
    }
    any
}

/// A KAI queue that is missing, or smaller than the gang.
fn kai_queue(snap: &Snapshot, pod: &Json, pods: &[Json], evidence: &str, out: &mut Groups) -> bool {
    let Some(q) = queue(pod) else {
        return false;
    };
    let Some((_, found)) = snap.queues.iter().find(|(n, _)| n == q) else {
        return false;
    };
    let pname = name(pod);
    match found {
        None => {
            out.add(QUEUE_MISSING, q, pname, || {
                (
                    format!("pods Pending: KAI queue `{q}` (label {KAI_QUEUE}) does not exist, so kai-scheduler never schedules them"),
                    "use an existing queue (`kubectl get queues`) in the pods' `kai.scheduler/queue` label, or ask an admin to create it".to_string(),
                    [evidence.to_string()].into_iter().filter(|e| !e.is_empty()).collect(),
                )
            });
            true
        }
        Some(queue) => {
            // KAI Queue v2 `spec.resources.gpu.limit` (-1: no limit) — as read from KAI's
            // API types; not confirmed on a live cluster.
            let limit = queue
                .pointer("/spec/resources/gpu/limit")
                .and_then(Json::as_f64)
                .filter(|l| *l >= 0.0);
            let quota = queue
                .pointer("/spec/resources/gpu/quota")
                .and_then(Json::as_f64);
            let gang: f64 = pods
                .iter()
                .filter(|p| alive(p))
                .filter_map(|p| scheduling::pod_request(p, crate::doctor::pods::GPU))
                .sum();
            match limit {
                Some(l) if gang > l => {
                    out.add(QUEUE_OVER_QUOTA, q, pname, || {
                        let mut notes = vec![format!(
                            "queue {q}: spec.resources.gpu quota {}, limit {}",
                            quota.map(|v| v.to_string()).unwrap_or_else(|| "?".into()),
                            l
                        )];
                        if !evidence.is_empty() {
                            notes.push(evidence.to_string());
                        }
                        (
                            format!("pods Pending: the gang asks {gang} GPUs, more than KAI queue `{q}` may ever use (limit {l})"),
                            "ask for fewer GPUs in total, use a queue with a larger limit, or ask an admin to raise it".to_string(),
                            notes,
                        )
                    });
                    true
                }
                _ => false,
            }
        }
    }
}

/// Pods and containers that fail: image pulls, crash loops (with the previous run's
/// log), OOM kills, evictions, non-zero exits, config errors.
pub(super) fn failures(snap: &Snapshot, pods: &[Json], out: &mut Groups) {
    for pod in pods.iter().filter(|p| alive(p)) {
        let pname = name(pod);
        let status = PodStatus::of(pod);
        if status.phase.as_deref() == Some("Failed") && status.reason.as_deref() == Some("Evicted")
        {
            let msg = status.message.clone().unwrap_or_default();
            out.add(EVICTED, "evicted", pname, || {
                (
                    format!("pods evicted by their node: {msg}"),
                    "an eviction for memory or ephemeral-storage pressure means the pod used more than it requested: raise its requests to what it uses (limits alone do not protect it)".to_string(),
                    vec![format!("pod {pname}: phase Failed, reason Evicted: {msg}")],
                )
            });
            continue;
        }
        for c in status.all_containers() {
            container(snap, pod, c, out);
        }
    }
}

fn container(snap: &Snapshot, pod: &Json, c: &ContainerStatus, out: &mut Groups) {
    let pname = name(pod);
    let waiting = c.waiting.as_ref();
    let wreason = waiting.and_then(|w| w.reason.as_deref()).unwrap_or("");
    let wmessage = waiting.and_then(|w| w.message.clone()).unwrap_or_default();
    let cname = c.name.as_str();
    let key = format!("{}/{cname}", group(pod));
    if matches!(
        wreason,
        "ErrImagePull"
            | "ImagePullBackOff"
            | "InvalidImageName"
            | "ErrImageNeverPull"
            | "RegistryUnavailable"
    ) {
        let image = container_image(pod, c);
        let pulled: Vec<Evidence> = snap
            .events_of("Pod", pname, Some(&["Failed"]))
            .into_iter()
            .filter(|e| e.message.contains("pull") || e.message.contains("image"))
            .collect();
        out.add(IMAGE_PULL, &image, pname, || {
            let mut notes = vec![format!("container {cname} on pod {pname}: waiting {wreason}: {wmessage}")];
            notes.extend(pulled.last().map(|e| e.note("Pod", pname)));
            (
                format!("image {image} cannot be pulled ({wreason})"),
                "check the image name and tag, and that the pods may pull it (an imagePullSecret for a private registry); the registry's message is below".to_string(),
                notes,
            )
        });
        return;
    }
    if matches!(
        wreason,
        "CreateContainerConfigError" | "CreateContainerError" | "RunContainerError"
    ) {
        out.add(CONTAINER_FAILED, &format!("{key}/{wreason}"), pname, || {
            (
                format!("container {cname} cannot start ({wreason}): {wmessage}"),
                "a missing Secret or ConfigMap (or a key of one) is the usual cause: create it, or fix the reference in the pod template".to_string(),
                vec![format!("container {cname} on pod {pname}: waiting {wreason}: {wmessage}")],
            )
        });
        return;
    }
    let ended = c.terminated.as_ref().or(c.last_terminated.as_ref());
    let oom = ended.filter(|t| t.reason.as_deref() == Some("OOMKilled"));
    if let Some(t) = oom {
        let limit = container_limit(pod, cname, "memory");
        out.add(OOM_KILLED, &key, pname, || {
            (
                format!(
                    "container {cname} was OOMKilled (exit {}) at its memory limit {}",
                    t.exit_code.unwrap_or(137),
                    limit.clone().unwrap_or_else(|| "(none: the node ran out)".into())
                ),
                "raise the container's memory limit (and request) in the pod template, or make the job use less (smaller batches, fewer workers per node)".to_string(),
                vec![format!(
                    "container {cname} on pod {pname}: {} restarts, last state terminated OOMKilled",
                    c.restart_count
                )],
            )
        });
        return;
    }
    if wreason == "CrashLoopBackOff" {
        let exit = c.last_terminated.as_ref().and_then(|t| t.exit_code);
        let log = snap
            .previous_logs
            .iter()
            .find(|(p, cn, _)| p == pname && cn == cname)
            .map(|(_, _, l)| l.clone());
        out.add(CRASH_LOOP, &key, pname, || {
            let mut notes = vec![format!(
                "container {cname} on pod {pname}: {} restarts, last exit code {}",
                c.restart_count,
                exit.map(|e| e.to_string()).unwrap_or_else(|| "?".into())
            )];
            match &log {
                Some(Ok(text)) if !text.trim().is_empty() => notes.push(format!(
                    "last lines of the previous container's log:\n{}",
                    text.trim_end()
                )),
                Some(Ok(_)) => notes.push("the previous container's log is empty".into()),
                Some(Err(e)) => notes.push(format!("the previous container's log could not be read: {e}")),
                None => {}
            }
            (
                format!(
                    "container {cname} keeps crashing (CrashLoopBackOff, exit code {})",
                    exit.map(|e| e.to_string()).unwrap_or_else(|| "?".into())
                ),
                "the previous run's log says why it exited (`kubectl logs --previous`); fix the command, image or config it needs".to_string(),
                notes,
            )
        });
        return;
    }
    if let Some(t) = c.terminated.as_ref()
        && let Some(code) = t.exit_code.filter(|c| *c != 0)
    {
        let reason = t.reason.clone().unwrap_or_else(|| "Error".into());
        out.add(CONTAINER_FAILED, &format!("{key}/{code}"), pname, || {
            let mut notes = vec![format!(
                "container {cname} on pod {pname}: terminated {reason}, exit code {code}"
            )];
            if let Some(m) = t.message.as_deref().filter(|m| !m.is_empty()) {
                notes.push(format!("message: {m}"));
            }
            (
                format!(
                    "container {cname} exited with code {code} ({reason}){}",
                    signal(code)
                ),
                "its log says why (`kubectl logs POD -c CONTAINER`)".to_string(),
                notes,
            )
        });
    }
}

/// ` = 128+9 (SIGKILL)` for codes above 128.
fn signal(code: i64) -> String {
    let name = match code - 128 {
        9 => "SIGKILL",
        15 => "SIGTERM",
        6 => "SIGABRT",
        11 => "SIGSEGV",
        7 => "SIGBUS",
        2 => "SIGINT",
        _ => return String::new(),
    };
    format!(", 128+{} = {name}", code - 128)
}

/// `a, b, c and 5 more`
pub(super) fn summarize(items: impl Iterator<Item = String>) -> String {
    let all: Vec<String> = items.collect();
    const SHOWN: usize = 4;
    if all.len() <= SHOWN {
        return all.join(", ");
    }
    format!("{} and {} more", all[..SHOWN].join(", "), all.len() - SHOWN)
}
