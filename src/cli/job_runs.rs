//! `nrl job logs|stop RUN_ID` (no `--address`) and `nrl verify RUN_ID`: find the run's
//! record (this machine, else the cluster) and act on wherever the run is.

use std::io::Write;

use clap::Args;

use super::common::KubeArgs as RunLookupArgs;
use crate::diag::{Diag, Exit, Result};
use crate::k8s::K8s;
use crate::launch::attach::{Stopped, follow_run, run_log, stop_and_record};
use crate::launch::output::{Console, Output};
use crate::launch::records::lookup::resolve_run;
use crate::launch::records::{RunRecord, RunStatus, RunStore};
use crate::launch::verify::verify;

/// The run's record and, for runs on Kubernetes, a client for its cluster.
pub(super) async fn resolve(
    id: &str,
    lookup: &RunLookupArgs,
) -> Result<(RunRecord, Option<K8s>, RunStore)> {
    resolve_run(id, &lookup.connect_options()).await
}

/// `nrl job logs RUN_ID [-f]`
pub async fn logs(id: &str, lookup: &RunLookupArgs, follow: bool) -> Result<Exit> {
    let (record, k8s, _) = resolve(id, lookup).await?;
    if follow {
        let cancel = super::common::cancel_on_signals()?;
        let exit = follow_run(k8s.as_ref(), &record, &mut Console::new(), &cancel).await?;
        if exit == Exit::Interrupted {
            crate::errln!("\ninterrupted: stopped following run {id}; it keeps running.");
            crate::errln!("re-attach: nrl job logs {id} -f");
        }
        return Ok(exit);
    }
    let log = run_log(k8s.as_ref(), &record).await?;
    crate::errln!("[logs] from {}", log.source);
    let mut out = std::io::stdout();
    let written = match out.write_all(log.text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Diag::from(e)),
        _ => Ok(Exit::Ok),
    };
    if record.status == RunStatus::Lost {
        let why = record
            .message
            .as_deref()
            .unwrap_or("its nrl process is gone");
        crate::errln!("run {id} is lost: {why}");
    }
    written
}

/// `nrl job stop RUN_ID [--force]`
pub async fn stop(id: &str, lookup: &RunLookupArgs, force: bool) -> Result<Exit> {
    let (mut record, k8s, store) = resolve(id, lookup).await?;
    if let Some(k) = &k8s {
        crate::errln!("nrl job stop: {}", k.banner());
    }
    let me = crate::config::env::username(&crate::config::env::ProcessEnv);
    let progress = crate::launch::progress::Progress::auto();
    match stop_and_record(k8s.as_ref(), &mut record, &store, &me, force, &progress).await? {
        Stopped::Stopped(state) => crate::errln!("stopped run {id}: {state}"),
        Stopped::AlreadyEnded(state) => crate::errln!("run {id} had already ended: {state}"),
    }
    Ok(Exit::Ok)
}

/// Run the launch checklist for a run: its objects, its Ray job, the W&B URL (when W&B is
/// on), a `Processed prompts: 100%` line, and no RayCluster left after a RayJob with
/// shutdown. Each point is reported pass, FAIL or skip (not applicable).
#[derive(Debug, Args)]
#[command(after_help = "\
Exit codes: 0 no point failed, 1 a point failed, 2 bad input, 3 cluster or Ray API error.

Examples:
  nrl verify quickstart-20260101-120000-ab12
  nrl verify grpo-20260101-120000-ab12 --context prod -n rl-team")]
pub struct VerifyArgs {
    /// The run id (from `nrl run`).
    #[arg(add = super::completions::run_ids())]
    pub id: String,
    #[command(flatten)]
    pub lookup: RunLookupArgs,
}

/// `nrl verify RUN_ID`
pub fn run_verify(args: VerifyArgs) -> Result<Exit> {
    super::common::block_on(async move {
        let (record, k8s, _) = resolve(&args.id, &args.lookup).await?;
        let Some(k8s) = k8s else {
            return Err(Diag::new(
                "nrl::run::verify_kind",
                format!(
                    "run `{}` is a {} run; the checklist is for runs on Kubernetes",
                    args.id,
                    record.kind.as_str()
                ),
            ));
        };
        let report = verify(&k8s, &record, None).await;
        if let Some(url) = &report.wandb_url {
            Console::new().status(&format!("W&B run: {url}"));
        }
        crate::out!("{report}");
        Ok(if report.ok() { Exit::Ok } else { Exit::Failed })
    })
}
