//! Diagnostics for interpolation failures: stable codes, a label at the exact
//! `${…}` inside the value when it can be found in the source, and a help line.

use super::ast::{Interp, SyntaxError};
use super::eval::{Active, Site};
use super::walk::{Frame, Miss, join, path_of};
use crate::config::node::Node;
use crate::config::source::Span;
use crate::diag::Diag;

/// A malformed `${…}` (also a string `oc.decode` cannot parse).
pub const SYNTAX: &str = "nrl::interp::syntax";
/// A key that does not exist, or a path through a non-container or above the root.
pub const MISSING_KEY: &str = "nrl::interp::missing_key";
/// An interpolation that points at (or through) `???`.
pub const MISSING_VALUE: &str = "nrl::interp::missing_value";
/// Values that depend on themselves (also a runaway chain).
pub const CYCLE: &str = "nrl::interp::cycle";
/// An unknown resolver, or one that failed (unset variable, bad arguments).
pub const RESOLVER: &str = "nrl::interp::resolver";
/// A nested interpolation used as a key or resolver name that is not a string.
pub const TYPE: &str = "nrl::interp::type";

/// Resolvers nrl provides, listed in "unknown resolver" errors.
pub const KNOWN_RESOLVERS: &[&str] = &[
    "user",
    "oc.env",
    "oc.select",
    "oc.decode",
    "oc.create",
    "oc.deprecated",
    "oc.dict.keys",
    "oc.dict.values",
    "mul",
    "div",
    "max",
    "add",
    "sub",
];

/// How evaluation failed: with a diagnostic, or because a node it needed already
/// failed and was reported (so the same root cause is not reported twice).
#[derive(Debug)]
pub(crate) enum Fail {
    Diag(Box<Diag>),
    Reported,
}

pub(crate) type R<T> = Result<T, Fail>;

impl From<Diag> for Fail {
    fn from(d: Diag) -> Fail {
        Fail::Diag(Box::new(d))
    }
}

/// Narrow `span` (the whole YAML value) to where `value[start..end]` (its first line)
/// appears in the source, counting earlier occurrences so repeats are told apart;
/// block scalars then point at the right line. `None` when it cannot be found.
fn narrow(span: Option<Span>, value: &str, start: usize, end: usize) -> Option<Span> {
    let span = span?;
    let needle = value
        .get(start..end)?
        .lines()
        .next()
        .filter(|n| !n.is_empty())?;
    let nth = value.match_indices(needle).position(|(i, _)| i == start)?;
    let (pos, _) = span.text().match_indices(needle).nth(nth)?;
    let from = span.start as usize + pos;
    Some(Span::new(span.src, from, from + needle.len()))
}

/// The span of an interpolation inside the site's value.
fn site_span(site: Site<'_, '_>, interp: &Interp) -> Option<Span> {
    narrow(site.span(), site.text, interp.start, interp.end).or(site.span())
}

pub(crate) fn interp_text<'t>(site: Site<'t, '_>, interp: &Interp) -> &'t str {
    site.text.get(interp.start..interp.end).unwrap_or(site.text)
}

fn is_shell_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Does the text after `${` read like a shell parameter expansion: an upper-case
/// name (`LOG_DIR}`), or any name followed by an expansion operator (`tmp:-x}`)?
fn looks_like_shell(after_open: &str) -> bool {
    let name_len = after_open
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(after_open.len());
    let (name, rest) = after_open.split_at(name_len);
    if !is_shell_name(name) {
        return false;
    }
    let upper = !name.chars().any(|c| c.is_ascii_lowercase());
    let operator = [":-", ":=", ":+", ":?", "#", "%", "/", "^", ","]
        .iter()
        .any(|op| rest.starts_with(op));
    upper || operator
}

fn shell_help(raw: &str) -> String {
    format!("if `{raw}` is a shell variable, escape it as `\\{raw}`")
}

fn located(site: Site<'_, '_>) -> String {
    match site.span() {
        Some(s) => format!("`{}` ({})", site.path(), s.location()),
        None => format!("`{}`", site.path()),
    }
}

/// A malformed `${…}`, reported with the span of the value that holds it.
pub(crate) fn syntax(span: Option<Span>, text: &str, e: &SyntaxError) -> Diag {
    let open = e.open.unwrap_or(e.at.min(text.len()));
    // The shell-style expansion the user probably meant: `${` up to its `}` or line end.
    let tail = text.get(open..).unwrap_or("");
    let close = tail
        .find('}')
        .map_or_else(|| tail.find('\n').unwrap_or(tail.len()), |i| i + 1);
    let raw = tail.get(..close).unwrap_or(tail);
    let label = narrow(span, text, open, open + raw.len()).or(span);
    let shellish = raw
        .strip_prefix("${")
        .is_some_and(|r| looks_like_shell(r.trim_start()));
    let help = if shellish {
        shell_help(raw)
    } else {
        "interpolations look like `${a.b}`, `${.sibling}` or `${resolver:arg}`; write `\\${` for a literal `${`"
            .to_string()
    };
    // The label repeats the gist; the reason in parentheses stays in the title.
    let gist = e.message.split(" (").next().unwrap_or(&e.message);
    Diag::new(SYNTAX, format!("malformed interpolation: {}", e.message))
        .label(label, gist.to_string())
        .help(help)
}

