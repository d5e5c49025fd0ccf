//! The config model: defaults, strictness, discriminators, env prefixes (ref §1).

use crate::gym::testutil::{FIXTURE, VLLM, all_messages, env, load, load_err, try_load_from};

use super::{CODE_POLICY, EnvOrigin, GymLoadRequest, HealthCheck, to_node};

#[test]
fn fixture_defaults() {
    let c = load(&[VLLM]).config;
    assert_eq!(c.compute_name, "cluster");
    let k = &c.compute;
    assert_eq!(
        (
            k.namespace.as_str(),
            k.pvc_name.as_str(),
            k.memory_per_gpu.as_str()
        ),
        ("eng-test", "workspace", "32Gi")
    );
    assert_eq!(k.ttl_seconds_after_finished, 86400);
    assert_eq!(
        (
            k.context.clone(),
            k.gpus_per_node,
            k.active_deadline_seconds
        ),
        (None, None, None)
    );
    let d = &c.driver;
    assert_eq!(d.container, "gym:latest");
    assert_eq!(
        (d.policy_host.as_str(), d.policy_model_type.as_str()),
        ("localhost", "openai_model")
    );
    let s = &c.services["vllm_model"];
    assert_eq!(s.port, 8000);
    assert_eq!(s.placement, "cluster");
    assert_eq!(
        s.health_check,
        HealthCheck {
            path: "/health".into(),
            port: 8000,
            timeout_seconds: 60
        }
    );
    assert_eq!(
        (
            s.tensor_parallel_size,
            s.pipeline_parallel_size,
            s.number_of_instances
        ),
        (1, 1, 1)
    );
    assert_eq!(s.data_parallel_rpc_port, 13345);
    assert!(!c.otel.enabled);
}

#[test]
fn namespace_defaults_to_default() {
    let c = load(&["~compute.cluster.namespace"]).config;
    assert_eq!(c.compute.namespace, "default");
}

#[test]
fn health_check_port_follows_port_unless_set() {
    let c = load(&[
        VLLM,
        "services.vllm_model.port=9000",
        "services.vllm_model.health_check={timeout_seconds: 1200}",
    ])
    .config;
    assert_eq!(c.services["vllm_model"].health_check.port, 9000);
    assert_eq!(c.services["vllm_model"].health_check.timeout_seconds, 1200);
    let c = load(&[
        VLLM,
        "services.vllm_model.health_check={port: 9100, path: /ready}",
    ])
    .config;
    assert_eq!(c.services["vllm_model"].health_check.port, 9100);
    assert_eq!(c.services["vllm_model"].health_check.path, "/ready");
}

#[test]
fn unknown_keys_are_errors_with_did_you_mean() {
    let e = load_err(&["driver.benchmark={}"]);
    assert_eq!(e.code, "nrl::config::unknown_key");
    assert!(
        e.message.contains("`benchmark` in `driver`"),
        "{}",
        e.message
    );
    assert!(
        e.help
            .as_deref()
            .unwrap_or("")
            .contains("did you mean `driver.benchmarks={}`")
    );
    let e = load_err(&[VLLM, "services.vllm_model.tensor_paralel_size=2"]);
    assert!(
        e.help
            .as_deref()
            .unwrap_or("")
            .contains("tensor_parallel_size"),
        "{:?}",
        e.help
    );
    let e = load_err(&["compute.cluster.pvcname=x"]);
    assert!(e.help.as_deref().unwrap_or("").contains("pvc_name"));
}

#[test]
fn required_fields() {
    let e = load_err(&["~compute.cluster.pvc_name"]);
    assert_eq!(e.code, "nrl::config::required");
    assert!(
        e.message.contains("compute.cluster.pvc_name"),
        "{}",
        e.message
    );
    let e = load_err(&["~job.output_path"]);
    assert!(e.message.contains("job.output_path"));
    let e = load_err(&["~driver.benchmarks"]);
    assert!(e.message.contains("driver.benchmarks"));
    let e = load_err(&["services.x={type: vllm, container: c}"]);
    assert!(e.message.contains("services.x.model"), "{}", e.message);
}

