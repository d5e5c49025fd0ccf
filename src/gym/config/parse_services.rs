//! `services` and `compute` (ref-nemo-gym-k8s §1.5-§1.6): both are discriminated on
//! `type`. Kubernetes runs `vllm` services and `kubernetes` compute; the other types are
//! recognised and refused with a message that says why.

use indexmap::IndexMap;

use crate::config::env::Env;
use crate::config::node::{KeyKind, Node, Value};
use crate::config::typed::check::*;
use crate::config::typed::convert::*;
use crate::config::typed::json_schema::{self as js, SchemaCx};
use crate::config::typed::shape::shape;
use crate::diag::Diag;

use super::env::env_map;
use super::model::*;
use super::parse::{broken, no_mounts, positive_int};
use crate::gym::quantity::Quantity;
use crate::gym::script::shlex_split;

shape! {
    /// A vLLM server, run as a sidecar of every benchmark's pod.
    const VLLM: "VllmService", fn vllm_schema(cx) {
        /// The service type; Kubernetes runs `vllm` services only.
        "type" req: js::constant("vllm");
        /// The sidecar's image.
        "container" req: js::nonblank_string();
        /// Filled with the compute entry's name; no effect on Kubernetes.
        "placement" opt: js::string();
        /// Kubernetes declares no node pools: must stay unset.
        "node_pool" opt: js::null();
        /// Replaces the default probe (`/health` on `port`, 60 s).
        "health_check" opt: health_check_schema(cx);
        /// The sidecar's environment: `lit:VALUE`, `host:VAR` or `secret:VAR`.
        "env" or({}): js::env_map();
        /// Pyxis bind mounts: not supported on Kubernetes (must stay empty).
        "mounts" or([]): js::empty_list();
        /// Ignored on Kubernetes (Slurm runs it before the service).
        "pre_command" or(""): js::string();
        /// The model `vllm serve` loads (its first argument).
        "model" req: js::nonblank_string();
        /// `--port`, the container port and the probe's port.
        "port" or(8000): js::port();
        /// `--served-model-name`; also the injected `policy_model_name`.
        "served_model_name" opt: js::string();
        "tensor_parallel_size" or(1): js::integer_from(1);
        "pipeline_parallel_size" or(1): js::integer_from(1);
        "trust_remote_code" or(false): js::boolean();
        /// `--data-parallel-size`; every replica runs in the same pod.
        "number_of_instances" or(1): js::integer_from(1);
        /// Ray Serve is not supported on Kubernetes: must stay false.
        "use_ray_serve" or(false): js::constant_false();
        /// More `vllm serve` flags, split shell-style.
        "extra_args" or(""): js::string();
        /// Unused on Kubernetes.
        "data_parallel_rpc_port" or(13345): js::port();
    }
    sections [("health_check", HEALTH_CHECK)]
}

shape! {
    /// The sidecar's startup probe.
    const HEALTH_CHECK: "HealthCheck", fn health_check_schema(cx) {
        "path" or("/health"): js::string();
        /// Defaults to the service's `port`.
        "port" opt: js::port();
        /// The startup budget: a model load takes minutes.
        "timeout_seconds" or(60): js::integer();
    }
}

shape! {
    /// Where the benchmark Jobs run.
    const KUBERNETES: "KubernetesCompute", fn kubernetes_schema(cx) {
        "type" req: js::constant("kubernetes");
        /// The kube context; absent means the kubeconfig's current context.
        "context" opt: js::string();
        "namespace" or("default"): js::string();
        /// Checked against the GPUs all sidecars ask for.
        "gpus_per_node" opt: js::integer_from(1);
        /// The pods' `nodeSelector`.
        "node_selector" or({}): js::string_map();
        /// The pods' `serviceAccountName`.
        "service_account" opt: js::string();
        /// The output PersistentVolumeClaim (it must exist; ReadWriteMany when benchmarks
        /// run at once).
        "pvc_name" req: js::nonblank_string();
        /// Each sidecar requests this times its GPUs (a Kubernetes quantity).
        "memory_per_gpu" or("32Gi"): js::string();
        /// Not used on Kubernetes: must stay empty.
        "extra_args" or({}): js::empty_map();
        /// `ttlSecondsAfterFinished` of each Job.
        "ttl_seconds_after_finished" or(86400): js::integer_from(0);
        /// `activeDeadlineSeconds` of each Job.
        "active_deadline_seconds" opt: js::integer_from(1);
    }
}

