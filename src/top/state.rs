//! The live state behind `nrl top`: the objects the watches delivered, the logs read so
//! far, and the selection; [`TopState::view`] turns them into the [`TopView`] everything
//! draws. Pure (no I/O), so a scripted scenario of watch events is a unit test.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use serde_json::Value as Json;

use super::model::{
    ClusterView, Connection, EventRow, LogTail, PodRow, Progress, RunDetail, RunKind, RunRow,
    TopView,
};
use super::progress::{ProgressParser, ProgressPatterns};
use crate::gym::names::BENCHMARK_LABEL as GYM_BENCHMARK_LABEL;
use crate::gym::names::RUN_LABEL as GYM_RUN_LABEL;
use crate::k8s::status::{JobStatus, PodStatus, RayClusterStatus, RayJobStatus};
use crate::k8s::wait::str_at;
use crate::k8s::watch::LabelledEvent;
use crate::launch::inspect::{PodInfo, age};
use crate::launch::raycluster::owner::OWNER_LABEL;

/// The `nrl.ai/role` label nrl puts on each role's RayCluster.
const ROLE_LABEL: &str = "nrl.ai/role";
/// What KubeRay labels a RayJob's cluster with (`ray.io/originated-from-cr-name`).
const ORIGIN_LABEL: &str = "ray.io/originated-from-cr-name";
/// Events shown for the selected run.
const EVENTS_SHOWN: usize = 50;
/// Lines of a run's log kept for the pager.
pub const LOG_KEPT: usize = 20_000;

/// What one watch delivers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Watched {
    RayJobs,
    RayClusters,
    /// Pods with a `ray.io/cluster` label.
    RayPods,
    /// Gym benchmark Jobs (`app.kubernetes.io/managed-by=nemo-gym`).
    GymJobs,
    /// Pods with a `gym-job-id` label.
    GymPods,
    Events,
}

impl Watched {
    pub const ALL: [Watched; 6] = [
        Watched::RayJobs,
        Watched::RayClusters,
        Watched::RayPods,
        Watched::GymJobs,
        Watched::GymPods,
        Watched::Events,
    ];

    /// The name shown when the watch is down.
    pub fn name(self) -> &'static str {
        match self {
            Watched::RayJobs => "rayjobs",
            Watched::RayClusters => "rayclusters",
            Watched::RayPods => "pods",
            Watched::GymJobs => "jobs",
            Watched::GymPods => "gym pods",
            Watched::Events => "events",
        }
    }
}

/// One run's log: the last lines, and what they said about progress.
#[derive(Debug)]
struct RunLog {
    lines: VecDeque<String>,
    /// Bytes after the last newline (a line still being written).
    partial: String,
    parser: ProgressParser,
    source: Option<String>,
    note: Option<String>,
}

impl RunLog {
    fn new(patterns: &ProgressPatterns) -> RunLog {
        RunLog {
            lines: VecDeque::new(),
            partial: String::new(),
            parser: ProgressParser::new(patterns.clone()),
            source: None,
            note: None,
        }
    }

    fn push_text(&mut self, text: &str) {
        self.partial.push_str(text);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            let line = line.trim_end_matches(['\n', '\r']);
            self.parser.feed(line);
            if self.lines.len() == LOG_KEPT {
                self.lines.pop_front();
            }
            self.lines.push_back(line.to_string());
        }
    }
}

/// Lookups built once per view (see [`TopState::index`]).
#[derive(Default)]
struct Index<'a> {
    pods_by_cluster: HashMap<&'a str, Vec<&'a Json>>,
    gym_pods_by_run: HashMap<&'a str, Vec<&'a Json>>,
    gym_jobs_by_run: BTreeMap<&'a str, Vec<&'a Json>>,
    clusters_by_origin: HashMap<&'a str, Vec<&'a str>>,
    events_by_object: HashMap<(&'a str, &'a str), Vec<&'a Json>>,
}

/// The objects seen, the logs read, and what is selected.
#[derive(Debug)]
pub struct TopState {
    context: String,
    namespace: String,
    /// Whose runs are shown; `None`: everyone's.
    user: Option<String>,
    objects: BTreeMap<Watched, BTreeMap<String, Json>>,
    /// Watches that lost their connection, with the last error.
    down: BTreeMap<Watched, String>,
    logs: HashMap<String, RunLog>,
    patterns: ProgressPatterns,
    /// The run the user chose (by name); the newest run when unset or gone.
    selected: Option<String>,
    /// Log lines in a view.
    tail: usize,
}

