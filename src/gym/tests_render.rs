//! The reference's test_kubernetes_executor.py catalogue (ref-nemo-gym-k8s §5.1), tests
//! that render, under the reference's names; tests of submit/record behaviour live with
//! the submit code and the end-to-end tests.

use serde_json::json;

use super::testutil::*;

// §5.1 test 5
#[test]
fn test_vllm_sidecar_memory_scales_with_gpus() {
    let job = job_json(&[VLLM, "services.vllm_model.tensor_parallel_size=2"]);
    assert_eq!(sidecar(&job)["resources"]["requests"]["memory"], "64Gi");
    assert!(
        driver(&job)["resources"]["requests"]["memory"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
}

// §5.1 test 6
#[test]
fn test_vllm_sidecar_has_startup_and_readiness_probes() {
    let job = job_json(&[VLLM]);
    let s = sidecar(&job);
    assert_eq!(s["startupProbe"]["httpGet"]["path"], "/health");
    assert!(s["readinessProbe"].is_object());
    // The default 60 s budget is 12 probes of 5 s.
    assert_eq!(s["startupProbe"]["failureThreshold"], 12);
    assert_eq!(s["readinessProbe"]["failureThreshold"], 3);
    assert_eq!(s["startupProbe"]["httpGet"]["port"], 8000);
}

// §5.1 test 7
#[test]
fn test_vllm_sidecar_mounts_only_shm() {
    let job = job_json(&[VLLM, "services.vllm_model.tensor_parallel_size=2"]);
    assert_eq!(
        sidecar(&job)["volumeMounts"],
        json!([{"name": "dshm", "mountPath": "/dev/shm"}])
    );
    let volumes = &job["spec"]["template"]["spec"]["volumes"];
    assert_eq!(volumes[0]["name"], "dshm");
    assert_eq!(volumes[0]["emptyDir"]["sizeLimit"], "4Gi");
    assert_eq!(volumes[0]["emptyDir"]["medium"], "Memory");
    assert_eq!(
        volumes[1],
        json!({"name": "gym-output", "persistentVolumeClaim": {"claimName": "workspace"}})
    );
}

// §5.1 test 12
#[test]
fn test_otel_enabled_by_default_is_rejected() {
    let e = load_err(&[VLLM, "~otel"]);
    assert!(
        all_messages(&e).contains("otel"),
        "{}",
        e.render(false, 120)
    );
    assert_eq!(e.code, crate::gym::config::CODE_OTEL);
}

// §5.1 test 13
#[test]
fn test_use_ray_serve_is_rejected() {
    let e = load_err(&[VLLM, "services.vllm_model.use_ray_serve=true"]);
    assert!(
        all_messages(&e).contains("use_ray_serve"),
        "{}",
        e.render(false, 120)
    );
}

// §5.1 test 14
#[test]
fn test_multi_instance_single_node_uses_data_parallel() {
    let job = job_json(&[
        VLLM,
        "services.vllm_model.tensor_parallel_size=2",
        "services.vllm_model.number_of_instances=4",
    ]);
    let cmd = sidecar(&job)["command"].as_array().unwrap().clone();
    assert_eq!(
        &cmd[cmd.len() - 2..],
        &[json!("--data-parallel-size"), json!("4")]
    );
}

// §5.1 test 15
#[test]
fn test_multi_instance_gpu_limit_is_total() {
    let job = job_json(&[
        VLLM,
        "services.vllm_model.tensor_parallel_size=2",
        "services.vllm_model.number_of_instances=4",
    ]);
    assert_eq!(sidecar(&job)["resources"]["limits"]["nvidia.com/gpu"], 8);
}

// §5.1 test 16
#[test]
fn test_default_ttl_and_no_deadline() {
    let job = job_json(&[]);
    assert_eq!(job["spec"]["ttlSecondsAfterFinished"], 86400);
    assert!(job["spec"].get("activeDeadlineSeconds").is_none());
    assert_eq!(job["spec"]["backoffLimit"], 0);
}

// §5.1 test 17
#[test]
fn test_ttl_and_deadline_are_configurable() {
    let job = job_json(&[
        "compute.cluster.active_deadline_seconds=3600",
        "compute.cluster.ttl_seconds_after_finished=60",
    ]);
    assert_eq!(job["spec"]["activeDeadlineSeconds"], 3600);
    assert_eq!(job["spec"]["ttlSecondsAfterFinished"], 60);
    // Emitted after `template`, as the reference does.
    let keys: Vec<&String> = job["spec"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "backoffLimit",
            "ttlSecondsAfterFinished",
            "template",
            "activeDeadlineSeconds"
        ]
    );
}

// §5.1 test 19
#[test]
fn test_command_benchmark_runs_the_command() {
    let job = job_json(&["driver.benchmarks.bench_a.command=./run_my_harness.sh"]);
    let s = script(&job);
    assert!(s.contains("./run_my_harness.sh"), "{s}");
    assert!(!s.contains("GYM_CMD"), "{s}");
}

// §5.1 test 20
#[test]
fn test_command_benchmark_gets_policy_env() {
    let job = job_json(&[
        VLLM,
        "driver.policy_model=vllm_model",
        "driver.benchmarks.bench_a.command=./run.sh",
    ]);
    let env: Vec<(String, String)> = driver(&job)["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["value"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(
        get("NEMO_GYM_BENCH_DIR"),
        Some(format!("tmp/jobs/{RUN_ID}/bench_a").as_str())
    );
    assert_eq!(
        get("NEMO_GYM_POLICY_BASE_URL"),
        Some("http://localhost:8000/v1")
    );
    assert_eq!(get("NEMO_GYM_POLICY_MODEL_NAME"), Some("org/model"));
    assert_eq!(get("NEMO_GYM_POLICY_API_KEY"), Some("dummy"));
}

#[test]
fn labels_on_job_and_pod_template() {
    let job = job_json(&[]);
    let want = json!({
        "app.kubernetes.io/managed-by": "nemo-gym",
        "gym-job-id": "gym-job-20260101t000000z-abcdef",
        "gym-benchmark": "bench-a",
    });
    assert_eq!(job["metadata"]["labels"], want);
    assert_eq!(job["spec"]["template"]["metadata"]["labels"], want);
    assert_eq!(
        job["metadata"]["name"],
        "gym-job-20260101t000000z-abcdef-bench-a"
    );
    assert_eq!(job["metadata"]["namespace"], "eng-test");
    assert_eq!(job["spec"]["template"]["spec"]["initContainers"], json!([]));
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
}

#[test]
fn node_selector_and_service_account_only_when_set() {
    let job = job_json(&[]);
    let pod = &job["spec"]["template"]["spec"];
    assert!(pod.get("nodeSelector").is_none() && pod.get("serviceAccountName").is_none());
    let job = job_json(&[
        "compute.cluster.node_selector={pool: gpu}",
        "compute.cluster.service_account=gym-runner",
    ]);
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["nodeSelector"], json!({"pool": "gpu"}));
    assert_eq!(pod["serviceAccountName"], "gym-runner");
}

