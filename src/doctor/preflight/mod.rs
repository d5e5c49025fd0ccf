//! Preflight: read-only checks of the target cluster before anything is applied.
//!
//! - every object the manifests reference exists in their namespace (PVCs, Secrets,
//!   ServiceAccounts, ConfigMaps, ResourceClaimTemplates not created by nrl); optional
//!   references are skipped;
//! - the API groups, versions and resources of the CRD-backed kinds are served
//!   (discovery, which every user may read);
//! - the user may `create` and `patch` (server-side apply) every kind the manifests hold
//!   (SelfSubjectAccessReview), and `create` the pod subresources the run will use on a
//!   RayCluster: `pods/portforward` to reach its dashboard from outside the cluster (the
//!   `portForward` submitter, daemons), `pods/exec` for the `exec` submitter;
//! - a KAI queue named by a `kai.scheduler/queue` label exists, when KAI is installed.
//!
//! A check the user is not allowed to make gives a warning; any other API failure is an
//! error of the whole preflight (exit 3).

mod apis;
pub mod refs;

pub(crate) use apis::kai_queue_resource as kai_queue_api;
use futures::future::join_all;

use super::Finding;
use super::allow::Allows;
use super::report::Report;
use super::rules::{ACCESS_DENIED, KAI_QUEUE_MISSING, MISSING_OBJECT, PREFLIGHT_UNCHECKED};
use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::config::source::Span;
use crate::diag::{Diag, Result};
use crate::k8s::K8s;
use crate::k8s::resources::by_kind;
use crate::run_id::RunId;

pub use apis::{Needed, needed_apis};
use refs::{ObjRef, QueueRef, Use};

/// What the preflight checks for a pair: its rendered objects plus the RayJob a launch
/// would create (when the pair renders one), so a RayJob launch's needs are checked too.
pub fn preflight_manifests(cfg: &LoadedConfig, manifests: &[Node]) -> Vec<Node> {
    let mut all = manifests.to_vec();
    let options = crate::render::rayjob::RayJobOptions::default();
    // The preflight renders the RayJob under a placeholder id (it names nothing).
    if let Ok(placeholder) = RunId::parse("doctor")
        && let Ok(rj) =
            crate::launch::rayjob::manifest::rayjob_manifest(cfg, &placeholder, &options)
    {
        all.push(rj);
    }
    all
}

/// Run every preflight check; allows are applied as for the offline rules.
pub async fn preflight(k8s: &K8s, cfg: &LoadedConfig, manifests: &[Node]) -> Result<Report> {
    let findings = preflight_findings(k8s, cfg, manifests).await?;
    Ok(Report::new(findings, &Allows::collect(cfg)))
}

/// The raw preflight findings (before allows).
pub async fn preflight_findings(
    k8s: &K8s,
    cfg: &LoadedConfig,
    manifests: &[Node],
) -> Result<Vec<Finding>> {
    let mut out = Vec::new();
    let groups = k8s.api_groups().await?;
    let anchor = cfg
        .infra
        .source
        .get("kuberay")
        .and_then(|k| k.key_span.or(k.span));
    apis::check(k8s, &groups, manifests, anchor, &mut out).await?;
    objects(k8s, manifests, &mut out).await?;
    access(k8s, manifests, anchor, &mut out).await?;
    subresource_access(k8s, cfg, manifests, &mut out).await?;
    kai_queues(k8s, &groups, manifests, &mut out).await?;
    Ok(out)
}

fn forbidden(d: &Diag) -> bool {
    d.code == "nrl::k8s::forbidden"
}

fn with_uses(mut f: Finding, uses: &[Use], what: &str) -> Finding {
    let first = uses.iter().find_map(|u| u.span);
    f = f.at(first, what.to_string());
    for u in uses {
        f = f.also(u.span, "also referenced here");
    }
    // The copies of one line (the segment copies of a worker group) make one note.
    let mut by_line: Vec<(Option<Span>, Vec<&str>)> = Vec::new();
    for u in uses {
        match by_line.iter_mut().find(|(span, _)| *span == u.span) {
            Some((_, by)) => by.push(u.by.as_str()),
            None => by_line.push((u.span, vec![u.by.as_str()])),
        }
    }
    for (_, by) in by_line {
        for places in crate::render::validate::compress_places(&by) {
            f = f.note(format!("referenced by {places}"));
        }
    }
    f
}

