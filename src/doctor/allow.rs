//! Silencing findings.
//!
//! In a recipe, infra or user-defaults file (the YAML loader drops comments, so the
//! source text is scanned):
//!
//! ```yaml
//! gpus_per_node: 8   # nrl: allow gpu_mismatch        <- this line
//! # nrl: allow no_tolerations, kai_queue_label          <- the next non-comment line
//! workerGroupSpecs:
//! # nrl: allow-file literal_secret  test cluster only   <- every line of this file
//! ```
//!
//! Codes are full (`nrl::doctor::gpu_mismatch`) or short (`gpu_mismatch`), separated by
//! commas; whatever follows the last code after a space is a free-form reason. A finding
//! is silenced when any line it labels is covered. The comment may also be a shell
//! comment inside a block scalar (an entrypoint line). Unknown codes are reported
//! (`nrl::doctor::unknown_allow`).
//!
//! In user defaults (`~/.config/nrl/defaults.yaml`, `$NRL_DEFAULTS`, and the nrl-k8s
//! compatible paths), next to `infra:`:
//!
//! ```yaml
//! doctor:
//!   allow: [no_tolerations]
//! ```
//!
//! silences a code everywhere.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::rules::{ALLOW_CONFIG, UNKNOWN_ALLOW, rule};
use super::{Finding, Severity};
use crate::config::defaults::load_with_defaults;
use crate::config::layers::{InfraSource, LoadedConfig, user_defaults_paths};
use crate::config::node::Node;
use crate::config::source::{SourceKind, Span, SrcId, source};
use crate::config::suggest::did_you_mean;

/// What a directive covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// One 1-based line.
    Line(u32),
    File,
}

#[derive(Debug, Clone)]
struct Directive {
    src: SrcId,
    scope: Scope,
    codes: Vec<&'static str>,
    at: Span,
}

/// Why a finding was not reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedBy {
    /// `# nrl: allow` at `path:line:col`.
    Comment(String),
    /// `doctor.allow` in this user-defaults file.
    UserDefaults(PathBuf),
}

impl std::fmt::Display for AllowedBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllowedBy::Comment(loc) => write!(f, "allow comment at {loc}"),
            AllowedBy::UserDefaults(p) => write!(f, "doctor.allow in {}", p.display()),
        }
    }
}

/// Every allow that applies to one loaded pair.
#[derive(Debug, Clone, Default)]
pub struct Allows {
    directives: Vec<Directive>,
    user: Vec<(&'static str, PathBuf)>,
    /// Unknown codes and malformed `doctor:` sections, reported with the findings.
    pub problems: Vec<Finding>,
}

impl Allows {
    /// Scan the pair's recipe, infra and user-defaults files and read `doctor.allow`.
    pub fn collect(cfg: &LoadedConfig) -> Allows {
        let mut a = Allows::default();
        let mut trees: Vec<&Node> = cfg.layers.recipe_files.iter().map(|f| &f.tree).collect();
        if let InfraSource::File(files) = &cfg.layers.infra {
            trees.extend(files.iter().map(|f| &f.tree));
        }
        trees.extend(cfg.layers.user.iter().map(|f| &f.tree));
        let mut seen = BTreeSet::new();
        for t in trees {
            if let Some(src) = first_src(t)
                && seen.insert(src)
            {
                a.scan(src);
            }
        }
        for path in user_defaults_paths(cfg.env.as_ref()) {
            if path.is_file() {
                a.read_user_defaults(path);
            }
        }
        a
    }

    /// Directives of one source text (public for tests and scripts).
    pub fn scan(&mut self, src: SrcId) {
        let file = source(src);
        let text = file.text.clone();
        // Most files carry no directive: skip the line walk unless `nrl:` occurs at all.
        if !text.contains("nrl:") {
            return;
        }
        let mut offset = 0usize;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        for (i, line) in lines.iter().enumerate() {
            let start = offset;
            offset += line.len();
            let Some((hash, file_wide, body_at)) = directive_in(line) else {
                continue;
            };
            let own_line = line[..hash].trim().is_empty();
            let scope = if file_wide {
                Scope::File
            } else if own_line {
                match next_content_line(&lines, i) {
                    Some(n) => Scope::Line(n),
                    None => continue,
                }
            } else {
                Scope::Line(i as u32 + 1)
            };
            let body = line[body_at..].trim_end();
            let mut codes = Vec::new();
            for (code, at) in split_codes(body) {
                let span = Span::new(src, start + body_at + at, start + body_at + at + code.len());
                match rule(code) {
                    Some(r) => codes.push(r.code),
                    None => self.problems.push(unknown(code, Some(span))),
                }
            }
            self.directives.push(Directive {
                src,
                scope,
                codes,
                at: Span::new(src, start + hash, start + line.trim_end().len()),
            });
        }
    }

