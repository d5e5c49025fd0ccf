//! Rules the API server enforces that the OpenAPI schemas do not express, checked where
//! nrl renders the field. They run after the schema walk, as the server runs them after
//! its schema validation (apiextensions-apiserver `customResourceStrategy.Validate`: schema,
//! then CEL; Kubernetes `pkg/apis/core/validation/validation.go` for pods).
//!
//! - The CEL rules (`x-kubernetes-validations`) of the bundled KubeRay CRDs that can fail
//!   on a create, translated into checks. Each check quotes its rule; `CEL_RULES` lists
//!   them and a test compares the list with the CRDs, so a rule a newer CRD adds fails the
//!   test until it is translated here. Transition rules (`oldSelf`) run only on update and
//!   are not checked offline.
//! - Pod rules from Kubernetes' Go validation for the pod specs nrl renders (RayCluster
//!   head and worker templates, the RayJob submitter template, Deployment, Job, Pod): a
//!   `resourceClaims` entry names exactly one source, entry names are unique, and a
//!   container's `resources.claims` name an entry. In a RayCluster the API server does not
//!   run pod validation on the template, so it accepts the object, and then every pod
//!   KubeRay creates from the template is refused.

use super::Problem;
use super::path::{JsonPath, Seg};
use crate::config::node::{Node, Value};
use crate::config::source::Span;
use crate::diag::Diag;

pub(super) const CODE: &str = "nrl::render::server_rule";

/// `managedBy` of a RayCluster spec (also `rayJob.spec.rayClusterSpec`) and of a RayJob spec.
const MANAGED_BY_VALUES: &str = "self in ['ray.io/kuberay-operator', 'kueue.x-k8s.io/multikueue']";
/// RayJob `spec.deletionStrategy`.
const DELETION_NOT_BOTH: &str =
    "!((has(self.onSuccess) || has(self.onFailure)) && has(self.deletionRules))";
const DELETION_EITHER: &str =
    "((has(self.onSuccess) && has(self.onFailure)) || has(self.deletionRules))";
/// RayJob `spec.deletionStrategy.deletionRules[].condition`.
const CONDITION_NOT_BOTH: &str = "!(has(self.jobStatus) && has(self.jobDeploymentStatus))";
const CONDITION_EITHER: &str = "has(self.jobStatus) || has(self.jobDeploymentStatus)";

/// The CEL rules of the bundled CRDs checked here, as the CRDs write them.
#[cfg(test)]
pub(super) const CEL_RULES: &[&str] = &[
    MANAGED_BY_VALUES,
    DELETION_NOT_BOTH,
    DELETION_EITHER,
    CONDITION_NOT_BOTH,
    CONDITION_EITHER,
];

/// Problems of `obj` (described as `object` in messages) under the rules above.
pub(super) fn check<'a>(obj: &'a Node, object: &'a str) -> Vec<Problem> {
    let api_version = obj.get("apiVersion").and_then(Node::as_str);
    let kind = obj.get("kind").and_then(Node::as_str);
    let mut r = Rules {
        object,
        path: JsonPath::default(),
        in_crd: false,
        out: Vec::new(),
    };
    let Some(spec) = obj.get("spec") else {
        return r.out;
    };
    r.path.push(Seg::Key("spec"));
    match (api_version, kind) {
        (Some("ray.io/v1"), Some("RayCluster")) => {
            r.in_crd = true;
            r.cluster_spec(spec, obj.span);
        }
        (Some("ray.io/v1"), Some("RayJob")) => {
            r.in_crd = true;
            r.rayjob_spec(spec, obj.span);
        }
        (Some("apps/v1"), Some("Deployment")) | (Some("batch/v1"), Some("Job")) => {
            r.template(spec, obj.span);
        }
        (Some("v1"), Some("Pod")) => r.pod_spec(spec, obj.span),
        _ => {}
    }
    r.out
}

struct Rules<'a> {
    object: &'a str,
    path: JsonPath<'a>,
    /// Inside a custom resource: its pod templates are validated only when KubeRay
    /// creates the pods.
    in_crd: bool,
    out: Vec<Problem>,
}

