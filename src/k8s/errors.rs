//! kube errors -> diagnostics that say what was attempted, where, and what to do.

use std::time::Duration;

use crate::diag::Diag;

/// What a failed call was doing, for the message. `verb` and `resource` are the RBAC verb
/// and resource the API server checks (`patch` + `rayclusters` for a server-side apply,
/// `get` + `pods/log` for a log stream), so a 403 names exactly what to ask an admin for.
#[derive(Debug, Clone, Copy)]
pub struct Action<'a> {
    /// `get`, `list`, `watch`, `create`, `patch`, `delete`.
    pub verb: &'a str,
    /// Plural resource, with a subresource when there is one (`pods/exec`).
    pub resource: &'a str,
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
}

impl<'a> Action<'a> {
    pub fn new(verb: &'a str, resource: &'a str, namespace: &'a str) -> Action<'a> {
        Action {
            verb,
            resource,
            name: None,
            namespace: Some(namespace),
        }
    }

    pub fn named(mut self, name: &'a str) -> Action<'a> {
        self.name = Some(name);
        self
    }

    /// `rayclusters/rc in namespace `ns``.
    pub fn target(&self) -> String {
        let mut s = self.resource.to_string();
        if let Some(n) = self.name {
            s.push('/');
            s.push_str(n);
        }
        if let Some(ns) = self.namespace {
            s.push_str(&format!(" in namespace `{ns}`"));
        }
        s
    }
}

/// An answer over the size limit of [`super::body_limit`].
pub const CODE_RESPONSE_TOO_LARGE: &str = "nrl::k8s::response_too_large";

/// HTTP status of a kube API error, if it is one.
pub fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Errors worth retrying for idempotent calls: throttling, server errors, transport.
pub fn is_transient(e: &kube::Error) -> bool {
    match e {
        // A server-side apply naming a field the schema does not declare fails the typed
        // conversion with a 500 (apimachinery `managedfields/internal/structuredmerge.go`
        // `Apply`); sending it again cannot help.
        kube::Error::Api(s)
            if s.code == 500 && s.message.contains("failed to create typed patch object") =>
        {
            false
        }
        kube::Error::Api(s) => matches!(s.code, 429 | 500 | 502 | 503 | 504),
        // The same server would send the same oversized answer again.
        e if is_too_large(e) => false,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// The answer went past nrl's size limit ([`super::body_limit`]).
pub fn is_too_large(e: &kube::Error) -> bool {
    super::body_limit::find(e).is_some()
}

pub fn is_not_found(e: &kube::Error) -> bool {
    status_code(e) == Some(404)
}

pub fn is_conflict(e: &kube::Error) -> bool {
    status_code(e) == Some(409)
}

/// The diagnostic for a call that got no answer within its deadline.
pub fn timeout_diag(a: &Action, limit: Duration) -> Diag {
    Diag::api(
        "nrl::k8s::timeout",
        format!(
            "the Kubernetes API did not answer within {} while trying to {} {}",
            human(limit),
            a.verb,
            a.target()
        ),
    )
    .help("the API server may be overloaded or unreachable; check the context (`--context`) and retry, or raise --request-timeout")
}

/// `30s`, `2m`, `1m30s`, `500ms`.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let s = d.as_secs();
    match (s / 60, s % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

/// One field of a server-side apply conflict: `manager` owns `field` (a path such as
/// `.spec.workerGroupSpecs`) and the apply would change its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldConflict {
    pub manager: String,
    /// How the manager wrote it, as the server words it (`using ray.io/v1 at …`), if said.
    pub detail: String,
    pub field: String,
}

/// Code of the diagnostic [`conflict_diag`] builds.
pub const APPLY_CONFLICT: &str = "nrl::k8s::apply_conflict";

/// The field-manager conflicts of a 409 answer to a server-side apply: the causes of type
/// `FieldManagerConflict`, each with the field and `conflict with "<manager>" …` (apimachinery
/// `managedfields/internal/conflict.go` `NewConflictError`). `None` for other 409s (a stale
/// resourceVersion, AlreadyExists).
pub fn apply_conflicts(e: &kube::Error) -> Option<Vec<FieldConflict>> {
    let kube::Error::Api(s) = e else { return None };
    if s.code != 409 {
        return None;
    }
    let causes = s.details.as_ref()?.causes.iter();
    let out: Vec<FieldConflict> = causes
        .filter(|c| c.reason == "FieldManagerConflict")
        .map(|c| {
            let mut parts = c.message.splitn(3, '"');
            let _ = parts.next();
            let manager = parts.next().unwrap_or("").to_string();
            let detail = parts.next().unwrap_or("").trim().to_string();
            FieldConflict {
                manager: if manager.is_empty() {
                    c.message.clone()
                } else {
                    manager
                },
                detail,
                field: c.field.clone(),
            }
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

/// A server-side apply refused because other field managers own fields it would change:
/// names each manager with its fields, and the flag that takes them over.
pub fn conflict_diag(target: &str, conflicts: &[FieldConflict]) -> Diag {
    let mut by_manager: Vec<(&str, Vec<&str>)> = Vec::new();
    for c in conflicts {
        match by_manager.iter_mut().find(|(m, _)| *m == c.manager) {
            Some((_, fields)) => fields.push(&c.field),
            None => by_manager.push((&c.manager, vec![&c.field])),
        }
    }
    let owners: Vec<String> = by_manager
        .iter()
        .map(|(m, fields)| format!("field manager \"{m}\" owns {}", fields.join(", ")))
        .collect();
    let mut d = Diag::api(
        APPLY_CONFLICT,
        format!(
            "server-side apply of {target} conflicts with another writer: {}",
            owners.join("; ")
        ),
    )
    .help(
        "someone (kubectl edit, an autoscaler, a controller) changed these fields after nrl applied them; \
         re-run with --force-conflicts to apply nrl's values and take the fields over, \
         or put the live values into the recipe",
    );
    for c in conflicts.iter().filter(|c| !c.detail.is_empty()) {
        d = d.note(format!("{}: \"{}\" {}", c.field, c.manager, c.detail));
    }
    d
}

/// Convert a kube error into a diagnostic (exit code 3).
pub fn to_diag(e: kube::Error, a: &Action) -> Diag {
    let target = a.target();
    match &e {
        kube::Error::Api(s) => {
            let msg = if s.message.is_empty() {
                s.reason.clone()
            } else {
                s.message.clone()
            };
            match s.code {
                403 => Diag::api(
                    "nrl::k8s::forbidden",
                    format!("forbidden: cannot {} {target}: {msg}", a.verb),
                )
                .help(format!(
                    "ask a cluster admin to allow verb `{}` on resource `{}`{} for your user or service account",
                    a.verb,
                    a.resource,
                    a.namespace.map(|n| format!(" in namespace `{n}`")).unwrap_or_default()
                )),
                401 => Diag::api(
                    "nrl::k8s::unauthorized",
                    format!("credentials rejected while trying to {} {target}", a.verb),
                )
                .help("refresh your credentials (e.g. `aws sso login`) or check the kubeconfig user"),
                404 => Diag::api("nrl::k8s::not_found", format!("{target} not found: {msg}"))
                    .help("check the name and namespace (`-n`), or whether the CRD is installed"),
                409 => match apply_conflicts(&e) {
                    Some(conflicts) => conflict_diag(&target, &conflicts),
                    None => Diag::api(
                        "nrl::k8s::conflict",
                        format!("conflict while trying to {} {target}: {msg}", a.verb),
                    )
                    .help("the object changed or exists already; re-read it and run again"),
                },
                500 if msg.contains("failed to create typed patch object") => Diag::api(
                    "nrl::k8s::invalid",
                    format!("the API server rejected {target}: {msg}"),
                )
                .help("a field is not in the cluster's schema for this kind (an older CRD?); `nrl check` validates offline"),
                422 if is_immutable_field(&msg) => Diag::api(
                    "nrl::k8s::immutable",
                    format!("the API server refused to change {target}: {msg}"),
                )
                .help(
                    "the field cannot change on an existing object (no offline check can tell): \
                     delete and re-create it (`nrl run --replace`, `--raycluster --recreate`)",
                ),
                // A read (a log, an exec, a list) is refused for what it asked, not for an
                // object nrl wrote: no offline check can help there.
                422 | 400 if matches!(a.verb, "get" | "list" | "watch") || a.resource.contains('/') => {
                    Diag::api(
                        "nrl::k8s::bad_request",
                        format!("the API server refused to {} {target}: {msg}", a.verb),
                    )
                    .help("the request does not fit this cluster or object (its container, its state); check it with kubectl")
                }
                422 | 400 => Diag::api(
                    "nrl::k8s::invalid",
                    format!("the API server rejected {target}: {msg}"),
                )
                .help("the object is invalid for this cluster; `nrl check` validates offline"),
                429 => Diag::api(
                    "nrl::k8s::throttled",
                    format!("the API server kept throttling requests to {} {target}", a.verb),
                )
                .help("the control plane is busy; retry in a minute"),
                code if code >= 500 => Diag::api(
                    "nrl::k8s::server",
                    format!("API server error {code} while trying to {} {target}: {msg}", a.verb),
                )
                .help("the control plane is struggling; retry in a few seconds"),
                code => Diag::api(
                    "nrl::k8s::api",
                    format!("API error {code} while trying to {} {target}: {msg}", a.verb),
                ),
            }
        }
        // A websocket upgrade (exec, port-forward) refused before switching protocols: the
        // status code is all kube-rs keeps of the answer.
        kube::Error::UpgradeConnection(kube::client::UpgradeConnectionError::ProtocolSwitch(
            code,
        )) if matches!(code.as_u16(), 401 | 403) => {
            let status = kube::core::Status::failure(
                code.canonical_reason().unwrap_or(""),
                code.canonical_reason().unwrap_or(""),
            )
            .with_code(code.as_u16());
            to_diag(kube::Error::Api(Box::new(status)), a)
        }
        _ if is_too_large(&e) => {
            let detail = super::body_limit::find(&e)
                .map(ToString::to_string)
                .unwrap_or_default();
            Diag::api(
                CODE_RESPONSE_TOO_LARGE,
                format!(
                    "{detail} while trying to {} {target}; stopped reading",
                    a.verb
                ),
            )
            .help(
                "an API server does not send this much for one call: check that the kube \
                 context's server is the API server (not a proxy or another service); for a \
                 huge list, narrow it with a label selector",
            )
        }
        _ => Diag::api(
            "nrl::k8s::unreachable",
            format!(
                "cannot reach the Kubernetes API to {} {target}: {e}",
                a.verb
            ),
        )
        .help(
            "check the kube context (`--context`), VPN or credentials, and that the cluster is up",
        ),
    }
}

/// The API server's wording for a change to a field that is fixed once the object
/// exists: `field is immutable` (apimachinery `validation.ValidateImmutableField`) and,
/// for pods, `pod updates may not change fields other than …` (`ValidatePodUpdate`).
fn is_immutable_field(message: &str) -> bool {
    message.contains("field is immutable") || message.contains("may not change fields")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, message: &str) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure(message, "Invalid")
                .with_code(code)
                .boxed(),
        )
    }

    #[test]
    fn immutable_fields_are_not_sent_to_nrl_check() {
        let a = Action::new("patch", "deployments", "team").named("web");
        let d = to_diag(
            api_error(
                422,
                "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: {}: field is immutable",
            ),
            &a,
        );
        assert_eq!(d.code, "nrl::k8s::immutable");
        assert!(
            d.help.as_deref().unwrap_or("").contains("re-create"),
            "{:?}",
            d.help
        );
        assert!(!d.help.as_deref().unwrap_or("").contains("nrl check"));
        // Other invalid objects still point at the offline check.
        let d = to_diag(api_error(422, "spec.replicas: Invalid value: -1"), &a);
        assert_eq!(d.code, "nrl::k8s::invalid");
    }

    /// A refused read (here a container log kwok could not parse, seen on the testbed) is
    /// not an invalid object: no pointer to `nrl check`.
    #[test]
    fn a_refused_read_is_not_sent_to_nrl_check() {
        let a = Action::new("get", "pods/log", "team").named("p");
        let d = to_diag(api_error(400, "unsupported log format"), &a);
        assert_eq!(d.code, "nrl::k8s::bad_request");
        assert_eq!(
            d.message,
            "the API server refused to get pods/log/p in namespace `team`: unsupported log format"
        );
        assert!(!d.help.as_deref().unwrap_or("").contains("nrl check"));
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_secs(30)), "30s");
        assert_eq!(human(Duration::from_secs(120)), "2m");
        assert_eq!(human(Duration::from_secs(90)), "1m30s");
    }

    #[test]
    fn apply_conflicts_name_managers_fields_and_the_flag() {
        use kube::core::response::{StatusCause, StatusDetails};
        let cause = |who: &str, field: &str| StatusCause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {who}"),
            field: field.into(),
        };
        let status = kube::core::Status {
            code: 409,
            reason: "Conflict".into(),
            message: "Apply failed with 3 conflicts: …".into(),
            details: Some(StatusDetails {
                causes: vec![
                    cause(
                        "\"kubectl-edit\" using ray.io/v1 at 2026-01-02T03:04:05Z",
                        ".spec.workerGroupSpecs",
                    ),
                    cause(
                        "\"kubectl-edit\" using ray.io/v1 at 2026-01-02T03:04:05Z",
                        ".spec.rayVersion",
                    ),
                    cause("\"autoscaler\"", ".metadata.labels.x"),
                ],
                name: "rc".into(),
                group: "ray.io".into(),
                kind: "rayclusters".into(),
                uid: String::new(),
                retry_after_seconds: 0,
            }),
            ..kube::core::Status::default()
        };
        let e = kube::Error::Api(Box::new(status));
        let conflicts = apply_conflicts(&e).expect("field-manager conflicts");
        assert_eq!(conflicts[2].manager, "autoscaler");
        let a = Action::new("patch", "rayclusters", "team").named("rc");
        let d = to_diag(e, &a);
        assert_eq!(d.code, APPLY_CONFLICT);
        insta::assert_snapshot!(d.render(false, 100));
        // A stale-resourceVersion 409 is not an apply conflict.
        let stale = kube::Error::Api(Box::new(
            kube::core::Status::failure("the object has been modified", "Conflict").with_code(409),
        ));
        assert!(apply_conflicts(&stale).is_none());
        assert_eq!(to_diag(stale, &a).code, "nrl::k8s::conflict");
    }

    #[test]
    fn typed_apply_failures_are_not_retried() {
        let s = kube::core::Status::failure(
            "failed to create typed patch object (ray.io/v1, Kind=RayCluster): .spec.x: field not declared in schema",
            "",
        )
        .with_code(500);
        assert!(!is_transient(&kube::Error::Api(Box::new(s))));
        let other = kube::core::Status::failure("etcd timeout", "InternalError").with_code(500);
        assert!(is_transient(&kube::Error::Api(Box::new(other))));
    }

    #[test]
    fn targets_name_resource_and_namespace() {
        let a = Action::new("patch", "rayclusters", "team").named("rc");
        assert_eq!(a.target(), "rayclusters/rc in namespace `team`");
        let d = timeout_diag(&a, Duration::from_secs(2));
        assert!(
            d.message
                .contains("within 2s while trying to patch rayclusters/rc")
        );
    }
}