/// `services`: name -> a vLLM service.
pub(super) fn services_schema(cx: &mut SchemaCx) -> serde_json::Value {
    js::map_of(vllm_schema(cx))
}

/// `compute`: exactly one named `type: kubernetes` entry.
pub(super) fn compute_schema(cx: &mut SchemaCx) -> serde_json::Value {
    let entry = kubernetes_schema(cx);
    serde_json::json!({
        "type": "object",
        "minProperties": 1,
        "maxProperties": 1,
        "additionalProperties": entry,
    })
}

const SERVICE_TYPES: &[&str] = &["vllm", "ray", "vllm_pd"];
const COMPUTE_TYPES: &[&str] = &["kubernetes", "slurm"];

/// The `type` of a discriminated entry, or a reported error.
fn discriminator<'n>(cx: &mut Cx, node: &'n Node, path: &Path, types: &[&str]) -> Option<&'n str> {
    let Some(map) = node.as_map() else {
        cx.report(wrong_type(
            node,
            path,
            "a mapping",
            format!("`{path}` needs `type: {}` and its fields", types[0]),
        ));
        return None;
    };
    let Some(t) = map.get("type") else {
        cx.report(
            Diag::new(REQUIRED, format!("`{path}.type` is required"))
                .label(node.key_span.or(node.span), "no `type`")
                .help(format!(
                    "add `type: {}` (one of: {})",
                    types[0],
                    types.join(", ")
                )),
        );
        return None;
    };
    match t.as_str() {
        Some(s) if types.contains(&s) => Some(s),
        _ => {
            let help = match t.as_str().and_then(|s| suggest(s, types)) {
                Some(s) => format!("did you mean `type: {s}`?"),
                None => format!("use one of: {}", types.join(", ")),
            };
            cx.report(
                Diag::new(
                    ENUM,
                    format!(
                        "`{path}.type` must be one of {}, got `{}`",
                        types.join(", "),
                        shown(t)
                    ),
                )
                .label(t.best_span(), "unknown type")
                .help(help),
            );
            None
        }
    }
}

/// `services`: name -> vLLM service; `placement` defaults to the compute entry's name.
pub(super) fn services<'e>(
    env: &'e dyn Env,
    compute_name: Option<&'e str>,
) -> impl Fn(&mut Cx, &Node, &Path) -> Option<IndexMap<String, VllmService>> + 'e {
    move |cx, node, path| {
        map_of(|cx: &mut Cx, n: &Node, p: &Path| {
            match discriminator(cx, n, p, SERVICE_TYPES)? {
            "vllm" => vllm(cx, env, compute_name, n, p),
            "ray" => broken(
                cx,
                n.get("type").unwrap_or(n),
                format!("`{p}` is a Ray service, which the Kubernetes executor cannot run"),
                "type: ray",
                "a benchmark Job runs one pod (vLLM sidecars plus the driver); start Ray inside the driver's command, or submit this config to Slurm with `gym eval submit`".into(),
            ),
            _ => broken(
                cx,
                n.get("type").unwrap_or(n),
                format!("`{p}` is a prefill/decode (`vllm_pd`) service, which needs node pools; Kubernetes compute declares none"),
                "type: vllm_pd",
                "use a `type: vllm` service on Kubernetes, or submit this config to Slurm with `gym eval submit`".into(),
            ),
        }
        })(cx, node, path)
    }
}

fn health_check(cx: &mut Cx, node: &Node, path: &Path) -> Option<(String, Option<i64>, i64)> {
    let mut o = Obj::open(cx, node, path, &HEALTH_CHECK)?;
    let v = (
        o.or(cx, "path", strict_str, "/health".into()),
        o.opt(cx, "port", port),
        o.or(cx, "timeout_seconds", lax_int, 60),
    );
    o.finish(v)
}

/// A TCP port (1-65535).
fn port(cx: &mut Cx, node: &Node, path: &Path) -> Option<i64> {
    let v = lax_int(cx, node, path)?;
    if !(1..=65535).contains(&v) {
        return broken(
            cx,
            node,
            format!("`{path}` must be a port number (1-65535), got {v}"),
            "not a port",
            "write a port number, e.g. `port: 8000`".into(),
        );
    }
    Some(v)
}

