//! One benchmark's `batch/v1` Job (ref-nemo-gym-k8s §2.3-§2.5) and the run's Secret, as
//! spanned [`Node`] trees: values copied from the config keep the span of the line that
//! set them, so a schema problem in a rendered Job points back into the Gym config.
//!
//! Differences from the reference, all from §7: secret `host:` values are
//! `secretKeyRef`s into the run's Secret (#1), names are cut with a hash (#7), memory is
//! scaled exactly (#16). Everything else renders as the reference does.

use base64::Engine;

use crate::config::node::Node;
use crate::config::source::Span;
use crate::diag::{Diag, Result};
use crate::render::meta::map_of;

use super::config::{EnvMap, EnvOrigin, SubmitConfig, VllmService};
use super::names::{
    BENCHMARK_LABEL, MANAGED_BY, MANAGED_BY_KEY, RUN_LABEL, dns_label, label_value, secret_name,
};
use super::quantity::scale_quantity;

pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
pub const OUTPUT_VOLUME: &str = "gym-output";
pub const SHM_VOLUME: &str = "dshm";
pub const SHM_SIZE: &str = "4Gi";
pub const DRIVER_MEMORY: &str = "2Gi";
pub const DRIVER_CONTAINER: &str = "driver";
pub const PROBE_PERIOD_SECONDS: i64 = 5;
pub const READINESS_FAILURE_THRESHOLD: i64 = 3;

fn s(v: &str) -> Node {
    Node::str(v)
}

fn spanned(v: &str, span: Option<Span>) -> Node {
    Node::str(v).with_span(span)
}

/// The labels on a run's objects: managed-by, run, and (for Jobs and pods) benchmark.
pub fn labels(run_id: &str, benchmark: Option<&str>) -> Node {
    let mut pairs = vec![
        (MANAGED_BY_KEY, s(MANAGED_BY)),
        (RUN_LABEL, Node::str(dns_label(run_id))),
    ];
    if let Some(b) = benchmark {
        pairs.push((BENCHMARK_LABEL, Node::str(label_value(b))));
    }
    map_of(pairs)
}

/// Container env entries; a secret value becomes a `secretKeyRef` into the run's Secret.
fn env_list(env: &EnvMap, secret: &str) -> Node {
    Node::list(
        env.iter()
            .map(|(k, v)| match &v.origin {
                EnvOrigin::Host { var, secret: true } => map_of(vec![
                    ("name", s(k)),
                    (
                        "valueFrom",
                        map_of(vec![(
                            "secretKeyRef",
                            map_of(vec![("name", s(secret)), ("key", spanned(var, v.span))]),
                        )]),
                    ),
                ]),
                _ => map_of(vec![("name", s(k)), ("value", spanned(&v.value, v.span))]),
            })
            .collect(),
    )
}

fn http_probe(svc: &VllmService, failure_threshold: i64) -> Node {
    map_of(vec![
        (
            "httpGet",
            map_of(vec![
                ("path", s(&svc.health_check.path)),
                ("port", Node::int(svc.health_check.port)),
            ]),
        ),
        ("periodSeconds", Node::int(PROBE_PERIOD_SECONDS)),
        ("failureThreshold", Node::int(failure_threshold)),
    ])
}

/// `vllm serve <model> --port <port> …` (§2.4), ending with the split `extra_args`.
pub fn vllm_command(svc: &VllmService) -> Vec<String> {
    let mut argv: Vec<String> = vec![
        "vllm".into(),
        "serve".into(),
        svc.model.clone(),
        "--port".into(),
        svc.port.to_string(),
    ];
    if let Some(n) = &svc.served_model_name {
        argv.extend(["--served-model-name".into(), n.clone()]);
    }
    for (flag, n) in [
        ("--tensor-parallel-size", svc.tensor_parallel_size),
        ("--pipeline-parallel-size", svc.pipeline_parallel_size),
        ("--data-parallel-size", svc.number_of_instances),
    ] {
        if n > 1 {
            argv.extend([flag.to_string(), n.to_string()]);
        }
    }
    if svc.trust_remote_code {
        argv.push("--trust-remote-code".into());
    }
    argv.extend(svc.extra_argv.iter().cloned());
    argv
}

