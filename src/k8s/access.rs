//! "Can I …?" through SelfSubjectAccessReview, for the caller or, by impersonation, for
//! another identity (a pod's service account). The API server answers from its real
//! authorizer, so the answer holds for RBAC, webhooks and any other authorizer alike.

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use kube::api::PostParams;
use serde_json::json;

use super::client::K8s;
use super::errors::{Action, status_code, to_diag};
use super::retry::{Backoff, retry};
use crate::diag::Result;

const REVIEWS_PATH: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// One permission: `verb` on `resource` (`pods`, or `pods/exec` for a subresource) of API
/// `group` (`""` for core) in a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Permission {
    pub verb: String,
    pub group: String,
    pub resource: String,
}

impl Permission {
    pub fn new(verb: &str, group: &str, resource: &str) -> Permission {
        Permission {
            verb: verb.to_string(),
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }

    /// `create pods/exec`, `list rayjobs.ray.io`.
    pub fn describe(&self) -> String {
        if self.group.is_empty() {
            format!("{} {}", self.verb, self.resource)
        } else {
            let (base, sub) = match self.resource.split_once('/') {
                Some((b, s)) => (b, format!("/{s}")),
                None => (self.resource.as_str(), String::new()),
            };
            format!("{} {base}.{}{sub}", self.verb, self.group)
        }
    }
}

/// An identity to impersonate: a user name and its groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub user: String,
    pub groups: Vec<String>,
}

impl Subject {
    /// A service account, with the groups the API server gives service accounts.
    pub fn service_account(namespace: &str, name: &str) -> Subject {
        Subject {
            user: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
        }
    }
}

fn review_body(p: &Permission, ns: &str) -> serde_json::Value {
    let (resource, subresource) = p.resource.split_once('/').unwrap_or((&p.resource, ""));
    json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {
            "namespace": ns,
            "verb": p.verb,
            "group": p.group,
            "resource": resource,
            "subresource": subresource,
        }},
    })
}

/// The answer of an access review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub allowed: bool,
    /// The authorizer's reason or evaluation error, when it gave one.
    pub reason: String,
}

impl Access {
    fn of(r: SelfSubjectAccessReview) -> Access {
        let status = r.status.unwrap_or_default();
        let reason = [status.reason, status.evaluation_error]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        Access {
            allowed: status.allowed && !status.denied.unwrap_or(false),
            reason,
        }
    }
}

impl K8s {
    /// May the caller do `verb` on `resource` (`pods/exec` for a subresource) of `group`
    /// (`""` for core) in `namespace`? Side-effect free, so retried like a read.
    pub async fn can_i(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<Access> {
        let p = Permission::new(verb, group, resource);
        let review: SelfSubjectAccessReview = serde_json::from_value(review_body(&p, namespace))
            .map_err(|e| crate::diag::Diag::api("nrl::k8s::decode", e.to_string()))?;
        let api: kube::Api<SelfSubjectAccessReview> = kube::Api::all(self.client.clone());
        let pp = PostParams::default();
        let out = retry(Backoff::default(), || api.create(&pp, &review))
            .await
            .map_err(|e| review_error(e, namespace))?;
        Ok(Access::of(out))
    }

    /// [`can_i`](K8s::can_i) for another identity, by impersonation. `Ok(None)` when the
    /// caller may not impersonate `subject` (then nothing can be said about it).
    pub async fn can_i_as(
        &self,
        subject: &Subject,
        p: &Permission,
        ns: &str,
    ) -> Result<Option<Access>> {
        let body = serde_json::to_vec(&review_body(p, ns))
            .map_err(|e| crate::diag::Diag::api("nrl::k8s::decode", e.to_string()))?;
        let make = || -> std::result::Result<http::Request<Vec<u8>>, kube::Error> {
            let mut req = kube::core::Request::new(REVIEWS_PATH)
                .create(&PostParams::default(), body.clone())
                .map_err(kube::Error::BuildRequest)?;
            let headers = req.headers_mut();
            let value = |s: &str| {
                http::HeaderValue::from_str(s).map_err(|e| kube::Error::HttpError(e.into()))
            };
            headers.insert("Impersonate-User", value(&subject.user)?);
            for g in &subject.groups {
                headers.append("Impersonate-Group", value(g)?);
            }
            Ok(req)
        };
        let result = retry(Backoff::default(), || async {
            let req = make()?;
            self.client.request::<SelfSubjectAccessReview>(req).await
        })
        .await;
        match result {
            Ok(r) => Ok(Some(Access::of(r))),
            Err(e) if status_code(&e) == Some(403) => Ok(None),
            Err(e) => Err(review_error(e, ns)),
        }
    }
}

fn review_error(e: kube::Error, ns: &str) -> crate::diag::Diag {
    to_diag(
        e,
        &Action {
            verb: "create",
            resource: "selfsubjectaccessreviews",
            name: None,
            namespace: Some(ns),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permissions_describe_themselves_like_kubectl() {
        assert_eq!(
            Permission::new("create", "", "pods/exec").describe(),
            "create pods/exec"
        );
        assert_eq!(
            Permission::new("list", "ray.io", "rayjobs").describe(),
            "list rayjobs.ray.io"
        );
        assert_eq!(
            Permission::new("get", "ray.io", "rayjobs/status").describe(),
            "get rayjobs.ray.io/status"
        );
    }

    #[test]
    fn review_body_splits_subresources() {
        let b = review_body(&Permission::new("create", "", "pods/exec"), "ns");
        assert_eq!(b["spec"]["resourceAttributes"]["resource"], "pods");
        assert_eq!(b["spec"]["resourceAttributes"]["subresource"], "exec");
        assert_eq!(b["spec"]["resourceAttributes"]["namespace"], "ns");
    }

    #[test]
    fn service_accounts_carry_their_groups() {
        let s = Subject::service_account("team", "default");
        assert_eq!(s.user, "system:serviceaccount:team:default");
        assert!(
            s.groups
                .contains(&"system:serviceaccounts:team".to_string())
        );
    }
}
