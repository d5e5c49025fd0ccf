//! The scheduler's `FailedScheduling` text (a FitError) as structured reasons, and what
//! the nodes say about them (allocatable resources, taints, labels).
//!
//! Formats (kuberay-and-apiserver-semantics §6, from `scheduler/framework/types.go`
//! `FitError.Error` and `tainttoleration/taint_toleration.go`):
//! `0/<N> nodes are available: <count> <reason>, <count> <reason>. preemption: …`, the
//! histogram sorted as strings; a PreFilter message (no counts) instead of the histogram;
//! taints as `node(s) had untolerated taint {key: value}` (older releases), `node(s) had
//! untolerated taint(s)` (newest), or `node(s) had taint {key: value}, that the pod didn't
//! tolerate` (oldest); `no new claims to deallocate,` before `preemption:`; trailing dots
//! vary (`..`).

use serde_json::Value as Json;

/// What one histogram entry (or the PreFilter message) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReasonKind {
    /// `Insufficient <resource>`
    Insufficient(String),
    /// An untolerated taint; `key`/`value` when the message names it.
    Taint {
        key: Option<String>,
        value: Option<String>,
    },
    /// `node(s) didn't match Pod's node affinity/selector` (and similar).
    NodeAffinity,
    /// `pod has unbound immediate PersistentVolumeClaims`, volume node affinity conflicts.
    Volume,
    /// A DRA claim cannot be allocated (`cannot allocate all claims`, …).
    Claim,
    /// `node(s) were unschedulable` (cordoned).
    Cordoned,
    Other,
}

/// One reason, with how many nodes gave it (`None` for a PreFilter message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub nodes: Option<u64>,
    pub kind: ReasonKind,
    /// The reason as the scheduler wrote it.
    pub text: String,
}

/// A parsed FitError.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FitError {
    /// `N` of `0/N nodes are available`.
    pub total_nodes: Option<u64>,
    pub reasons: Vec<Reason>,
    /// What the preemption (PostFilter) part said, if anything.
    pub preemption: Option<String>,
}

fn classify(text: &str) -> ReasonKind {
    let lower = text.to_ascii_lowercase();
    if let Some(r) = text.strip_prefix("Insufficient ") {
        return ReasonKind::Insufficient(r.trim().to_string());
    }
    if lower.contains("taint") {
        let named = text
            .split_once('{')
            .and_then(|(_, rest)| rest.split_once('}'))
            .map(|(inner, _)| inner);
        let (key, value) = match named {
            Some(inner) => match inner.split_once(':') {
                Some((k, v)) => (
                    Some(k.trim().to_string()),
                    Some(v.trim().to_string()).filter(|v| !v.is_empty()),
                ),
                None => (Some(inner.trim().to_string()), None),
            },
            None => (None, None),
        };
        return ReasonKind::Taint { key, value };
    }
    if lower.contains("node affinity/selector")
        || lower.contains("node selector")
        || lower.contains("didn't match pod's node affinity")
        || lower.contains("didn't match node selector")
    {
        return ReasonKind::NodeAffinity;
    }
    if lower.contains("persistentvolumeclaim") || lower.contains("volume node affinity") {
        return ReasonKind::Volume;
    }
    if lower.contains("claim") {
        return ReasonKind::Claim;
    }
    if lower.contains("were unschedulable") {
        return ReasonKind::Cordoned;
    }
    ReasonKind::Other
}

/// A count at the start of an entry: `4 Insufficient cpu` → (4, `Insufficient cpu`).
fn counted(entry: &str) -> Option<(u64, &str)> {
    let (n, rest) = entry.split_once(' ')?;
    Some((n.parse().ok()?, rest.trim()))
}

fn trim_end(s: &str) -> &str {
    s.trim_end_matches(|c: char| c == '.' || c == ',' || c.is_whitespace())
}