#[test]
fn errors_are_reported_together() {
    let e = load_err(&[
        "~job.output_path",
        "compute.cluster.ttl_seconds_after_finished=soon",
    ]);
    let all = all_messages(&e);
    assert!(
        all.contains("job.output_path") && all.contains("ttl_seconds_after_finished"),
        "{all}"
    );
}

#[test]
fn lax_ints_and_bools_strict_strings() {
    let c = load(&[
        VLLM,
        "services.vllm_model.tensor_parallel_size='2'",
        "services.vllm_model.trust_remote_code=yes",
    ])
    .config;
    assert_eq!(c.services["vllm_model"].tensor_parallel_size, 2);
    assert!(c.services["vllm_model"].trust_remote_code);
    let e = load_err(&["driver.container=3.12"]);
    assert_eq!(e.code, "nrl::config::type");
}

#[test]
fn ray_services_are_refused_clearly() {
    let e = load_err(&["services.r={type: ray, container: rayproject/ray}"]);
    assert!(e.message.contains("Ray service"), "{}", e.message);
    assert!(e.message.contains("services.r"));
    let e = load_err(&["services.pd={type: vllm_pd, container: c, model: m}"]);
    assert!(e.message.contains("vllm_pd"), "{}", e.message);
    let e = load_err(&["services.x={type: vlm, container: c, model: m}"]);
    assert_eq!(e.code, "nrl::config::enum");
    assert!(e.help.as_deref().unwrap_or("").contains("vllm"));
    let e = load_err(&["services.x={container: c, model: m}"]);
    assert!(e.message.contains("services.x.type"), "{}", e.message);
}

#[test]
fn exactly_one_kubernetes_compute() {
    let e = load_err(&["compute.other={type: kubernetes, pvc_name: p}"]);
    assert!(
        e.message
            .contains("Multiple compute resources are not supported yet (cluster, other)"),
        "{}",
        e.message
    );
    let e = try_load_from(&FIXTURE.replace("type: kubernetes", "type: slurm"), &[]).unwrap_err();
    assert!(e.message.contains("Slurm"), "{}", e.message);
    let e = try_load_from(
        &FIXTURE.replace("compute:\n  cluster:", "compute: {}\n  old:"),
        &[],
    );
    assert!(e.is_err());
}

#[test]
fn kubernetes_only_fields_are_refused() {
    let e = load_err(&[VLLM, "services.vllm_model.node_pool=gpu"]);
    assert!(
        e.message
            .contains("does not match any node pool of compute 'cluster' (none declared)"),
        "{}",
        e.message
    );
    let e = load_err(&["driver.mounts=[/data]"]);
    assert!(e.message.contains("driver.mounts"));
    let e = load_err(&[VLLM, "services.vllm_model.mounts=[/data:/data]"]);
    assert!(e.message.contains("services.vllm_model.mounts"));
    let e = load_err(&[VLLM, "services.vllm_model.pre_command='export X=1'"]);
    assert!(e.message.contains("pre_command"));
    let e = load_err(&["compute.cluster.extra_args={a: b}"]);
    assert!(e.message.contains("extra_args"));
    let e = load_err(&[VLLM, "services.vllm_model.placement=elsewhere"]);
    assert!(
        e.message
            .contains("does not match any compute resource (cluster)"),
        "{}",
        e.message
    );
    load(&[
        VLLM,
        "services.vllm_model.placement=cluster",
        "services.vllm_model.mounts=[]",
    ]);
}

#[test]
fn instances_and_parallelism_must_be_positive() {
    let e = load_err(&[VLLM, "services.vllm_model.number_of_instances=0"]);
    assert!(
        e.message
            .contains("number_of_instances` must be >= 1, got 0"),
        "{}",
        e.message
    );
    load_err(&[VLLM, "services.vllm_model.tensor_parallel_size=-1"]);
}

#[test]
fn memory_per_gpu_is_checked_at_load() {
    let e = load_err(&["compute.cluster.memory_per_gpu=lots"]);
    assert!(
        e.message.contains("not a supported memory quantity"),
        "{}",
        e.message
    );
    assert!(e.labels.first().is_some_and(|l| l.span.text() == "lots"));
    let e = load_err(&["compute.cluster.memory_per_gpu=32Gb"]);
    assert!(e.message.contains("'Gb'"));
    load(&["compute.cluster.memory_per_gpu=1.5Gi"]);
}

