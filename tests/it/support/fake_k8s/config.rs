//! Tunables and scripted outcomes: how long simulated things take and how they end.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use super::meta::glob_match;
use super::selectors::LabelSelector;

/// Simulation timing. The defaults are scaled down for tests (real clusters take minutes).
#[derive(Debug, Clone)]
pub struct Timings {
    /// Pod creation until Running (scheduling, image pull, container start).
    pub pod_start: Duration,
    /// Graceful termination: how long a deleted Pod lingers with a deletionTimestamp.
    pub pod_termination: Duration,
    /// How long a deleted object of other kinds lingers (by kind), as if a finalizer ran.
    pub deletion_delay: HashMap<String, Duration>,
    /// Default run time of a simulated Job pod's main containers.
    pub job_pod_run: Duration,
    /// Default run time of a simulated Ray job (fake runner).
    pub ray_job_run: Duration,
    /// Pods Running until a Deployment reports Available.
    pub deployment_ready: Duration,
    /// `ttlSecondsAfterFinished` of RayJobs is multiplied by this.
    pub ttl_scale: f64,
    /// How often watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Poll interval of the real-Ray job runner (it backs off up to 8× this).
    pub ray_poll: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            pod_start: Duration::from_millis(150),
            pod_termination: Duration::from_millis(50),
            deletion_delay: HashMap::new(),
            job_pod_run: Duration::from_millis(300),
            ray_job_run: Duration::from_millis(400),
            deployment_ready: Duration::from_millis(100),
            ttl_scale: 0.01,
            bookmark_interval: Duration::from_secs(1),
            ray_poll: Duration::from_millis(200),
        }
    }
}

/// How the simulated KubeRay operator treats a RayCluster.
#[derive(Debug, Clone, PartialEq)]
pub enum ClusterFate {
    /// Pods start, the cluster becomes `ready`.
    Ready,
    /// Pods stay Pending (Unschedulable); the state never becomes `ready`.
    StuckPending,
    /// The head pod's container keeps crashing (`CrashLoopBackOff`): KubeRay v1.5.1 never
    /// sets a `failed` state (the constant is deprecated, `apis/ray/v1/raycluster_types.go`
    /// `Failed`); the cluster just never becomes ready and `HeadPodReady` says why.
    HeadCrashLoop,
    /// The operator leaves it alone (no pods, no status writes): the test drives it.
    Unmanaged,
}

/// How a Ray job ends under the fake runner.
#[derive(Debug, Clone, PartialEq)]
pub enum RayJobEnd {
    Succeeded,
    Failed(String),
    Stopped,
}

/// A scripted Ray job: runs for `run_time`, writes `logs` to the head pod's log, ends.
#[derive(Debug, Clone)]
pub struct RayJobScript {
    pub end: RayJobEnd,
    pub run_time: Option<Duration>,
    pub logs: Vec<String>,
}

impl RayJobScript {
    pub fn succeeds() -> Self {
        RayJobScript {
            end: RayJobEnd::Succeeded,
            run_time: None,
            logs: Vec::new(),
        }
    }
    pub fn fails(message: &str) -> Self {
        RayJobScript {
            end: RayJobEnd::Failed(message.to_string()),
            run_time: None,
            logs: Vec::new(),
        }
    }
    pub fn stopped() -> Self {
        RayJobScript {
            end: RayJobEnd::Stopped,
            run_time: None,
            logs: Vec::new(),
        }
    }
    pub fn running_for(mut self, d: Duration) -> Self {
        self.run_time = Some(d);
        self
    }
    pub fn with_logs(mut self, lines: &[&str]) -> Self {
        self.logs = lines.iter().map(|s| s.to_string()).collect();
        self
    }
}

/// A scripted batch/v1 Job: one exit code per pod attempt (the last one repeats), log lines
/// per container, and how long each pod runs.
#[derive(Debug, Clone)]
pub struct JobScript {
    pub exit_codes: Vec<i32>,
    pub run_time: Option<Duration>,
    /// (container name, line); lines of containers a pod does not have are dropped.
    pub logs: Vec<(String, String)>,
}

