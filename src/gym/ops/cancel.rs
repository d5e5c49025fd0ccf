//! Cancelling a run (or one benchmark): delete its Jobs by label with foreground
//! propagation (the Jobs go only after their pods), and, for a whole run, its Secret;
//! then wait, through one label-selected watch, until the Jobs are gone.

use std::collections::HashSet;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value as Json;

use crate::diag::{Diag, Result};
use crate::k8s::K8s;
use crate::k8s::objects::Propagation;
use crate::k8s::watch::LabelledEvent;
use crate::launch::Progress;
use crate::launch::raycluster::check_owner;

use crate::gym::names::{benchmark_selector, run_selector, secret_name};

/// What a cancel removed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cancelled {
    pub jobs: Vec<String>,
    /// The Secret, when a whole run was cancelled and it existed.
    pub secret: Option<String>,
}

fn name(o: &Json) -> String {
    o.pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or("")
        .to_string()
}

/// Who cancels: the owner check of every Job and the Secret (`nrl-k8s/owner` must be
/// `me`, unless `force`) runs before anything is deleted.
pub struct Canceller<'a> {
    pub me: &'a str,
    pub force: bool,
    pub progress: &'a Progress,
}

pub async fn cancel_run(
    k8s: &K8s,
    ns: &str,
    run_id: &str,
    benchmark: Option<&str>,
    wait: Option<Duration>,
    by: &Canceller<'_>,
) -> Result<Cancelled> {
    let jobs_ar = super::jobs()?;
    let selector = match benchmark {
        Some(b) => benchmark_selector(run_id, b),
        None => run_selector(run_id),
    };
    let live_jobs = k8s.list(&jobs_ar, ns, Some(&selector)).await?;
    // The Secret is owned by the Jobs, so the garbage collector may remove it first.
    let live_secret = match benchmark {
        None => {
            k8s.get(&super::secrets()?, ns, &secret_name(run_id))
                .await?
        }
        Some(_) => None,
    };
    for job in &live_jobs {
        // List items carry no `kind`; the check names it.
        let mut j = job.clone();
        if let Some(o) = j.as_object_mut() {
            o.entry("kind").or_insert_with(|| Json::from("Job"));
        }
        check_owner(&j, by.me, by.force, by.progress)?;
    }
    if let Some(s) = &live_secret {
        check_owner(s, by.me, by.force, by.progress)?;
    }
    let jobs: Vec<String> = live_jobs.iter().map(name).collect();
    let secret = live_secret.as_ref().map(name);
    // The futures are made first: a stream that maps `&String` through a closure is not
    // `Send` for every lifetime (a rustc limitation), and `nrl top` cancels on a task.
    let pending: Vec<_> = jobs
        .iter()
        .map(|j| k8s.delete_with(&jobs_ar, ns, j, Propagation::Foreground))
        .collect();
    let deletions = futures::stream::iter(pending)
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    for d in deletions {
        d?;
    }
    if let Some(s) = &secret {
        k8s.delete(&super::secrets()?, ns, s).await?;
    }
    let out = Cancelled { jobs, secret };
    if let Some(timeout) = wait
        && !out.jobs.is_empty()
    {
        wait_gone(k8s, ns, &selector, timeout).await?;
    }
    Ok(out)
}

/// Wait until no Job matches `selector`.
async fn wait_gone(k8s: &K8s, ns: &str, selector: &str, timeout: Duration) -> Result<()> {
    let ar = super::jobs()?;
    let mut stream = Box::pin(k8s.watch_labelled(&ar, ns, selector));
    let mut left: HashSet<String> = HashSet::new();
    let wait = async {
        while let Some(ev) = stream.next().await {
            match ev? {
                LabelledEvent::Reset(all) => left = all.iter().map(name).collect(),
                LabelledEvent::Applied(o) => {
                    left.insert(name(&o));
                }
                LabelledEvent::Deleted(o) => {
                    left.remove(&name(&o));
                }
            }
            if left.is_empty() {
                return Ok(());
            }
        }
        Err(Diag::api(
            "nrl::k8s::watch",
            "the watch ended before the Jobs were gone",
        ))
    };
    match tokio::time::timeout(timeout, wait).await {
        Ok(r) => r,
        Err(_) => Err(Diag::api(
            "nrl::k8s::timeout",
            format!(
                "the Jobs matching `{selector}` were still there after {}s",
                timeout.as_secs()
            ),
        )
        .help("they are being deleted; check again with `nrl gym status RUN`")),
    }
}
