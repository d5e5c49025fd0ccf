//! Finding a run by id: its record on this machine, else the copy kept on the cluster,
//! and a client for the cluster it runs on. `nrl job logs|stop`, `nrl verify`,
//! `nrl diagnose`, `nrl logs --collect`, `nrl run --from` and their built-ins all start here.

use crate::config::env::ProcessEnv;
use crate::diag::Result;
use crate::k8s::{ConnectOptions, K8s};
use crate::launch::records::cluster_copy::find_run;
use crate::launch::records::{CODE_NOT_FOUND, RunRecord, RunStore};

/// The run's record and, for runs on Kubernetes, a client for its cluster. `opts` picks
/// the cluster; its context and namespace default to the ones the local record names
/// (so `nrl job logs ID` works from the machine that launched it without flags).
pub async fn resolve_run(
    id: &str,
    opts: &ConnectOptions,
) -> Result<(RunRecord, Option<K8s>, RunStore)> {
    let store = RunStore::from_env(&ProcessEnv)?;
    let local = match store.load(id) {
        Ok(r) => Some(r),
        Err(e) if e.code == CODE_NOT_FOUND => None,
        Err(e) => return Err(e),
    };
    if let Some(record) = &local
        && !record.kind.is_on_kubernetes()
    {
        return Ok((record.clone(), None, store));
    }
    let mut opts = opts.clone();
    if opts.context.is_none() {
        opts.context = local.as_ref().and_then(|r| r.context.clone());
    }
    if opts.namespace.is_none() {
        opts.namespace = local.as_ref().and_then(|r| r.namespace.clone());
    }
    let k8s = K8s::connect(&opts).await?;
    let record = match local {
        Some(r) => r,
        None => find_run(&store, Some(&k8s), &k8s.namespace, id).await?,
    };
    Ok((record, Some(k8s), store))
}
