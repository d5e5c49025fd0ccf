//! Loading a Gym submit config (ref-nemo-gym-k8s §1) through nrl's configuration engine:
//! YAML with spans, `defaults:` inheritance, Hydra overrides, OmegaConf interpolation
//! (resolved on the submitting machine, as `gym eval submit` does), then the typed model
//! and its rules.
//!
//! Overrides run in create mode ([`Side::Gym`]): `driver.benchmarks.gpqa.run.num_repeats=8`
//! adds the key when it is absent, like the reference's OmegaConf dotlist merge, because
//! `run`/`prepare`/`env` are free-form and a struct mode would force a `+` on every new
//! Gym option. Misspelt keys of the typed sections are still caught, by the model, with a
//! did-you-mean. Unlike the reference, a `+` prefix keeps Hydra's meaning (add; an error if
//! the key is already set) instead of being stripped.

mod dump;
mod env;
mod model;
mod parse;
mod parse_services;
mod rules;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_rules;

pub use dump::to_node;
pub use env::{CODE_SECRET_INTERPOLATION, is_secret_name, is_var_name};
pub use model::*;
pub use parse::gym_json_schema;
pub use rules::{
    CODE_BENCH_NAME, CODE_COLLISION, CODE_GPUS, CODE_IDLE_GPUS, CODE_OTEL, CODE_POLICY,
    CODE_STARTUP, POLICY_KEYS, advertised_billions, startup_estimate, valid_benchmark_name,
};

use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;

use crate::config::defaults::{LoadedFile, load_with_defaults};
use crate::config::env::Env;
use crate::config::interp;
use crate::config::node::Node;
use crate::config::overrides::{self, Override, Side};
use crate::config::source::{SourceKind, add_source};
use crate::config::typed::check::{Cx, Doc, Path, TYPE};
use crate::config::yaml::parse_mapping;
use crate::diag::{Diag, Result};

/// How paths of a Gym config print (`driver.benchmarks.gpqa`) and how messages name it.
pub(crate) const GYM_DOC: Doc = Doc {
    root: "",
    set_in: "the Gym config",
    keys: "Gym config keys",
};

/// What to load.
#[derive(Clone)]
pub struct GymLoadRequest {
    pub config: PathBuf,
    /// Hydra-style overrides (`driver.benchmarks.gpqa.run.num_repeats=8`).
    pub overrides: Vec<String>,
    /// Where `host:` values and `${oc.env:…}` are read from.
    pub env: Arc<dyn Env>,
    /// `-n`: the namespace instead of the config's `compute.<name>.namespace` (applied as
    /// the last override, so the resolved config on the PVC says the same).
    pub namespace: Option<String>,
}

impl GymLoadRequest {
    pub fn new(config: impl Into<PathBuf>, env: Arc<dyn Env>) -> GymLoadRequest {
        GymLoadRequest {
            config: config.into(),
            overrides: Vec::new(),
            env,
            namespace: None,
        }
    }
}

/// A loaded, validated submit config.
#[derive(Debug, Clone)]
pub struct LoadedGym {
    pub config: SubmitConfig,
    /// Advice that does not stop a submit (idle GPUs, a short startup budget).
    pub warnings: Vec<Diag>,
    /// The files of the `defaults:` chain, parents first.
    pub files: Vec<LoadedFile>,
    pub overrides: Vec<Override>,
}

/// Load, resolve and validate a Gym submit config.
pub fn load(req: &GymLoadRequest) -> Result<LoadedGym> {
    let inh = load_with_defaults(&req.config, SourceKind::Gym, &|n: Node, _: &FsPath| Ok(n))?;
    let mut overrides = req.overrides.clone();
    if let Some(ns) = &req.namespace {
        // The single `compute` entry (more than one is refused by the model below).
        let name = inh
            .merged
            .get("compute")
            .and_then(Node::as_map)
            .and_then(|m| m.keys().next().cloned())
            .unwrap_or_else(|| "cluster".into());
        overrides.push(format!("compute.{name}.namespace='{ns}'"));
    }
    finish(inh.merged, inh.files, &overrides, req.env.as_ref())
}

/// Load a config given as text (`name` labels diagnostics); `defaults:` is not followed.
pub fn load_text(name: &str, text: &str, overrides: &[String], env: &dyn Env) -> Result<LoadedGym> {
    let id = add_source(name, None, text, SourceKind::Gym);
    let tree = parse_mapping(id, name)?;
    finish(tree, Vec::new(), overrides, env)
}

fn finish(
    mut tree: Node,
    files: Vec<LoadedFile>,
    overrides: &[String],
    env: &dyn Env,
) -> Result<LoadedGym> {
    interp::check_syntax(&tree)?;
    let mut ovs = Vec::with_capacity(overrides.len());
    let mut errors = Vec::new();
    for (i, text) in overrides.iter().enumerate() {
        match overrides::parse_override(i, text) {
            Ok(mut ov) => {
                ov.side = Side::Gym;
                ovs.push(ov);
            }
            Err(e) => errors.push(e),
        }
    }
    if let Some(e) = Diag::aggregate(errors) {
        return Err(e);
    }
    overrides::apply_all(&mut tree, &ovs, Side::Gym)?;
    interp::check_syntax(&tree)?;
    let guard = env::SecretEnvGuard::for_tree(&tree);
    let resolved = interp::resolve_guarded(&tree, env, Some(&guard))?;
    let (config, warnings) = validate(&resolved, env)?;
    Ok(LoadedGym {
        config,
        warnings,
        files,
        overrides: ovs,
    })
}

/// Validate a resolved config tree: the typed model, then the rules across models.
pub fn validate(resolved: &Node, env: &dyn Env) -> Result<(SubmitConfig, Vec<Diag>)> {
    let mut cx = Cx::default();
    let root = Path::root(&GYM_DOC);
    let mut warnings = Vec::new();
    let cfg = parse::submit(&mut cx, env, resolved, &root);
    let cfg = match cfg {
        Some(mut cfg) if cx.errors.is_empty() => {
            rules::check(&mut cx, &mut cfg, &mut warnings);
            cfg
        }
        _ => return Err(report(cx.errors)),
    };
    if !cx.errors.is_empty() {
        return Err(report(cx.errors));
    }
    Ok((cfg, warnings))
}

fn report(errors: Vec<Diag>) -> Diag {
    let more = errors.len().saturating_sub(1);
    match Diag::aggregate(errors) {
        Some(d) if more > 0 => d.note(format!(
            "{more} more problem{} in the Gym config listed below",
            if more == 1 { " is" } else { "s are" }
        )),
        Some(d) => d,
        None => Diag::new(TYPE, "the Gym config is invalid"),
    }
}
