//! `nrl logs --collect DIR`: everything a postmortem needs from a run (or a recipe's
//! roles) in one directory, or one `.tar.gz`: the driver log, every pod's container logs
//! (current, and previous for restarted containers), the events and objects, and each
//! Ray node's session logs (`/tmp/ray/session_latest/logs`) through the dashboard's log
//! API — no `kubectl exec`, which automation often may not do. `index.md` says where
//! each file came from and what could not be fetched, and why: one missing piece never
//! stops the rest.
//!
//! Costs: the objects and events come from `diagnose`'s reads (a constant number of
//! lists); then one log request per container (two for restarted ones) and, per
//! cluster, one node list, one file list per node and one request per file, at most
//! [`CONCURRENCY`] at a time. Each file keeps at most `max_file_bytes` (its tail).

mod tar;

use std::path::{Path, PathBuf};

use futures::StreamExt;
use serde_json::{Value as Json, json};

use crate::config::layers::LoadedConfig;
use crate::config::schema::Role;
use crate::diag::{Diag, Result};
use crate::doctor::diagnose::{self, Snapshot};
use crate::k8s::status::PodStatus;
use crate::k8s::{K8s, LogOptions};
use crate::ray::{NodeInfo, RayClient, RayClientOptions};

use super::attach::run_log;
use super::dashboard::dashboard_session;
use super::raycluster::cluster_of;
use super::records::{RunKind, RunRecord};

/// Default cap of one collected file (its last 16 MiB).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 << 20;
/// Requests in flight at once (pod logs, Ray files): enough to hide latency, few enough
/// for a port-forward and Ray's state API limit (100 concurrent calls).
pub const CONCURRENCY: usize = 4;
/// Most files fetched from one Ray node (a long run's workers leave thousands).
pub const MAX_FILES_PER_NODE: usize = 500;

/// What to collect.
#[derive(Debug, Clone)]
pub enum CollectTarget<'a> {
    /// A run by its record (any kind: Kubernetes, a Ray dashboard, local).
    Run(&'a RunRecord),
    /// What a recipe renders, by name; only `role`'s cluster when given.
    Recipe {
        cfg: &'a LoadedConfig,
        recipe: String,
        role: Option<Role>,
    },
}

#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// The directory to fill (created; must be empty), or with `tar` the archive's path
    /// without `.tar.gz` (or with it).
    pub dir: PathBuf,
    /// Write one `.tar.gz` instead of a directory.
    pub tar: bool,
    /// Largest part of one file kept (its tail).
    pub max_file_bytes: u64,
}

impl CollectOptions {
    pub fn new(dir: impl Into<PathBuf>) -> CollectOptions {
        CollectOptions {
            dir: dir.into(),
            tar: false,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }

    /// Where the archive goes: DIR.tar.gz, or DIR itself when it already says `.tar.gz`.
    pub fn archive_path(&self) -> PathBuf {
        let s = self.dir.to_string_lossy();
        if s.ends_with(".tar.gz") || s.ends_with(".tgz") {
            self.dir.clone()
        } else {
            PathBuf::from(format!("{}.tar.gz", s.trim_end_matches('/')))
        }
    }
}

/// One file written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// Relative to the collection, `/`-separated.
    pub path: String,
    pub bytes: u64,
    /// Where it came from.
    pub source: String,
    /// E.g. that only its tail was kept.
    pub note: Option<String>,
}

/// Something that could not be fetched, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub what: String,
    pub why: String,
}

/// What a collection wrote.
#[derive(Debug, Clone)]
pub struct CollectReport {
    /// `run grpo-…` or `recipe r.yaml`.
    pub subject: String,
    /// `context `c`, namespace `ns`` when on Kubernetes.
    pub place: Option<String>,
    /// The directory written (gone after archiving).
    pub dir: PathBuf,
    /// The `.tar.gz`, with `tar`.
    pub archive: Option<PathBuf>,
    pub files: Vec<Collected>,
    pub skipped: Vec<Skipped>,
}