impl TopState {
    pub fn new(
        context: &str,
        namespace: &str,
        user: Option<&str>,
        patterns: ProgressPatterns,
        tail: usize,
    ) -> TopState {
        TopState {
            context: context.to_string(),
            namespace: namespace.to_string(),
            user: user.map(str::to_string),
            objects: BTreeMap::new(),
            down: BTreeMap::new(),
            logs: HashMap::new(),
            patterns,
            selected: None,
            tail,
        }
    }

    /// A watch's change.
    pub fn apply(&mut self, what: Watched, event: LabelledEvent) {
        self.down.remove(&what);
        let map = self.objects.entry(what).or_default();
        match event {
            LabelledEvent::Reset(all) => {
                map.clear();
                for o in all {
                    map.insert(key(&o), o);
                }
            }
            LabelledEvent::Applied(o) => {
                map.insert(key(&o), o);
            }
            LabelledEvent::Deleted(o) => {
                map.remove(&key(&o));
            }
        }
    }

    /// A watch lost its connection (it re-establishes itself).
    pub fn watch_down(&mut self, what: Watched, error: &str) {
        self.down.insert(what, error.to_string());
    }

    /// Choose the run whose details are shown.
    pub fn select(&mut self, name: &str) {
        self.selected = Some(name.to_string());
    }

    /// More of a run's log (any chunking; lines are cut at newlines).
    pub fn log_text(&mut self, run: &str, text: &str) {
        let patterns = &self.patterns;
        self.logs
            .entry(run.to_string())
            .or_insert_with(|| RunLog::new(patterns))
            .push_text(text);
    }

    /// Forget a run's log (its follow starts again from the first byte).
    pub fn reset_log(&mut self, run: &str) {
        self.logs.remove(run);
    }

    /// Where a run's log comes from, or why there is none.
    pub fn log_source(&mut self, run: &str, source: Option<String>, note: Option<String>) {
        let patterns = &self.patterns;
        let log = self
            .logs
            .entry(run.to_string())
            .or_insert_with(|| RunLog::new(patterns));
        if source.is_some() {
            log.source = source;
        }
        log.note = note;
    }

    /// Every kept line of a run's log (for the pager).
    pub fn full_log(&self, run: &str) -> Vec<String> {
        let Some(log) = self.logs.get(run) else {
            return Vec::new();
        };
        let mut lines: Vec<String> = log.lines.iter().cloned().collect();
        if !log.partial.is_empty() {
            lines.push(log.partial.clone());
        }
        lines
    }

    fn all(&self, what: Watched) -> impl Iterator<Item = &Json> {
        self.objects.get(&what).into_iter().flat_map(|m| m.values())
    }

    fn get(&self, what: Watched, name: &str) -> Option<&Json> {
        self.objects.get(&what).and_then(|m| m.get(name))
    }

    fn mine(&self, obj: &Json) -> bool {
        match &self.user {
            None => true,
            Some(me) => label(obj, OWNER_LABEL) == Some(me.as_str()),
        }
    }

    /// The runs, newest first: the user's RayJobs, their RayClusters not made by a
    /// RayJob, and Gym runs (Jobs grouped by run id).
    pub fn runs(&self) -> Vec<(String, RunKind)> {
        self.rows(jiff::Timestamp::now())
            .into_iter()
            .map(|r| (r.name, r.kind))
            .collect()
    }

    fn rows(&self, now: jiff::Timestamp) -> Vec<RunRow> {
        self.rows_with(&self.index(), now)
    }

