//! `nrl diagnose`: what went wrong with a launched run, read-only. Doctor checks before
//! launch; diagnose looks after it, with the same [`Finding`]s and [`Report`] printer.
//!
//! One diagnosis reads, in this order and each once: the RayJob, each RayCluster and its
//! pods (one list by `ray.io/cluster=<name>` per cluster), the namespace's events
//! (filtered here by `involvedObject`), the nodes (only when pods are Pending; a 403
//! becomes a note), the namespace's DRA ResourceClaims (only when the pods use claims),
//! the KAI queues of pods under kai-scheduler, the previous log of one crash-looping
//! container per (worker group, container), and the driver log (the run directory's copy,
//! else the dashboard). The number of API calls does not grow with the number of workers.
//!
//! [`analyze`] is pure: it turns what was read ([`Snapshot`]) into findings, so every rule
//! is testable without a cluster.

pub mod driver_log;
mod pods;
mod scheduling;
mod status;

use std::time::Duration;

use kube::discovery::ApiResource;
use serde_json::{Value as Json, json};

use super::allow::Allows;
use super::{Finding, Report};
use crate::config::layers::LoadedConfig;
use crate::diag::{Exit, Result};
use crate::k8s::resources::by_kind;
use crate::k8s::status::{PodStatus, RayJobStatus};
use crate::k8s::{K8s, LogOptions};
use crate::launch::records::{RunKind, RunRecord};

pub use scheduling::{FitError, Reason, ReasonKind, parse as parse_fit_error};

/// Lines of a crashed container's previous log shown as evidence.
const PREVIOUS_LOG_LINES: i64 = 20;
/// How long the driver log may take through the dashboard before diagnose goes on
/// without it.
const DASHBOARD_LOG_WAIT: Duration = Duration::from_secs(20);

/// What to diagnose.
#[derive(Debug, Clone)]
pub struct Target {
    /// `run grpo-2026…` or `recipe r.yaml`.
    pub subject: String,
    pub namespace: String,
    pub rayjob: Option<String>,
    /// RayClusters besides the RayJob's own.
    pub clusters: Vec<String>,
    /// The run's record (where its kept driver log is).
    pub record: Option<RunRecord>,
}

impl Target {
    /// A run from its record: its RayJob (ephemeral runs) or its RayCluster.
    pub fn of_record(record: &RunRecord) -> Target {
        let k = record.k8s.clone().unwrap_or_default();
        let rayjob = match record.kind {
            RunKind::Rayjob => k.rayjob.clone(),
            _ => None,
        };
        let clusters = match (&rayjob, &record.cluster) {
            (None, Some(c)) => vec![c.clone()],
            _ => Vec::new(),
        };
        Target {
            subject: format!("run {}", record.id),
            namespace: record.namespace.clone().unwrap_or_default(),
            rayjob,
            clusters,
            record: Some(record.clone()),
        }
    }

    /// What a recipe renders, by name: its RayJob (the training role as a RayJob) and
    /// its RayClusters. Objects that do not exist are skipped when at least one does.
    pub fn of_config(cfg: &LoadedConfig, recipe: &str) -> Result<Target> {
        let manifests = crate::render::check_manifests(&cfg.infra)?;
        let all = super::preflight_manifests(cfg, &manifests);
        let mut rayjob = None;
        let mut clusters = Vec::new();
        for m in &all {
            let s = |p: &str| {
                m.get_path(p)
                    .and_then(crate::config::node::Node::as_str)
                    .map(str::to_string)
            };
            match (s("kind").as_deref(), s("metadata.name")) {
                (Some("RayJob"), Some(n)) => rayjob = Some(n),
                (Some("RayCluster"), Some(n)) if !clusters.contains(&n) => clusters.push(n),
                _ => {}
            }
        }
        Ok(Target {
            subject: format!("recipe {recipe}"),
            namespace: cfg.infra.namespace.clone(),
            rayjob,
            clusters,
            record: None,
        })
    }
}

