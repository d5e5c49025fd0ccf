//! Rules across models (ref-nemo-gym-k8s §1.7), plus the checks the reference lacks
//! (§7 #3, #4, #6, #7): GPUs summed over every sidecar of the pod, unique ports and
//! container names, unique benchmark labels, and a startup budget that fits a model load.
//! Errors go into the [`Cx`]; advice that does not stop a submit comes back as warnings.

use std::sync::LazyLock;

use crate::config::node::Node;
use crate::config::typed::check::{Cx, suggest};
use crate::diag::Diag;

use super::model::{SubmitConfig, VllmService};
use crate::gym::names::dns_label;

pub const CODE_BENCH_NAME: &str = "nrl::gym::benchmark_name";
pub const CODE_OTEL: &str = "nrl::gym::otel";
pub const CODE_GPUS: &str = "nrl::gym::gpus";
pub const CODE_COLLISION: &str = "nrl::gym::collision";
pub const CODE_POLICY: &str = "nrl::gym::policy_model";
pub const CODE_IDLE_GPUS: &str = "nrl::gym::idle_gpus";
pub const CODE_STARTUP: &str = "nrl::gym::startup_budget";

/// The three keys `driver.policy_model` injects into every benchmark's `run`.
pub const POLICY_KEYS: [&str; 3] = ["policy_base_url", "policy_model_name", "policy_api_key"];

/// Check every cross-model rule; inject the policy keys. Warnings are appended to `warnings`.
pub(super) fn check(cx: &mut Cx, cfg: &mut SubmitConfig, warnings: &mut Vec<Diag>) {
    let src = cfg.source.clone();
    let node = |keys: &[&str]| keys.iter().try_fold(&src, |n, k| n.get(k));
    let span = |keys: &[&str]| node(keys).and_then(Node::best_span);
    let key_span = |keys: &[&str]| node(keys).and_then(|n| n.key_span.or(n.span));

    // Benchmark names become Job names and label values.
    let mut bad = Vec::new();
    for name in cfg.driver.benchmarks.keys() {
        if !valid_benchmark_name(name) {
            bad.push(name.as_str());
            cx.report(
                Diag::new(
                    CODE_BENCH_NAME,
                    format!("Invalid benchmark name `{name}`: benchmark names must match ^[a-z0-9][a-z0-9._-]*$ to become part of a Kubernetes Job name"),
                )
                .label(key_span(&["driver", "benchmarks", name]), "invalid benchmark name")
                .help(format!("rename it, e.g. `{}`", suggested_name(name))),
            );
        }
    }
    first_collision(
        cx,
        cfg.driver
            .benchmarks
            .keys()
            .map(String::as_str)
            .filter(|n| !bad.contains(n)),
        dns_label,
        |a, b, l| {
            Diag::new(
                CODE_COLLISION,
                format!("benchmarks `{a}` and `{b}` would share the Job name and label `{l}`"),
            )
            .label(
                key_span(&["driver", "benchmarks", b]),
                "same Kubernetes name as another benchmark",
            )
            .label(key_span(&["driver", "benchmarks", a]), "this one")
            .help("rename one of them; `.`, `_` and upper case all become `-` in Kubernetes names")
        },
    );

    if cfg.otel.enabled {
        let at = span(&["otel", "enabled"])
            .or_else(|| key_span(&["otel"]))
            .or(src.span);
        cx.report(
            Diag::new(CODE_OTEL, "otel is enabled (the default), but nrl gym does not run an OpenTelemetry collector on Kubernetes")
                .label(at, "otel enabled")
                .help("set `otel: {enabled: false}` explicitly (or pass `otel.enabled=false`)"),
        );
    }

    // Sidecars share the pod: names and ports must be distinct.
    first_collision(
        cx,
        cfg.services.keys().map(String::as_str).chain(["driver"]),
        dns_label,
        |a, b, l| {
            let (svc, other) = if b == "driver" {
                (a, "the driver container".to_string())
            } else {
                (b, format!("service `{a}`"))
            };
            Diag::new(CODE_COLLISION, format!("service `{svc}` would be a container named `{l}`, like {other}"))
                .label(key_span(&["services", svc]), "duplicate container name")
                .help("rename the service; container names are the service names lower-cased with `.` and `_` as `-`, and `driver` is reserved")
        },
    );
    for name in cfg.services.keys() {
        if dns_label(name).is_empty() {
            cx.report(
                Diag::new(
                    CODE_COLLISION,
                    format!("service `{name}` has no letters or digits to name its container"),
                )
                .label(key_span(&["services", name]), "empty container name")
                .help("rename the service, e.g. `policy`"),
            );
        }
    }
    first_collision(
        cx,
        cfg.services.keys().map(String::as_str),
        |n| cfg.services[n].port.to_string(),
        |a, b, p| {
            Diag::new(CODE_COLLISION, format!("services `{a}` and `{b}` both listen on port {p}, but sidecars share the pod's network"))
                .label(span(&["services", b, "port"]).or_else(|| key_span(&["services", b])), format!("port {p} again"))
                .label(span(&["services", a, "port"]).or_else(|| key_span(&["services", a])), "first here")
                .help(format!("give `{b}` its own `port:`, e.g. `port: {}`", p.parse::<i64>().unwrap_or(8000) + 1))
        },
    );

    gpus(cx, cfg, warnings);
    for (name, svc) in &cfg.services {
        if let Some(w) = startup_budget(
            name,
            svc,
            span(&["services", name, "health_check", "timeout_seconds"])
                .or_else(|| key_span(&["services", name])),
        ) {
            warnings.push(w);
        }
    }
    policy(cx, cfg);
}

