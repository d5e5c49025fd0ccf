//! Staging a run: the files, recipe, entrypoint and environment that every executor runs.
//!
//! The layout is a Ray working_dir's: the upload set (`launch.rayUploadPaths`, or the
//! reference's default list) at the root, with the staged recipe beside it as
//! `nrl_run.yaml`, and `--config X.yaml` in the entrypoint pointed at that file. The
//! local executor writes this tree into the run directory and runs the entrypoint there;
//! a Ray submission ships the same tree as the job's working_dir. One entrypoint works
//! in both.

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use super::rayjob::manifest::{require_entrypoint, staged_recipe_yaml};
use crate::config::layers::LoadedConfig;
use crate::diag::{Diag, Result};
use crate::ray::{DEFAULT_UPLOAD_PATHS, UploadSet};
use crate::render::rayjob::{STAGED_RECIPE, check_env_name, rewrite_config_flag};

/// Environment variables carrying the run id to the entrypoint.
pub const RUN_ID_VARS: &[&str] = &["NRL_RUN_ID", "NRL_K8S_RUN_ID"];

/// A staged run, ready for an executor.
#[derive(Debug, Clone)]
pub struct StagedRun {
    pub run_id: String,
    /// The repo root the upload paths were taken from (absolute).
    pub repo_root: PathBuf,
    /// The files of the run: the upload set plus `nrl_run.yaml` at the root.
    pub files: UploadSet,
    /// The staged recipe (also in `files` as `nrl_run.yaml`).
    pub recipe_yaml: String,
    /// The entrypoint, `--config X.yaml` pointed at `nrl_run.yaml`.
    pub entrypoint: String,
    /// Environment for the entrypoint: the run id variables, then `launch.env` (whose
    /// values win, as in the RayJob preamble).
    pub env: IndexMap<String, String>,
    /// Things the user should know (printed by the command).
    pub warnings: Vec<String>,
}

