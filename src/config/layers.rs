//! Loading a recipe + infra pair: the four layers of ref-config-render §3.5 with the paths
//! and variables of DESIGN §3.
//!
//! Infra = shipped defaults < user defaults < (`--infra` file | recipe `infra:` block) <
//! `infra.*` overrides, then interpolation, namespace inference and the typed schema.
//! The recipe keeps its interpolations unresolved (they are resolved when it is written
//! out), but its overrides are applied in NeMo-RL's struct mode.
//!
//! Deliberate differences from the reference: each file of an infra `defaults:` chain is
//! unwrapped (`infra:`) before merging, so a bare child of a wrapped parent keeps its
//! keys; `_`-prefixed scratch keys are dropped from user defaults too; user defaults may
//! use `defaults:` inheritance.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::defaults::{
    Inherited, LoadedFile, load_recipe_with_defaults, load_with_defaults, merge_or_diag,
};
use super::env::Env;
use super::interp;
use super::namespace::{InferredNamespace, NamespaceOrigin};
use super::node::{Node, Value};
use super::overrides::{self, Override, Side};
use super::schema::{self, InfraConfig};
use super::source::{SourceKind, add_source};
use super::yaml::parse_mapping;
use crate::diag::{Diag, Result};

pub use super::infra_only::{FlagValue, InfraRequest, LoadedInfra, load_infra_only};

/// The shipped defaults (layer 1), embedded in the binary.
pub const SHIPPED_DEFAULTS: &str = include_str!("shipped_defaults.yaml");

/// What to load.
#[derive(Clone)]
pub struct LoadRequest {
    pub recipe: PathBuf,
    pub infra: Option<PathBuf>,
    pub overrides: Vec<String>,
    pub env: Arc<dyn Env>,
    /// What a missing or falsy `namespace` becomes: resolved with the cluster context
    /// (`k8s::context::inferred_namespace`) by the caller, which connects with the same
    /// resolution. Defaults to `default`.
    pub namespace_fallback: InferredNamespace,
}

impl LoadRequest {
    pub fn new(recipe: impl Into<PathBuf>, env: Arc<dyn Env>) -> LoadRequest {
        LoadRequest {
            recipe: recipe.into(),
            infra: None,
            overrides: Vec::new(),
            env,
            namespace_fallback: InferredNamespace::default(),
        }
    }
}

/// Where the infra layer (layer 3) came from.
#[derive(Debug, Clone)]
pub enum InfraSource {
    File(Vec<LoadedFile>),
    RecipeBlock(Option<Node>),
}

/// Every input that contributed, kept for `--explain` and for scripts.
#[derive(Debug, Clone)]
pub struct Layers {
    pub shipped: Node,
    pub user: Vec<LoadedFile>,
    pub infra: InfraSource,
    pub recipe_files: Vec<LoadedFile>,
    pub recipe_overrides: Vec<Override>,
    pub infra_overrides: Vec<Override>,
}

/// A loaded recipe + infra pair.
#[derive(Clone)]
pub struct LoadedConfig {
    /// Absolute, symlink-resolved recipe path.
    pub recipe_path: PathBuf,
    /// Merged recipe, overrides applied, `infra` removed, interpolations unresolved.
    pub recipe: Node,
    /// Merged infra layers before interpolation.
    pub infra_merged: Node,
    /// The validated infra (its `source` is the resolved infra tree).
    pub infra: InfraConfig,
    pub layers: Layers,
    /// Set when `namespace` was not configured and had to be inferred.
    pub namespace_inferred: Option<NamespaceOrigin>,
    pub env: Arc<dyn Env>,
}

impl std::fmt::Debug for LoadedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedConfig")
            .field("recipe_path", &self.recipe_path)
            .finish_non_exhaustive()
    }
}

impl LoadedConfig {
    /// Every file this config was loaded from: the recipe and its `defaults:` chain, the
    /// infra file and its chain, the user defaults.
    pub fn input_files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = vec![self.recipe_path.clone()];
        files.extend(self.layers.recipe_files.iter().map(|f| f.path.clone()));
        if let InfraSource::File(infra) = &self.layers.infra {
            files.extend(infra.iter().map(|f| f.path.clone()));
        }
        files.extend(self.layers.user.iter().map(|f| f.path.clone()));
        files
    }

    /// The recipe with every interpolation resolved (what the training script sees).
    pub fn resolved_recipe(&self) -> Result<Node> {
        interp::resolve(&self.recipe, self.env.as_ref())
    }
}