/// Report the first pair of items whose keys collide.
fn first_collision<'a>(
    cx: &mut Cx,
    items: impl Iterator<Item = &'a str>,
    key: impl Fn(&str) -> String,
    diag: impl Fn(&str, &str, &str) -> Diag,
) {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for item in items {
        let k = key(item);
        if k.is_empty() {
            continue;
        }
        if let Some((_, first)) = seen.iter().find(|(sk, _)| *sk == k) {
            cx.report(diag(first, item, &k));
            return;
        }
        seen.push((k, item));
    }
}

/// `^[a-z0-9][a-z0-9._-]*$`
pub fn valid_benchmark_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
}

fn suggested_name(name: &str) -> String {
    let s: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    if s.is_empty() {
        "bench".into()
    } else {
        s.to_string()
    }
}

/// Per service (as the reference) and, new, summed over every sidecar of the pod.
fn gpus(cx: &mut Cx, cfg: &SubmitConfig, warnings: &mut Vec<Diag>) {
    let Some(available) = cfg.compute.gpus_per_node else {
        return;
    };
    let compute = &cfg.compute_name;
    let gpn_span = cfg.span_of(&["compute", compute, "gpus_per_node"]);
    let mut total: i64 = 0;
    let mut parts = Vec::new();
    for (name, svc) in &cfg.services {
        let need = svc.gpus();
        total = total.saturating_add(need);
        parts.push(format!("{name}: {need}"));
        if need > available {
            cx.report(
                Diag::new(
                    CODE_GPUS,
                    format!(
                        "Service '{name}' requires {need} GPUs (tensor_parallel_size={} x pipeline_parallel_size={} x number_of_instances={}), which exceeds the node pool's gpus_per_node ({available}) on compute '{compute}'",
                        svc.tensor_parallel_size, svc.pipeline_parallel_size, svc.number_of_instances
                    ),
                )
                .label(cfg.span_of(&["services", name, "tensor_parallel_size"]).or_else(|| cfg.key_span_of(&["services", name])), format!("{need} GPUs"))
                .label(gpn_span, format!("{available} per node"))
                .help("reduce number_of_instances/tensor_parallel_size/pipeline_parallel_size, or use nodes with more GPUs"),
            );
            return;
        }
    }
    if cfg.services.len() > 1 && total > available {
        cx.report(
            Diag::new(
                CODE_GPUS,
                format!(
                    "the services share one pod and together need {total} GPUs ({}), more than gpus_per_node ({available}) on compute '{compute}'; the pod would stay Pending forever",
                    parts.join(", ")
                ),
            )
            .label(gpn_span, format!("{available} per node"))
            .help("shrink the services, or split them over separate configs"),
        );
    } else if total < available {
        let who = match cfg.services.iter().next() {
            Some((name, _)) if cfg.services.len() == 1 => format!("service `{name}` needs {total}"),
            _ => format!("the services need {total} together ({})", parts.join(", ")),
        };
        warnings.push(
            Diag::new(
                CODE_IDLE_GPUS,
                format!(
                    "compute '{compute}' provides {available} GPUs per node but {who}, leaving {} GPU(s) idle",
                    available - total
                ),
            )
            .warning()
            .label(gpn_span, format!("{available} per node"))
            .help("increase number_of_instances/tensor_parallel_size, or lower gpus_per_node to what the pod uses"),
        );
    }
}

static PARAMS: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"(?i)(?:^|[^0-9.])(\d+(?:\.\d+)?)b(?:$|[^a-z0-9])")
        .unwrap_or_else(|_| unreachable!())
});

/// Billions of parameters a model name advertises (`Qwen2.5-7B-Instruct` -> 7); the
/// largest figure wins (`Qwen3-30B-A3B` -> 30).
pub fn advertised_billions(model: &str) -> Option<f64> {
    PARAMS
        .captures_iter(model)
        .filter_map(|c| c.get(1)?.as_str().parse::<f64>().ok())
        .reduce(f64::max)
}

