//! The resolved-config dump written next to each benchmark's results (the reference's
//! `model_dump(mode="json")`): every field of every model in declaration order, defaults
//! and the injected policy keys included.
//!
//! Two deliberate differences (ref-nemo-gym-k8s §7 #1, #11): `host:`/`secret:` env values
//! are written as their reference (`host:HF_TOKEN`), never as the submitter's value; and
//! a benchmark's copy lists only that benchmark under `driver.benchmarks`, so each Job's
//! startup command stays small however many benchmarks a run has.

use crate::config::node::{Map, Node};

use super::model::*;

struct Fields(Map);

impl Fields {
    fn new() -> Fields {
        Fields(Map::new())
    }

    fn put(mut self, key: &str, value: Node) -> Fields {
        self.0.insert(key.to_string(), value);
        self
    }

    fn done(self) -> Node {
        Node::from_map(self.0)
    }
}

fn opt_str(s: &Option<String>) -> Node {
    s.as_deref().map_or_else(Node::null, Node::str)
}

fn opt_int(i: Option<i64>) -> Node {
    i.map_or_else(Node::null, Node::int)
}

fn str_map(m: &StrMap) -> Node {
    Node::from_map(
        m.iter()
            .map(|(k, v)| (k.clone(), Node::str(v.clone())))
            .collect(),
    )
}

fn env(m: &EnvMap) -> Node {
    Node::from_map(
        m.iter()
            .map(|(k, v)| {
                let shown = match v.origin {
                    EnvOrigin::Literal => v.value.clone(),
                    EnvOrigin::Host { .. } => v.written.clone(),
                };
                (k.clone(), Node::str(shown))
            })
            .collect(),
    )
}

/// The dump; `only` keeps a single benchmark under `driver.benchmarks`.
pub fn to_node(cfg: &SubmitConfig, only: Option<&str>) -> Node {
    let services = Node::from_map(
        cfg.services
            .iter()
            .map(|(k, s)| (k.clone(), service(s)))
            .collect(),
    );
    let compute = Node::from_map(
        [(cfg.compute_name.clone(), kubernetes(&cfg.compute))]
            .into_iter()
            .collect(),
    );
    Fields::new()
        .put("services", services)
        .put("compute", compute)
        .put("driver", driver(&cfg.driver, only))
        .put(
            "job",
            Fields::new()
                .put("output_path", Node::str(cfg.job.output_path.clone()))
                .done(),
        )
        .put("otel", otel(&cfg.otel))
        .done()
}

fn service(s: &VllmService) -> Node {
    let hc = Fields::new()
        .put("path", Node::str(s.health_check.path.clone()))
        .put("port", Node::int(s.health_check.port))
        .put("timeout_seconds", Node::int(s.health_check.timeout_seconds))
        .done();
    Fields::new()
        .put("container", Node::str(s.container.clone()))
        .put("placement", Node::str(s.placement.clone()))
        .put("node_pool", Node::null())
        .put("health_check", hc)
        .put("env", env(&s.env))
        .put("mounts", Node::list(Vec::new()))
        .put("pre_command", Node::str(""))
        .put("model", Node::str(s.model.clone()))
        .put("port", Node::int(s.port))
        .put("served_model_name", opt_str(&s.served_model_name))
        .put("type", Node::str("vllm"))
        .put("tensor_parallel_size", Node::int(s.tensor_parallel_size))
        .put(
            "pipeline_parallel_size",
            Node::int(s.pipeline_parallel_size),
        )
        .put("trust_remote_code", Node::bool(s.trust_remote_code))
        .put("number_of_instances", Node::int(s.number_of_instances))
        .put("use_ray_serve", Node::bool(false))
        .put("extra_args", Node::str(s.extra_args.clone()))
        .put(
            "data_parallel_rpc_port",
            Node::int(s.data_parallel_rpc_port),
        )
        .done()
}

fn kubernetes(c: &KubernetesCompute) -> Node {
    Fields::new()
        .put("type", Node::str("kubernetes"))
        .put("context", opt_str(&c.context))
        .put("namespace", Node::str(c.namespace.clone()))
        .put("gpus_per_node", opt_int(c.gpus_per_node))
        .put("node_selector", str_map(&c.node_selector))
        .put("service_account", opt_str(&c.service_account))
        .put("pvc_name", Node::str(c.pvc_name.clone()))
        .put("memory_per_gpu", Node::str(c.memory_per_gpu.clone()))
        .put("extra_args", Node::map())
        .put(
            "ttl_seconds_after_finished",
            Node::int(c.ttl_seconds_after_finished),
        )
        .put(
            "active_deadline_seconds",
            opt_int(c.active_deadline_seconds),
        )
        .done()
}

fn driver(d: &DriverConfig, only: Option<&str>) -> Node {
    let install = d.gym_install.as_ref().map_or_else(Node::null, |g| {
        Fields::new()
            .put("repo", Node::str(g.repo.clone()))
            .put("ref", Node::str(g.git_ref.clone()))
            .done()
    });
    let entry = |(k, b): (&String, &Benchmark)| {
        let v = Fields::new()
            .put("prepare", b.prepare.clone())
            .put("run", b.run.clone())
            .put("command", opt_str(&b.command))
            .put("resumable", Node::bool(false))
            .done();
        (k.clone(), v)
    };
    // One benchmark's Job looks its entry up: scanning them all made a run's render
    // quadratic in its benchmarks.
    let benchmarks = Node::from_map(match only {
        Some(name) => d
            .benchmarks
            .get_key_value(name)
            .map(entry)
            .into_iter()
            .collect(),
        None => d.benchmarks.iter().map(entry).collect(),
    });
    Fields::new()
        .put("container", Node::str(d.container.clone()))
        .put("gym_install", install)
        .put("policy_model", opt_str(&d.policy_model))
        .put("policy_host", Node::str(d.policy_host.clone()))
        .put("policy_model_type", Node::str(d.policy_model_type.clone()))
        .put("benchmarks", benchmarks)
        .put("env", env(&d.env))
        .put("mounts", Node::list(Vec::new()))
        .done()
}

fn otel(o: &OtelConfig) -> Node {
    Fields::new()
        .put("enabled", Node::bool(o.enabled))
        .put("binary", Node::str(o.binary.clone()))
        .put("container", opt_str(&o.container))
        .put("endpoint", opt_str(&o.endpoint))
        .put("token_env", Node::str(o.token_env.clone()))
        .put("service_name", opt_str(&o.service_name))
        .put("component", Node::str(o.component.clone()))
        .put("gym_telemetry", Node::bool(o.gym_telemetry))
        .put("gym_span_groups", Node::str(o.gym_span_groups.clone()))
        .put("gym_logs", Node::bool(o.gym_logs))
        .put("gpu_metrics_port", opt_int(o.gpu_metrics_port))
        .put("node_metrics_port", opt_int(o.node_metrics_port))
        .put(
            "scrape_interval_seconds",
            Node::int(o.scrape_interval_seconds),
        )
        .put(
            "health_check_timeout_seconds",
            Node::int(o.health_check_timeout_seconds),
        )
        .done()
}
