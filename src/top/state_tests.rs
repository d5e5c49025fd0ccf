//! A scripted scenario of watch events through [`TopState`]: a RayJob going from
//! Initializing (a worker Pending, unschedulable) to Running, with its driver log.

use serde_json::{Value as Json, json};

use crate::k8s::watch::LabelledEvent;
use crate::top::model::{Connection, RunKind};
use crate::top::progress::ProgressPatterns;
use crate::top::state::{TopState, Watched};

const NOW: &str = "2026-01-01T12:10:00Z";

fn now() -> jiff::Timestamp {
    NOW.parse().unwrap()
}

fn meta(name: &str, created: &str, labels: Json) -> Json {
    json!({"name": name, "namespace": "team", "creationTimestamp": created, "uid": format!("uid-{name}"),
        "labels": labels})
}

fn rayjob(name: &str, owner: &str, deployment: &str, job: Option<&str>) -> Json {
    let mut status = json!({"jobDeploymentStatus": deployment,
        "rayClusterName": format!("{name}-raycluster-x1")});
    if let Some(j) = job {
        status["jobStatus"] = json!(j);
        status["jobId"] = json!(format!("{name}-sub"));
    }
    json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": meta(name, "2026-01-01T12:00:00Z", json!({"nrl-k8s/owner": owner})),
        "status": status})
}

fn raycluster(name: &str, labels: Json, state: &str) -> Json {
    json!({"apiVersion": "ray.io/v1", "kind": "RayCluster",
        "metadata": meta(name, "2026-01-01T12:00:05Z", labels), "status": {"state": state}})
}

fn pod(name: &str, cluster: &str, node_type: &str, group: &str, phase: &str) -> Json {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": meta(name, "2026-01-01T12:00:10Z",
            json!({"ray.io/cluster": cluster, "ray.io/node-type": node_type, "ray.io/group": group})),
        "spec": {"containers": [{"name": "ray", "resources": {"limits": {"nvidia.com/gpu": if node_type == "head" { 0 } else { 8 }}}}]},
        "status": {"phase": phase}});
    if phase == "Running" {
        p["spec"]["nodeName"] = json!(format!("node-{name}"));
        p["status"]["containerStatuses"] =
            json!([{"name": "ray", "ready": true, "restartCount": 0, "state": {"running": {}}}]);
    } else {
        p["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "False",
            "reason": "Unschedulable", "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}]);
    }
    p
}

fn event(name: &str, kind: &str, object: &str, reason: &str, message: &str, at: &str) -> Json {
    json!({"apiVersion": "v1", "kind": "Event", "metadata": meta(name, at, json!({})),
        "involvedObject": {"kind": kind, "name": object}, "type": if reason.starts_with("Failed") { "Warning" } else { "Normal" },
        "reason": reason, "message": message, "count": 3, "lastTimestamp": at})
}

