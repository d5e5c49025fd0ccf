//! A fake Kubernetes API server for integration tests: the real `nrl` binary (or kube-rs in a
//! test) talks to it over HTTP on 127.0.0.1 exactly as it would to a cluster.
//!
//! ```ignore
//! let fake = FakeK8s::start();                       // binds 127.0.0.1:0, writes a kubeconfig
//! let client = fake.client().await;                  // kube::Client from that kubeconfig
//! // or run nrl with KUBECONFIG=fake.kubeconfig_path() (context `fake`, namespace `default`)
//! fake.set_rayjob_script("train-*", RayJobScript::fails("OOM"));
//! ... run the code under test ...
//! assert!(fake.request_log().iter().any(|r| r.is_apply()));
//! ```
//!
//! # What it serves
//! - Discovery: `/version`, `/api`, `/apis` (also aggregated discovery v2), `/api/v1`,
//!   `/apis/{g}/{v}` for core v1 (pods, services, configmaps, secrets, serviceaccounts,
//!   persistentvolumeclaims, namespaces, events, nodes), apps/v1 deployments, batch/v1 jobs,
//!   ray.io/v1 rayclusters + rayjobs, resource.k8s.io/v1 resourceclaimtemplates + resourceclaims,
//!   resource.nvidia.com/v1beta1 computedomains, scheduling.run.ai/v2 queues (KAI,
//!   cluster-scoped), authorization.k8s.io/v1
//!   selfsubjectaccessreviews, apiextensions.k8s.io/v1 customresourcedefinitions (the Ray and
//!   ComputeDomain CRDs are listed).
//! - CRUD with the real semantics: `Status` errors (404 NotFound, 409 AlreadyExists/Conflict,
//!   422 Invalid, 403 Forbidden, 410 Expired), lists with `kind: XList` and
//!   `metadata.resourceVersion` (and `limit`/`continue`), PUT with the resourceVersion
//!   precondition, merge / strategic-merge (approximated) / JSON patch, server-side apply
//!   (field managers in `metadata.managedFields`, 409 conflicts, `force`), `dryRun=All`,
//!   `/status` subresources, `generateName`, uid / creationTimestamp / generation /
//!   resourceVersion (one global counter), namespaces that must exist, label and field
//!   selectors, server-filled defaults for the kinds nrl renders (Service `protocol: TCP`,
//!   pod `restartPolicy`/`dnsPolicy`, RayCluster worker `numOfHosts`/`minReplicas`/…).
//! - Deletion with `propagationPolicy` (Jobs default to Orphan, as on a real cluster),
//!   finalizers, graceful pod termination, owner-reference garbage collection.
//! - Watches: chunked NDJSON, resourceVersion semantics, BOOKMARKs, 410 Gone past the history
//!   window, `timeoutSeconds`, streaming lists (`sendInitialEvents`).
//! - Pod logs (follow, tailLines, sinceSeconds, timestamps, limitBytes; `previous=true` serves
//!   what [`FakeK8s::append_previous_log`] wrote, else 400 as a real server), exec (real local
//!   processes; stdin, stdout, stderr, status with exit code, tty + resize) and port-forward
//!   (to local TCP ports set with [`FakeK8s::forward_port`]) websockets.
//! - SelfSubjectAccessReview, allowed unless [`FakeK8s::deny`]; denied requests get 403.
//! - Simulations (see `sim/`): kubelet, KubeRay (RayCluster, RayJob with a fake or a real-Ray
//!   job runner), Jobs (with native sidecars), Deployments. Timings in [`Timings`] are scaled
//!   down for tests.
//! - A request log ([`FakeK8s::request_log`]) and fault injection ([`FakeK8s::inject`]).
//!
//! The server runs on its own thread and tokio runtime, so it works from `#[tokio::test]`s
//! and from plain `#[test]`s that block on a child process alike. Dropping the handle stops
//! it, kills processes started by exec and removes its temp dir.
//!
//! # Test-facing API (see `api.rs`)
//! - Start: [`FakeK8s::start`], [`FakeK8s::builder`] (`timings`, `history_window`,
//!   `namespace`); [`FakeK8s::url`], [`FakeK8s::kubeconfig_path`], [`FakeK8s::env`],
//!   [`FakeK8s::client`].
//! - State: `get`, `get_as::<K>`, `list`, `pods`, `pod_name`, `field`, `put`, `put_as`, `edit`,
//!   `patch_status`, `delete`, `create_namespace`, `set_pod_phase`, `append_pod_log`.
//! - Simulations: `set_timings`, `set_cluster_fate` ([`ClusterFate`]: Ready, StuckPending,
//!   HeadCrashLoop, Unmanaged), `set_rayjob_script` ([`RayJobScript`]), `set_job_script`
//!   ([`JobScript`]: exit code per attempt, run time, log lines), `set_pod_fate`
//!   ([`PodFate`]: Unschedulable, FailedScheduling with an exact FitError text,
//!   ImagePullBackOff, CrashLoopBackOff, OomKilled, Evicted), `append_previous_log`,
//!   `use_ray_dashboard` (real Ray), `forward_port`, `forward_port_by_labels`.
//! - Faults and access: `inject` ([`FaultMatch`] + [`FaultAction`]), `fail_next`,
//!   `clear_faults`, `deny`, `deny_as` (one user; impersonation), `allow_all`.
//! - Observing: `request_log` ([`RequestRecord`]), `requests(pred)`, `clear_request_log`,
//!   `current_resource_version`, `compact_history`, `set_history_window`, `wait_until`,
//!   `wait_until_blocking`.
//!
//! # Known differences from a real cluster
//! - Server-side apply merges by the kinds' schemas (`schema.rs`: list-map keys, atomic
//!   lists such as `spec.workerGroupSpecs`); `set` lists are atomic; strategic merge patch
//!   merges lists of named maps by name and is otherwise a merge patch. Controller writes
//!   are recorded in `managedFields` under their own manager. `fieldValidation` is checked
//!   on the request body (for merge patches: the patch), not on the patched result.
//! - Exec failures the kubelet would cause are injected ([`FaultAction::ExecFailure`]);
//!   stalled watches with [`FaultAction::Stall`].
//! - Exec'd processes run on this machine in `<root>/pods/<ns>/<pod>` (also `HOME`; `TMPDIR` is
//!   its `tmp/`): absolute paths such as `/tmp` are the host's, shared by all "pods". There is
//!   no `attach`.
//! - Deployments create pods directly (no ReplicaSet objects). A RayJob in `K8sJobMode`
//!   gets no submitter Job: every mode is run by the job runner as if `HTTPMode`.
//!   `activeDeadlineSeconds` is not enforced. Continue tokens never expire.
// A fake server's API (and its re-exports) is wider than today's tests use, and the
// gym_submit bench uses only a corner of it.
#![allow(dead_code, unused_imports)]