    fn rows_with(&self, ix: &Index<'_>, now: jiff::Timestamp) -> Vec<RunRow> {
        let mut rows = Vec::new();
        for job in self.all(Watched::RayJobs).filter(|o| self.mine(o)) {
            let name = name_of(job);
            let status = RayJobStatus::of(job);
            let state = match (&status.deployment, &status.job) {
                (Some(d), Some(j)) => format!("{d}/{j}"),
                (Some(d), None) => d.clone(),
                (None, _) => "New".to_string(),
            };
            let failed = matches!(
                status.deployment.as_deref(),
                Some("Failed" | "ValidationFailed")
            ) || status.job.as_deref() == Some("FAILED");
            let clusters = self.clusters_of_rayjob(ix, job);
            rows.push(self.row(
                job,
                RunKind::RayJob,
                state,
                status.is_terminal(),
                failed || self.troubled(ix, RunKind::RayJob, &name, &clusters),
                now,
            ));
        }
        for rc in self.all(Watched::RayClusters) {
            if made_by_rayjob(rc) || !self.mine(rc) {
                continue;
            }
            let name = name_of(rc);
            let status = RayClusterStatus::of(rc);
            let state = status
                .state
                .clone()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "new".to_string());
            let failed = state == "failed";
            rows.push(self.row(
                rc,
                RunKind::RayCluster,
                state,
                false,
                failed
                    || self.troubled(ix, RunKind::RayCluster, &name, std::slice::from_ref(&name)),
                now,
            ));
        }
        for (run, jobs) in self.gym_runs(ix) {
            let first = jobs[0];
            let (state, finished, failed) = gym_state(&jobs);
            let mut row = self.row(
                first,
                RunKind::GymRun,
                state,
                finished,
                failed || self.troubled(ix, RunKind::GymRun, &run, &[]),
                now,
            );
            row.name = run;
            // The run's age is its oldest Job's.
            row.created = jobs
                .iter()
                .filter_map(|j| str_at(j, "/metadata/creationTimestamp"))
                .min()
                .map(str::to_string);
            row.age = row
                .created
                .as_deref()
                .map(|c| age(c, now))
                .unwrap_or_default();
            rows.push(row);
        }
        // Newest first; equal times by name, so the order is stable.
        rows.sort_by(|a, b| b.created.cmp(&a.created).then_with(|| a.name.cmp(&b.name)));
        rows
    }

    fn row(
        &self,
        obj: &Json,
        kind: RunKind,
        state: String,
        finished: bool,
        alert: bool,
        now: jiff::Timestamp,
    ) -> RunRow {
        let name = name_of(obj);
        let created = str_at(obj, "/metadata/creationTimestamp").map(str::to_string);
        RunRow {
            wandb: self
                .logs
                .get(&name)
                .and_then(|l| l.parser.wandb_url())
                .map(str::to_string),
            name,
            kind,
            owner: label(obj, OWNER_LABEL).map(str::to_string),
            state,
            finished,
            alert,
            age: created.as_deref().map(|c| age(c, now)).unwrap_or_default(),
            created,
        }
    }

    /// The objects grouped the ways a view looks them up, built once per view, so a view
    /// costs time linear in the objects (not runs × pods × events).
    fn index(&self) -> Index<'_> {
        let mut ix = Index::default();
        for p in self.all(Watched::RayPods) {
            if let Some(c) = label(p, "ray.io/cluster") {
                ix.pods_by_cluster.entry(c).or_default().push(p);
            }
        }
        for p in self.all(Watched::GymPods) {
            if let Some(run) = label(p, GYM_RUN_LABEL) {
                ix.gym_pods_by_run.entry(run).or_default().push(p);
            }
        }
        for j in self.all(Watched::GymJobs) {
            if let Some(run) = label(j, GYM_RUN_LABEL) {
                ix.gym_jobs_by_run.entry(run).or_default().push(j);
            }
        }
        for rc in self.all(Watched::RayClusters) {
            if let (Some(origin), Some(name)) =
                (label(rc, ORIGIN_LABEL), str_at(rc, "/metadata/name"))
            {
                ix.clusters_by_origin.entry(origin).or_default().push(name);
            }
        }
        for e in self.all(Watched::Events) {
            let kind = str_at(e, "/involvedObject/kind").unwrap_or("");
            let name = str_at(e, "/involvedObject/name").unwrap_or("");
            ix.events_by_object.entry((kind, name)).or_default().push(e);
        }
        ix
    }

    /// Gym runs of the user: run id -> its Jobs (by name).
    fn gym_runs<'a>(&self, ix: &Index<'a>) -> BTreeMap<String, Vec<&'a Json>> {
        ix.gym_jobs_by_run
            .iter()
            .filter_map(|(run, jobs)| {
                let mine: Vec<&Json> = jobs.iter().copied().filter(|j| self.mine(j)).collect();
                (!mine.is_empty()).then(|| (run.to_string(), mine))
            })
            .collect()
    }

    /// The RayClusters a RayJob made: `status.rayClusterName`, and any cluster labelled
    /// as originating from it.
    fn clusters_of_rayjob(&self, ix: &Index<'_>, job: &Json) -> Vec<String> {
        let name = name_of(job);
        let mut out: BTreeSet<String> = BTreeSet::new();
        if let Some(c) = RayJobStatus::of(job).cluster {
            out.insert(c);
        }
        for c in ix
            .clusters_by_origin
            .get(name.as_str())
            .into_iter()
            .flatten()
        {
            out.insert(c.to_string());
        }
        out.into_iter().collect()
    }

    /// Whether a run's pods or events say something is wrong (a pod not running for a
    /// reason, a warning event).
    fn troubled(&self, ix: &Index<'_>, kind: RunKind, run: &str, clusters: &[String]) -> bool {
        let pods = self.pods_of(ix, kind, run, clusters);
        let bad_pod = pods.iter().any(|p| {
            let info = PodInfo::of(p);
            matches!(info.phase.as_str(), "Failed")
                || info
                    .reason
                    .as_deref()
                    .is_some_and(|r| r != "Terminating" && r != "ContainerCreating")
        });
        bad_pod
            || self
                .events_of(ix, kind, run, clusters, &pods)
                .iter()
                .any(|e| str_at(e, "/type") == Some("Warning"))
    }

    fn pods_of<'a>(
        &self,
        ix: &Index<'a>,
        kind: RunKind,
        run: &str,
        clusters: &[String],
    ) -> Vec<&'a Json> {
        match kind {
            RunKind::GymRun => ix.gym_pods_by_run.get(run).cloned().unwrap_or_default(),
            _ => clusters
                .iter()
                .flat_map(|c| ix.pods_by_cluster.get(c.as_str()).into_iter().flatten())
                .copied()
                .collect(),
        }
    }

    /// Events of the run's objects, newest first.
    fn events_of<'a>(
        &self,
        ix: &Index<'a>,
        kind: RunKind,
        run: &str,
        clusters: &[String],
        pods: &[&Json],
    ) -> Vec<&'a Json> {
        let mut objects: BTreeSet<(&str, String)> = BTreeSet::new();
        match kind {
            RunKind::RayJob => {
                objects.insert(("RayJob", run.to_string()));
            }
            RunKind::RayCluster => {}
            RunKind::GymRun => {
                for job in ix.gym_jobs_by_run.get(run).into_iter().flatten() {
                    objects.insert(("Job", name_of(job)));
                }
            }
        }
        for c in clusters {
            objects.insert(("RayCluster", c.clone()));
        }
        for p in pods {
            objects.insert(("Pod", name_of(p)));
        }
        let mut events: Vec<&Json> = objects
            .iter()
            .flat_map(|(k, n)| {
                ix.events_by_object
                    .get(&(*k, n.as_str()))
                    .into_iter()
                    .flatten()
            })
            .copied()
            .collect();
        events.sort_by(|a, b| event_time(b).cmp(&event_time(a)));
        events
    }

    /// The screen's data.
    pub fn view(&self, now: jiff::Timestamp) -> TopView {
        let ix = self.index();
        let runs = self.rows_with(&ix, now);
        let selected = self
            .selected
            .as_deref()
            .and_then(|s| runs.iter().find(|r| r.name == s))
            .or(runs.first())
            .map(|row| self.detail(&ix, row, now));
        let connection = if self.down.is_empty() {
            Connection::Live
        } else {
            Connection::Reconnecting {
                watches: self.down.keys().map(|w| w.name().to_string()).collect(),
                error: self.down.values().last().cloned().unwrap_or_default(),
            }
        };
        TopView {
            context: self.context.clone(),
            namespace: self.namespace.clone(),
            user: self.user.clone(),
            connection,
            runs,
            selected,
        }
    }

    /// The name and kind of the run whose details a view shows.
    pub fn selected(&self) -> Option<(String, RunKind)> {
        let runs = self.rows(jiff::Timestamp::now());
        self.selected
            .as_deref()
            .and_then(|s| runs.iter().find(|r| r.name == s))
            .or(runs.first())
            .map(|r| (r.name.clone(), r.kind))
    }

    /// What a RayJob run's driver log is: (its cluster, the Ray submission id), once
    /// KubeRay has both.
    pub fn driver_of(&self, rayjob: &str) -> Option<(String, String)> {
        let status = RayJobStatus::of(self.get(Watched::RayJobs, rayjob)?);
        Some((status.cluster?, status.job_id?))
    }

    /// The first pod of a Gym run that has started (whose log can be read).
    pub fn gym_pod_of(&self, run: &str) -> Option<String> {
        let ix = self.index();
        let mut pods: Vec<&Json> = self.pods_of(&ix, RunKind::GymRun, run, &[]);
        pods.sort_by_key(|p| str_at(p, "/metadata/creationTimestamp").unwrap_or(""));
        pods.iter()
            .find(|p| PodStatus::of(p).is_running() || PodStatus::of(p).is_finished())
            .map(|p| name_of(p))
    }

    /// The run's own object (RayJob, RayCluster, or its first Gym Job), for the owner check.
    pub fn object_of(&self, kind: RunKind, run: &str) -> Option<&Json> {
        match kind {
            RunKind::RayJob => self.get(Watched::RayJobs, run),
            RunKind::RayCluster => self.get(Watched::RayClusters, run),
            RunKind::GymRun => self
                .all(Watched::GymJobs)
                .find(|j| label(j, GYM_RUN_LABEL) == Some(run)),
        }
    }

    fn detail(&self, ix: &Index<'_>, row: &RunRow, now: jiff::Timestamp) -> RunDetail {
        let clusters: Vec<String> = match row.kind {
            RunKind::RayJob => self
                .get(Watched::RayJobs, &row.name)
                .map(|j| self.clusters_of_rayjob(ix, j))
                .unwrap_or_default(),
            RunKind::RayCluster => vec![row.name.clone()],
            RunKind::GymRun => Vec::new(),
        };
        let pods = self.pods_of(ix, row.kind, &row.name, &clusters);
        let events = self
            .events_of(ix, row.kind, &row.name, &clusters, &pods)
            .into_iter()
            .take(EVENTS_SHOWN)
            .map(|e| event_row(e, now))
            .collect();
        let cluster_views = match row.kind {
            RunKind::GymRun => {
                let jobs = self.gym_runs(ix).remove(&row.name).unwrap_or_default();
                vec![ClusterView {
                    name: row.name.clone(),
                    role: None,
                    state: gym_state(&jobs).0,
                    pods: sorted_pods(&pods, |p| {
                        label(p, GYM_BENCHMARK_LABEL).unwrap_or("?").to_string()
                    }),
                }]
            }
            _ => clusters
                .iter()
                .map(|c| {
                    let rc = self.get(Watched::RayClusters, c);
                    let its: Vec<&Json> = pods
                        .iter()
                        .copied()
                        .filter(|p| label(p, "ray.io/cluster") == Some(c.as_str()))
                        .collect();
                    ClusterView {
                        name: c.clone(),
                        role: rc.and_then(|rc| label(rc, ROLE_LABEL)).map(str::to_string),
                        state: rc
                            .and_then(|rc| RayClusterStatus::of(rc).state)
                            .filter(|s| !s.is_empty())
                            .unwrap_or_else(|| "-".to_string()),
                        pods: sorted_pods(&its, ray_group),
                    }
                })
                .collect(),
        };
        let (log, progress) = match self.logs.get(&row.name) {
            Some(l) => {
                let skip = l.lines.len().saturating_sub(self.tail);
                (
                    LogTail {
                        lines: l.lines.iter().skip(skip).cloned().collect(),
                        source: l.source.clone(),
                        note: l.note.clone(),
                    },
                    l.parser.progress().clone(),
                )
            }
            None => (LogTail::default(), Progress::default()),
        };
        RunDetail {
            name: row.name.clone(),
            kind: row.kind,
            clusters: cluster_views,
            events,
            log,
            progress,
        }
    }
}

