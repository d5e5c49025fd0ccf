//! Logs of a run's pods: the driver by default, or a sidecar by its service name; one
//! benchmark or all of them (lines prefixed with the benchmark), followed or not.

use std::time::Duration;

use serde_json::Value as Json;

use crate::config::typed::check::suggest;
use crate::diag::{Diag, Result};
use crate::k8s::K8s;
use crate::k8s::logs::LogOptions;
use crate::k8s::status::PodStatus;
use crate::k8s::wait::Verdict;
use crate::k8s::wait::conditions::job_started;

use crate::gym::names::{benchmark_selector, dns_label, run_selector};
use crate::gym::render::DRIVER_CONTAINER;
use crate::gym::state::benchmark_label;

pub const CODE_NO_POD: &str = "nrl::gym::no_pod";
pub const CODE_CONTAINER: &str = "nrl::gym::container";

/// What to print.
#[derive(Debug, Clone, Default)]
pub struct LogRequest {
    pub run_id: String,
    /// One benchmark (as written in the config); `None` for all.
    pub benchmark: Option<String>,
    /// `driver` (the default) or a service name.
    pub container: Option<String>,
    pub follow: bool,
    pub tail: Option<i64>,
    /// How long `follow` waits for a pod and its container to start.
    pub start_timeout: Option<Duration>,
}

fn name(o: &Json) -> &str {
    o.pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or("")
}

