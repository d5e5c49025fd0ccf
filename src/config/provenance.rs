//! Provenance: which layer, file and line (or command-line argument) set a key.
//! `nrl check … --explain KEY` prints this history, lowest layer first.

use std::fmt;

use super::defaults::LoadedFile;
use super::interp;
use super::layers::{InfraSource, LoadedConfig};
use super::node::{Node, Value};
use super::overrides::{Op, Override};
use super::source::Span;
use crate::diag::{Diag, Result};

/// One layer's contribution to a key.
#[derive(Debug, Clone)]
pub struct Setting {
    /// "shipped defaults", "user defaults", "infra file", "recipe", "override".
    pub layer: &'static str,
    /// `file:line:col` or `<override #2>`.
    pub location: String,
    /// The value as written there (one line).
    pub written: String,
    /// True when this layer cleared an enclosing section (e.g. `policy.optimizer: null`).
    pub clears: bool,
}

/// The history of one key.
#[derive(Debug, Clone)]
pub struct Explanation {
    pub key: String,
    pub settings: Vec<Setting>,
    /// The final value (resolved), if the key exists.
    pub value: Option<Node>,
    pub note: Option<String>,
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            Some(v) => writeln!(f, "{} = {}", self.key, one_line(v))?,
            None => writeln!(f, "{} is not set", self.key)?,
        }
        if self.settings.is_empty() {
            writeln!(f, "  (no layer sets it)")?;
        }
        let last = self.settings.len().saturating_sub(1);
        for (i, s) in self.settings.iter().enumerate() {
            let verb = if s.clears { "cleared by" } else { "set by" };
            let fin = if i == last && !s.clears {
                "  <- wins"
            } else {
                ""
            };
            writeln!(
                f,
                "  {verb} {:<22} {}  {}{fin}",
                s.layer, s.location, s.written
            )?;
        }
        if let Some(n) = &self.note {
            writeln!(f, "  note: {n}")?;
        }
        Ok(())
    }
}

fn one_line(n: &Node) -> String {
    let s = match &n.value {
        Value::Str(s) => format!("{s:?}"),
        _ => n.to_json().to_string(),
    };
    if s.chars().count() > 100 {
        let cut: String = s.chars().take(97).collect();
        format!("{cut}...")
    } else {
        s
    }
}

fn written(n: &Node) -> String {
    match n.span {
        Some(sp) if !n.value.is_container() => {
            let t = sp.text();
            let first = t.lines().next().unwrap_or("").trim().to_string();
            if t.lines().count() > 1 {
                format!("{first} …")
            } else {
                first
            }
        }
        _ => one_line(n),
    }
}

fn location(span: Option<Span>) -> String {
    span.map(|s| s.location()).unwrap_or_else(|| "<nrl>".into())
}

/// Explain `key` (`infra.…` for the infra side, anything else for the recipe).
pub fn explain(cfg: &LoadedConfig, key: &str) -> Result<Explanation> {
    let key = key.trim();
    let (infra_side, path) = match key.strip_prefix("infra.") {
        Some(rest) => (true, rest.to_string()),
        None if key == "infra" => (true, String::new()),
        None => (false, key.to_string()),
    };
    let owned = key_segments(&path)?;
    let segs: Vec<&str> = owned.iter().map(String::as_str).collect();
    let settings = layer_settings(cfg, infra_side, &segs);
    let mut note = None;
    let value = if infra_side {
        if path == "namespace"
            && let Some(o) = &cfg.namespace_inferred
        {
            note = Some(format!("inferred from {o}"));
        }
        get_segs(&cfg.infra.source, &segs).cloned()
    } else if get_segs(&cfg.recipe, &segs).is_none() {
        None
    } else if segs.iter().any(|s| s.contains('.')) {
        // A key with a dot in it cannot be named by a dotted path: resolve the whole tree.
        let resolved = interp::resolve(&cfg.recipe, cfg.env.as_ref())?;
        get_segs(&resolved, &segs).cloned()
    } else {
        Some(interp::resolve_path(
            &cfg.recipe,
            &segs.join("."),
            cfg.env.as_ref(),
        )?)
    };
    if value.is_none() && settings.is_empty() {
        let root = if infra_side {
            &cfg.infra.source
        } else {
            &cfg.recipe
        };
        let infra_root = (!infra_side).then_some(&cfg.infra.source);
        return Err(missing_key(root, infra_root, key, &segs, infra_side));
    }
    Ok(Explanation {
        key: key.to_string(),
        settings,
        value,
        note,
    })
}

/// The node at `segs` (map keys, list indices), if any.
fn get_segs<'a>(root: &'a Node, segs: &[&str]) -> Option<&'a Node> {
    segs.iter().try_fold(root, |cur, seg| cur.child(seg))
}

