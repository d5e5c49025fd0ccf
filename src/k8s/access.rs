//! Read-only questions about the cluster: may I do X (SelfSubjectAccessReview), which
//! API groups, versions and resources are served (discovery). Discovery is readable by
//! every authenticated user, unlike CustomResourceDefinition objects.

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroupList;
use kube::api::{Api, PostParams};

use super::client::K8s;
use super::errors::{Action, is_not_found, to_diag};
use super::retry::{Backoff, retry};
use crate::diag::Result;

/// The answer of an access review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub allowed: bool,
    /// The authorizer's reason or evaluation error, when it gave one.
    pub reason: String,
}

impl K8s {
    /// May the current user `verb` `resource` (of API `group`, "" for core) in `namespace`?
    /// Side-effect free, so retried like a read.
    pub async fn can_i(
        &self,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> Result<Access> {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_string()),
                    group: Some(group.to_string()),
                    resource: Some(resource.to_string()),
                    namespace: Some(namespace.to_string()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        let api: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
        let pp = PostParams::default();
        let out = retry(Backoff::default(), || api.create(&pp, &review))
            .await
            .map_err(|e| {
                to_diag(
                    e,
                    &Action {
                        verb: "create",
                        resource: "selfsubjectaccessreviews",
                        name: None,
                        namespace: None,
                    },
                )
            })?;
        let status = out.status.unwrap_or_default();
        let reason = [status.reason, status.evaluation_error]
            .into_iter()
            .flatten()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        Ok(Access {
            allowed: status.allowed && !status.denied.unwrap_or(false),
            reason,
        })
    }

    /// The API groups the server serves (`/apis`).
    pub async fn api_groups(&self) -> Result<APIGroupList> {
        retry(Backoff::default(), || self.client.list_api_groups())
            .await
            .map_err(|e| {
                to_diag(
                    e,
                    &Action {
                        verb: "discover",
                        resource: "apis",
                        name: None,
                        namespace: None,
                    },
                )
            })
    }

    /// Plural names of the resources served at `api_version` (`ray.io/v1`, `v1`); `None`
    /// when that group/version is not served.
    pub async fn served_resources(&self, api_version: &str) -> Result<Option<Vec<String>>> {
        let core = !api_version.contains('/');
        let res = retry(Backoff::default(), || async {
            if core {
                self.client.list_core_api_resources(api_version).await
            } else {
                self.client.list_api_group_resources(api_version).await
            }
        })
        .await;
        match res {
            Ok(list) => Ok(Some(
                list.resources
                    .into_iter()
                    .map(|r| r.name)
                    .filter(|n| !n.contains('/'))
                    .collect(),
            )),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(to_diag(
                e,
                &Action {
                    verb: "discover",
                    resource: api_version,
                    name: None,
                    namespace: None,
                },
            )),
        }
    }
}