#[test]
fn driver_mounts_the_pvc_at_output_path() {
    let job = job_json(&[]);
    let d = driver(&job);
    assert_eq!(d["name"], "driver");
    assert_eq!(d["image"], "gym:latest");
    assert_eq!(
        d["volumeMounts"],
        json!([{"name": "gym-output", "mountPath": "tmp/jobs"}])
    );
    assert_eq!(d["resources"], json!({"requests": {"memory": "2Gi"}}));
    assert!(d.get("env").is_none());
    assert_eq!(d["command"][0], "bash");
    assert_eq!(d["command"][1], "-c");
}

#[test]
fn sidecar_command_flags_in_order() {
    let job = job_json(&[
        VLLM,
        "services.vllm_model.served_model_name=m",
        "services.vllm_model.pipeline_parallel_size=2",
        "services.vllm_model.trust_remote_code=true",
        "services.vllm_model.extra_args='--max-model-len 8192 --x \"a b\"'",
        "services.vllm_model.port=9000",
    ]);
    let s = sidecar(&job);
    assert_eq!(
        s["command"],
        json!([
            "vllm",
            "serve",
            "org/model",
            "--port",
            "9000",
            "--served-model-name",
            "m",
            "--pipeline-parallel-size",
            "2",
            "--trust-remote-code",
            "--max-model-len",
            "8192",
            "--x",
            "a b"
        ])
    );
    assert_eq!(s["ports"], json!([{"containerPort": 9000}]));
    assert_eq!(s["restartPolicy"], "Always");
    assert_eq!(s["name"], "vllm-model");
    // Health checks follow the port unless given one.
    assert_eq!(s["startupProbe"]["httpGet"]["port"], 9000);
}