/// Stage `cfg` as run `run_id`, taking upload paths from `repo_root`.
pub fn stage(cfg: &LoadedConfig, run_id: &str, repo_root: &Path) -> Result<StagedRun> {
    let entrypoint = require_entrypoint(cfg)?;
    let repo_root = std::fs::canonicalize(repo_root)
        .ok()
        .filter(|p| p.is_dir())
        .ok_or_else(|| {
            Diag::new(
                "nrl::run::repo_root",
                format!("repo root `{}` is not a directory", repo_root.display()),
            )
            .help("pass --repo-root DIR (the checkout the upload paths are relative to)")
        })?;

    let launch = &cfg.infra.launch;
    let mut warnings = Vec::new();
    let mut files = match &launch.ray_upload_paths {
        Some(paths) => UploadSet::from_include_paths(&repo_root, paths)?,
        None => UploadSet::from_include_paths(&repo_root, DEFAULT_UPLOAD_PATHS)?,
    };
    if files.is_empty() {
        let which = if launch.ray_upload_paths.is_some() {
            "infra.launch.rayUploadPaths"
        } else {
            "the default upload paths (nemo_rl, examples, …)"
        };
        warnings.push(format!(
            "none of {which} exist under {}; the run gets only {STAGED_RECIPE} \
             (run from the repo checkout or pass --repo-root)",
            repo_root.display()
        ));
    }
    let recipe_yaml = staged_recipe_yaml(cfg);
    files.add_file_contents(STAGED_RECIPE, recipe_yaml.as_bytes())?;

    let (entrypoint, replaced) = rewrite_config_flag(entrypoint, STAGED_RECIPE);
    if replaced.is_empty() && !entrypoint.contains(STAGED_RECIPE) {
        warnings.push(format!(
            "infra.launch.entrypoint has no `--config FILE.yaml`, so recipe overrides reach \
             the run only if it reads {STAGED_RECIPE} itself"
        ));
    }

    let mut env: IndexMap<String, String> = RUN_ID_VARS
        .iter()
        .map(|k| (k.to_string(), run_id.to_string()))
        .collect();
    for (k, v) in &launch.env {
        check_env_name(k)?;
        env.insert(k.clone(), v.clone());
    }

    Ok(StagedRun {
        run_id: run_id.to_string(),
        repo_root,
        files,
        recipe_yaml,
        entrypoint,
        env,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::MapEnv;
    use crate::config::layers::{LoadRequest, load};
    use std::sync::Arc;

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A repo with a recipe, an infra file, code, and things the upload leaves out.
    fn repo(upload_paths: &str, entrypoint: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "app/recipe.yaml", "grpo:\n  max_num_steps: 3\n");
        write(root, "app/train.py", "print('train')\n");
        write(root, "app/__pycache__/train.cpython-311.pyc", "bytecode");
        write(root, "app/.git/HEAD", "ref\n");
        write(root, "other/big.bin", "not uploaded");
        write(
            root,
            "app/infra.yaml",
            &format!(
                "namespace: ns\nimage: img\nlaunch:\n  rayUploadPaths: {upload_paths}\n  env:\n    \
                 GREETING: hi there\n    NRL_RUN_ID: user-wins\n  entrypoint: {entrypoint}\n"
            ),
        );
        dir
    }

    fn loaded(root: &Path, overrides: &[&str]) -> LoadedConfig {
        let mut req = LoadRequest::new(
            root.join("app/recipe.yaml"),
            Arc::new(MapEnv::new([
                ("NRL_USER", "tester"),
                ("HOME", "/nonexistent"),
            ])),
        );
        req.infra = Some(root.join("app/infra.yaml"));
        req.overrides = overrides.iter().map(|s| s.to_string()).collect();
        load(&req).unwrap()
    }

    #[test]
    fn stages_files_recipe_entrypoint_and_env() {
        let dir = repo("[app]", "python app/train.py --config app/recipe.yaml");
        let cfg = loaded(dir.path(), &["grpo.max_num_steps=2"]);
        let staged = stage(&cfg, "r-1", dir.path()).unwrap();
        let files: Vec<&str> = staged.files.files().map(|(p, _)| p).collect();
        assert_eq!(
            files,
            [
                "app/infra.yaml",
                "app/recipe.yaml",
                "app/train.py",
                "nrl_run.yaml"
            ]
        );
        assert!(
            staged.recipe_yaml.contains("max_num_steps: 2"),
            "{}",
            staged.recipe_yaml
        );
        assert_eq!(
            staged.entrypoint,
            "python app/train.py --config nrl_run.yaml"
        );
        assert_eq!(
            staged.env.iter().collect::<Vec<_>>(),
            [
                (&"NRL_RUN_ID".to_string(), &"user-wins".to_string()),
                (&"NRL_K8S_RUN_ID".to_string(), &"r-1".to_string()),
                (&"GREETING".to_string(), &"hi there".to_string()),
            ]
        );
        assert!(staged.warnings.is_empty(), "{:?}", staged.warnings);
        assert_eq!(staged.repo_root, std::fs::canonicalize(dir.path()).unwrap());
    }

    #[test]
    fn warns_when_nothing_is_uploaded_or_no_recipe_is_read() {
        let dir = repo("[missing]", "python -c 'print(1)'");
        let cfg = loaded(dir.path(), &[]);
        let staged = stage(&cfg, "r-1", dir.path()).unwrap();
        assert_eq!(staged.files.file_count(), 1);
        assert_eq!(staged.warnings.len(), 2, "{:?}", staged.warnings);
        assert!(staged.warnings[0].contains("infra.launch.rayUploadPaths"));
        assert!(staged.warnings[1].contains("--config"));
    }

    #[test]
    fn refuses_a_missing_repo_root_and_bad_env_names() {
        let dir = repo("[app]", "python app/train.py --config app/recipe.yaml");
        let cfg = loaded(dir.path(), &[]);
        let err = stage(&cfg, "r-1", &dir.path().join("nope")).unwrap_err();
        assert_eq!(err.code, "nrl::run::repo_root");
        let cfg = loaded(dir.path(), &["infra.launch.env.BAD-NAME=x"]);
        let err = stage(&cfg, "r-1", dir.path()).unwrap_err();
        assert_eq!(err.code, "nrl::run::env_name");
    }
}
