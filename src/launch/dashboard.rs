//! Reaching a RayCluster's Ray dashboard: the head Service over an in-process
//! port-forward (shared per cluster within the process; no kubectl, nothing leaks), or
//! cluster DNS when nrl runs inside the cluster. Also `cluster dashboard`'s opt-in fix for
//! the blank dashboard (uv-symlinked static assets that aiohttp refuses to serve).

use std::sync::Arc;
use std::time::Duration;

use crate::diag::{Diag, Result};
use crate::k8s::{K8s, PodTarget, PortForward};
use crate::ray::{RayClient, RayClientOptions};

use super::inspect::{PodInfo, cluster_pods};
use super::progress::Progress;
use super::raycluster::head_service;

/// The Ray dashboard port on the head.
pub const DASHBOARD_PORT: u16 = 8265;

/// A Ray client for one cluster's dashboard; keep it alive while using the client (it
/// holds the port-forward).
#[derive(Debug, Clone)]
pub struct DashboardSession {
    pub url: String,
    pub client: RayClient,
    pub forward: Option<Arc<PortForward>>,
}

/// Open (or reuse) the route to `cluster`'s dashboard. Errors say whether the head pod is
/// missing or not running yet.
pub async fn dashboard_session(k8s: &K8s, ns: &str, cluster: &str) -> Result<DashboardSession> {
    dashboard_session_with(k8s, ns, cluster, RayClientOptions::default()).await
}

/// [`dashboard_session`] with the Ray client's options (timeouts, retries).
pub async fn dashboard_session_with(
    k8s: &K8s,
    ns: &str,
    cluster: &str,
    options: RayClientOptions,
) -> Result<DashboardSession> {
    let (url, forward) = if k8s.in_cluster {
        (
            format!(
                "http://{}.{ns}.svc.cluster.local:{DASHBOARD_PORT}",
                head_service(cluster)
            ),
            None,
        )
    } else {
        let head = require_running_head(k8s, ns, cluster).await?;
        let pf = match k8s
            .port_forward(
                ns,
                PodTarget::Service(head_service(cluster)),
                DASHBOARD_PORT,
            )
            .await
        {
            Ok(pf) => pf,
            // No head Service (a hand-made cluster?): go to the head pod directly.
            Err(_) => {
                k8s.port_forward(ns, PodTarget::Name(head.name), DASHBOARD_PORT)
                    .await?
            }
        };
        (pf.url(), Some(pf))
    };
    let client = RayClient::new(&url, options)?;
    Ok(DashboardSession {
        url,
        client,
        forward,
    })
}

/// The cluster's head pod, which must be Running.
pub async fn require_running_head(k8s: &K8s, ns: &str, cluster: &str) -> Result<PodInfo> {
    let pods = cluster_pods(k8s, ns, cluster).await?;
    match pods.head {
        None => Err(Diag::api(
            "nrl::cluster::no_head",
            format!("no head pod for RayCluster {cluster} in namespace `{ns}`"),
        )
        .help("the cluster may still be provisioning or does not exist: check `nrl status` or `nrl cluster list`")),
        Some(h) if h.phase != "Running" => Err(Diag::api(
            "nrl::cluster::head_not_running",
            format!(
                "head pod {} of RayCluster {cluster} is {}, not Running yet{}",
                h.name,
                h.phase,
                h.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
            ),
        )
        .help("wait for it (`nrl cluster up … --wait`) or look at its events")),
        Some(h) => Ok(h),
    }
}

/// Shell run on the head pod by `cluster dashboard --fix`: when Ray's dashboard assets
/// are symlinks (uv's default link mode), reinstall Ray with copied files.
pub const FIX_SCRIPT: &str = r#"set -eu
build=$(python3 -c 'import os, ray.dashboard; print(os.path.join(os.path.dirname(ray.dashboard.__file__), "client", "build"))' 2>/dev/null || true)
if [ -z "$build" ] || [ ! -d "$build" ]; then echo "[dashboard] ray install not found on pod; skipping fix"; exit 0; fi
if [ -z "$(find "$build" -type l -print -quit)" ]; then echo "[dashboard] assets already real files; no fix needed"; exit 0; fi
ver=$(python3 -c 'import ray; print(ray.__version__)')
echo "[dashboard] reinstalling ray[default]==$ver with --link-mode=copy (about 30s)"
uv=$(command -v uv || echo /opt/nemo_rl_venv/bin/uv)
"$uv" pip install --reinstall --link-mode=copy --quiet "ray[default]==$ver"
echo "[dashboard] reinstall complete."
"#;

/// Run [`FIX_SCRIPT`] on the head pod (180 s budget), echoing its output. A failure is
/// reported and the caller carries on: the forward works regardless.
pub async fn fix_dashboard_assets(k8s: &K8s, ns: &str, head_pod: &str, progress: &Progress) {
    let run = k8s.exec(ns, head_pod, None, &["bash", "-c", FIX_SCRIPT], None);
    match tokio::time::timeout(Duration::from_secs(180), run).await {
        Ok(Ok(out)) => {
            for line in out.stdout_str().lines() {
                progress.line(line);
            }
            if out.exit_code != 0 {
                progress.line(format!(
                    "[dashboard] fix failed (exit {}): {}",
                    out.exit_code,
                    out.stderr_str().trim()
                ));
            }
        }
        Ok(Err(e)) => progress.line(format!("[dashboard] fix skipped: {}", e.message)),
        Err(_) => progress.line("[dashboard] fix skipped: no answer within 180s"),
    }
}
