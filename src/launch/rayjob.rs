//! Ephemeral RayJob runs: the manifest (with the staging preamble) and, later, the launch.

use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::config::schema::Role;
use crate::diag::{Diag, Result};
use crate::render::emit;
use crate::render::rayjob::{RayJobOptions, Staging, rayjob, staged_entrypoint};
use crate::render::validate::validate_object;

/// The entrypoint, or the error every launch path gives when it is missing.
pub fn require_entrypoint(cfg: &LoadedConfig) -> Result<&str> {
    match cfg.infra.launch.entrypoint.as_deref() {
        Some(e) if !e.trim().is_empty() => Ok(e),
        _ => Err(Diag::new("nrl::run::entrypoint", "infra.launch.entrypoint is empty")
            .label(cfg.infra.source.get_path("launch").and_then(|l| l.key_span), "no `entrypoint` under `launch:`")
            .help("set infra.launch.entrypoint to the command that starts training, e.g. `python examples/run_grpo.py --config <recipe>`")),
    }
}

/// The staged recipe text that reaches the pod: the merged recipe with overrides applied
/// and interpolations left for NeMo-RL to resolve (so `${oc.env:…}` reads the pod's
/// environment, not the laptop's).
pub fn staged_recipe_yaml(cfg: &LoadedConfig) -> String {
    emit::to_yaml(&cfg.recipe)
}

/// Render the RayJob for `cfg` (training role) with the run's preamble.
pub fn rayjob_manifest(cfg: &LoadedConfig, run_id: &str, opts: &RayJobOptions) -> Result<Node> {
    let entrypoint = require_entrypoint(cfg)?;
    let Some(cluster) = cfg.infra.kuberay.get(Role::Training) else {
        return Err(Diag::new(
            "nrl::run::no_training_cluster",
            format!(
                "infra.kuberay.training is not defined in {}",
                cfg.recipe_path.display()
            ),
        )
        .help("declare a `kuberay.training` block (name + spec) in the infra file"));
    };
    let recipe = staged_recipe_yaml(cfg);
    let staged = staged_entrypoint(
        entrypoint,
        &Staging {
            run_id,
            env: &cfg.infra.launch.env,
            recipe_yaml: Some(&recipe),
        },
    )?;
    let span = cfg
        .infra
        .source
        .get_path("launch.entrypoint")
        .and_then(|n| n.span);
    rayjob(
        &cfg.infra,
        cluster,
        Role::Training,
        Node::str(staged).with_span(span),
        opts,
    )
}

/// [`rayjob_manifest`], then the offline checks every object passes before it is applied
/// (bundled schema, object and label names, the RayJob name limit of
/// [`MAX_RAYJOB_NAME`](crate::render::validate::MAX_RAYJOB_NAME) characters). All
/// problems come back in one diagnostic, each pointing at the infra line (or option)
/// that produced the value.
pub fn validated_rayjob_manifest(
    cfg: &LoadedConfig,
    run_id: &str,
    opts: &RayJobOptions,
) -> Result<Node> {
    let manifest = rayjob_manifest(cfg, run_id, opts)?;
    match Diag::aggregate(validate_object(&manifest)) {
        None => Ok(manifest),
        Some(d) => Err(d),
    }
}
