//! Following and stopping a run by its record, whatever executed it: a RayJob (through a
//! port-forward to its cluster's head), a job on a long-lived RayCluster (portForward or
//! exec), or a job on a plain Ray dashboard. This is what makes `nrl job logs|stop RUN_ID`
//! work without knowing how the run was launched, and from another machine (the record
//! comes from the cluster then).

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::dashboard::dashboard_session;
use super::follow::{TaskGuard, follow_into};
use super::output::Output;
use super::progress::Progress;
use super::raycluster::check_owner;
use super::raycluster::submit::exec::{self, ExecRun, ExecState};
use super::records::cluster_copy::update_on_cluster;
use super::records::context::DRIVER_LOG;
use super::records::{RunKind, RunRecord, RunStatus, RunStore};
use crate::diag::{Diag, Exit, Result};
use crate::k8s::K8s;
use crate::k8s::resources::by_kind;
use crate::k8s::status::RayJobStatus;
use crate::k8s::wait::conditions::{Condition, deleted, rayjob_finished, rayjob_in};
use crate::ray::{JobDetails, RayClient, RayClientOptions, stop_job};

/// How long `stop` waits for the job to reach a terminal state.
pub const STOP_WAIT: Duration = Duration::from_secs(60);
/// How long following a RayJob waits for KubeRay to start its job.
const JOB_START_WAIT: Duration = Duration::from_secs(86400);

/// Where a run's Ray job is.
enum Target {
    /// A Ray job on a RayCluster's head, reached through a port-forward.
    Cluster {
        ns: String,
        cluster: String,
        id: String,
    },
    /// A Ray job on a dashboard address.
    Address { address: String, id: String },
    /// An exec run on a head pod.
    Exec(ExecRun),
    /// Nothing live to reach; `why` says so.
    Gone { why: String, exit: Exit },
}

fn submission_id(record: &RunRecord) -> String {
    record
        .k8s
        .as_ref()
        .and_then(|k| k.submission_id.clone())
        .unwrap_or_else(|| record.id.clone())
}

async fn target(k8s: Option<&K8s>, record: &RunRecord) -> Result<Target> {
    let need = || {
        k8s.ok_or_else(|| {
            Diag::new(
                "nrl::run::needs_cluster",
                format!("run `{}` ran on Kubernetes", record.id),
            )
        })
    };
    let ns = record.namespace.clone().unwrap_or_default();
    match record.kind {
        RunKind::Rayjob => {
            let k8s = need()?;
            let name = record
                .k8s
                .as_ref()
                .and_then(|k| k.rayjob.clone())
                .unwrap_or_default();
            let Some(rj) = k8s.get(&by_kind("RayJob")?, &ns, &name).await? else {
                return Ok(Target::Gone {
                    why: format!("RayJob {name} no longer exists in namespace {ns}"),
                    exit: exit_of_record(record),
                });
            };
            let status = RayJobStatus::of(&rj);
            let job = status.job.clone().unwrap_or_default();
            let cluster = status.cluster.clone().unwrap_or_default();
            let cluster_alive = !cluster.is_empty()
                && k8s
                    .get(&by_kind("RayCluster")?, &ns, &cluster)
                    .await?
                    .is_some();
            if !cluster_alive {
                return Ok(Target::Gone {
                    why: format!("RayJob {name} finished (job={job}) and its RayCluster is gone"),
                    exit: match job.as_str() {
                        "SUCCEEDED" => Exit::Ok,
                        _ => Exit::Failed,
                    },
                });
            }
            let id = status.job_id.unwrap_or_else(|| submission_id(record));
            Ok(Target::Cluster { ns, cluster, id })
        }
        RunKind::RayclusterPortforward => {
            need()?;
            Ok(Target::Cluster {
                ns,
                cluster: record.cluster.clone().unwrap_or_default(),
                id: submission_id(record),
            })
        }
        RunKind::RayclusterExec => {
            need()?;
            let kr = record.k8s.clone().unwrap_or_default();
            match (kr.pod, kr.exec_dir) {
                (Some(pod), Some(dir)) => Ok(Target::Exec(ExecRun {
                    run_id: record.id.clone(),
                    namespace: ns,
                    cluster: record.cluster.clone().unwrap_or_default(),
                    pod,
                    dir,
                })),
                _ => Err(Diag::new(
                    "nrl::run::record",
                    format!(
                        "the record of exec run `{}` has no pod or directory",
                        record.id
                    ),
                )),
            }
        }
        RunKind::Ray => match &record.ray {
            Some(r) => Ok(Target::Address {
                address: r.address.clone(),
                id: r.submission_id.clone(),
            }),
            None => Err(Diag::new(
                "nrl::run::record",
                format!(
                    "the record of Ray run `{}` has no dashboard address",
                    record.id
                ),
            )),
        },
        RunKind::Local => Ok(Target::Gone {
            why: local_state(record),
            exit: exit_of_record(record),
        }),
        other => Ok(Target::Gone {
            why: format!("a {} run has nothing to attach to", other.as_str()),
            exit: exit_of_record(record),
        }),
    }
}

