//! `nrl check`: load, render and validate without touching a cluster.

use std::path::Path;

use crate::config::layers::{LoadRequest, LoadedConfig, load};
use crate::config::node::Node;
use crate::diag::{Diag, Result};
use crate::render;
use crate::render::meta::map_of;

/// A loaded pair with its rendered manifests.
#[derive(Debug, Clone)]
pub struct Checked {
    pub config: LoadedConfig,
    pub manifests: Vec<Node>,
}

/// Load, render every manifest, and (unless `validate` is off) check them against the
/// bundled schemas and the naming rules.
pub fn check(req: &LoadRequest, validate: bool) -> Result<Checked> {
    let config = load(req)?;
    let manifests = render::check_manifests(&config.infra)?;
    if validate {
        validate_manifests(&manifests)?;
    }
    Ok(Checked { config, manifests })
}

/// Schema validation and name checks of rendered objects; all problems in one report,
/// each once however many rendered copies one source line has.
pub fn validate_manifests(manifests: &[Node]) -> Result<()> {
    // `validate_objects` includes the name checks.
    match Diag::aggregate(render::validate::validate_objects(manifests)) {
        None => Ok(()),
        Some(d) => Err(d),
    }
}

/// The warning a file written by `check -o` (bundle or manifests) needs when it holds
/// secrets in clear: the doctor's literal secrets, even silenced ones, since the file
/// leaves this terminal (shared, attached to a ticket, committed). `None` when it holds
/// none. Values stay in the file, so it can still be applied.
pub fn written_secrets_warning(checked: &Checked, path: &Path) -> Option<String> {
    let found = crate::doctor::literal_secrets(&checked.config, &checked.manifests);
    if found.is_empty() {
        return None;
    }
    let mut places: Vec<String> = found
        .iter()
        .map(|f| {
            f.span
                .map_or_else(|| "generated".to_string(), |s| s.location())
        })
        .collect();
    places.dedup();
    Some(format!(
        "warning: {} holds {} secret value(s) in clear, written literally at {}: anyone who can read the file can read them; keep it private, or store them in a Secret and reference it with `valueFrom.secretKeyRef` ({})",
        path.display(),
        found.len(),
        places.join(", "),
        found[0].code
    ))
}

/// The `check -o` bundle: `{infra, recipe, manifests}` (ref-config-render §5.3).
pub fn bundle(checked: &Checked) -> Result<Node> {
    Ok(map_of(vec![
        ("infra", checked.config.infra.to_node()),
        ("recipe", checked.config.resolved_recipe()?),
        ("manifests", Node::list(checked.manifests.clone())),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_problem_is_reported_once() {
        let obj = map_of(vec![
            ("apiVersion", Node::str("v1")),
            ("kind", Node::str("ConfigMap")),
            (
                "metadata",
                map_of(vec![
                    ("name", Node::str("Bad_Name")),
                    ("namespace", Node::str("ns")),
                ]),
            ),
        ]);
        let err = validate_manifests(&[obj]).unwrap_err();
        assert!(err.related.is_empty(), "{:?}", err.related);
        assert_eq!(err.code, render::validate::NAME);
    }
}
