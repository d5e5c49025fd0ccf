//! Kubernetes names for a Gym run (ref-nemo-gym-k8s §2.2), with the reference's
//! truncation bug fixed (§7 #7): a name cut to fit ends in a short hash of what was cut,
//! so two long benchmark names with a common prefix still get distinct Jobs.
//!
//! Deliberate differences from the reference (issue 19 point 6): run ids follow nrl's one
//! rule ([`RunId::parse`], as `nrl run --run-id`; generated as `gym-<UTC timestamp>-<4
//! random>`), and objects are named `<run id>-<benchmark>` / `<run id>-env` without the
//! reference's extra `gym-` (its ids already start with `gym-job-`, so its Jobs read
//! `gym-gym-job-…`). The labels keep the reference's keys and values, so either tool
//! still finds the other's Jobs.

use sha1::{Digest, Sha1};

use crate::diag::Result;
use crate::run_id::RunId;

/// Longest label value / Job name.
pub const MAX_LABEL: usize = 63;

pub const MANAGED_BY_KEY: &str = "app.kubernetes.io/managed-by";
/// The reference's value, kept so either tool finds the other's Jobs.
pub const MANAGED_BY: &str = "nemo-gym";
pub const RUN_LABEL: &str = "gym-job-id";
pub const BENCHMARK_LABEL: &str = "gym-benchmark";

/// The reference's `_dns_label`: lower-case, anything outside `[a-z0-9-]` becomes `-`,
/// `-` stripped from both ends; then cut to 63 (re-stripped, unlike the reference).
pub fn dns_label(x: &str) -> String {
    let mapped: String = x
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = mapped.trim_matches('-');
    let cut: String = trimmed.chars().take(MAX_LABEL).collect();
    cut.trim_end_matches('-').to_string()
}

/// Six hex characters identifying `s`.
fn short_hash(s: &str) -> String {
    let digest = Sha1::digest(s.as_bytes());
    digest[..3].iter().map(|b| format!("{b:02x}")).collect()
}

/// `label` cut to `max` characters; a cut name ends in `-<hash of original>`.
fn fit(label: &str, max: usize, original: &str) -> String {
    if label.len() <= max {
        return label.trim_end_matches('-').to_string();
    }
    let hash = short_hash(original);
    let keep: String = label.chars().take(max - hash.len() - 1).collect();
    format!("{}-{hash}", keep.trim_end_matches('-'))
}

