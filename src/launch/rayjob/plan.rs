//! Everything about an ephemeral run that can be decided without a cluster: the RayJob,
//! its DRA objects, the working_dir to upload. All validation happens here, so a bad
//! input fails before anything is created.

use serde_json::Value as Json;

use super::RayJobRunOptions;
use crate::config::env::username;
use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::config::schema::Role;
use crate::diag::{Diag, Result};
use crate::launch::check::validate_manifests;
use crate::launch::raycluster::stamp_owner;
use crate::launch::rayjob::manifest::{
    rayjob_manifest, require_entrypoint, require_training, submission_mode,
};
use crate::launch::stage::stage;
use crate::ray::{PackageOptions, UploadSet};
use crate::render::dra::infra_dra_object;
use crate::render::raycluster::dra_needed;
use crate::render::rayjob::{RayJobOptions, SubmissionMode};
use crate::run_id;
use crate::run_id::RunId;

pub use crate::launch::records::cluster_copy::RUN_ID_LABEL;

/// What nrl uploads and submits itself (InteractiveMode).
#[derive(Debug, Clone)]
pub struct UploadPlan {
    /// The upload paths plus the staged recipe as `nrl_run.yaml`.
    pub files: UploadSet,
    /// Exports, then the entrypoint pointed at `nrl_run.yaml`.
    pub entrypoint: String,
    /// What the user should know about the staging (nothing matched the upload paths…).
    pub warnings: Vec<String>,
}

/// A validated ephemeral run.
#[derive(Debug, Clone)]
pub struct RayJobPlan {
    pub run_id: RunId,
    pub name: String,
    pub namespace: String,
    /// The `nrl-k8s/owner` of the objects (the normalised user name).
    pub owner: String,
    pub manifest: Json,
    /// ComputeDomain / ResourceClaimTemplate objects the cluster's pods claim.
    pub dra: Vec<Json>,
    pub mode: SubmissionMode,
    pub upload: Option<UploadPlan>,
    pub shutdown: bool,
    pub ttl_seconds: i64,
}

impl RayJobPlan {
    /// The RayJob and its DRA objects as config nodes (what the doctor rules read).
    pub fn manifests_as_nodes(&self) -> Vec<Node> {
        std::iter::once(&self.manifest)
            .chain(&self.dra)
            .map(Node::from_json)
            .collect()
    }
}

/// The RayJob and its DRA objects for `cfg` as `opts` asks, validated (entrypoint,
/// training cluster, run id, TTL, and with `validate` the names and bundled schemas). No
/// I/O: this is also what `nrl run --dry-run` prints.
pub fn manifests(
    cfg: &LoadedConfig,
    opts: &RayJobRunOptions,
    validate: bool,
) -> Result<(Node, Vec<Node>)> {
    require_entrypoint(cfg)?;
    let cluster = require_training(cfg)?;
    run_id::validate(&opts.run_id)?;
    let launch = &cfg.infra.launch;
    crate::launch::raycluster::submit::require_code_path(
        launch.code_source,
        launch.code_path.as_deref(),
    )?;
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
    labels.insert(RUN_ID_LABEL.to_string(), opts.run_id.to_string());
    let rj_opts = RayJobOptions {
        name: opts.name.clone(),
        shutdown_after_finishes: opts.shutdown,
        ttl_seconds_after_finished: opts.ttl_seconds,
        extra_labels: labels,
        submission_mode: mode,
        // In InteractiveMode `spec.jobId` is set after nrl has submitted the job.
        job_id: (mode == SubmissionMode::Http).then(|| opts.run_id.to_string()),
        ..RayJobOptions::default()
    };
    let owner = username(&*cfg.env);
    let mut manifest = rayjob_manifest(cfg, &opts.run_id, &rj_opts)?;
    stamp_owner(&mut manifest, &owner);
    let dra: Vec<Node> = dra_needed(cluster, Role::Training)
        .into_iter()
        .map(|(kind, name)| {
            let mut obj = infra_dra_object(kind, &name, &cfg.infra);
            stamp_owner(&mut obj, &owner);
            obj
        })
        .collect();
    if validate {
        let mut all = vec![manifest.clone()];
        all.extend(dra.iter().cloned());
        validate_manifests(&all)?;
    }
    Ok((manifest, dra))
}

/// [`manifests`] (validated unless `opts.validate` is off), plus (upload mode) the working_dir staged from `opts.repo_root` and
/// checked against Ray's size limit.
pub fn plan(cfg: &LoadedConfig, opts: &RayJobRunOptions) -> Result<RayJobPlan> {
    let (manifest, dra) = manifests(cfg, opts, opts.validate)?;
    let mode = submission_mode(cfg);
    let manifest = manifest.to_json();
    let upload = match mode {
        SubmissionMode::Http => None,
        SubmissionMode::Interactive => {
            // The RayJob shows exactly the entrypoint nrl submits.
            let entrypoint = manifest
                .pointer("/spec/entrypoint")
                .and_then(Json::as_str)
                .unwrap_or_default();
            Some(upload_plan(cfg, opts, entrypoint)?)
        }
    };
    let name = manifest
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(RayJobPlan {
        run_id: opts.run_id.clone(),
        name,
        namespace: cfg.infra.namespace.clone(),
        owner: username(&*cfg.env),
        manifest,
        dra: dra.iter().map(Node::to_json).collect(),
        mode,
        upload,
        shutdown: opts.shutdown,
        ttl_seconds: opts.ttl_seconds,
    })
}

fn upload_plan(
    cfg: &LoadedConfig,
    opts: &RayJobRunOptions,
    entrypoint: &str,
) -> Result<UploadPlan> {
    let staged = stage(cfg, &opts.run_id, &opts.repo_root)?;
    staged.files.check_size(PackageOptions::default().limit)?;
    Ok(UploadPlan {
        files: staged.files,
        entrypoint: entrypoint.to_string(),
        warnings: staged.warnings,
    })
}