/// One native sidecar (an init container with `restartPolicy: Always`) per service.
pub fn sidecar(cfg: &SubmitConfig, name: &str, svc: &VllmService, secret: &str) -> Result<Node> {
    let at = |field: &str| cfg.span_of(&["services", name, field]);
    let gpus = svc.gpus();
    let mut c = vec![
        (
            "name",
            spanned(
                &dns_label(name),
                cfg.node_at(&["services", name]).and_then(|n| n.key_span),
            ),
        ),
        ("image", spanned(&svc.container, at("container"))),
        ("restartPolicy", s("Always")),
        (
            "command",
            Node::list(vllm_command(svc).into_iter().map(Node::str).collect()),
        ),
        (
            "ports",
            Node::list(vec![map_of(vec![(
                "containerPort",
                Node::int(svc.port).with_span(at("port")),
            )])]),
        ),
    ];
    if gpus > 0 {
        let memory =
            scale_quantity(&cfg.compute.memory_per_gpu, gpus.unsigned_abs()).map_err(|e| {
                Diag::new(
                    "nrl::gym::quantity",
                    format!("compute.{}.memory_per_gpu: {e}", cfg.compute_name),
                )
                .label(
                    cfg.span_of(&["compute", &cfg.compute_name, "memory_per_gpu"]),
                    "memory per GPU",
                )
            })?;
        c.push((
            "resources",
            map_of(vec![
                ("limits", map_of(vec![(GPU_RESOURCE, Node::int(gpus))])),
                ("requests", map_of(vec![("memory", Node::str(memory))])),
            ]),
        ));
        c.push((
            "volumeMounts",
            Node::list(vec![map_of(vec![
                ("name", s(SHM_VOLUME)),
                ("mountPath", s("/dev/shm")),
            ])]),
        ));
    } else {
        c.push(("resources", Node::map()));
    }
    if !svc.env.is_empty() {
        c.push(("env", env_list(&svc.env, secret)));
    }
    let startup_failures = (svc.health_check.timeout_seconds / PROBE_PERIOD_SECONDS).max(1);
    c.push(("startupProbe", http_probe(svc, startup_failures)));
    c.push((
        "readinessProbe",
        http_probe(svc, READINESS_FAILURE_THRESHOLD),
    ));
    Ok(map_of(c))
}

/// The driver container: runs `script`, mounts the output PVC at `job.output_path`.
pub fn driver_container(cfg: &SubmitConfig, script: String, env: &EnvMap, secret: &str) -> Node {
    let mut c = vec![
        ("name", s(DRIVER_CONTAINER)),
        (
            "image",
            spanned(&cfg.driver.container, cfg.span_of(&["driver", "container"])),
        ),
        (
            "command",
            Node::list(vec![s("bash"), s("-c"), Node::str(script)]),
        ),
        (
            "volumeMounts",
            Node::list(vec![map_of(vec![
                ("name", s(OUTPUT_VOLUME)),
                (
                    "mountPath",
                    spanned(&cfg.job.output_path, cfg.span_of(&["job", "output_path"])),
                ),
            ])]),
        ),
        (
            "resources",
            map_of(vec![(
                "requests",
                map_of(vec![("memory", s(DRIVER_MEMORY))]),
            )]),
        ),
    ];
    if !env.is_empty() {
        c.push(("env", env_list(env, secret)));
    }
    map_of(c)
}

