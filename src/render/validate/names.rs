//! Name checks the schemas cannot express: object names, namespaces, label keys and
//! values, annotation keys, and KubeRay's length limits.

use crate::config::node::{Node, Value};
use crate::config::source::Span;
use crate::diag::Diag;

pub(super) const CODE: &str = "nrl::render::name";

/// KubeRay (`ray-operator/controllers/ray/utils/constant.go`): a RayCluster name leaves
/// room for the longest Service suffix, `-serve-svc` (63 - 10).
pub const MAX_RAYCLUSTER_NAME: usize = 53;
/// KubeRay: a RayJob's cluster is named `<rayjob>-<5 random>` (53 - 6).
pub const MAX_RAYJOB_NAME: usize = 47;
/// Total size of an object's annotations (keys and values), as the API server limits it.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// What kind of name `metadata.name` must be for a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameRule {
    /// RFC 1123 subdomain: lower-case alphanumerics, `-` and `.`, at most 253.
    Subdomain,
    /// RFC 1123 label: lower-case alphanumerics and `-`, at most `max`.
    Label { max: usize, why: &'static str },
    /// RFC 1035 label: an RFC 1123 label that starts with a letter, at most `max`.
    Dns1035 { max: usize, why: &'static str },
}

fn name_rule(kind: &str) -> NameRule {
    match kind {
        "RayCluster" => NameRule::Dns1035 {
            max: MAX_RAYCLUSTER_NAME,
            why: "KubeRay names the cluster's Services after it (`<name>-head-svc`, \
                  `<name>-serve-svc`), and Service names are DNS-1035 labels of at most 63 \
                  characters; KubeRay refuses longer RayCluster names",
        },
        "RayJob" => NameRule::Dns1035 {
            max: MAX_RAYJOB_NAME,
            why: "KubeRay derives other names from it: the RayCluster `<name>-xxxxx` (6 more \
                  characters) and that cluster's Services (`-serve-svc`, 10 more), which must \
                  fit in 63; KubeRay refuses longer RayJob names",
        },
        "Service" => NameRule::Dns1035 {
            max: 63,
            why: "a Service name becomes a DNS label",
        },
        "Job" => NameRule::Label {
            max: 63,
            why: "Kubernetes copies a Job's name into the `job-name` label of its pods, and \
                  label values are at most 63 characters",
        },
        _ => NameRule::Subdomain,
    }
}

pub(super) fn check(obj: &Node, object: &str) -> Vec<Diag> {
    let mut out = Vec::new();
    let kind = obj.get("kind").and_then(Node::as_str).unwrap_or("");
    let meta = obj.get("metadata");
    match meta.and_then(|m| m.get("name")) {
        Some(name) => {
            if let Some(s) = name.as_str() {
                check_object_name(kind, s, name, object, &mut out);
            }
        }
        None => {
            let generated = meta.and_then(|m| m.get("generateName")).is_some();
            if !generated {
                let span = meta.and_then(|m| m.key_span.or(m.span)).or(obj.span);
                out.push(
                    Diag::new(CODE, format!("{object}: metadata.name is missing"))
                        .label(span, "no `name` here")
                        .help("give the object a name under `metadata:`"),
                );
            }
        }
    }
    if let Some(ns) = meta.and_then(|m| m.get("namespace"))
        && let Some(s) = ns.as_str()
        && let Some(problem) = label_problem(s, 63, false)
    {
        out.push(
            Diag::new(CODE, format!("{object}: namespace {s:?} {problem}"))
                .label(ns.span.or(ns.key_span), "invalid namespace")
                .help(
                    "namespaces are DNS-1123 labels: lower-case letters, digits and `-`, at \
                     most 63 characters",
                ),
        );
    }
    let mut walker = Walker {
        object,
        out: &mut out,
    };
    walker.visit(obj, None, kind == "Service", 0);
    out
}

fn check_object_name(kind: &str, name: &str, node: &Node, object: &str, out: &mut Vec<Diag>) {
    let rule = name_rule(kind);
    let (problem, help) = match rule {
        NameRule::Subdomain => (
            subdomain_problem(name),
            "names are DNS-1123 subdomains: lower-case letters, digits, `-` and `.`, starting and \
             ending with a letter or digit, at most 253 characters"
                .to_string(),
        ),
        NameRule::Label { max, why } => (
            label_problem(name, max, false),
            format!("use lower-case letters, digits and `-`, at most {max} characters: {why}"),
        ),
        NameRule::Dns1035 { max, why } => (
            label_problem(name, max, true),
            format!(
                "use lower-case letters, digits and `-`, starting with a letter, at most {max} \
                 characters: {why}"
            ),
        ),
    };
    if let Some(problem) = problem {
        let suggestion = match rule {
            NameRule::Subdomain => sanitize(name, 253, false),
            NameRule::Label { max, .. } => sanitize(name, max, false),
            NameRule::Dns1035 { max, .. } => sanitize(name, max, true),
        };
        let help = match suggestion {
            Some(s) if s != name => format!("{help}; e.g. `{s}`"),
            _ => help,
        };
        out.push(
            Diag::new(CODE, format!("{object}: name {name:?} {problem}"))
                .label(node.span.or(node.key_span), format!("invalid {kind} name"))
                .help(help),
        );
    }
}

/// Why `s` is not a DNS label (RFC 1123, or RFC 1035 when `letter_first`), if it is not.
fn label_problem(s: &str, max: usize, letter_first: bool) -> Option<String> {
    let len = s.chars().count();
    if len == 0 {
        return Some("is empty".into());
    }
    if len > max {
        return Some(format!("is {len} characters long, at most {max} allowed"));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        return Some(format!("contains {}", describe_char(c)));
    }
    if letter_first && !s.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Some("must start with a lower-case letter".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        return Some("must start and end with a letter or digit".into());
    }
    None
}

fn subdomain_problem(s: &str) -> Option<String> {
    let len = s.chars().count();
    if len > 253 {
        return Some(format!("is {len} characters long, at most 253 allowed"));
    }
    if len == 0 {
        return Some("is empty".into());
    }
    for part in s.split('.') {
        if part.is_empty() {
            return Some("has an empty part between dots".into());
        }
        if let Some(p) = label_problem(part, usize::MAX, false) {
            return Some(p);
        }
    }
    None
}

/// A valid name close to `s` (lower-cased, other characters turned into `-`, trimmed to
/// `max`), when one exists.
fn sanitize(s: &str, max: usize, letter_first: bool) -> Option<String> {
    let mut out: String = s
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_lowercase() || c.is_ascii_digit() || (c == '.' && max > 63) {
                c
            } else {
                '-'
            }
        })
        .collect();
    if letter_first {
        out = out
            .trim_start_matches(|c: char| !c.is_ascii_lowercase())
            .to_string();
    }
    out.truncate(max);
    let out = out.trim_matches(['-', '.']).to_string();
    (!out.is_empty()).then_some(out)
}

