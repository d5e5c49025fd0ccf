//! Offline validation of rendered objects, before anything is applied.
//!
//! The API server silently prunes fields a custom resource's schema does not declare, so a
//! misspelt `nodeSelecter` in a RayCluster would be lost without a word. Every object nrl
//! renders is therefore checked against schemas bundled in the binary (`schemas/` at the
//! repository root: Kubernetes v1.37 strict definitions, the KubeRay RayCluster/RayJob
//! CRDs and the NVIDIA ComputeDomain CRD, trimmed to what these kinds reach), and its names
//! against the rules Kubernetes and KubeRay apply. Each problem is a [`Diag`] with the
//! JSON path, a label at the infra/recipe line that produced the value and a fix.

mod bundle;
mod check;
mod names;
mod path;
mod patterns;
mod schema;
mod server_rules;
mod suggest;

#[cfg(test)]
mod codegen;
#[cfg(test)]
mod compile;
#[cfg(test)]
mod testdata;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_defaults;
#[cfg(test)]
mod tests_mistakes;
#[cfg(test)]
mod tests_server_rules;
#[cfg(test)]
mod trim;

pub use names::{MAX_RAYCLUSTER_NAME, MAX_RAYJOB_NAME};

use crate::config::node::Node;
use crate::diag::{Diag, Result};

/// Code of the error for an object whose apiVersion/kind has no bundled schema.
pub const UNKNOWN_KIND: &str = "nrl::render::unknown_kind";
/// Code of schema problems (unknown field, wrong type, missing field, bad value).
pub const SCHEMA: &str = check::CODE;
/// Code of name problems (object names, label keys and values, annotation keys).
pub const NAME: &str = names::CODE;
/// Code of problems under the API server's rules that the schemas do not express (CRD CEL
/// rules, pod `resourceClaims`).
pub const SERVER_RULE: &str = server_rules::CODE;

/// Validate one rendered object as the API server would: its bundled schema (after the
/// CRD defaults), then the server rules the schema does not express, and its names; all
/// problems, empty when valid.
pub fn validate_object(obj: &Node) -> Vec<Diag> {
    let mut out = schema_problems(obj);
    out.extend(server_rules::check(obj, &describe(obj)));
    out.extend(check_names(obj));
    out
}

/// Validate several; returns Err with all problems aggregated (first leads, others
/// related) when any.
// `Diag` is the crate's one error type; its size is a crate-wide decision, not this API's.
pub fn validate_all(objs: &[Node]) -> Result<()> {
    let all: Vec<Diag> = objs.iter().flat_map(validate_object).collect();
    match Diag::aggregate(all) {
        None => Ok(()),
        Some(d) => Err(d),
    }
}

/// Name checks alone: `metadata.name` (DNS-1123 subdomain, or the label rules a kind
/// needs: Service, Job, RayCluster <= 53, RayJob <= 47), namespace, label keys and values,
/// annotation keys.
pub fn check_names(obj: &Node) -> Vec<Diag> {
    names::check(obj, &describe(obj))
}

/// Schema problems alone.
fn schema_problems(obj: &Node) -> Vec<Diag> {
    let object = describe(obj);
    if obj.as_map().is_none() {
        return vec![
            Diag::new(
                SCHEMA,
                format!(
                    "a rendered object must be a mapping, found {}",
                    obj.type_name()
                ),
            )
            .label(obj.span, "not a mapping"),
        ];
    }
    let api_version = obj.get("apiVersion");
    let kind = obj.get("kind");
    let (Some(av), Some(k)) = (
        api_version.and_then(Node::as_str),
        kind.and_then(Node::as_str),
    ) else {
        let missing = if api_version.and_then(Node::as_str).is_none() {
            "apiVersion"
        } else {
            "kind"
        };
        return vec![
            Diag::new(
                UNKNOWN_KIND,
                format!("{object}: `{missing}` is missing or not a string"),
            )
            .label(obj.span, format!("no `{missing}`"))
            .help(format!("objects nrl validates: {}", supported_list())),
        ];
    };
    let Some(index) = schema::find_kind(av, k) else {
        return vec![unknown_kind(av, k, api_version, kind, &object)];
    };
    let Some(compiled) = schema::compiled(index) else {
        return vec![bundle_bug(format!("no compiled schema for {av} {k}"))];
    };
    let mut checker = check::Checker::new(compiled, &object);
    checker.check(compiled.root, obj, obj.span);
    checker.out
}

/// The embedded schema data is broken: a bug in nrl the tests catch, never bad input.
fn bundle_bug(what: String) -> Diag {
    Diag::new(
        "nrl::render::schema_bundle",
        format!("bundled schemas are broken: {what}"),
    )
    .help("this is a bug in nrl; please report it")
}

fn unknown_kind(
    av: &str,
    k: &str,
    api_version: Option<&Node>,
    kind: Option<&Node>,
    object: &str,
) -> Diag {
    let same_kind = bundle::supported_kinds().find(|(_, sk)| *sk == k);
    let (span, label, help) = match same_kind {
        // Right kind, other version: point at apiVersion.
        Some((sav, _)) => (
            api_version.and_then(|n| n.span),
            "no bundled schema for this version",
            format!("nrl renders and validates `{sav}` {k}; use `apiVersion: {sav}`"),
        ),
        None => {
            let names = bundle::supported_kinds().map(|(_, sk)| sk);
            let help = match suggest::did_you_mean(k, names) {
                Some(best) => format!(
                    "did you mean `{best}`? objects nrl validates: {}",
                    supported_list()
                ),
                None => format!("objects nrl validates: {}", supported_list()),
            };
            (kind.and_then(|n| n.span), "unknown kind", help)
        }
    };
    Diag::new(
        UNKNOWN_KIND,
        format!("{object}: no bundled schema for apiVersion `{av}` kind `{k}`"),
    )
    .label(span, label)
    .help(help)
}

fn supported_list() -> String {
    bundle::supported_kinds()
        .map(|(av, k)| format!("{av} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `RayCluster alice-x`, for messages.
fn describe(obj: &Node) -> String {
    let kind = obj.get("kind").and_then(Node::as_str).unwrap_or("object");
    match obj.get_path("metadata.name").and_then(Node::as_str) {
        Some(name) => format!("{kind} {name}"),
        None => kind.to_string(),
    }
}