/// Head first, then by group and name.
fn sorted_pods(pods: &[&Json], group: impl Fn(&Json) -> String) -> Vec<PodRow> {
    let mut rows: Vec<PodRow> = pods.iter().map(|p| pod_row(p, group(p))).collect();
    rows.sort_by(|a, b| {
        (a.group != "head", &a.group, &a.name).cmp(&(b.group != "head", &b.group, &b.name))
    });
    rows
}

/// `head`, or the worker group's name (`ray.io/group`).
fn ray_group(pod: &Json) -> String {
    if label(pod, "ray.io/node-type") == Some("head") {
        return "head".to_string();
    }
    label(pod, "ray.io/group").unwrap_or("worker").to_string()
}

fn pod_row(pod: &Json, group: String) -> PodRow {
    let info = PodInfo::of(pod);
    let status = PodStatus::of(pod);
    let total = status.containers.len();
    let ready = status.containers.iter().filter(|c| c.ready).count();
    let total = if total == 0 {
        pod.pointer("/spec/containers")
            .and_then(Json::as_array)
            .map_or(0, Vec::len)
    } else {
        total
    };
    PodRow {
        name: info.name,
        group,
        phase: info.phase,
        reason: info.reason,
        ready: format!("{ready}/{total}"),
        restarts: info.restarts,
        node: str_at(pod, "/spec/nodeName").map(str::to_string),
        gpus: gpus_of(pod),
    }
}

