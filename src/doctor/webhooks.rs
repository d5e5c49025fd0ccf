//! Fields that are injected into Ray pods (by the cluster's admission webhooks and
//! KubeRay): an `ephemeral-storage` request and a `readinessProbe`. Writing them in the
//! inline RayCluster spec conflicts with the injected values.

use super::pods::{GroupKind, pods};
use super::rules::WEBHOOK_CONFLICT;
use super::{Ctx, Finding};
use crate::config::node::Node;

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    for p in pods(ctx.manifests) {
        if p.kind == GroupKind::Deployment {
            continue;
        }
        for c in p.containers() {
            let cname = c.get("name").and_then(Node::as_str).unwrap_or("?");
            let place = format!("container `{cname}` of {} {}", p.desc, p.place);
            if let Some(n) = c
                .get("resources")
                .and_then(|r| r.get("requests"))
                .and_then(|r| r.as_map())
                .and_then(|m| m.get("ephemeral-storage"))
            {
                out.push(
                    Finding::new(
                        WEBHOOK_CONFLICT,
                        format!(
                            "{place} requests `ephemeral-storage`, which is injected into Ray pods"
                        ),
                    )
                    .at(n.key_span.or(n.span), "injected; do not set")
                    .place(place.clone())
                    .fix("remove the `ephemeral-storage` request from the inline RayCluster spec"),
                );
            }
            if let Some(n) = c.get("readinessProbe") {
                out.push(
                    Finding::new(
                        WEBHOOK_CONFLICT,
                        format!("{place} sets a `readinessProbe`, which is injected into Ray pods"),
                    )
                    .at(n.key_span.or(n.span), "injected; do not set")
                    .place(place.clone())
                    .fix("remove `readinessProbe` from the inline RayCluster spec; the injected probe checks the Ray node"),
                );
            }
        }
    }
}
