//! The library front door of `nrl top` (the command, `--once`, and `top::snapshot()`):
//! [`snapshot`] reads everything once; [`live`] keeps a [`TopState`] current from the
//! watches and the selected run's log, sends views to the screen and carries out the
//! screen's actions.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::{self, Receiver, Sender, UnboundedSender};
use tokio::task::JoinHandle;

use super::actions::{self, Dashboards, Notice};
use super::model::{Action, RunKind, ScreenUpdate, TopView};
use super::progress::ProgressPatterns;
use super::sources::{Input, LogTarget, follow_log, selector, spawn_watch};
use super::state::{TopState, Watched};
use crate::config::env::Env;
use crate::diag::{Diag, Result};
use crate::doctor::diagnose::Target;
use crate::k8s::watch::{LabelledEvent, WatchItem};
use crate::k8s::{ConnectOptions, K8s};
use crate::launch::dashboard::dashboard_session;
use crate::launch::records::lookup::resolve_run;
use crate::launch::records::{CODE_NOT_FOUND, RunStore};

/// The object `nrl top` selects first for a launch target: its RayJob, else its first
/// RayCluster.
pub fn focus_of(target: &Target) -> Option<String> {
    target
        .rayjob
        .clone()
        .or_else(|| target.clusters.first().cloned())
}

/// `nrl top RUN_ID`: the run's record (this machine's, else the copy on the cluster) says
/// which cluster it is on and what to select there. Runs that are not on Kubernetes are
/// refused with where their log is.
pub async fn connect_run(id: &str, opts: &ConnectOptions) -> Result<(K8s, Option<String>)> {
    let (record, k8s, _) = resolve_run(id, opts).await?;
    let Some(k8s) = k8s else {
        return Err(Diag::new(
            "nrl::top::kind",
            format!(
                "run `{id}` is a {} run; nrl top shows runs on Kubernetes",
                record.kind.as_str()
            ),
        )
        .help(format!("its log: nrl job logs {id}")));
    };
    Ok((k8s, focus_of(&Target::of_record(&record))))
}

/// What `top::snapshot(#{run})` selects for `name`: a run id recorded on this machine
/// selects what its record names (as `nrl top RUN_ID` does), any other name the object
/// of that name.
pub fn focus_named(name: &str, env: &dyn Env) -> Result<String> {
    let store = RunStore::from_env(env)?;
    match store.load(name) {
        Ok(record) => Ok(focus_of(&Target::of_record(&record)).unwrap_or_else(|| name.to_string())),
        Err(e) if e.code == CODE_NOT_FOUND => Ok(name.to_string()),
        Err(e) => Err(e),
    }
}

/// What to show.
#[derive(Debug, Clone)]
pub struct TopOptions {
    /// Whose runs; `None`: everyone's (`--all-users`).
    pub user: Option<String>,
    /// The run to select first (a RayJob, RayCluster or Gym run name).
    pub focus: Option<String>,
    /// Log lines in a view.
    pub tail: usize,
    pub patterns: ProgressPatterns,
    /// Width the diagnose notice is rendered at.
    pub width: usize,
}

impl Default for TopOptions {
    fn default() -> Self {
        TopOptions {
            user: None,
            focus: None,
            tail: 20,
            patterns: ProgressPatterns::default(),
            width: 100,
        }
    }
}

fn new_state(k8s: &K8s, opts: &TopOptions) -> TopState {
    let mut state = TopState::new(
        &k8s.context,
        &k8s.namespace,
        opts.user.as_deref(),
        opts.patterns.clone(),
        opts.tail,
    );
    if let Some(focus) = &opts.focus {
        state.select(focus);
    }
    state
}

/// What the selected run's log is read from, once its objects say so.
fn log_target(state: &TopState) -> Option<(String, LogTarget)> {
    let (run, kind) = state.selected()?;
    let target = match kind {
        RunKind::RayJob => {
            let (cluster, job_id) = state.driver_of(&run)?;
            LogTarget::RayJob { cluster, job_id }
        }
        RunKind::RayCluster => LogTarget::ClusterJobs {
            cluster: run.clone(),
        },
        RunKind::GymRun => LogTarget::Pod {
            pod: state.gym_pod_of(&run)?,
        },
    };
    Some((run, target))
}

