//! One reader per model of the submit config (ref-nemo-gym-k8s §1.1-§1.6), in declaration
//! order, with the rules that belong to a single model. Cross-model rules are in
//! `rules.rs`; services and compute entries in `parse_services.rs`.

use crate::config::env::Env;
use crate::config::node::{Node, Value};
use crate::config::typed::check::*;
use crate::config::typed::convert::*;
use crate::config::typed::json_schema::{self as js, SchemaCx};
use crate::config::typed::shape::shape;
use crate::diag::Diag;

use super::env::{env_map, is_var_name};
use super::model::*;
use super::parse_services::{compute, compute_schema, services, services_schema};

shape! {
    /// A NeMo Gym submit config for `nrl gym`: vLLM services served next to the Gym driver,
    /// one Kubernetes compute entry, and the benchmarks the driver runs.
    pub(super) const SUBMIT: "SubmitConfig", fn submit_schema(cx) {
        /// The model servers, each a vLLM sidecar of every benchmark's pod, keyed by name.
        "services" req: services_schema(cx);
        /// Where the benchmarks run: exactly one `type: kubernetes` entry, keyed by name.
        "compute" req: compute_schema(cx);
        /// The Gym driver container and the benchmarks it runs.
        "driver" req: driver_schema(cx);
        "job" req: job_schema(cx);
        /// The OpenTelemetry collector; `nrl gym` runs none, so this must say
        /// `enabled: false` (absent means enabled).
        "otel" req: otel_schema(cx);
    }
    sections [("driver", DRIVER), ("job", JOB), ("otel", OTEL)]
}

shape! {
    /// The Gym driver.
    const DRIVER: "Driver", fn driver_schema(cx) {
        /// The driver's image; `gym` must be on its PATH unless `gym_install` is set.
        "container" or("python:3.12"): js::string();
        /// Clone and install Gym when the driver starts.
        "gym_install" opt: gym_install_schema(cx);
        /// The service whose URL, model name and key are injected into every benchmark's
        /// `run` (`policy_base_url`, `policy_model_name`, `policy_api_key`).
        "policy_model" opt: js::string();
        /// The host of the injected base URL (sidecars share the pod's network).
        "policy_host" or("localhost"): js::string();
        /// `--model-type` for `gym eval run` when `policy_model` is set; empty for none.
        "policy_model_type" or("openai_model"): js::string();
        /// The benchmarks, one Kubernetes Job each, keyed by name.
        "benchmarks" req: js::map_of(benchmark_schema(cx));
        /// The driver's environment: `lit:VALUE`, `host:VAR` or `secret:VAR`.
        "env" or({}): js::env_map();
        /// Pyxis bind mounts: not supported on Kubernetes (must stay empty).
        "mounts" or([]): js::empty_list();
    }
    sections [("gym_install", GYM_INSTALL)]
}

shape! {
    /// `driver.gym_install`: the Gym repository to install at start.
    const GYM_INSTALL: "GymInstall", fn gym_install_schema(cx) {
        "repo" or(DEFAULT_GYM_REPO): js::string();
        /// The Gym tag or commit to install.
        "ref" req: js::nonblank_string();
    }
}

shape! {
    /// One benchmark: what `gym eval prepare` and `gym eval run` are given.
    const BENCHMARK: "Benchmark", fn benchmark_schema(cx) {
        /// Overrides for `gym eval prepare`; non-empty means a prepare step runs first.
        "prepare" or({}): js::free_map();
        /// Overrides for `gym eval run` (the policy keys are injected here).
        "run" or({}): js::free_map();
        /// A shell script run instead of `gym eval run` (then `run` must be empty).
        "command" opt: js::string();
        /// Not supported on Kubernetes: a failed benchmark Job is not retried.
        "resumable" or(false): js::constant_false();
    }
}

/// `resumable` as a mapping (which means true, and is refused on Kubernetes).
const RESUME: Shape = Shape {
    fields: &["max_retries", "max_walltime"],
    sections: &[],
};

shape! {
    /// Where the results go.
    const JOB: "Job", fn job_schema(cx) {
        /// Where the output PVC is mounted in the driver; each run writes under
        /// `<output_path>/<run id>/<benchmark>/`.
        "output_path" req: js::nonblank_string();
    }
}

shape! {
    /// The OpenTelemetry collector (validated; an enabled collector is refused on
    /// Kubernetes).
    const OTEL: "Otel", fn otel_schema(cx) {
        /// Must be false: Kubernetes runs no collector (the reference's default is true).
        "enabled" req: js::constant_false();
        "binary" or("otelcol-contrib"): js::string();
        "container" opt: js::string();
        "endpoint" opt: js::string();
        "token_env" or("OTEL_TOKEN"): js::var_name();
        "service_name" opt: js::string();
        "component" or("gym-vllm"): js::string();
        "gym_telemetry" or(true): js::boolean();
        "gym_span_groups" or("default,verify"): js::string();
        "gym_logs" or(true): js::boolean();
        "gpu_metrics_port" or(9400): js::nullable(js::integer());
        "node_metrics_port" or(9100): js::nullable(js::integer());
        "scrape_interval_seconds" or(15): js::integer_from(1);
        "health_check_timeout_seconds" or(300): js::integer_from(1);
    }
}