/// The whole Job for one benchmark.
pub fn job(
    cfg: &SubmitConfig,
    run_id: &str,
    benchmark: &str,
    name: &str,
    driver: Node,
) -> Result<Node> {
    let k8s = &cfg.compute;
    let cpath = |f: &str| cfg.span_of(&["compute", &cfg.compute_name, f]);
    let secret = secret_name(run_id);
    let sidecars = cfg
        .services
        .iter()
        .map(|(n, svc)| sidecar(cfg, n, svc, &secret))
        .collect::<Result<Vec<_>>>()?;
    let mut pod = vec![
        ("restartPolicy", s("Never")),
        ("initContainers", Node::list(sidecars)),
        ("containers", Node::list(vec![driver])),
        (
            "volumes",
            Node::list(vec![
                map_of(vec![
                    ("name", s(SHM_VOLUME)),
                    (
                        "emptyDir",
                        map_of(vec![("medium", s("Memory")), ("sizeLimit", s(SHM_SIZE))]),
                    ),
                ]),
                map_of(vec![
                    ("name", s(OUTPUT_VOLUME)),
                    (
                        "persistentVolumeClaim",
                        map_of(vec![(
                            "claimName",
                            spanned(&k8s.pvc_name, cpath("pvc_name")),
                        )]),
                    ),
                ]),
            ]),
        ),
    ];
    if !k8s.node_selector.is_empty() {
        let src = cfg.node_at(&["compute", &cfg.compute_name, "node_selector"]);
        pod.push((
            "nodeSelector",
            Node::from_map(
                k8s.node_selector
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            spanned(v, src.and_then(|n| n.get(k)).and_then(|n| n.span)),
                        )
                    })
                    .collect(),
            ),
        ));
    }
    if let Some(sa) = &k8s.service_account {
        pod.push(("serviceAccountName", spanned(sa, cpath("service_account"))));
    }
    let mut spec = vec![
        ("backoffLimit", Node::int(0)),
        (
            "ttlSecondsAfterFinished",
            Node::int(k8s.ttl_seconds_after_finished)
                .with_span(cpath("ttl_seconds_after_finished")),
        ),
        (
            "template",
            map_of(vec![
                (
                    "metadata",
                    map_of(vec![("labels", labels(run_id, Some(benchmark)))]),
                ),
                ("spec", map_of(pod)),
            ]),
        ),
    ];
    if let Some(d) = k8s.active_deadline_seconds {
        spec.push((
            "activeDeadlineSeconds",
            Node::int(d).with_span(cpath("active_deadline_seconds")),
        ));
    }
    Ok(map_of(vec![
        ("apiVersion", s("batch/v1")),
        ("kind", s("Job")),
        (
            "metadata",
            map_of(vec![
                ("name", Node::str(name)),
                ("namespace", spanned(&k8s.namespace, cpath("namespace"))),
                ("labels", labels(run_id, Some(benchmark))),
            ]),
        ),
        ("spec", map_of(spec)),
    ]))
}

/// The run's Secret: one key per host variable whose value is a secret. `None` when the
/// config has no secret values.
pub fn secret(cfg: &SubmitConfig, run_id: &str) -> Option<Node> {
    let mut data = crate::config::node::Map::new();
    let envs = cfg
        .services
        .values()
        .map(|s| &s.env)
        .chain([&cfg.driver.env]);
    for env in envs {
        for v in env.values() {
            if let Some(var) = v.secret_var() {
                let b64 = base64::engine::general_purpose::STANDARD.encode(v.value.as_bytes());
                data.insert(var.to_string(), Node::str(b64));
            }
        }
    }
    if data.is_empty() {
        return None;
    }
    Some(map_of(vec![
        ("apiVersion", s("v1")),
        ("kind", s("Secret")),
        (
            "metadata",
            map_of(vec![
                ("name", Node::str(secret_name(run_id))),
                ("namespace", Node::str(cfg.compute.namespace.clone())),
                ("labels", labels(run_id, None)),
            ]),
        ),
        ("type", s("Opaque")),
        ("data", Node::from_map(data)),
    ]))
}
