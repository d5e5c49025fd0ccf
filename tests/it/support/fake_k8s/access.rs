//! Authorization: everything is allowed unless a test denies a (verb, resource, namespace)
//! tuple, for everyone or for one user; denied requests get the real 403 Status, and
//! SelfSubjectAccessReview answers consistently.
//!
//! Impersonation (`Impersonate-User` header): the request is then authorized as that user,
//! after checking that the real user may `impersonate` it (`serviceaccounts` in the
//! account's namespace for `system:serviceaccount:NS:NAME`, else `users`).

use serde_json::{Value, json};

use super::meta::ApiError;
use super::routes::RouteInfo;
use super::state::{State, lock};

/// The user the fake kubeconfig authenticates as.
pub const USER: &str = "fake-user";

/// A denied (verb, resource, namespace); `"*"` matches anything. `resource` may name a
/// subresource (`pods/exec`); a plain resource also covers its subresources.
#[derive(Debug, Clone)]
pub struct Denial {
    /// `None`: every user.
    pub user: Option<String>,
    pub verb: String,
    pub resource: String,
    pub namespace: String,
}

fn covers(d: &Denial, user: &str, verb: &str, resource: &str, namespace: &str) -> bool {
    if d.user.as_deref().is_some_and(|u| u != user) {
        return false;
    }
    let star = |w: &str, got: &str| w == "*" || w == got;
    let res_ok = d.resource == "*"
        || d.resource == resource
        || (!d.resource.contains('/') && resource.split('/').next() == Some(d.resource.as_str()));
    star(&d.verb, verb) && res_ok && star(&d.namespace, namespace)
}

pub fn is_denied(state: &State, user: &str, verb: &str, resource: &str, namespace: &str) -> bool {
    lock(&state.denials)
        .iter()
        .any(|d| covers(d, user, verb, resource, namespace))
}

/// Who a request acts as, put into the request's extensions by the middleware.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectiveUser(pub String);

/// The user a request acts as: the impersonated one when allowed, else a 403.
pub fn effective_user(state: &State, impersonate: Option<&str>) -> Result<String, ApiError> {
    let Some(target) = impersonate else {
        return Ok(USER.to_string());
    };
    let (resource, ns, name) = match target.strip_prefix("system:serviceaccount:") {
        Some(rest) => {
            let (ns, name) = rest.split_once(':').unwrap_or(("", rest));
            ("serviceaccounts", ns, name)
        }
        None => ("users", "", target),
    };
    if !is_denied(state, USER, "impersonate", resource, ns) {
        return Ok(target.to_string());
    }
    Err(ApiError::new(
        403,
        "Forbidden",
        forbidden_message(USER, "impersonate", resource, "", ns, Some(name)),
    ))
}

fn forbidden_message(
    user: &str,
    verb: &str,
    resource: &str,
    group: &str,
    namespace: &str,
    name: Option<&str>,
) -> String {
    let subject = match name {
        Some(n) => format!("{resource} \"{n}\" is forbidden"),
        None => format!("{resource} is forbidden"),
    };
    let scope = if namespace.is_empty() {
        "at the cluster scope".to_string()
    } else {
        format!("in the namespace \"{namespace}\"")
    };
    format!(
        "{subject}: User \"{user}\" cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}"
    )
}

/// The 403 for a request, if a denial covers it.
pub fn check(state: &State, user: &str, info: &RouteInfo) -> Option<ApiError> {
    let resource = info.resource.as_deref()?;
    let ns = info.namespace.as_deref().unwrap_or("");
    if !is_denied(state, user, &info.verb, resource, ns) {
        return None;
    }
    let group = info.group.as_deref().unwrap_or("");
    let mut err = ApiError::new(
        403,
        "Forbidden",
        forbidden_message(user, &info.verb, resource, group, ns, info.name.as_deref()),
    );
    let (base, _) = resource.split_once('/').unwrap_or((resource, ""));
    err.status["details"] =
        json!({"name": info.name.clone().unwrap_or_default(), "group": group, "kind": base});
    Some(err)
}

/// POST selfsubjectaccessreviews: answer for `user` from the denial list, never stored.
pub fn review(state: &State, user: &str, mut body: Value) -> Value {
    let attrs = body
        .pointer("/spec/resourceAttributes")
        .cloned()
        .unwrap_or(Value::Null);
    let s = |k: &str| {
        attrs
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (verb, resource, sub, ns) = (s("verb"), s("resource"), s("subresource"), s("namespace"));
    let full = if sub.is_empty() {
        resource.clone()
    } else {
        format!("{resource}/{sub}")
    };
    let denied = attrs.is_object() && is_denied(state, user, &verb, &full, &ns);
    body["apiVersion"] = json!("authorization.k8s.io/v1");
    body["kind"] = json!("SelfSubjectAccessReview");
    body["metadata"] = json!({"creationTimestamp": null});
    body["status"] = if denied {
        json!({"allowed": false, "denied": true, "reason": format!("fake: {verb} {full} in {ns:?} is denied")})
    } else {
        json!({"allowed": true, "reason": "fake: allowed by default"})
    };
    body
}