/// Parse a FailedScheduling message; `None` when it is not a FitError (other schedulers
/// write their own words).
pub fn parse(message: &str) -> Option<FitError> {
    const AVAILABLE: &str = " nodes are available:";
    let message = message.trim();
    let at = message.find(AVAILABLE)?;
    let total = message[..at]
        .rsplit('/')
        .next()
        .and_then(|n| n.trim().parse().ok());
    let rest = &message[at + AVAILABLE.len()..];
    let (main, preemption) = match rest.find("preemption:") {
        Some(i) => (
            &rest[..i],
            Some(trim_end(rest[i + "preemption:".len()..].trim())),
        ),
        None => (rest, None),
    };
    let mut main = trim_end(main.trim());
    // Newer releases put the DRA deallocation note between the filter and preemption parts.
    for note in ["no new claims to deallocate"] {
        if let Some(m) = main.strip_suffix(note) {
            main = trim_end(m);
        }
    }
    let mut reasons: Vec<Reason> = Vec::new();
    for entry in main.split(", ") {
        let entry = entry.trim();
        if entry.is_empty() {
            continue;
        }
        match counted(entry) {
            Some((n, text)) => {
                let text = trim_end(text).to_string();
                reasons.push(Reason {
                    nodes: Some(n),
                    kind: classify(&text),
                    text,
                });
            }
            // A comma inside a reason (`…{k: v}, that the pod didn't tolerate`).
            None if reasons.last().is_some_and(|r| r.nodes.is_some()) => {
                if let Some(last) = reasons.last_mut() {
                    last.text = format!("{}, {}", last.text, trim_end(entry));
                }
            }
            None => {
                let text = trim_end(entry).to_string();
                reasons.push(Reason {
                    nodes: None,
                    kind: classify(&text),
                    text,
                });
            }
        }
    }
    Some(FitError {
        total_nodes: total,
        reasons,
        preemption: preemption.filter(|p| !p.is_empty()).map(str::to_string),
    })
}

