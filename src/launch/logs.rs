//! `nrl logs` (ref-orchestration §8.2): a role's daemon job log through the Ray
//! dashboard, or its head or first worker pod's log through the API.

use std::io::Write;
use std::ops::ControlFlow;

use crate::config::layers::LoadedConfig;
use crate::config::schema::Role;
use crate::diag::{Diag, Exit, Result};
use crate::k8s::{K8s, LogOptions};
use crate::ray::follow::CODE_OUTPUT_CLOSED;
use crate::ray::{FollowOptions, follow_job};

use super::dashboard::{dashboard_session, require_running_head};
use super::inspect::cluster_pods;
use super::progress::Progress;
use super::raycluster::cluster_of;
use super::raycluster::daemon::{daemon_base_id, daemon_status};

/// Which log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSource {
    /// The daemon when the role declares one, else the head pod.
    Auto,
    Daemon,
    Head,
    Worker,
}

#[derive(Debug, Clone)]
pub struct RoleLogOptions {
    pub source: LogSource,
    pub follow: bool,
    /// Last N lines (pod logs; daemon logs when not following).
    pub tail: Option<i64>,
    /// Pod container (default: the pod's default or first container).
    pub container: Option<String>,
}

/// Write the chosen log to `out`. Following a daemon returns its job's exit (SUCCEEDED 0,
/// FAILED/STOPPED 1); everything else returns 0.
pub async fn role_logs<W: Write + Send>(
    k8s: &K8s,
    cfg: &LoadedConfig,
    role: Role,
    opts: &RoleLogOptions,
    out: &mut W,
    progress: &Progress,
) -> Result<Exit> {
    let cluster = cluster_of(cfg, role)?;
    let ns = cfg.infra.namespace.as_str();
    let source = match opts.source {
        LogSource::Auto if cluster.daemon.is_some() => LogSource::Daemon,
        LogSource::Auto => LogSource::Head,
        s => s,
    };
    let pod = match source {
        LogSource::Daemon => {
            let Some(daemon) = &cluster.daemon else {
                return Err(Diag::new(
                    "nrl::logs::no_daemon",
                    format!("role {} has no daemon", role.as_str()),
                )
                .help(format!(
                    "use --source head|worker, or declare `kuberay.{}.daemon`",
                    role.as_str()
                )));
            };
            let base = daemon_base_id(cluster, daemon);
            let session = dashboard_session(k8s, ns, &cluster.name).await?;
            let id = match daemon_status(&session.client, &base).await? {
                Some((id, _)) => id,
                None => {
                    return Err(Diag::api(
                        "nrl::logs::no_daemon_job",
                        format!(
                            "no daemon job `{base}` (or `{base}-<ts>`) on RayCluster {}",
                            cluster.name
                        ),
                    )
                    .help("submit it with `nrl cluster up … --wait`"));
                }
            };
            progress.line(format!("# tailing {id} via {}", session.url));
            if opts.follow {
                let job = follow_job(&session.client, &id, out, &FollowOptions::default()).await?;
                return Ok(job.status.exit());
            }
            let text = session.client.logs(&id).await?;
            write_tail(out, &text, opts.tail)?;
            return Ok(Exit::Ok);
        }
        LogSource::Head => {
            let pods = cluster_pods(k8s, ns, &cluster.name).await?;
            match pods.head {
                Some(h) => h.name,
                // Same diagnosis as the dashboard path.
                None => require_running_head(k8s, ns, &cluster.name).await?.name,
            }
        }
        LogSource::Worker | LogSource::Auto => {
            let pods = cluster_pods(k8s, ns, &cluster.name).await?;
            match pods.workers.into_iter().next() {
                Some(w) => w.name,
                None => {
                    return Err(Diag::api(
                        "nrl::logs::no_worker",
                        format!("no worker pods for {} in namespace `{ns}`", cluster.name),
                    )
                    .help("is the RayCluster still scheduling? check `nrl status` first"));
                }
            }
        }
    };
    let lo = LogOptions {
        container: opts.container.clone(),
        follow: opts.follow,
        tail: opts.tail,
        previous: false,
    };
    let mut write_err = None;
    k8s.stream_pod_logs(ns, &pod, &lo, |line| {
        match writeln!(out, "{line}").and_then(|_| if lo.follow { out.flush() } else { Ok(()) }) {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                write_err = Some(e);
                ControlFlow::Break(())
            }
        }
    })
    .await?;
    let _ = out.flush();
    match write_err {
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            Err(Diag::new(CODE_OUTPUT_CLOSED, "the output was closed"))
        }
        Some(e) => Err(Diag::new("nrl::io", format!("cannot write the log: {e}"))),
        None => Ok(Exit::Ok),
    }
}

fn write_tail<W: Write>(out: &mut W, text: &str, tail: Option<i64>) -> Result<()> {
    let lines: Vec<&str> = text.lines().collect();
    let skip = match tail {
        Some(n) if n >= 0 => lines.len().saturating_sub(n as usize),
        _ => 0,
    };
    for l in &lines[skip..] {
        writeln!(out, "{l}")
            .map_err(|e| Diag::new("nrl::io", format!("cannot write the log: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_keep_the_last_lines() {
        let mut out = Vec::new();
        write_tail(&mut out, "a\nb\nc\n", Some(2)).unwrap();
        assert_eq!(out, b"b\nc\n");
        let mut out = Vec::new();
        write_tail(&mut out, "a\nb\n", None).unwrap();
        assert_eq!(out, b"a\nb\n");
    }
}