/// Where a local run stands, from its record (which readers mark `lost` when its nrl is
/// gone).
fn local_state(record: &RunRecord) -> String {
    match (record.status, &record.supervisor) {
        (RunStatus::Running, Some(s)) => format!(
            "local run {} is running; the nrl that started it (pid {}) streams it",
            record.id, s.pid
        ),
        (status, _) => match &record.message {
            Some(m) => format!("local run {} is {}: {m}", record.id, status.as_str()),
            None => format!("local run {} is {}", record.id, status.as_str()),
        },
    }
}

/// Stop a local run: a live nrl gets SIGTERM (it stops the run as on Ctrl-C and records
/// it); the entrypoint of a lost run gets SIGTERM (SIGKILL with `force`) to its group.
async fn stop_local(record: &RunRecord, force: bool) -> Result<Stopped> {
    use super::local::reaper::ProcessId;
    let supervisor = record.supervisor.filter(|s| s.is_alive());
    let (target, group, what) = match (record.status, supervisor, &record.local) {
        (RunStatus::Running, Some(s), _) => (s, false, format!("its nrl (pid {})", s.pid)),
        (RunStatus::Running | RunStatus::Lost, None, Some(l)) if l.is_alive() == Some(true) => (
            ProcessId {
                pid: l.pid,
                start_time: l.start_time.unwrap_or_default(),
            },
            true,
            format!("its entrypoint's process group ({})", l.pid),
        ),
        _ => return Ok(Stopped::AlreadyEnded(local_state(record))),
    };
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process, kill_process_group};
        let sig = if force { Signal::KILL } else { Signal::TERM };
        if let Some(pid) = i32::try_from(target.pid).ok().and_then(Pid::from_raw) {
            let _ = if group {
                kill_process_group(pid, sig)
            } else {
                kill_process(pid, sig)
            };
        }
    }
    let deadline = tokio::time::Instant::now() + STOP_WAIT;
    let mut pause = Duration::from_millis(20);
    while target.is_alive() {
        if tokio::time::Instant::now() >= deadline {
            return Err(Diag::new(
                "nrl::run::stop_timeout",
                format!(
                    "run {} is still running {}s after the signal to {what}",
                    record.id,
                    STOP_WAIT.as_secs()
                ),
            )
            .help(format!("force it: nrl job stop {} --force", record.id)));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(500));
    }
    Ok(Stopped::Stopped(format!("ended {what}")))
}

fn exit_of_record(record: &RunRecord) -> Exit {
    match record.status {
        RunStatus::Failed | RunStatus::Stopped | RunStatus::Lost => Exit::Failed,
        _ => Exit::Ok,
    }
}

/// The local copy of the run's driver log, if any.
pub fn local_log(record: &RunRecord) -> Option<String> {
    let dir = record.run_dir.as_ref()?;
    std::fs::read_to_string(std::path::Path::new(dir).join(DRIVER_LOG)).ok()
}

