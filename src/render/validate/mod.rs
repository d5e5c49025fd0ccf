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
mod places;
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
mod tests_copies;
#[cfg(test)]
mod tests_defaults;
#[cfg(test)]
mod tests_mistakes;
#[cfg(test)]
mod tests_server_rules;
#[cfg(test)]
mod trim;

pub use names::{MAX_RAYCLUSTER_NAME, MAX_RAYJOB_NAME};
pub use places::{compress_places, join_places};

use std::collections::HashMap;

use crate::config::node::Node;
use crate::config::source::Span;
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
/// problems, empty when valid. A problem that one source line causes in several places of
/// the object (the segment copies of a worker group, a YAML alias used twice) is reported
/// once, naming every place.
pub fn validate_object(obj: &Node) -> Vec<Diag> {
    merge_copies(problems(obj))
}

/// [`validate_object`] over several objects, with copies merged across them too (the
/// clusters of several roles, the DRA objects, a Job per benchmark).
pub fn validate_objects<'a>(objs: impl IntoIterator<Item = &'a Node>) -> Vec<Diag> {
    merge_copies(objs.into_iter().flat_map(problems).collect())
}

/// Validate several; returns Err with all problems aggregated (first leads, others
/// related) when any.
// `Diag` is the crate's one error type; its size is a crate-wide decision, not this API's.
pub fn validate_all(objs: &[Node]) -> Result<()> {
    match Diag::aggregate(validate_objects(objs)) {
        None => Ok(()),
        Some(d) => Err(d),
    }
}

/// One problem and the rendered place it was found at, kept apart until every object is
/// checked, so that the copies of one source line can be reported once.
pub(super) struct Problem {
    /// `RayCluster alice-x`; empty for a problem of nrl itself (its bundled schemas).
    pub object: String,
    /// `spec.workerGroupSpecs[0].minReplica`; empty for the object as a whole.
    pub path: String,
    /// The problem without its place (`unknown field`).
    pub diag: Diag,
}

impl Problem {
    /// A problem with no place: its message is all of it.
    pub fn whole(diag: Diag) -> Problem {
        Problem {
            object: String::new(),
            path: String::new(),
            diag,
        }
    }
}

fn problems(obj: &Node) -> Vec<Problem> {
    let object = describe(obj);
    let mut out = schema_problems(obj, &object);
    out.extend(server_rules::check(obj, &object));
    out.extend(
        names::check(obj, &object)
            .into_iter()
            .map(|d| name_problem(d, &object)),
    );
    out
}

/// Name checks write `RayCluster x: name "X" ...`; their place is the object.
fn name_problem(mut diag: Diag, object: &str) -> Problem {
    let rest = diag
        .message
        .strip_prefix(object)
        .and_then(|m| m.strip_prefix(": "))
        .map(str::to_string);
    match rest {
        Some(rest) => {
            diag.message = rest;
            Problem {
                object: object.to_string(),
                path: String::new(),
                diag,
            }
        }
        None => Problem::whole(diag),
    }
}

/// Problems with the same code, at the same source span, with the same message once their
/// place is set aside, are one problem: the first, naming every place.
fn merge_copies(problems: Vec<Problem>) -> Vec<Diag> {
    let mut groups: Vec<(Problem, Vec<(String, String)>)> = Vec::new();
    let mut index: HashMap<(String, Option<Span>, String), usize> = HashMap::new();
    for p in problems {
        let key = (
            p.diag.code.to_string(),
            p.diag.labels.first().map(|l| l.span),
            p.diag.message.clone(),
        );
        let place = (p.object.clone(), p.path.clone());
        match index.get(&key) {
            Some(&i) => groups[i].1.push(place),
            None => {
                index.insert(key, groups.len());
                groups.push((p, vec![place]));
            }
        }
    }
    groups
        .into_iter()
        .map(|(p, mut places)| {
            let mut diag = p.diag;
            let place = places_text(&places);
            if !place.is_empty() {
                diag.message = format!("{place}: {}", diag.message);
            }
            places.sort();
            places.dedup();
            if places.len() > 1 && !diag.labels.is_empty() {
                diag = diag.note(format!(
                    "reported once for the {} rendered places this line reaches",
                    places.len()
                ));
            }
            diag
        })
        .collect()
}

/// `RayCluster x: spec.workerGroupSpecs[0..3].minReplica`; several objects with the same
/// paths share them (`ComputeDomain a, RayCluster b: metadata.namespace`), others are
/// separated by `;`.
fn places_text(places: &[(String, String)]) -> String {
    let mut objects: Vec<(&str, Vec<&str>)> = Vec::new();
    for (object, path) in places {
        let i = match objects.iter().position(|(o, _)| *o == object.as_str()) {
            Some(i) => i,
            None => {
                objects.push((object.as_str(), Vec::new()));
                objects.len() - 1
            }
        };
        if !path.is_empty() {
            objects[i].1.push(path.as_str());
        }
    }
    let mut same_paths: Vec<(Vec<&str>, String)> = Vec::new();
    for (object, paths) in objects {
        let paths = join_places(&paths);
        match same_paths.iter_mut().find(|(_, p)| *p == paths) {
            Some((objs, _)) => objs.push(object),
            None => same_paths.push((vec![object], paths)),
        }
    }
    same_paths
        .iter()
        .map(|(objs, paths)| {
            let who = objects_text(objs);
            match (who.is_empty(), paths.is_empty()) {
                (_, true) => who,
                (true, false) => paths.clone(),
                (false, false) => format!("{who}: {paths}"),
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Objects in one line; a long list (a Job per benchmark) is cut.
fn objects_text(objs: &[&str]) -> String {
    const SHOWN: usize = 3;
    let all = join_places(objs);
    if objs.len() <= SHOWN + 1 || all.len() <= 120 {
        return all;
    }
    format!(
        "{} and {} more objects",
        join_places(&objs[..SHOWN]),
        objs.len() - SHOWN
    )
}

/// Name checks alone: `metadata.name` (DNS-1123 subdomain, or the label rules a kind
/// needs: Service, Job, RayCluster <= 53, RayJob <= 47), namespace, label keys and values,
/// annotation keys.
pub fn check_names(obj: &Node) -> Vec<Diag> {
    names::check(obj, &describe(obj))
}

/// Schema problems alone.
fn schema_problems(obj: &Node, object: &str) -> Vec<Problem> {
    if obj.as_map().is_none() {
        return vec![Problem::whole(
            Diag::new(
                SCHEMA,
                format!(
                    "a rendered object must be a mapping, found {}",
                    obj.type_name()
                ),
            )
            .label(obj.span, "not a mapping"),
        )];
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
        return vec![Problem {
            object: object.to_string(),
            path: String::new(),
            diag: Diag::new(
                UNKNOWN_KIND,
                format!("`{missing}` is missing or not a string"),
            )
            .label(obj.span, format!("no `{missing}`"))
            .help(format!("objects nrl validates: {}", supported_list())),
        }];
    };
    let Some(index) = schema::find_kind(av, k) else {
        return vec![unknown_kind(av, k, api_version, kind, object)];
    };
    let Some(compiled) = schema::compiled(index) else {
        return vec![Problem::whole(bundle_bug(format!(
            "no compiled schema for {av} {k}"
        )))];
    };
    let mut checker = check::Checker::new(compiled, object);
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
) -> Problem {
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
    Problem {
        object: object.to_string(),
        path: String::new(),
        diag: Diag::new(
            UNKNOWN_KIND,
            format!("no bundled schema for apiVersion `{av}` kind `{k}`"),
        )
        .label(span, label)
        .help(help),
    }
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
