//! URL parsing: which resource, namespace, name and subresource a request addresses, and the
//! Kubernetes verb it amounts to (what RBAC, the request log and fault matching see).

use axum::http::Method;

use super::http_util::Query;
use super::resources::{self, ResourceType};

#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    Version,
    Healthz,
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/api/v1` or `/apis/{group}/{version}`
    ResourceList {
        group: String,
        version: String,
    },
    Collection {
        rt: &'static ResourceType,
        namespace: Option<String>,
    },
    Object {
        rt: &'static ResourceType,
        namespace: Option<String>,
        name: String,
        sub: Option<String>,
    },
    NotFound,
}

/// A request, as authorization and the request log see it.
#[derive(Debug, Clone)]
pub struct RouteInfo {
    pub route: Route,
    /// get, list, watch, create, update, patch, delete, deletecollection (empty for
    /// non-resource URLs).
    pub verb: String,
    /// `pods`, or `pods/exec` for a subresource.
    pub resource: Option<String>,
    pub group: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub watch: bool,
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let find = |plural: &str| resources::lookup(group, version, plural);
    match rest {
        [] => Route::ResourceList {
            group: group.into(),
            version: version.into(),
        },
        // /namespaces/{ns}/{plural}[/{name}[/{sub}]] for namespaced types
        ["namespaces", ns, plural, tail @ ..] if find(plural).is_some_and(|r| r.namespaced) => {
            let rt = find(plural).unwrap_or_else(|| unreachable!("checked above"));
            let namespace = Some(ns.to_string());
            match tail {
                [] => Route::Collection { rt, namespace },
                [name] => Route::Object {
                    rt,
                    namespace,
                    name: name.to_string(),
                    sub: None,
                },
                [name, sub] => Route::Object {
                    rt,
                    namespace,
                    name: name.to_string(),
                    sub: Some(sub.to_string()),
                },
                _ => Route::NotFound,
            }
        }
        [plural, tail @ ..] => match find(plural) {
            Some(rt) => match tail {
                [] => Route::Collection {
                    rt,
                    namespace: None,
                },
                [name] if !rt.namespaced => Route::Object {
                    rt,
                    namespace: None,
                    name: name.to_string(),
                    sub: None,
                },
                [name, sub] if !rt.namespaced => Route::Object {
                    rt,
                    namespace: None,
                    name: name.to_string(),
                    sub: Some(sub.to_string()),
                },
                _ => Route::NotFound,
            },
            None => Route::NotFound,
        },
    }
}

pub fn parse_path(path: &str) -> Route {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["healthz"] | ["livez"] | ["readyz"] => Route::Healthz,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["api", "v1", rest @ ..] => resource_route("", "v1", rest),
        ["apis", group, version, rest @ ..]
            if resources::is_served_group_version(group, version) =>
        {
            resource_route(group, version, rest)
        }
        _ => Route::NotFound,
    }
}

pub fn classify(method: &Method, path: &str, query: &Query) -> RouteInfo {
    let route = parse_path(path);
    let watch = query.flag("watch");
    let (verb, resource, group, namespace, name) = match &route {
        Route::Collection { rt, namespace } => {
            let verb = match *method {
                Method::GET if watch => "watch",
                Method::GET => "list",
                Method::POST => "create",
                Method::DELETE => "deletecollection",
                _ => "unknown",
            };
            (
                verb,
                Some(rt.plural.to_string()),
                Some(rt.group.to_string()),
                namespace.clone(),
                None,
            )
        }
        Route::Object {
            rt,
            namespace,
            name,
            sub,
        } => {
            let verb = match (sub.as_deref(), method) {
                (Some("exec" | "portforward"), _) => "create",
                (_, &Method::GET) if watch => "watch",
                (_, &Method::GET) => "get",
                (_, &Method::PUT) => "update",
                (_, &Method::PATCH) => "patch",
                (_, &Method::DELETE) => "delete",
                (_, &Method::POST) => "create",
                _ => "unknown",
            };
            let resource = match sub {
                Some(s) => format!("{}/{}", rt.plural, s),
                None => rt.plural.to_string(),
            };
            (
                verb,
                Some(resource),
                Some(rt.group.to_string()),
                namespace.clone(),
                Some(name.clone()),
            )
        }
        _ => ("", None, None, None, None),
    };
    RouteInfo {
        route,
        verb: verb.to_string(),
        resource,
        group,
        namespace,
        name,
        watch,
    }
}
