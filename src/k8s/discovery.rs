//! Discovery: which API groups, versions and resources the server serves. Readable by every
//! authenticated user, unlike CustomResourceDefinition objects.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIGroupList;

use super::client::K8s;
use super::errors::{Action, is_not_found, to_diag};
use super::retry::{Backoff, retry};
use crate::diag::Result;

impl K8s {
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
