//! The one-page summary `nrl check` prints (ref-orchestration §2.3).

use std::fmt::Write as _;

use crate::config::node::{Node, Value};
use crate::config::schema::InfraConfig;

const DASH: &str = "—";

fn limit(container: Option<&Node>, key: &str) -> String {
    container
        .and_then(|c| c.get("resources"))
        .and_then(|r| r.get("limits"))
        .and_then(|l| l.get(key))
        .map(scalar_text)
        .unwrap_or_else(|| DASH.to_string())
}

fn scalar_text(n: &Node) -> String {
    match &n.value {
        Value::Str(s) => s.clone(),
        Value::Null => DASH.to_string(),
        _ => n.to_json().to_string(),
    }
}

fn first_container(group: &Node) -> Option<&Node> {
    group
        .get("template")
        .and_then(|t| t.get("spec"))
        .and_then(|s| s.get("containers"))
        .and_then(Node::as_list)
        .and_then(|l| l.first())
}

fn int_of(n: Option<&Node>) -> i64 {
    match n.map(|n| &n.value) {
        Some(Value::Int(i)) => *i,
        Some(Value::Str(s)) => s.trim().parse().unwrap_or(0),
        Some(Value::Float(f)) => *f as i64,
        _ => 0,
    }
}

fn block(out: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{title}\n{}", "-".repeat(title.chars().count()));
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
}

/// Render the summary; `manifests` is the `check` manifest list (for the DRA, Deployment
/// and Service blocks).
pub fn summary(infra: &InfraConfig, manifests: &[Node]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "namespace:   {}", infra.namespace);
    let _ = writeln!(out, "image:       {}", infra.image);
    if !infra.image_pull_secrets.is_empty() {
        let _ = writeln!(out, "pullSecrets: {}", infra.image_pull_secrets.join(", "));
    }
    if let Some(sa) = &infra.service_account {
        let _ = writeln!(out, "sa:          {sa}");
    }
    let queue = infra
        .scheduler
        .queue
        .as_ref()
        .map(|q| format!(" (queue={q})"))
        .unwrap_or_default();
    let _ = writeln!(out, "scheduler:   {}{queue}", infra.scheduler.kind.as_str());
    let _ = writeln!(out, "launch.mode: {}", infra.launch.mode.as_str());
    if let Some(ep) = infra
        .launch
        .entrypoint
        .as_deref()
        .filter(|e| !e.trim().is_empty())
    {
        let _ = writeln!(out, "entrypoint:");
        for l in trim_blank_lines(ep) {
            let _ = writeln!(out, "  {l}");
        }
    }
    let _ = writeln!(out, "\nKUBERAY\n-------");
    let mut any = false;
    for (role, c) in infra.kuberay.roles() {
        any = true;
        let _ = writeln!(out, "  {}: {}", role.as_str(), c.name);
        let head = c.spec.get("headGroupSpec").and_then(first_container);
        let _ = writeln!(
            out,
            "    head    cpu={} mem={}",
            limit(head, "cpu"),
            limit(head, "memory")
        );
        let groups = c
            .spec
            .get("workerGroupSpecs")
            .and_then(Node::as_list)
            .cloned()
            .unwrap_or_default();
        if groups.is_empty() {
            let _ = writeln!(out, "    workers (none {DASH} head-only)");
        } else {
            let n: i64 = groups.iter().map(|g| int_of(g.get("replicas"))).sum();
            let w = first_container(&groups[0]);
            let gpu = w
                .and_then(|c| c.get("resources"))
                .and_then(|r| r.get("limits"))
                .and_then(|l| l.get("nvidia.com/gpu"))
                .map(|g| (int_of(Some(g)) * n).to_string())
                .unwrap_or_else(|| DASH.to_string());
            let seg = match c.segment_size {
                Some(s) if s > 0 && n > s => format!(" ({} segments x {s})", n / s),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "    workers {n}x{seg} cpu={} mem={} gpu={gpu}",
                limit(w, "cpu"),
                limit(w, "memory")
            );
        }
        match &c.daemon {
            None => {
                let _ = writeln!(out, "    daemon  {DASH}");
            }
            Some(d) => {
                let _ = writeln!(
                    out,
                    "    daemon  {}",
                    d.submission_id.as_deref().unwrap_or("(generated id)")
                );
                let _ = writeln!(out, "    entrypoint:");
                for l in trim_blank_lines(&d.entrypoint) {
                    let _ = writeln!(out, "      {l}");
                }
            }
        }
    }
    if !any {
        let _ = writeln!(out, "  (none declared)");
    }
    let mut deps = Vec::new();
    let mut svcs = Vec::new();
    let mut dra = Vec::new();
    for m in manifests {
        let kind = m.get("kind").and_then(Node::as_str).unwrap_or("");
        let name = m
            .get_path("metadata.name")
            .and_then(Node::as_str)
            .unwrap_or("");
        match kind {
            "Deployment" => {
                let r = m
                    .get_path("spec.replicas")
                    .map(|n| int_of(Some(n)))
                    .unwrap_or(1);
                deps.push(format!("  {name} (replicas={r})"));
            }
            "Service" => {
                let ports = m
                    .get_path("spec.ports")
                    .and_then(Node::as_list)
                    .map(|ps| {
                        ps.iter()
                            .map(|p| {
                                format!(
                                    "{}:{}",
                                    p.get("name").map(scalar_text).unwrap_or_default(),
                                    p.get("port").map(scalar_text).unwrap_or_default()
                                )
                            })
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                svcs.push(format!("  {name} ({ports})"));
            }
            "ComputeDomain" | "ResourceClaimTemplate" => dra.push(format!("  {kind}: {name}")),
            _ => {}
        }
    }
    block(&mut out, "DEPLOYMENTS", &deps);
    block(&mut out, "SERVICES", &svcs);
    block(&mut out, "DRA RESOURCES", &dra);
    out
}

fn trim_blank_lines(s: &str) -> Vec<&str> {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines
        .iter()
        .position(|l| !l.trim().is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .map(|i| i + 1)
        .unwrap_or(start);
    lines[start..end].to_vec()
}