// ref §1.4
#[test]
fn command_rules() {
    let e = load_err(&["driver.benchmarks.bench_a={command: ./x.sh, run: {a: 1}}"]);
    assert!(
        e.message.contains("sets both `command` and `run`"),
        "{}",
        e.message
    );
    let e = load_err(&["driver.benchmarks.bench_a={command: ./x.sh, resumable: true}"]);
    assert!(
        e.message.contains("sets both `command` and `resumable`"),
        "{}",
        e.message
    );
    let e = load_err(&["driver.benchmarks.bench_a.resumable={max_retries: 2}"]);
    assert!(
        e.message.contains("does not support resumable runs"),
        "{}",
        e.message
    );
    load(&["driver.benchmarks.bench_a.resumable=false"]);
}

// ref §1.8
#[test]
fn env_values_need_a_prefix() {
    let e = load_err(&["driver.env={A: bare}"]);
    assert!(
        e.message.contains("must start with one of the prefixes"),
        "{}",
        e.message
    );
    assert!(e.help.as_deref().unwrap_or("").contains("lit:bare"));
    let e = load_err(&["driver.env={A: 'host:NOT_SET_ANYWHERE'}"]);
    assert_eq!(e.code, "nrl::gym::host_env_unset");
    let e = load_err(&["driver.env={A: 'runtime:HOME'}"]);
    assert!(
        e.message.contains("not supported on Kubernetes"),
        "{}",
        e.message
    );
    let e = load_err(&["driver.env={A: 'host:1BAD'}"]);
    assert!(e.message.contains("not a valid environment variable name"));
    let c = load(&["driver.env={A: 'lit:', B: 'lit:x:y', C: 'host:MY_USER', D: 'host:HF_TOKEN', E_TOKEN: 'host:MY_USER', F: 'secret:MY_USER'}"]).config;
    let env = &c.driver.env;
    assert_eq!(env["A"].value, "");
    assert_eq!(env["B"].value, "x:y");
    assert_eq!(
        env["C"].origin,
        EnvOrigin::Host {
            var: "MY_USER".into(),
            secret: false
        }
    );
    assert_eq!(
        env["D"].origin,
        EnvOrigin::Host {
            var: "HF_TOKEN".into(),
            secret: true
        }
    );
    assert_eq!(env["E_TOKEN"].secret_var(), Some("MY_USER"));
    assert_eq!(env["F"].secret_var(), Some("MY_USER"));
    assert_eq!(env["C"].written, "host:MY_USER");
}

#[test]
fn policy_keys_are_injected() {
    let c = load(&[
        VLLM,
        "services.vllm_model.served_model_name=served",
        "driver.policy_model=vllm_model",
        "driver.policy_host=10.0.0.1",
    ])
    .config;
    let run = &c.driver.benchmarks["bench_a"].run;
    assert_eq!(
        run.get("policy_base_url").and_then(|n| n.as_str()),
        Some("http://10.0.0.1:8000/v1")
    );
    assert_eq!(
        run.get("policy_model_name").and_then(|n| n.as_str()),
        Some("served")
    );
    assert_eq!(
        run.get("policy_api_key").and_then(|n| n.as_str()),
        Some("dummy")
    );
}

#[test]
fn policy_model_errors() {
    let e = load_err(&[VLLM, "driver.policy_model=vllm_modle"]);
    assert_eq!(e.code, CODE_POLICY);
    assert!(e.help.as_deref().unwrap_or("").contains("vllm_model"));
    let e = load_err(&[
        VLLM,
        "driver.policy_model=vllm_model",
        "driver.benchmarks.bench_a.run={policy_api_key: k}",
    ]);
    assert!(
        e.message.contains("already sets policy_api_key"),
        "{}",
        e.message
    );
    assert!(e.message.contains("Remove one."));
}

