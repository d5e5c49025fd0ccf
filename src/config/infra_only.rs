//! Loading the infra layers without a recipe, for commands that act on the cluster but run
//! no training (`nrl dev …`): shipped defaults < user defaults < optional `--infra` file <
//! `infra.*` overrides < values of command-line flags (`-n`, `--image`).
//!
//! Interpolation, namespace inference and the typed schema are the same as for
//! [`load`](super::layers::load). One difference: the schema requires `image`, but a
//! command such as `nrl dev stop` needs none, so a missing `image` is filled from
//! `dev.image` when that is set, and otherwise with [`IMAGE_NOT_CONFIGURED`] and
//! [`LoadedInfra::image_configured`] `false`; a command that does need an image must check.

use std::path::PathBuf;
use std::sync::Arc;

use super::defaults::load_with_defaults;
use super::env::Env;
use super::interp;
use super::layers::{fill_namespace, merge_infra_layers, pick_infra};
use super::namespace::{InferredNamespace, NamespaceOrigin};
use super::node::{Node, Value};
use super::overrides::{self, Op, Override, Side};
use super::schema::{self, InfraConfig};
use super::source::{SourceKind, Span, add_source};
use crate::diag::{Diag, Result};

/// Stands in for `image` when no layer set it (see the module docs). Not a usable image
/// reference on purpose: if it ever reached a manifest, the failure would name it.
pub const IMAGE_NOT_CONFIGURED: &str = "nrl.invalid/image-not-configured";

/// What to load.
#[derive(Clone)]
pub struct InfraRequest {
    /// An infra file (`--infra FILE`); its `defaults:` chain is followed.
    pub infra: Option<PathBuf>,
    /// Hydra overrides; every one must start with `infra.` (there is no recipe).
    pub overrides: Vec<String>,
    /// Values of command-line flags, applied last.
    pub flags: Vec<FlagValue>,
    pub env: Arc<dyn Env>,
    /// What a missing or falsy `namespace` becomes: resolved with the cluster context
    /// (`k8s::context::inferred_namespace`) by the caller, which connects with the same
    /// resolution. Defaults to `default`.
    pub namespace_fallback: InferredNamespace,
}

impl InfraRequest {
    pub fn new(env: Arc<dyn Env>) -> InfraRequest {
        InfraRequest {
            infra: None,
            overrides: Vec::new(),
            flags: Vec::new(),
            env,
            namespace_fallback: InferredNamespace::default(),
        }
    }

    /// Add a flag's value, if it was given: `flag("--image", "dev.image", Some(img))`.
    pub fn flag(mut self, flag: &str, key: &str, value: Option<&str>) -> InfraRequest {
        if let Some(v) = value {
            self.flags.push(FlagValue {
                flag: flag.to_string(),
                key: key.to_string(),
                value: v.to_string(),
            });
        }
        self
    }
}

/// A command-line flag that sets an infra key (`-n team-a` sets `namespace`). The value
/// is taken literally, not parsed as an override, and `--explain` names the flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagValue {
    /// The flag as the user knows it (`--image`).
    pub flag: String,
    /// Dotted infra key without `infra.` (`dev.image`).
    pub key: String,
    pub value: String,
}

/// The loaded infra.
#[derive(Clone)]
pub struct LoadedInfra {
    /// The validated infra (its `source` is the resolved infra tree).
    pub infra: InfraConfig,
    /// Merged infra layers before interpolation.
    pub infra_merged: Node,
    /// Whether any layer set `image` (or `dev.image`).
    pub image_configured: bool,
    /// Set when `namespace` was not configured and had to be inferred.
    pub namespace_inferred: Option<NamespaceOrigin>,
    pub env: Arc<dyn Env>,
}

impl std::fmt::Debug for LoadedInfra {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedInfra")
            .field("namespace", &self.infra.namespace)
            .field("image_configured", &self.image_configured)
            .finish_non_exhaustive()
    }
}

/// Load and validate the infra layers alone.
pub fn load_infra_only(req: &InfraRequest) -> Result<LoadedInfra> {
    let env = req.env.as_ref();
    let (recipe_ovs, mut infra_ovs) = overrides::partition(&req.overrides)?;
    if let Some(first) = recipe_ovs.first() {
        let key = first.dotted_key();
        return Err(Diag::new(
            "nrl::config::no_recipe",
            format!(
                "override `{}` is for a recipe, but this command takes none",
                first.text
            ),
        )
        .label(Some(first.key_span), "not an `infra.` key")
        .help(format!(
            "only infra settings apply here: write `infra.{key}=…` if you meant the infra key"
        )));
    }
    infra_ovs.extend(req.flags.iter().map(flag_override));

    let layer = match &req.infra {
        Some(path) => load_with_defaults(path, SourceKind::Infra, &pick_infra)?.merged,
        None => Node::map(),
    };
    let merged = merge_infra_layers(layer, &infra_ovs, env)?.merged;
    let mut resolved = interp::resolve(&merged, env)?;
    let namespace_inferred = fill_namespace(&mut resolved, &req.namespace_fallback);
    let image_configured = fill_image(&mut resolved);
    let infra = schema::validate(&resolved)?;
    Ok(LoadedInfra {
        infra,
        infra_merged: merged,
        image_configured,
        namespace_inferred,
        env: req.env.clone(),
    })
}

