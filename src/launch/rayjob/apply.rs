//! Creating an ephemeral run's objects: the same-name checks, DRA objects, the RayJob,
//! ownership of the DRA objects, and (InteractiveMode) the upload and submit.

use std::time::Duration;

use serde_json::Value as Json;

use super::plan::{RUN_ID_LABEL, RayJobPlan, UploadPlan};
use crate::diag::{Diag, Result};
use crate::k8s::resources::by_kind;
use crate::k8s::status::RayJobStatus;
use crate::k8s::wait::str_at;
use crate::k8s::{ApplyOptions, K8s, ObjectRef};
use crate::launch::dashboard::dashboard_session;
use crate::launch::output::Output;
use crate::launch::owned::{
    apply_owned, delete_all, delete_foreground, owner_names, owner_ref, wait_all_deleted,
};
use crate::launch::raycluster::check_owner;
use crate::ray::{JobSpec, PackageOptions, SubmitRequest, submit_job};
use crate::render::dra::DraKind;

/// How long `--replace` waits for an old RayJob, its cluster and DRA objects to go.
const REPLACE_TIMEOUT: Duration = Duration::from_secs(600);

/// Check what already exists under the run's names; with `replace`, remove an earlier
/// RayJob of the same name (its cluster and DRA objects go with it).
pub async fn preflight(
    k8s: &K8s,
    plan: &RayJobPlan,
    replace: bool,
    force: bool,
    progress: &mut dyn Output,
) -> Result<()> {
    let (ns, name) = (plan.namespace.as_str(), plan.name.as_str());
    let rayjobs = by_kind("RayJob")?;
    if let Some(old) = k8s.get(&rayjobs, ns, name).await? {
        let status = RayJobStatus::of(&old);
        // KubeRay's `JobDeploymentStatusNew` is the empty state.
        let deployment = status.deployment.as_deref().unwrap_or("New");
        let job = status.job.as_deref().unwrap_or("-");
        let old_run = str_at(
            &old,
            &format!("/metadata/labels/{}", RUN_ID_LABEL.replace('/', "~1")),
        )
        .map(|id| format!(" (run `{id}`)"))
        .unwrap_or_default();
        let finished = status.is_terminal();
        if !replace {
            let (what, help) = if finished {
                (
                    format!("finished: deployment={deployment} job={job}"),
                    format!(
                        "pass --replace to delete it (and what is left of its cluster) first, \
                         or choose another name with --rayjob-name; KubeRay keeps finished \
                         RayJobs until they are deleted (`kubectl delete rayjob {name} -n {ns}`)"
                    ),
                )
            } else {
                (
                    format!("still running: deployment={deployment} job={job}"),
                    "pass --replace to stop and delete it first, or choose another name with \
                     --rayjob-name"
                        .to_string(),
                )
            };
            return Err(Diag::new(
                "nrl::run::rayjob_exists",
                format!("RayJob `{name}` from an earlier run{old_run} exists in namespace `{ns}`, {what}"),
            )
            .help(help));
        }
        check_owner(&old, &plan.owner, force, progress.progress())?;
        progress.status(&format!(
            "[rayjob] --replace: deleting RayJob {name}{old_run} (deployment={deployment} job={job}) and its RayCluster"
        ));
        delete_foreground(k8s, &rayjobs, ns, name, REPLACE_TIMEOUT).await?;
        // DRA objects are garbage-collected after their owner; the new ones have the same
        // names, so they must be gone before they are created again.
        wait_all_deleted(k8s, &plan.dra, REPLACE_TIMEOUT).await?;
    }

    let clusters = by_kind("RayCluster")?;
    if let Some(rc) = k8s.get(&clusters, ns, name).await? {
        let owned_by_rayjob = owner_names(&rc).iter().any(|o| o.starts_with("RayJob/"));
        if !owned_by_rayjob {
            return Err(Diag::new(
                "nrl::run::name_collision",
                format!(
                    "a RayCluster named `{name}` already exists in namespace `{ns}`; KubeRay \
                     names the head Service `{name}-head-svc` for both, so a RayJob of that \
                     name would collide with it"
                ),
            )
            .help(format!(
                "choose another name with --rayjob-name, or take the cluster down \
                 (`kubectl delete raycluster {name} -n {ns}`)"
            )));
        }
    }

    for obj in &plan.dra {
        let r = ObjectRef::of(obj, ns)?;
        let Some(live) = k8s.get(&r.resource, &r.namespace, &r.name).await? else {
            continue;
        };
        let owners = owner_names(&live);
        if !owners.is_empty() {
            return Err(Diag::new(
                "nrl::run::dra_in_use",
                format!(
                    "{} `{}` exists and belongs to {}",
                    r.resource.kind,
                    r.name,
                    owners.join(", ")
                ),
            )
            .help("another run or cluster uses these DRA objects; choose another cluster name or wait until it is gone"));
        }
        if !replace {
            return Err(Diag::new(
                "nrl::run::dra_exists",
                format!(
                    "{} `{}` exists without an owner (left by nrl-k8s or created by hand)",
                    r.resource.kind, r.name
                ),
            )
            .help(format!(
                "if no cluster uses it, pass --replace to take it over, or delete it \
                 (`kubectl delete {} {} -n {ns}`)",
                r.resource.plural, r.name
            )));
        }
        check_owner(&live, &plan.owner, force, progress.progress())?;
    }
    Ok(())
}