/// The Gym config's JSON Schema (`nrl schema gym`): the document [`submit`] reads, plus
/// `defaults:` (parent files, merged first). A file with parents may leave any key to
/// them, so it is checked against the lenient variant, which requires nothing.
pub fn gym_json_schema() -> serde_json::Value {
    let mut strict = SchemaCx::new(true);
    submit_schema(&mut strict);
    let mut lenient = SchemaCx::lenient();
    submit_schema(&mut lenient);
    let root = serde_json::json!({
        "if": { "required": ["defaults"] },
        "then": lenient.file_root("SubmitConfig", false, false),
        "else": strict.file_root("SubmitConfig", false, true),
    });
    strict.absorb(lenient);
    strict.document(
        "urn:nrl:schema:gym",
        "NeMo Gym submit config (nrl gym)",
        root,
    )
}

pub(super) const DEFAULT_GYM_REPO: &str = "https://github.com/NVIDIA-NeMo/gym";

/// Report a rule broken by the value at `node` (or its key).
pub(super) fn broken<T>(
    cx: &mut Cx,
    node: &Node,
    message: String,
    label: &str,
    help: String,
) -> Option<T> {
    cx.report(
        Diag::new(RULE, message)
            .label(node.best_span(), label)
            .help(help),
    );
    None
}

/// The top level. `compute` is read first: services default their placement to it.
pub(super) fn submit(cx: &mut Cx, env: &dyn Env, node: &Node, path: &Path) -> Option<SubmitConfig> {
    let mut o = Obj::open(cx, node, path, &SUBMIT)?;
    let compute = o.req(cx, "compute", compute);
    let compute_name = compute.as_ref().map(|(n, _)| n.clone());
    let services = o.req(cx, "services", services(env, compute_name.as_deref()));
    let driver = o.req(cx, "driver", driver(env));
    let job = o.req(cx, "job", job);
    let otel = o.or(cx, "otel", otel, OtelConfig::default());
    let (compute_name, compute) = compute?;
    let cfg = SubmitConfig {
        services: services?,
        compute_name,
        compute,
        driver: driver?,
        job: job?,
        otel,
        source: node.clone(),
    };
    o.finish(cfg)
}

fn driver(env: &dyn Env) -> impl Fn(&mut Cx, &Node, &Path) -> Option<DriverConfig> + '_ {
    move |cx, node, path| {
        let mut o = Obj::open(cx, node, path, &DRIVER)?;
        let benchmarks = o.req(cx, "benchmarks", map_of(benchmark));
        let v = DriverConfig {
            container: o.or(cx, "container", strict_str, "python:3.12".into()),
            gym_install: o.opt(cx, "gym_install", gym_install),
            policy_model: o.opt(cx, "policy_model", strict_str),
            policy_host: o.or(cx, "policy_host", strict_str, "localhost".into()),
            policy_model_type: o.or(cx, "policy_model_type", strict_str, "openai_model".into()),
            benchmarks: benchmarks.unwrap_or_default(),
            env: o.or(cx, "env", env_map(env), EnvMap::new()),
        };
        let mounts = o.or(cx, "mounts", str_list, Vec::new());
        let v = o.finish(v)?;
        if !mounts.is_empty() {
            return no_mounts(cx, node, path);
        }
        Some(v)
    }
}

/// `mounts` (Pyxis bind mounts) have no meaning in a pod.
pub(super) fn no_mounts<T>(cx: &mut Cx, node: &Node, path: &Path) -> Option<T> {
    let at = node.get("mounts").unwrap_or(node);
    broken(
        cx,
        at,
        format!("`{path}.mounts` is not supported on Kubernetes"),
        "bind mounts",
        "remove `mounts:`; on Kubernetes the driver sees only the output PVC, mounted at `job.output_path`".into(),
    )
}

fn gym_install(cx: &mut Cx, node: &Node, path: &Path) -> Option<GymInstall> {
    let mut o = Obj::open(cx, node, path, &GYM_INSTALL)?;
    let repo = o.or(cx, "repo", strict_str, DEFAULT_GYM_REPO.into());
    let git_ref = o.req(
        cx,
        "ref",
        nonblank_str("set `ref:` to the Gym tag or commit to install, e.g. `ref: v0.3.0`"),
    );
    o.finish(GymInstall {
        repo,
        git_ref: git_ref.unwrap_or_default(),
    })
}

fn run_overrides(cx: &mut Cx, node: &Node, path: &Path) -> Option<Node> {
    free_map(cx, node, path)
}