/// Load and validate a recipe + infra pair.
pub fn load(req: &LoadRequest) -> Result<LoadedConfig> {
    let env = req.env.as_ref();
    let (recipe_ovs, infra_ovs) = overrides::partition(&req.overrides)?;

    let (recipe_path, mut recipe, recipe_files) = load_recipe_tree(&req.recipe, env)?;

    // Layer 3: exactly one of --infra or the recipe's `infra:` block.
    let recipe_infra = recipe.as_map_mut().and_then(|m| m.shift_remove("infra"));
    let recipe_infra = recipe_infra.filter(|n| !n.is_missing());
    let (infra_layer, infra_source) = match (&req.infra, recipe_infra) {
        (Some(path), Some(block)) => {
            return Err(Diag::new(
                "nrl::config::infra_twice",
                "infra config supplied via --infra but the recipe also contains an `infra:` key — choose one or the other",
            )
            .label(block.key_span.or(block.span), "the recipe's `infra:` block")
            .help(format!(
                "drop `--infra {}` to use the recipe's block, or move the block into that file",
                path.display()
            )));
        }
        (Some(path), None) => {
            let inh = load_with_defaults(path, SourceKind::Infra, &pick_infra)?;
            (inh.merged, InfraSource::File(inh.files))
        }
        (None, Some(block)) => {
            if block.as_map().is_none() {
                return Err(Diag::new(
                    "nrl::config::infra_not_mapping",
                    "recipe `infra:` key must be a mapping",
                )
                .label(
                    block.span.or(block.key_span),
                    format!("this is a {}", block.type_name()),
                )
                .help(
                    "write the infra settings as a mapping under `infra:`, or pass --infra FILE",
                ));
            }
            let block = drop_scratch_keys(block);
            (block.clone(), InfraSource::RecipeBlock(Some(block)))
        }
        (None, None) => (Node::map(), InfraSource::RecipeBlock(None)),
    };

    overrides::apply_all_resolving(&mut recipe, &recipe_ovs, Side::Recipe, env)?;

    let MergedInfra {
        shipped,
        user,
        merged: infra,
    } = merge_infra_layers(infra_layer, &infra_ovs, env)?;

    let mut resolved = interp::resolve(&infra, env)?;
    let namespace_inferred = fill_namespace(&mut resolved, &req.namespace_fallback);
    let validated = schema::validate(&resolved)?;

    Ok(LoadedConfig {
        recipe_path,
        recipe,
        infra_merged: infra,
        infra: validated,
        layers: Layers {
            shipped,
            user,
            infra: infra_source,
            recipe_files,
            recipe_overrides: recipe_ovs,
            infra_overrides: infra_ovs,
        },
        namespace_inferred,
        env: req.env.clone(),
    })
}

/// The recipe and its `defaults:` chain in NeMo-RL's order, syntax-checked: its
/// absolute path, the merged tree (still holding `infra:` if it has one) and the files.
/// [`load`] then applies the recipe-side overrides with [`overrides::apply_all`].
pub fn load_recipe_tree(recipe: &Path, env: &dyn Env) -> Result<(PathBuf, Node, Vec<LoadedFile>)> {
    let recipe_path = std::fs::canonicalize(recipe).map_err(|e| {
        Diag::new(
            "nrl::config::file_not_found",
            format!("cannot read recipe {}: {e}", recipe.display()),
        )
        .help("pass the path of a NeMo-RL recipe YAML")
    })?;
    let Inherited { merged, files } = load_recipe_with_defaults(&recipe_path, env)?;
    interp::check_syntax(&merged)?;
    Ok((recipe_path, merged, files))
}

/// The infra layers merged, overrides applied, interpolations not yet resolved.
pub(crate) struct MergedInfra {
    pub shipped: Node,
    pub user: Vec<LoadedFile>,
    pub merged: Node,
}