impl CollectReport {
    /// Bytes of all collected files (index.md included).
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.bytes).sum()
    }

    /// `index.md`: what came from where, then what is missing.
    pub fn index_md(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let mut out = format!("# nrl logs --collect: {}\n\n", self.subject);
        if let Some(p) = &self.place {
            out.push_str(&format!("Read from {p}.\n\n"));
        }
        out.push_str("| File | Bytes | Source |\n|---|---:|---|\n");
        for f in &self.files {
            let source = match &f.note {
                Some(n) => format!("{}; {n}", f.source),
                None => f.source.clone(),
            };
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                cell(&f.path),
                f.bytes,
                cell(&source)
            ));
        }
        if self.skipped.is_empty() {
            out.push_str("\nEverything listed was fetched.\n");
        } else {
            out.push_str("\n## Not fetched\n\n| What | Why |\n|---|---|\n");
            for s in &self.skipped {
                out.push_str(&format!("| {} | {} |\n", cell(&s.what), cell(&s.why)));
            }
        }
        out
    }

    /// `{subject, dir, archive, files: [{path, bytes, source, note}], skipped: [{what, why}]}`
    pub fn to_json(&self) -> Json {
        json!({
            "subject": self.subject,
            "dir": self.dir.display().to_string(),
            "archive": self.archive.as_ref().map(|a| a.display().to_string()),
            "bytes": self.bytes(),
            "files": self.files.iter().map(|f| json!({"path": f.path, "bytes": f.bytes,
                "source": f.source, "note": f.note})).collect::<Vec<_>>(),
            "skipped": self.skipped.iter().map(|s| json!({"what": s.what, "why": s.why}))
                .collect::<Vec<_>>(),
        })
    }
}

/// Where files are written, and what was written.
struct Sink {
    root: PathBuf,
    files: Vec<Collected>,
    skipped: Vec<Skipped>,
}

impl Sink {
    async fn write(&mut self, rel: &str, bytes: &[u8], source: String, note: Option<String>) {
        let path = self.root.join(rel);
        let written = async {
            if let Some(parent) = path.parent() {
                tokio::fs::create_dir_all(parent).await?;
            }
            tokio::fs::write(&path, bytes).await
        };
        match written.await {
            Ok(()) => self.files.push(Collected {
                path: rel.to_string(),
                bytes: bytes.len() as u64,
                source,
                note,
            }),
            Err(e) => self.skip(rel, format!("cannot write {}: {e}", path.display())),
        }
    }

    fn skip(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.skipped.push(Skipped {
            what: what.into(),
            why: why.into(),
        });
    }
}

