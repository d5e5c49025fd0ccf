//! RayJob rendering (ref-config-render §4.7) and the RayJob-mode entrypoint preamble.
//!
//! The reference shipped `launch.entrypoint` verbatim, so recipe overrides, `launch.env`
//! and the run id never reached a RayJob's pod. nrl prepends a short preamble that exports
//! the run id and `launch.env`, writes the resolved recipe (base64, as the Gym executor
//! writes its files) into a per-run directory, and points `--config` at it.

use base64::Engine as _;
use indexmap::IndexMap;

use crate::config::node::Node;
use crate::config::schema::{ClusterSpec, InfraConfig, Role};
use crate::diag::{Diag, Result};
use crate::run_id::RunId;

use super::meta::{StrLayer, labels_with_managed_by, map_of, str_at};
use super::raycluster::{cluster_path, object_annotations, raycluster_spec, span_of};

/// How KubeRay gets the Ray job onto the RayJob's cluster (`spec.submissionMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubmissionMode {
    /// The operator submits `spec.entrypoint` once the cluster is ready.
    #[default]
    Http,
    /// The operator waits (`Waiting`) for the user to submit the job and set `spec.jobId`;
    /// nrl uses it to upload a working_dir first.
    Interactive,
}

impl SubmissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SubmissionMode::Http => "HTTPMode",
            SubmissionMode::Interactive => "InteractiveMode",
        }
    }
}

/// RayJob knobs from the command line.
#[derive(Debug, Clone)]
pub struct RayJobOptions {
    /// `--rayjob-name`; defaults to the cluster name.
    pub name: Option<String>,
    /// Where `name` was given (e.g. a source registered for the command-line option), so
    /// a name problem can point at it.
    pub name_span: Option<crate::config::source::Span>,
    pub shutdown_after_finishes: bool,
    pub ttl_seconds_after_finished: i64,
    pub extra_labels: IndexMap<String, String>,
    pub submission_mode: SubmissionMode,
    /// `spec.jobId`: the Ray submission id (nrl uses the run id). `None` lets KubeRay
    /// generate one.
    pub job_id: Option<String>,
}

impl Default for RayJobOptions {
    fn default() -> Self {
        RayJobOptions {
            name: None,
            name_span: None,
            shutdown_after_finishes: true,
            ttl_seconds_after_finished: 3600,
            extra_labels: IndexMap::new(),
            submission_mode: SubmissionMode::Http,
            job_id: None,
        }
    }
}

/// Render a RayJob running `entrypoint` on a fresh cluster built from `cluster`.
pub fn rayjob(
    infra: &InfraConfig,
    cluster: &ClusterSpec,
    role: Role,
    entrypoint: Node,
    opts: &RayJobOptions,
) -> Result<Node> {
    let spec = raycluster_spec(infra, cluster, role)?;
    let src = &infra.source;
    let name = match opts.name.as_deref().filter(|n| !n.is_empty()) {
        Some(n) => str_at(n, opts.name_span),
        None => str_at(
            &cluster.name,
            span_of(src, &format!("{}.name", cluster_path(role))),
        ),
    };
    let labels = labels_with_managed_by(&[
        StrLayer::new(&infra.labels, src.get("labels")),
        StrLayer::new(
            &cluster.labels,
            src.get_path(&cluster_path(role))
                .and_then(|c| c.get("labels")),
        ),
        StrLayer::new(&opts.extra_labels, None),
    ]);
    let mut meta = vec![
        ("name", name),
        (
            "namespace",
            str_at(&infra.namespace, span_of(src, "namespace")),
        ),
        ("labels", Node::from_map(labels)),
    ];
    let ann = object_annotations(infra, cluster, role);
    if !ann.is_empty() {
        meta.push(("annotations", Node::from_map(ann)));
    }
    let mut spec_pairs = vec![("entrypoint", entrypoint)];
    if let Some(id) = opts.job_id.as_deref().filter(|id| !id.is_empty()) {
        spec_pairs.push(("jobId", Node::str(id)));
    }
    spec_pairs.push(("submissionMode", Node::str(opts.submission_mode.as_str())));
    spec_pairs.extend([
        (
            "shutdownAfterJobFinishes",
            Node::bool(opts.shutdown_after_finishes),
        ),
        (
            "ttlSecondsAfterFinished",
            Node::int(opts.ttl_seconds_after_finished),
        ),
        ("rayClusterSpec", spec),
    ]);
    Ok(map_of(vec![
        ("apiVersion", Node::str("ray.io/v1")),
        ("kind", Node::str("RayJob")),
        ("metadata", map_of(meta)),
        ("spec", map_of(spec_pairs)),
    ]))
}

