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
        kube::Error::Api(s) => matches!(s.code, 429 | 500 | 502 | 503 | 504),
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
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
                409 => Diag::api(
                    "nrl::k8s::conflict",
                    format!("conflict while trying to {} {target}: {msg}", a.verb),
                )
                .help("another field manager owns these fields; re-run with --force to take them over"),
                422 if is_immutable_field(&msg) => Diag::api(
                    "nrl::k8s::immutable",
                    format!("the API server refused to change {target}: {msg}"),
                )
                .help(
                    "the field cannot change on an existing object (no offline check can tell): \
                     delete and re-create it (`nrl run --replace`, `--raycluster --recreate`)",
                ),
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

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human(Duration::from_millis(250)), "250ms");
        assert_eq!(human(Duration::from_secs(30)), "30s");
        assert_eq!(human(Duration::from_secs(120)), "2m");
        assert_eq!(human(Duration::from_secs(90)), "1m30s");
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