/// Collect `target`'s logs into `opts.dir` (or its archive). Fails only when the
/// destination cannot be used or the cluster cannot be read at all; every other failure
/// is a line of the report.
pub async fn collect(
    k8s: Option<&K8s>,
    target: &CollectTarget<'_>,
    opts: &CollectOptions,
) -> Result<CollectReport> {
    let (root, staging) = prepare(opts).await?;
    let mut sink = Sink {
        root: root.clone(),
        files: Vec::new(),
        skipped: Vec::new(),
    };
    let keep = usize::try_from(opts.max_file_bytes.max(1)).unwrap_or(usize::MAX);

    // What lives on Kubernetes, read as diagnose reads it.
    let (subject, dtarget) = match target {
        CollectTarget::Run(record) => (
            format!("run {}", record.id),
            record
                .kind
                .is_on_kubernetes()
                .then(|| diagnose::Target::of_record(record)),
        ),
        CollectTarget::Recipe { cfg, recipe, role } => {
            let mut t = diagnose::Target::of_config(cfg, recipe)?;
            if let Some(role) = role {
                let name = cluster_of(cfg, *role)?.name.clone();
                t.clusters.retain(|c| *c == name);
                if *role != Role::Training && t.rayjob.as_deref() != Some(name.as_str()) {
                    t.rayjob = None;
                }
                if t.clusters.is_empty() && t.rayjob.is_none() {
                    t.clusters.push(name);
                }
            }
            (format!("recipe {recipe}"), Some(t))
        }
    };
    let snap = match (k8s, &dtarget) {
        (Some(k8s), Some(t)) => {
            let (snap, notes) = diagnose::read_objects(k8s, t).await?;
            for n in notes {
                sink.skip("events", n);
            }
            Some(snap)
        }
        _ => None,
    };

    // The driver log.
    match target {
        CollectTarget::Run(record) => match run_log(k8s, record).await {
            Ok(log) => {
                let (bytes, note) = tail_of(log.text.as_bytes(), keep);
                sink.write("driver.log", bytes, log.source, note).await;
            }
            Err(e) => sink.skip("driver log", e.message.to_string()),
        },
        CollectTarget::Recipe { .. } => {
            if let (Some(k8s), Some(t), Some(snap)) = (k8s, &dtarget, &snap) {
                let (log, note) = diagnose::driver_log_text(k8s, t, snap).await;
                let note = note.trim_start_matches("driver log: ").to_string();
                match log {
                    Some(text) => {
                        let (bytes, cut) = tail_of(text.as_bytes(), keep);
                        sink.write("driver.log", bytes, note, cut).await;
                    }
                    None => sink.skip("driver log", note),
                }
            }
        }
    }

    if let (Some(k8s), Some(snap)) = (k8s, &snap) {
        objects_and_events(&mut sink, snap).await;
        pod_logs(&mut sink, k8s, snap, keep).await;
        for c in &snap.clusters {
            if c.object.is_none() {
                sink.skip(
                    format!("Ray logs of RayCluster {}", c.name),
                    "the RayCluster does not exist (torn down?)",
                );
                continue;
            }
            let head_running = c.pods.iter().any(|p| {
                p.pointer("/metadata/labels/ray.io~1node-type")
                    .and_then(Json::as_str)
                    == Some("head")
                    && PodStatus::of(p).is_running()
            });
            if !head_running {
                sink.skip(
                    format!("Ray logs of RayCluster {}", c.name),
                    "its head pod is not running, so there is no dashboard to ask",
                );
                continue;
            }
            match dashboard_session(k8s, &snap.namespace, &c.name).await {
                Ok(session) => {
                    let label = format!("the dashboard of RayCluster {}", c.name);
                    ray_logs(&mut sink, &session.client, &c.name, &label, keep).await;
                }
                Err(e) => sink.skip(
                    format!("Ray logs of RayCluster {}", c.name),
                    e.message.to_string(),
                ),
            }
        }
    }
    if let CollectTarget::Run(record) = target
        && record.kind == RunKind::Ray
        && let Some(r) = &record.ray
    {
        match RayClient::new(&r.address, RayClientOptions::default()) {
            Ok(client) => {
                let label = format!("the dashboard at {}", r.address);
                ray_logs(&mut sink, &client, "dashboard", &label, keep).await;
            }
            Err(e) => sink.skip("Ray logs", e.message.to_string()),
        }
    }

    let mut report = CollectReport {
        subject,
        place: k8s.filter(|_| snap.is_some()).map(|k| {
            let ns = snap
                .as_ref()
                .map(|s| s.namespace.clone())
                .unwrap_or_default();
            format!("context `{}`, namespace `{ns}`", k.context)
        }),
        dir: root.clone(),
        archive: None,
        files: sink.files,
        skipped: sink.skipped,
    };
    let index = report.index_md();
    tokio::fs::write(root.join("index.md"), &index)
        .await
        .map_err(|e| io_error(&root, e))?;
    report.files.insert(
        0,
        Collected {
            path: "index.md".into(),
            bytes: index.len() as u64,
            source: "this collection's table of contents".into(),
            note: None,
        },
    );
    if let Some(staging) = staging {
        let archive = opts.archive_path();
        let prefix = archive_prefix(&archive);
        let entries: Vec<(String, PathBuf)> = report
            .files
            .iter()
            .map(|f| (format!("{prefix}/{}", f.path), root.join(&f.path)))
            .collect();
        let out = archive.clone();
        let mtime = jiff::Timestamp::now().as_second().max(0) as u64;
        tokio::task::spawn_blocking(move || tar::write_tar_gz(&out, &entries, mtime))
            .await
            .map_err(|e| Diag::new("nrl::runtime", e.to_string()))?
            .map_err(|e| io_error(&archive, e))?;
        drop(staging);
        report.archive = Some(archive);
    }
    Ok(report)
}

