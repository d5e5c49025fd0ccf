//! Read-only views of clusters (ref-orchestration §8.1, §8.5): a RayCluster's pods split
//! into head and workers, `nrl status` per role, `nrl cluster list`.

use serde::Serialize;
use serde_json::Value as Json;

use crate::config::layers::LoadedConfig;
use crate::config::schema::Role;
use crate::diag::Result;
use crate::k8s::K8s;
use crate::k8s::resources::by_kind;
use crate::k8s::status::{PodStatus, RayClusterStatus};
use crate::k8s::wait::str_at;

use super::dashboard::dashboard_session_with;
use super::raycluster::daemon::{daemon_base_id, daemon_status};
use super::raycluster::{cluster_of, owner_of};
use crate::ray::RayClientOptions;
use std::time::Duration;

/// One pod, as status shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PodInfo {
    pub name: String,
    pub phase: String,
    /// Why it is not running, when the kubelet or scheduler says
    /// (`Unschedulable`, `ImagePullBackOff`, `CrashLoopBackOff`…).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub restarts: i64,
}

impl PodInfo {
    pub fn of(pod: &Json) -> PodInfo {
        let status = PodStatus::of(pod);
        let phase = status
            .phase
            .clone()
            .unwrap_or_else(|| "Unknown".to_string());
        let waiting = status.waiting_reason().map(str::to_string);
        let unschedulable = status.unschedulable().and_then(|c| c.reason.clone());
        let restarts = status.restarts();
        let terminating = pod.pointer("/metadata/deletionTimestamp").is_some();
        PodInfo {
            name: str_at(pod, "/metadata/name").unwrap_or("?").to_string(),
            phase,
            reason: waiting
                .or(unschedulable)
                .or(terminating.then(|| "Terminating".to_string())),
            restarts,
        }
    }

    /// `Running`, `Pending (Unschedulable)`.
    pub fn describe(&self) -> String {
        match &self.reason {
            Some(r) => format!("{} ({r})", self.phase),
            None => self.phase.clone(),
        }
    }
}

/// A RayCluster's pods: its head and its workers (API order).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClusterPods {
    pub head: Option<PodInfo>,
    pub workers: Vec<PodInfo>,
}

impl ClusterPods {
    /// Split pods by `ray.io/node-type`: a pod labelled `head` is the head (a
    /// terminating one only when there is no other), every other pod a worker.
    pub fn split(pods: &[Json]) -> ClusterPods {
        let mut out = ClusterPods::default();
        for p in pods {
            let info = PodInfo::of(p);
            if str_at(p, "/metadata/labels/ray.io~1node-type") == Some("head") {
                let replace = match &out.head {
                    None => true,
                    Some(h) => h.reason.as_deref() == Some("Terminating"),
                };
                if replace {
                    out.head = Some(info);
                }
            } else {
                out.workers.push(info);
            }
        }
        out
    }