fn vllm(
    cx: &mut Cx,
    env: &dyn Env,
    compute_name: Option<&str>,
    node: &Node,
    path: &Path,
) -> Option<VllmService> {
    let mut o = Obj::open(cx, node, path, &VLLM)?;
    let container = o.req(
        cx,
        "container",
        nonblank_str("set `container:` to the vLLM image, e.g. `vllm/vllm-openai:v0.9.0`"),
    );
    let placement = o.opt(cx, "placement", strict_str);
    let node_pool = o.opt(cx, "node_pool", strict_str);
    let hc = o.opt(cx, "health_check", health_check);
    let env = o.or(cx, "env", env_map(env), EnvMap::new());
    let mounts = o.or(cx, "mounts", str_list, Vec::new());
    let pre_command = o.or(cx, "pre_command", strict_str, String::new());
    let model = o.req(
        cx,
        "model",
        nonblank_str("set `model:` to the model vLLM serves, e.g. `Qwen/Qwen2.5-7B-Instruct`"),
    );
    let port_v = o.or(cx, "port", port, 8000);
    let served_model_name = o.opt(cx, "served_model_name", strict_str);
    let tp = o.or(cx, "tensor_parallel_size", positive_int, 1);
    let pp = o.or(cx, "pipeline_parallel_size", positive_int, 1);
    let trust_remote_code = o.or(cx, "trust_remote_code", lax_bool, false);
    let instances = o.or(cx, "number_of_instances", positive_int, 1);
    let use_ray_serve = o.or(cx, "use_ray_serve", lax_bool, false);
    let extra_args = o.or(cx, "extra_args", strict_str, String::new());
    let dp_rpc = o.or(cx, "data_parallel_rpc_port", port, 13345);
    let (hc_path, hc_port, hc_timeout) = hc.unwrap_or(("/health".into(), None, 60));
    let v = VllmService {
        container: container.unwrap_or_default(),
        placement: String::new(),
        health_check: HealthCheck {
            path: hc_path,
            port: hc_port.unwrap_or(port_v),
            timeout_seconds: hc_timeout,
        },
        env,
        model: model.unwrap_or_default(),
        port: port_v,
        served_model_name,
        tensor_parallel_size: tp,
        pipeline_parallel_size: pp,
        trust_remote_code,
        number_of_instances: instances,
        extra_argv: Vec::new(),
        extra_args,
        data_parallel_rpc_port: dp_rpc,
    };
    let mut v = o.finish(v)?;
    let at = |k: &str| node.get(k).unwrap_or(node);
    match shlex_split(&v.extra_args) {
        Ok(words) => v.extra_argv = words,
        Err(why) => {
            return broken(
                cx,
                at("extra_args"),
                format!("`{path}.extra_args` cannot be split into words: {why}"),
                "unbalanced quoting",
                "close the quote, or escape it with a backslash".into(),
            );
        }
    }
    let compute = compute_name.unwrap_or("?");
    if let Some(pool) = node_pool {
        return broken(
            cx,
            at("node_pool"),
            format!("`{path}.node_pool` '{pool}' does not match any node pool of compute '{compute}' (none declared)"),
            "no node pools on Kubernetes",
            "remove `node_pool:`; a Kubernetes benchmark Job is one pod, and every service runs in it as a sidecar".into(),
        );
    }
    if use_ray_serve {
        return broken(
            cx,
            at("use_ray_serve"),
            format!("`{path}.use_ray_serve` is not supported on Kubernetes"),
            "Ray Serve",
            "remove `use_ray_serve:`; replicas (`number_of_instances`) run as vLLM data parallelism in the pod".into(),
        );
    }
    if !mounts.is_empty() {
        return no_mounts(cx, node, path);
    }
    if !pre_command.trim().is_empty() {
        return broken(
            cx,
            at("pre_command"),
            format!("`{path}.pre_command` is not supported on Kubernetes"),
            "would never run",
            "the sidecar runs `vllm serve` directly (no shell); set variables with `env:` or bake the fix into the image".into(),
        );
    }
    match (placement, compute_name) {
        (Some(p), Some(c)) if p != c => {
            return broken(
                cx,
                at("placement"),
                format!("`{path}.placement` '{p}' does not match any compute resource ({c})"),
                "unknown compute",
                format!("write `placement: {c}`, or remove the line"),
            );
        }
        (p, c) => v.placement = p.or(c.map(str::to_string)).unwrap_or_default(),
    }
    Some(v)
}

