//! The typed Gym submit config (ref-nemo-gym-k8s §1), fields in the reference's
//! declaration order (that order is the key order of the resolved-config dump).
//!
//! Only what can run on Kubernetes is modelled: `ray` and `vllm_pd` services and `slurm`
//! compute entries are recognised and refused with a clear message at load time.

use indexmap::IndexMap;

use crate::config::node::Node;
use crate::config::source::Span;

/// An ordered `dict[str, str]`.
pub type StrMap = IndexMap<String, String>;

/// The validated submit config.
#[derive(Debug, Clone)]
pub struct SubmitConfig {
    /// `services`, in declaration order (the order of the sidecars in every pod).
    pub services: IndexMap<String, VllmService>,
    /// The key of the single `compute` entry.
    pub compute_name: String,
    pub compute: KubernetesCompute,
    pub driver: DriverConfig,
    pub job: JobConfig,
    pub otel: OtelConfig,
    /// The resolved tree this was validated from (spans for later diagnostics).
    pub source: Node,
}

impl SubmitConfig {
    /// The source node at a path of keys (keys may contain dots: `tau2.airline`).
    pub fn node_at(&self, keys: &[&str]) -> Option<&Node> {
        keys.iter().try_fold(&self.source, |n, k| n.get(k))
    }

    /// Where the value at a path of keys was written.
    pub fn span_of(&self, keys: &[&str]) -> Option<Span> {
        self.node_at(keys).and_then(Node::best_span)
    }

    /// Where the key of the entry at a path of keys was written (else its value).
    pub fn key_span_of(&self, keys: &[&str]) -> Option<Span> {
        self.node_at(keys).and_then(|n| n.key_span.or(n.span))
    }

    /// Every env value of the config (sidecars in order, then the driver).
    pub fn env_values(&self) -> impl Iterator<Item = &EnvValue> {
        self.services
            .values()
            .flat_map(|s| s.env.values())
            .chain(self.driver.env.values())
    }

    /// The variables of secrets rendered with a placeholder (unset here), each once.
    pub fn placeholder_vars(&self) -> Vec<String> {
        let mut vars: Vec<String> = Vec::new();
        for v in self.env_values().filter(|v| v.unset_at.is_some()) {
            if let Some(var) = v.secret_var()
                && !vars.iter().any(|x| x == var)
            {
                vars.push(var.to_string());
            }
        }
        vars
    }

    /// An error naming every secret that is unset here (what a submit needs first).
    pub fn require_secret_values(&self) -> crate::diag::Result<()> {
        let errors = self
            .env_values()
            .filter_map(|v| {
                let path = v.unset_at.as_deref()?;
                let var = v.secret_var()?;
                Some(super::env::unset_error(path, &v.written, var, v.span))
            })
            .collect();
        match crate::diag::Diag::aggregate(errors) {
            Some(d) => Err(d),
            None => Ok(()),
        }
    }

    /// The service named by `driver.policy_model`, when set.
    pub fn policy_service(&self) -> Option<(&str, &VllmService)> {
        let name = self.driver.policy_model.as_deref()?;
        self.services
            .get_key_value(name)
            .map(|(k, v)| (k.as_str(), v))
    }
}

/// `services.<name>.health_check`.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthCheck {
    pub path: String,
    /// Filled from the service's `port` when unset.
    pub port: i64,
    pub timeout_seconds: i64,
}

/// `services.<name>` with `type: vllm`.
#[derive(Debug, Clone, PartialEq)]
pub struct VllmService {
    pub container: String,
    /// Filled with the compute entry's name when unset.
    pub placement: String,
    pub health_check: HealthCheck,
    pub env: EnvMap,
    pub model: String,
    pub port: i64,
    pub served_model_name: Option<String>,
    pub tensor_parallel_size: i64,
    pub pipeline_parallel_size: i64,
    pub trust_remote_code: bool,
    pub number_of_instances: i64,
    /// Raw extra flags for `vllm serve`, as written.
    pub extra_args: String,
    /// `extra_args` split shell-style (validated at load).
    pub extra_argv: Vec<String>,
    pub data_parallel_rpc_port: i64,
}

impl VllmService {
    /// GPUs the sidecar asks for: tp × pp × instances (all replicas share the pod).
    pub fn gpus(&self) -> i64 {
        self.tensor_parallel_size
            .saturating_mul(self.pipeline_parallel_size)
            .saturating_mul(self.number_of_instances)
    }

    /// The model name clients use: `served_model_name`, else `model`.
    pub fn client_model_name(&self) -> &str {
        self.served_model_name.as_deref().unwrap_or(&self.model)
    }
}