fn dra_label(obj: &Json) -> &'static str {
    match str_at(obj, "/kind") {
        Some(k) if k == DraKind::ComputeDomain.kind() => "ComputeDomain",
        _ => "RoCE ResourceClaimTemplate",
    }
}

/// DRA objects, then the RayJob, then the DRA objects owned by the RayJob. A failure
/// part-way removes what was created, so nothing is left without an owner. Returns the
/// live RayJob.
pub async fn create(k8s: &K8s, plan: &RayJobPlan, progress: &mut dyn Output) -> Result<Json> {
    for obj in &plan.dra {
        progress.status(&format!(
            "[rayjob] ensuring {} {}",
            dra_label(obj),
            str_at(obj, "/metadata/name").unwrap_or("?")
        ));
        if let Err(e) = k8s.apply(obj, ApplyOptions::default()).await {
            delete_all(k8s, &plan.dra).await;
            return Err(e);
        }
    }
    progress.status(&format!(
        "[rayjob] applying RayJob {} in namespace {} ({})",
        plan.name,
        plan.namespace,
        plan.mode.as_str()
    ));
    let live = match k8s.apply(&plan.manifest, ApplyOptions::default()).await {
        Ok(live) => live,
        Err(e) => {
            delete_all(k8s, &plan.dra).await;
            return Err(e);
        }
    };
    if !plan.dra.is_empty() {
        let owned = match owner_ref(&live) {
            Ok(owner) => apply_owned(k8s, &plan.dra, &[owner]).await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = owned {
            undo(k8s, plan).await;
            return Err(e);
        }
    }
    Ok(live)
}

/// Remove everything a run created (used when it cannot continue).
pub async fn undo(k8s: &K8s, plan: &RayJobPlan) {
    delete_all(k8s, &plan.dra).await;
    if let Ok(rayjobs) = by_kind("RayJob") {
        let _ = k8s.delete(&rayjobs, &plan.namespace, &plan.name).await;
    }
}

/// Move the DRA objects from the RayJob to its RayCluster, so they are deleted with the
/// cluster when KubeRay tears it down (a finished RayJob itself stays until deleted).
/// Returns whether the cluster exists yet.
pub async fn hand_dra_to_cluster(k8s: &K8s, plan: &RayJobPlan, cluster: &str) -> Result<bool> {
    let clusters = by_kind("RayCluster")?;
    let Some(rc) = k8s.get(&clusters, &plan.namespace, cluster).await? else {
        return Ok(false);
    };
    apply_owned(k8s, &plan.dra, &[owner_ref(&rc)?]).await?;
    Ok(true)
}

/// InteractiveMode: upload the working_dir to the cluster's dashboard, submit the job
/// with the run id as submission id, and tell KubeRay which job to follow.
pub async fn submit_upload(
    k8s: &K8s,
    plan: &RayJobPlan,
    upload: &UploadPlan,
    cluster: &str,
    progress: &mut dyn Output,
) -> Result<()> {
    let dash = dashboard_session(k8s, &plan.namespace, cluster).await?;
    let mut request = SubmitRequest::new(upload.entrypoint.clone());
    request.submission_id = Some(plan.run_id.to_string());
    request
        .metadata
        .insert("nrl_run_id".to_string(), plan.run_id.to_string());
    request
        .metadata
        .insert("rayjob".to_string(), plan.name.clone());
    progress.status(&format!(
        "[rayjob] uploading working_dir ({} files) and submitting {} through a port-forward to RayCluster {cluster}",
        upload.files.file_count(),
        plan.run_id
    ));
    let submitted = submit_job(
        &dash.client,
        JobSpec {
            request,
            working_dir: Some(upload.files.clone()),
            package: PackageOptions::default(),
        },
    )
    .await?;
    if let Some(pkg) = &submitted.package {
        progress.status(&format!(
            "[rayjob] working_dir {} ({})",
            pkg.uri,
            if pkg.uploaded {
                "uploaded"
            } else {
                "already on the cluster"
            }
        ));
    }
    // Only `spec.jobId`, as a merge patch: KubeRay has updated the RayJob since nrl applied
    // it (see `K8s::merge_patch`), so re-applying the whole manifest would conflict.
    k8s.merge_patch(
        &crate::k8s::resources::api_resource("ray.io/v1", "RayJob")?,
        &plan.namespace,
        &plan.name,
        &serde_json::json!({"spec": {"jobId": submitted.submission_id}}),
    )
    .await?;
    Ok(())
}