/// `compute`: exactly one `kubernetes` entry; returns its name and config.
pub(super) fn compute(
    cx: &mut Cx,
    node: &Node,
    path: &Path,
) -> Option<(String, KubernetesCompute)> {
    let Value::Map(m) = &node.value else {
        cx.report(wrong_type(
            node,
            path,
            "a mapping",
            "write one entry: `compute: {cluster: {type: kubernetes, ...}}`".into(),
        ));
        return None;
    };
    if m.len() != 1 {
        let names: Vec<&str> = m.keys().map(String::as_str).collect();
        let message = if m.is_empty() {
            "`compute` has no entry; it needs exactly one".to_string()
        } else {
            format!(
                "Multiple compute resources are not supported yet ({})",
                names.join(", ")
            )
        };
        return broken(
            cx,
            node,
            message,
            "exactly one entry",
            "keep one `type: kubernetes` entry under `compute:`".into(),
        );
    }
    let (name, entry) = m.first()?;
    if entry.key_kind != KeyKind::Str {
        return broken(
            cx,
            entry,
            format!("the compute name `{name}` must be a string"),
            "not a string key",
            format!("quote it: `\"{name}\":`"),
        );
    }
    let here = path.key(name);
    match discriminator(cx, entry, &here, COMPUTE_TYPES)? {
        "kubernetes" => kubernetes(cx, entry, &here).map(|k| (name.clone(), k)),
        _ => broken(
            cx,
            entry.get("type").unwrap_or(entry),
            format!("`{here}` is a Slurm compute entry; `nrl gym` submits benchmarks to Kubernetes"),
            "type: slurm",
            "describe the cluster as `type: kubernetes` (namespace, pvc_name, ...), or submit this config with `gym eval submit`".into(),
        ),
    }
}

fn memory_quantity(cx: &mut Cx, node: &Node, path: &Path) -> Option<String> {
    let s = strict_str(cx, node, path)?;
    match Quantity::parse(&s) {
        Ok(_) => Some(s),
        Err(e) => broken(
            cx,
            node,
            format!("`{path}`: {e}"),
            "not a memory quantity",
            "write a Kubernetes quantity such as `32Gi` or `40G`".into(),
        ),
    }
}

fn non_negative(cx: &mut Cx, node: &Node, path: &Path) -> Option<i64> {
    let v = lax_int(cx, node, path)?;
    if v < 0 {
        return broken(
            cx,
            node,
            format!("`{path}` must be >= 0, got {v}"),
            "negative",
            "write a number of seconds".into(),
        );
    }
    Some(v)
}

fn kubernetes(cx: &mut Cx, node: &Node, path: &Path) -> Option<KubernetesCompute> {
    let mut o = Obj::open(cx, node, path, &KUBERNETES)?;
    let pvc_name = o.req(
        cx,
        "pvc_name",
        nonblank_str("set `pvc_name:` to an existing PersistentVolumeClaim (ReadWriteMany when benchmarks run at once); the driver always mounts it at `job.output_path`"),
    );
    let v = KubernetesCompute {
        context: o.opt(cx, "context", strict_str),
        namespace: o.or(cx, "namespace", strict_str, "default".into()),
        gpus_per_node: o.opt(cx, "gpus_per_node", positive_int),
        node_selector: o.or(cx, "node_selector", str_map, StrMap::new()),
        service_account: o.opt(cx, "service_account", strict_str),
        pvc_name: pvc_name.unwrap_or_default(),
        memory_per_gpu: o.or(cx, "memory_per_gpu", memory_quantity, "32Gi".into()),
        ttl_seconds_after_finished: o.or(cx, "ttl_seconds_after_finished", non_negative, 86400),
        active_deadline_seconds: o.opt(cx, "active_deadline_seconds", positive_int),
    };
    let extra_args = o.or(cx, "extra_args", str_map, StrMap::new());
    let v = o.finish(v)?;
    if !extra_args.is_empty() {
        return broken(
            cx,
            node.get("extra_args").unwrap_or(node),
            format!("`{path}.extra_args` is not used on Kubernetes"),
            "would be ignored",
            "remove `extra_args:`; nrl does not forward it (the reference silently ignored it)"
                .into(),
        );
    }
    Some(v)
}