pub(crate) struct KeyReport<'k> {
    pub relative: bool,
    pub written: &'k str,
    pub base: &'k str,
    pub keys: &'k [String],
}

pub(crate) fn missing_key(
    site: Site<'_, '_>,
    interp: &Interp,
    r: &KeyReport<'_>,
    miss: Miss,
) -> Fail {
    let absolute = join(r.base, r.keys);
    let key_desc = if r.relative {
        format!("'{}' (absolute '{}')", r.written, absolute)
    } else {
        format!("'{absolute}'")
    };
    let raw = interp_text(site, interp);
    let prefix = |at: usize| join(r.base, r.keys.get(..at).unwrap_or(r.keys));
    let key_at = |at: usize| r.keys.get(at).cloned().unwrap_or_default();
    let general = "absolute keys start at the root of this config (in an infra file: no `infra.` \
                   prefix); `${.key}` is a sibling, `${..key}` a key of the parent";
    let (code, message, label, help, target) = match miss {
        Miss::NotFound { at, candidates } => {
            let key = key_at(at);
            let mut help = Vec::new();
            if let Some(best) = did_you_mean(&key, &candidates) {
                help.push(format!("did you mean `{}`?", join(&prefix(at), &[best])));
            }
            let single = !r.relative && r.keys.len() == 1;
            if single && KNOWN_RESOLVERS.contains(&key.as_str()) {
                help.push(format!("`{key}` is a resolver: call it as `${{{key}:}}`"));
            } else if single && looks_like_shell(&key) {
                help.push(shell_help(raw));
            }
            if help.is_empty() {
                help.push(general.to_string());
            }
            let place = if at == 0 && r.base.is_empty() {
                "the root".to_string()
            } else {
                format!("`{}`", prefix(at))
            };
            (
                MISSING_KEY,
                format!("Interpolation key {key_desc} not found"),
                format!("`{key}` is not a key of {place}"),
                help.join("; "),
                None,
            )
        }
        Miss::NotContainer { at, what, span } => (
            MISSING_KEY,
            format!(
                "Interpolation key {key_desc} not found: `{}` is {what}, not a mapping or list",
                prefix(at)
            ),
            format!("`{}` has no key `{}`", prefix(at), key_at(at)),
            format!(
                "`{}` must be a mapping here; check the path, or whether an override replaced it",
                prefix(at)
            ),
            span,
        ),
        Miss::BadIndex { at } => (
            MISSING_KEY,
            format!(
                "Interpolation key {key_desc} not found: `{}` is a list and `{}` is not an index",
                prefix(at),
                key_at(at)
            ),
            "not a list index".to_string(),
            format!(
                "index lists with a number: `${{{}.0}}` or `${{{}[0]}}`",
                prefix(at),
                prefix(at)
            ),
            None,
        ),
        Miss::Missing { at, span } => (
            MISSING_VALUE,
            format!(
                "Interpolation {key_desc} passes through `{}`, which is a missing mandatory value (???)",
                prefix(at)
            ),
            "needs a value that is not set".to_string(),
            format!(
                "give `{}` a value, in the config or with an override",
                prefix(at)
            ),
            span,
        ),
    };
    let mut d = Diag::new(code, message)
        .label(site_span(site, interp), label)
        .help(help);
    if target.is_some() {
        d = d.label(target, "set here");
    }
    Fail::from(d)
}

fn did_you_mean(key: &str, candidates: &[String]) -> Option<String> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(key, c), c))
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.clone())
}

pub(crate) fn above_root(site: Site<'_, '_>, interp: &Interp, written: &str) -> Fail {
    let depth = site.chain.len().saturating_sub(1);
    Fail::from(
        Diag::new(
            MISSING_KEY,
            format!("Interpolation key '{written}' goes above the root of the config"),
        )
        .label(site_span(site, interp), "too many leading dots")
        .help(format!(
            "the first dot is the container of `{}`, each further dot one level up; it is {depth} level(s) deep",
            site.path()
        )),
    )
}

