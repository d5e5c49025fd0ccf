//! Training on the long-lived training cluster: submit with the resolved submitter, then
//! (when waiting) follow its output to the end.

use std::path::Path;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::config::layers::LoadedConfig;
use crate::config::schema::SubmitterMode;
use crate::diag::{Diag, Exit, Result};
use crate::k8s::K8s;
use crate::launch::attach::exit_for_exec;
use crate::launch::dashboard::dashboard_session;
use crate::launch::follow::{TaskGuard, follow_into};
use crate::launch::logscan::LogScan;
use crate::launch::output::Output;
use crate::launch::raycluster::submit::exec::{self, ExecLaunch, ExecRun};
use crate::launch::raycluster::submit::{Resolved, portforward};
use crate::launch::rayjob::manifest::{require_entrypoint, staged_recipe_yaml};
use crate::launch::records::{K8sRun, RunKind};

/// A submitted training job.
#[derive(Debug, Clone)]
pub enum Training {
    /// A Ray job (portForward submitter); the submission id is the run id.
    Ray {
        cluster: String,
        id: String,
    },
    Exec(ExecRun),
}

impl Training {
    pub fn kind(&self) -> RunKind {
        match self {
            Training::Ray { .. } => RunKind::RayclusterPortforward,
            Training::Exec(_) => RunKind::RayclusterExec,
        }
    }

    /// Fill the record's Kubernetes section.
    pub fn describe_into(&self, k: &mut K8sRun) {
        match self {
            Training::Ray { cluster, id } => {
                k.raycluster = Some(cluster.clone());
                k.submission_id = Some(id.clone());
            }
            Training::Exec(run) => {
                k.raycluster = Some(run.cluster.clone());
                k.pod = Some(run.pod.clone());
                k.exec_dir = Some(run.dir.clone());
                k.submission_id = None;
            }
        }
    }
}

/// Everything checked and built before any cluster call (ref §11 B3: nothing is brought
/// up for a run whose training part cannot work).
#[derive(Debug, Clone)]
pub enum TrainingPlan {
    PortForward(portforward::PortForwardJob),
    Exec { entrypoint: String, recipe: String },
}

pub fn plan(
    cfg: &LoadedConfig,
    run_id: &crate::run_id::RunId,
    code: &Resolved,
    repo_root: &Path,
) -> Result<TrainingPlan> {
    match code.submitter {
        SubmitterMode::PortForward => Ok(TrainingPlan::PortForward(portforward::build(
            cfg,
            run_id,
            code.code_source,
            code.code_path.as_deref(),
            repo_root,
        )?)),
        SubmitterMode::Exec => Ok(TrainingPlan::Exec {
            entrypoint: require_entrypoint(cfg)?.to_string(),
            recipe: staged_recipe_yaml(cfg),
        }),
    }
}

/// Submit the planned training to `cluster`.
pub async fn submit(
    k8s: &K8s,
    cfg: &LoadedConfig,
    run_id: &str,
    cluster: &str,
    plan: &TrainingPlan,
    code: &Resolved,
    progress: &mut dyn Output,
) -> Result<Training> {
    let ns = &cfg.infra.namespace;
    match plan {
        TrainingPlan::PortForward(job) => {
            progress.status(&format!(
                "[training] portForward submitter: submitting {run_id} to RayCluster {cluster}"
            ));
            let submitted = portforward::submit(k8s, ns, cluster, job).await?;
            if let Some(pkg) = &submitted.package {
                progress.status(&format!(
                    "[training] working_dir {} ({})",
                    pkg.uri,
                    if pkg.uploaded {
                        "uploaded"
                    } else {
                        "already on the cluster"
                    }
                ));
            }
            Ok(Training::Ray {
                cluster: cluster.to_string(),
                id: submitted.submission_id,
            })
        }
        TrainingPlan::Exec { entrypoint, recipe } => {
            progress.status(&format!(
                "[training] exec submitter: starting {run_id} on the head pod of RayCluster {cluster}"
            ));
            let launch = ExecLaunch {
                run_id,
                entrypoint,
                env: &cfg.infra.launch.env,
                workdir: code.code_path.as_deref(),
                recipe_yaml: Some(recipe),
                tmp_root: &cfg.infra.submit.exec_tmp_dir,
            };
            let run = exec::submit(k8s, ns, cluster, &launch).await?;
            progress.status(&format!(
                "[training] started in {} on pod {}",
                run.dir, run.pod
            ));
            Ok(Training::Exec(run))
        }
    }
}

/// How following ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Followed {
    /// The job ended with this status (`SUCCEEDED`, `exited 1`, …); `exit` is nrl's exit
    /// code, `code` the entrypoint's own (exec runs record it).
    Ended {
        status: String,
        exit: Exit,
        code: Option<i32>,
    },
    Detached,
}

/// Stream the training output until it ends or Ctrl-C, teeing into `copy` and `scan`.
pub async fn follow(
    k8s: &K8s,
    ns: &str,
    training: &Training,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
    mut copy: Option<std::fs::File>,
    scan: &mut LogScan,
) -> Result<Followed> {
    use std::io::Write;
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let (k, ns2, t) = (k8s.clone(), ns.to_string(), training.clone());
    let mut task: TaskGuard<Result<(String, Exit, Option<i32>)>> = TaskGuard::spawn(async move {
        match t {
            Training::Ray { cluster, id } => {
                let dash = dashboard_session(&k, &ns2, &cluster).await?;
                let d =
                    follow_into(&dash.client, &id, tx, std::time::Duration::from_secs(30)).await?;
                Ok((d.status.to_string(), d.status.exit(), None))
            }
            Training::Exec(run) => {
                let state = exec::follow(&k, &run, tx).await?;
                let code = match state {
                    exec::ExecState::Exited(c) => Some(c),
                    _ => None,
                };
                Ok((state.describe(), exit_for_exec(state), code))
            }
        }
    });
    let mut emit = |chunk: &str, progress: &mut dyn Output| {
        progress.log(chunk);
        scan.feed(chunk);
        if let Some(f) = copy.as_mut() {
            let _ = f.write_all(chunk.as_bytes());
        }
    };
    let result = loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => break Ok(Followed::Detached),
            Some(chunk) = rx.recv() => emit(&chunk, progress),
            done = &mut task.0 => {
                break match done {
                    Ok(Ok((status, exit, code))) => Ok(Followed::Ended { status, exit, code }),
                    Ok(Err(e)) => Err(e),
                    Err(e) => Err(Diag::api("nrl::runtime", e.to_string())),
                };
            }
        }
    };
    while let Ok(chunk) = rx.try_recv() {
        emit(&chunk, progress);
    }
    scan.finish();
    result
}