/// A label value for `x` (at most 63 characters).
pub fn label_value(x: &str) -> String {
    let mapped: String = x
        .chars()
        .flat_map(char::to_lowercase)
        .map(|c| {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    fit(mapped.trim_matches('-'), MAX_LABEL, x)
}

/// `<run>-<benchmark>`, at most 63 characters (a cut name ends in a hash).
pub fn job_name(run_id: &str, benchmark: &str) -> String {
    let full = format!("{}-{}", dns_label(run_id), label_value(benchmark));
    fit(&full, MAX_LABEL, benchmark)
}

/// The run's Secret holding its secret env values: `<run>-env`.
pub fn secret_name(run_id: &str) -> String {
    format!("{}-env", dns_label(run_id))
}

/// The label selector of every object of a run.
pub fn run_selector(run_id: &str) -> String {
    format!("{RUN_LABEL}={}", dns_label(run_id))
}

/// The label selector of one benchmark's Job and pods.
pub fn benchmark_selector(run_id: &str, benchmark: &str) -> String {
    format!(
        "{},{BENCHMARK_LABEL}={}",
        run_selector(run_id),
        label_value(benchmark)
    )
}

/// A new run id, made like every nrl run id: `gym-<UTC yyyymmdd-hhmmss>-<4 random>`.
pub fn new_run_id(now: jiff::Timestamp) -> String {
    crate::run_id::generate_at(std::path::Path::new("gym"), now, &mut fastrand::Rng::new())
}

/// A run id given by the user (`--run-id`, a script's `run_id`, the RUN of `status`,
/// `logs`, `cancel`): the rule of `nrl run --run-id` ([`RunId::parse`], error
/// `nrl::run::run_id`, exit 2).
pub fn parse_run_id(id: &str) -> Result<RunId> {
    RunId::parse(id).map_err(|e| {
        let lower = id.to_ascii_lowercase();
        if lower != id && RunId::parse(&lower).is_ok() {
            // The reference's own ids (`gym-job-20260901T120000Z-…`) have capitals; its
            // Jobs are labelled with the lower-cased id, which nrl finds.
            e.note(format!(
                "a run submitted by NeMo Gym's own tool is found by its lower-cased id: `{lower}`"
            ))
        } else {
            e
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // ref §5.1 test 1
    #[test]
    fn dns_label_sanitises() {
        assert_eq!(dns_label("vllm_model"), "vllm-model");
        assert_eq!(dns_label("tau2.airline"), "tau2-airline");
        assert_eq!(dns_label("GPQA"), "gpqa");
        assert_eq!(dns_label("___"), "");
    }

    // ref §5.1 test 2, without the reference's stutter (`gym-gym-job-…`, issue 19 point 6).
    #[test]
    fn job_name_joins_run_and_benchmark() {
        assert_eq!(
            job_name("gym-job-20260101t000000z-abcdef", "gpqa_diamond"),
            "gym-job-20260101t000000z-abcdef-gpqa-diamond"
        );
        assert_eq!(
            job_name("gym-20260101-000000-ab12", "gpqa"),
            "gym-20260101-000000-ab12-gpqa"
        );
        assert_eq!(
            secret_name("gym-20260101-000000-ab12"),
            "gym-20260101-000000-ab12-env"
        );
    }

    // ref §7 #7: long names with a common prefix stay distinct, never end in `-`.
    #[test]
    fn truncated_names_stay_distinct() {
        let run = "gym-job-20260101T000000Z-abcdef";
        let a = job_name(run, "a_very_long_benchmark_name_shared_prefix_one");
        let b = job_name(run, "a_very_long_benchmark_name_shared_prefix_two");
        assert_ne!(a, b);
        for n in [&a, &b] {
            assert!(n.len() <= 63, "{n}");
            assert!(!n.ends_with('-'), "{n}");
        }
        assert_eq!(a.len(), 63);
        let cut = dns_label(&"x-".repeat(40));
        assert!(!cut.ends_with('-') && cut.len() <= 63, "{cut}");
        let long = label_value(&"b".repeat(80));
        assert_eq!(long.len(), 63);
        assert_ne!(long, label_value(&"b".repeat(81)));
    }

    #[test]
    fn run_ids() {
        let ts: jiff::Timestamp = "2026-09-01T12:00:00Z".parse().unwrap();
        let id = new_run_id(ts);
        assert!(id.starts_with("gym-20260901-120000-"), "{id}");
        assert_eq!(id.len(), 24);
        parse_run_id(&id).unwrap();
        assert_eq!(run_selector(&id), format!("gym-job-id={id}"));
        assert_eq!(secret_name("r1"), "r1-env");
    }

    /// The rule of `nrl run --run-id`: `Bad_ID` is refused, not turned into `bad-id`.
    #[test]
    fn user_run_ids_follow_the_one_rule() {
        for bad in ["", "-x", "a b", "___", "Bad_ID", "run.1", &"a".repeat(41)] {
            let e = parse_run_id(bad).unwrap_err();
            assert_eq!(e.code, crate::run_id::CODE_RUN_ID, "{bad}");
            assert_eq!(e.exit, crate::diag::Exit::Input, "{bad}");
        }
        let e = parse_run_id("gym-job-20260901T120000Z-a1b2c3").unwrap_err();
        assert!(
            e.notes
                .iter()
                .any(|n| n.contains("`gym-job-20260901t120000z-a1b2c3`")),
            "{:?}",
            e.notes
        );
        assert!(parse_run_id("Bad_ID").unwrap_err().notes.is_empty());
    }
}