/// A quantity in base units: `8` → 8.0, `500m` → 0.5, `64Gi` → 64·2³⁰, `1e3` → 1000.
pub fn quantity(q: &str) -> Option<f64> {
    let q = q.trim();
    const SUFFIXES: &[(&str, f64)] = &[
        ("Ki", 1024.0),
        ("Mi", 1048576.0),
        ("Gi", 1073741824.0),
        ("Ti", 1099511627776.0),
        ("Pi", 1125899906842624.0),
        ("Ei", 1152921504606846976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
    ];
    for (s, f) in SUFFIXES {
        if let Some(n) = q.strip_suffix(s) {
            return n.parse::<f64>().ok().map(|v| v * f);
        }
    }
    q.parse().ok()
}

fn json_quantity(v: &Json) -> Option<f64> {
    match v {
        Json::String(s) => quantity(s),
        Json::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// `64Gi`, `8`, `0.5` for a resource amount in base units.
pub fn show_quantity(resource: &str, v: f64) -> String {
    if resource == "memory" || resource.ends_with("storage") {
        let gib = v / 1073741824.0;
        if gib >= 1.0 {
            return format!("{}Gi", trim_float(gib));
        }
        return format!("{}Mi", trim_float(v / 1048576.0));
    }
    trim_float(v)
}

fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{:.2}", v)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// What one pod asks of `resource`: the containers' requests (limits for extended
/// resources without a request, which Kubernetes copies into the request), summed.
pub fn pod_request(pod: &Json, resource: &str) -> Option<f64> {
    let containers = pod.pointer("/spec/containers")?.as_array()?;
    let mut total = 0.0;
    let mut any = false;
    for c in containers {
        let res = c.get("resources");
        let v = res
            .and_then(|r| r.get("requests"))
            .and_then(|r| r.get(resource))
            .or_else(|| {
                res.and_then(|r| r.get("limits"))
                    .and_then(|r| r.get(resource))
            })
            .and_then(json_quantity);
        if let Some(v) = v {
            total += v;
            any = true;
        }
    }
    any.then_some(total)
}

/// A node as scheduling cares about it.
#[derive(Debug, Clone)]
pub struct NodeView {
    pub name: String,
    pub labels: serde_json::Map<String, Json>,
    pub allocatable: serde_json::Map<String, Json>,
    /// (key, value, effect) of the NoSchedule / NoExecute taints.
    pub taints: Vec<(String, String, String)>,
    pub cordoned: bool,
}

impl NodeView {
    pub fn of(node: &Json) -> NodeView {
        let obj = |p: &str| {
            node.pointer(p)
                .and_then(Json::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let taints = node
            .pointer("/spec/taints")
            .and_then(Json::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|t| {
                        let s = |k: &str| t.get(k).and_then(Json::as_str).unwrap_or("").to_string();
                        let effect = s("effect");
                        matches!(effect.as_str(), "NoSchedule" | "NoExecute")
                            .then(|| (s("key"), s("value"), effect))
                    })
                    .collect()
            })
            .unwrap_or_default();
        NodeView {
            name: node
                .pointer("/metadata/name")
                .and_then(Json::as_str)
                .unwrap_or("?")
                .to_string(),
            labels: obj("/metadata/labels"),
            allocatable: crate::k8s::status::node_allocatable(node),
            taints,
            cordoned: node.pointer("/spec/unschedulable").and_then(Json::as_bool) == Some(true),
        }
    }

    pub fn allocatable(&self, resource: &str) -> f64 {
        self.allocatable
            .get(resource)
            .and_then(json_quantity)
            .unwrap_or(0.0)
    }
}

/// Whether the pod's tolerations tolerate a taint (core/v1 `Toleration.ToleratesTaint`:
/// an empty key with `Exists` tolerates everything; `Exists` ignores the value; an empty
/// effect matches every effect).
pub fn tolerates(pod: &Json, key: &str, value: &str, effect: &str) -> bool {
    let Some(list) = pod.pointer("/spec/tolerations").and_then(Json::as_array) else {
        return false;
    };
    list.iter().any(|t| {
        let s = |k: &str| t.get(k).and_then(Json::as_str).unwrap_or("");
        let exists = s("operator") == "Exists";
        let key_ok = (s("key").is_empty() && exists) || s("key") == key;
        let value_ok = exists || s("value") == value;
        let effect_ok = s("effect").is_empty() || s("effect") == effect;
        key_ok && value_ok && effect_ok
    })
}

/// The node taints (`key=value:effect`, each once) the pod does not tolerate.
pub fn untolerated(pod: &Json, nodes: &[NodeView]) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for n in nodes {
        for (k, v, e) in &n.taints {
            if tolerates(pod, k, v, e) {
                continue;
            }
            let name = if v.is_empty() {
                format!("{k}:{e}")
            } else {
                format!("{k}={v}:{e}")
            };
            match out.iter_mut().find(|(t, _)| *t == name) {
                Some((_, c)) => *c += 1,
                None => out.push((name, 1)),
            }
        }
    }
    out
}

/// The pod's `nodeSelector` pairs that no node has.
pub fn unmatched_selector(pod: &Json, nodes: &[NodeView]) -> Vec<String> {
    let Some(sel) = pod.pointer("/spec/nodeSelector").and_then(Json::as_object) else {
        return Vec::new();
    };
    sel.iter()
        .filter(|(k, v)| !nodes.iter().any(|n| n.labels.get(*k) == Some(*v)))
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kinds(f: &FitError) -> Vec<(Option<u64>, ReasonKind)> {
        f.reasons
            .iter()
            .map(|r| (r.nodes, r.kind.clone()))
            .collect()
    }

    #[test]
    fn the_older_named_taint_form() {
        let f = parse("0/12 nodes are available: 4 Insufficient nvidia.com/gpu, 8 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/12 nodes are available: 12 No preemption victims found for incoming pod.").unwrap();
        assert_eq!(f.total_nodes, Some(12));
        assert_eq!(
            kinds(&f),
            [
                (Some(4), ReasonKind::Insufficient("nvidia.com/gpu".into())),
                (
                    Some(8),
                    ReasonKind::Taint {
                        key: Some("nvidia.com/gpu".into()),
                        value: Some("present".into())
                    }
                )
            ]
        );
        assert_eq!(
            f.preemption.as_deref(),
            Some("0/12 nodes are available: 12 No preemption victims found for incoming pod")
        );
    }

    #[test]
    fn the_newest_unnamed_taint_form_with_the_claims_note() {
        let f = parse("0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu. no new claims to deallocate, preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.").unwrap();
        assert_eq!(
            kinds(&f),
            [
                (
                    Some(1),
                    ReasonKind::Taint {
                        key: None,
                        value: None
                    }
                ),
                (Some(3), ReasonKind::Insufficient("cpu".into())),
            ]
        );
        assert!(f.preemption.unwrap().starts_with("0/4 nodes"));
    }

    #[test]
    fn double_dots_the_oldest_taint_form_and_prefilter_messages() {
        let f = parse("0/3 nodes are available: 3 Insufficient memory..").unwrap();
        assert_eq!(
            kinds(&f),
            [(Some(3), ReasonKind::Insufficient("memory".into()))]
        );
        let f = parse("0/2 nodes are available: 1 node(s) had taint {node-role.kubernetes.io/master: }, that the pod didn't tolerate, 1 node(s) didn't match Pod's node affinity/selector.").unwrap();
        assert_eq!(
            kinds(&f),
            [
                (
                    Some(1),
                    ReasonKind::Taint {
                        key: Some("node-role.kubernetes.io/master".into()),
                        value: None
                    }
                ),
                (Some(1), ReasonKind::NodeAffinity),
            ]
        );
        assert!(f.reasons[0].text.ends_with("that the pod didn't tolerate"));
        let f = parse("0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling..").unwrap();
        assert_eq!(kinds(&f), [(None, ReasonKind::Volume)]);
        let f = parse("0/8 nodes are available: 8 cannot allocate all claims. no new claims to deallocate, preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling.").unwrap();
        assert_eq!(kinds(&f), [(Some(8), ReasonKind::Claim)]);
        assert_eq!(parse("pod group is not ready, 3/4 members scheduled"), None);
    }

    #[test]
    fn quantities_and_requests() {
        assert_eq!(quantity("500m"), Some(0.5));
        assert_eq!(quantity("64Gi"), Some(64.0 * 1073741824.0));
        assert_eq!(quantity("8"), Some(8.0));
        assert_eq!(show_quantity("memory", 64.0 * 1073741824.0), "64Gi");
        assert_eq!(show_quantity("cpu", 0.5), "0.5");
        let pod = json!({"spec": {"containers": [
            {"resources": {"limits": {"nvidia.com/gpu": 8}, "requests": {"cpu": "16"}}},
            {"resources": {"requests": {"cpu": "500m"}}}]}});
        assert_eq!(pod_request(&pod, "nvidia.com/gpu"), Some(8.0));
        assert_eq!(pod_request(&pod, "cpu"), Some(16.5));
        assert_eq!(pod_request(&pod, "memory"), None);
    }

    #[test]
    fn tolerations_and_taints() {
        let pod = json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}],
            "nodeSelector": {"pool": "gpu"}}});
        let node = NodeView::of(
            &json!({"metadata": {"name": "n1", "labels": {"pool": "cpu"}},
            "spec": {"taints": [{"key": "a", "value": "x", "effect": "NoSchedule"},
                                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                                {"key": "soft", "effect": "PreferNoSchedule"}]}}),
        );
        assert_eq!(
            untolerated(&pod, std::slice::from_ref(&node)),
            [("nvidia.com/gpu=present:NoSchedule".to_string(), 1)]
        );
        assert_eq!(unmatched_selector(&pod, &[node]), ["pool=gpu"]);
        assert!(tolerates(
            &json!({"spec": {"tolerations": [{"operator": "Exists"}]}}),
            "k",
            "v",
            "NoExecute"
        ));
    }
}