fn describe_char(c: char) -> String {
    match c {
        ' ' => "a space".into(),
        c if c.is_ascii_uppercase() => format!("an upper-case letter (`{c}`)"),
        c => format!("`{c}`"),
    }
}

/// Why `key` is not a valid label or annotation key: `[prefix/]name`, the prefix a DNS
/// subdomain, the name at most 63 of `[A-Za-z0-9_.-]` with alphanumeric ends.
pub(super) fn key_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && let Some(problem) = subdomain_problem(p)
    {
        return Some(format!("has a prefix `{p}` that {problem}"));
    }
    if name.is_empty() {
        return Some("has an empty name part".into());
    }
    value_problem(name).map(|p| match prefix {
        Some(_) => format!("has a name part `{name}` that {p}"),
        None => p,
    })
}

/// Why `v` is not a valid label value: at most 63 of `[A-Za-z0-9_.-]`, alphanumeric at both
/// ends, or empty.
pub(super) fn value_problem(v: &str) -> Option<String> {
    let len = v.chars().count();
    if len > 63 {
        return Some(format!("is {len} characters long, at most 63 allowed"));
    }
    if let Some(c) = v
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Some(format!("contains {}", describe_char(c)));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if len > 0 && !(alnum(v.chars().next()) && alnum(v.chars().last())) {
        return Some("must start and end with a letter or digit".into());
    }
    None
}

struct Walker<'o> {
    object: &'o str,
    out: &'o mut Vec<Diag>,
}