/// Layers 1 (shipped) and 2 (user defaults) under `infra_layer` (layer 3), then the
/// infra-side overrides (layer 4). Shared by [`load`] and [`load_infra_only`].
pub(crate) fn merge_infra_layers(
    infra_layer: Node,
    infra_ovs: &[Override],
    env: &dyn Env,
) -> Result<MergedInfra> {
    let shipped_id = add_source(
        "<shipped defaults>",
        None,
        SHIPPED_DEFAULTS,
        SourceKind::Shipped,
    );
    let shipped = pick_infra(
        parse_mapping(shipped_id, "shipped defaults")?,
        Path::new(""),
    )?;
    let user = load_user_defaults(env)?;

    let mut infra = shipped.clone();
    for f in &user {
        merge_or_diag(&mut infra, f.tree.clone())?;
    }
    // Errors about the infra mapping as a whole (a missing `image`) belong to the user's
    // infra file, not to the shipped defaults that happen to be merged first.
    let (layer_span, layer_key_span) = (infra_layer.span, infra_layer.key_span);
    merge_or_diag(&mut infra, infra_layer)?;
    if layer_span.is_some() {
        infra.span = layer_span;
        infra.key_span = layer_key_span;
    }
    overrides::apply_all(&mut infra, infra_ovs, Side::Infra)?;
    interp::check_syntax(&infra)?;
    Ok(MergedInfra {
        shipped,
        user,
        merged: infra,
    })
}

/// Unwrap an `infra:` wrapper if present (siblings are ignored, as the reference does)
/// and drop `_`-prefixed scratch keys.
pub(crate) fn pick_infra(node: Node, _path: &Path) -> Result<Node> {
    let picked = match node.get("infra") {
        Some(inner) => match &inner.value {
            Value::Map(_) => inner.clone(),
            _ => {
                return Err(Diag::new(
                    "nrl::config::infra_not_mapping",
                    "`infra:` must be a mapping",
                )
                .label(inner.span.or(inner.key_span), format!("this is a {}", inner.type_name()))
                .help("put the infra settings under `infra:` as `key: value` lines, or drop the wrapper"));
            }
        },
        None => node,
    };
    Ok(drop_scratch_keys(picked))
}

/// User defaults may hold nrl's own settings next to the infra ones (`doctor:`, read by
/// `nrl doctor`); they are never infra, wrapped under `infra:` or not.
fn pick_user_infra(mut node: Node, path: &Path) -> Result<Node> {
    if node.get("infra").is_none()
        && let Some(m) = node.as_map_mut()
    {
        m.shift_remove("doctor");
    }
    pick_infra(node, path)
}

/// Top-level keys starting with `_` hold YAML anchors only (`_shared:`); never settings.
fn drop_scratch_keys(mut node: Node) -> Node {
    if let Some(m) = node.as_map_mut() {
        m.retain(|k, _| !k.starts_with('_'));
    }
    node
}

/// User defaults, lowest first: the nrl-k8s compatible file, then nrl's own.
fn load_user_defaults(env: &dyn Env) -> Result<Vec<LoadedFile>> {
    let mut out = Vec::new();
    for path in user_defaults_paths(env) {
        if !path.is_file() {
            continue;
        }
        let inh = load_with_defaults(&path, SourceKind::User, &pick_user_infra)?;
        out.push(LoadedFile::alone(path.clone(), inh.merged));
    }
    Ok(out)
}

/// `$NRL_K8S_DEFAULTS` or `~/.config/nrl-k8s/defaults.yaml` (compatibility), then
/// `$NRL_DEFAULTS` or `~/.config/nrl/defaults.yaml`.
pub fn user_defaults_paths(env: &dyn Env) -> Vec<PathBuf> {
    let home_cfg = |app: &str| {
        env.home()
            .map(|h| h.join(".config").join(app).join("defaults.yaml"))
    };
    let pick = |var: &str, app: &str| match env.var(var) {
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => home_cfg(app),
    };
    [
        pick("NRL_K8S_DEFAULTS", "nrl-k8s"),
        pick("NRL_DEFAULTS", "nrl"),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Fill a missing or falsy `namespace` (absent, null, "", 0, false) with the inferred one.
pub(crate) fn fill_namespace(
    resolved: &mut Node,
    fallback: &InferredNamespace,
) -> Option<NamespaceOrigin> {
    let map = resolved.as_map_mut()?;
    let falsy = match map.get("namespace").map(|n| &n.value) {
        None | Some(Value::Null) => true,
        Some(Value::Str(s)) => s.is_empty(),
        Some(Value::Int(0)) | Some(Value::Bool(false)) => true,
        Some(Value::Float(f)) => *f == 0.0,
        _ => false,
    };
    if !falsy {
        return None;
    }
    map.insert(
        "namespace".to_string(),
        Node::str(fallback.namespace.clone()),
    );
    Some(fallback.origin.clone())
}
