//! kube errors -> diagnostics that say what was attempted, where, and what to do.

use crate::diag::Diag;

/// What a failed call was doing, for the message.
#[derive(Debug, Clone)]
pub struct Action<'a> {
    /// `get`, `list`, `apply`, `delete`, `watch`, `logs`, `exec`, `portforward`.
    pub verb: &'a str,
    /// Plural resource (`rayclusters`).
    pub resource: &'a str,
    pub name: Option<&'a str>,
    pub namespace: Option<&'a str>,
}

impl Action<'_> {
    fn target(&self) -> String {
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
                    "ask a cluster admin for `{}` on `{}`{} (see `nrl doctor` for a least-privilege Role)",
                    a.verb,
                    a.resource,
                    a.namespace.map(|n| format!(" in namespace `{n}`")).unwrap_or_default()
                )),
                401 => Diag::api(
                    "nrl::k8s::unauthorized",
                    format!("credentials rejected while trying to {} {target}", a.verb),
                )
                .help("refresh your credentials (e.g. `aws sso login`) or check the kubeconfig user"),
                404 => Diag::api("nrl::k8s::not_found", format!("{target} not found"))
                    .help("check the name and namespace (`-n`), or whether the CRD is installed"),
                409 => Diag::api(
                    "nrl::k8s::conflict",
                    format!("conflict while trying to {} {target}: {msg}", a.verb),
                )
                .help("another field manager owns these fields; re-run with --force to take them over"),
                422 | 400 => Diag::api(
                    "nrl::k8s::invalid",
                    format!("the API server rejected {target}: {msg}"),
                )
                .help("the object is invalid for this cluster; `nrl check` validates offline"),
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