pub(crate) fn to_missing(site: Site<'_, '_>, interp: &Interp, chain: &[Frame<'_>]) -> Fail {
    let target = path_of(chain);
    let span = chain.last().and_then(|f| f.node.best_span());
    Fail::from(
        Diag::new(
            MISSING_VALUE,
            format!(
                "Interpolation '{}' points at a missing mandatory value: `{target}` is ???",
                interp_text(site, interp)
            ),
        )
        .label(site_span(site, interp), format!("needs `{target}`"))
        .label(span, "still ??? here")
        .help(format!(
            "give `{target}` a value, in the config or with an override (`{target}=…`)"
        )),
    )
}

pub(crate) fn to_parent(site: Site<'_, '_>, interp: &Interp, chain: &[Frame<'_>]) -> Fail {
    let target = path_of(chain);
    Fail::from(
        Diag::new(
            CYCLE,
            format!(
                "Interpolation '{}' points at `{}`, a container that holds it",
                interp_text(site, interp),
                if target.is_empty() { "<root>" } else { &target }
            ),
        )
        .label(site_span(site, interp), "refers to its own ancestor")
        .help("a value cannot be defined as a copy of a mapping or list that contains it"),
    )
}

/// A cycle: `ptr` is already being evaluated; the chain is the active stack from it.
pub(crate) fn cycle(root: &Node, active: &[Active], ptr: usize) -> Fail {
    let from = active.iter().rposition(|a| a.ptr == ptr).unwrap_or(0);
    let members = active.get(from..).unwrap_or(&[]);
    let paths: Vec<String> = members.iter().map(|a| path_to(root, a.ptr)).collect();
    let mut names: Vec<&str> = paths.iter().map(String::as_str).collect();
    if let Some(first) = names.first().copied() {
        names.push(first);
    }
    let mut d = Diag::new(
        CYCLE,
        format!("Interpolation cycle: {}", names.join(" -> ")),
    );
    for (i, a) in members.iter().enumerate() {
        let next = names.get(i + 1).copied().unwrap_or("");
        d = d.label(a.span, format!("`{}` needs `{next}`", names[i]));
    }
    Fail::from(
        d.help("break the cycle: at least one of these values must not depend on the others"),
    )
}

pub(crate) fn too_deep(chain: &[Frame<'_>], limit: usize) -> Fail {
    let span = chain.last().and_then(|f| f.node.best_span());
    Fail::from(
        Diag::new(
            CYCLE,
            format!(
                "Interpolation chain deeper than {limit} levels at `{}`",
                path_of(chain)
            ),
        )
        .label(span, "reached here")
        .help("shorten the chain of values that refer to each other"),
    )
}

/// Dotted path of the node at address `ptr` (only needed when reporting a cycle).
fn path_to(root: &Node, ptr: usize) -> String {
    let mut found = None;
    root.walk(&mut Vec::new(), &mut |path, node| {
        if found.is_none() && std::ptr::eq(node, ptr as *const Node) {
            found = Some(path.join("."));
        }
    });
    found.unwrap_or_else(|| "<value>".to_string())
}

pub(crate) fn not_a_string(site: Site<'_, '_>, interp: &Interp, got: &Node, what: &str) -> Fail {
    Fail::from(
        Diag::new(
            TYPE,
            format!(
                "Interpolation '{}' is used as {what} and must give a string, but gave {} {}",
                interp_text(site, interp),
                got.type_name(),
                got
            ),
        )
        .label(site_span(site, interp), format!("used as {what}"))
        .help("point it at a string value"),
    )
}

/// An error from a node this site depends on: say which site needed it.
pub(crate) fn needed_by(f: Fail, site: Site<'_, '_>) -> Fail {
    match f {
        Fail::Diag(d) if d.code != CYCLE => {
            Fail::Diag(Box::new(d.note(format!("needed by {}", located(site)))))
        }
        other => other,
    }
}

pub(crate) fn unknown_resolver(
    site: Site<'_, '_>,
    interp: &Interp,
    name: &str,
    first_arg: &str,
) -> Fail {
    let raw = interp_text(site, interp);
    let known = format!("known resolvers: {}", KNOWN_RESOLVERS.join(", "));
    let shellish = is_shell_name(name) && looks_like_shell(&format!("{name}:{first_arg}"));
    let help = if shellish {
        format!("{}; {known}", shell_help(raw))
    } else if name.starts_with("oc.") {
        format!("{known} (other OmegaConf `oc.*` resolvers are not supported)")
    } else {
        known
    };
    Fail::from(
        Diag::new(RESOLVER, format!("Unsupported interpolation type {name}"))
            .label(
                site_span(site, interp),
                format!("unknown resolver `{name}`"),
            )
            .help(help),
    )
}

/// A resolver that was called but failed (bad arguments, unset variable, …).
/// `${oc.env:VAR}` of a variable an [`super::EnvGuard`] refuses.
pub(crate) fn env_refused(site: Site<'_, '_>, interp: &Interp, refusal: super::EnvRefusal) -> Fail {
    Fail::from(
        Diag::new(refusal.code, refusal.message)
            .label(
                site_span(site, interp),
                format!("`{}` at `{}`", interp_text(site, interp), site.path()),
            )
            .help(refusal.help),
    )
}

pub(crate) fn resolver_failed(
    site: Site<'_, '_>,
    interp: &Interp,
    message: String,
    help: String,
) -> Fail {
    Fail::from(
        Diag::new(RESOLVER, message)
            .label(
                site_span(site, interp),
                format!("in `{}`", interp_text(site, interp)),
            )
            .help(help),
    )
}
