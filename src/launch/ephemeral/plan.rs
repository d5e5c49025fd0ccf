//! Everything about an ephemeral run that can be decided without a cluster: the RayJob,
//! its DRA objects, the working_dir to upload. All validation happens here, so a bad
//! input fails before anything is created.

use serde_json::Value as Json;

use super::RayJobRunOptions;
use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::config::schema::Role;
use crate::diag::{Diag, Result};
use crate::launch::check::validate_manifests;
use crate::launch::rayjob::{
    rayjob_manifest, require_entrypoint, require_training, staged_recipe_yaml, submission_mode,
    upload_entrypoint,
};
use crate::ray::{DEFAULT_UPLOAD_PATHS, PackageOptions, UploadSet};
use crate::render::dra::dra_object;
use crate::render::raycluster::dra_needed;
use crate::render::rayjob::{RayJobOptions, STAGED_RECIPE, SubmissionMode};

/// The label carrying the run id on everything a run creates.
pub const RUN_ID_LABEL: &str = "nrl/run-id";

/// What nrl uploads and submits itself (InteractiveMode).
#[derive(Debug, Clone)]
pub struct UploadPlan {
    /// The upload paths plus the staged recipe as `nrl_run.yaml`.
    pub files: UploadSet,
    /// Exports, then the entrypoint pointed at `nrl_run.yaml`.
    pub entrypoint: String,
}

/// A validated ephemeral run.
#[derive(Debug, Clone)]
pub struct RayJobPlan {
    pub run_id: String,
    pub name: String,
    pub namespace: String,
    pub manifest: Json,
    /// ComputeDomain / ResourceClaimTemplate objects the cluster's pods claim.
    pub dra: Vec<Json>,
    pub mode: SubmissionMode,
    pub upload: Option<UploadPlan>,
    pub shutdown: bool,
    pub ttl_seconds: i64,
}

/// Validate and render: entrypoint, training cluster, run id, names, TTL, the bundled
/// schemas, and (upload mode) the working_dir and its size.
pub fn plan(cfg: &LoadedConfig, opts: &RayJobRunOptions) -> Result<RayJobPlan> {
    require_entrypoint(cfg)?;
    let cluster = require_training(cfg)?;
    check_run_id(&opts.run_id)?;
    if !opts.shutdown && opts.ttl_seconds > 0 {
        return Err(Diag::new(
            "nrl::run::ttl",
            format!(
                "--ttl {} needs --shutdown: KubeRay rejects a RayJob that keeps its cluster \
                 (shutdownAfterJobFinishes: false) but has ttlSecondsAfterFinished",
                opts.ttl_seconds
            ),
        )
        .help(
            "drop --ttl (the cluster is kept until you delete the RayJob), or drop --no-shutdown",
        ));
    }
    let mode = submission_mode(cfg);
    let mut labels = opts.extra_labels.clone();
    labels.insert(RUN_ID_LABEL.to_string(), opts.run_id.clone());
    let rj_opts = RayJobOptions {
        name: opts.name.clone(),
        shutdown_after_finishes: opts.shutdown,
        ttl_seconds_after_finished: opts.ttl_seconds,
        extra_labels: labels,
        submission_mode: mode,
        // In InteractiveMode `spec.jobId` is set after nrl has submitted the job.
        job_id: (mode == SubmissionMode::Http).then(|| opts.run_id.clone()),
        ..RayJobOptions::default()
    };
    let manifest = rayjob_manifest(cfg, &opts.run_id, &rj_opts)?;
    let dra: Vec<Node> = dra_needed(cluster, Role::Training)
        .into_iter()
        .map(|(kind, name)| dra_object(kind, &name, &cfg.infra.namespace))
        .collect();
    let mut all = vec![manifest.clone()];
    all.extend(dra.iter().cloned());
    validate_manifests(&all)?;

    let upload = match mode {
        SubmissionMode::Http => None,
        SubmissionMode::Interactive => Some(upload_plan(cfg, opts)?),
    };
    let manifest = manifest.to_json();
    let name = manifest
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(RayJobPlan {
        run_id: opts.run_id.clone(),
        name,
        namespace: cfg.infra.namespace.clone(),
        manifest,
        dra: dra.iter().map(Node::to_json).collect(),
        mode,
        upload,
        shutdown: opts.shutdown,
        ttl_seconds: opts.ttl_seconds,
    })
}

fn upload_plan(cfg: &LoadedConfig, opts: &RayJobRunOptions) -> Result<UploadPlan> {
    let root = std::fs::canonicalize(&opts.repo_root)
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| {
            Diag::new(
                "nrl::run::repo_root",
                format!(
                    "repo root `{}` is not a directory",
                    opts.repo_root.display()
                ),
            )
            .help("pass --repo-root DIR (the checkout the upload paths are relative to)")
        })?;
    let mut files = match &cfg.infra.launch.ray_upload_paths {
        Some(paths) => UploadSet::from_include_paths(&root, paths)?,
        None => UploadSet::from_include_paths(&root, DEFAULT_UPLOAD_PATHS)?,
    };
    files.add_file_contents(STAGED_RECIPE, staged_recipe_yaml(cfg).into_bytes())?;
    files.check_size(PackageOptions::default().limit)?;
    Ok(UploadPlan {
        files,
        entrypoint: upload_entrypoint(cfg, &opts.run_id)?,
    })
}

/// Run ids name Ray submissions, labels and objects: a DNS-1123 label of at most 40
/// characters that starts with a letter.
pub fn check_run_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 40
        && id.starts_with(|c: char| c.is_ascii_lowercase())
        && !id.ends_with('-')
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if ok {
        Ok(())
    } else {
        Err(
            Diag::new("nrl::run::run_id", format!("invalid run id `{id}`")).help(
                "run ids use lower-case letters, digits and `-`, start with a letter, \
                 at most 40 characters",
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_dns_labels() {
        for ok in ["a", "quick-20260101-000000-ab12"] {
            check_run_id(ok).unwrap();
        }
        for bad in ["", "1abc", "A-b", "a_b", "a-", &"a".repeat(41)] {
            assert_eq!(
                check_run_id(bad).unwrap_err().code,
                "nrl::run::run_id",
                "{bad}"
            );
        }
    }
}
