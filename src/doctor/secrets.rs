//! Secrets written literally into env values. They end up in the RayCluster/RayJob object
//! (readable by anyone who can read the namespace's objects) and in the RayJob entrypoint;
//! a Secret referenced through `secretKeyRef` or `envFrom` does not.

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
        .place(place)
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
/// Plain string checks: this runs in every `nrl check`, where compiling regexes would
/// cost more than the rest of the doctor.
fn token_kind(value: &str) -> Option<&'static str> {
    let v = value.trim();
    let tail_ok = |prefix: &str, min: usize, extra: &str| {
        v.strip_prefix(prefix).is_some_and(|t| {
            t.len() >= min
                && t.chars()
                    .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
        })
    };
    const KNOWN: &[(&str, usize, &str, &str)] = &[
        ("hf_", 30, "", "a Hugging Face token"),
        ("ghp_", 30, "", "a GitHub token"),
        ("gho_", 30, "", "a GitHub token"),
        ("ghs_", 30, "", "a GitHub token"),
        ("ghu_", 30, "", "a GitHub token"),
        ("github_pat_", 40, "_", "a GitHub token"),
        ("glpat-", 20, "_-", "a GitLab token"),
        ("nvapi-", 30, "_-", "an NVIDIA API key"),
        ("sk-", 20, "_-", "an API key"),
        ("xoxa-", 10, "-", "a Slack token"),
        ("xoxb-", 10, "-", "a Slack token"),
        ("xoxp-", 10, "-", "a Slack token"),
        ("xoxr-", 10, "-", "a Slack token"),
        ("xoxs-", 10, "-", "a Slack token"),
    ];
    if let Some((_, _, _, what)) = KNOWN
        .iter()
        .find(|(prefix, min, extra, _)| tail_ok(prefix, *min, extra))
    {
        return Some(what);
    }
    let aws = v.len() == 20
        && v.starts_with("AKIA")
        && v[4..]
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    if aws {
        return Some("an AWS access key");
    }
    if v.len() == 40
        && v.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    {
        return Some("a 40-hex-digit API key (W&B keys look like this)");
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
        assert_eq!(
            token_kind("AKIAABCDEFGHIJKLMNOP"),
            Some("an AWS access key")
        );
        assert_eq!(
            token_kind("nvapi-abcdefghijklmnopqrstuvwxyz0123"),
            Some("an NVIDIA API key")
        );
        assert!(token_kind("hf_short").is_none());
        assert!(token_kind("sk-with spaces in it and more text").is_none());
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
