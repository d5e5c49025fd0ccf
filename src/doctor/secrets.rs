//! Secrets written literally into env values. They end up in the RayCluster/RayJob object
//! (readable by anyone who can read the namespace's objects) and in the RayJob entrypoint;
//! a Secret referenced through `secretKeyRef` or `envFrom` does not.

use regex::Regex;
use std::sync::OnceLock;

use super::pods::pods;
use super::rules::LITERAL_SECRET;
use super::text::mask;
use super::{Ctx, Finding};
use crate::config::node::Node;
use crate::config::source::Span;

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    for p in pods(ctx.manifests) {
        for c in p.containers() {
            let cname = c.get("name").and_then(Node::as_str).unwrap_or("?");
            for e in c.get("env").and_then(Node::as_list).into_iter().flatten() {
                let Some(name) = e.get("name").and_then(Node::as_str) else {
                    continue;
                };
                let Some(v) = e.get("value") else { continue };
                let Some(value) = v.as_str() else { continue };
                let span = v.best_span().or(e.best_span());
                let place = format!("container `{cname}` of {} {}", p.desc, p.place);
                if let Some(f) = finding(name, value, span, &place) {
                    out.push(f);
                }
            }
        }
    }
    let src = &ctx.cfg.infra.source;
    for (k, v) in &ctx.cfg.infra.launch.env {
        let span = src
            .get_path("launch.env")
            .and_then(|m| m.get(k))
            .and_then(Node::best_span);
        if let Some(f) = finding(k, v, span, "infra.launch.env (exported by the entrypoint)") {
            out.push(f);
        }
    }
    for (role, cluster) in ctx.cfg.infra.kuberay.roles() {
        let Some(d) = &cluster.daemon else { continue };
        let path = format!("kuberay.{role}.daemon.env");
        for (k, v) in &d.env {
            let span = src
                .get_path(&path)
                .and_then(|m| m.get(k))
                .and_then(Node::best_span);
            if let Some(f) = finding(k, v, span, &format!("infra.{path}")) {
                out.push(f);
            }
        }
    }
}

fn finding(name: &str, value: &str, span: Option<Span>, place: &str) -> Option<Finding> {
    let why = if secret_name(name) && literal(value) {
        format!("`{name}` looks like a secret")
    } else if let Some(kind) = token_kind(value) {
        format!("the value of `{name}` looks like {kind}")
    } else {
        return None;
    };
    Some(
        Finding::new(
            LITERAL_SECRET,
            format!(
                "{why} and is written literally ({}) in {place}",
                mask(value)
            ),
        )
        .at(span, "literal secret")
        .fix(format!(
            "store it in a Secret (`kubectl create secret generic NAME --from-literal={name}=…`) and use `valueFrom.secretKeyRef` or `envFrom: [{{secretRef: {{name: NAME}}}}]` instead"
        )),
    )
}

/// Names that hold credentials by convention.
fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    const EXACT: &[&str] = &["PASSWORD", "TOKEN", "SECRET", "API_KEY", "HF_TOKEN"];
    const SUFFIXES: &[&str] = &[
        "_API_KEY",
        "_TOKEN",
        "_SECRET",
        "_SECRET_KEY",
        "_PASSWORD",
        "_ACCESS_KEY",
    ];
    EXACT.contains(&n.as_str()) || SUFFIXES.iter().any(|s| n.ends_with(s))
}

/// A value written out, not an empty placeholder or a `$(VAR)` reference to another
/// variable.
fn literal(value: &str) -> bool {
    let v = value.trim();
    let reference = v.starts_with("${") || (v.starts_with("$(") && v.ends_with(')'));
    !v.is_empty() && !reference
}

/// Well-known token shapes (by prefix), or a long opaque string of letters and digits.
fn token_kind(value: &str) -> Option<&'static str> {
    static KNOWN: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    let known = KNOWN.get_or_init(|| {
        [
            (r"^hf_[A-Za-z0-9]{30,}$", "a Hugging Face token"),
            (r"^(ghp|gho|ghs|ghu)_[A-Za-z0-9]{30,}$", "a GitHub token"),
            (r"^github_pat_[A-Za-z0-9_]{40,}$", "a GitHub token"),
            (r"^glpat-[A-Za-z0-9_\-]{20,}$", "a GitLab token"),
            (r"^nvapi-[A-Za-z0-9_\-]{30,}$", "an NVIDIA API key"),
            (r"^sk-[A-Za-z0-9_\-]{20,}$", "an API key"),
            (r"^xox[abprs]-[A-Za-z0-9\-]{10,}$", "a Slack token"),
            (r"^AKIA[0-9A-Z]{16}$", "an AWS access key"),
            (
                r"^[0-9a-f]{40}$",
                "a 40-hex-digit API key (W&B keys look like this)",
            ),
        ]
        .into_iter()
        .map(|(re, what)| (Regex::new(re).expect("static regex"), what))
        .collect()
    });
    let v = value.trim();
    if let Some((_, what)) = known.iter().find(|(re, _)| re.is_match(v)) {
        return Some(what);
    }
    let opaque = v.len() >= 32
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-+=".contains(c))
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_uppercase())
        && v.chars().any(|c| c.is_ascii_lowercase());
    opaque.then_some("a token")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values() {
        for n in [
            "HF_TOKEN",
            "WANDB_API_KEY",
            "PASSWORD",
            "db_password",
            "AWS_SECRET",
        ] {
            assert!(secret_name(n), "{n}");
        }
        for n in ["HF_HOME", "NCCL_DEBUG", "TOKENIZERS_PARALLELISM"] {
            assert!(!secret_name(n), "{n}");
        }
        assert!(!literal(""));
        assert!(!literal("$(OTHER)"));
        assert!(literal("hunter2"));
        assert!(token_kind("hf_abcdefghijklmnopqrstuvwxyz0123456789").is_some());
        assert!(token_kind("0123456789abcdef0123456789abcdef01234567").is_some());
        assert!(token_kind("aB3dE5gH7jK9mN1pQ3sT5vW7xY9zA1cD").is_some());
        for v in [
            "/mnt/rl-workspace/alice/hf-cache",
            "WARN",
            "expandable_segments:False",
            "nvcr.io/nvidian/nemo-rl:664d29c-49528955",
        ] {
            assert!(token_kind(v).is_none(), "{v}");
        }
    }
}