    fn read_user_defaults(&mut self, path: PathBuf) {
        // The config loader read this file already and reported any YAML problem.
        let Ok(inh) = load_with_defaults(&path, SourceKind::User, &|n, _| Ok(n)) else {
            return;
        };
        let Some(doctor) = inh.merged.get("doctor") else {
            return;
        };
        let bad = |what: String, n: &Node| {
            Finding::new(ALLOW_CONFIG, what)
                .at(n.best_span(), "here")
                .fix("write `doctor: {allow: [CODE, …]}` with codes from `nrl doctor --rules`")
        };
        let Some(map) = doctor.as_map() else {
            self.problems.push(bad(
                format!("`doctor` must be a mapping, not {}", doctor.type_name()),
                doctor,
            ));
            return;
        };
        for (k, v) in map {
            if k != "allow" {
                self.problems.push(bad(
                    format!("unknown key `doctor.{k}` (only `allow` is known)"),
                    v,
                ));
                continue;
            }
            let Some(items) = v.as_list() else {
                self.problems.push(bad(
                    format!(
                        "`doctor.allow` must be a list of codes, not {}",
                        v.type_name()
                    ),
                    v,
                ));
                continue;
            };
            for item in items {
                match item.as_str() {
                    Some(code) => match rule(code.trim()) {
                        Some(r) => self.user.push((r.code, path.clone())),
                        None => self.problems.push(unknown(code.trim(), item.best_span())),
                    },
                    None => self.problems.push(bad(
                        format!(
                            "`doctor.allow` items must be codes, not {}",
                            item.type_name()
                        ),
                        item,
                    )),
                }
            }
        }
    }

    /// Why `f` is silenced, if it is.
    pub fn allowed(&self, f: &Finding) -> Option<AllowedBy> {
        if let Some((_, path)) = self.user.iter().find(|(c, _)| *c == f.code) {
            return Some(AllowedBy::UserDefaults(path.clone()));
        }
        for span in f.spans() {
            let line = span.line_col().0;
            let hit = self.directives.iter().find(|d| {
                d.src == span.src
                    && d.codes.contains(&f.code.as_ref())
                    && match d.scope {
                        Scope::File => true,
                        Scope::Line(l) => l == line,
                    }
            });
            if let Some(d) = hit {
                return Some(AllowedBy::Comment(d.at.location()));
            }
        }
        None
    }
}

fn unknown(code: &str, span: Option<Span>) -> Finding {
    let short = code.strip_prefix(super::rules::PREFIX).unwrap_or(code);
    let fix = match did_you_mean(short, super::RULES.iter().map(|r| r.short())) {
        Some(best) => format!("did you mean `{best}`? (`nrl doctor --rules` lists every code)"),
        None => "`nrl doctor --rules` lists every code".to_string(),
    };
    Finding::new(
        UNKNOWN_ALLOW,
        format!("`{code}` is not an nrl doctor code; nothing is silenced by it"),
    )
    .with_severity(Severity::Warning)
    .at(span, "unknown code")
    .fix(fix)
}

/// `# nrl: allow` or `# nrl: allow-file` in a line: the `#` offset, whether it is
/// file-wide, and where the code list starts.
fn directive_in(line: &str) -> Option<(usize, bool, usize)> {
    let mut from = 0;
    while let Some(i) = line[from..].find('#') {
        let hash = from + i;
        let before_ok = hash == 0 || line[..hash].ends_with([' ', '\t']);
        let rest = &line[hash + 1..];
        let trimmed = rest.trim_start();
        if before_ok && let Some(after) = trimmed.strip_prefix("nrl:") {
            let after_t = after.trim_start();
            let (file_wide, tail) = if let Some(t) = after_t.strip_prefix("allow-file") {
                (true, t)
            } else if let Some(t) = after_t.strip_prefix("allow") {
                (false, t)
            } else {
                return None;
            };
            if !tail.starts_with([' ', '\t']) {
                return None;
            }
            let body_at = line.len() - tail.len();
            return Some((hash, file_wide, body_at));
        }
        from = hash + 1;
    }
    None
}

/// Codes of a directive body with their byte offsets: comma-separated; after the last
/// code, a space starts the reason.
fn split_codes(body: &str) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        let rest = &body[pos..];
        let lead = rest.len() - rest.trim_start().len();
        let item_start = pos + lead;
        let item = &body[item_start..];
        let end = item
            .find(|c: char| c == ',' || c.is_whitespace())
            .unwrap_or(item.len());
        if end == 0 {
            break;
        }
        out.push((&item[..end], item_start));
        let after = &item[end..];
        let after_t = after.trim_start();
        match after_t.strip_prefix(',') {
            Some(next) => pos = body.len() - next.len(),
            None => break,
        }
    }
    out
}

