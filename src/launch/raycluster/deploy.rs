//! Deployments and their ClusterIP Services (ref-orchestration §4.4): owner guard,
//! server-side apply, optional wait for availability (a watch) and HTTP health check.

use std::time::{Duration, Instant};

use serde_json::Value as Json;

use crate::config::env::username;
use crate::config::layers::LoadedConfig;
use crate::config::schema::DeploymentSpec;
use crate::diag::{Diag, Result};
use crate::k8s::resources::by_kind;
use crate::k8s::wait::{deployment_available, deployment_rollout};
use crate::k8s::{ApplyOptions, K8s};
use crate::render::deployment::{deployment, service};

use super::owner::{check_owner, stamp_owner};
use crate::launch::health::health_check;
use crate::launch::progress::Progress;

/// What [`ensure_deployment`] applied.
#[derive(Debug, Clone)]
pub struct DeployOutcome {
    pub key: String,
    pub name: String,
    /// The Service's cluster DNS name, when one was derived.
    pub dns: Option<String>,
    pub available: bool,
}

fn spec_of<'a>(cfg: &'a LoadedConfig, key: &str) -> Result<&'a DeploymentSpec> {
    cfg.infra.deployments.get(key).ok_or_else(|| {
        Diag::new(
            "nrl::cluster::target",
            format!("deployments.{key} is not defined in the recipe"),
        )
    })
}

/// The Deployment and (if derivable) Service manifests nrl applies for `deployments.<key>`.
pub fn deployment_manifests(cfg: &LoadedConfig, key: &str) -> Result<(Json, Option<Json>)> {
    let spec = spec_of(cfg, key)?;
    let me = username(&*cfg.env);
    let mut dep = deployment(&cfg.infra, key, spec)?;
    stamp_owner(&mut dep, &me);
    let svc = service(&cfg.infra, spec)?.map(|mut s| {
        stamp_owner(&mut s, &me);
        s.to_json()
    });
    Ok((dep.to_json(), svc))
}

/// Apply `deployments.<key>` and its Service. With `wait` (or a `healthCheckUrl`), wait
/// until the Deployment is rolled out as `kubectl rollout status` decides it (new pods
/// available, old ones gone; see [`deployment_available`]) — within `timeout`, or `healthCheckTimeoutS` when
/// only the health check asks for it — then run the health check if one is set.
pub async fn ensure_deployment(
    k8s: &K8s,
    cfg: &LoadedConfig,
    key: &str,
    wait: Option<Duration>,
    force: bool,
    progress: &Progress,
) -> Result<DeployOutcome> {
    let spec = spec_of(cfg, key)?;
    let (dep, svc) = deployment_manifests(cfg, key)?;
    let ns = cfg.infra.namespace.as_str();
    let name = spec.name.as_str();
    let tag = format!("deployment:{key}");
    let deployments = by_kind("Deployment")?;
    if let Some(live) = k8s.get(&deployments, ns, name).await? {
        check_owner(&live, &username(&*cfg.env), force, progress)?;
    }
    progress.line(format!(
        "[{tag}] applying Deployment {name} in namespace `{ns}`"
    ));
    k8s.apply(&dep, ApplyOptions::default()).await?;
    let mut dns = None;
    if let Some(svc) = &svc {
        progress.line(format!("[{tag}] applying ClusterIP Service {name}"));
        k8s.apply(svc, ApplyOptions::default()).await?;
        let d = format!("{name}.{ns}.svc.cluster.local");
        progress.line(format!("[{tag}] DNS: {d}"));
        dns = Some(d);
    }
    let health_budget = Duration::from_secs(spec.health_check_timeout_s.max(0) as u64);
    let wait = wait.or(spec.health_check_url.as_ref().map(|_| health_budget));
    let mut available = false;
    if let Some(timeout) = wait {
        let started = Instant::now();
        let step = progress.step(format!(
            "[{tag}] waiting for Deployment {name} to be available"
        ));
        k8s.wait_for(&deployments, ns, name, timeout, "available", |o| {
            // kubectl rollout status's words for what the rollout still waits for.
            if let Some(Ok(Some(left))) = o.map(deployment_rollout) {
                step.update(format!("[{tag}] waiting for Deployment {name}: {left}"));
            }
            deployment_available(o)
        })
        .await?;
        step.finish(format!("[{tag}] Deployment {name} is available."));
        available = true;
        if let Some(url) = &spec.health_check_url {
            let left = health_budget
                .saturating_sub(started.elapsed())
                .max(Duration::from_secs(10));
            health_check(k8s, url, left, &tag, progress).await?;
        }
    }
    Ok(DeployOutcome {
        key: key.to_string(),
        name: name.to_string(),
        dns,
        available,
    })
}

/// Delete `deployments.<key>`'s Service and Deployment (owner guard first); with `wait`,
/// until the Deployment and its pods are gone.
pub async fn delete_deployment(
    k8s: &K8s,
    cfg: &LoadedConfig,
    key: &str,
    wait: Option<Duration>,
    progress: &Progress,
) -> Result<bool> {
    let spec = spec_of(cfg, key)?;
    let (ns, name) = (cfg.infra.namespace.as_str(), spec.name.as_str());
    let tag = format!("deployment:{key}");
    if k8s.delete(&by_kind("Service")?, ns, name).await? {
        progress.line(format!("[{tag}] deleted Service {name}"));
    }
    let deployments = by_kind("Deployment")?;
    let existed = match wait {
        Some(t) => {
            let step = progress.step(format!("[{tag}] deleting Deployment {name}"));
            let existed = k8s.delete_and_wait(&deployments, ns, name, t).await?;
            drop(step);
            existed
        }
        None => k8s.delete(&deployments, ns, name).await?,
    };
    progress.line(if existed {
        format!("[{tag}] Deployment {name} deleted.")
    } else {
        format!("[{tag}] Deployment {name} not found (already gone)")
    });
    Ok(existed)
}