/// `compute.<name>` with `type: kubernetes`.
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesCompute {
    /// Kube context; `None` is the kubeconfig's current context.
    pub context: Option<String>,
    pub namespace: String,
    pub gpus_per_node: Option<i64>,
    pub node_selector: StrMap,
    pub service_account: Option<String>,
    pub pvc_name: String,
    /// Memory requested per GPU of a sidecar (validated quantity text).
    pub memory_per_gpu: String,
    pub ttl_seconds_after_finished: i64,
    pub active_deadline_seconds: Option<i64>,
}

/// `driver.gym_install`.
#[derive(Debug, Clone, PartialEq)]
pub struct GymInstall {
    pub repo: String,
    /// Git tag or commit (`ref` in YAML).
    pub git_ref: String,
}

/// `driver`.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    pub container: String,
    pub gym_install: Option<GymInstall>,
    pub policy_model: Option<String>,
    pub policy_host: String,
    pub policy_model_type: String,
    pub benchmarks: IndexMap<String, Benchmark>,
    pub env: EnvMap,
}

/// `driver.benchmarks.<name>`.
#[derive(Debug, Clone)]
pub struct Benchmark {
    /// Overrides for `gym eval prepare` (a mapping, as loaded).
    pub prepare: Node,
    /// Overrides for `gym eval run` (a mapping; the policy keys are injected here).
    pub run: Node,
    /// A shell script run instead of `gym eval run`.
    pub command: Option<String>,
}

impl Benchmark {
    pub fn prepare_is_empty(&self) -> bool {
        self.prepare.as_map().is_none_or(|m| m.is_empty())
    }

    pub fn run_is_empty(&self) -> bool {
        self.run.as_map().is_none_or(|m| m.is_empty())
    }
}

/// `job`.
#[derive(Debug, Clone, PartialEq)]
pub struct JobConfig {
    /// Where the output PVC is mounted in the driver; each run writes under
    /// `<output_path>/<run id>/<benchmark>/`.
    pub output_path: String,
}

/// `otel` (validated; an enabled collector is refused on Kubernetes).
#[derive(Debug, Clone, PartialEq)]
pub struct OtelConfig {
    pub enabled: bool,
    pub binary: String,
    pub container: Option<String>,
    pub endpoint: Option<String>,
    pub token_env: String,
    pub service_name: Option<String>,
    pub component: String,
    pub gym_telemetry: bool,
    pub gym_span_groups: String,
    pub gym_logs: bool,
    pub gpu_metrics_port: Option<i64>,
    pub node_metrics_port: Option<i64>,
    pub scrape_interval_seconds: i64,
    pub health_check_timeout_seconds: i64,
}

impl Default for OtelConfig {
    fn default() -> Self {
        OtelConfig {
            enabled: true,
            binary: "otelcol-contrib".into(),
            container: None,
            endpoint: None,
            token_env: "OTEL_TOKEN".into(),
            service_name: None,
            component: "gym-vllm".into(),
            gym_telemetry: true,
            gym_span_groups: "default,verify".into(),
            gym_logs: true,
            gpu_metrics_port: Some(9400),
            node_metrics_port: Some(9100),
            scrape_interval_seconds: 15,
            health_check_timeout_seconds: 300,
        }
    }
}

/// An `env` mapping: variable name to value, in order.
pub type EnvMap = IndexMap<String, EnvValue>;

/// One resolved `env` value (ref-nemo-gym-k8s §1.8).
#[derive(Debug, Clone, PartialEq)]
pub struct EnvValue {
    /// The value the process sees.
    pub value: String,
    pub origin: EnvOrigin,
    /// The value as written (`host:HF_TOKEN`), for dumps that must not hold secrets.
    pub written: String,
    pub span: Option<Span>,
    /// A secret whose variable is not set here: `value` is [`placeholder`], and this is
    /// the config path that asked for it (`driver.env.HF_TOKEN`). Rendering goes on
    /// (offline, nothing leaves the machine); a submit refuses it.
    pub unset_at: Option<String>,
}

/// The value rendered for a secret whose variable is unset: angle brackets and spaces,
/// so it cannot pass for a token.
pub fn placeholder(var: &str) -> String {
    format!("<{var}: set at submit>")
}

/// Where an env value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvOrigin {
    /// `lit:VALUE`: goes into the Job spec as written.
    Literal,
    /// `host:VAR` / `secret:VAR`: read from the submitting machine. A secret is delivered
    /// through the run's Secret (`secretKeyRef`), never in the Job spec.
    Host { var: String, secret: bool },
}

impl EnvValue {
    /// The host variable whose value goes into the run's Secret, when this is a secret.
    pub fn secret_var(&self) -> Option<&str> {
        match &self.origin {
            EnvOrigin::Host { var, secret: true } => Some(var),
            _ => None,
        }
    }
}