/// 1-based number of the first line after `i` that is neither blank nor only a comment.
fn next_content_line(lines: &[&str], i: usize) -> Option<u32> {
    lines
        .iter()
        .enumerate()
        .skip(i + 1)
        .find(|(_, l)| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        })
        .map(|(n, _)| n as u32 + 1)
}

/// The source a loaded file's tree came from.
fn first_src(n: &Node) -> Option<SrcId> {
    if let Some(s) = n.span.or(n.key_span) {
        return Some(s.src);
    }
    match &n.value {
        crate::config::node::Value::Map(m) => m.values().find_map(first_src),
        crate::config::node::Value::List(l) => l.iter().find_map(first_src),
        _ => None,
    }
}

/// The user defaults' `doctor:` section as a JSON Schema: `allow` lists codes, full or
/// short, each described by its rule's summary.
pub fn doctor_section_schema() -> serde_json::Value {
    let codes: Vec<serde_json::Value> = super::rules::RULES
        .iter()
        .flat_map(|r| {
            [r.code, r.short()]
                .map(|code| serde_json::json!({ "const": code, "description": r.summary }))
        })
        .collect();
    serde_json::json!({
        "type": "object",
        "description": "Settings of `nrl doctor`.",
        "properties": {
            "allow": {
                "description": "Codes silenced everywhere (`nrl doctor --rules` lists them).",
                "type": "array",
                "items": { "anyOf": codes },
            },
        },
        "additionalProperties": false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::add_source;

    #[test]
    fn parses_directives() {
        assert_eq!(directive_in("a: 1  # nrl: allow x"), Some((6, false, 18)));
        assert_eq!(
            directive_in("# nrl: allow-file x, y").map(|d| d.1),
            Some(true)
        );
        assert!(directive_in("a: '#nrl: allow x'").is_none());
        assert!(directive_in("# nrl: allowed x").is_none());
        assert!(directive_in("# nrl: something").is_none());
        let codes: Vec<_> = split_codes(" a, nrl::doctor::b ,c reason here")
            .into_iter()
            .map(|c| c.0)
            .collect();
        assert_eq!(codes, ["a", "nrl::doctor::b", "c"]);
        let codes: Vec<_> = split_codes(" a b").into_iter().map(|c| c.0).collect();
        assert_eq!(codes, ["a"]);
    }

    #[test]
    fn scopes_and_unknown_codes() {
        let text = "a: 1 # nrl: allow gpu_mismatch\n# nrl: allow no_tolerations, gpu_mismatchh\n\n# other\nb: 2\nc: 3\n# nrl: allow-file literal_secret why\n";
        let id = add_source("allow.yaml", None, text, SourceKind::Text);
        let mut a = Allows::default();
        a.scan(id);
        let at = |line: usize, code: &'static str| {
            let start = text
                .split_inclusive('\n')
                .take(line - 1)
                .map(str::len)
                .sum::<usize>();
            Finding::new(code, "x").at(Some(Span::new(id, start, start + 1)), "")
        };
        assert!(
            a.allowed(&at(1, super::super::rules::GPU_MISMATCH))
                .is_some()
        );
        assert!(
            a.allowed(&at(5, super::super::rules::NO_TOLERATIONS))
                .is_some()
        );
        assert!(
            a.allowed(&at(6, super::super::rules::NO_TOLERATIONS))
                .is_none()
        );
        assert!(
            a.allowed(&at(6, super::super::rules::LITERAL_SECRET))
                .is_some()
        );
        assert!(
            a.allowed(&at(5, super::super::rules::GPU_MISMATCH))
                .is_none()
        );
        assert_eq!(a.problems.len(), 1);
        assert_eq!(a.problems[0].code, UNKNOWN_ALLOW);
        assert!(
            a.problems[0].fix.contains("gpu_mismatch"),
            "{}",
            a.problems[0].fix
        );
        assert_eq!(
            a.allowed(&at(1, super::super::rules::GPU_MISMATCH)),
            Some(AllowedBy::Comment("allow.yaml:1:6".into()))
        );
    }
}