/// The directory to fill: `opts.dir` (created, refused when not empty, so two
/// collections never mix), or with `tar` a temporary one next to the archive.
async fn prepare(opts: &CollectOptions) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    if opts.tar {
        let archive = opts.archive_path();
        if tokio::fs::try_exists(&archive).await.unwrap_or(false) {
            return Err(Diag::new(
                "nrl::collect::exists",
                format!("{} already exists", archive.display()),
            )
            .help("pick another path, or remove it first"));
        }
        let parent = match archive.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        tokio::fs::create_dir_all(&parent)
            .await
            .map_err(|e| io_error(&parent, e))?;
        let tmp = tempfile::Builder::new()
            .prefix(".nrl-collect-")
            .tempdir_in(&parent)
            .map_err(|e| io_error(&parent, e))?;
        return Ok((tmp.path().to_path_buf(), Some(tmp)));
    }
    let dir = &opts.dir;
    tokio::fs::create_dir_all(dir)
        .await
        .map_err(|e| io_error(dir, e))?;
    let mut entries = tokio::fs::read_dir(dir)
        .await
        .map_err(|e| io_error(dir, e))?;
    if entries
        .next_entry()
        .await
        .map_err(|e| io_error(dir, e))?
        .is_some()
    {
        return Err(Diag::new(
            "nrl::collect::not_empty",
            format!("{} is not empty", dir.display()),
        )
        .help("collect into a new directory (it is created), or use --tar for one archive"));
    }
    Ok((dir.clone(), None))
}

fn io_error(path: &Path, e: std::io::Error) -> Diag {
    Diag::new("nrl::io", format!("{}: {e}", path.display()))
}

/// The directory name inside the archive: its file name without `.tar.gz`.
fn archive_prefix(archive: &Path) -> String {
    let name = archive
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "logs".into());
    let stem = name
        .trim_end_matches(".tar.gz")
        .trim_end_matches(".tgz")
        .to_string();
    if stem.is_empty() { "logs".into() } else { stem }
}

/// The last `keep` bytes of `bytes`, from a line start, and a note when cut.
fn tail_of(bytes: &[u8], keep: usize) -> (&[u8], Option<String>) {
    if bytes.len() <= keep {
        return (bytes, None);
    }
    let mut cut = &bytes[bytes.len() - keep..];
    if let Some(nl) = cut.iter().position(|b| *b == b'\n') {
        cut = &cut[nl + 1..];
    }
    (
        cut,
        Some(format!(
            "truncated: the last {} of {}",
            size(keep as u64),
            size(bytes.len() as u64)
        )),
    )
}

/// `512 B`, `3.2 KiB`, `16.0 MiB`.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} B"),
        b if b < 1 << 20 => format!("{:.1} KiB", b as f64 / 1024.0),
        b if b < 1 << 30 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
    }
}

/// A path component that is safe as a file name (no separators, no `..`).
fn safe(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    match s.as_str() {
        "" | "." | ".." => "_".into(),
        _ => s,
    }
}