/// `nvidia.com/gpu` of the pod's containers (limits, else requests).
fn gpus_of(pod: &Json) -> i64 {
    let Some(containers) = pod.pointer("/spec/containers").and_then(Json::as_array) else {
        return 0;
    };
    containers
        .iter()
        .map(|c| {
            let get = |which: &str| {
                c.pointer(&format!("/resources/{which}/nvidia.com~1gpu"))
                    .and_then(|v| match v {
                        Json::Number(n) => n.as_i64(),
                        Json::String(s) => s.parse().ok(),
                        _ => None,
                    })
            };
            get("limits").or_else(|| get("requests")).unwrap_or(0)
        })
        .sum()
}

/// A Gym run's state from its Jobs: phases counted (`3 Succeeded, 1 Running`), whether
/// every Job finished, and whether one failed.
fn gym_state(jobs: &[&Json]) -> (String, bool, bool) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failed = false;
    let mut finished = true;
    for j in jobs {
        let status = JobStatus::of(j);
        let phase = if status.succeeded() {
            "Succeeded"
        } else if status.failed().is_some() {
            failed = true;
            "Failed"
        } else if status.active > 0 {
            finished = false;
            "Running"
        } else {
            finished = false;
            "Pending"
        };
        *counts.entry(phase).or_default() += 1;
    }
    let order = ["Running", "Pending", "Succeeded", "Failed"];
    let text = order
        .iter()
        .filter_map(|p| counts.get(p).map(|n| format!("{n} {p}")))
        .collect::<Vec<_>>()
        .join(", ");
    (text, finished && !jobs.is_empty(), failed)
}

