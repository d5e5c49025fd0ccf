//! Parity with the reference's rendered example (ref-nemo-gym-k8s §2.8): the sample config
//! of §6 renders to the Job of §2.8, JSON-equal and in the same key order, with the one
//! deliberate difference written into the expected file (secrets by reference, §7 #1).

use base64::Engine;
use nrl::config::env::MapEnv;
use nrl::gym::{RunMeta, load_text};
use serde_json::Value as Json;

use crate::support::data;

const RUN_ID: &str = "gym-job-20260901t120000z-a1b2c3";
const R: &str = "/mnt/gym-output/gym-job-20260901t120000z-a1b2c3/gpqa";

fn data(name: &str) -> String {
    std::fs::read_to_string(data::repo().join("tests/data/gym").join(name)).expect("test data")
}

fn rendered() -> nrl::gym::RunPlan {
    let env = MapEnv::new([("HF_TOKEN", "hf_the_real_token")]);
    let loaded = load_text(
        "k8s_vllm_single_node.yaml",
        &data("k8s_vllm_single_node.yaml"),
        &[],
        &env,
    )
    .unwrap_or_else(|e| panic!("{}", e.render(false, 120)));
    let meta = RunMeta {
        run_id: RUN_ID.into(),
        submitted_at: "2026-09-01T12:00:00Z".into(),
        submitted_by: "alice".into(),
    };
    nrl::gym::plan(&loaded.config, &meta).unwrap_or_else(|e| panic!("{}", e.render(false, 120)))
}

/// The script with its two base64 blobs replaced by the expected file's placeholders, and
/// the blobs decoded.
fn split_blobs(script: &str) -> (String, String, String) {
    let mut blobs = Vec::new();
    let mut out = Vec::new();
    for line in script.lines() {
        match line
            .strip_prefix("printf '%s' '")
            .and_then(|r| r.split_once('\''))
        {
            Some((b64, rest)) => {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .expect("base64");
                blobs.push(String::from_utf8(decoded).expect("utf-8"));
                let placeholder = if rest.ends_with("resolved-config.yaml") {
                    "<b64 resolved config>"
                } else {
                    "<b64 stub record>"
                };
                out.push(format!("printf '%s' '{placeholder}'{rest}"));
            }
            None => out.push(line.to_string()),
        }
    }
    assert_eq!(blobs.len(), 2, "two files written from base64");
    (out.join("\n"), blobs.remove(0), blobs.remove(0))
}

#[test]
fn rendered_job_matches_the_reference_example() {
    let plan = rendered();
    assert_eq!(plan.jobs.len(), 1);
    let mut ours = plan.jobs[0].manifest.to_json();
    let script = ours["spec"]["template"]["spec"]["containers"][0]["command"][2]
        .as_str()
        .unwrap()
        .to_string();
    let (masked, _, _) = split_blobs(&script);
    ours["spec"]["template"]["spec"]["containers"][0]["command"][2] = Json::String(masked);
    let expected = data::parse_doc(&data("k8s_vllm_single_node.job.yaml")).to_json();
    data::assert_docs_equal(
        std::slice::from_ref(&ours),
        std::slice::from_ref(&expected),
        "§2.8 Job",
    );
    // Same key order too (the reference dumps with sort_keys=False).
    assert_eq!(
        serde_json::to_string(&ours).unwrap(),
        serde_json::to_string(&expected).unwrap()
    );
}

#[test]
fn the_token_is_nowhere_in_the_job() {
    let plan = rendered();
    let job = serde_json::to_string(&plan.jobs[0].manifest.to_json()).unwrap();
    assert!(!job.contains("hf_the_real_token"));
    let script =
        plan.jobs[0].manifest.to_json()["spec"]["template"]["spec"]["containers"][0]["command"][2]
            .as_str()
            .unwrap()
            .to_string();
    let (_, resolved, record) = split_blobs(&script);
    assert!(!resolved.contains("hf_the_real_token") && !record.contains("hf_the_real_token"));
    let secret = plan.secret.expect("a Secret for HF_TOKEN").to_json();
    assert_eq!(
        secret["metadata"]["name"],
        "gym-job-20260901t120000z-a1b2c3-env"
    );
    assert_eq!(secret["metadata"]["namespace"], "evals");
    let token = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["HF_TOKEN"].as_str().unwrap())
        .unwrap();
    assert_eq!(token, b"hf_the_real_token");
}

#[test]
fn the_blobs_hold_the_resolved_config_and_the_record_stub() {
    let plan = rendered();
    let script =
        plan.jobs[0].manifest.to_json()["spec"]["template"]["spec"]["containers"][0]["command"][2]
            .as_str()
            .unwrap()
            .to_string();
    let (_, resolved, record) = split_blobs(&script);
    let cfg = data::parse_doc(&resolved).to_json();
    assert_eq!(cfg["services"]["policy"]["placement"], "cluster");
    assert_eq!(
        cfg["services"]["policy"]["health_check"],
        serde_json::json!({"path": "/health", "port": 8000, "timeout_seconds": 1200})
    );
    assert_eq!(
        cfg["services"]["policy"]["env"]["HF_TOKEN"],
        "host:HF_TOKEN"
    );
    assert_eq!(cfg["driver"]["env"]["HF_TOKEN"], "host:HF_TOKEN");
    assert_eq!(
        cfg["driver"]["benchmarks"]["gpqa"]["run"]["policy_model_name"],
        "qwen7b"
    );
    assert_eq!(cfg["compute"]["cluster"]["pvc_name"], "gym-results");
    assert_eq!(cfg["otel"]["enabled"], false);
    let rec: Json = serde_json::from_str(&record).unwrap();
    assert_eq!(rec["gym_job_id"], RUN_ID);
    assert_eq!(rec["run_dir"], R);
    assert_eq!(rec["cluster"], "cluster");
    assert_eq!(rec["executor"], "kubernetes");
    assert_eq!(rec["hostname"], Json::Null);
    assert_eq!(
        rec["benchmarks"],
        serde_json::json!([{"benchmark": "gpqa", "job_dir": R, "job_id": "gym-job-20260901t120000z-a1b2c3-gpqa", "error": null}])
    );
    assert_eq!(
        rec["executor_metadata"],
        serde_json::json!({"namespace": "evals", "context": "my-cluster-context"})
    );
    assert_eq!(rec["submitted_at"], "2026-09-01T12:00:00Z");
    assert_eq!(rec["submitted_by"], "alice");
    assert_eq!(rec["schema_version"], 1);
}

#[test]
fn the_example_warns_about_idle_gpus() {
    let env = MapEnv::new([("HF_TOKEN", "x")]);
    let loaded = load_text("k8s.yaml", &data("k8s_vllm_single_node.yaml"), &[], &env).unwrap();
    let codes: Vec<&str> = loaded.warnings.iter().map(|w| &*w.code).collect();
    assert_eq!(codes, ["nrl::gym::idle_gpus"]);
    assert!(loaded.warnings[0].message.contains("leaving 6 GPU(s) idle"));
}