/// What the preamble stages in front of the user's entrypoint.
#[derive(Debug, Clone)]
pub struct Staging<'a> {
    /// Valid by its type: it names the run directory and is exported unquoted.
    pub run_id: &'a RunId,
    /// `launch.env`, exported in order.
    pub env: &'a IndexMap<String, String>,
    /// The recipe to write on the pod (YAML text); `None` stages no recipe.
    pub recipe_yaml: Option<&'a str>,
    /// Directory to `cd` into before the entrypoint (`launch.codePath` when the code is
    /// in the image or on a shared file system).
    pub workdir: Option<&'a str>,
}

/// Directory on the head pod that holds a run's staged files.
pub fn run_dir(run_id: &str) -> String {
    format!("/tmp/nrl-{run_id}")
}

/// Name of the staged recipe inside the run directory.
pub const STAGED_RECIPE: &str = "nrl_run.yaml";

/// Prefix `entrypoint` with the preamble; `--config X.yaml` is pointed at the staged recipe.
pub fn staged_entrypoint(entrypoint: &str, st: &Staging) -> Result<String> {
    let mut out = String::new();
    out.push_str(&format!(
        "# nrl: run {} (preamble generated by nrl)\n",
        st.run_id
    ));
    out.push_str(&env_exports(st.run_id, st.env)?);
    if let Some(dir) = st.workdir.filter(|d| !d.is_empty()) {
        out.push_str(&format!("cd {}\n", shell_quote(dir)));
    }
    let body = match st.recipe_yaml {
        Some(yaml) => {
            let dir = run_dir(st.run_id);
            let b64 = base64::engine::general_purpose::STANDARD.encode(yaml.as_bytes());
            out.push_str(&format!(
                "mkdir -p {dir} && printf '%s' '{b64}' | base64 -d > {dir}/{STAGED_RECIPE}\n"
            ));
            rewrite_config_flag(entrypoint, &format!("{dir}/{STAGED_RECIPE}")).0
        }
        None => entrypoint.to_string(),
    };
    out.push_str(&body);
    Ok(out)
}

/// `export NRL_RUN_ID=…`, `export NRL_K8S_RUN_ID=…`, then one line per `launch.env`
/// entry (a user value of the run-id variables wins, in its position), each ending in a
/// newline. Values are shell-quoted; names are checked.
pub fn env_exports(run_id: &str, env: &IndexMap<String, String>) -> Result<String> {
    let mut exports: Vec<(String, String)> = vec![
        ("NRL_RUN_ID".into(), run_id.into()),
        ("NRL_K8S_RUN_ID".into(), run_id.into()),
    ];
    for (k, v) in env {
        check_env_name(k)?;
        exports.retain(|(ek, _)| ek != k);
        exports.push((k.clone(), v.clone()));
    }
    Ok(exports
        .iter()
        .map(|(k, v)| format!("export {k}={}\n", shell_quote(v)))
        .collect())
}

/// Environment variable names must be valid shell identifiers.
pub fn check_env_name(k: &str) -> Result<()> {
    let mut chars = k.chars();
    let ok = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(
            Diag::new("nrl::run::env_name", format!("invalid env var name `{k}`"))
                .help("names must match [A-Za-z_][A-Za-z0-9_]* (check infra.launch.env)"),
        )
    }
}