#[test]
fn interpolation_and_defaults_chain() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("base.yaml"), FIXTURE).unwrap();
    std::fs::write(
        dir.path().join("run.yaml"),
        "defaults: base.yaml\nns: evals\ncompute:\n  cluster:\n    namespace: ${ns}\n",
    )
    .unwrap();
    let env: std::sync::Arc<dyn crate::config::env::Env> = std::sync::Arc::new(env());
    let mut req = GymLoadRequest::new(dir.path().join("run.yaml"), env);
    let e = super::load(&req).unwrap_err();
    // `ns` is a scratch key the model does not know.
    assert!(e.message.contains("unknown key `ns`"), "{}", e.message);
    std::fs::write(
        dir.path().join("run.yaml"),
        "defaults: base.yaml\ncompute:\n  cluster:\n    namespace: ${oc.env:MY_USER}\n",
    )
    .unwrap();
    req.overrides = vec!["driver.benchmarks.extra={}".into()];
    let l = super::load(&req).unwrap();
    assert_eq!(l.config.compute.namespace, "alice");
    assert_eq!(l.files.len(), 2);
    assert_eq!(l.config.driver.benchmarks.len(), 2);
}

#[test]
fn add_override_keeps_hydra_meaning() {
    let e = load_err(&["+driver.container=x"]);
    assert_eq!(e.code, "nrl::override::exists");
    load(&["+driver.benchmarks.bench_a.run.k=1"]);
}

#[test]
fn dump_is_in_model_order_with_host_refs() {
    let c = load(&[
        VLLM,
        "services.vllm_model.env={HF_TOKEN: 'host:HF_TOKEN'}",
        "driver.benchmarks.b2={}",
    ])
    .config;
    let d = to_node(&c, Some("b2")).to_json();
    let keys: Vec<&String> = d.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["services", "compute", "driver", "job", "otel"]);
    let svc: Vec<&String> = d["services"]["vllm_model"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        svc[..4],
        ["container", "placement", "node_pool", "health_check"]
    );
    assert_eq!(
        d["services"]["vllm_model"]["env"]["HF_TOKEN"],
        "host:HF_TOKEN"
    );
    assert_eq!(d["services"]["vllm_model"]["health_check"]["port"], 8000);
    let benches: Vec<&String> = d["driver"]["benchmarks"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(benches, ["b2"]);
    let all = to_node(&c, None).to_json();
    assert_eq!(all["driver"]["benchmarks"].as_object().unwrap().len(), 2);
}

/// Issue 15 item 7: a secret read by interpolation would land in clear in the Job's
/// command line (or script, or env) and in the resolved config on the PVC.
#[test]
fn secrets_read_by_interpolation_are_refused_where_they_are_written() {
    let text = FIXTURE.replace(
        "    bench_a: {}\n",
        "    bench_a:\n      run:\n        hf_token: ${oc.env:HF_TOKEN}\n",
    );
    assert_ne!(text, FIXTURE);
    let e = match try_load_from(&text, &[]) {
        Ok(_) => panic!("a secret in run: must be refused"),
        Err(e) => e,
    };
    assert_eq!(e.code, super::CODE_SECRET_INTERPOLATION);
    insta::assert_snapshot!(e.render(false, 100));

    // Everywhere a resolved value goes: prepare:, command:, a lit: env value, embedded in
    // a longer string, with a default.
    for ov in [
        "driver.benchmarks.bench_a.prepare.token='${oc.env:HF_TOKEN}'",
        "driver.benchmarks.bench_a.command='curl -H \"Bearer ${oc.env:OPENAI_API_KEY,none}\"'",
        "driver.env={AUTH: 'lit:${oc.env:DB_PASSWORD}'}",
    ] {
        let e = load_err(&[ov]);
        assert_eq!(
            e.code,
            super::CODE_SECRET_INTERPOLATION,
            "{ov}: {}",
            e.message
        );
    }
    // A variable the config itself delivers as a secret is one too, whatever its name.
    let e = load_err(&[
        "driver.env={CREDS: 'secret:MY_USER'}",
        "driver.benchmarks.bench_a.run.who='${oc.env:MY_USER}'",
    ]);
    assert_eq!(e.code, super::CODE_SECRET_INTERPOLATION, "{}", e.message);
    assert!(
        e.message.contains("delivers it as a secret"),
        "{}",
        e.message
    );

    // The forms the help shows load, and the value stays out of the spec.
    let l = load(&[
        "driver.env={HF_TOKEN: 'secret:HF_TOKEN'}",
        "driver.benchmarks.bench_a.run.user='${oc.env:MY_USER}'",
    ]);
    assert_eq!(
        l.config.driver.env["HF_TOKEN"].secret_var(),
        Some("HF_TOKEN")
    );
}