// §7 #1: a secret host value never reaches the Job spec.
#[test]
fn secret_host_values_go_through_the_run_secret() {
    let p = plan_for(&[
        VLLM,
        "services.vllm_model.env={HF_TOKEN: 'host:HF_TOKEN', WHO: 'host:MY_USER', MODE: 'lit:fast'}",
        "driver.env={HF_TOKEN: 'host:HF_TOKEN', CRED: 'secret:MY_USER'}",
    ]);
    let job = p.jobs[0].manifest.to_json();
    let text = job.to_string();
    assert!(!text.contains("hf_secret_value"), "{text}");
    let secret_ref =
        json!({"secretKeyRef": {"name": "gym-job-20260101t000000z-abcdef-env", "key": "HF_TOKEN"}});
    assert_eq!(
        sidecar(&job)["env"][0],
        json!({"name": "HF_TOKEN", "valueFrom": secret_ref})
    );
    assert_eq!(
        sidecar(&job)["env"][1],
        json!({"name": "WHO", "value": "alice"})
    );
    assert_eq!(
        sidecar(&job)["env"][2],
        json!({"name": "MODE", "value": "fast"})
    );
    assert_eq!(
        driver(&job)["env"][1]["valueFrom"]["secretKeyRef"]["key"],
        "MY_USER"
    );
    // Nor does it reach the resolved config written by the driver.
    let s = script(&job);
    let blob = s.split('\'').nth(3).unwrap();
    let decoded = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, blob).unwrap(),
    )
    .unwrap();
    assert!(decoded.contains("HF_TOKEN: host:HF_TOKEN"), "{decoded}");
    assert!(!decoded.contains("hf_secret_value"));
    let secret = p.secret.as_ref().unwrap().to_json();
    assert_eq!(secret["kind"], "Secret");
    assert_eq!(
        secret["metadata"]["name"],
        "gym-job-20260101t000000z-abcdef-env"
    );
    assert_eq!(secret["data"]["HF_TOKEN"], "aGZfc2VjcmV0X3ZhbHVl");
    assert_eq!(secret["data"]["MY_USER"], "YWxpY2U=");
    assert!(secret["metadata"]["labels"].get("gym-benchmark").is_none());
}

#[test]
fn no_secret_without_secret_values() {
    assert!(plan_for(&[]).secret.is_none());
}

#[test]
fn every_benchmark_gets_a_job_in_order() {
    let p = plan_for(&[
        "driver.benchmarks.zeta={}",
        "driver.benchmarks.alpha.run={split: test}",
    ]);
    let names: Vec<&str> = p.jobs.iter().map(|j| j.benchmark.as_str()).collect();
    assert_eq!(names, ["bench_a", "zeta", "alpha"]);
    assert_eq!(p.base_run_dir, format!("tmp/jobs/{RUN_ID}"));
    assert_eq!(p.jobs[2].run_dir, format!("tmp/jobs/{RUN_ID}/alpha"));
    assert!(script(&p.jobs[2].manifest.to_json()).contains("+split=test"));
}