pub mod access;
pub mod apply;
pub mod compare;
pub mod config;
pub mod defaults;
pub mod delete;
pub mod direct;
pub mod exec;
pub mod faults;
pub mod handlers;
pub mod http_util;
pub mod logs;
pub mod meta;
pub mod patch;
pub mod portforward;
pub mod pty;
pub mod resources;
pub mod routes;
pub mod schema;
pub mod selectors;
pub mod sim;
pub mod state;
pub mod store;
pub mod watch;

mod api;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch as tokio_watch};

pub use config::{ClusterFate, ForwardRule, JobScript, PodFate, RayJobEnd, RayJobScript, Timings};
pub use delete::Propagation;
pub use faults::{FaultAction, FaultMatch, RequestRecord};

use state::State;
use store::Store;

/// Builder for [`FakeK8s`]: timings and the watch history window.
#[derive(Debug, Clone)]
pub struct FakeK8sBuilder {
    timings: Timings,
    history_window: usize,
    namespaces: Vec<String>,
}

impl Default for FakeK8sBuilder {
    fn default() -> Self {
        FakeK8sBuilder {
            timings: Timings::default(),
            history_window: 10_000,
            namespaces: vec![
                "default".into(),
                "kube-system".into(),
                "kube-public".into(),
                "kube-node-lease".into(),
            ],
        }
    }
}

impl FakeK8sBuilder {
    pub fn timings(mut self, t: Timings) -> Self {
        self.timings = t;
        self
    }
    /// How many events watches can resume from; older resourceVersions get 410 Gone.
    pub fn history_window(mut self, events: usize) -> Self {
        self.history_window = events;
        self
    }
    /// Extra namespaces to create at start (besides default, kube-system, kube-public).
    pub fn namespace(mut self, ns: &str) -> Self {
        self.namespaces.push(ns.to_string());
        self
    }
    pub fn start(self) -> FakeK8s {
        FakeK8s::start_with(self)
    }
}

/// The running fake API server. See the module docs.
pub struct FakeK8s {
    state: Arc<State>,
    addr: SocketAddr,
    kubeconfig: PathBuf,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    // Dropped last: holds the kubeconfig and the pods' working directories.
    _dir: tempfile::TempDir,
}

pub const TOKEN: &str = "fake-token-0123456789";

fn write_kubeconfig(path: &Path, url: &str) -> std::io::Result<()> {
    let text = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: {url}
users:
- name: fake-user
  user:
    token: {TOKEN}
contexts:
- name: fake
  context:
    cluster: fake
    user: fake-user
    namespace: default
current-context: fake
preferences: {{}}
"
    );
    std::fs::write(path, text)
}