/// Issue 19 point 6: an unset secret renders as a placeholder (it only reaches the run's
/// Secret) and is named for the submit to refuse; an unset value bound for the Job spec
/// is still an error.
#[test]
fn unset_secrets_are_placeholders_that_a_submit_refuses() {
    let c = load(&[
        "driver.env={A: 'secret:NOT_SET_ANYWHERE', B_TOKEN: 'host:NOT_SET_ANYWHERE', C: 'host:OTHER_UNSET_TOKEN', D: 'host:HF_TOKEN'}",
    ])
    .config;
    let env = &c.driver.env;
    assert_eq!(env["A"].value, "<NOT_SET_ANYWHERE: set at submit>");
    assert_eq!(env["A"].unset_at.as_deref(), Some("driver.env.A"));
    assert_eq!(env["D"].unset_at, None);
    assert_eq!(
        c.placeholder_vars(),
        ["NOT_SET_ANYWHERE", "OTHER_UNSET_TOKEN"]
    );
    let e = c.require_secret_values().unwrap_err();
    assert_eq!(e.code, "nrl::gym::host_env_unset");
    assert!(
        e.message
            .contains("`driver.env.A` references secret:NOT_SET_ANYWHERE"),
        "{}",
        e.message
    );
    assert_eq!(all_messages(&e).lines().count(), 3, "{}", all_messages(&e));
    let e = load_err(&["driver.env={PLAIN: 'host:NOT_SET_ANYWHERE'}"]);
    assert_eq!(e.code, "nrl::gym::host_env_unset");
}

/// The defaults the schema advertises (`nrl schema gym`, from the `shape!` tables) are the
/// ones the readers apply: a config that sets only what is required, dumped, holds each
/// advertised default wherever the dump shows the key.
#[test]
fn schema_defaults_are_the_loaders_defaults() {
    let minimal = "\
services:
  policy: {type: vllm, container: vllm/vllm-openai:v0.9.0, model: org/model}
compute:
  cluster: {type: kubernetes, pvc_name: results}
driver:
  gym_install: {ref: v0.3.0}
  benchmarks:
    bench_a: {}
job:
  output_path: /out
otel: {enabled: false}
";
    let loaded = try_load_from(minimal, &[]).unwrap_or_else(|e| panic!("{}", e.render(false, 100)));
    let dump = to_node(&loaded.config, None).to_json();
    let schema = super::gym_json_schema();
    let defs = &schema["$defs"];
    let places = [
        ("SubmitConfig", dump.clone()),
        ("Driver", dump["driver"].clone()),
        ("GymInstall", dump["driver"]["gym_install"].clone()),
        ("Benchmark", dump["driver"]["benchmarks"]["bench_a"].clone()),
        ("Otel", dump["otel"].clone()),
        ("VllmService", dump["services"]["policy"].clone()),
        (
            "HealthCheck",
            dump["services"]["policy"]["health_check"].clone(),
        ),
        ("KubernetesCompute", dump["compute"]["cluster"].clone()),
    ];
    let mut compared = 0;
    for (def, at) in places {
        let props = defs[def]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no definition {def}"));
        for (key, prop) in props {
            let (Some(default), Some(value)) = (prop.get("default"), at.get(key)) else {
                continue;
            };
            // An `or({})` section default means "every field at its default".
            if default == &serde_json::json!({}) && value.is_object() && def == "SubmitConfig" {
                continue;
            }
            assert_eq!(
                value, default,
                "{def}.{key}: the loader's default differs from the schema's"
            );
            compared += 1;
        }
    }
    assert!(
        compared >= 30,
        "only {compared} defaults compared: is the dump's shape still the same?"
    );
}