/// One event, as evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    pub reason: String,
    pub message: String,
    pub count: i64,
    pub warning: bool,
    /// `lastTimestamp` (or `eventTime`), for ordering.
    pub at: String,
}

/// A RayCluster and its pods.
#[derive(Debug, Clone, Default)]
pub struct ClusterData {
    pub name: String,
    /// `None`: it does not exist.
    pub object: Option<Json>,
    pub pods: Vec<Json>,
}

/// Everything one diagnosis read.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub namespace: String,
    pub rayjob_name: Option<String>,
    pub rayjob: Option<Json>,
    pub clusters: Vec<ClusterData>,
    pub events: Vec<Json>,
    /// `None`: not read (nothing Pending) or not readable (see the notes).
    pub nodes: Option<Vec<scheduling::NodeView>>,
    /// The namespace's ResourceClaims, when the pods use claims and they could be read.
    pub claims: Option<Vec<Json>>,
    /// KAI queues by name; `None`: it does not exist.
    pub queues: Vec<(String, Option<Json>)>,
    /// (pod, container, previous log or why not).
    pub previous_logs: Vec<(String, String, std::result::Result<String, String>)>,
    /// The driver log, when one was reachable.
    pub driver_log: Option<String>,
    /// How long the kept driver log of a still running job has not grown (its
    /// modification time); `None` when the job is not running or the log is not a kept copy.
    pub driver_log_idle: Option<Duration>,
}