fn crd(group: &str, kind: &str, plural: &str, version: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural,
                      "singular": kind.to_lowercase(), "categories": ["all"]},
            "scope": "Namespaced",
            "versions": [{"name": version, "served": true, "storage": true, "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
        "status": {
            "acceptedNames": {"kind": kind, "plural": plural},
            "storedVersions": [version],
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found"},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
            ],
        },
    })
}

impl FakeK8s {
    /// Start with default (test-scaled) timings.
    pub fn start() -> FakeK8s {
        FakeK8sBuilder::default().start()
    }

    pub fn builder() -> FakeK8sBuilder {
        FakeK8sBuilder::default()
    }

    fn start_with(b: FakeK8sBuilder) -> FakeK8s {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::Builder::new()
            .prefix("fake-k8s-")
            .tempdir()
            .unwrap_or_else(|e| panic!("fake k8s temp dir: {e}"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("fake k8s bind: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("fake k8s addr: {e}"));
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("fake k8s nonblocking: {e}"));
        let kubeconfig = dir.path().join("kubeconfig");
        write_kubeconfig(&kubeconfig, &format!("http://{addr}"))
            .unwrap_or_else(|e| panic!("fake k8s kubeconfig: {e}"));

        let (state_tx, state_rx) = std::sync::mpsc::channel::<Arc<State>>();
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let root = dir.path().to_path_buf();
        let thread = std::thread::Builder::new()
            .name(format!("fake-k8s-{}", addr.port()))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap_or_else(|e| panic!("fake k8s runtime: {e}"));
                rt.block_on(async move {
                    let (rv_tx, rv_rx) = tokio_watch::channel(0u64);
                    let mut store = Store::new(b.history_window, rv_tx);
                    let (ctl_tx, ctl_rx) = mpsc::unbounded_channel();
                    store.set_controller_sink(ctl_tx);
                    let state = Arc::new(State::new(
                        store,
                        rv_rx,
                        b.timings,
                        tokio::runtime::Handle::current(),
                        root,
                        TOKEN.to_string(),
                    ));
                    sim::spawn(state.clone(), ctl_rx);
                    let app = axum::Router::new()
                        .fallback(handlers::handle)
                        .layer(axum::middleware::from_fn_with_state(
                            state.clone(),
                            faults::middleware,
                        ))
                        .with_state(state.clone());
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .unwrap_or_else(|e| panic!("fake k8s listener: {e}"));
                    let _ = state_tx.send(state.clone());
                    // Not a graceful shutdown: open watches would hold it up forever.
                    tokio::select! {
                        _ = axum::serve(listener, app) => {}
                        _ = shutdown_rx => {}
                    }
                    exec::kill_all(&state);
                });
                rt.shutdown_timeout(Duration::from_millis(200));
            })
            .unwrap_or_else(|e| panic!("fake k8s thread: {e}"));
        let state = state_rx
            .recv()
            .unwrap_or_else(|e| panic!("fake k8s did not start: {e}"));
        let fake = FakeK8s {
            state,
            addr,
            kubeconfig,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
            _dir: dir,
        };
        for ns in &b.namespaces {
            fake.create_namespace(ns);
        }
        for (g, k, p, v) in [
            ("ray.io", "RayCluster", "rayclusters", "v1"),
            ("ray.io", "RayJob", "rayjobs", "v1"),
            (
                "resource.nvidia.com",
                "ComputeDomain",
                "computedomains",
                "v1beta1",
            ),
        ] {
            fake.put(crd(g, k, p, v));
        }
        fake
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The kubeconfig (context `fake`, namespace `default`, bearer-token user `fake-user`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// Environment for a child process (`nrl`) to use this server.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![("KUBECONFIG".into(), self.kubeconfig.display().to_string())]
    }

    /// The server's temp dir; exec'd processes run in `<root>/pods/<ns>/<pod>`.
    pub fn root_dir(&self) -> &Path {
        &self.state.root
    }

    /// A kube client for this server, built from the written kubeconfig.
    pub async fn client(&self) -> kube::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig)
            .unwrap_or_else(|e| panic!("reading fake kubeconfig: {e}"));
        let cfg =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .unwrap_or_else(|e| panic!("fake kubeconfig: {e}"));
        kube::Client::try_from(cfg).unwrap_or_else(|e| panic!("kube client: {e}"))
    }

    /// The shared state, for what the convenience methods do not cover.
    pub fn state(&self) -> &Arc<State> {
        &self.state
    }
}

impl Drop for FakeK8s {
    fn drop(&mut self) {
        exec::kill_all(&self.state);
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
