//! `nrl runs`: local records, records kept on the cluster, and the refresh of running
//! runs against the fake API server (RayJobs) and a stand-in Ray dashboard, with the
//! requests that refresh costs.

use serde_json::{Value, json};

use crate::support::context::{AGE, TestContext};
use crate::support::fake_k8s::FakeK8s;
use crate::support::stub_ray::StubRay;

fn write_record(ctx: &TestContext, rec: Value) {
    let runs = ctx.home().join(".cache/nrl/runs");
    std::fs::create_dir_all(&runs).unwrap();
    let id = rec["id"].as_str().unwrap().to_string();
    std::fs::write(
        runs.join(format!("{id}.json")),
        serde_json::to_string(&rec).unwrap(),
    )
    .unwrap();
}

/// Six runs, one of each way a listing learns its status.
fn seed(ctx: &TestContext, ray: &StubRay) {
    let runs = ctx.home().join(".cache/nrl/runs");
    let done_dir = runs.join("sft-done");
    std::fs::create_dir_all(&done_dir).unwrap();
    std::fs::write(
        done_dir.join("driver.log"),
        "step 1/2\nwandb: 🚀 View run at https://wandb.ai/rl-team/sft/runs/k2x9ab\nstep 2/2\n",
    )
    .unwrap();
    write_record(
        ctx,
        json!({"id": "sft-done", "kind": "local", "created_at": "2026-01-01T10:00:00Z",
            "recipe": "/r/sft.yaml", "status": "succeeded", "exit_code": 0,
            "run_dir": done_dir.display().to_string()}),
    );
    // Its nrl was SIGKILLed: pid 1 with another start time is not it.
    write_record(
        ctx,
        json!({"id": "grpo-local-lost", "kind": "local", "created_at": "2026-01-01T11:00:00Z",
            "recipe": "/r/grpo.yaml", "supervisor": {"pid": 1, "start_time": 7}}),
    );
    ray.add_job("dpo-ray-done", "SUCCEEDED", 1);
    for id in ["dpo-ray-done", "dpo-ray-gone"] {
        write_record(
            ctx,
            json!({"id": id, "kind": "ray", "created_at": "2026-01-01T12:00:00Z",
                "recipe": "/r/dpo.yaml",
                "ray": {"address": ray.url(), "submission_id": id}}),
        );
    }
    for (id, rayjob) in [("grpo-rj-gone", "gone-rj"), ("grpo-rj-invalid", "bad-rj")] {
        write_record(
            ctx,
            json!({"id": id, "kind": "rayjob", "created_at": "2026-01-01T13:00:00Z",
                "recipe": "/r/grpo.yaml", "context": "fake", "namespace": "default",
                "cluster": rayjob, "k8s": {"rayjob": rayjob, "submission_id": id}}),
        );
    }
}

fn cluster_objects(fake: &FakeK8s) {
    // KubeRay never leaves ValidationFailed (rayjob_controller.go `Reconcile`).
    fake.put(json!({"apiVersion": "ray.io/v1", "kind": "RayJob",
        "metadata": {"name": "bad-rj", "namespace": "default"},
        "spec": {"entrypoint": "python train.py"},
        "status": {"jobDeploymentStatus": "ValidationFailed", "reason": "ValidationFailed",
            "message": "The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set"}}));
    // A run launched from another machine: only its cluster copy is here.
    let other = json!({"id": "grpo-elsewhere", "kind": "rayjob",
        "created_at": "2026-01-01T14:00:00Z", "recipe": "/home/bob/grpo.yaml",
        "context": "fake", "namespace": "default", "status": "failed",
        "message": "job FAILED", "k8s": {"rayjob": "bob-rj"}});
    fake.put(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "nrl-run-grpo-elsewhere", "namespace": "default",
            "labels": {"nrl/run-id": "grpo-elsewhere", "nrl/run-kind": "rayjob"}},
        "data": {"record.json": other.to_string()}}));
}

