//! Run records kept on the cluster (DESIGN §3), so `nrl job logs|stop|verify RUN_ID` work
//! from another machine: a ConfigMap `nrl-run-<id>` in the run's namespace holding the
//! record as JSON, labelled with the run id, owned by the RayJob or RayCluster the run
//! lives on (so it goes when they go).

use serde_json::{Value as Json, json};

use crate::diag::{Diag, Result};
use crate::k8s::resources::by_kind;
use crate::k8s::{ApplyOptions, K8s};
use crate::launch::owned::with_owners;
use crate::launch::raycluster::owner::valid_label_value;
use crate::launch::raycluster::{OWNER_LABEL, owner_of};
use crate::launch::records::{RunRecord, RunStore};
use crate::render::meta::{MANAGED_BY, MANAGED_BY_KEY};

/// The ConfigMap key holding the record.
pub const RECORD_KEY: &str = "record.json";
/// Label with the run id on the record ConfigMap (and the run's objects).
pub const RUN_ID_LABEL: &str = "nrl/run-id";
/// Label with the run kind on the record ConfigMap.
pub const RUN_KIND_LABEL: &str = "nrl/run-kind";

/// `nrl-run-<id>`
pub fn configmap_name(run_id: &str) -> String {
    format!("nrl-run-{run_id}")
}

/// The ConfigMap carrying `record`, labelled `nrl-k8s/owner: <user>` (unless `user` is
/// not a valid label value).
pub fn record_configmap(record: &RunRecord, ns: &str, owners: &[Json], user: &str) -> Result<Json> {
    let text = serde_json::to_string_pretty(record).map_err(|e| {
        Diag::new(
            "nrl::run::record",
            format!("cannot encode the run record: {e}"),
        )
    })?;
    let mut cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(&record.id),
            "namespace": ns,
            "labels": {
                MANAGED_BY_KEY: MANAGED_BY,
                RUN_ID_LABEL: record.id,
                RUN_KIND_LABEL: record.kind.as_str(),
            },
        },
        "data": {RECORD_KEY: text},
    });
    if valid_label_value(user)
        && let Some(labels) = cm
            .pointer_mut("/metadata/labels")
            .and_then(Json::as_object_mut)
    {
        labels.insert(OWNER_LABEL.into(), Json::from(user));
    }
    Ok(if owners.is_empty() {
        cm
    } else {
        with_owners(&cm, owners)
    })
}

/// Write (or update) the cluster copy of `record` in `ns`, owned by `owners`, labelled
/// as `user`'s.
pub async fn save_on_cluster(
    k8s: &K8s,
    ns: &str,
    record: &RunRecord,
    owners: &[Json],
    user: &str,
) -> Result<()> {
    k8s.apply(
        &record_configmap(record, ns, owners, user)?,
        ApplyOptions::default(),
    )
    .await?;
    Ok(())
}

/// Update the cluster copy of `record` in `ns`, keeping the owners and the owner label
/// the live ConfigMap has: an apply without `ownerReferences` by the same field manager
/// would remove them, and the record would outlive its run (never garbage-collected).
pub async fn update_on_cluster(k8s: &K8s, ns: &str, record: &RunRecord) -> Result<()> {
    let cms = by_kind("ConfigMap")?;
    let live = k8s.get(&cms, ns, &configmap_name(&record.id)).await?;
    let owners = live
        .as_ref()
        .and_then(|l| l.pointer("/metadata/ownerReferences"))
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    let user = live.as_ref().and_then(owner_of).unwrap_or("");
    save_on_cluster(k8s, ns, record, &owners, user).await
}

/// The cluster copy of run `id` in `ns`, if there is one.
pub async fn load_from_cluster(k8s: &K8s, ns: &str, id: &str) -> Result<Option<RunRecord>> {
    let cms = by_kind("ConfigMap")?;
    let Some(cm) = k8s.get(&cms, ns, &configmap_name(id)).await? else {
        return Ok(None);
    };
    let text = cm
        .pointer(&format!("/data/{RECORD_KEY}"))
        .and_then(Json::as_str)
        .unwrap_or("");
    serde_json::from_str(text).map(Some).map_err(|e| {
        Diag::api(
            "nrl::run::record",
            format!(
                "ConfigMap {} holds no valid run record: {e}",
                configmap_name(id)
            ),
        )
    })
}

/// Run `id`: the local record when there is one, else the cluster copy in `ns` (which
/// is then also saved locally, so the next command is quick).
pub async fn find_run(
    store: &RunStore,
    k8s: Option<&K8s>,
    ns: &str,
    id: &str,
) -> Result<RunRecord> {
    let local_missing = match store.load(id) {
        Ok(record) => return Ok(record),
        Err(e) if e.code == crate::launch::records::CODE_NOT_FOUND => e,
        Err(e) => return Err(e),
    };
    let Some(k8s) = k8s else {
        return Err(local_missing);
    };
    match load_from_cluster(k8s, ns, id).await? {
        Some(record) => {
            // A cache, not the truth: a failure to write it changes nothing.
            let _ = store.save(&record);
            Ok(record)
        }
        None => Err(Diag::new(
            crate::launch::records::CODE_NOT_FOUND,
            format!("no run `{id}` on this machine or in namespace `{ns}` ({})", k8s.context),
        )
        .help("check the id (`nrl job list`), or pass --context/-n for the cluster the run was launched on")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::records::{K8sRun, RunKind};

    #[test]
    fn record_configmap_round_trips_and_is_labelled() {
        let mut rec = RunRecord::new("quick-1", RunKind::Rayjob);
        rec.k8s = Some(K8sRun {
            rayjob: Some("rj".into()),
            shutdown: true,
            ..K8sRun::default()
        });
        let owner = json!({"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rj", "uid": "u"});
        let cm = record_configmap(&rec, "ns", &[owner], "alice").unwrap();
        assert_eq!(cm["metadata"]["labels"][OWNER_LABEL], "alice");
        assert_eq!(cm["metadata"]["name"], "nrl-run-quick-1");
        assert_eq!(cm["metadata"]["labels"][RUN_ID_LABEL], "quick-1");
        assert_eq!(cm["metadata"]["labels"][RUN_KIND_LABEL], "rayjob");
        assert_eq!(cm["metadata"]["ownerReferences"][0]["uid"], "u");
        let back: RunRecord =
            serde_json::from_str(cm["data"][RECORD_KEY].as_str().unwrap()).unwrap();
        assert_eq!(back, rec);
    }
}
