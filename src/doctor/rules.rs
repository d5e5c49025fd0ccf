//! The rule registry: every code `nrl doctor` can report, its severity and a one-line
//! summary (shown by `nrl doctor --rules` and used to validate allow lists).

use super::Severity;

/// One rule (or preflight check) and the code its findings carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub code: &'static str,
    pub severity: Severity,
    /// Offline rules run in `check`; preflight checks need the cluster.
    pub preflight: bool,
    pub summary: &'static str,
}

impl Rule {
    /// The code without the `nrl::doctor::` prefix (what allow comments may use).
    pub fn short(&self) -> &'static str {
        self.code.strip_prefix(PREFIX).unwrap_or(self.code)
    }
}

pub const PREFIX: &str = "nrl::doctor::";

pub const GPU_MISMATCH: &str = "nrl::doctor::gpu_mismatch";
pub const NODE_COUNT_MISMATCH: &str = "nrl::doctor::node_count_mismatch";
pub const LITERAL_SECRET: &str = "nrl::doctor::literal_secret";
pub const SHELL_EXPANSION: &str = "nrl::doctor::shell_expansion";
pub const DTENSOR_ONLY_OVERRIDE: &str = "nrl::doctor::dtensor_only_override";
pub const TWO_BACKENDS: &str = "nrl::doctor::two_backends";
pub const WEBHOOK_CONFLICT: &str = "nrl::doctor::webhook_conflict";
pub const NO_TOLERATIONS: &str = "nrl::doctor::no_tolerations";
pub const KAI_QUEUE_LABEL: &str = "nrl::doctor::kai_queue_label";
pub const KAI_TOPOLOGY_PARTIAL: &str = "nrl::doctor::kai_topology_partial";
pub const UPLOAD_UNUSED: &str = "nrl::doctor::upload_unused";
pub const UPLOAD_TOO_LARGE: &str = "nrl::doctor::upload_too_large";
pub const UNKNOWN_ALLOW: &str = "nrl::doctor::unknown_allow";
pub const ALLOW_CONFIG: &str = "nrl::doctor::allow_config";
pub const MISSING_OBJECT: &str = "nrl::doctor::missing_object";
pub const MISSING_CRD: &str = "nrl::doctor::missing_crd";
pub const ACCESS_DENIED: &str = "nrl::doctor::access_denied";
pub const KAI_QUEUE_MISSING: &str = "nrl::doctor::kai_queue_missing";
pub const PREFLIGHT_UNCHECKED: &str = "nrl::doctor::preflight_unchecked";

const fn offline(code: &'static str, severity: Severity, summary: &'static str) -> Rule {
    Rule {
        code,
        severity,
        preflight: false,
        summary,
    }
}

const fn online(code: &'static str, severity: Severity, summary: &'static str) -> Rule {
    Rule {
        code,
        severity,
        preflight: true,
        summary,
    }
}

use Severity::{Error, Warning};

/// Every code, offline rules first, in the order the report groups them.
pub const RULES: &[Rule] = &[
    offline(
        GPU_MISMATCH,
        Error,
        "recipe cluster.gpus_per_node differs from the worker pods' nvidia.com/gpu limit (a warning when the pods have more)",
    ),
    offline(
        NODE_COUNT_MISMATCH,
        Error,
        "recipe cluster.num_nodes differs from the total GPU worker replicas (a warning when there are more workers)",
    ),
    offline(
        LITERAL_SECRET,
        Error,
        "a secret written literally in an env value instead of secretKeyRef/envFrom",
    ),
    offline(
        SHELL_EXPANSION,
        Error,
        "a shell expansion `${VAR}` in the recipe that OmegaConf would try to resolve",
    ),
    offline(
        DTENSOR_ONLY_OVERRIDE,
        Error,
        "a Megatron recipe with DTensor-only optimizer overrides (~policy.optimizer.kwargs.foreach/fused; a warning when they only do nothing)",
    ),
    offline(
        TWO_BACKENDS,
        Error,
        "an MoE recipe with both megatron_cfg.enabled and dtensor_cfg.enabled",
    ),
    offline(
        WEBHOOK_CONFLICT,
        Error,
        "ephemeral-storage requests or readinessProbe in an inline RayCluster spec",
    ),
    offline(
        NO_TOLERATIONS,
        Warning,
        "GPU worker pods without tolerations",
    ),
    offline(
        KAI_QUEUE_LABEL,
        Error,
        "schedulerName: kai-scheduler without a kai.scheduler/queue label",
    ),
    offline(
        KAI_TOPOLOGY_PARTIAL,
        Error,
        "KAI topology annotations on only some worker groups",
    ),
    offline(
        UPLOAD_UNUSED,
        Error,
        "code source upload with an entrypoint that cds to an absolute path",
    ),
    offline(
        UPLOAD_TOO_LARGE,
        Error,
        "the working_dir upload is over Ray's 100 MiB limit",
    ),
    offline(
        UNKNOWN_ALLOW,
        Warning,
        "an allow comment or doctor.allow entry names an unknown code",
    ),
    offline(
        ALLOW_CONFIG,
        Error,
        "the doctor section of user defaults is malformed",
    ),
    online(
        MISSING_OBJECT,
        Error,
        "a PVC, Secret, ServiceAccount, ConfigMap or ResourceClaimTemplate the manifests reference does not exist",
    ),
    online(
        MISSING_CRD,
        Error,
        "a CRD the manifests need (RayCluster, RayJob, ComputeDomain) or its version is not served",
    ),
    online(
        ACCESS_DENIED,
        Error,
        "an access review says you may not create what the launch creates",
    ),
    online(
        KAI_QUEUE_MISSING,
        Error,
        "the KAI queue named in kai.scheduler/queue does not exist",
    ),
    online(
        PREFLIGHT_UNCHECKED,
        Warning,
        "a preflight check could not run (not allowed to read the object)",
    ),
];

/// The rule registered for a full or short code.
pub fn rule(code: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.code == code || r.short() == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_prefixed_and_short_names_resolve() {
        for (i, r) in RULES.iter().enumerate() {
            assert!(r.code.starts_with(PREFIX), "{}", r.code);
            assert!(
                RULES[i + 1..].iter().all(|o| o.code != r.code),
                "duplicate {}",
                r.code
            );
            assert_eq!(rule(r.short()), Some(r));
            assert_eq!(rule(r.code), Some(r));
        }
        assert!(rule("gpu").is_none());
    }
}