impl JobScript {
    pub fn succeeds() -> Self {
        JobScript {
            exit_codes: vec![0],
            run_time: None,
            logs: Vec::new(),
        }
    }
    pub fn fails(exit_code: i32) -> Self {
        JobScript {
            exit_codes: vec![exit_code],
            run_time: None,
            logs: Vec::new(),
        }
    }
    /// Exit codes of successive attempts, e.g. `[1, 0]`: the first pod fails, the retry passes.
    pub fn attempts(codes: &[i32]) -> Self {
        JobScript {
            exit_codes: codes.to_vec(),
            run_time: None,
            logs: Vec::new(),
        }
    }
    pub fn running_for(mut self, d: Duration) -> Self {
        self.run_time = Some(d);
        self
    }
    pub fn log(mut self, container: &str, line: &str) -> Self {
        self.logs.push((container.to_string(), line.to_string()));
        self
    }
    pub fn exit_code_for_attempt(&self, attempt: usize) -> i32 {
        self.exit_codes
            .get(attempt)
            .or(self.exit_codes.last())
            .copied()
            .unwrap_or(0)
    }
}

/// What the simulated kubelet does with a pod.
#[derive(Debug, Clone, PartialEq)]
pub enum PodFate {
    Run,
    /// Stays Pending with `PodScheduled=False`, reason Unschedulable, and a FailedScheduling event.
    Unschedulable(String),
    /// Stays Pending with the containers waiting in `ImagePullBackOff`.
    ImagePullBackOff,
    /// Running, but the containers keep crashing (`CrashLoopBackOff`, restartCount grows).
    CrashLoopBackOff,
    /// Stays Pending like `Unschedulable`, with this exact FitError text (no `0/1 nodes`
    /// prefix added), e.g. `0/12 nodes are available: 4 Insufficient nvidia.com/gpu, …`.
    FailedScheduling(String),
    /// The containers are OOM-killed and restarted: `CrashLoopBackOff` with
    /// `lastState.terminated` `{reason: OOMKilled, exitCode: 137}` (restarts; semantics §6).
    OomKilled,
    /// The kubelet evicted the pod: phase `Failed`, reason `Evicted`, this message.
    Evicted(String),
}

/// Rules keyed by a name glob (first match wins), with a default.
#[derive(Debug, Clone)]
pub struct Rules<T> {
    pub default: T,
    pub by_name: Vec<(String, T)>,
}

impl<T: Clone> Rules<T> {
    pub fn new(default: T) -> Self {
        Rules {
            default,
            by_name: Vec::new(),
        }
    }
    pub fn get(&self, name: &str) -> T {
        self.by_name
            .iter()
            .find(|(g, _)| glob_match(g, name))
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| self.default.clone())
    }
    pub fn set(&mut self, glob: &str, value: T) {
        self.by_name.retain(|(g, _)| g != glob);
        self.by_name.insert(0, (glob.to_string(), value));
    }
}

/// Where a port-forward to a pod port goes: pods picked by namespace and label selector (or
/// name glob), one pod port, a local address.
#[derive(Debug, Clone)]
pub struct ForwardRule {
    pub namespace: String,
    pub pod_name: Option<String>,
    pub selector: Option<LabelSelector>,
    pub port: u16,
    pub target: SocketAddr,
}

/// Everything scripted about the simulations.
#[derive(Debug, Clone)]
pub struct SimRules {
    pub clusters: Rules<ClusterFate>,
    pub ray_jobs: Rules<RayJobScript>,
    pub jobs: Rules<JobScript>,
    /// Pod fates by label selector (first match wins); pods matching none run.
    pub pods: Vec<(LabelSelector, PodFate)>,
    /// A real Ray dashboard (`http://127.0.0.1:PORT`): RayJobs are submitted to it and head
    /// pods' port 8265 forwards to it.
    pub ray_dashboard: Option<String>,
    /// Kueue, for RayJobs whose name matches: created suspended (`spec.suspend: true`, as
    /// Kueue's webhook does for queued jobs), admitted (`suspend: false`) after the delay;
    /// `None` (the default) means no Kueue.
    pub kueue: Rules<Option<Duration>>,
}

impl Default for SimRules {
    fn default() -> Self {
        SimRules {
            clusters: Rules::new(ClusterFate::Ready),
            ray_jobs: Rules::new(RayJobScript::succeeds()),
            jobs: Rules::new(JobScript::succeeds()),
            pods: Vec::new(),
            ray_dashboard: None,
            kueue: Rules::new(None),
        }
    }
}