/// Stream the run's log until it ends (exit code from its status: SUCCEEDED 0, FAILED
/// or STOPPED 1) or Ctrl-C (130; the run keeps going). A run whose cluster is gone shows
/// the local copy of its log, if this machine has one.
pub async fn follow_run(
    k8s: Option<&K8s>,
    record: &RunRecord,
    progress: &mut dyn Output,
    cancel: &CancellationToken,
) -> Result<Exit> {
    // A RayJob attached to early has no cluster or job yet: wait until KubeRay runs it.
    if let (RunKind::Rayjob, Some(k8s)) = (record.kind, k8s) {
        let name = record
            .k8s
            .as_ref()
            .and_then(|k| k.rayjob.clone())
            .unwrap_or_default();
        let ns = record.namespace.clone().unwrap_or_default();
        let rayjobs = by_kind("RayJob")?;
        let started = k8s.wait_until(
            &rayjobs,
            &ns,
            &name,
            JOB_START_WAIT,
            "running",
            deleted().or(rayjob_in("Running")).or(rayjob_finished()),
        );
        tokio::select! {
            r = started => {
                r?;
            }
            _ = cancel.cancelled() => return Ok(Exit::Interrupted),
        }
    }
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let task: TaskGuard<Result<Exit>> = match target(k8s, record).await? {
        Target::Gone { why, exit } => {
            progress.status(&format!("[logs] {why}"));
            match local_log(record) {
                Some(text) => {
                    progress.status("[logs] showing the copy saved while the run was followed");
                    progress.log(&text);
                }
                None => progress.status("[logs] no local copy of the log on this machine"),
            }
            return Ok(exit);
        }
        Target::Cluster { ns, cluster, id } => {
            let k8s = k8s
                .cloned()
                .ok_or_else(|| Diag::new("nrl::run::needs_cluster", "no cluster"))?;
            TaskGuard::spawn(async move {
                let dash = dashboard_session(&k8s, &ns, &cluster).await?;
                // HTTPMode: KubeRay submits a moment after it reports Running.
                let d = follow_into(&dash.client, &id, tx, Duration::from_secs(120)).await?;
                Ok(exit_for_job(&d))
            })
        }
        Target::Address { address, id } => TaskGuard::spawn(async move {
            let client = RayClient::new(&address, RayClientOptions::default())?;
            let d = follow_into(&client, &id, tx, Duration::ZERO).await?;
            Ok(exit_for_job(&d))
        }),
        Target::Exec(run) => {
            let k8s = k8s
                .cloned()
                .ok_or_else(|| Diag::new("nrl::run::needs_cluster", "no cluster"))?;
            TaskGuard::spawn(async move {
                let state = exec::follow(&k8s, &run, tx).await?;
                Ok(exit_for_exec(state))
            })
        }
    };
    let mut task = task;
    loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                while let Ok(c) = rx.try_recv() { progress.log(&c); }
                return Ok(Exit::Interrupted);
            }
            Some(chunk) = rx.recv() => progress.log(&chunk),
            done = &mut task.0 => {
                while let Ok(c) = rx.try_recv() { progress.log(&c); }
                return done.map_err(|e| Diag::api("nrl::runtime", e.to_string()))?;
            }
        }
    }
}

fn exit_for_job(d: &JobDetails) -> Exit {
    d.status.exit()
}

/// Exit code of an ended exec run: its own code 0 → 0, else 1.
pub fn exit_for_exec(state: ExecState) -> Exit {
    match state {
        ExecState::Exited(0) | ExecState::Running => Exit::Ok,
        _ => Exit::Failed,
    }
}

/// The run's log so far (no following).
pub async fn log_text(k8s: Option<&K8s>, record: &RunRecord) -> Result<String> {
    Ok(run_log(k8s, record).await?.text)
}

/// A run's driver log and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLog {
    pub text: String,
    /// `the dashboard of RayCluster rc (job j)`, `the copy kept in DIR/driver.log (…)`.
    pub source: String,
}

/// The run's log so far, from wherever it still is: the live dashboard (or exec run)
/// first; when that cluster is gone or does not answer, the copy `nrl` kept in the run
/// directory while it followed the run. `source` says which.
pub async fn run_log(k8s: Option<&K8s>, record: &RunRecord) -> Result<RunLog> {
    let live = match target(k8s, record).await? {
        Target::Cluster { ns, cluster, id } => {
            let k8s = k8s.ok_or_else(|| Diag::new("nrl::run::needs_cluster", "no cluster"))?;
            let source = format!("the dashboard of RayCluster {cluster} (job {id})");
            let fetched = async {
                dashboard_session(k8s, &ns, &cluster)
                    .await?
                    .client
                    .logs(&id)
                    .await
            };
            (fetched.await, source)
        }
        Target::Address { address, id } => {
            let source = format!("the dashboard at {address} (job {id})");
            let fetched = async {
                RayClient::new(&address, RayClientOptions::default())?
                    .logs(&id)
                    .await
            };
            (fetched.await, source)
        }
        Target::Exec(run) => {
            let k8s = k8s.ok_or_else(|| Diag::new("nrl::run::needs_cluster", "no cluster"))?;
            let source = format!("{}/driver.log on pod {}", run.dir, run.pod);
            (exec::log_text(k8s, &run).await, source)
        }
        Target::Gone { why, .. } => {
            return kept_log(record, &why).ok_or_else(|| {
                Diag::api("nrl::run::log_gone", format!("{why}; its log went with it"))
                    .help("nrl keeps a copy only on the machine that followed the run")
            });
        }
    };
    match live {
        (Ok(text), source) => Ok(RunLog { text, source }),
        // A cluster being torn down (or a dashboard that stopped answering) still
        // leaves the kept copy.
        (Err(e), source) => kept_log(record, &format!("{source} failed: {}", e.message)).ok_or(e),
    }
}

/// The kept copy of the run's log, with why the live one was not used.
fn kept_log(record: &RunRecord, why: &str) -> Option<RunLog> {
    let text = local_log(record)?;
    let dir = record.run_dir.clone().unwrap_or_default();
    Some(RunLog {
        text,
        source: format!("the copy kept in {dir}/{DRIVER_LOG} while the run was followed ({why})"),
    })
}

