//! What a run was launched with, kept in its run directory (`<run dir>/.nrl/`) so later
//! commands need not trust files that may have changed since: `nrl diff` compares two
//! runs (or a run and a recipe) from it, and `nrl run --from` launches it again.
//!
//! - `launch.json`: the resolved recipe and infra, the rendered objects, the layer and
//!   line that set every key, and a content hash of the staged code;
//! - `recipe/<the recipe's file name>`, `infra.yaml`: the merged recipe (overrides
//!   applied, interpolations kept for OmegaConf, as the run got it) and the merged infra,
//!   each a self-contained file that loads on its own (the recipe keeps its name, so a
//!   relaunch's generated run id starts as the original's did).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::config::layers::LoadedConfig;
use crate::config::provenance::{Decided, decided_by};
use crate::config::schema::CodeSource;
use crate::diag::{Diag, Result};
use crate::launch::output::Output;
use crate::launch::records::context::RunContext;
use crate::launch::records::{RunKind, RunRecord, RunStore};
use crate::launch::stage::StagedRun;
use crate::ray::{DEFAULT_UPLOAD_PATHS, UploadSet};
use crate::render::emit;
use crate::render::rayjob::STAGED_RECIPE;

/// The snapshot's directory inside a run directory.
pub const SNAPSHOT_DIR: &str = ".nrl";
const LAUNCH_JSON: &str = "launch.json";
/// The merged recipe (in this directory, under its own name) and infra, loadable as a
/// pair (`nrl run --from`).
const RECIPE_DIR: &str = "recipe";
const INFRA_YAML: &str = "infra.yaml";

/// Error code of a missing or unreadable snapshot.
pub const CODE_SNAPSHOT: &str = "nrl::run::snapshot";

/// Where a run's code came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeSnapshot {
    /// `upload` (staged from `repo_root`), `image` or `lustre` (already on the pods).
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_root: Option<String>,
    /// Uploads: Ray's content hash of the staged files (`nrl_run.yaml` left out, so it
    /// names the code alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// image / lustre: where the code is on the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl CodeSnapshot {
    /// The staged upload set of a run, read from `repo_root`.
    pub fn uploaded(files: &UploadSet, repo_root: &Path) -> Result<CodeSnapshot> {
        let code = files.without(STAGED_RECIPE);
        Ok(CodeSnapshot {
            source: CodeSource::Upload.as_str().to_string(),
            repo_root: Some(repo_root.display().to_string()),
            digest: Some(code.package_uri()?),
            files: Some(code.file_count()),
            bytes: Some(code.total_bytes()),
            path: None,
        })
    }

    /// What a launch of `cfg` would upload from `repo_root` now (blocking: reads every
    /// file the upload paths take).
    pub fn upload_from(cfg: &LoadedConfig, repo_root: &Path) -> Result<CodeSnapshot> {
        let root = absolute(repo_root);
        let files = match &cfg.infra.launch.ray_upload_paths {
            Some(paths) => UploadSet::from_include_paths(&root, paths)?,
            None => UploadSet::from_include_paths(&root, DEFAULT_UPLOAD_PATHS)?,
        };
        CodeSnapshot::uploaded(&files, &root)
    }

    /// Code that is already on the pods (the image's, or a shared mount).
    pub fn on_pods(cfg: &LoadedConfig) -> CodeSnapshot {
        let launch = &cfg.infra.launch;
        CodeSnapshot {
            source: launch.code_source.as_str().to_string(),
            repo_root: None,
            digest: None,
            files: None,
            bytes: None,
            path: launch.code_path.clone(),
        }
    }
}

/// A run's launch, as `launch.json` holds it. Field names are the `nrl diff -o json`
/// vocabulary too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchSnapshot {
    pub version: u32,
    pub recipe_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra_path: Option<String>,
    #[serde(default)]
    pub overrides: Vec<String>,
    /// The recipe with every interpolation resolved (what the training script sees); the
    /// merged tree when an interpolation cannot be resolved here.
    pub recipe: Json,
    /// The validated infra, resolved.
    pub infra: Json,
    /// The objects `nrl check` renders for the infra (RayClusters, DRA objects,
    /// Deployments).
    #[serde(default)]
    pub manifests: Vec<Json>,
    /// For every leaf key (`infra.` in front of infra keys): the layer that set it.
    #[serde(default)]
    pub decided_by: BTreeMap<String, Decided>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<CodeSnapshot>,
}