/// A key as users write it: dotted segments, where a segment with dots or slashes in it is
/// written in brackets (`labels['kai.scheduler/queue']`, `labels["a.b"]`), and a list
/// index may be too (`workers[0]`).
pub fn key_segments(path: &str) -> Result<Vec<String>> {
    let bad = |why: &str| {
        Diag::new(
            "nrl::config::bad_key",
            format!("`{path}` is not a key: {why}"),
        )
        .help("write keys as `a.b.c`; a key with dots in it as `a['b.c']`")
    };
    let mut segs = Vec::new();
    let mut cur = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !cur.is_empty() {
                    segs.push(std::mem::take(&mut cur));
                } else if segs.is_empty() || path.starts_with('.') {
                    return Err(bad("an empty segment"));
                }
            }
            '[' => {
                if !cur.is_empty() {
                    segs.push(std::mem::take(&mut cur));
                }
                let quote = match chars.peek() {
                    Some(&q @ ('\'' | '"')) => {
                        chars.next();
                        Some(q)
                    }
                    _ => None,
                };
                let mut inner = String::new();
                loop {
                    match (chars.next(), quote) {
                        (Some(q), Some(want)) if q == want => break,
                        (Some(']'), None) => break,
                        (Some(ch), _) => inner.push(ch),
                        (None, _) => return Err(bad("an unclosed `[`")),
                    }
                }
                if quote.is_some() && chars.next() != Some(']') {
                    return Err(bad("a quoted key must end with `]`"));
                }
                segs.push(inner);
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        segs.push(cur);
    } else if path.ends_with('.') {
        return Err(bad("an empty segment"));
    }
    Ok(segs)
}

/// What every layer says about `segs` (the infra side's layers, or the recipe's), lowest
/// layer first.
fn layer_settings(cfg: &LoadedConfig, infra_side: bool, segs: &[&str]) -> Vec<Setting> {
    let mut settings = Vec::new();
    if infra_side {
        scan(&cfg.layers.shipped, segs, "shipped defaults", &mut settings);
        for f in &cfg.layers.user {
            scan_file(f, segs, "user defaults", &mut settings);
        }
        match &cfg.layers.infra {
            InfraSource::File(files) => {
                for f in files {
                    scan_file(f, segs, "infra file", &mut settings);
                }
            }
            InfraSource::RecipeBlock(Some(b)) => {
                scan(b, segs, "recipe infra: block", &mut settings)
            }
            InfraSource::RecipeBlock(None) => {}
        }
        scan_overrides(&cfg.layers.infra_overrides, segs, &mut settings);
    } else {
        for f in &cfg.layers.recipe_files {
            scan_file(f, segs, "recipe", &mut settings);
        }
        scan_overrides(&cfg.layers.recipe_overrides, segs, &mut settings);
    }
    settings
}

/// The layer that decided a key: where its value was last written (`None`: no layer
/// wrote it, or the last one cleared it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Decided {
    pub layer: String,
    /// `file:line:col` or `<override #2>`.
    pub location: String,
    /// The value as written there (one line).
    pub written: String,
}

/// For every leaf of the merged recipe and infra (`a.b.0.c`; infra keys with `infra.`
/// in front), the layer that set it. One pass over the leaves, each checked against the
/// few layer trees: what `--explain` tells one key at a time, for all of them (what
/// `nrl diff` shows beside each change).
pub fn decided_by(cfg: &LoadedConfig) -> std::collections::BTreeMap<String, Decided> {
    let mut out = std::collections::BTreeMap::new();
    for (infra_side, root) in [(false, &cfg.recipe), (true, &cfg.infra_merged)] {
        root.walk(&mut Vec::new(), &mut |path, node| {
            // Leaves: scalars, and containers with nothing in them.
            let is_leaf = match &node.value {
                Value::Map(m) => m.is_empty(),
                Value::List(l) => l.is_empty(),
                _ => true,
            };
            if path.is_empty() || !is_leaf {
                return;
            }
            let segs: Vec<&str> = path.iter().map(String::as_str).collect();
            let settings = layer_settings(cfg, infra_side, &segs);
            if let Some(last) = settings.last().filter(|s| !s.clears) {
                let key = if infra_side {
                    format!("infra.{}", path.join("."))
                } else {
                    path.join(".")
                };
                out.insert(
                    key,
                    Decided {
                        layer: last.layer.to_string(),
                        location: last.location.clone(),
                        written: last.written.clone(),
                    },
                );
            }
        });
    }
    out
}

fn scan_file(f: &LoadedFile, segs: &[&str], layer: &'static str, out: &mut Vec<Setting>) {
    scan(&f.tree, segs, layer, out);
}

