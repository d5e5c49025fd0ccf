//! The real-Ray job runner: submits the RayJob's entrypoint to a real Ray dashboard over the
//! Job Submission REST API (`POST /api/jobs/`), polls `GET /api/jobs/{id}` with backoff, and
//! mirrors the Ray status into the RayJob. If the RayJob is deleted meanwhile, the Ray job is
//! stopped. In `InteractiveMode` the user submitted the job: the runner only watches it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::rayjob::{finish, mirror};
use crate::support::fake_k8s::resources::RAYJOBS;
use crate::support::fake_k8s::state::State;

/// The submit body for a RayJob spec (only keys Ray accepts; nulls omitted).
pub fn submit_body(job_id: &str, rayjob: &str, spec: &Value) -> Value {
    let mut body = Map::new();
    body.insert(
        "entrypoint".into(),
        spec.get("entrypoint").cloned().unwrap_or(json!("")),
    );
    body.insert("submission_id".into(), json!(job_id));
    body.insert("metadata".into(), json!({"rayjob": rayjob}));
    if let Some(yaml) = spec.get("runtimeEnvYAML").and_then(Value::as_str)
        && let Ok(env) = serde_saphyr::from_str::<Value>(yaml)
        && env.is_object()
    {
        body.insert("runtime_env".into(), env);
    }
    if let Some(cpus) = spec.get("entrypointNumCpus").and_then(Value::as_f64) {
        body.insert("entrypoint_num_cpus".into(), json!(cpus));
    }
    if let Some(gpus) = spec.get("entrypointNumGpus").and_then(Value::as_f64) {
        body.insert("entrypoint_num_gpus".into(), json!(gpus));
    }
    if let Some(res) = spec.get("entrypointResources").and_then(Value::as_str)
        && let Ok(v) = serde_json::from_str::<Value>(res)
    {
        body.insert("entrypoint_resources".into(), v);
    }
    Value::Object(body)
}

pub async fn run(
    state: Arc<State>,
    ns: String,
    name: String,
    dashboard: String,
    job_id: String,
    spec: Value,
    submit: bool,
) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let base = dashboard.trim_end_matches('/').to_string();
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            finish(
                &state,
                &ns,
                &name,
                &job_id,
                "FAILED",
                &format!("fake runner: building HTTP client: {e}"),
            );
            return;
        }
    };
    let submitted = if submit {
        client
            .post(format!("{base}/api/jobs/"))
            .json(&submit_body(&job_id, &name, &spec))
            .send()
            .await
            .map(Some)
    } else {
        Ok(None)
    };
    match submitted {
        Ok(None) => {}
        Ok(Some(r)) if r.status().is_success() => {}
        Ok(Some(r)) => {
            let code = r.status();
            let text = r.text().await.unwrap_or_default();
            let last = text.lines().last().unwrap_or("").to_string();
            finish(
                &state,
                &ns,
                &name,
                &job_id,
                "FAILED",
                &format!("failed to submit job: HTTP {code}: {last}"),
            );
            return;
        }
        Err(e) => {
            finish(
                &state,
                &ns,
                &name,
                &job_id,
                "FAILED",
                &format!("failed to submit job: {e}"),
            );
            return;
        }
    }

    let base_poll = state.timings().ray_poll;
    let mut poll = base_poll;
    let mut last_status = String::new();
    loop {
        tokio::time::sleep(poll).await;
        poll = (poll * 3 / 2).min(base_poll * 8);
        if state.get(&RAYJOBS, &ns, &name).is_err() {
            let _ = client
                .post(format!("{base}/api/jobs/{job_id}/stop"))
                .send()
                .await;
            return;
        }
        let details: Value = match client.get(format!("{base}/api/jobs/{job_id}")).send().await {
            Ok(r) if r.status().is_success() => r.json().await.unwrap_or(Value::Null),
            _ => continue,
        };
        let status = details
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let message = details
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if status != last_status {
            // A new state resets the backoff, so the next change is seen quickly.
            poll = base_poll;
            last_status = status.clone();
        }
        match status.as_str() {
            "PENDING" | "RUNNING"
                if !mirror(
                    &state,
                    &ns,
                    &name,
                    &job_id,
                    json!({"jobStatus": status, "message": message}),
                ) && state.get(&RAYJOBS, &ns, &name).is_ok_and(|rj| {
                    rj.pointer("/status/jobId").and_then(Value::as_str) != Some(job_id.as_str())
                }) =>
            {
                // This attempt is over (suspended or retried).
                return;
            }
            "SUCCEEDED" | "FAILED" | "STOPPED" => {
                finish(&state, &ns, &name, &job_id, &status, &message);
                return;
            }
            _ => {}
        }
    }
}