/// CEL's `has(self.field)` on a custom resource: the field is there after pruning (a null
/// of a field that is not nullable is pruned; none of these is nullable). Also whether a
/// Go pointer field of a built-in kind is set (a JSON null leaves it nil).
fn has(map: &Node, field: &str) -> bool {
    map.get(field).is_some_and(|v| !v.is_null())
}

impl<'a> Rules<'a> {
    fn at<T>(&mut self, seg: Seg<'a>, f: impl FnOnce(&mut Self) -> T) -> T {
        self.path.push(seg);
        let out = f(self);
        self.path.pop();
        out
    }

    fn report(
        &mut self,
        span: Option<Span>,
        near: Option<Span>,
        what: String,
        label: &str,
        help: String,
    ) {
        let diag = match span {
            Some(sp) => Diag::new(CODE, what).label(Some(sp), label),
            None => Diag::new(CODE, what).label(near, format!("{label} (inside this)")),
        };
        self.out.push(Problem {
            object: self.object.to_string(),
            path: self.path.to_string(),
            diag: diag.help(help),
        });
    }

    /// A failed CEL rule: the CRD's message, the rule quoted in the help.
    fn cel(&mut self, node: &Node, near: Option<Span>, message: &str, rule: &str, fix: &str) {
        let span = node.key_span.or(node.span);
        self.report(
            span,
            near,
            message.to_string(),
            "refused by the CRD's validation rule",
            format!(
                "{fix}\nnote: the KubeRay CRD (ray.io, v1.5.1) rejects the object with this \
                 rule (x-kubernetes-validations): `{rule}`"
            ),
        );
    }