fn container_names(pod: &Json) -> Vec<String> {
    ["initContainers", "containers"]
        .iter()
        .flat_map(|k| {
            pod.pointer(&format!("/spec/{k}"))
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect()
}

/// Whether `container` of `pod` has started (running or terminated), so it has a log.
fn started(pod: &Json, container: &str) -> bool {
    PodStatus::of(pod).container_started(container)
}

/// The container to read, checked against the pod.
fn pick_container(pod: &Json, wanted: Option<&str>) -> Result<String> {
    let names = container_names(pod);
    let want = wanted.unwrap_or(DRIVER_CONTAINER);
    let candidate = if names.iter().any(|n| n == want) {
        want.to_string()
    } else {
        dns_label(want)
    };
    if names.contains(&candidate) {
        return Ok(candidate);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let help = match suggest(want, &refs) {
        Some(s) => format!("did you mean `--container {s}`?"),
        None => format!("the pod's containers: {}", refs.join(", ")),
    };
    Err(Diag::new(
        CODE_CONTAINER,
        format!("pod {} has no container `{want}`", name(pod)),
    )
    .help(help))
}

/// The newest pod per benchmark label, in benchmark order of first appearance.
fn newest_per_benchmark(mut pods: Vec<Json>) -> Vec<(String, Json)> {
    pods.sort_by(|a, b| {
        let t = |p: &Json| {
            p.pointer("/metadata/creationTimestamp")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string()
        };
        t(a).cmp(&t(b))
    });
    let mut out: Vec<(String, Json)> = Vec::new();
    for p in pods {
        let b = benchmark_label(&p).unwrap_or("").to_string();
        match out.iter_mut().find(|(ob, _)| *ob == b) {
            Some(slot) => slot.1 = p,
            None => out.push((b, p)),
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Wait until a pod of `selector` exists and `container` has started; returns the pod.
async fn wait_started(
    k8s: &K8s,
    ns: &str,
    selector: &str,
    container: Option<&str>,
    timeout: Duration,
) -> Result<Json> {
    let ar = super::pods()?;
    let deadline = tokio::time::Instant::now() + timeout;
    let pod = loop {
        if let Some(p) = newest_per_benchmark(k8s.list(&ar, ns, Some(selector)).await?)
            .pop()
            .map(|(_, p)| p)
        {
            break p;
        }
        // No pod yet: wait on the Job through a watch instead of polling the pods.
        let jobs = super::jobs()?;
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        if remaining.is_zero() {
            return Err(Diag::api(
                CODE_NO_POD,
                format!("no pod matched `{selector}` within {}s", timeout.as_secs()),
            ));
        }
        let found = k8s.list(&jobs, ns, Some(selector)).await?;
        let Some(job) = found.first() else {
            return Err(
                Diag::new(CODE_NO_POD, format!("no Job matches `{selector}`")).help(
                    "check the run id and benchmark (`nrl gym status RUN`) and the namespace",
                ),
            );
        };
        let job_name = name(job).to_string();
        k8s.wait_until(&jobs, ns, &job_name, remaining, "running", job_started())
            .await?;
    };
    let c = pick_container(&pod, container)?;
    let pod_name = name(&pod).to_string();
    let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
    k8s.wait_for(
        &ar,
        ns,
        &pod_name,
        remaining,
        &format!("started (container {c})"),
        |o| match o {
            Some(p) if started(p, &c) => Verdict::Done(p.clone()),
            Some(p) if PodStatus::of(p).is_finished() => Verdict::Done(p.clone()),
            None => Verdict::Fail(Diag::api(
                CODE_NO_POD,
                format!("pod {pod_name} was deleted before `{c}` started"),
            )),
            _ => Verdict::Pending,
        },
    )
    .await
}

/// Stream the logs; `sink(benchmark label, line)` gets every line.
pub async fn stream_logs(
    k8s: &K8s,
    ns: &str,
    req: &LogRequest,
    mut sink: impl FnMut(&str, &str),
) -> Result<()> {
    let ar = super::pods()?;
    let selector = match &req.benchmark {
        Some(b) => benchmark_selector(&req.run_id, b),
        None => run_selector(&req.run_id),
    };
    let mut pods = newest_per_benchmark(k8s.list(&ar, ns, Some(&selector)).await?);
    if pods.is_empty() && req.follow && req.benchmark.is_some() {
        let timeout = req.start_timeout.unwrap_or(Duration::from_secs(3600));
        let p = wait_started(k8s, ns, &selector, req.container.as_deref(), timeout).await?;
        pods.push((benchmark_label(&p).unwrap_or("").to_string(), p));
    }
    if pods.is_empty() {
        let what = match &req.benchmark {
            Some(b) => format!("benchmark `{b}` of run `{}`", req.run_id),
            None => format!("run `{}`", req.run_id),
        };
        return Err(Diag::new(CODE_NO_POD, format!("no pod found for {what} in namespace `{ns}`"))
            .help("the Job may not have started yet (`nrl gym status RUN`; `-f` waits for it), or was removed by its TTL; check --namespace"));
    }
    let opts = |c: String| LogOptions {
        container: Some(c),
        follow: req.follow,
        tail: req.tail,
        previous: false,
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, String)>();
    let mut tasks = Vec::new();
    for (bench, pod) in pods {
        let container = pick_container(&pod, req.container.as_deref())?;
        let ready = started(&pod, &container);
        if !ready && !req.follow {
            return Err(Diag::new(
                CODE_NO_POD,
                format!(
                    "container `{container}` of pod {} has not started yet",
                    name(&pod)
                ),
            )
            .help("wait for it with `-f`, or check `nrl gym status RUN`"));
        }
        let (k8s, ns, tx) = (k8s.clone(), ns.to_string(), tx.clone());
        let selector = benchmark_selector(&req.run_id, &bench);
        let start_timeout = req.start_timeout.unwrap_or(Duration::from_secs(3600));
        let o = opts(container.clone());
        // Each benchmark waits for its own container, so one slow pod holds no other back.
        tasks.push(tokio::spawn(async move {
            let pod = if ready {
                pod
            } else {
                wait_started(&k8s, &ns, &selector, Some(&container), start_timeout).await?
            };
            k8s.stream_pod_logs(&ns, name(&pod), &o, |line| {
                if tx.send((bench.clone(), line.to_string())).is_err() {
                    return std::ops::ControlFlow::Break(());
                }
                std::ops::ControlFlow::Continue(())
            })
            .await
        }));
    }
    drop(tx);
    while let Some((bench, line)) = rx.recv().await {
        sink(&bench, &line);
    }
    for t in tasks {
        match t.await {
            Ok(r) => r?,
            Err(e) => {
                return Err(Diag::api(
                    "nrl::gym::logs",
                    format!("a log stream failed: {e}"),
                ));
            }
        }
    }
    Ok(())
}