/// `objects.json` (the RayJob, RayClusters and pods as read) and `events.txt` (the
/// events about them, oldest first).
async fn objects_and_events(sink: &mut Sink, snap: &Snapshot) {
    let ns = &snap.namespace;
    let objects = json!({
        "rayjob": snap.rayjob,
        "rayclusters": snap.clusters.iter().map(|c| json!({"name": c.name, "object": c.object}))
            .collect::<Vec<_>>(),
        "pods": snap.clusters.iter().flat_map(|c| c.pods.iter()).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&objects).unwrap_or_default();
    let mut source = String::from("the API: ");
    if let Some(rj) = &snap.rayjob_name {
        source.push_str(&format!("RayJob {rj}, "));
    }
    source.push_str(&format!(
        "RayClusters and their pods (`ray.io/cluster=<name>`) in namespace `{ns}`"
    ));
    sink.write("objects.json", text.as_bytes(), source, None)
        .await;

    let mut names: Vec<&str> = Vec::new();
    names.extend(snap.rayjob_name.as_deref());
    for c in &snap.clusters {
        names.push(&c.name);
        for p in &c.pods {
            names.extend(p.pointer("/metadata/name").and_then(Json::as_str));
        }
    }
    let mut rows: Vec<(String, String)> = snap
        .events
        .iter()
        .filter(|e| {
            e.pointer("/involvedObject/name")
                .and_then(Json::as_str)
                .is_some_and(|n| names.contains(&n))
        })
        .map(|e| {
            let s = |p: &str| {
                e.pointer(p)
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            let at = [s("/lastTimestamp"), s("/eventTime"), s("/firstTimestamp")]
                .into_iter()
                .find(|t| !t.is_empty())
                .unwrap_or_else(|| "-".into());
            let count = e.get("count").and_then(Json::as_i64).unwrap_or(1);
            let line = format!(
                "{at}  {:<7} {:<20} {}/{}  x{count}  {}",
                s("/type"),
                s("/reason"),
                s("/involvedObject/kind"),
                s("/involvedObject/name"),
                s("/message")
            );
            (at, line)
        })
        .collect();
    rows.sort();
    let mut text = String::from("# LAST SEEN  TYPE  REASON  OBJECT  COUNT  MESSAGE\n");
    for (_, line) in &rows {
        text.push_str(line);
        text.push('\n');
    }
    sink.write(
        "events.txt",
        text.as_bytes(),
        format!(
            "the API: the events in namespace `{ns}` about these objects ({})",
            rows.len()
        ),
        None,
    )
    .await;
}

/// A fetched container log (what was kept, whether more was dropped).
type PodLogResult = Result<(Vec<u8>, bool)>;

/// One container log to fetch.
struct PodLog {
    pod: String,
    container: String,
    previous: bool,
}

/// Every container's log, and the previous run's of containers that restarted.
async fn pod_logs(sink: &mut Sink, k8s: &K8s, snap: &Snapshot, keep: usize) {
    let mut wanted = Vec::new();
    for pod in snap.clusters.iter().flat_map(|c| c.pods.iter()) {
        let name = pod
            .pointer("/metadata/name")
            .and_then(Json::as_str)
            .unwrap_or("");
        for (spec_key, status_key) in [
            ("initContainers", "initContainerStatuses"),
            ("containers", "containerStatuses"),
        ] {
            let containers = pod
                .pointer(&format!("/spec/{spec_key}"))
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            for c in containers {
                let Some(cname) = c.get("name").and_then(Json::as_str) else {
                    continue;
                };
                let status = pod
                    .pointer(&format!("/status/{status_key}"))
                    .and_then(Json::as_array)
                    .and_then(|l| {
                        l.iter()
                            .find(|s| s.get("name").and_then(Json::as_str) == Some(cname))
                    });
                let restarted = status.is_some_and(|s| {
                    s.get("restartCount").and_then(Json::as_i64).unwrap_or(0) > 0
                        || s.pointer("/lastState/terminated").is_some()
                });
                wanted.push(PodLog {
                    pod: name.to_string(),
                    container: cname.to_string(),
                    previous: false,
                });
                // Asking for the previous log of a container that never restarted is a
                // 400 by design; only restarted ones have one.
                if restarted {
                    wanted.push(PodLog {
                        pod: name.to_string(),
                        container: cname.to_string(),
                        previous: true,
                    });
                }
            }
        }
    }
    let ns = snap.namespace.clone();
    let fetched: Vec<(PodLog, PodLogResult)> = futures::stream::iter(wanted)
        .map(|w| {
            let ns = ns.clone();
            async move {
                let r = pod_log(k8s, &ns, &w, keep).await;
                (w, r)
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut fetched = fetched;
    fetched.sort_by(|a, b| {
        (&a.0.pod, &a.0.container, a.0.previous).cmp(&(&b.0.pod, &b.0.container, b.0.previous))
    });
    for (w, r) in fetched {
        let which = if w.previous { "previous" } else { "current" };
        let rel = format!(
            "pods/{}/{}{}.log",
            safe(&w.pod),
            safe(&w.container),
            if w.previous { ".previous" } else { "" }
        );
        match r {
            Ok((bytes, cut)) => {
                let note = cut.then(|| format!("truncated: the last {}", size(keep as u64)));
                let source = format!(
                    "the API: pod {} container {} ({which} log{})",
                    w.pod,
                    w.container,
                    if w.previous { ", `previous=true`" } else { "" }
                );
                sink.write(&rel, &bytes, source, note).await;
            }
            Err(e) => sink.skip(
                format!("pod {} container {} ({which} log)", w.pod, w.container),
                e.message.to_string(),
            ),
        }
    }
}

/// One container's log, keeping the last `keep` bytes (and whether more was dropped).
async fn pod_log(k8s: &K8s, ns: &str, w: &PodLog, keep: usize) -> PodLogResult {
    let opts = LogOptions {
        container: Some(w.container.clone()),
        follow: false,
        tail: None,
        previous: w.previous,
    };
    let mut buf: Vec<u8> = Vec::new();
    let mut dropped = false;
    k8s.stream_pod_logs(ns, &w.pod, &opts, |line| {
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        if buf.len() > keep.saturating_mul(2).max(1 << 16) {
            let cut = buf.len() - keep;
            buf.drain(..cut);
            dropped = true;
        }
        std::ops::ControlFlow::Continue(())
    })
    .await?;
    if buf.len() > keep {
        let cut = buf.len() - keep;
        buf.drain(..cut);
        dropped = true;
    }
    if dropped && let Some(nl) = buf.iter().position(|b| *b == b'\n') {
        buf.drain(..=nl);
    }
    Ok((buf, dropped))
}

/// `head-127.0.0.1-0123abcd`: readable and unique per node.
fn node_dir(n: &NodeInfo) -> String {
    let kind = if n.is_head_node { "head" } else { "worker" };
    let id: String = n.node_id.chars().take(8).collect();
    safe(&format!("{kind}-{}-{id}", n.node_ip))
}

/// Each alive node's session logs through the dashboard's log API, into
/// `ray/<cluster>/<node>/<file>`.
async fn ray_logs(sink: &mut Sink, client: &RayClient, cluster: &str, label: &str, keep: usize) {
    let nodes = match client.list_nodes().await {
        Ok(n) => n,
        Err(e) => {
            sink.skip(format!("Ray nodes of {label}"), e.message.to_string());
            return;
        }
    };
    // Ray's tail unit is lines: ask for enough lines to fill `keep` with ~40-byte lines,
    // then keep the last `keep` bytes of what arrives.
    let lines = (keep as u64 / 40).max(1000);
    let mut wanted: Vec<(NodeInfo, String)> = Vec::new();
    for node in &nodes {
        let what = format!("Ray logs of node {} ({})", node.node_id, node.node_ip);
        if node.state != "ALIVE" {
            sink.skip(
                what,
                format!(
                    "the node is {}; only alive nodes serve their logs",
                    node.state
                ),
            );
            continue;
        }
        match client.list_node_logs(&node.node_id).await {
            Ok(mut files) => {
                files.sort();
                if files.len() > MAX_FILES_PER_NODE {
                    sink.skip(
                        what,
                        format!(
                            "{} of its {} files not fetched (at most {MAX_FILES_PER_NODE} per node)",
                            files.len() - MAX_FILES_PER_NODE,
                            files.len()
                        ),
                    );
                    files.truncate(MAX_FILES_PER_NODE);
                }
                wanted.extend(files.into_iter().map(|f| (node.clone(), f)));
            }
            Err(e) => sink.skip(what, e.message.to_string()),
        }
    }
    let fetched: Vec<_> = futures::stream::iter(wanted)
        .map(|(node, file)| async move {
            let r = client
                .node_log_file(&node.node_id, &file, lines, keep)
                .await;
            (node, file, r)
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut fetched = fetched;
    fetched.sort_by(|a, b| (node_dir(&a.0), &a.1).cmp(&(node_dir(&b.0), &b.1)));
    for (node, file, r) in fetched {
        let parts: Vec<String> = file
            .split('/')
            .filter(|p| !p.is_empty())
            .map(safe)
            .collect();
        let rel = format!(
            "ray/{}/{}/{}",
            safe(cluster),
            node_dir(&node),
            parts.join("/")
        );
        match r {
            Ok(f) => {
                let note = f.truncated.then(|| {
                    format!(
                        "truncated: at most the last {lines} lines and {} were asked for",
                        size(keep as u64)
                    )
                });
                let source = format!(
                    "{label}, `GET /api/v0/logs/file`, node {} ({}), file {file}",
                    node.node_id, node.node_ip
                );
                sink.write(&rel, &f.bytes, source, note).await;
            }
            Err(e) => sink.skip(
                format!("{file} on node {}", node.node_id),
                e.message.to_string(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_start_at_a_line() {
        let (b, note) = tail_of(b"aaaa\nbbbb\ncccc\n", 7);
        assert_eq!(b, b"cccc\n");
        assert!(note.unwrap().starts_with("truncated"));
        assert_eq!(tail_of(b"ab\n", 10), (&b"ab\n"[..], None));
    }

    #[test]
    fn names_are_safe_file_names() {
        assert_eq!(safe("../x"), ".._x");
        assert_eq!(safe(".."), "_");
        assert_eq!(safe("a b/c"), "a_b_c");
    }

    #[test]
    fn archive_paths_and_prefixes() {
        let mut o = CollectOptions::new("out/run1");
        o.tar = true;
        assert_eq!(o.archive_path(), PathBuf::from("out/run1.tar.gz"));
        assert_eq!(archive_prefix(&o.archive_path()), "run1");
        let o = CollectOptions::new("x.tar.gz");
        assert_eq!(o.archive_path(), PathBuf::from("x.tar.gz"));
    }
}
