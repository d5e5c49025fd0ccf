//! `nrl runs`: every recorded run, newest first, with its status refreshed where the run
//! is (the cluster's RayJobs and RayClusters, the Ray dashboard's job list, the local
//! process), and the W&B URL from its kept driver log.
//!
//! Cost: records that already ended are not looked up again. Running ones are refreshed
//! with one list of RayJobs and one of RayClusters per (context, namespace), and one job
//! list per Ray dashboard: a constant number of calls, however many runs there are.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value as Json;

use crate::diag::{Diag, Result};
use crate::k8s::resources::by_kind;
use crate::k8s::status::RayJobStatus;
use crate::k8s::{ConnectOptions, K8s};
use crate::launch::inspect::age;
use crate::launch::logscan::wandb_url;
use crate::launch::records::cluster_copy::{RECORD_KEY, RUN_ID_LABEL};
use crate::launch::records::context::DRIVER_LOG;
use crate::launch::records::{RunKind, RunRecord, RunStatus, RunStore};
use crate::ray::{JobStatus, RayClient, RayClientOptions};

/// Which runs to show.
#[derive(Debug, Clone, Default)]
pub struct RunsFilter {
    /// Only these statuses (after the refresh); empty: all.
    pub statuses: Vec<RunStatus>,
    /// Only runs whose recipe path contains this text.
    pub recipe: Option<String>,
    /// Only runs created within this long before now.
    pub since: Option<Duration>,
}

impl RunsFilter {
    fn keeps(&self, row: &RunRow, now: jiff::Timestamp) -> bool {
        if !self.statuses.is_empty() && !self.statuses.contains(&row.status) {
            return false;
        }
        if let Some(text) = &self.recipe
            && !row
                .recipe
                .as_deref()
                .is_some_and(|r| r.contains(text.as_str()))
        {
            return false;
        }
        if let Some(since) = self.since {
            let Ok(created) = row.created_at.parse::<jiff::Timestamp>() else {
                return false;
            };
            let secs = now.as_second().saturating_sub(created.as_second());
            if secs > i64::try_from(since.as_secs()).unwrap_or(i64::MAX) {
                return false;
            }
        }
        true
    }
}

/// How `nrl runs` looks.
#[derive(Debug, Clone)]
pub struct RunsOptions {
    pub filter: RunsFilter,
    /// Ask the clusters and dashboards how running runs stand (else: as recorded).
    pub refresh: bool,
    /// Also the records kept in this client's namespace (`--context` / `-n` given).
    pub cluster: Option<K8s>,
    /// Timeouts and kubeconfig for the refresh's connections (context and namespace come
    /// from each record).
    pub connect: ConnectOptions,
    /// Deadline of each Ray dashboard call of the refresh.
    pub ray_timeout: Duration,
}

/// Where a record was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    Local,
    Cluster,
    /// On this machine and on the cluster (the newer copy is shown).
    LocalAndCluster,
}

/// Who says what the status is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StatusSource {
    /// The record (the run had ended, or nothing more could be learned).
    Record,
    /// The RayJob or RayCluster on the cluster.
    Cluster,
    /// The Ray dashboard's job list.
    Dashboard,
    /// The local nrl process that keeps the record is gone.
    Process,
}

/// One run as `nrl runs` shows it. Field names are the `-o json|yaml` schema.
#[derive(Debug, Clone, Serialize)]
pub struct RunRow {
    pub id: String,
    pub kind: &'static str,
    pub status: RunStatus,
    /// The status the record holds (differs from `status` after a refresh).
    pub recorded_status: RunStatus,
    pub status_source: StatusSource,
    /// Why the status is what it is (KubeRay's states, the dashboard's message, why the
    /// refresh could not ask, how the run ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// `local`, the Ray address, or `<context>/<namespace>`.
    #[serde(rename = "where")]
    pub location: String,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipe: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wandb_url: Option<String>,
    pub origin: Origin,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<String>,
}

impl RunRow {
    /// `5s`, `3m`, `2h`, `4d` (kubectl's AGE).
    pub fn age(&self, now: jiff::Timestamp) -> String {
        age(&self.created_at, now)
    }
}