impl Snapshot {
    /// Events about object `kind/name` (optionally of some reasons), oldest first.
    pub fn events_of(&self, kind: &str, name: &str, reasons: Option<&[&str]>) -> Vec<Evidence> {
        let mut out: Vec<Evidence> = self
            .events
            .iter()
            .filter(|e| {
                e.pointer("/involvedObject/kind").and_then(Json::as_str) == Some(kind)
                    && e.pointer("/involvedObject/name").and_then(Json::as_str) == Some(name)
            })
            .filter_map(|e| {
                let s = |p: &str| {
                    e.pointer(p)
                        .and_then(Json::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                let reason = s("/reason");
                if let Some(rs) = reasons
                    && !rs.contains(&reason.as_str())
                {
                    return None;
                }
                let count = e
                    .get("count")
                    .and_then(Json::as_i64)
                    .or_else(|| e.pointer("/series/count").and_then(Json::as_i64))
                    .unwrap_or(1);
                let at = [s("/lastTimestamp"), s("/eventTime"), s("/firstTimestamp")]
                    .into_iter()
                    .find(|t| !t.is_empty())
                    .unwrap_or_default();
                Some(Evidence {
                    reason,
                    message: s("/message"),
                    count,
                    warning: s("/type") == "Warning",
                    at,
                })
            })
            .collect();
        out.sort_by(|a, b| a.at.cmp(&b.at));
        out
    }

    fn all_pods(&self) -> impl Iterator<Item = &Json> {
        self.clusters.iter().flat_map(|c| c.pods.iter())
    }

    fn suspended(&self) -> bool {
        self.rayjob.as_ref().is_some_and(|rj| {
            matches!(
                RayJobStatus::of(rj).deployment.as_deref(),
                Some("Suspended" | "Suspending")
            )
        })
    }
}

/// Findings keyed by (code, key), with the pods each is about: 64 workers with the same
/// FailedScheduling message make one finding naming them, not 64.
#[derive(Default)]
pub(crate) struct Groups {
    items: Vec<Group>,
}

struct Group {
    code: &'static str,
    key: String,
    what: String,
    fix: String,
    notes: Vec<String>,
    pods: Vec<String>,
}

impl Groups {
    /// Add `pod` to the finding (code, key); `build` (message, fix, evidence notes) runs
    /// for the first pod only.
    pub fn add(
        &mut self,
        code: &'static str,
        key: &str,
        pod: &str,
        build: impl FnOnce() -> (String, String, Vec<String>),
    ) {
        if let Some(g) = self
            .items
            .iter_mut()
            .find(|g| g.code == code && g.key == key)
        {
            if !g.pods.iter().any(|p| p == pod) {
                g.pods.push(pod.to_string());
            }
            return;
        }
        let (what, fix, notes) = build();
        self.items.push(Group {
            code,
            key: key.to_string(),
            what,
            fix,
            notes,
            pods: vec![pod.to_string()],
        });
    }

    fn into_findings(self) -> Vec<Finding> {
        self.items
            .into_iter()
            .map(|g| {
                let subject = match g.pods.len() {
                    1 => format!("pod {}", g.pods[0]),
                    n => format!("{n} pods: {}", pods::summarize(g.pods.iter().cloned())),
                };
                let mut f = Finding::new(g.code, format!("{} — {subject}", g.what)).fix(g.fix);
                for n in g.notes.into_iter().filter(|n| !n.is_empty()) {
                    f = f.note(n);
                }
                f
            })
            .collect()
    }
}

/// The findings of a [`Snapshot`] (pure), in rule order: the RayJob, the clusters, the
/// pods, the driver log.
pub fn analyze(snap: &Snapshot) -> Vec<Finding> {
    let mut out = Vec::new();
    status::rayjob(snap, &mut out);
    let mut groups = Groups::default();
    for c in &snap.clusters {
        pods::pending(snap, &c.pods, &mut groups);
        pods::failures(snap, &c.pods, &mut groups);
    }
    let mut pod_findings = groups.into_findings();
    for c in &snap.clusters {
        status::cluster(snap, c, &mut out);
    }
    out.append(&mut pod_findings);
    if let Some(log) = &snap.driver_log {
        let idle = snap
            .driver_log_idle
            .map(|idle| (idle, driver_log::DEFAULT_STALL));
        out.extend(driver_log::analyze(log, idle).findings);
    }
    // Rule order (the registry's), stable within a code.
    let order = |f: &Finding| {
        super::RULES
            .iter()
            .position(|r| r.code == f.code)
            .unwrap_or(usize::MAX)
    };
    out.sort_by_key(order);
    out
}

/// What `nrl diagnose` shows: findings, and notes on what could not be looked at.
#[derive(Debug, Clone)]
pub struct Diagnosis {
    pub subject: String,
    pub namespace: String,
    pub report: Report,
    /// What was not checked, and where the driver log came from.
    pub notes: Vec<String>,
}

impl Diagnosis {
    /// Nothing wrong found.
    pub fn ok(&self) -> bool {
        self.report.is_empty()
    }

    /// 0 when nothing is wrong, 1 when something is.
    pub fn exit(&self) -> Exit {
        if self.ok() { Exit::Ok } else { Exit::Failed }
    }

    /// The findings as `nrl doctor` prints them, then the notes, then the summary.
    pub fn render(&self, color: bool, width: usize) -> String {
        let mut out = String::new();
        for f in &self.report.findings {
            out.push_str(&super::report::to_diag(f).render(color, width));
            out.push('\n');
        }
        for n in &self.notes {
            out.push_str(&format!("note: {n}\n"));
        }
        out.push_str(&self.report.summary_as("diagnose"));
        out.push('\n');
        out
    }

    /// `{subject, namespace, ok, findings: [{code, severity, message, fix, notes}], notes}`
    pub fn to_json(&self) -> Json {
        let findings: Vec<Json> = self.report.findings.iter().map(|f| f.to_json()).collect();
        json!({
            "subject": self.subject,
            "namespace": self.namespace,
            "ok": self.ok(),
            "findings": findings,
            "notes": self.notes,
        })
    }
}

fn core(kind: &str, plural: &str) -> ApiResource {
    crate::k8s::resources::core_v1(kind, plural)
}

fn resource_claims() -> ApiResource {
    ApiResource {
        group: "resource.k8s.io".into(),
        version: "v1".into(),
        api_version: "resource.k8s.io/v1".into(),
        kind: "ResourceClaim".into(),
        plural: "resourceclaims".into(),
    }
}

fn forbidden(d: &crate::diag::Diag) -> bool {
    d.code == "nrl::k8s::forbidden"
}

/// Diagnose a run by its record.
pub async fn diagnose_run(k8s: &K8s, record: &RunRecord) -> Result<Diagnosis> {
    diagnose(k8s, &Target::of_record(record)).await
}

/// Diagnose what a recipe renders (its RayJob and RayClusters, by name).
pub async fn diagnose_config(k8s: &K8s, cfg: &LoadedConfig, recipe: &str) -> Result<Diagnosis> {
    diagnose(k8s, &Target::of_config(cfg, recipe)?).await
}

/// What the target's objects are, each read once: the RayJob, each RayCluster and its
/// pods (one list per cluster), the namespace's events (a 403 becomes a note). In recipe
/// mode only what exists is kept, unless nothing does. `nrl diagnose` and
/// `nrl logs --collect` both start here.
pub async fn read_objects(k8s: &K8s, target: &Target) -> Result<(Snapshot, Vec<String>)> {
    let ns = if target.namespace.is_empty() {
        k8s.namespace.clone()
    } else {
        target.namespace.clone()
    };
    let mut notes = Vec::new();
    let mut snap = Snapshot {
        namespace: ns.clone(),
        rayjob_name: target.rayjob.clone(),
        ..Snapshot::default()
    };
    let mut names: Vec<String> = Vec::new();
    if let Some(rj) = &target.rayjob {
        snap.rayjob = k8s.get(&by_kind("RayJob")?, &ns, rj).await?;
        if let Some(c) = snap
            .rayjob
            .as_ref()
            .and_then(|o| RayJobStatus::of(o).cluster)
        {
            names.push(c);
        }
    }
    for c in &target.clusters {
        if !names.contains(c) {
            names.push(c.clone());
        }
    }
    let rayclusters = by_kind("RayCluster")?;
    let pod_kind = by_kind("Pod")?;
    for name in &names {
        let object = k8s.get(&rayclusters, &ns, name).await?;
        let pods = match &object {
            Some(_) => {
                k8s.list(&pod_kind, &ns, Some(&format!("ray.io/cluster={name}")))
                    .await?
            }
            None => Vec::new(),
        };
        snap.clusters.push(ClusterData {
            name: name.clone(),
            object,
            pods,
        });
    }
    // Recipe mode: only what exists is diagnosed, unless nothing does.
    if target.record.is_none() {
        let any_cluster = snap.clusters.iter().any(|c| c.object.is_some());
        if snap.rayjob.is_some() || any_cluster {
            if snap.rayjob.is_none() {
                snap.rayjob_name = None;
            }
            let rj_cluster = snap
                .rayjob
                .as_ref()
                .and_then(|o| RayJobStatus::of(o).cluster);
            snap.clusters
                .retain(|c| c.object.is_some() || rj_cluster.as_deref() == Some(c.name.as_str()));
        } else {
            snap.clusters.clear();
            if snap.rayjob_name.is_none() {
                snap.rayjob_name = target.clusters.first().cloned();
            }
        }
    }
    match k8s.list(&core("Event", "events"), &ns, None).await {
        Ok(e) => snap.events = e,
        Err(d) if forbidden(&d) => {
            notes.push(format!("events in namespace `{ns}` could not be read (403): scheduling reasons come from the pods' conditions only"))
        }
        Err(d) => return Err(d),
    }
    Ok((snap, notes))
}

/// Read what the target's objects, pods, events, nodes, claims, queues and logs say,
/// then [`analyze`] it.
pub async fn diagnose(k8s: &K8s, target: &Target) -> Result<Diagnosis> {
    let (mut snap, mut notes) = read_objects(k8s, target).await?;
    let ns = snap.namespace.clone();
    let pending = snap.all_pods().any(pods::unscheduled);
    if pending {
        match k8s.list_cluster_scoped(&core("Node", "nodes")).await {
            Ok(n) => snap.nodes = Some(n.iter().map(scheduling::NodeView::of).collect()),
            Err(d) if forbidden(&d) => notes.push(
                "you may not list nodes (403): allocatable resources, taints and labels of the nodes are not shown"
                    .to_string(),
            ),
            Err(d) => notes.push(format!("nodes could not be listed: {}", d.message)),
        }
    }
    let uses_claims = snap.all_pods().any(|p| {
        p.pointer("/spec/resourceClaims")
            .and_then(Json::as_array)
            .is_some_and(|l| !l.is_empty())
    });
    if uses_claims {
        match k8s.list(&resource_claims(), &ns, None).await {
            Ok(c) => snap.claims = Some(c),
            Err(d) => notes.push(format!(
                "ResourceClaims in namespace `{ns}` could not be read: {}",
                d.message
            )),
        }
    }
    let mut queues: Vec<String> = Vec::new();
    for p in snap.all_pods() {
        if pods::scheduler(p) == crate::doctor::scheduling::KAI_SCHEDULER
            && pods::unscheduled(p)
            && let Some(q) = pods::queue(p)
            && !queues.iter().any(|x| x == q)
        {
            queues.push(q.to_string());
        }
    }
    if !queues.is_empty() {
        kai_queues(k8s, &queues, &mut snap, &mut notes).await?;
    }
    for c in &snap.clusters {
        for (pod, container) in pods::crashing(&c.pods) {
            let log = previous_log(k8s, &ns, &pod, &container).await;
            snap.previous_logs.push((pod, container, log));
        }
    }
    let (log, note) = driver_log_text(k8s, target, &snap).await;
    snap.driver_log = log;
    notes.push(note);
    snap.driver_log_idle = kept_log_idle(target, &snap);
    if let Some(text) = &snap.driver_log {
        // What the log says besides its problems: where the run reports, how far it got.
        let facts = driver_log::analyze(text, None);
        if let Some(url) = facts.wandb_url {
            notes.push(format!("W&B run: {url}"));
        }
        if let Some(p) = facts.last_progress {
            notes.push(format!("last progress: line {}: {}", p.line, p.text));
        }
    }
    let findings = analyze(&snap);
    Ok(Diagnosis {
        subject: target.subject.clone(),
        namespace: ns,
        report: Report::new(findings, &Allows::default()),
        notes,
    })
}

async fn kai_queues(
    k8s: &K8s,
    names: &[String],
    snap: &mut Snapshot,
    notes: &mut Vec<String>,
) -> Result<()> {
    let groups = k8s.api_groups().await?;
    let Some(ar) = super::preflight::kai_queue_api(k8s, &groups).await? else {
        notes.push(
            "pods use kai-scheduler but its Queue API (scheduling.run.ai) is not served here"
                .to_string(),
        );
        return Ok(());
    };
    for q in names {
        match k8s.get_cluster_scoped(&ar, q).await {
            Ok(found) => snap.queues.push((q.clone(), found)),
            Err(d) if forbidden(&d) => notes.push(format!(
                "KAI queue `{q}` could not be read (403): its quota is not checked"
            )),
            Err(d) => return Err(d),
        }
    }
    Ok(())
}

async fn previous_log(
    k8s: &K8s,
    ns: &str,
    pod: &str,
    container: &str,
) -> std::result::Result<String, String> {
    let opts = LogOptions {
        container: Some(container.to_string()),
        follow: false,
        tail: Some(PREVIOUS_LOG_LINES),
        previous: true,
    };
    let mut text = String::new();
    k8s.stream_pod_logs(ns, pod, &opts, |line| {
        text.push_str(line);
        text.push('\n');
        std::ops::ControlFlow::Continue(())
    })
    .await
    .map_err(|d| d.message.to_string())?;
    Ok(text)
}

/// How long the kept driver log of a running job has been still: `nrl` appends to that
/// copy as it follows the job, so its modification time is when the log last grew.
fn kept_log_idle(target: &Target, snap: &Snapshot) -> Option<Duration> {
    let running = snap
        .rayjob
        .as_ref()
        .and_then(|o| RayJobStatus::of(o).job)
        .as_deref()
        == Some("RUNNING");
    let dir = target.record.as_ref()?.run_dir.clone()?;
    let path = std::path::Path::new(&dir).join(crate::launch::records::context::DRIVER_LOG);
    let modified = std::fs::metadata(path).ok()?.modified().ok()?;
    running.then(|| modified.elapsed().unwrap_or_default())
}

/// The driver log: the run directory's kept copy, else the dashboard of a cluster whose
/// head is ready; the note says which, or why there is none.
pub(crate) async fn driver_log_text(
    k8s: &K8s,
    target: &Target,
    snap: &Snapshot,
) -> (Option<String>, String) {
    if let Some(record) = &target.record
        && let Some(text) = crate::launch::attach::local_log(record)
    {
        let dir = record.run_dir.clone().unwrap_or_default();
        return (
            Some(text),
            format!(
                "driver log: the copy kept in {dir}/{}",
                crate::launch::records::context::DRIVER_LOG
            ),
        );
    }
    let head_ready = snap.clusters.iter().find(|c| {
        c.object.is_some()
            && c.pods.iter().any(|p| {
                p.pointer("/metadata/labels/ray.io~1node-type")
                    .and_then(Json::as_str)
                    == Some("head")
                    && PodStatus::of(p).is_ready()
            })
    });
    let Some(cluster) = head_ready else {
        return (
            None,
            "driver log: not reachable (no local copy, and no cluster with a ready head to ask its dashboard)".to_string(),
        );
    };
    let fetch = async {
        match &target.record {
            Some(record) => crate::launch::attach::log_text(Some(k8s), record).await,
            None => {
                let job = snap
                    .rayjob
                    .as_ref()
                    .and_then(|o| RayJobStatus::of(o).job_id)
                    .ok_or_else(|| {
                        crate::diag::Diag::new("nrl::diagnose::no_job", "no Ray job id")
                    })?;
                crate::launch::dashboard::dashboard_session(k8s, &snap.namespace, &cluster.name)
                    .await?
                    .client
                    .logs(&job)
                    .await
            }
        }
    };
    match tokio::time::timeout(DASHBOARD_LOG_WAIT, fetch).await {
        Ok(Ok(text)) => (
            Some(text),
            format!(
                "driver log: from the dashboard of RayCluster {}",
                cluster.name
            ),
        ),
        Ok(Err(d)) => (
            None,
            format!(
                "driver log: not reachable through the dashboard of RayCluster {}: {}",
                cluster.name, d.message
            ),
        ),
        Err(_) => (
            None,
            format!(
                "driver log: the dashboard of RayCluster {} did not answer within {}s",
                cluster.name,
                DASHBOARD_LOG_WAIT.as_secs()
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, spec: Json, status: Json) -> Json {
        json!({"metadata": {"name": name, "labels": {"ray.io/cluster": "rc", "ray.io/group": "gpu",
            "ray.io/node-type": "worker", "kai.scheduler/queue": "rl"}},
            "spec": spec, "status": status})
    }

    fn pending(name: &str, spec: Json, message: &str) -> Json {
        pod(
            name,
            spec,
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable", "message": message}]}),
        )
    }

    fn snap(pods: Vec<Json>) -> Snapshot {
        Snapshot {
            namespace: "ns".into(),
            clusters: vec![ClusterData {
                name: "rc".into(),
                object: None,
                pods,
            }],
            // A RayJob that is over, so the (absent) cluster itself is not a finding.
            rayjob: Some(json!({"status": {"jobDeploymentStatus": "Complete"}})),
            ..Snapshot::default()
        }
    }

    fn codes(s: &Snapshot) -> Vec<String> {
        analyze(s).iter().map(|f| f.code.to_string()).collect()
    }

    const GPU8: &str =
        r#"{"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}"#;

    fn gpu8() -> Json {
        serde_json::from_str(GPU8).unwrap()
    }

    #[test]
    fn an_unbound_claim_and_a_node_selector_matching_nothing() {
        let mut spec = gpu8();
        spec["volumes"] =
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": "rl-data"}}]);
        let s = snap(vec![pending(
            "p0",
            spec,
            "0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.",
        )]);
        let f = analyze(&s);
        assert_eq!(codes(&s), ["nrl::diagnose::unbound_pvc"]);
        assert!(f[0].message.contains("claims: rl-data"), "{}", f[0].message);

        let mut spec = gpu8();
        spec["nodeSelector"] = json!({"pool": "h100"});
        let mut s = snap(vec![pending(
            "p0",
            spec,
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
        )]);
        s.nodes = Some(vec![scheduling::NodeView::of(
            &json!({"metadata": {"name": "n", "labels": {"pool": "a100"}}}),
        )]);
        let f = analyze(&s);
        assert_eq!(codes(&s), ["nrl::diagnose::node_selector_mismatch"]);
        assert!(
            f[0].message.contains("no node has the label pool=h100"),
            "{}",
            f[0].message
        );
    }

    #[test]
    fn dra_claims_without_an_allocation() {
        let mut spec = gpu8();
        spec["resourceClaims"] = json!([{"name": "gpu", "resourceClaimTemplateName": "t"}]);
        let mut p = pending(
            "p0",
            spec,
            "0/8 nodes are available: 8 cannot allocate all claims. no new claims to deallocate, preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling.",
        );
        p["status"]["resourceClaimStatuses"] =
            json!([{"name": "gpu", "resourceClaimName": "p0-gpu-x"}]);
        let mut s = snap(vec![p]);
        s.claims = Some(vec![
            json!({"metadata": {"name": "p0-gpu-x"}, "status": {}}),
        ]);
        let f = analyze(&s);
        // One finding: the named claim, with the scheduler's words as evidence.
        assert_eq!(codes(&s), ["nrl::diagnose::dra_claim_unallocated"]);
        assert!(
            f[0].message
                .contains("ResourceClaim p0-gpu-x is not allocated")
        );
        assert!(
            f[0].notes[1].contains("cannot allocate all claims"),
            "{:?}",
            f[0].notes
        );
        // Without the claims list, the scheduler's reason alone.
        s.claims = None;
        assert_eq!(codes(&s), ["nrl::diagnose::dra_claim_unallocated"]);
    }

    #[test]
    fn kai_queues_missing_over_the_limit_and_gangs_waiting() {
        let mut spec = gpu8();
        spec["schedulerName"] = json!("kai-scheduler");
        let pods = || {
            (0..4)
                .map(|i| pod(&format!("p{i}"), spec.clone(), json!({"phase": "Pending"})))
                .collect::<Vec<_>>()
        };
        let mut s = snap(pods());
        s.queues = vec![("rl".into(), None)];
        assert_eq!(codes(&s), ["nrl::diagnose::queue_missing"]);
        s.queues = vec![(
            "rl".into(),
            Some(json!({"spec": {"resources": {"gpu": {"quota": 8, "limit": 16}}}})),
        )];
        let f = analyze(&s);
        assert_eq!(codes(&s), ["nrl::diagnose::queue_over_quota"]);
        assert!(f[0].message.contains("asks 32 GPUs"), "{}", f[0].message);
        assert!(
            f[0].message.contains("4 pods: p0, p1, p2, p3"),
            "{}",
            f[0].message
        );
        s.queues = vec![(
            "rl".into(),
            Some(json!({"spec": {"resources": {"gpu": {"quota": 64, "limit": -1}}}})),
        )];
        let f = analyze(&s);
        assert_eq!(codes(&s), ["nrl::diagnose::gang_waiting"]);
        assert!(
            f[0].message
                .starts_with("4 of 4 pods Pending under kai-scheduler")
        );
    }

    #[test]
    fn other_scheduler_words_exit_codes_and_config_errors() {
        let s = snap(vec![pending(
            "p0",
            gpu8(),
            "0/2 nodes are available: 2 Too many pods.",
        )]);
        assert_eq!(codes(&s), ["nrl::diagnose::unschedulable"]);
        let failed = pod(
            "p1",
            gpu8(),
            json!({"phase": "Failed", "containerStatuses": [{"name": "w",
                "state": {"terminated": {"exitCode": 139, "reason": "Error"}}}]}),
        );
        let config = pod(
            "p2",
            gpu8(),
            json!({"phase": "Pending", "containerStatuses": [{"name": "w", "state": {"waiting":
                {"reason": "CreateContainerConfigError", "message": "secret \"wandb\" not found"}}}]}),
        );
        let s = snap(vec![failed, config]);
        let f = analyze(&s);
        assert_eq!(
            codes(&s),
            [
                "nrl::diagnose::container_failed",
                "nrl::diagnose::container_failed"
            ]
        );
        assert!(
            f[0].message
                .contains("exited with code 139 (Error), 128+11 = SIGSEGV"),
            "{}",
            f[0].message
        );
        assert!(f[1].message.contains("secret \"wandb\" not found"));
    }

    #[test]
    fn each_worker_group_gets_its_own_finding_with_its_own_ask() {
        let msg = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.";
        let mut small = pending(
            "s0",
            json!({"containers": [{"resources": {"limits": {"nvidia.com/gpu": 2}}}]}),
            msg,
        );
        small["metadata"]["labels"]["ray.io/group"] = json!("small");
        let big = || pending("b", gpu8(), msg);
        let mut s = snap(vec![big(), small, big()]);
        s.nodes = Some(vec![scheduling::NodeView::of(
            &json!({"metadata": {"name": "n"}, "status": {"allocatable": {"nvidia.com/gpu": "4"}}}),
        )]);
        let f = analyze(&s);
        assert_eq!(f.len(), 2, "{f:#?}");
        assert!(f[0].message.contains("a pod asks 8"), "{}", f[0].message);
        assert!(
            f[0].message
                .contains("the most any node has allocatable is 4")
        );
        assert!(
            f[0].notes[1].starts_with("0 of 1 nodes could hold such a pod"),
            "{:?}",
            f[0].notes
        );
        assert!(f[1].message.contains("a pod asks 2"), "{}", f[1].message);
    }

    #[test]
    fn events_are_matched_by_involved_object_and_show_their_count() {
        let ev = |name: &str, reason: &str, at: &str, count: i64| {
            json!({"involvedObject": {"kind": "Pod", "name": name}, "reason": reason,
                "message": format!("{reason} at {at}"), "type": "Warning",
                "lastTimestamp": at, "count": count})
        };
        let s = Snapshot {
            events: vec![
                ev("p0", "FailedScheduling", "2026-01-01T00:00:09Z", 12),
                ev("p0", "FailedScheduling", "2026-01-01T00:00:01Z", 1),
                ev("p1", "FailedScheduling", "2026-01-01T00:00:10Z", 3),
                ev("p0", "Pulled", "2026-01-01T00:00:11Z", 1),
            ],
            ..Snapshot::default()
        };
        let got = s.events_of("Pod", "p0", Some(&["FailedScheduling"]));
        assert_eq!(got.len(), 2);
        // Oldest first, so the last is the newest.
        assert_eq!(
            got[1].note("Pod", "p0"),
            "event FailedScheduling on pod p0 (x12): FailedScheduling at 2026-01-01T00:00:09Z"
        );
        assert_eq!(s.events_of("Pod", "p0", None).len(), 3);
    }

    #[test]
    fn rayjob_states_failed_and_suspended() {
        let mut s = Snapshot {
            namespace: "ns".into(),
            rayjob_name: Some("rj".into()),
            rayjob: Some(
                json!({"status": {"jobDeploymentStatus": "Failed", "jobStatus": "FAILED",
                "reason": "AppFailed", "message": "Job entrypoint command failed with exit code 1"}}),
            ),
            ..Snapshot::default()
        };
        let f = analyze(&s);
        assert_eq!(codes(&s), ["nrl::diagnose::rayjob_failed"]);
        assert_eq!(
            f[0].message,
            "RayJob rj failed (the Ray job failed): Job entrypoint command failed with exit code 1"
        );
        s.rayjob = Some(json!({"status": {"jobDeploymentStatus": "Suspended"}}));
        assert_eq!(codes(&s), ["nrl::diagnose::rayjob_suspended"]);
        s.rayjob =
            Some(json!({"status": {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}}));
        assert!(codes(&s).is_empty());
    }
}
