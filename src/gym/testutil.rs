//! Fixtures shared by the gym unit tests: the reference test file's config (ref §5.1:
//! compute `cluster`, namespace `eng-test`, PVC `workspace`, driver `gym:latest`,
//! `output_path: tmp/jobs`, otel off), varied with overrides.

use serde_json::Value as Json;

use crate::config::env::MapEnv;
use crate::diag::Diag;

use super::config::{LoadedGym, load_text};
use super::plan::{RunMeta, RunPlan, plan};

pub const RUN_ID: &str = "gym-job-20260101t000000z-abcdef";

pub const FIXTURE: &str = "\
services: {}
compute:
  cluster:
    type: kubernetes
    namespace: eng-test
    pvc_name: workspace
driver:
  container: gym:latest
  benchmarks:
    bench_a: {}
job:
  output_path: tmp/jobs
otel:
  enabled: false
";

/// Adds the reference tests' vLLM service.
pub const VLLM: &str =
    "services.vllm_model={type: vllm, container: vllm/vllm-openai:v0.9.0, model: org/model}";

pub fn env() -> MapEnv {
    MapEnv::new([("HF_TOKEN", "hf_secret_value"), ("MY_USER", "alice")])
}

pub fn try_load_from(text: &str, overrides: &[&str]) -> Result<LoadedGym, Diag> {
    let ovs: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    load_text("gym.yaml", text, &ovs, &env())
}

pub fn try_load(overrides: &[&str]) -> Result<LoadedGym, Diag> {
    try_load_from(FIXTURE, overrides)
}

pub fn load(overrides: &[&str]) -> LoadedGym {
    match try_load(overrides) {
        Ok(l) => l,
        Err(e) => panic!("fixture does not load: {}", e.render(false, 120)),
    }
}

pub fn load_err(overrides: &[&str]) -> Diag {
    match try_load(overrides) {
        Ok(_) => panic!("expected an error for {overrides:?}"),
        Err(e) => e,
    }
}

/// Every message of a diagnostic and its related ones.
pub fn all_messages(d: &Diag) -> String {
    let mut out = d.message.clone();
    for r in &d.related {
        out.push('\n');
        out.push_str(&all_messages(r));
    }
    out
}

pub fn meta() -> RunMeta {
    RunMeta {
        run_id: RUN_ID.into(),
        submitted_at: "2026-01-01T00:00:00Z".into(),
        submitted_by: "alice".into(),
    }
}

pub fn plan_for(overrides: &[&str]) -> RunPlan {
    match plan(&load(overrides).config, &meta()) {
        Ok(p) => p,
        Err(e) => panic!("plan failed: {}", e.render(false, 120)),
    }
}

/// The first Job of a plan for the fixture, as JSON.
pub fn job_json(overrides: &[&str]) -> Json {
    plan_for(overrides).jobs[0].manifest.to_json()
}

pub fn sidecar(job: &Json) -> &Json {
    &job["spec"]["template"]["spec"]["initContainers"][0]
}

pub fn driver(job: &Json) -> &Json {
    &job["spec"]["template"]["spec"]["containers"][0]
}

pub fn script(job: &Json) -> &str {
    driver(job)["command"][2].as_str().unwrap_or_default()
}
