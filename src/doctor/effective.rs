//! What the training script will actually see for a recipe key: the recipe value (nrl's
//! overrides applied, interpolations resolved where possible), unless the entrypoint
//! passes a Hydra override for the key (`python run_grpo.py … cluster.num_nodes=58`).

use crate::config::interp;
use crate::config::layers::LoadedConfig;
use crate::config::node::{Node, Value};
use crate::config::source::Span;

use super::text::{narrow, occurrence};

/// A `key=value`, `+key=value`, `++key=value` or `~key` token of the entrypoint.
#[derive(Debug, Clone)]
pub struct EntryOverride {
    /// `""`, `"+"`, `"++"` or `"~"`.
    pub op: String,
    pub key: String,
    pub value: Option<String>,
    /// The token as written, which occurrence of it, and the entrypoint's span: the token's
    /// own span is worked out only when a finding needs it.
    raw: String,
    nth: usize,
    entrypoint: Option<Span>,
}

impl EntryOverride {
    /// The token in the infra file (the whole entrypoint when it cannot be found).
    pub fn span(&self) -> Option<Span> {
        narrow(self.entrypoint, &self.raw, self.nth)
    }
}

/// `(op, key, value)` of a Hydra override token with a dotted key (`a.b=1`, `~a.b`,
/// `++a.b=x`); `None` for anything else (`run.py`, `--flag`, `X=1`).
fn parse_token(token: &str) -> Option<(&str, &str, Option<&str>)> {
    let op = ["++", "+", "~"]
        .into_iter()
        .find(|p| token.starts_with(p))
        .unwrap_or("");
    let rest = &token[op.len()..];
    let (key, value) = match rest.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (rest, None),
    };
    // Only `~key` may go without a value (`run.py` is a file, not an override).
    if value.is_none() && op != "~" {
        return None;
    }
    let mut segs = key.split('.');
    let first = segs.next()?;
    let first_ok = first
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let seg_ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let mut n = 1;
    for seg in segs {
        if !seg_ok(seg) {
            return None;
        }
        n += 1;
    }
    (first_ok && seg_ok(first) && n > 1).then_some((op, key, value))
}

/// Dotted-key override tokens of the training entrypoint, in order.
pub fn entrypoint_overrides(cfg: &LoadedConfig) -> Vec<EntryOverride> {
    let Some(text) = cfg.infra.launch.entrypoint.as_deref() else {
        return Vec::new();
    };
    let span = cfg
        .infra
        .source
        .get_path("launch.entrypoint")
        .and_then(Node::best_span);
    overrides_in(text, span)
}

pub(crate) fn overrides_in(text: &str, span: Option<Span>) -> Vec<EntryOverride> {
    let mut out = Vec::new();
    let mut offset = 0;
    for raw in text.split_ascii_whitespace() {
        let at = text[offset..].find(raw).map_or(offset, |i| offset + i);
        offset = at + raw.len();
        let token = raw.trim_matches(|c| c == '"' || c == '\'');
        let Some((op, key, value)) = parse_token(token) else {
            continue;
        };
        let nth = occurrence(text, raw, at);
        out.push(EntryOverride {
            op: op.to_string(),
            key: key.to_string(),
            value: value.map(str::to_string),
            raw: raw.to_string(),
            nth,
            entrypoint: span,
        });
    }
    out
}

/// Where an effective value came from.
#[derive(Debug, Clone)]
pub struct Effective {
    pub value: Node,
    pub span: Option<Span>,
    /// Set by a Hydra override in the entrypoint rather than the recipe.
    pub from_entrypoint: bool,
}

/// The value the training script sees for `path`; `None` when neither the recipe nor the
/// entrypoint sets it (or an entrypoint override deletes it, or its value is not known
/// before the pod runs).
pub fn effective(cfg: &LoadedConfig, ovs: &[EntryOverride], path: &str) -> Option<Effective> {
    if let Some(ov) = ovs.iter().rev().find(|o| o.key == path) {
        if ov.op == "~" {
            return None;
        }
        let value = parse_scalar(ov.value.as_deref()?)?;
        return Some(Effective {
            value,
            span: ov.span(),
            from_entrypoint: true,
        });
    }
    let raw = cfg.recipe.get_path(path)?;
    let value = match &raw.value {
        Value::Str(s) if interp::has_interpolation(s) => {
            interp::resolve_path(&cfg.recipe, path, cfg.env.as_ref()).ok()?
        }
        _ => raw.clone(),
    };
    Some(Effective {
        value,
        span: raw.best_span(),
        from_entrypoint: false,
    })
}

/// Hydra's reading of a plain override value, enough for ints and booleans; values the
/// shell fills in (`${N}`, `$N`) are unknown.
fn parse_scalar(v: &str) -> Option<Node> {
    let v = v.trim_matches(|c| c == '"' || c == '\'');
    if v.contains('$') {
        return None;
    }
    Some(match v {
        "true" | "True" => Node::bool(true),
        "false" | "False" => Node::bool(false),
        "null" | "None" => Node::null(),
        _ => match v.parse::<i64>() {
            Ok(i) => Node::int(i),
            Err(_) => Node::str(v),
        },
    })
}

/// `true` for a boolean true (or the strings Hydra and YAML read as true).
pub fn truthy(n: &Node) -> bool {
    match &n.value {
        Value::Bool(b) => *b,
        Value::Str(s) => matches!(s.as_str(), "true" | "True"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_dotted_override_tokens_only() {
        let text = "set -eu\nLOG=x python run.py --config a.yaml \\\n  cluster.num_nodes=58 \\\n  '~policy.optimizer.kwargs.foreach' ++logger.wandb.name=\"r\" x.y=${N}";
        let ovs = overrides_in(text, None);
        let keys: Vec<_> = ovs
            .iter()
            .map(|o| (o.op.as_str(), o.key.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("", "cluster.num_nodes"),
                ("~", "policy.optimizer.kwargs.foreach"),
                ("++", "logger.wandb.name"),
                ("", "x.y"),
            ]
        );
        assert_eq!(ovs[0].value.as_deref(), Some("58"));
        assert_eq!(parse_scalar("58"), Some(Node::int(58)));
        assert_eq!(parse_scalar("True"), Some(Node::bool(true)));
        assert_eq!(parse_scalar("${N}"), None);
    }
}