/// Record what `tree` says about `segs`: a value at the path, or an ancestor replaced by
/// a scalar/null (which clears everything below it).
fn scan(tree: &Node, segs: &[&str], layer: &'static str, out: &mut Vec<Setting>) {
    let mut cur = tree;
    for (i, seg) in segs.iter().enumerate() {
        let Some(next) = cur.child(seg) else {
            return;
        };
        let last = i + 1 == segs.len();
        if !last && !next.value.is_container() {
            out.push(Setting {
                layer,
                location: location(next.span.or(next.key_span)),
                written: format!("{}: {}", segs[..=i].join("."), written(next)),
                clears: true,
            });
            return;
        }
        cur = next;
    }
    out.push(Setting {
        layer,
        location: location(cur.span.or(cur.key_span)),
        written: written(cur),
        clears: false,
    });
}

fn scan_overrides(ovs: &[Override], segs: &[&str], out: &mut Vec<Setting>) {
    for ov in ovs {
        let p: Vec<&str> = ov.path.iter().map(String::as_str).collect();
        let n = p.len().min(segs.len());
        if p[..n] != segs[..n] {
            continue;
        }
        let loc = format!("<override #{}>", ov.index + 1);
        if matches!(ov.op, Op::Delete) && p.len() <= segs.len() {
            out.push(Setting {
                layer: "override",
                location: loc,
                written: ov.text.clone(),
                clears: true,
            });
            continue;
        }
        if p.len() <= segs.len() {
            // The override sets the key itself or a mapping that may contain it.
            let rest = segs[p.len()..].join(".");
            let covers = match &ov.value {
                Some(v) if rest.is_empty() => Some(v.clone()),
                Some(v) => v.get_path(&rest).cloned(),
                None => None,
            };
            if covers.is_some() || rest.is_empty() {
                out.push(Setting {
                    layer: "override",
                    location: loc,
                    written: ov.text.clone(),
                    clears: false,
                });
            }
        } else {
            // The override sets something below the key.
            out.push(Setting {
                layer: "override",
                location: loc,
                written: ov.text.clone(),
                clears: false,
            });
        }
    }
}

/// `infra_root`: for a recipe key, the infra tree (a key that exists there is meant as
/// `infra.<key>`).
fn missing_key(
    root: &Node,
    infra_root: Option<&Node>,
    key: &str,
    segs: &[&str],
    infra_side: bool,
) -> Diag {
    // Deepest existing container, then suggest among its keys.
    let mut cur = root;
    let mut depth = 0;
    for seg in segs {
        match cur.child(seg) {
            Some(n) => {
                cur = n;
                depth += 1;
            }
            None => break,
        }
    }
    let prefix = {
        let mut p: Vec<&str> = Vec::new();
        if infra_side {
            p.push("infra");
        }
        p.extend(&segs[..depth]);
        p.join(".")
    };
    let wanted = segs.get(depth).copied().unwrap_or("");
    let d = Diag::new(
        "nrl::config::unknown_key",
        format!("`{key}` is not set in any layer"),
    );
    if let Some(infra) = infra_root
        && get_segs(infra, segs).is_some()
    {
        return d.help(format!(
            "did you mean `infra.{key}`? (infra keys start with `infra.`)"
        ));
    }
    if let Some(m) = cur.as_map()
        && let Some(best) =
            crate::config::suggest::did_you_mean(wanted, m.keys().map(String::as_str))
    {
        let full = if prefix.is_empty() {
            best.to_string()
        } else {
            format!("{prefix}.{best}")
        };
        return d.help(format!("did you mean `{full}`?"));
    }
    d.help(
        "use a dotted path such as `infra.kuberay.training.name` or `policy.optimizer.kwargs.lr`",
    )
}

#[cfg(test)]
mod tests {
    use super::key_segments;

    #[test]
    fn keys_split_on_dots_with_bracketed_segments_kept_whole() {
        let segs = |k: &str| key_segments(k).unwrap();
        assert_eq!(
            segs("policy.optimizer.kwargs.lr"),
            ["policy", "optimizer", "kwargs", "lr"]
        );
        assert_eq!(
            segs("kuberay.training.labels['kai.scheduler/queue']"),
            ["kuberay", "training", "labels", "kai.scheduler/queue"]
        );
        assert_eq!(segs(r#"labels["a.b"].c"#), ["labels", "a.b", "c"]);
        assert_eq!(segs("workers[0].replicas"), ["workers", "0", "replicas"]);
        assert_eq!(segs(""), Vec::<String>::new());
        for bad in ["labels['a.b'", "a.", ".a", "labels['a'x"] {
            assert!(key_segments(bad).is_err(), "{bad}");
        }
    }
}
