//! The rule registry: every code `nrl doctor` and `nrl diagnose` can report, its stage,
//! severity and a one-line summary (shown by `nrl doctor --rules` and used to validate
//! allow lists).

use super::Severity;

/// When a rule runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before launch, over the inputs alone (`check`, `doctor --offline`).
    Offline,
    /// Before launch, against the cluster (`doctor`).
    Preflight,
    /// After launch, over a run's objects, pods, events and log (`diagnose`).
    Diagnose,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Offline => "offline",
            Stage::Preflight => "preflight",
            Stage::Diagnose => "diagnose",
        }
    }
}

/// One rule (or preflight check, or diagnosis) and the code its findings carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub code: &'static str,
    pub severity: Severity,
    /// Offline rules run in `check`; preflight checks need the cluster; diagnoses look
    /// at a launched run.
    pub stage: Stage,
    /// `stage == Preflight` (kept for scripts reading `doctor::rules()`).
    pub preflight: bool,
    pub summary: &'static str,
}

impl Rule {
    /// The code without the `nrl::doctor::` or `nrl::diagnose::` prefix (what allow
    /// comments may use).
    pub fn short(&self) -> &'static str {
        self.code
            .strip_prefix(PREFIX)
            .or_else(|| self.code.strip_prefix(DIAGNOSE_PREFIX))
            .unwrap_or(self.code)
    }
}

pub const PREFIX: &str = "nrl::doctor::";
/// The prefix of `nrl diagnose`'s codes.
pub const DIAGNOSE_PREFIX: &str = "nrl::diagnose::";

pub const GPU_MISMATCH: &str = "nrl::doctor::gpu_mismatch";
pub const NODE_COUNT_MISMATCH: &str = "nrl::doctor::node_count_mismatch";
pub const LITERAL_SECRET: &str = "nrl::doctor::literal_secret";
pub const SHELL_EXPANSION: &str = "nrl::doctor::shell_expansion";
pub const RECIPE_KEY_TYPO: &str = "nrl::doctor::recipe_key_typo";
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

// `nrl diagnose` (after launch).
pub const RAYJOB_NOT_FOUND: &str = "nrl::diagnose::rayjob_not_found";
pub const RAYJOB_VALIDATION_FAILED: &str = "nrl::diagnose::rayjob_validation_failed";
pub const RAYJOB_FAILED: &str = "nrl::diagnose::rayjob_failed";
pub const RAYJOB_SUSPENDED: &str = "nrl::diagnose::rayjob_suspended";
pub const RAYCLUSTER_NOT_READY: &str = "nrl::diagnose::raycluster_not_ready";
pub const INSUFFICIENT_RESOURCES: &str = "nrl::diagnose::insufficient_resources";
pub const UNTOLERATED_TAINT: &str = "nrl::diagnose::untolerated_taint";
pub const NODE_SELECTOR_MISMATCH: &str = "nrl::diagnose::node_selector_mismatch";
pub const UNBOUND_PVC: &str = "nrl::diagnose::unbound_pvc";
pub const DRA_CLAIM_UNALLOCATED: &str = "nrl::diagnose::dra_claim_unallocated";
pub const QUEUE_MISSING: &str = "nrl::diagnose::queue_missing";
pub const QUEUE_OVER_QUOTA: &str = "nrl::diagnose::queue_over_quota";
pub const GANG_WAITING: &str = "nrl::diagnose::gang_waiting";
pub const UNSCHEDULABLE: &str = "nrl::diagnose::unschedulable";
pub const IMAGE_PULL: &str = "nrl::diagnose::image_pull";
pub const CRASH_LOOP: &str = "nrl::diagnose::crash_loop";
pub const OOM_KILLED: &str = "nrl::diagnose::oom_killed";
pub const EVICTED: &str = "nrl::diagnose::evicted";
pub const CONTAINER_FAILED: &str = "nrl::diagnose::container_failed";

const fn offline(code: &'static str, severity: Severity, summary: &'static str) -> Rule {
    Rule {
        code,
        severity,
        stage: Stage::Offline,
        preflight: false,
        summary,
    }
}

const fn online(code: &'static str, severity: Severity, summary: &'static str) -> Rule {
    Rule {
        code,
        severity,
        stage: Stage::Preflight,
        preflight: true,
        summary,
    }
}

const fn diagnose(code: &'static str, severity: Severity, summary: &'static str) -> Rule {
    Rule {
        code,
        severity,
        stage: Stage::Diagnose,
        preflight: false,
        summary,
    }
}

use Severity::{Error, Warning};