/// Everything once: one list per kind, then the selected run's log read whole (for its
/// last lines and its progress). Gym pods are listed only when there are Gym runs.
pub async fn snapshot(k8s: &K8s, opts: &TopOptions) -> Result<TopView> {
    let ns = k8s.namespace.clone();
    let mut state = new_state(k8s, opts);
    for what in Watched::ALL {
        if what == Watched::GymPods && state.runs().iter().all(|(_, k)| *k != RunKind::GymRun) {
            continue;
        }
        let (ar, sel) = selector(what, opts.user.as_deref())?;
        let items = k8s
            .list(&ar, &ns, (!sel.is_empty()).then_some(sel.as_str()))
            .await?;
        state.apply(what, LabelledEvent::Reset(items));
    }
    if let Some((run, target)) = log_target(&state) {
        match read_log(k8s, &ns, &target).await {
            Ok((source, text)) => {
                state.log_text(&run, &text);
                state.log_source(&run, Some(source), None);
            }
            Err(e) => state.log_source(&run, None, Some(e.message.clone())),
        }
    }
    Ok(state.view(jiff::Timestamp::now()))
}

/// A log read once: (where from, the text).
async fn read_log(k8s: &K8s, ns: &str, target: &LogTarget) -> Result<(String, String)> {
    match target {
        LogTarget::Pod { pod } => {
            let opts = crate::k8s::LogOptions {
                tail: Some(super::state::LOG_KEPT as i64),
                ..Default::default()
            };
            let mut text = String::new();
            k8s.stream_pod_logs(ns, pod, &opts, |line| {
                text.push_str(line);
                text.push('\n');
                std::ops::ControlFlow::Continue(())
            })
            .await?;
            Ok((format!("pod {pod}"), text))
        }
        LogTarget::RayJob { cluster, job_id } => {
            let dash = dashboard_session(k8s, ns, cluster).await?;
            let text = dash.client.logs(job_id).await?;
            Ok((format!("driver log of {job_id}"), text))
        }
        LogTarget::ClusterJobs { cluster } => {
            let dash = dashboard_session(k8s, ns, cluster).await?;
            let mut jobs = dash.client.list_jobs().await?;
            jobs.sort_by_key(|j| (j.status == crate::ray::JobStatus::Running, j.start_time));
            let Some(id) = jobs.last().and_then(|j| j.id()).map(str::to_string) else {
                return Ok((format!("no Ray jobs on {cluster} yet"), String::new()));
            };
            let text = dash.client.logs(&id).await?;
            Ok((format!("driver log of {id}"), text))
        }
    }
}

/// How often, at most, a changed view is sent. Nothing is sent while nothing changes (the
/// screen moves ages on by itself, from `created` and `last_seen`).
const COALESCE: Duration = Duration::from_millis(100);