/// The runs, newest first, refreshed and filtered as `opts` says.
pub async fn list_runs(store: &RunStore, opts: &RunsOptions) -> Result<Vec<RunRow>> {
    let local = {
        let store = store.clone();
        tokio::task::spawn_blocking(move || store.list())
            .await
            .map_err(|e| Diag::new("nrl::runtime", format!("record reader failed: {e}")))??
    };
    let mut by_id: BTreeMap<String, (RunRecord, Origin)> = local
        .into_iter()
        .map(|r| (r.id.clone(), (r, Origin::Local)))
        .collect();
    if let Some(k8s) = &opts.cluster {
        for record in cluster_records(k8s).await? {
            match by_id.get_mut(&record.id) {
                Some((mine, origin)) => {
                    *origin = Origin::LocalAndCluster;
                    if last_change(&record) > last_change(mine) {
                        *mine = record;
                    }
                }
                None => {
                    by_id.insert(record.id.clone(), (record, Origin::Cluster));
                }
            }
        }
    }
    let mut runs: Vec<(RunRecord, RunRow)> = by_id
        .into_values()
        .map(|(record, origin)| {
            let row = row_of(&record, origin);
            (record, row)
        })
        .collect();
    if opts.refresh {
        refresh(&mut runs, opts).await;
    }
    let now = jiff::Timestamp::now();
    let mut rows: Vec<RunRow> = runs
        .into_iter()
        .map(|(_, row)| row)
        .filter(|r| opts.filter.keeps(r, now))
        .collect();
    rows.sort_by(|a, b| {
        let (ta, tb) = (
            a.created_at.parse::<jiff::Timestamp>().ok(),
            b.created_at.parse::<jiff::Timestamp>().ok(),
        );
        tb.cmp(&ta).then_with(|| b.id.cmp(&a.id))
    });
    tokio::task::spawn_blocking(move || {
        for r in &mut rows {
            if let Some(dir) = &r.run_dir {
                r.wandb_url = first_wandb_url(&Path::new(dir).join(DRIVER_LOG));
            }
        }
        rows
    })
    .await
    .map_err(|e| Diag::new("nrl::runtime", format!("log reader failed: {e}")))
}

/// The run records kept in `k8s`'s namespace (one list call).
async fn cluster_records(k8s: &K8s) -> Result<Vec<RunRecord>> {
    let cms = by_kind("ConfigMap")?;
    let items = k8s.list(&cms, &k8s.namespace, Some(RUN_ID_LABEL)).await?;
    Ok(items
        .iter()
        .filter_map(|cm| {
            let text = cm.get("data")?.get(RECORD_KEY)?.as_str()?;
            match serde_json::from_str::<RunRecord>(text) {
                Ok(r) => Some(r),
                Err(e) => {
                    tracing::warn!(%e, "skipping a ConfigMap with no valid run record");
                    None
                }
            }
        })
        .collect())
}

fn last_change(r: &RunRecord) -> Option<jiff::Timestamp> {
    r.updated_at
        .as_deref()
        .unwrap_or(&r.created_at)
        .parse()
        .ok()
}

fn row_of(r: &RunRecord, origin: Origin) -> RunRow {
    let location = match r.kind {
        RunKind::Local => "local".to_string(),
        RunKind::Ray => r
            .ray
            .as_ref()
            .map(|ray| ray.address.clone())
            .unwrap_or_else(|| "?".into()),
        _ => format!(
            "{}/{}",
            r.context.as_deref().unwrap_or("?"),
            r.namespace.as_deref().unwrap_or("?")
        ),
    };
    RunRow {
        id: r.id.clone(),
        kind: r.kind.as_str(),
        status: r.status,
        recorded_status: r.status,
        status_source: if r.status == RunStatus::Lost && r.kind == RunKind::Local {
            StatusSource::Process
        } else {
            StatusSource::Record
        },
        detail: r.message.clone(),
        location,
        created_at: r.created_at.clone(),
        recipe: r.recipe.clone(),
        wandb_url: None,
        origin,
        // A cluster copy's run directory is on the machine that launched it.
        run_dir: r.run_dir.clone().filter(|_| origin != Origin::Cluster),
    }
}

/// The first W&B run URL in a kept driver log (W&B prints it at the start of a run, so
/// the read usually stops early).
fn first_wandb_url(log: &Path) -> Option<String> {
    let file = std::fs::File::open(log).ok()?;
    let mut reader = std::io::BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {
                if let Some(url) = wandb_url(&String::from_utf8_lossy(&line)) {
                    return Some(url);
                }
            }
        }
    }
}

/// What a cluster run lives on: (kind, name).
fn kube_object(r: &RunRecord) -> Option<(&'static str, String)> {
    let k = r.k8s.as_ref();
    match r.kind {
        RunKind::Rayjob => k
            .and_then(|k| k.rayjob.clone())
            .or_else(|| r.cluster.clone())
            .map(|n| ("RayJob", n)),
        RunKind::RayclusterPortforward | RunKind::RayclusterExec => k
            .and_then(|k| k.raycluster.clone())
            .or_else(|| r.cluster.clone())
            .map(|n| ("RayCluster", n)),
        _ => None,
    }
}