fn initializing() -> TopState {
    let mut s = TopState::new(
        "kind-dev",
        "team",
        Some("alice"),
        ProgressPatterns::default(),
        5,
    );
    s.apply(
        Watched::RayJobs,
        LabelledEvent::Reset(vec![
            rayjob("alice-grpo", "alice", "Initializing", None),
            rayjob("bob-sft", "bob", "Running", Some("RUNNING")),
        ]),
    );
    s.apply(
        Watched::RayClusters,
        LabelledEvent::Reset(vec![
            raycluster(
                "alice-grpo-raycluster-x1",
                json!({"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "alice-grpo"}),
                "",
            ),
            raycluster(
                "alice-dev",
                json!({"nrl-k8s/owner": "alice", "nrl.ai/role": "training"}),
                "ready",
            ),
        ]),
    );
    s.apply(
        Watched::RayPods,
        LabelledEvent::Reset(vec![
            pod(
                "alice-grpo-raycluster-x1-gpu-worker-a",
                "alice-grpo-raycluster-x1",
                "worker",
                "gpu",
                "Pending",
            ),
            pod(
                "alice-grpo-raycluster-x1-head-b",
                "alice-grpo-raycluster-x1",
                "head",
                "headgroup",
                "Running",
            ),
        ]),
    );
    s.apply(
        Watched::Events,
        LabelledEvent::Reset(vec![
            event(
                "e1",
                "Pod",
                "alice-grpo-raycluster-x1-gpu-worker-a",
                "FailedScheduling",
                "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
                "2026-01-01T12:09:00Z",
            ),
            event(
                "e2",
                "RayJob",
                "alice-grpo",
                "Created",
                "Created RayCluster alice-grpo-raycluster-x1",
                "2026-01-01T12:00:05Z",
            ),
            event(
                "e3",
                "Pod",
                "someone-elses-pod",
                "FailedMount",
                "not ours",
                "2026-01-01T12:09:30Z",
            ),
        ]),
    );
    s
}

/// The scenario's next step: the RayJob is Running and its worker was scheduled.
fn running(s: &mut TopState) {
    s.apply(
        Watched::RayJobs,
        LabelledEvent::Applied(rayjob("alice-grpo", "alice", "Running", Some("RUNNING"))),
    );
    s.apply(
        Watched::RayPods,
        LabelledEvent::Applied(pod(
            "alice-grpo-raycluster-x1-gpu-worker-a",
            "alice-grpo-raycluster-x1",
            "worker",
            "gpu",
            "Running",
        )),
    );
}

#[test]
fn an_initializing_rayjob_with_an_unschedulable_worker() {
    let mut s = initializing();
    s.select("alice-grpo");
    let view = s.view(now());
    // bob's RayJob is not shown; the RayJob's own cluster is not a run of its own.
    let runs: Vec<(&str, RunKind)> = view
        .runs
        .iter()
        .map(|r| (r.name.as_str(), r.kind))
        .collect();
    assert_eq!(
        runs,
        [
            ("alice-dev", RunKind::RayCluster),
            ("alice-grpo", RunKind::RayJob)
        ]
    );
    insta::assert_yaml_snapshot!("initializing", view);
}

#[test]
fn the_rayjob_runs_and_its_log_gives_progress() {
    let mut s = initializing();
    s.select("alice-grpo");
    running(&mut s);
    assert_eq!(
        s.driver_of("alice-grpo"),
        Some((
            "alice-grpo-raycluster-x1".to_string(),
            "alice-grpo-sub".to_string()
        ))
    );
    s.log_source(
        "alice-grpo",
        Some("driver log of alice-grpo-sub".into()),
        None,
    );
    // Chunks end anywhere; lines are cut at newlines.
    s.log_text(
        "alice-grpo",
        "wandb: 🚀 View run at https://wandb.ai/team/grpo/runs/abc123\n======",
    );
    s.log_text(
        "alice-grpo",
        "=================== Step 3/10 =========================\npartial",
    );
    let view = s.view(now());
    let detail = view.selected.as_ref().unwrap();
    assert_eq!(detail.name, "alice-grpo");
    assert_eq!(detail.log.lines.len(), 2);
    assert_eq!(detail.progress.step, Some(3));
    assert_eq!(
        view.runs[1].wandb.as_deref(),
        Some("https://wandb.ai/team/grpo/runs/abc123")
    );
    // The pager gets the line still being written too.
    assert_eq!(
        s.full_log("alice-grpo").last().map(String::as_str),
        Some("partial")
    );
    insta::assert_yaml_snapshot!("running", view);
}

#[test]
fn a_lost_watch_shows_until_it_delivers_again_and_deletions_remove() {
    let mut s = initializing();
    s.watch_down(Watched::RayPods, "connection refused");
    assert_eq!(
        s.view(now()).connection,
        Connection::Reconnecting {
            watches: vec!["pods".into()],
            error: "connection refused".into()
        }
    );
    s.apply(
        Watched::RayPods,
        LabelledEvent::Deleted(pod(
            "alice-grpo-raycluster-x1-gpu-worker-a",
            "alice-grpo-raycluster-x1",
            "worker",
            "gpu",
            "Pending",
        )),
    );
    let view = s.view(now());
    assert_eq!(view.connection, Connection::Live);
    s.select("alice-grpo");
    let pods: Vec<String> = s.view(now()).selected.unwrap().clusters[0]
        .pods
        .iter()
        .map(|p| p.name.clone())
        .collect();
    assert_eq!(pods, ["alice-grpo-raycluster-x1-head-b"]);
}

#[test]
fn everyone_s_runs_and_gym_runs_grouped_by_run_id() {
    let mut s = TopState::new("c", "team", None, ProgressPatterns::default(), 5);
    s.apply(
        Watched::RayJobs,
        LabelledEvent::Reset(vec![rayjob(
            "bob-sft",
            "bob",
            "Complete",
            Some("SUCCEEDED"),
        )]),
    );
    let job = |name: &str, bench: &str, status: Json| {
        json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": meta(name, "2026-01-01T12:05:00Z",
                json!({"gym-job-id": "gym-20260101-120500-ab12", "gym-benchmark": bench, "nrl-k8s/owner": "carol"})),
            "status": status})
    };
    s.apply(
        Watched::GymJobs,
        LabelledEvent::Reset(vec![
            job(
                "gym-20260101-120500-ab12-gpqa",
                "gpqa",
                json!({"active": 1}),
            ),
            job(
                "gym-20260101-120500-ab12-aime",
                "aime",
                json!({"succeeded": 1,
                "conditions": [{"type": "Complete", "status": "True"}]}),
            ),
        ]),
    );
    let view = s.view(now());
    let runs: Vec<(&str, &str, bool)> = view
        .runs
        .iter()
        .map(|r| (r.name.as_str(), r.state.as_str(), r.finished))
        .collect();
    assert_eq!(
        runs,
        [
            ("gym-20260101-120500-ab12", "1 Running, 1 Succeeded", false),
            ("bob-sft", "Complete/SUCCEEDED", true),
        ]
    );
    assert_eq!(view.user, None);
}

/// The scenario end to end, from watch events to the screen: the RayJob initializing with
/// its worker unschedulable, then running with its log's progress, drawn as `nrl top`
/// draws it (colours off).
#[test]
fn the_scenario_on_screen() {
    use crate::top::model::ScreenUpdate;
    use crate::top::ui::App;
    use crate::top::ui::tests::screen;

    let mut s = initializing();
    s.select("alice-grpo");
    let mut app = App::new(false);
    app.set_now(now());
    app.set_size(120, 40);
    app.on_update(ScreenUpdate::View(Box::new(s.view(now()))));
    insta::assert_snapshot!("screen_initializing", screen(&app, 120, 40));

    running(&mut s);
    s.log_source(
        "alice-grpo",
        Some("driver log of alice-grpo-sub".into()),
        None,
    );
    for step in 1..=3 {
        s.log_text(
            "alice-grpo",
            &format!(
                "========================= Step {step}/10 =========================\n\
                 📊 Training Results:\n  • Loss: -0.01{step}\n  • Avg Reward: 0.4{step}\n\
                 ⏱️  Timing:\n  • Total step time: 4{step}.50s\n"
            ),
        );
    }
    app.on_update(ScreenUpdate::View(Box::new(s.view(now()))));
    insta::assert_snapshot!("screen_running", screen(&app, 120, 40));
}