/// Keep the view current until the screen sends [`Action::Quit`] (or goes away).
pub async fn live(
    k8s: &K8s,
    opts: &TopOptions,
    me: &str,
    updates: Sender<ScreenUpdate>,
    mut actions: Receiver<Action>,
) -> Result<()> {
    let ns = k8s.namespace.clone();
    let mut state = new_state(k8s, opts);
    let (tx, mut inputs) = mpsc::unbounded_channel::<Input>();
    let mut watches: Vec<JoinHandle<()>> = Vec::new();
    for what in Watched::ALL {
        // Gym pods are watched once a Gym run shows up.
        if what != Watched::GymPods {
            watches.push(spawn_watch(
                k8s,
                &ns,
                what,
                opts.user.as_deref(),
                tx.clone(),
            )?);
        }
    }
    let mut gym_pods_watched = false;
    let mut follower: Option<(String, LogTarget, JoinHandle<()>)> = None;
    let dashboards = Arc::new(tokio::sync::Mutex::new(Dashboards::default()));
    let mut dirty = true;
    let mut next_send = tokio::time::Instant::now();
    let result = loop {
        tokio::select! {
            input = inputs.recv() => {
                let Some(input) = input else { break Ok(()) };
                match input {
                    Input::Watch(what, WatchItem::Event(e)) => state.apply(what, e),
                    Input::Watch(what, WatchItem::Retrying(error)) => state.watch_down(what, &error),
                    Input::WatchFailed(what, e) => state.watch_down(what, &e.message),
                    Input::Log { run, text } => state.log_text(&run, &text),
                    Input::LogSource { run, source, note } => state.log_source(&run, source, note),
                    Input::Notice { title, body, error } => {
                        if updates.send(ScreenUpdate::Notice { title, body, error }).await.is_err() {
                            break Ok(());
                        }
                    }
                }
                dirty = true;
            }
            action = actions.recv() => {
                let Some(action) = action else { break Ok(()) };
                match action {
                    Action::Quit => break Ok(()),
                    Action::Select { name, .. } => {
                        state.select(&name);
                        dirty = true;
                        next_send = tokio::time::Instant::now();
                    }
                    Action::OpenLog { name, .. } => {
                        let lines = state.full_log(&name);
                        if updates.send(ScreenUpdate::FullLog { name, lines }).await.is_err() {
                            break Ok(());
                        }
                    }
                    Action::Stop { name, kind } => {
                        let object = state.object_of(kind, &name).cloned();
                        let (k8s, ns, me, tx) = (k8s.clone(), ns.clone(), me.to_string(), tx.clone());
                        tokio::spawn(async move {
                            let out = actions::stop(&k8s, &ns, &name, kind, object.as_ref(), &me).await;
                            notify(&tx, format!("stop {} {name}", kind.as_str()), out);
                        });
                    }
                    Action::Diagnose { name, kind } => {
                        let (k8s, ns, tx, width) = (k8s.clone(), ns.clone(), tx.clone(), opts.width);
                        tokio::spawn(async move {
                            let out = actions::diagnose_run(&k8s, &ns, &name, kind, width).await;
                            notify(&tx, format!("diagnose {} {name}", kind.as_str()), out);
                        });
                    }
                    Action::Dashboard { name, kind } => {
                        let cluster = match kind {
                            RunKind::RayJob => state.driver_of(&name).map(|(c, _)| c),
                            RunKind::RayCluster => Some(name.clone()),
                            RunKind::GymRun => None,
                        };
                        let (k8s, ns, tx, dashboards) = (k8s.clone(), ns.clone(), tx.clone(), dashboards.clone());
                        tokio::spawn(async move {
                            let out = match cluster {
                                Some(c) => dashboards.lock().await.open(&k8s, &ns, &c).await,
                                None => Err(crate::diag::Diag::new(
                                    "nrl::top::no_dashboard",
                                    format!("{} {name} has no Ray cluster (yet)", kind.as_str()),
                                )),
                            };
                            notify(&tx, format!("dashboard of {name}"), out);
                        });
                    }
                }
            }
            _ = tokio::time::sleep_until(next_send), if dirty => {
                if !gym_pods_watched && state.runs().iter().any(|(_, k)| *k == RunKind::GymRun) {
                    match spawn_watch(k8s, &ns, Watched::GymPods, opts.user.as_deref(), tx.clone()) {
                        Ok(task) => watches.push(task),
                        Err(e) => break Err(e),
                    }
                    gym_pods_watched = true;
                }
                // Follow the selected run's log (again, when the selection or its source
                // changed).
                let wanted = log_target(&state);
                let current = follower.as_ref().map(|(r, t, _)| (r.clone(), t.clone()));
                if wanted != current {
                    if let Some((_, _, task)) = follower.take() {
                        task.abort();
                    }
                    if let Some((run, target)) = wanted {
                        // A follow starts at the log's first byte.
                        state.reset_log(&run);
                        let task = tokio::spawn(follow_log(
                            k8s.clone(),
                            ns.clone(),
                            run.clone(),
                            target.clone(),
                            tx.clone(),
                        ));
                        follower = Some((run, target, task));
                    }
                }
                let view = state.view(jiff::Timestamp::now());
                if updates.send(ScreenUpdate::View(Box::new(view))).await.is_err() {
                    break Ok(());
                }
                dirty = false;
                next_send = tokio::time::Instant::now() + COALESCE;
            }
        }
    };
    for task in watches {
        task.abort();
    }
    if let Some((_, _, task)) = follower {
        task.abort();
    }
    result
}

fn notify(tx: &UnboundedSender<Input>, title: String, out: Result<Notice>) {
    let input = match out {
        Ok(n) => Input::Notice {
            title: n.title,
            body: n.body,
            error: false,
        },
        Err(e) => Input::Notice {
            title,
            body: match &e.help {
                Some(help) => format!("{}\nhelp: {help}", e.message),
                None => e.message.clone(),
            },
            error: true,
        },
    };
    let _ = tx.send(input);
}