fn missing_fix(r: &ObjRef) -> String {
    let ns = &r.namespace;
    match r.kind {
        "PersistentVolumeClaim" => format!(
            "create the PVC in namespace `{ns}` or fix `claimName` (`kubectl get pvc -n {ns}` lists what exists)"
        ),
        "Secret"
            if r.uses
                .iter()
                .all(|u| u.by.ends_with("imagePullSecrets[].name")) =>
        {
            format!(
                "create the pull secret (`kubectl create secret docker-registry {} -n {ns} …`) or fix infra `imagePullSecrets`",
                r.name
            )
        }
        "Secret" => format!(
            "create it (`kubectl create secret generic {} -n {ns} …`), fix the name, or mark the reference `optional: true`",
            r.name
        ),
        "ServiceAccount" => format!(
            "create it (`kubectl create serviceaccount {} -n {ns}`) or fix infra `serviceAccount`",
            r.name
        ),
        "ConfigMap" => format!(
            "create it (`kubectl create configmap {} -n {ns} …`), fix the name, or mark the reference `optional: true`",
            r.name
        ),
        _ => format!(
            "create the {} in namespace `{ns}` or fix the name; nrl only creates the ComputeDomain and RoCE templates of the `compute-domain-channel`/`roce-channel` claims",
            r.kind
        ),
    }
}

async fn objects(k8s: &K8s, manifests: &[Node], out: &mut Vec<Finding>) -> Result<()> {
    let refs = refs::references(manifests, &k8s.namespace);
    let lookups = refs.iter().map(|r| async move {
        let ar = by_kind(r.kind)?;
        k8s.get(&ar, &r.namespace, &r.name).await
    });
    let results = join_all(lookups).await;
    for (r, res) in refs.iter().zip(results) {
        match res {
            Ok(Some(_)) => {}
            Ok(None) => out.push(with_uses(
                Finding::new(
                    MISSING_OBJECT,
                    format!(
                        "{} `{}` does not exist in namespace `{}`",
                        r.kind, r.name, r.namespace
                    ),
                ),
                &r.uses,
                "references a missing object",
            )
            .fix(missing_fix(r))),
            Err(d) if forbidden(&d) => out.push(with_uses(
                Finding::new(
                    PREFLIGHT_UNCHECKED,
                    format!(
                        "could not check that {} `{}` exists: you may not read it in namespace `{}`",
                        r.kind, r.name, r.namespace
                    ),
                ),
                &r.uses,
                "not checked",
            )
            .fix("ask for `get` on the kind, or check by hand that it exists")),
            Err(d) => return Err(d),
        }
    }
    Ok(())
}

/// (group, plural, namespace) of every object kind in the manifests, in order.
fn created_kinds(manifests: &[Node], default_ns: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for m in manifests {
        let s = |p: &str| m.get_path(p).and_then(Node::as_str).unwrap_or("");
        let Ok(ar) = crate::k8s::resources::api_resource(s("apiVersion"), s("kind")) else {
            continue;
        };
        let ns = match s("metadata.namespace") {
            "" => default_ns.to_string(),
            ns => ns.to_string(),
        };
        let key = (ar.group, ar.plural, ns);
        if !out.contains(&key) {
            out.push(key);
        }
    }
    out
}

async fn access(
    k8s: &K8s,
    manifests: &[Node],
    anchor: Option<Span>,
    out: &mut Vec<Finding>,
) -> Result<()> {
    const VERBS: [&str; 2] = ["create", "patch"];
    let kinds = created_kinds(manifests, &k8s.namespace);
    let reviews = kinds.iter().flat_map(|(g, p, ns)| {
        VERBS
            .iter()
            .map(move |v| async move { (*v, k8s.can_i(v, g, p, ns).await) })
    });
    let answers = join_all(reviews).await;
    for (i, (group, plural, ns)) in kinds.iter().enumerate() {
        let mut denied = Vec::new();
        let mut reasons = Vec::new();
        for (verb, res) in &answers[i * VERBS.len()..(i + 1) * VERBS.len()] {
            let a = res.as_ref().map_err(Clone::clone)?;
            if !a.allowed {
                denied.push(*verb);
                if !a.reason.is_empty() && !reasons.contains(&a.reason) {
                    reasons.push(a.reason.clone());
                }
            }
        }
        if denied.is_empty() {
            continue;
        }
        let qualified = if group.is_empty() {
            plural.clone()
        } else {
            format!("{plural}.{group}")
        };
        let mut f = Finding::new(
            ACCESS_DENIED,
            format!(
                "you may not {} {qualified} in namespace `{ns}`, which the launch needs",
                denied.join(" or ")
            ),
        )
        .at(anchor, "these objects are created by nrl")
        .fix(format!(
            "ask a cluster admin for a Role granting `create`, `patch` on `{qualified}` in namespace `{ns}` (or use a namespace where you have it)"
        ));
        for r in reasons {
            f = f.note(format!("authorizer: {r}"));
        }
        out.push(f);
    }
    Ok(())
}