/// Ask the clusters and dashboards about the runs still running, one list per kind and
/// namespace, one job list per dashboard, all at once.
async fn refresh(runs: &mut [(RunRecord, RunRow)], opts: &RunsOptions) {
    let mut kube: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    let mut ray: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, (r, row)) in runs.iter().enumerate() {
        if row.status.is_terminal() {
            continue;
        }
        if r.kind.is_on_kubernetes()
            && let (Some(ctx), Some(ns)) = (&r.context, &r.namespace)
        {
            kube.entry((ctx.clone(), ns.clone())).or_default().push(i);
        } else if let Some(ref_) = r.ray.as_ref().filter(|_| r.kind == RunKind::Ray) {
            ray.entry(ref_.address.clone()).or_default().push(i);
        }
    }
    let kube_answers = futures::future::join_all(
        kube.keys()
            .map(|(ctx, ns)| cluster_state(ctx, ns, opts))
            .collect::<Vec<_>>(),
    );
    let ray_answers = futures::future::join_all(
        ray.keys()
            .map(|address| dashboard_jobs(address, opts.ray_timeout))
            .collect::<Vec<_>>(),
    );
    let (kube_answers, ray_answers) = futures::join!(kube_answers, ray_answers);

    for (((_, ns), idx), answer) in kube.iter().zip(kube_answers) {
        for &i in idx {
            let (record, row) = &mut runs[i];
            match &answer {
                Err(why) => row.detail = Some(format!("not refreshed: {why}")),
                Ok(objects) => {
                    if let Some((kind, name)) = kube_object(record) {
                        apply_object(row, kind, &name, ns, objects.get(&(kind, name.clone())));
                    }
                }
            }
        }
    }
    for ((address, idx), answer) in ray.iter().zip(ray_answers) {
        for &i in idx {
            let (record, row) = &mut runs[i];
            let id = record
                .ray
                .as_ref()
                .map(|r| r.submission_id.as_str())
                .unwrap_or(&record.id);
            match &answer {
                Err(why) => row.detail = Some(format!("not refreshed: {why}")),
                Ok(jobs) => match jobs.get(id) {
                    Some((status, message)) => {
                        row.status = *status;
                        row.status_source = StatusSource::Dashboard;
                        row.detail = message.clone();
                    }
                    None => {
                        row.status = RunStatus::Lost;
                        row.status_source = StatusSource::Dashboard;
                        row.detail = Some(format!(
                            "the dashboard at {address} has no job `{id}` (the Ray head was \
                             restarted or replaced); the record says running"
                        ));
                    }
                },
            }
        }
    }
}