/// A snapshot with the two files that make it loadable again.
#[derive(Debug, Clone)]
pub struct Captured {
    pub snapshot: LaunchSnapshot,
    /// The recipe's file name (`grpo_math_1B.yaml`).
    pub recipe_name: String,
    pub recipe_yaml: String,
    pub infra_yaml: String,
}

/// The snapshot of `cfg` as it is launched now (`recipe_path` and `overrides` as given).
/// Pure: nothing is read or written.
pub fn capture(
    cfg: &LoadedConfig,
    infra_path: Option<&Path>,
    overrides: &[String],
    code: Option<CodeSnapshot>,
) -> Result<Captured> {
    let recipe = match cfg.resolved_recipe() {
        Ok(resolved) => resolved.to_json(),
        Err(_) => cfg.recipe.to_json(),
    };
    let manifests = crate::render::check_manifests(&cfg.infra)
        .map(|docs| docs.iter().map(|d| d.to_json()).collect())
        .unwrap_or_default();
    let snapshot = LaunchSnapshot {
        version: 1,
        recipe_path: cfg.recipe_path.display().to_string(),
        infra_path: infra_path.map(|p| absolute(p).display().to_string()),
        overrides: overrides.to_vec(),
        recipe,
        infra: cfg.infra.source.to_json(),
        manifests,
        decided_by: decided_by(cfg),
        code,
    };
    let recipe_name = cfg
        .recipe_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "recipe.yaml".into());
    Ok(Captured {
        snapshot,
        recipe_name,
        recipe_yaml: emit::to_yaml(&cfg.recipe),
        infra_yaml: emit::to_yaml(&cfg.infra_merged),
    })
}

impl Captured {
    /// Write `<run_dir>/.nrl/{launch.json,recipe.yaml,infra.yaml}` (blocking file I/O).
    pub fn save(&self, run_dir: &Path) -> Result<()> {
        let dir = run_dir.join(SNAPSHOT_DIR);
        let write_error = |path: &Path, e: &dyn std::fmt::Display| {
            Diag::new(
                CODE_SNAPSHOT,
                format!("cannot write the launch snapshot {}: {e}", path.display()),
            )
            .help("check that the run directory is writable")
        };
        let recipe_dir = dir.join(RECIPE_DIR);
        std::fs::create_dir_all(&recipe_dir).map_err(|e| write_error(&recipe_dir, &e))?;
        let mut json =
            serde_json::to_vec_pretty(&self.snapshot).map_err(|e| write_error(&dir, &e))?;
        json.push(b'\n');
        for (path, bytes) in [
            (dir.join(LAUNCH_JSON), json.as_slice()),
            (
                recipe_dir.join(&self.recipe_name),
                self.recipe_yaml.as_bytes(),
            ),
            (dir.join(INFRA_YAML), self.infra_yaml.as_bytes()),
        ] {
            std::fs::write(&path, bytes).map_err(|e| write_error(&path, &e))?;
        }
        Ok(())
    }
}

/// Capture and save the snapshot of a staged run (`nrl run --local` / `--ray-address`)
/// in its run directory (blocking file I/O).
pub fn save_snapshot(cfg: &LoadedConfig, ctx: &RunContext, staged: &StagedRun) -> Result<()> {
    let code = CodeSnapshot::uploaded(&staged.files, &staged.repo_root)?;
    capture(cfg, ctx.infra.as_deref(), &ctx.overrides, Some(code))?.save(&ctx.run_dir())
}

/// Capture and save the snapshot of a run on Kubernetes, off the async runtime's worker
/// threads (hashing an upload reads every file). `upload`: the staged working_dir, when
/// nrl uploads the code. A failure is a warning on `progress`, never the run's failure.
pub async fn save_snapshot_of_k8s_run(
    cfg: &LoadedConfig,
    ctx: &RunContext,
    upload: Option<&UploadSet>,
    progress: &mut dyn Output,
) {
    let (cfg, ctx, upload) = (cfg.clone(), ctx.clone(), upload.cloned());
    let saved = tokio::task::spawn_blocking(move || -> Result<()> {
        let code = match &upload {
            Some(files) => CodeSnapshot::uploaded(files, &absolute(&ctx.repo_root))?,
            None => CodeSnapshot::on_pods(&cfg),
        };
        capture(&cfg, ctx.infra.as_deref(), &ctx.overrides, Some(code))?.save(&ctx.run_dir())
    })
    .await;
    match saved {
        Ok(Ok(())) => {}
        Ok(Err(e)) => progress.status(&format!("warning: {}", e.message)),
        Err(e) => progress.status(&format!(
            "warning: the launch snapshot was not written: {e}"
        )),
    }
}