/// Seconds a model load plausibly takes: a floor of 5 minutes (download, weights, CUDA
/// graphs), 20 s per billion parameters above that.
pub fn startup_estimate(svc: &VllmService) -> i64 {
    let billions = advertised_billions(&svc.model).unwrap_or(0.0);
    ((billions * 20.0).ceil() as i64).max(300)
}

fn startup_budget(
    name: &str,
    svc: &VllmService,
    at: Option<crate::config::source::Span>,
) -> Option<Diag> {
    let budget = svc.health_check.timeout_seconds;
    let need = startup_estimate(svc);
    if budget >= need {
        return None;
    }
    let size = advertised_billions(&svc.model)
        .map(|b| format!(" (~{b}B parameters)"))
        .unwrap_or_default();
    Some(
        Diag::new(
            CODE_STARTUP,
            format!(
                "service `{name}` gets {budget} s to start (health_check.timeout_seconds), but loading {}{size} usually takes longer (about {need} s)",
                svc.model
            ),
        )
        .warning()
        .label(at, format!("{budget} s"))
        .help(format!(
            "raise it, e.g. `health_check: {{timeout_seconds: {}}}`; when the startup probe runs out the kubelet restarts the sidecar, and the Job never fails unless active_deadline_seconds is set",
            need.max(1200)
        )),
    )
}

fn policy(cx: &mut Cx, cfg: &mut SubmitConfig) {
    let Some(policy) = cfg.driver.policy_model.clone() else {
        return;
    };
    let Some(svc) = cfg.services.get(&policy) else {
        let names: Vec<&str> = cfg.services.keys().map(String::as_str).collect();
        let help = match suggest(&policy, &names) {
            Some(s) => format!("did you mean `policy_model: {s}`?"),
            None if names.is_empty() => {
                "declare the model under `services:`, or remove `policy_model:`".into()
            }
            None => format!("name one of the services: {}", names.join(", ")),
        };
        cx.report(
            Diag::new(
                CODE_POLICY,
                format!(
                    "driver.policy_model '{policy}' does not match any service ({})",
                    names.join(", ")
                ),
            )
            .label(cfg.span_of(&["driver", "policy_model"]), "unknown service")
            .help(help),
        );
        return;
    };
    let values = [
        format!("http://{}:{}/v1", cfg.driver.policy_host, svc.port),
        svc.client_model_name().to_string(),
        "dummy".to_string(),
    ];
    let policy_span = cfg.span_of(&["driver", "policy_model"]);
    for (bench, b) in cfg.driver.benchmarks.iter_mut() {
        let Some(run) = b.run.as_map_mut() else {
            continue;
        };
        let conflicts: Vec<&str> = POLICY_KEYS
            .iter()
            .copied()
            .filter(|k| run.contains_key(*k))
            .collect();
        if let Some(first) = conflicts.first() {
            cx.report(
                Diag::new(
                    CODE_POLICY,
                    format!("Benchmark '{bench}' run config already sets {} but driver.policy_model is also set. Remove one.", conflicts.join(", ")),
                )
                .label(run.get(*first).and_then(|n| n.key_span.or(n.span)), "set here")
                .label(policy_span, "and injected from here")
                .help("drop the key from `run:`, or drop `driver.policy_model`"),
            );
            continue;
        }
        for (k, v) in POLICY_KEYS.iter().zip(&values) {
            run.insert(k.to_string(), Node::str(v.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn benchmark_names() {
        for ok in ["gpqa", "gpqa_diamond", "tau2.airline", "0shot", "a-b"] {
            assert!(valid_benchmark_name(ok), "{ok}");
        }
        for bad in ["GPQA", "_x", "-x", "a b", "", "ä"] {
            assert!(!valid_benchmark_name(bad), "{bad}");
        }
        assert_eq!(suggested_name("GPQA"), "gpqa");
        assert_eq!(suggested_name("_x y"), "x_y");
    }

    #[test]
    fn model_sizes_from_names() {
        assert_eq!(advertised_billions("Qwen/Qwen2.5-7B-Instruct"), Some(7.0));
        assert_eq!(advertised_billions("Qwen/Qwen3-30B-A3B"), Some(30.0));
        assert_eq!(
            advertised_billions("meta-llama/Llama-3.1-405B"),
            Some(405.0)
        );
        assert_eq!(advertised_billions("nvidia/Nemotron-Nano-9B-v2"), Some(9.0));
        assert_eq!(advertised_billions("org/model"), None);
        assert_eq!(advertised_billions("Qwen2.5-0.5B"), Some(0.5));
    }
}