impl Walker<'_> {
    /// Find every label map in the object: `metadata.labels` (at any depth: pod templates
    /// carry their own), `matchLabels`, `nodeSelector`, and a Service's `spec.selector`.
    fn visit(&mut self, node: &Node, key: Option<&str>, is_service: bool, depth: usize) {
        match &node.value {
            Value::Map(map) => {
                if key == Some("metadata") {
                    if let Some(labels) = map.get("labels") {
                        self.labels(labels, "label");
                    }
                    if let Some(ann) = map.get("annotations") {
                        self.annotations(ann);
                    }
                }
                for (k, child) in map {
                    match k.as_str() {
                        "matchLabels" => self.labels(child, "label selector"),
                        "nodeSelector" if child.as_map().is_some() => {
                            self.labels(child, "node selector")
                        }
                        "selector" if is_service && depth == 1 => {
                            self.labels(child, "Service selector")
                        }
                        _ => self.visit(child, Some(k), is_service, depth + 1),
                    }
                }
            }
            Value::List(items) => {
                for item in items {
                    self.visit(item, None, is_service, depth + 1);
                }
            }
            _ => {}
        }
    }

    fn labels(&mut self, node: &Node, what: &str) {
        let Some(map) = node.as_map() else { return };
        for (k, v) in map {
            if let Some(problem) = key_problem(k) {
                self.key_error(k, v.key_span.or(v.span), &problem, what);
            }
            let Some(value) = v.as_str() else { continue };
            if let Some(problem) = value_problem(value) {
                let suggestion = sanitize_value(value);
                let mut help = "label values are at most 63 letters, digits, `-`, `_` or `.`, \
                                starting and ending with a letter or digit (or empty)"
                    .to_string();
                if let Some(s) = suggestion.filter(|s| s != value) {
                    help.push_str(&format!("; e.g. `{s}`"));
                }
                self.out.push(
                    Diag::new(
                        CODE,
                        format!(
                            "{}: {what} value {value:?} (key `{k}`) {problem}",
                            self.object
                        ),
                    )
                    .label(v.span.or(v.key_span), format!("invalid {what} value"))
                    .help(help),
                );
            }
        }
    }

    fn annotations(&mut self, node: &Node) {
        let Some(map) = node.as_map() else { return };
        let mut total = 0usize;
        for (k, v) in map {
            total += k.len() + v.as_str().map(str::len).unwrap_or(0);
            if let Some(problem) = key_problem(k) {
                self.key_error(k, v.key_span.or(v.span), &problem, "annotation");
            }
        }
        if total > MAX_ANNOTATIONS_BYTES {
            self.out.push(
                Diag::new(
                    CODE,
                    format!(
                        "{}: annotations take {total} bytes, at most {MAX_ANNOTATIONS_BYTES} allowed",
                        self.object
                    ),
                )
                .label(node.key_span.or(node.span), "too large")
                .help("move large values into a ConfigMap"),
            );
        }
    }

    fn key_error(&mut self, key: &str, span: Option<Span>, problem: &str, what: &str) {
        self.out.push(
            Diag::new(
                CODE,
                format!("{}: {what} key `{key}` {problem}", self.object),
            )
            .label(span, format!("invalid {what} key"))
            .help(
                "keys are `name` or `prefix/name`: the name at most 63 letters, digits, `-`, \
                     `_` or `.` starting and ending with a letter or digit; the prefix a DNS \
                     subdomain such as `example.com`",
            ),
        );
    }
}

fn sanitize_value(v: &str) -> Option<String> {
    let mut s: String = v
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    s.truncate(63);
    let s = s
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string();
    (!s.is_empty()).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels() {
        assert_eq!(label_problem("alice-run-1", 63, true), None);
        assert!(
            label_problem("1abc", 63, true)
                .unwrap()
                .contains("start with")
        );
        assert_eq!(label_problem("1abc", 63, false), None);
        assert!(
            label_problem("Abc", 63, false)
                .unwrap()
                .contains("upper-case")
        );
        assert!(
            label_problem("abc-", 63, false)
                .unwrap()
                .contains("end with")
        );
        assert!(
            label_problem(&"a".repeat(48), 47, true)
                .unwrap()
                .contains("48 characters")
        );
        assert!(label_problem("", 63, false).is_some());
    }

    #[test]
    fn subdomains() {
        assert_eq!(subdomain_problem("compute-domain.alice"), None);
        assert!(subdomain_problem("a..b").is_some());
        assert!(subdomain_problem("a_b").unwrap().contains("`_`"));
    }

    #[test]
    fn label_keys_and_values() {
        assert_eq!(key_problem("app.kubernetes.io/managed-by"), None);
        assert_eq!(key_problem("nrl-k8s/owner"), None);
        assert_eq!(key_problem("Team_Name.x"), None);
        assert!(key_problem("a/b/c").is_some());
        assert!(key_problem("Example.com/x").unwrap().contains("prefix"));
        assert!(key_problem(&"k".repeat(64)).is_some());
        assert!(key_problem("/x").is_some());
        assert_eq!(value_problem(""), None);
        assert_eq!(value_problem("v1.2_beta-3"), None);
        assert!(value_problem("a b").unwrap().contains("a space"));
        assert!(value_problem("-a").is_some());
        assert!(value_problem(&"v".repeat(64)).is_some());
    }

    #[test]
    fn sanitised_suggestions() {
        assert_eq!(
            sanitize("Alice_Run", 63, true).as_deref(),
            Some("alice-run")
        );
        assert_eq!(sanitize("9lives", 63, true).as_deref(), Some("lives"));
        assert_eq!(sanitize_value("a b").as_deref(), Some("a-b"));
    }
}