/// POSIX shell single-quoting.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Rewrite every `--config <path>.yaml` / `--config=<path>.yml` (optionally quoted) to
/// `new_path`, keeping separator and quotes (ref-orchestration §4.8). Returns the new text
/// and the distinct original paths that changed.
pub fn rewrite_config_flag(text: &str, new_path: &str) -> (String, Vec<String>) {
    const FLAG: &str = "--config";
    let mut out = String::with_capacity(text.len());
    let mut changed = Vec::new();
    let mut rest = text;
    while let Some(pos) = rest.find(FLAG) {
        let (before, from_flag) = rest.split_at(pos);
        out.push_str(before);
        let after = &from_flag[FLAG.len()..];
        match match_config_value(after) {
            Some((sep, quote, path, consumed)) => {
                out.push_str(FLAG);
                out.push_str(sep);
                out.push_str(quote);
                out.push_str(new_path);
                out.push_str(quote);
                if path != new_path && !changed.iter().any(|c: &String| c == path) {
                    changed.push(path.to_string());
                }
                rest = &after[consumed..];
            }
            None => {
                out.push_str(FLAG);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (out, changed)
}

/// After `--config`: separator (whitespace run or `=`), optional quote, a path without
/// whitespace/quotes ending in .yaml/.yml, the same quote. Returns the pieces and the
/// number of bytes consumed.
fn match_config_value(s: &str) -> Option<(&str, &str, &str, usize)> {
    let sep_len = if s.starts_with('=') {
        1
    } else {
        s.len() - s.trim_start().len()
    };
    if sep_len == 0 {
        return None;
    }
    let sep = &s[..sep_len];
    let rest = &s[sep_len..];
    let quote = match rest.chars().next() {
        Some(q @ ('\'' | '"')) => &rest[..q.len_utf8()],
        _ => "",
    };
    let body = &rest[quote.len()..];
    let end = body
        .find(|c: char| c.is_whitespace() || c == '\'' || c == '"')
        .unwrap_or(body.len());
    let path = &body[..end];
    if !(path.ends_with(".yaml") || path.ends_with(".yml")) || path.len() <= 4 {
        return None;
    }
    if !quote.is_empty() && !body[end..].starts_with(quote) {
        return None;
    }
    Some((sep, quote, path, sep_len + quote.len() * 2 + end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_rewrite_forms() {
        let (t, c) = rewrite_config_flag("python x.py --config a/b.yaml k=1", "/r.yaml");
        assert_eq!(t, "python x.py --config /r.yaml k=1");
        assert_eq!(c, ["a/b.yaml"]);
        let (t, _) = rewrite_config_flag("--config=a.yml", "/r.yaml");
        assert_eq!(t, "--config=/r.yaml");
        let (t, _) = rewrite_config_flag("--config \"a b.yaml\"", "/r.yaml");
        assert_eq!(
            t, "--config \"a b.yaml\"",
            "a quoted path with a space does not match"
        );
        let (t, _) = rewrite_config_flag("--config 'a.yaml' --config-name x.yaml", "/r.yaml");
        assert_eq!(t, "--config '/r.yaml' --config-name x.yaml");
        let (t, _) = rewrite_config_flag("--config \\\n  a.yaml", "/r.yaml");
        assert_eq!(
            t, "--config \\\n  a.yaml",
            "a line continuation is not whitespace-only"
        );
        let (t, c) = rewrite_config_flag("--config\n  a.yaml --config b.yaml", "/r.yaml");
        assert_eq!(t, "--config\n  /r.yaml --config /r.yaml");
        assert_eq!(c.len(), 2);
        let (t, c) = rewrite_config_flag("echo no flag", "/r.yaml");
        assert_eq!(t, "echo no flag");
        assert!(c.is_empty());
    }

    #[test]
    fn preamble_exports_and_stages() {
        let mut env = IndexMap::new();
        env.insert("WANDB_PROJECT".to_string(), "my proj".to_string());
        let st = Staging {
            run_id: &RunId::parse("r-1").unwrap(),
            env: &env,
            recipe_yaml: Some("policy:\n  x: 1\n"),
            workdir: Some("/opt/nemo rl"),
        };
        let e = staged_entrypoint("cd /x\npython run.py --config a.yaml", &st).unwrap();
        assert!(e.contains("export NRL_RUN_ID=r-1\n"));
        assert!(e.contains("export WANDB_PROJECT='my proj'\n"));
        assert!(e.contains("base64 -d > /tmp/nrl-r-1/nrl_run.yaml\n"));
        assert!(e.contains("\ncd '/opt/nemo rl'\n"), "{e}");
        assert!(e.ends_with("python run.py --config /tmp/nrl-r-1/nrl_run.yaml"));
        let bad = IndexMap::from([("1X".to_string(), "v".to_string())]);
        let st = Staging {
            run_id: &RunId::parse("r-1").unwrap(),
            env: &bad,
            recipe_yaml: None,
            workdir: None,
        };
        assert_eq!(
            staged_entrypoint("x", &st).unwrap_err().code,
            "nrl::run::env_name"
        );
    }

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("abc"), "abc");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
