//! Applying a run: its Secret first (pods must not start without it), then every
//! benchmark's Job concurrently with a bound, each with a deadline. One failed Job never
//! stops the others (as in the reference); afterwards the Secret is made a dependent of
//! the Jobs, so Kubernetes deletes it with them (their TTL, or a cancel).

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value as Json, json};

use crate::config::node::Node;
use crate::diag::{Diag, Result};
use crate::k8s::{ApplyOptions, K8s};
use crate::launch::raycluster::stamp_owner;

use crate::gym::plan::RunPlan;

/// How to apply.
#[derive(Debug, Clone)]
pub struct ApplySettings {
    /// Jobs applied at once.
    pub parallel: usize,
    /// Deadline of one Job's apply (retries included).
    pub timeout: Duration,
}

impl Default for ApplySettings {
    fn default() -> Self {
        ApplySettings {
            parallel: 16,
            timeout: Duration::from_secs(60),
        }
    }
}

/// The outcome for one benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub benchmark: String,
    pub job: String,
    /// The Job's uid, when it was created.
    pub uid: Option<String>,
    /// Why it was not, otherwise.
    pub error: Option<String>,
}

async fn apply_one(
    k8s: &K8s,
    obj: &Json,
    what: &str,
    timeout: Duration,
) -> std::result::Result<Json, String> {
    match tokio::time::timeout(timeout, k8s.apply(obj, ApplyOptions::default())).await {
        Ok(Ok(live)) => Ok(live),
        Ok(Err(d)) => Err(d.message.clone()),
        Err(_) => Err(format!(
            "applying {what} timed out after {}s; check that the kube context is reachable and your credentials are fresh",
            timeout.as_secs()
        )),
    }
}

/// `obj` labelled `nrl-k8s/owner: <owner>` (unless set or not a valid label value).
fn owned_by(obj: &Node, owner: &str) -> Json {
    let mut o = obj.clone();
    stamp_owner(&mut o, owner);
    o.to_json()
}

/// Apply the run's Secret and Jobs, labelled as `owner`'s; `on_applied` sees each Job's
/// outcome as it comes. Fails only when the Secret cannot be applied (no Job is created
/// then).
pub async fn apply_run(
    k8s: &K8s,
    plan: &RunPlan,
    settings: &ApplySettings,
    owner: &str,
    mut on_applied: impl FnMut(&Applied),
) -> Result<Vec<Applied>> {
    let secret = plan.secret.as_ref().map(|s| owned_by(s, owner));
    if let Some(s) = &secret {
        apply_one(k8s, s, "the run's Secret", settings.timeout)
            .await
            .map_err(|e| {
                Diag::api("nrl::gym::secret", format!("cannot create the run's Secret: {e}"))
                    .help("no Job was created; the Secret holds the config's secret env values (host: values named *_TOKEN, *_KEY, …)")
            })?;
    }
    let mut out: Vec<Option<Applied>> = vec![None; plan.jobs.len()];
    let mut results = futures::stream::iter(plan.jobs.iter().enumerate())
        .map(|(i, job)| async move {
            let obj = owned_by(&job.manifest, owner);
            let r = apply_one(k8s, &obj, &format!("Job {}", job.name), settings.timeout).await;
            let applied = match r {
                Ok(live) => Applied {
                    benchmark: job.benchmark.clone(),
                    job: job.name.clone(),
                    uid: live
                        .pointer("/metadata/uid")
                        .and_then(Json::as_str)
                        .map(str::to_string),
                    error: None,
                },
                Err(e) => Applied {
                    benchmark: job.benchmark.clone(),
                    job: job.name.clone(),
                    uid: None,
                    error: Some(e),
                },
            };
            (i, applied)
        })
        .buffer_unordered(settings.parallel.max(1));
    while let Some((i, applied)) = results.next().await {
        on_applied(&applied);
        out[i] = Some(applied);
    }
    drop(results);
    let applied: Vec<Applied> = out.into_iter().flatten().collect();
    if let Some(mut s) = secret {
        let owners: Vec<Json> = applied
            .iter()
            .filter_map(|a| {
                a.uid.as_ref().map(|uid| {
                    json!({"apiVersion": "batch/v1", "kind": "Job", "name": a.job, "uid": uid})
                })
            })
            .collect();
        if owners.is_empty() {
            // Nothing will ever read it.
            let ar = super::secrets()?;
            let name = s
                .pointer("/metadata/name")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string();
            k8s.delete(&ar, &plan.namespace, &name).await?;
        } else if let Some(meta) = s.get_mut("metadata").and_then(Json::as_object_mut) {
            meta.insert("ownerReferences".into(), Json::Array(owners));
            // Best effort: without owners the Secret is still removed by `nrl gym cancel`.
            let _ = apply_one(k8s, &s, "the run's Secret", settings.timeout).await;
        }
    }
    Ok(applied)
}