/// What `stop_run` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// It was running and is now in this state (`STOPPED`, `exited 143`, …).
    Stopped(String),
    /// It had already ended.
    AlreadyEnded(String),
}

/// The owner check of `job stop`: the object the run lives on (its RayJob, else its
/// RayCluster) must be `me`'s (`nrl-k8s/owner`), unless `force`. Nothing to check when it
/// is gone or the run is not on Kubernetes.
pub async fn check_run_owner(
    k8s: Option<&K8s>,
    record: &RunRecord,
    me: &str,
    force: bool,
    progress: &Progress,
) -> Result<()> {
    let (Some(k8s), Some(ns)) = (k8s, record.namespace.as_deref()) else {
        return Ok(());
    };
    let rayjob = record.k8s.as_ref().and_then(|k| k.rayjob.as_deref());
    let (kind, name) = match (record.kind, rayjob, record.cluster.as_deref()) {
        (RunKind::Rayjob, Some(rj), _) => ("RayJob", rj),
        (RunKind::Rayjob, None, _) | (_, _, None) => return Ok(()),
        (_, _, Some(rc)) => ("RayCluster", rc),
    };
    match k8s.get(&by_kind(kind)?, ns, name).await? {
        Some(live) => check_owner(&live, me, force, progress),
        None => Ok(()),
    }
}

/// Stop the run: Ray's stop (waiting until Ray says it ended), or for exec runs a signal
/// to the run's own process group (TERM; KILL with `force`), then a wait for it to end.
/// The owner check ([`check_run_owner`]) comes first for cluster runs; `force` also
/// overrides it. Local runs are this machine's own processes.
pub async fn stop_run(
    k8s: Option<&K8s>,
    record: &RunRecord,
    me: &str,
    force: bool,
    progress: &Progress,
) -> Result<Stopped> {
    if record.kind == RunKind::Local {
        return stop_local(record, force).await;
    }
    check_run_owner(k8s, record, me, force, progress).await?;
    match target(k8s, record).await? {
        Target::Cluster { ns, cluster, id } => {
            let k8s = k8s.ok_or_else(|| Diag::new("nrl::run::needs_cluster", "no cluster"))?;
            let dash = dashboard_session(k8s, &ns, &cluster).await?;
            let out = stop_job(&dash.client, &id, STOP_WAIT).await?;
            Ok(stopped(out.was_running, out.details.status.to_string()))
        }
        Target::Address { address, id } => {
            let client = RayClient::new(&address, RayClientOptions::default())?;
            let out = stop_job(&client, &id, STOP_WAIT).await?;
            Ok(stopped(out.was_running, out.details.status.to_string()))
        }
        Target::Exec(run) => {
            let k8s = k8s.ok_or_else(|| Diag::new("nrl::run::needs_cluster", "no cluster"))?;
            let was_running = exec::stop(k8s, &run, force).await?;
            let deadline = tokio::time::Instant::now() + STOP_WAIT;
            let mut pause = Duration::from_millis(200);
            loop {
                let state = exec::status(k8s, &run).await?;
                if state != ExecState::Running {
                    return Ok(stopped(was_running, state.describe()));
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(Diag::api(
                        "nrl::run::stop_timeout",
                        format!(
                            "run {} is still running {}s after the signal",
                            run.run_id,
                            STOP_WAIT.as_secs()
                        ),
                    )
                    .help(format!("force it: nrl job stop {} --force", run.run_id)));
                }
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        }
        Target::Gone { why, .. } => Ok(Stopped::AlreadyEnded(why)),
    }
}

/// [`stop_run`], then the run's records follow: this machine's copy and the cluster's
/// (failing to update them is only a warning on `progress`: the run did stop).
pub async fn stop_and_record(
    k8s: Option<&K8s>,
    record: &mut RunRecord,
    store: &RunStore,
    me: &str,
    force: bool,
    progress: &Progress,
) -> Result<Stopped> {
    let stopped = stop_run(k8s, record, me, force, progress).await?;
    if let Stopped::Stopped(state) = &stopped {
        record.set_status(
            RunStatus::Stopped,
            record.exit_code,
            Some(format!("stopped: {state}")),
        );
        if let Err(e) = store.save(record) {
            progress.line(format!("warning: {}", e.message));
        }
        if let (Some(k), Some(ns)) = (k8s, record.namespace.as_deref()) {
            let _ = update_on_cluster(k, ns, record).await;
        }
    }
    Ok(stopped)
}

fn stopped(was_running: bool, state: String) -> Stopped {
    if was_running {
        Stopped::Stopped(state)
    } else {
        Stopped::AlreadyEnded(state)
    }
}
