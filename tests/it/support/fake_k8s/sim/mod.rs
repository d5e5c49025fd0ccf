//! Controllers running inside the fake, driven by the store's change events: a kubelet for
//! pods, the KubeRay operator (RayCluster, RayJob), the Job and Deployment controllers.
//!
//! Each controller is a level-triggered `reconcile(ns, name)` that reads the store, writes
//! what should change (no-op writes are dropped by the store, so reconciles converge) and may
//! ask to be called again after a delay.

pub mod deployments;
pub mod jobs;
pub mod kubelet;
pub mod kuberay;
pub mod ray_runner;
pub mod rayjob;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::meta::{ApiResult, now_rfc3339};
use super::resources::{self, ResourceType};
use super::state::State;
use super::store::{EventType, StoredEvent};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Controller {
    Kubelet,
    RayCluster,
    RayJob,
    Job,
    Deployment,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Work {
    pub controller: Controller,
    pub namespace: String,
    pub name: String,
}

/// Memory the controllers keep between reconciles (what a real controller keeps in its
/// informer caches and work queues).
#[derive(Default)]
pub struct SimCtx {
    /// When the kubelet first saw a pod, and when it started running (by uid).
    pub pod_seen: HashMap<String, Instant>,
    pub pod_running: HashMap<String, Instant>,
    /// RayJob attempts (`<uid>/<jobId>`) whose job runner has been started.
    pub runners: HashSet<String>,
    /// RayJobs (by uid) the simulated Kueue has queued (suspended at creation).
    pub queued: HashSet<String>,
    /// When a RayJob was first seen finished (by uid), for its TTL.
    pub ended: HashMap<String, Instant>,
    /// Pods (by uid) whose scripted logs were written.
    pub logs_written: HashSet<String>,
    /// Events already emitted (reason + object uid), so they are emitted once.
    pub events_emitted: HashSet<String>,
}

/// Handle the reconcilers use to schedule a later call.
#[derive(Clone)]
pub struct Requeue(mpsc::UnboundedSender<Work>);

impl Requeue {
    pub fn after(&self, controller: Controller, ns: &str, name: &str, delay: Duration) {
        let work = Work {
            controller,
            namespace: ns.to_string(),
            name: name.to_string(),
        };
        let tx = self.0.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(work);
        });
    }
    pub fn now(&self, controller: Controller, ns: &str, name: &str) {
        let _ = self.0.send(Work {
            controller,
            namespace: ns.to_string(),
            name: name.to_string(),
        });
    }
}

pub fn spawn(state: Arc<State>, events: mpsc::UnboundedReceiver<Arc<StoredEvent>>) {
    state.handle.spawn(run(state.clone(), events));
    state.handle.spawn(super::delete::gc_loop(state.clone()));
}