fn benchmark(cx: &mut Cx, node: &Node, path: &Path) -> Option<Benchmark> {
    let mut o = Obj::open(cx, node, path, &BENCHMARK)?;
    let v = Benchmark {
        prepare: o.or(cx, "prepare", run_overrides, Node::map()),
        run: o.or(cx, "run", run_overrides, Node::map()),
        command: o.opt(cx, "command", strict_str),
    };
    let resumable = o.or(cx, "resumable", resumable, false);
    let v = o.finish(v)?;
    let at = |k: &str| node.get(k).unwrap_or(node);
    if v.command.is_some() && !v.run_is_empty() {
        return broken(
            cx,
            at("run"),
            format!(
                "`{path}` sets both `command` and `run`, but `run` only configures `gym eval run`, which `command` replaces"
            ),
            "ignored by `command`",
            "fold those settings into the command, or drop `command`".into(),
        );
    }
    if v.command.is_some() && resumable {
        return broken(
            cx,
            at("resumable"),
            format!(
                "`{path}` sets both `command` and `resumable`, but a resumed job only passes `resume_from_cache` to `gym eval run`, so a `command` would restart from zero"
            ),
            "not with `command`",
            "drop `resumable`, or run through `gym eval run`".into(),
        );
    }
    if resumable {
        return broken(
            cx,
            at("resumable"),
            format!("`{path}.resumable`: the Kubernetes executor does not support resumable runs"),
            "not on Kubernetes",
            "remove `resumable:`; a failed benchmark Job is not retried (backoffLimit 0) — resubmit it".into(),
        );
    }
    Some(v)
}

/// `resumable`: a bool, or a `{max_retries, max_walltime}` mapping (which means true).
fn resumable(cx: &mut Cx, node: &Node, path: &Path) -> Option<bool> {
    if let Value::Map(_) = node.value {
        let mut o = Obj::open(cx, node, path, &RESUME)?;
        o.or(cx, "max_retries", lax_int, 3);
        o.opt(cx, "max_walltime", strict_str);
        return o.finish(true);
    }
    lax_bool(cx, node, path)
}

fn job(cx: &mut Cx, node: &Node, path: &Path) -> Option<JobConfig> {
    let mut o = Obj::open(cx, node, path, &JOB)?;
    let output_path = o.req(
        cx,
        "output_path",
        nonblank_str("set `output_path:` to where the output PVC is mounted in the driver, e.g. `/mnt/gym-output`"),
    );
    o.finish(JobConfig {
        output_path: output_path.unwrap_or_default(),
    })
}

/// An int that must be at least 1.
pub(super) fn positive_int(cx: &mut Cx, node: &Node, path: &Path) -> Option<i64> {
    let v = lax_int(cx, node, path)?;
    if v < 1 {
        return broken(
            cx,
            node,
            format!("`{path}` must be >= 1, got {v}"),
            "less than 1",
            format!(
                "write a whole number of at least 1, e.g. `{} 1`",
                path.yaml_lead()
            ),
        );
    }
    Some(v)
}

fn otel(cx: &mut Cx, node: &Node, path: &Path) -> Option<OtelConfig> {
    let mut o = Obj::open(cx, node, path, &OTEL)?;
    let d = OtelConfig::default();
    let v = OtelConfig {
        enabled: o.or(cx, "enabled", lax_bool, d.enabled),
        binary: o.or(cx, "binary", strict_str, d.binary),
        container: o.opt(cx, "container", strict_str),
        endpoint: o.opt(cx, "endpoint", strict_str),
        token_env: o.or(cx, "token_env", token_env, d.token_env),
        service_name: o.opt(cx, "service_name", strict_str),
        component: o.or(cx, "component", strict_str, d.component),
        gym_telemetry: o.or(cx, "gym_telemetry", lax_bool, d.gym_telemetry),
        gym_span_groups: o.or(cx, "gym_span_groups", strict_str, d.gym_span_groups),
        gym_logs: o.or(cx, "gym_logs", lax_bool, d.gym_logs),
        gpu_metrics_port: optional_port(&mut o, cx, "gpu_metrics_port", d.gpu_metrics_port),
        node_metrics_port: optional_port(&mut o, cx, "node_metrics_port", d.node_metrics_port),
        scrape_interval_seconds: o.or(
            cx,
            "scrape_interval_seconds",
            positive_int,
            d.scrape_interval_seconds,
        ),
        health_check_timeout_seconds: o.or(
            cx,
            "health_check_timeout_seconds",
            positive_int,
            d.health_check_timeout_seconds,
        ),
    };
    o.finish(v)
}

/// An `int | None` field whose default is not None: absent keeps the default, null is None.
fn optional_port(o: &mut Obj, cx: &mut Cx, name: &str, default: Option<i64>) -> Option<i64> {
    o.or(
        cx,
        name,
        |cx, n, p| {
            if n.is_null() {
                Some(None)
            } else {
                lax_int(cx, n, p).map(Some)
            }
        },
        default,
    )
}

fn token_env(cx: &mut Cx, node: &Node, path: &Path) -> Option<String> {
    let s = strict_str(cx, node, path)?;
    if !is_var_name(&s) {
        return broken(
            cx,
            node,
            format!("`{path}`: '{s}' is not a valid environment variable name"),
            "not a variable name",
            "names match [A-Za-z_][A-Za-z0-9_]*".into(),
        );
    }
    Some(s)
}