    fn pod_note(&self) -> &'static str {
        if self.in_crd {
            "\nnote: the API server accepts the custom resource (it does not validate pod \
             templates inside it), then refuses every pod KubeRay creates from this template"
        } else {
            ""
        }
    }

    /// A RayCluster spec (or a RayJob's `rayClusterSpec`).
    fn cluster_spec(&mut self, spec: &'a Node, near: Option<Span>) {
        let near = spec.best_span().or(near);
        self.managed_by(spec, near);
        if let Some(head) = spec.get("headGroupSpec") {
            self.at(Seg::Key("headGroupSpec"), |r| {
                r.template(head, near);
            });
        }
        if let Some(groups) = spec.get("workerGroupSpecs").and_then(Node::as_list) {
            self.at(Seg::Key("workerGroupSpecs"), |r| {
                for (i, g) in groups.iter().enumerate() {
                    r.at(Seg::Index(i), |r| r.template(g, near));
                }
            });
        }
    }

    fn rayjob_spec(&mut self, spec: &'a Node, near: Option<Span>) {
        let near = spec.best_span().or(near);
        self.managed_by(spec, near);
        if let Some(cluster) = spec.get("rayClusterSpec") {
            self.at(Seg::Key("rayClusterSpec"), |r| {
                r.cluster_spec(cluster, near)
            });
        }
        if let Some(submitter) = spec.get("submitterPodTemplate") {
            self.at(Seg::Key("submitterPodTemplate"), |r| {
                if let Some(pod) = submitter.get("spec") {
                    r.at(Seg::Key("spec"), |r| r.pod_spec(pod, near));
                }
            });
        }
        if let Some(ds) = spec
            .get("deletionStrategy")
            .filter(|d| d.as_map().is_some())
        {
            self.at(Seg::Key("deletionStrategy"), |r| {
                r.deletion_strategy(ds, near)
            });
        }
    }

    /// ray.io_rayclusters.yaml / ray.io_rayjobs.yaml, `managedBy`.
    fn managed_by(&mut self, spec: &'a Node, near: Option<Span>) {
        let Some(node) = spec.get("managedBy") else {
            return;
        };
        let Some(v) = node.as_str() else {
            return; // a wrong type is the schema walk's report
        };
        if !matches!(v, "ray.io/kuberay-operator" | "kueue.x-k8s.io/multikueue") {
            self.at(Seg::Key("managedBy"), |r| {
                r.report(
                    node.span,
                    near,
                    "the managedBy field value must be either 'ray.io/kuberay-operator' or \
                     'kueue.x-k8s.io/multikueue'"
                        .to_string(),
                    "not an allowed value",
                    format!(
                        "use `ray.io/kuberay-operator` (KubeRay manages it) or \
                         `kueue.x-k8s.io/multikueue`, or leave managedBy out\nnote: the \
                         KubeRay CRD (ray.io, v1.5.1) rejects the object with this rule \
                         (x-kubernetes-validations): `{MANAGED_BY_VALUES}`"
                    ),
                )
            });
        }
    }

    /// ray.io_rayjobs.yaml, `spec.deletionStrategy` and its `deletionRules[].condition`.
    fn deletion_strategy(&mut self, ds: &'a Node, near: Option<Span>) {
        let near = ds.best_span().or(near);
        let legacy = has(ds, "onSuccess") || has(ds, "onFailure");
        let rules = has(ds, "deletionRules");
        if legacy && rules {
            self.cel(
                ds,
                near,
                "legacy policies (onSuccess/onFailure) and deletionRules cannot be used \
                 together within the same deletionStrategy",
                DELETION_NOT_BOTH,
                "keep either onSuccess/onFailure or deletionRules",
            );
        }
        if !((has(ds, "onSuccess") && has(ds, "onFailure")) || rules) {
            self.cel(
                ds,
                near,
                "deletionStrategy requires either BOTH onSuccess and onFailure, OR the \
                 deletionRules field (cannot be empty)",
                DELETION_EITHER,
                "set both onSuccess and onFailure, or deletionRules",
            );
        }
        let Some(list) = ds.get("deletionRules").and_then(Node::as_list) else {
            return;
        };
        self.at(Seg::Key("deletionRules"), |r| {
            for (i, rule) in list.iter().enumerate() {
                let Some(cond) = rule.get("condition").filter(|c| c.as_map().is_some()) else {
                    continue;
                };
                r.at(Seg::Index(i), |r| {
                    r.at(Seg::Key("condition"), |r| r.deletion_condition(cond, near))
                });
            }
        });
    }

    fn deletion_condition(&mut self, cond: &Node, near: Option<Span>) {
        let status = has(cond, "jobStatus");
        let deployment = has(cond, "jobDeploymentStatus");
        if status && deployment {
            self.cel(
                cond,
                near,
                "JobStatus and JobDeploymentStatus cannot be used together within the same \
                 deletion condition.",
                CONDITION_NOT_BOTH,
                "keep either jobStatus or jobDeploymentStatus",
            );
        }
        if !(status || deployment) {
            self.cel(
                cond,
                near,
                "the deletion condition requires either the JobStatus or the \
                 JobDeploymentStatus field.",
                CONDITION_EITHER,
                "set jobStatus (SUCCEEDED or FAILED) or jobDeploymentStatus",
            );
        }
    }

    /// `template.spec` of a group, Deployment or Job.
    fn template(&mut self, owner: &'a Node, near: Option<Span>) {
        let Some(template) = owner.get("template") else {
            return;
        };
        let Some(pod) = template.get("spec") else {
            return;
        };
        self.at(Seg::Key("template"), |r| {
            r.at(Seg::Key("spec"), |r| r.pod_spec(pod, near))
        });
    }

    /// Kubernetes `pkg/apis/core/validation/validation.go`: `validatePodResourceClaims` /
    /// `validatePodResourceClaim` (each entry: a unique name and exactly one of
    /// `resourceClaimName`, `resourceClaimTemplateName`), and `validateResourceClaimNames`
    /// via `ValidateResourceRequirements` (a container's `resources.claims[].name` must
    /// name an entry of `spec.resourceClaims`).
    fn pod_spec(&mut self, pod: &'a Node, near: Option<Span>) {
        let near = pod.best_span().or(near);
        let mut names: Vec<&str> = Vec::new();
        if let Some(claims) = pod.get("resourceClaims").and_then(Node::as_list) {
            self.at(Seg::Key("resourceClaims"), |r| {
                for (i, claim) in claims.iter().enumerate() {
                    if claim.as_map().is_none() {
                        continue;
                    }
                    r.at(Seg::Index(i), |r| r.pod_claim(claim, &mut names, near));
                }
            });
        }
        for key in ["initContainers", "containers"] {
            let Some(list) = pod.get(key).and_then(Node::as_list) else {
                continue;
            };
            self.at(Seg::Key(key), |r| {
                for (i, c) in list.iter().enumerate() {
                    r.at(Seg::Index(i), |r| r.container_claims(c, &names, near));
                }
            });
        }
    }

    fn pod_claim(&mut self, claim: &'a Node, names: &mut Vec<&'a str>, near: Option<Span>) {
        let near = claim.best_span().or(near);
        if let Some(name_node) = claim.get("name")
            && let Some(name) = name_node.as_str()
            && !name.is_empty()
        {
            if names.contains(&name) {
                self.at(Seg::Key("name"), |r| {
                    r.report(
                        name_node.span,
                        near,
                        format!("Duplicate value: \"{name}\""),
                        "a second claim of this name",
                        format!(
                            "give each resourceClaims entry its own name{}",
                            r.pod_note()
                        ),
                    )
                });
            } else {
                names.push(name);
            }
        }
        let by_name = has(claim, "resourceClaimName");
        let by_template = has(claim, "resourceClaimTemplateName");
        let span = claim
            .as_map()
            .and_then(|m| m.values().next())
            .and_then(|first| first.key_span)
            .or(claim.span);
        match (by_name, by_template) {
            (true, true) => self.report(
                span,
                near,
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be \
                 specified"
                    .to_string(),
                "this claim names both",
                format!(
                    "keep one: `resourceClaimName` shares an existing ResourceClaim, \
                     `resourceClaimTemplateName` makes one per pod (nrl sets it for the \
                     `compute-domain-channel` and `roce-channel` claims){}",
                    self.pod_note()
                ),
            ),
            (false, false) => self.report(
                span,
                near,
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`".to_string(),
                "this claim names neither",
                format!(
                    "add `resourceClaimName: <claim>` or `resourceClaimTemplateName: \
                     <template>` (nrl fills the template in only for claims named \
                     `compute-domain-channel` or `roce-channel` in worker groups){}",
                    self.pod_note()
                ),
            ),
            _ => {}
        }
    }

    fn container_claims(&mut self, container: &'a Node, pod_claims: &[&str], near: Option<Span>) {
        let Some(claims) = container
            .get("resources")
            .and_then(|r| r.get("claims"))
            .and_then(Node::as_list)
        else {
            return;
        };
        let near = container.best_span().or(near);
        self.at(Seg::Key("resources"), |r| {
            r.at(Seg::Key("claims"), |r| {
                for (i, c) in claims.iter().enumerate() {
                    let Some(name_node) = c.get("name") else {
                        continue;
                    };
                    let Value::Str(name) = &name_node.value else {
                        continue;
                    };
                    if name.is_empty() || pod_claims.contains(&name.as_str()) {
                        continue;
                    }
                    let known = if pod_claims.is_empty() {
                        " which is empty".to_string()
                    } else {
                        let mut sorted = pod_claims.to_vec();
                        sorted.sort_unstable();
                        format!(": {}", sorted.join(", "))
                    };
                    r.at(Seg::Index(i), |r| {
                        r.report(
                            name_node.span,
                            near,
                            format!(
                                "Not found: \"{name}\": must be one of the names in \
                                 pod.spec.resourceClaims{known}"
                            ),
                            "no resourceClaims entry of this name",
                            format!(
                                "add a `resourceClaims` entry named `{name}` to the pod spec, \
                                 or fix the name{}",
                                r.pod_note()
                            ),
                        )
                    });
                }
            })
        });
    }
}