/// The snapshot directory of a recorded run.
pub fn snapshot_dir(record: &RunRecord) -> Result<PathBuf> {
    let missing = || {
        Diag::new(
            CODE_SNAPSHOT,
            format!("run `{}` has no launch snapshot on this machine", record.id),
        )
        .help(
            "it was launched from another machine or by an nrl older than `nrl diff`; \
             compare against its recipe instead: nrl diff RUN RECIPE --infra FILE",
        )
    };
    let dir = record
        .run_dir
        .as_deref()
        .map(|d| Path::new(d).join(SNAPSHOT_DIR))
        .ok_or_else(missing)?;
    if !dir.join(LAUNCH_JSON).is_file() {
        return Err(missing());
    }
    Ok(dir)
}

/// Read a recorded run's snapshot (blocking file I/O).
pub fn load_snapshot(record: &RunRecord) -> Result<LaunchSnapshot> {
    let path = snapshot_dir(record)?.join(LAUNCH_JSON);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Diag::new(
            CODE_SNAPSHOT,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        Diag::new(
            CODE_SNAPSHOT,
            format!("{} is not a launch snapshot: {e}", path.display()),
        )
        .help("it was written by another nrl version or edited; relaunch from the recipe")
    })
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// What `nrl run --from RUN_ID` launches: the recorded run's merged recipe and infra (from
/// its snapshot), and where its code is.
#[derive(Debug, Clone)]
pub struct Relaunch {
    pub from: String,
    pub recipe: PathBuf,
    pub infra: PathBuf,
    /// Where the upload paths are read: the run directory of a local run (it holds the
    /// staged tree), else the checkout the run was staged from; `None` when the run's
    /// code was on its pods (image, lustre).
    pub repo_root: Option<PathBuf>,
    pub snapshot: LaunchSnapshot,
}

/// Find what run `id` was launched with (blocking file I/O).
pub fn relaunch(store: &RunStore, id: &str) -> Result<Relaunch> {
    let record = store.load(id)?;
    let dir = snapshot_dir(&record)?;
    let snapshot = load_snapshot(&record)?;
    let recipe_dir = dir.join(RECIPE_DIR);
    let recipe = std::fs::read_dir(&recipe_dir)
        .ok()
        .and_then(|mut entries| entries.find_map(|e| e.ok().map(|e| e.path())))
        .ok_or_else(|| {
            Diag::new(
                CODE_SNAPSHOT,
                format!(
                    "the launch snapshot of run `{id}` has no recipe in {}",
                    recipe_dir.display()
                ),
            )
            .help("relaunch from the recipe itself")
        })?;
    let uploaded = snapshot
        .code
        .as_ref()
        .is_some_and(|c| c.source == CodeSource::Upload.as_str());
    let repo_root = if !uploaded {
        None
    } else if record.kind == RunKind::Local {
        record.run_dir.as_ref().map(PathBuf::from)
    } else {
        snapshot
            .code
            .as_ref()
            .and_then(|c| c.repo_root.as_ref())
            .map(PathBuf::from)
    };
    Ok(Relaunch {
        from: id.to_string(),
        recipe,
        infra: dir.join(INFRA_YAML),
        repo_root,
        snapshot,
    })
}

/// Error code of a relaunch whose code is not what the run staged.
pub const CODE_CHANGED: &str = "nrl::run::from_code_changed";

impl Relaunch {
    /// Refuse a relaunch that would upload other code than the run staged: the files
    /// `cfg`'s upload paths take from `repo_root` must hash as the run's did (Ray's
    /// package hash). Nothing to check when the run's code was on its pods.
    pub fn verify_code(&self, cfg: &LoadedConfig, repo_root: &Path) -> Result<()> {
        let Some(CodeSnapshot {
            digest: Some(want),
            files: want_files,
            ..
        }) = &self.snapshot.code
        else {
            return Ok(());
        };
        let root = absolute(repo_root);
        let now = CodeSnapshot::upload_from(cfg, &root)?;
        if now.digest.as_ref() == Some(want) {
            return Ok(());
        }
        Err(Diag::new(
            CODE_CHANGED,
            format!(
                "the code under {} is not what run `{}` staged",
                root.display(),
                self.from
            ),
        )
        .note(format!(
            "run {}: {want} ({} files)",
            self.from,
            want_files.unwrap_or_default()
        ))
        .note(format!(
            "now: {} ({} files)",
            now.digest.unwrap_or_default(),
            now.files.unwrap_or_default()
        ))
        .help(
            "pass --repo-root with the checkout the run was staged from, or launch the \
             recipe itself to run the code as it is now",
        ))
    }
}