fn owner_controllers(obj: &Value) -> Vec<(Controller, String)> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| {
                    let c = match r.get("kind").and_then(Value::as_str)? {
                        "RayCluster" => Controller::RayCluster,
                        "RayJob" => Controller::RayJob,
                        "Job" => Controller::Job,
                        "Deployment" => Controller::Deployment,
                        _ => return None,
                    };
                    Some((c, r.get("name").and_then(Value::as_str)?.to_string()))
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn run(state: Arc<State>, mut events: mpsc::UnboundedReceiver<Arc<StoredEvent>>) {
    let (tx, mut work_rx) = mpsc::unbounded_channel::<Work>();
    let requeue = Requeue(tx);
    let mut ctx = SimCtx::default();
    loop {
        let mut work: Vec<Work> = tokio::select! {
            ev = events.recv() => match ev {
                Some(ev) => work_for_event(&ev, &mut ctx),
                None => return,
            },
            w = work_rx.recv() => match w {
                Some(w) => vec![w],
                None => return,
            },
        };
        // Coalesce a burst: everything already queued is reconciled once.
        while let Ok(ev) = events.try_recv() {
            work.extend(work_for_event(&ev, &mut ctx));
        }
        while let Ok(w) = work_rx.try_recv() {
            work.push(w);
        }
        let mut seen = HashSet::new();
        for w in work {
            if seen.insert(w.clone()) {
                reconcile(&state, &mut ctx, &requeue, &w);
            }
        }
    }
}

fn work_for_event(ev: &StoredEvent, ctx: &mut SimCtx) -> Vec<Work> {
    let ns = ev.namespace().to_string();
    let name = ev.name().to_string();
    let mut out = Vec::new();
    let own = match ev.rt.kind {
        "Pod" => Some(Controller::Kubelet),
        "RayCluster" => Some(Controller::RayCluster),
        "RayJob" => Some(Controller::RayJob),
        "Job" => Some(Controller::Job),
        "Deployment" => Some(Controller::Deployment),
        _ => None,
    };
    if ev.kind == EventType::Deleted {
        let uid = super::meta::uid_of(&ev.object).to_string();
        ctx.pod_seen.remove(&uid);
        ctx.pod_running.remove(&uid);
        ctx.runners.retain(|r| !r.starts_with(&format!("{uid}/")));
        ctx.queued.remove(&uid);
        ctx.ended.remove(&uid);
        ctx.logs_written.remove(&uid);
    } else if let Some(c) = own {
        out.push(Work {
            controller: c,
            namespace: ns.clone(),
            name,
        });
    }
    for (c, owner) in owner_controllers(&ev.object) {
        out.push(Work {
            controller: c,
            namespace: ns.clone(),
            name: owner,
        });
    }
    out
}

fn reconcile(state: &Arc<State>, ctx: &mut SimCtx, requeue: &Requeue, w: &Work) {
    let (ns, name) = (w.namespace.as_str(), w.name.as_str());
    match w.controller {
        Controller::Kubelet => kubelet::reconcile(state, ctx, requeue, ns, name),
        Controller::RayCluster => kuberay::reconcile(state, ctx, requeue, ns, name),
        Controller::RayJob => rayjob::reconcile(state, ctx, requeue, ns, name),
        Controller::Job => jobs::reconcile(state, ctx, requeue, ns, name),
        Controller::Deployment => deployments::reconcile(state, ctx, requeue, ns, name),
    }
}

fn condition_key(c: &Value) -> (String, String) {
    let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    (s("type"), s("status"))
}

/// Compare statuses ignoring timestamps that change on every write.
pub fn without_volatile(status: &Value) -> Value {
    let mut s = status.clone();
    if let Some(m) = s.as_object_mut() {
        m.remove("lastUpdateTime");
        m.remove("stateTransitionTimes");
        if let Some(Value::Array(conds)) = m.get_mut("conditions") {
            for c in conds.iter_mut().filter_map(Value::as_object_mut) {
                for k in [
                    "lastTransitionTime",
                    "lastProbeTime",
                    "lastUpdateTime",
                    "lastHeartbeatTime",
                ] {
                    c.remove(k);
                }
            }
        }
    }
    s
}

/// Write a new status computed from the object, only when something besides timestamps
/// changed. Conditions keep their `lastTransitionTime` while their status is unchanged.
pub fn update_status(
    state: &State,
    rt: &'static ResourceType,
    ns: &str,
    name: &str,
    manager: &str,
    compute: impl FnOnce(&Value) -> Value,
) -> ApiResult<()> {
    let live = state.get_shared(rt, ns, name)?;
    let old = live.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut new = compute(&live);
    if without_volatile(&new) == without_volatile(&old) {
        return Ok(());
    }
    let now = now_rfc3339();
    if let Some(Value::Array(conds)) = new.get_mut("conditions") {
        let old_conds = old
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for c in conds.iter_mut() {
            let prev = old_conds
                .iter()
                .find(|o| condition_key(o) == condition_key(c));
            let t = prev
                .and_then(|p| p.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            if let Some(m) = c.as_object_mut() {
                m.entry("lastTransitionTime").or_insert(t);
            }
        }
    }
    state
        .mutate(rt, ns, name, manager, |o| o["status"] = new)
        .map(drop)
}

/// A condition entry.
pub fn condition(kind: &str, status: bool, reason: &str, message: &str) -> Value {
    json!({
        "type": kind,
        "status": if status { "True" } else { "False" },
        "reason": reason,
        "message": message,
    })
}

/// Emit a core/v1 Event about an object once (as the real components report problems).
pub fn emit_event(
    state: &State,
    ctx: &mut SimCtx,
    obj: &Value,
    kind: &str,
    reason: &str,
    message: &str,
    component: &str,
) {
    let uid = super::meta::uid_of(obj).to_string();
    if !ctx.events_emitted.insert(format!("{reason}/{uid}")) {
        return;
    }
    let ns = super::meta::namespace_of(obj).to_string();
    let name = super::meta::name_of(obj).to_string();
    let now = now_rfc3339();
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": format!("{name}.{}", super::meta::random_suffix()), "namespace": ns},
        "involvedObject": {
            "apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"),
            "name": name, "namespace": ns, "uid": uid,
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": component},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    });
    let _ = state.create(
        &resources::EVENTS,
        &ns,
        event,
        &super::state::WriteOpts::manager(component),
    );
}

/// The pods in a namespace matching a label map.
pub fn pods_matching(state: &State, ns: &str, labels: &Map<String, Value>) -> Vec<Value> {
    let sel = super::selectors::Selectors {
        labels: super::selectors::LabelSelector::from_match_labels(labels),
        fields: Default::default(),
    };
    state.list(&resources::PODS, Some(ns), &sel).0
}