fn stdout_of(ctx: &TestContext, args: &[&str]) -> String {
    let out = ctx.nrl().arg("runs").args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn runs_refresh_each_running_run_where_it_runs() {
    let fake = FakeK8s::start();
    cluster_objects(&fake);
    let ray = StubRay::start();
    let ctx = TestContext::with_fake(&fake)
        .columns(250)
        .filter(r"127\.0\.0\.1:\d+", "127.0.0.1:[PORT]")
        .filter(AGE, "[AGE]  ");
    seed(&ctx, &ray);
    fake.clear_request_log();
    let yaml = stdout_of(&ctx, &["-o", "yaml"]);
    let _s = ctx.snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("runs_refreshed_yaml", yaml);

    // One list of RayJobs and one of RayClusters for the namespace; nothing per run.
    let calls: Vec<String> = fake
        .request_log()
        .iter()
        .filter(|r| r.resource.is_some())
        .map(|r| format!("{} {}", r.verb, r.resource.clone().unwrap_or_default()))
        .collect();
    assert_eq!(calls, ["list rayjobs", "list rayclusters"]);

    let table = stdout_of(&ctx, &["--recipe", "grpo"]);
    insta::assert_snapshot!("runs_grpo_table", table);
}

#[test]
fn runs_show_the_cluster_copies_with_a_namespace_and_filter() {
    let fake = FakeK8s::start();
    cluster_objects(&fake);
    let ray = StubRay::start();
    let ctx = TestContext::with_fake(&fake);
    seed(&ctx, &ray);
    let ids = |args: &[&str]| -> Vec<String> {
        let v: Value = serde_json::from_str(&stdout_of(&ctx, args)).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{} {} {}",
                    r["id"].as_str().unwrap(),
                    r["status"].as_str().unwrap(),
                    r["origin"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        ids(&["-o", "json", "-n", "default", "--status", "failed"]),
        [
            "grpo-elsewhere failed cluster",
            "grpo-rj-invalid failed local"
        ]
    );
    // kubectl's order works too: the cluster flags before the command.
    let out = ctx
        .nrl()
        .args(["-n", "default", "runs", "-o", "json", "--status", "failed"])
        .output()
        .unwrap();
    let before: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(before.as_array().map(Vec::len), Some(2), "{before}");
    // Without --context/-n only this machine's records; --no-refresh: as recorded.
    assert_eq!(
        ids(&["-o", "json", "--no-refresh", "--status", "running"]),
        [
            "grpo-rj-invalid running local",
            "grpo-rj-gone running local",
            "dpo-ray-gone running local",
            "dpo-ray-done running local",
        ]
    );
    assert_eq!(
        ids(&["-o", "json", "--status", "lost", "--recipe", "dpo"]),
        ["dpo-ray-gone lost local"]
    );
    // Everything here is older than a day.
    assert!(ids(&["-o", "json", "--since", "1d"]).is_empty());
    let out = ctx
        .nrl()
        .args(["runs", "--since", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `run::list` is `nrl runs` from a playbook: the same rows (the same library call), the
/// same filters, and no refresh in plan mode (which touches nothing).
#[test]
fn run_list_in_a_script_is_nrl_runs() {
    let fake = FakeK8s::start();
    cluster_objects(&fake);
    let ray = StubRay::start();
    let ctx = TestContext::with_fake(&fake);
    seed(&ctx, &ray);
    let script = ctx.home().join("runs.rhai");
    std::fs::write(
        &script,
        r#"print(dump_json(run::list(#{status: ["failed", "lost"], cluster: true})));
           print(dump_json(run::list(#{since: "1d"})));"#,
    )
    .unwrap();
    let out = ctx.nrl().arg("script").arg(&script).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    let from_script: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    let from_command: Value = serde_json::from_str(&stdout_of(
        &ctx,
        &[
            "-o", "json", "-n", "default", "--status", "failed", "--status", "lost",
        ],
    ))
    .unwrap();
    assert_eq!(from_script, from_command);
    assert_eq!(from_script.as_array().map(Vec::len), Some(5));
    assert_eq!(lines.next(), Some("[]"));

    // Plan mode shows the records as they are (`nrl runs --no-refresh`: the four that say
    // running; the local run whose nrl is gone is lost without asking anyone).
    std::fs::write(
        ctx.home().join("plan.rhai"),
        r#"print(run::list(#{status: "running"}).len());
           run::list(#{status: "gone"});"#,
    )
    .unwrap();
    let out = ctx
        .nrl()
        .args(["script", "--dry-run"])
        .arg(ctx.home().join("plan.rhai"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "4\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("`gone` is not a run status"), "{stderr}");
}
