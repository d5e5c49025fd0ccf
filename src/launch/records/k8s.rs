//! The record of a run on Kubernetes, whatever runs it (a RayJob, a job on a long-lived
//! RayCluster): the fields every such record has, saving it locally and as its cluster
//! copy, and the follow-up commands printed once the run exists.

use serde_json::Value as Json;

use crate::config::layers::LoadedConfig;
use crate::k8s::K8s;
use crate::launch::output::Output;
use crate::launch::records::cluster_copy::save_on_cluster;
use crate::launch::records::context::RunContext;
use crate::launch::records::{K8sRun, RunKind, RunRecord};
use crate::launch::verify::wandb_enabled;

/// The commands that follow, stop and inspect run `id` (printed after a submit); the
/// record line names only the copies `saved` says were written.
pub fn followups(
    id: &str,
    ctx: &RunContext,
    k8s: &K8s,
    ns: &str,
    what: &str,
    saved: Saved,
) -> Vec<String> {
    let configmap = crate::launch::records::cluster_copy::configmap_name(id);
    let local = ctx.record_path();
    let record = match (saved.local, saved.cluster) {
        (true, true) => format!(
            "record:  {} (cluster copy: ConfigMap {configmap}; from another machine add --context {} -n {ns})",
            local.display(),
            k8s.context
        ),
        (true, false) => format!(
            "record:  {} (no cluster copy: it could not be written, see the warning above)",
            local.display()
        ),
        (false, true) => format!(
            "record:  ConfigMap {configmap} only (the local copy could not be written; add --context {} -n {ns})",
            k8s.context
        ),
        (false, false) => "record:  none could be written (see the warnings above)".to_string(),
    };
    vec![
        format!("run id:  {id}"),
        format!("on:      {what} (context {}, namespace {ns})", k8s.context),
        format!("follow:  nrl job logs {id} -f"),
        format!("stop:    nrl job stop {id}"),
        format!("verify:  nrl verify {id}"),
        record,
    ]
}

/// Which copies of a run record [`save_everywhere`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Saved {
    pub local: bool,
    pub cluster: bool,
}

/// Record fields every Kubernetes run has.
pub fn base_record(cfg: &LoadedConfig, ctx: &RunContext, k8s: &K8s, kind: RunKind) -> RunRecord {
    let mut record = ctx.new_record(cfg, kind);
    record.context = Some(k8s.context.clone());
    record.namespace = Some(cfg.infra.namespace.clone());
    record.k8s = Some(K8sRun {
        submission_id: Some(ctx.run_id.to_string()),
        wandb: wandb_enabled(cfg),
        ..K8sRun::default()
    });
    record
}

/// Save the record locally and on the cluster (owned by `owners`); a failure to write
/// either is reported as a warning, never fatal: the run itself is fine.
pub async fn save_everywhere(
    k8s: &K8s,
    ctx: &RunContext,
    record: &RunRecord,
    owners: &[Json],
    user: &str,
    progress: &mut dyn Output,
) -> Saved {
    let mut saved = Saved {
        local: true,
        cluster: true,
    };
    if let Err(e) = crate::launch::records::context::save_record(&ctx.store, record).await {
        progress.status(&format!("warning: {}", e.message));
        saved.local = false;
    }
    let ns = record
        .namespace
        .clone()
        .unwrap_or_else(|| k8s.namespace.clone());
    if let Err(e) = save_on_cluster(k8s, &ns, record, owners, user).await {
        progress.status(&format!(
            "warning: the run record could not be kept on the cluster: {}",
            e.message
        ));
        saved.cluster = false;
    }
    saved
}