/// An override that sets `flag.key` to the flag's literal value. The text is registered as
/// a source so that diagnostics and `--explain` point at the flag.
fn flag_override(flag: &FlagValue) -> Override {
    let text = format!("{} {}", flag.flag, flag.value);
    let src = add_source(
        format!("<{}>", flag.flag),
        None,
        text.clone(),
        SourceKind::Override,
    );
    let key_span = Span::new(src, 0, flag.flag.len());
    let value_span = Span::new(src, flag.flag.len() + 1, text.len());
    let path: Vec<String> = flag.key.split('.').map(str::to_string).collect();
    Override {
        op: Op::Set,
        segment_spans: vec![key_span; path.len()],
        path,
        value: Some(Node::spanned(
            Value::Str(flag.value.clone()),
            Some(value_span),
        )),
        extend_list: false,
        text,
        index: 0,
        side: Side::Infra,
        span: Span::new(src, 0, flag.flag.len() + 1 + flag.value.len()),
        key_span,
    }
}

/// Fill an unset `image` (see the module docs); returns whether one was configured.
fn fill_image(resolved: &mut Node) -> bool {
    let set = |n: Option<&Node>| {
        n.and_then(Node::as_str)
            .is_some_and(|s| !s.trim().is_empty())
    };
    if set(resolved.get("image")) {
        return true;
    }
    let dev_image = resolved
        .get_path("dev.image")
        .filter(|n| set(Some(n)))
        .cloned();
    let Some(map) = resolved.as_map_mut() else {
        return false;
    };
    match dev_image {
        Some(img) => {
            map.insert("image".to_string(), img);
            true
        }
        None => {
            map.insert("image".to_string(), Node::str(IMAGE_NOT_CONFIGURED));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::env::MapEnv;

    fn env_with_defaults(dir: &std::path::Path, defaults: &str) -> Arc<MapEnv> {
        let path = dir.join("defaults.yaml");
        std::fs::write(&path, defaults).unwrap();
        Arc::new(MapEnv::new([
            ("NRL_DEFAULTS", path.to_str().unwrap()),
            ("HOME", "/nonexistent/nrl-test-home"),
            ("NRL_USER", "alice"),
        ]))
    }

    #[test]
    fn user_defaults_then_infra_file_then_overrides_then_flags() {
        let d = tempfile::tempdir().unwrap();
        let env = env_with_defaults(
            d.path(),
            "infra:\n  namespace: from-defaults\n  image: img:defaults\n  labels: {team: a}\n",
        );
        let infra_file = d.path().join("infra.yaml");
        std::fs::write(&infra_file, "namespace: from-file\nlabels: {team: b}\n").unwrap();
        let mut req = InfraRequest::new(env)
            .flag("-n", "namespace", Some("from-flag"))
            .flag("--image", "image", None);
        req.infra = Some(infra_file);
        req.overrides = vec!["infra.labels.team=c".into()];
        let loaded = load_infra_only(&req).unwrap();
        assert_eq!(loaded.infra.namespace, "from-flag");
        assert_eq!(loaded.infra.image, "img:defaults");
        assert_eq!(
            loaded.infra.labels.get("team").map(String::as_str),
            Some("c")
        );
        assert!(loaded.image_configured);
        assert!(loaded.namespace_inferred.is_none());
        // The flag's value remembers where it came from.
        let span = loaded
            .infra
            .source
            .get("namespace")
            .and_then(|n| n.span)
            .unwrap();
        assert_eq!(span.text(), "from-flag");
        assert_eq!(span.file().name, "<-n>");
    }

    #[test]
    fn nothing_configured_still_loads_with_an_inferred_namespace() {
        let env = Arc::new(MapEnv::new([("HOME", "/nonexistent/nrl-test-home")]));
        let loaded = load_infra_only(&InfraRequest::new(env)).unwrap();
        assert_eq!(loaded.infra.namespace, "default");
        assert!(loaded.namespace_inferred.is_some());
        assert!(!loaded.image_configured);
        assert_eq!(loaded.infra.image, IMAGE_NOT_CONFIGURED);
    }

    #[test]
    fn flag_values_are_literal() {
        let env = Arc::new(MapEnv::new([("HOME", "/nonexistent/nrl-test-home")]));
        let req = InfraRequest::new(env).flag("--image", "image", Some("nvcr.io/a/b:c,d [x]"));
        let loaded = load_infra_only(&req).unwrap();
        assert_eq!(loaded.infra.image, "nvcr.io/a/b:c,d [x]");
        assert!(loaded.image_configured);
    }

    #[test]
    fn recipe_overrides_are_refused() {
        let env = Arc::new(MapEnv::new([("HOME", "/nonexistent/nrl-test-home")]));
        let mut req = InfraRequest::new(env);
        req.overrides = vec!["policy.lr=1".into()];
        let e = load_infra_only(&req).unwrap_err();
        assert_eq!(e.code, "nrl::config::no_recipe");
        assert!(e.help.as_deref().unwrap_or("").contains("infra.policy.lr"));
    }

    #[test]
    fn schema_errors_are_reported_as_usual() {
        let d = tempfile::tempdir().unwrap();
        let env = env_with_defaults(d.path(), "infra:\n  imagee: x\n");
        let e = load_infra_only(&InfraRequest::new(env)).unwrap_err();
        assert_eq!(e.code, "nrl::config::unknown_key");
    }
}