/// The pod subresources a run on the manifests' RayClusters will open, with why.
fn needed_subresources(
    cfg: &LoadedConfig,
    manifests: &[Node],
    in_cluster: bool,
) -> Vec<(&'static str, &'static str)> {
    use crate::config::schema::SubmitterMode;
    let has_raycluster = manifests
        .iter()
        .any(|m| m.get_path("kind").and_then(Node::as_str) == Some("RayCluster"));
    if !has_raycluster {
        return Vec::new();
    }
    let mut out = Vec::new();
    let exec = cfg.infra.submit.submitter == SubmitterMode::Exec;
    // In a pod, Services are reached directly; outside, through the API's port-forward.
    let daemons = cfg.infra.kuberay.roles().any(|(_, c)| c.daemon.is_some());
    if !in_cluster && (!exec || daemons) {
        out.push((
            "pods/portforward",
            "to reach the Ray dashboard of the RayCluster's head pod",
        ));
    }
    if exec {
        out.push((
            "pods/exec",
            "to start the run on the head pod (`submit.submitter: exec`)",
        ));
    }
    out
}

async fn subresource_access(
    k8s: &K8s,
    cfg: &LoadedConfig,
    manifests: &[Node],
    out: &mut Vec<Finding>,
) -> Result<()> {
    let needed = needed_subresources(cfg, manifests, k8s.in_cluster);
    // Where the RayCluster's pods run.
    let ns = manifests
        .iter()
        .find(|m| m.get_path("kind").and_then(Node::as_str) == Some("RayCluster"))
        .and_then(|m| m.get_path("metadata.namespace").and_then(Node::as_str))
        .filter(|n| !n.is_empty())
        .map_or_else(|| k8s.namespace.clone(), str::to_string);
    let anchor = cfg
        .infra
        .source
        .get("submit")
        .or_else(|| cfg.infra.source.get("kuberay"))
        .and_then(|k| k.key_span.or(k.span));
    let answers = join_all(
        needed
            .iter()
            .map(|(res, _)| k8s.can_i("create", "", res, &ns)),
    )
    .await;
    for ((res, why), answer) in needed.iter().zip(answers) {
        let a = answer?;
        if a.allowed {
            continue;
        }
        let mut f = Finding::new(
            ACCESS_DENIED,
            format!("you may not create {res} in namespace `{ns}`, which the run needs {why}"),
        )
        .at(anchor, "the run uses it on this RayCluster")
        .fix(format!(
            "ask a cluster admin for a Role granting `create` on `{res}` in namespace `{ns}`"
        ));
        if !a.reason.is_empty() {
            f = f.note(format!("authorizer: {}", a.reason));
        }
        out.push(f);
    }
    Ok(())
}

async fn kai_queues(
    k8s: &K8s,
    groups: &k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroupList,
    manifests: &[Node],
    out: &mut Vec<Finding>,
) -> Result<()> {
    let wanted = refs::queues(manifests);
    if wanted.is_empty() {
        return Ok(());
    }
    let Some(ar) = apis::kai_queue_resource(k8s, groups).await? else {
        // KAI is not installed here; the offline rules already checked the labels.
        return Ok(());
    };
    for q in &wanted {
        match k8s.get_cluster_scoped(&ar, &q.name).await {
            Ok(Some(_)) => {}
            Ok(None) => out.push(queue_missing(q, &ar.api_version)),
            Err(d) if forbidden(&d) => out.push(
                with_uses(
                    Finding::new(
                        PREFLIGHT_UNCHECKED,
                        format!(
                            "could not check that KAI queue `{}` exists: you may not read queues",
                            q.name
                        ),
                    ),
                    &q.uses,
                    "not checked",
                )
                .fix("check with `kubectl get queues` or ask for `get` on queues"),
            ),
            Err(d) => return Err(d),
        }
    }
    Ok(())
}

fn queue_missing(q: &QueueRef, api_version: &str) -> Finding {
    with_uses(
        Finding::new(
            KAI_QUEUE_MISSING,
            format!(
                "KAI queue `{}` does not exist ({api_version} queues); the pods would never be scheduled",
                q.name
            ),
        ),
        &q.uses,
        "names a missing queue",
    )
    .fix("use an existing queue (`kubectl get queues`) in the `kai.scheduler/queue` label, or ask an admin to create it")
}