// §7 #11: each Job carries only its own benchmark in the resolved config.
#[test]
fn resolved_config_holds_only_its_benchmark() {
    let p = plan_for(&["driver.benchmarks.zeta={}"]);
    let s = script(&p.jobs[1].manifest.to_json()).to_string();
    let blob = s.split('\'').nth(3).unwrap();
    let decoded = String::from_utf8(
        base64::Engine::decode(&base64::engine::general_purpose::STANDARD, blob).unwrap(),
    )
    .unwrap();
    assert!(
        decoded.contains("zeta:") && !decoded.contains("bench_a:"),
        "{decoded}"
    );
    let record = s.split('\'').nth(7).unwrap();
    let record: serde_json::Value = serde_json::from_slice(
        &base64::Engine::decode(&base64::engine::general_purpose::STANDARD, record).unwrap(),
    )
    .unwrap();
    assert_eq!(record["benchmarks"][0]["benchmark"], "zeta");
    assert_eq!(record["benchmarks"][0]["job_id"], p.jobs[1].name);
    assert_eq!(record["executor"], "kubernetes");
    assert_eq!(
        record["executor_metadata"],
        json!({"namespace": "eng-test", "context": ""})
    );
    assert_eq!(record["run_dir"], p.jobs[1].run_dir);
    assert_eq!(record["schema_version"], 1);
}

#[test]
fn rendered_objects_pass_the_bundled_schemas() {
    let p = plan_for(&[
        VLLM,
        "driver.env={K: 'host:HF_TOKEN'}",
        "compute.cluster.node_selector={a: b}",
    ]);
    for j in &p.jobs {
        assert!(crate::render::validate::validate_object(&j.manifest).is_empty());
    }
    assert!(crate::render::validate::validate_object(p.secret.as_ref().unwrap()).is_empty());
}

#[test]
fn oversized_driver_script_is_refused() {
    let long = format!(
        "driver.benchmarks.bench_a.command='{}'",
        "x".repeat(140 * 1024)
    );
    let cfg = load(&[&long]).config;
    let e = crate::gym::plan(&cfg, &meta()).unwrap_err();
    assert_eq!(e.code, "nrl::gym::argv_too_long");
}

// ref §5.3: a prepare argument with spaces and braces reaches Gym as one word through bash.
#[test]
fn prepare_arguments_survive_bash() {
    let p = plan_for(&[
        "driver.benchmarks.bench_a.prepare={msg: 'a {b} c', q: \"it's\"}",
        "driver.benchmarks.bench_a.run={n: 1}",
    ]);
    let s = script(&p.jobs[0].manifest.to_json()).to_string();
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("gym");
    std::fs::write(
        &bin,
        "#!/bin/sh\nfor a in \"$@\"; do printf '<%s>' \"$a\"; done; echo\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Run only the GYM_CMD array and the entrypoint; the mkdir/base64 lines need the PVC.
    let tail: Vec<&str> = s.lines().skip(4).collect();
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(tail.join("\n"))
        .env(
            "PATH",
            format!(
                "{}:{}",
                dir.path().display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = stdout.lines();
    // One word each; the Hydra quoting inside it makes Gym read the value back as text.
    assert_eq!(
        lines.next(),
        Some(r#"<eval><prepare><+msg='a {b} c'><+q="it's">"#)
    );
    assert_eq!(
        lines.next(),
        Some(format!("<eval><run><+output_jsonl_fpath=tmp/jobs/{RUN_ID}/bench_a/artifacts/rollouts.jsonl><+n=1>").as_str())
    );
}

// ref §5.3 / §2.6: a command benchmark keeps driver.env; NEMO_GYM_* win on a clash.
#[test]
fn command_env_merges_over_driver_env() {
    let job = job_json(&[
        "driver.env={A: 'lit:x', NEMO_GYM_BENCH_DIR: 'lit:/elsewhere'}",
        "driver.benchmarks.bench_a.command=./run.sh",
    ]);
    let env = &driver(&job)["env"];
    assert_eq!(env[0], json!({"name": "A", "value": "x"}));
    assert_eq!(
        env[1],
        json!({"name": "NEMO_GYM_BENCH_DIR", "value": format!("tmp/jobs/{RUN_ID}/bench_a")})
    );
    assert_eq!(env.as_array().unwrap().len(), 2);
    // A `run` benchmark gets driver.env only.
    let job = job_json(&["driver.env={A: 'lit:x'}"]);
    assert_eq!(driver(&job)["env"], json!([{"name": "A", "value": "x"}]));
}