type Objects = BTreeMap<(&'static str, String), Json>;

/// The RayJobs and RayClusters of `ns` in context `ctx`, by (kind, name).
async fn cluster_state(
    ctx: &str,
    ns: &str,
    opts: &RunsOptions,
) -> std::result::Result<Objects, String> {
    let k8s = match &opts.cluster {
        Some(k) if k.context == ctx && k.namespace == ns => k.clone(),
        _ => K8s::connect(&ConnectOptions {
            context: Some(ctx.to_string()),
            namespace: Some(ns.to_string()),
            ..opts.connect.clone()
        })
        .await
        .map_err(|e| e.message.clone())?,
    };
    let mut objects = Objects::new();
    for kind in ["RayJob", "RayCluster"] {
        let ar = by_kind(kind).map_err(|e| e.message.clone())?;
        for obj in k8s
            .list(&ar, ns, None)
            .await
            .map_err(|e| e.message.clone())?
        {
            if let Some(name) = obj.pointer("/metadata/name").and_then(Json::as_str) {
                objects.insert((kind, name.to_string()), obj);
            }
        }
    }
    Ok(objects)
}

/// The dashboard's jobs by submission id: (status, message).
async fn dashboard_jobs(
    address: &str,
    timeout: Duration,
) -> std::result::Result<BTreeMap<String, (RunStatus, Option<String>)>, String> {
    let client = RayClient::new(
        address,
        RayClientOptions {
            timeout,
            retry: crate::ray::RetryPolicy::none(),
            ..RayClientOptions::default()
        },
    )
    .map_err(|e| e.message.clone())?;
    let jobs = client.list_jobs().await.map_err(|e| e.message.clone())?;
    Ok(jobs
        .into_iter()
        .filter_map(|j| {
            let status = match j.status {
                JobStatus::Pending | JobStatus::Running => RunStatus::Running,
                JobStatus::Succeeded => RunStatus::Succeeded,
                JobStatus::Failed => RunStatus::Failed,
                JobStatus::Stopped => RunStatus::Stopped,
                JobStatus::Unknown => RunStatus::Unknown,
            };
            Some((j.submission_id?, (status, j.message)))
        })
        .collect())
}

/// A running run's status from the object it lives on (`None`: the object is gone).
fn apply_object(row: &mut RunRow, kind: &str, name: &str, ns: &str, obj: Option<&Json>) {
    row.status_source = StatusSource::Cluster;
    let Some(obj) = obj else {
        row.status = RunStatus::Lost;
        row.detail = Some(format!(
            "{kind} {name} is gone from namespace {ns} (deleted); the record says running"
        ));
        return;
    };
    if kind != "RayJob" {
        // A job on a long-lived cluster: the cluster is up, the job's own state is the
        // dashboard's (`nrl job logs ID`), which a listing does not port-forward to.
        row.status_source = StatusSource::Record;
        row.detail = Some(format!("{kind} {name} is up"));
        return;
    }
    let s = RayJobStatus::of(obj);
    row.status = match s.job.as_deref() {
        Some("SUCCEEDED") => RunStatus::Succeeded,
        Some("FAILED") => RunStatus::Failed,
        Some("STOPPED") => RunStatus::Stopped,
        _ if matches!(s.deployment.as_deref(), Some("Failed" | "ValidationFailed")) => {
            RunStatus::Failed
        }
        _ => RunStatus::Running,
    };
    row.detail = Some(match &s.message {
        Some(m) => format!("RayJob {name}: {}: {m}", s.pair()),
        None => format!("RayJob {name}: {}", s.pair()),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(status: RunStatus) -> RunRow {
        let mut r = RunRecord::new("a-1", RunKind::Rayjob);
        r.status = status;
        row_of(&r, Origin::Local)
    }

    #[test]
    fn a_rayjob_says_how_its_job_stands() {
        for (status, want) in [
            (
                json!({"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}),
                RunStatus::Running,
            ),
            (
                json!({"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"}),
                RunStatus::Succeeded,
            ),
            (
                json!({"jobDeploymentStatus": "Failed", "jobStatus": "FAILED"}),
                RunStatus::Failed,
            ),
            (
                json!({"jobDeploymentStatus": "ValidationFailed", "message": "bad spec"}),
                RunStatus::Failed,
            ),
            (
                json!({"jobDeploymentStatus": "Initializing"}),
                RunStatus::Running,
            ),
        ] {
            let mut r = row(RunStatus::Running);
            apply_object(
                &mut r,
                "RayJob",
                "rj",
                "ns",
                Some(&json!({"status": status})),
            );
            assert_eq!(r.status, want, "{status}");
            assert_eq!(r.status_source, StatusSource::Cluster);
        }
        let mut r = row(RunStatus::Running);
        apply_object(&mut r, "RayJob", "rj", "ns", None);
        assert_eq!(r.status, RunStatus::Lost);
        assert_eq!(
            r.detail.as_deref(),
            Some("RayJob rj is gone from namespace ns (deleted); the record says running")
        );
    }

    #[test]
    fn filters_by_status_recipe_and_age() {
        let now: jiff::Timestamp = "2026-12-04T12:00:00Z".parse().unwrap();
        let mut r = row(RunStatus::Failed);
        r.recipe = Some("/r/grpo-math.yaml".into());
        r.created_at = "2026-12-04T10:00:00Z".into();
        let f = |statuses: Vec<RunStatus>, recipe: Option<&str>, since: Option<u64>| RunsFilter {
            statuses,
            recipe: recipe.map(String::from),
            since: since.map(Duration::from_secs),
        };
        assert!(f(vec![], None, None).keeps(&r, now));
        assert!(f(vec![RunStatus::Failed, RunStatus::Lost], None, None).keeps(&r, now));
        assert!(!f(vec![RunStatus::Running], None, None).keeps(&r, now));
        assert!(f(vec![], Some("grpo"), None).keeps(&r, now));
        assert!(!f(vec![], Some("sft"), None).keeps(&r, now));
        assert!(f(vec![], None, Some(3 * 3600)).keeps(&r, now));
        assert!(!f(vec![], None, Some(3600)).keeps(&r, now));
    }

    #[test]
    fn the_wandb_url_comes_from_the_kept_log() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(DRIVER_LOG);
        std::fs::write(
            &log,
            "starting\nwandb: 🚀 View run at https://wandb.ai/team/proj/runs/abc123\nmore\n",
        )
        .unwrap();
        assert_eq!(
            first_wandb_url(&log).as_deref(),
            Some("https://wandb.ai/team/proj/runs/abc123")
        );
        assert_eq!(first_wandb_url(&dir.path().join("none")), None);
    }
}
