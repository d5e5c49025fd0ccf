//! What `nrl top` shows, as data: the full-screen view, `nrl top --once` (a table),
//! `nrl top -o json` and the `top::snapshot()` built-in all render this one value. The
//! field names are the JSON output's (stable, documented in `nrl top --help`).

use serde::Serialize;

/// One screen's worth of state.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TopView {
    pub context: String,
    pub namespace: String,
    /// Whose runs are shown; `None`: everyone's (`--all-users`).
    pub user: Option<String>,
    /// Whether every watch is live, or which are re-establishing themselves.
    pub connection: Connection,
    /// Runs and long-lived clusters, newest first.
    pub runs: Vec<RunRow>,
    /// The selected run's details (the first run when nothing was chosen).
    pub selected: Option<RunDetail>,
}

/// The watches' health.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Connection {
    /// Every watch has its initial list and is streaming.
    #[default]
    Live,
    /// Some watches lost their connection and are re-establishing it.
    Reconnecting {
        /// The watched kinds that are down (`pods`, `rayjobs`, …).
        watches: Vec<String>,
        /// The last error seen.
        error: String,
    },
}

/// What kind of run a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum RunKind {
    RayJob,
    RayCluster,
    GymRun,
}

impl RunKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RunKind::RayJob => "RayJob",
            RunKind::RayCluster => "RayCluster",
            RunKind::GymRun => "GymRun",
        }
    }
}

/// One run in the list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    /// The object's name (the RayJob, the RayCluster, or the Gym run id).
    pub name: String,
    pub kind: RunKind,
    /// The `nrl-k8s/owner` label.
    pub owner: Option<String>,
    /// RayJob: `jobDeploymentStatus` (and Ray's job status when it has one:
    /// `Running/RUNNING`); RayCluster: its `state`; Gym run: Job phases counted
    /// (`3 Succeeded, 1 Running`).
    pub state: String,
    /// Whether the state is an end (Complete, Failed, …): drawn dimmed.
    pub finished: bool,
    /// Whether something needs a look (a failed state, a warning event, a pod not
    /// running for a reason): drawn highlighted.
    pub alert: bool,
    /// RFC 3339 creation time.
    pub created: Option<String>,
    /// `5s`, `3m`, `2h` (kubectl's AGE).
    pub age: String,
    /// The W&B run URL, once the driver log printed it.
    pub wandb: Option<String>,
}

/// The selected run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunDetail {
    pub name: String,
    pub kind: RunKind,
    /// Each role's RayCluster with its pods (RayJob: the cluster it made; RayCluster:
    /// itself), or the Gym run's Jobs as one group.
    pub clusters: Vec<ClusterView>,
    /// The latest events of the run's objects, newest first.
    pub events: Vec<EventRow>,
    /// The driver log's last lines (or the Gym Job's pod log).
    pub log: LogTail,
    /// Training progress read from the log.
    pub progress: Progress,
}

/// A RayCluster (or a Gym run's Jobs) and its pods.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClusterView {
    pub name: String,
    /// `training`, `generation`, … (the `nrl.ai/role` label), when set.
    pub role: Option<String>,
    /// RayCluster `state`, or a Gym Job's phase summary.
    pub state: String,
    pub pods: Vec<PodRow>,
}

/// One pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PodRow {
    pub name: String,
    /// `head`, the worker group's name, or the Gym benchmark.
    pub group: String,
    /// `Running`, `Pending`, `Succeeded`, …
    pub phase: String,
    /// Why it is not running (`Unschedulable`, `ImagePullBackOff`, `CrashLoopBackOff`,
    /// `OOMKilled`, `Terminating`).
    pub reason: Option<String>,
    /// Ready containers out of all (`1/1`).
    pub ready: String,
    pub restarts: i64,
    pub node: Option<String>,
    /// `nvidia.com/gpu` requested by its containers.
    pub gpus: i64,
}

/// One event of the run's objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EventRow {
    /// `Pod/rc-train-head-x`.
    pub object: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub kind: String,
    pub reason: String,
    pub message: String,
    pub count: i64,
    /// RFC 3339.
    pub last_seen: Option<String>,
    pub age: String,
}

/// The last lines of the run's log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LogTail {
    /// Oldest first; at most the view's tail length.
    pub lines: Vec<String>,
    /// Where the lines come from (`driver log of raysubmit_…`, `pod gpqa-…`).
    pub source: Option<String>,
    /// Why there is no log yet, or what went wrong reading it.
    pub note: Option<String>,
}

/// Training progress parsed from the log (NeMo-RL's GRPO/SFT/DPO lines by default).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Progress {
    /// The step banner's `N/M` (`Step 3/100`).
    pub step: Option<u64>,
    pub max_steps: Option<u64>,
    /// The epoch banner's `N/M`.
    pub epoch: Option<u64>,
    pub max_epochs: Option<u64>,
    pub loss: Option<f64>,
    pub reward: Option<f64>,
    /// Tokens per second per GPU (NeMo-RL's `E2E (Tokens/sec/gpu)`), or samples per
    /// second where that is what the log gives.
    pub throughput: Option<f64>,
    pub throughput_unit: Option<String>,
    /// Seconds the last step took.
    pub step_time: Option<f64>,
    /// vLLM's `Processed prompts: N/M`.
    pub prompts_done: Option<u64>,
    pub prompts_total: Option<u64>,
    /// The last validation accuracy.
    pub validation_accuracy: Option<f64>,
    /// One point per finished step, oldest first (at most the last 120): for sparklines.
    pub history: Vec<StepPoint>,
}

/// The numbers of one finished step.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StepPoint {
    pub step: u64,
    pub loss: Option<f64>,
    pub reward: Option<f64>,
    pub throughput: Option<f64>,
    pub step_time: Option<f64>,
}

/// What the screen asks the session to do (keys the user pressed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Show this run's details (its pods, events, log, progress).
    Select {
        name: String,
        kind: RunKind,
    },
    /// The pager wants the whole log kept for this run.
    OpenLog {
        name: String,
        kind: RunKind,
    },
    /// Stop this run (the user confirmed; the owner check still applies).
    Stop {
        name: String,
        kind: RunKind,
    },
    /// Run `nrl diagnose` on this run.
    Diagnose {
        name: String,
        kind: RunKind,
    },
    /// Open (or reuse) the dashboard port-forward of this run's cluster.
    Dashboard {
        name: String,
        kind: RunKind,
    },
    Quit,
}

/// What the session sends the screen.
#[derive(Debug, Clone, PartialEq)]
pub enum ScreenUpdate {
    /// The latest view.
    View(Box<TopView>),
    /// The whole kept log of a run, for the pager (answer to [`Action::OpenLog`]).
    FullLog { name: String, lines: Vec<String> },
    /// The outcome of an action, shown in a box until dismissed (diagnose findings, the
    /// dashboard URL, a stop's result or refusal).
    Notice {
        title: String,
        body: String,
        error: bool,
    },
}
