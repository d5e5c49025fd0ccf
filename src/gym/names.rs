//! Kubernetes names for a Gym run (ref-nemo-gym-k8s §2.2), with the reference's
//! truncation bug fixed (§7 #7): a name cut to fit ends in a short hash of what was cut,
//! so two long benchmark names with a common prefix still get distinct Jobs.

use sha1::{Digest, Sha1};

use crate::diag::{Diag, Result};

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

/// `gym-<run>-<benchmark>`, at most 63 characters (the reference's `job_name`).
pub fn job_name(run_id: &str, benchmark: &str) -> String {
    let full = format!("gym-{}-{}", dns_label(run_id), label_value(benchmark));
    fit(&full, MAX_LABEL, benchmark)
}

/// The run's Secret holding its secret env values.
pub fn secret_name(run_id: &str) -> String {
    format!("gym-{}-env", dns_label(run_id))
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

/// A new run id: `gym-job-<UTC %Y%m%dT%H%M%SZ>-<6 hex>`, the reference's `gym_job_id`.
pub fn new_run_id(now: jiff::Timestamp) -> String {
    let stamp = now.strftime("%Y%m%dT%H%M%SZ");
    format!("gym-job-{stamp}-{:06x}", fastrand::u32(..0x100_0000))
}

/// A run id given with `--run-id`: it names a directory on the PVC and, lower-cased, the
/// run's label value.
pub fn check_run_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= MAX_LABEL
        && id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        && !dns_label(id).is_empty();
    if ok {
        return Ok(());
    }
    Err(Diag::new("nrl::gym::run_id", format!("invalid run id `{id}`")).help(
        "run ids start with a letter or digit and use letters, digits, `.`, `_` and `-` (at most 63), e.g. `gym-job-20260901T120000Z-a1b2c3`",
    ))
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

    // ref §5.1 test 2
    #[test]
    fn job_name_joins_run_and_benchmark() {
        assert_eq!(
            job_name("gym-job-20260101T000000Z-abcdef", "gpqa_diamond"),
            "gym-gym-job-20260101t000000z-abcdef-gpqa-diamond"
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
        assert!(id.starts_with("gym-job-20260901T120000Z-"), "{id}");
        assert_eq!(id.len(), 31);
        check_run_id(&id).unwrap();
        for bad in ["", "-x", "a b", "___", &"a".repeat(64)] {
            assert!(check_run_id(bad).is_err(), "{bad}");
        }
        assert_eq!(
            run_selector(&id),
            format!("gym-job-id={}", id.to_lowercase())
        );
        assert_eq!(secret_name("R1"), "gym-r1-env");
    }
}