/// Every code, offline rules first, then preflight, then diagnose
/// (`crate::doctor::diagnose::rules`), in the order the report groups them.
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
        RECIPE_KEY_TYPO,
        Warning,
        "a key a recipe file adds is one edit from a key of its `defaults:` chain (the merge accepts it; the parent's value stays)",
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
    diagnose(
        RAYJOB_NOT_FOUND,
        Error,
        "the run's RayJob (or RayCluster) does not exist in its namespace",
    ),
    diagnose(
        RAYJOB_VALIDATION_FAILED,
        Error,
        "KubeRay refused the RayJob (`ValidationFailed`, which it never leaves), with its message",
    ),
    diagnose(
        RAYJOB_FAILED,
        Error,
        "the RayJob is `Failed` (its reason and message: AppFailed, SubmissionFailed, DeadlineExceeded…)",
    ),
    diagnose(
        RAYJOB_SUSPENDED,
        Warning,
        "the RayJob is `Suspended` (waiting for `suspend: false`, e.g. Kueue admission)",
    ),
    diagnose(
        RAYCLUSTER_NOT_READY,
        Error,
        "the RayCluster is not ready (pods missing, not running or not ready; HeadPodReady says why)",
    ),
    diagnose(
        INSUFFICIENT_RESOURCES,
        Error,
        "pods Pending: `Insufficient nvidia.com/gpu|cpu|memory|…`, with what a pod asks and what the nodes have",
    ),
    diagnose(
        UNTOLERATED_TAINT,
        Error,
        "pods Pending: nodes have taints the pods do not tolerate (named)",
    ),
    diagnose(
        NODE_SELECTOR_MISMATCH,
        Error,
        "pods Pending: their node selector or affinity matches no node",
    ),
    diagnose(
        UNBOUND_PVC,
        Error,
        "pods Pending: a PersistentVolumeClaim they mount is not bound",
    ),
    diagnose(
        DRA_CLAIM_UNALLOCATED,
        Error,
        "pods Pending: a DRA ResourceClaim they use is not allocated",
    ),
    diagnose(
        QUEUE_MISSING,
        Error,
        "pods Pending under kai-scheduler: their queue does not exist",
    ),
    diagnose(
        QUEUE_OVER_QUOTA,
        Error,
        "pods Pending under kai-scheduler: the gang asks more GPUs than the queue's limit",
    ),
    diagnose(
        GANG_WAITING,
        Warning,
        "pods Pending under a gang scheduler: the group waits until all its pods fit at once",
    ),
    diagnose(
        UNSCHEDULABLE,
        Error,
        "pods Pending for another scheduling reason (the scheduler's words are shown)",
    ),
    diagnose(
        IMAGE_PULL,
        Error,
        "ImagePullBackOff / ErrImagePull: the image and the registry's message",
    ),
    diagnose(
        CRASH_LOOP,
        Error,
        "CrashLoopBackOff: the exit code and the last lines of the previous container's log",
    ),
    diagnose(
        OOM_KILLED,
        Error,
        "a container was OOMKilled, with its memory limit",
    ),
    diagnose(
        EVICTED,
        Error,
        "a pod was evicted by its node (the kubelet's message)",
    ),
    diagnose(
        CONTAINER_FAILED,
        Error,
        "a container exited with a non-zero code (or could not be created)",
    ),
    diagnose(
        super::diagnose::driver_log::PYTHON_TRACEBACK,
        Error,
        "the driver log's last Python traceback: the exception and the innermost frame of the user's code",
    ),
    diagnose(
        super::diagnose::driver_log::CUDA_OOM,
        Error,
        "CUDA out of memory (with the allocation asked and the memory free when the message says)",
    ),
    diagnose(
        super::diagnose::driver_log::NCCL_ERROR,
        Error,
        "an NCCL error (unhandled system error, internal error, remote error, NCCL WARN)",
    ),
    diagnose(
        super::diagnose::driver_log::NCCL_TIMEOUT,
        Error,
        "a collective that outlived the NCCL watchdog's timeout",
    ),
    diagnose(
        super::diagnose::driver_log::RAY_OOM_KILLED,
        Error,
        "Ray's memory monitor killed a task or actor because its node ran low on memory",
    ),
    diagnose(
        super::diagnose::driver_log::ACTOR_DIED,
        Error,
        "a Ray actor died (ActorDiedError / RayActorError), with its class, pid and node",
    ),
    diagnose(
        super::diagnose::driver_log::PROGRESS_STALLED,
        Warning,
        "a running job's log has not advanced for longer than the threshold since its last progress line",
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
            let prefix = match r.stage {
                Stage::Diagnose => DIAGNOSE_PREFIX,
                _ => PREFIX,
            };
            assert!(r.code.starts_with(prefix), "{}", r.code);
            assert_eq!(r.preflight, r.stage == Stage::Preflight, "{}", r.code);
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