    /// Worker phases counted: `2 Running, 1 Pending`.
    pub fn worker_summary(&self) -> String {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for w in &self.workers {
            let d = w.describe();
            match counts.iter_mut().find(|(k, _)| *k == d) {
                Some((_, n)) => *n += 1,
                None => counts.push((d, 1)),
            }
        }
        counts
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One line for error notes: `head rc-head-x: Pending (Unschedulable); workers: 2 Pending`.
    pub fn summary(&self) -> String {
        let head = match &self.head {
            Some(h) => format!("head {}: {}", h.name, h.describe()),
            None => "no head pod".to_string(),
        };
        let workers = if self.workers.is_empty() {
            "no worker pods".to_string()
        } else {
            format!("workers: {}", self.worker_summary())
        };
        format!("{head}; {workers}")
    }
}

/// The pods of RayCluster `cluster` (selector `ray.io/cluster=<cluster>`).
pub async fn cluster_pods(k8s: &K8s, ns: &str, cluster: &str) -> Result<ClusterPods> {
    let pods = k8s
        .list(
            &by_kind("Pod")?,
            ns,
            Some(&format!("ray.io/cluster={cluster}")),
        )
        .await?;
    Ok(ClusterPods::split(&pods))
}

/// The newest daemon job of a role, as status reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DaemonState {
    pub id: String,
    /// Ray's status; `None` when it could not be read (see `error`) or no job exists.
    pub status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One row of `nrl status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoleStatus {
    pub role: String,
    pub name: String,
    pub namespace: String,
    /// Whether the RayCluster exists.
    pub exists: bool,
    /// KubeRay's `status.state` (`ready`, `failed`, `suspended`), if any.
    pub state: Option<String>,
    pub workers_ready: i64,
    pub workers_desired: i64,
    pub pods: ClusterPods,
    pub daemon: Option<DaemonState>,
}

/// Status of every declared role (generation, gym, training). The daemon is looked up
/// through the dashboard only when the cluster is ready and declares one.
pub async fn status(k8s: &K8s, cfg: &LoadedConfig) -> Result<Vec<RoleStatus>> {
    let mut out = Vec::new();
    for (role, _) in cfg.infra.kuberay.roles() {
        out.push(role_status(k8s, cfg, role).await?);
    }
    Ok(out)
}

/// One row of [`status`]: the role's RayCluster, its pods and its daemon.
pub async fn role_status(k8s: &K8s, cfg: &LoadedConfig, role: Role) -> Result<RoleStatus> {
    let cluster = cluster_of(cfg, role)?;
    let ns = cfg.infra.namespace.as_str();
    let live = k8s.get(&by_kind("RayCluster")?, ns, &cluster.name).await?;
    let pods = cluster_pods(k8s, ns, &cluster.name).await?;
    let live_status = live.as_ref().map(RayClusterStatus::of).unwrap_or_default();
    let state = live_status.state;
    let daemon = match &cluster.daemon {
        None => None,
        Some(d) => {
            let id = daemon_base_id(cluster, d);
            let base = id.clone();
            // A status must not hang on a dashboard that does not answer.
            let quick = RayClientOptions {
                timeout: Duration::from_secs(5),
                ..RayClientOptions::default()
            };
            let lookup = async move {
                let s = dashboard_session_with(k8s, ns, &cluster.name, quick).await?;
                daemon_status(&s.client, &base).await
            };
            Some(if state.as_deref() != Some("ready") {
                DaemonState {
                    id,
                    status: None,
                    error: None,
                }
            } else {
                match lookup.await {
                    Ok(Some((latest, st))) => DaemonState {
                        id: latest,
                        status: Some(st.to_string()),
                        error: None,
                    },
                    Ok(None) => DaemonState {
                        id,
                        status: None,
                        error: None,
                    },
                    Err(e) => DaemonState {
                        id,
                        status: None,
                        error: Some(e.message.clone()),
                    },
                }
            })
        }
    };
    Ok(RoleStatus {
        role: role.as_str().to_string(),
        name: cluster.name.clone(),
        namespace: ns.to_string(),
        exists: live.is_some(),
        state,
        workers_ready: live_status.ready_workers.unwrap_or(0),
        workers_desired: live_status.desired_workers.unwrap_or(0),
        pods,
        daemon,
    })
}

/// One row of `nrl cluster list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterRow {
    pub name: String,
    pub namespace: String,
    pub state: Option<String>,
    /// RFC 3339 creation time.
    pub created: Option<String>,
    pub owner: Option<String>,
    pub workers_ready: i64,
    pub workers_desired: i64,
}

impl ClusterRow {
    pub fn of(rc: &Json) -> ClusterRow {
        let status = RayClusterStatus::of(rc);
        ClusterRow {
            name: str_at(rc, "/metadata/name").unwrap_or("?").to_string(),
            namespace: str_at(rc, "/metadata/namespace").unwrap_or("").to_string(),
            state: status.state,
            created: str_at(rc, "/metadata/creationTimestamp").map(str::to_string),
            owner: owner_of(rc).map(str::to_string),
            workers_ready: status.ready_workers.unwrap_or(0),
            workers_desired: status.desired_workers.unwrap_or(0),
        }
    }
}

/// The RayClusters of a namespace, by name.
pub async fn list_clusters(k8s: &K8s, ns: &str) -> Result<Vec<ClusterRow>> {
    let mut rows: Vec<ClusterRow> = k8s
        .list_map(&by_kind("RayCluster")?, ns, None, |o| ClusterRow::of(&o))
        .await?;
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(rows)
}

/// `5s`, `3m`, `2h`, `4d` since an RFC 3339 time (kubectl's AGE column); `?` when the
/// time does not parse.
pub fn age(created: &str, now: jiff::Timestamp) -> String {
    age_since(created, now).unwrap_or_else(|| "?".to_string())
}

/// [`age`], or `None` when `created` is not an RFC 3339 time (each view shows that its
/// own way).
pub fn age_since(created: &str, now: jiff::Timestamp) -> Option<String> {
    let t = created.parse::<jiff::Timestamp>().ok()?;
    let s = now.as_second().saturating_sub(t.as_second()).max(0);
    Some(match s {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node_type: &str, phase: &str) -> Json {
        json!({"metadata": {"name": name, "labels": {"ray.io/node-type": node_type}},
               "status": {"phase": phase}})
    }

    #[test]
    fn splits_head_and_workers() {
        // ref-orchestration §10.6 #1
        let pods = ClusterPods::split(&[
            pod("rc-a-head-0", "head", "Running"),
            pod("rc-a-wg-0", "worker", "Running"),
            pod("rc-a-wg-1", "worker", "Pending"),
        ]);
        assert_eq!(pods.head.as_ref().unwrap().name, "rc-a-head-0");
        assert_eq!(pods.head.as_ref().unwrap().phase, "Running");
        let w: Vec<_> = pods
            .workers
            .iter()
            .map(|w| (w.name.as_str(), w.phase.as_str()))
            .collect();
        assert_eq!(w, [("rc-a-wg-0", "Running"), ("rc-a-wg-1", "Pending")]);
        assert_eq!(pods.worker_summary(), "1 Running, 1 Pending");
    }

    #[test]
    fn no_pods_returns_defaults() {
        // ref-orchestration §10.6 #2
        let pods = ClusterPods::split(&[]);
        assert_eq!(pods, ClusterPods::default());
        assert_eq!(pods.summary(), "no head pod; no worker pods");
    }

    #[test]
    fn reasons_and_restarts() {
        let p = json!({"metadata": {"name": "w"}, "status": {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
            "containerStatuses": [{"restartCount": 2, "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}});
        let info = PodInfo::of(&p);
        assert_eq!(info.describe(), "Pending (ImagePullBackOff)");
        assert_eq!(info.restarts, 2);
    }

    #[test]
    fn ages_read_like_kubectl() {
        let now: jiff::Timestamp = "2026-01-02T00:00:00Z".parse().unwrap();
        assert_eq!(age("2026-01-01T23:59:30Z", now), "30s");
        assert_eq!(age("2026-01-01T23:00:00Z", now), "60m");
        assert_eq!(age("2026-01-01T00:00:00Z", now), "24h");
        assert_eq!(age("2025-12-20T00:00:00Z", now), "13d");
        assert_eq!(age("garbage", now), "?");
    }
}