fn event_row(e: &Json, now: jiff::Timestamp) -> EventRow {
    let last_seen = event_time(e).map(str::to_string);
    EventRow {
        object: format!(
            "{}/{}",
            str_at(e, "/involvedObject/kind").unwrap_or("?"),
            str_at(e, "/involvedObject/name").unwrap_or("?")
        ),
        kind: str_at(e, "/type").unwrap_or("Normal").to_string(),
        reason: str_at(e, "/reason").unwrap_or("").to_string(),
        message: str_at(e, "/message").unwrap_or("").trim().to_string(),
        count: e
            .pointer("/count")
            .and_then(Json::as_i64)
            .or_else(|| e.pointer("/series/count").and_then(Json::as_i64))
            .unwrap_or(1),
        age: last_seen
            .as_deref()
            .map(|t| age(t, now))
            .unwrap_or_default(),
        last_seen,
    }
}

/// When an event last happened: `lastTimestamp`, `series.lastObservedTime`, `eventTime`,
/// else its creation (core/v1 Event; the newer fields are set by events.k8s.io writers).
fn event_time(e: &Json) -> Option<&str> {
    [
        "/lastTimestamp",
        "/series/lastObservedTime",
        "/eventTime",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .find_map(|p| str_at(e, p).filter(|s| !s.is_empty()))
}

fn made_by_rayjob(rc: &Json) -> bool {
    label(rc, "ray.io/originated-from-crd") == Some("RayJob")
        || rc
            .pointer("/metadata/ownerReferences")
            .and_then(Json::as_array)
            .is_some_and(|refs| refs.iter().any(|r| str_at(r, "/kind") == Some("RayJob")))
}

fn label<'a>(obj: &'a Json, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("labels")?.get(key)?.as_str()
}

fn name_of(obj: &Json) -> String {
    str_at(obj, "/metadata/name").unwrap_or("?").to_string()
}

/// Objects by name; events by uid (several events may share a name in a relist).
fn key(obj: &Json) -> String {
    str_at(obj, "/metadata/uid")
        .filter(|_| str_at(obj, "/kind") == Some("Event") || obj.get("involvedObject").is_some())
        .or_else(|| str_at(obj, "/metadata/name"))
        .unwrap_or("?")
        .to_string()
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
