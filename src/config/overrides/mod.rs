//! Hydra-style command-line overrides: `key=value`, `+key=value`, `++key=value`, `~key`.
//!
//! Users write them after the recipe (`nrl check recipe.yaml policy.lr=3e-4
//! infra.labels.team=rl`). This module parses them with Hydra's override grammar
//! ([`parse_override`]), splits them into the recipe side and the infra side
//! ([`partition`]) and applies them to a config tree ([`apply`], [`apply_all`]).
//!
//! Where nrl differs from Hydra on purpose:
//! - integers beyond 64 bits are refused (Python keeps them), see [`typing`];
//! - key segments may contain `/ @ $ -` and brackets (`labels['kai.scheduler/queue']`);
//! - non-ASCII characters are allowed in unquoted values, and trailing whitespace after a
//!   quoted value or container is ignored;
//! - the infra side creates missing keys without `+` (DESIGN §3);
//! - sweeps are errors in a single run; [`expand_sweep`] expands them for `nrl script`.

mod apply;
mod decimal;
mod functions;
mod lexer;
mod parser;
mod pyconv;
mod reorder;
mod sweep;
mod typing;

#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests_apply;
#[cfg(test)]
mod tests_edge;
#[cfg(test)]
mod tests_parse;

pub use apply::{apply, apply_all, apply_all_resolving};
pub use sweep::{expand_sweep, expand_sweeps, render_value};

use crate::config::node::Node;
use crate::config::source::{Span, add_override_source};
use crate::diag::{Diag, Result};
use parser::{Parsed, Sweep};

pub(crate) const CODE_SYNTAX: &str = "nrl::override::syntax";
pub(crate) const CODE_MISSING: &str = "nrl::override::missing_key";
pub(crate) const CODE_EXISTS: &str = "nrl::override::exists";
pub(crate) const CODE_DELETE: &str = "nrl::override::delete";
pub(crate) const CODE_SWEEP: &str = "nrl::override::sweep";
pub(crate) const CODE_TYPE: &str = "nrl::override::type";
pub(crate) const CODE_INFRA_ROOT: &str = "nrl::override::infra_root";

/// Which tree an override applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The recipe: NeMo-RL's struct mode (a missing key needs `+`).
    Recipe,
    /// The infra mapping: plain `key=value` also creates missing keys.
    Infra,
    /// A standalone document such as a Gym submit config: missing keys are created like
    /// on the infra side (its typed model rejects misspelt ones), keys print as written.
    Gym,
}

/// The override's operator (its Hydra prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `key=value`
    Set,
    /// `+key=value`: add; an error if a non-null value is already there.
    Add,
    /// `++key=value`: add or override.
    ForceAdd,
    /// `~key` or `~key=value` (delete only if equal).
    Delete,
}

/// One parsed command-line override.
#[derive(Debug, Clone)]
pub struct Override {
    pub op: Op,
    /// Key segments (for the infra side without the leading `infra`).
    pub path: Vec<String>,
    /// The value; `None` only for `~key` without `=`.
    pub value: Option<Node>,
    /// `key=extend_list(a, b)`: `value` is the list of items to append.
    pub extend_list: bool,
    /// The argument as the user wrote it.
    pub text: String,
    /// Position among the override arguments (0-based).
    pub index: usize,
    /// Which side [`partition`] put it on ([`Side::Recipe`] straight from [`parse_override`]).
    pub side: Side,
    /// The whole argument.
    pub span: Span,
    /// The key as written (including `infra.` on the infra side, excluding the prefix).
    pub key_span: Span,
    /// One span per element of `path`.
    pub segment_spans: Vec<Span>,
}

impl Override {
    /// The path as a dotted key (`policy.optimizer.lr`); segments that contain a dot are
    /// written in brackets (`labels['kai.scheduler/queue']`).
    pub fn dotted_key(&self) -> String {
        dotted(&self.path)
    }

    /// The key as the user knows it: with `infra.` in front on the infra side.
    pub fn display_key(&self) -> String {
        match self.side {
            Side::Recipe | Side::Gym => self.dotted_key(),
            Side::Infra => format!("infra.{}", self.dotted_key()),
        }
    }
}

pub(crate) fn dotted(path: &[String]) -> String {
    let mut out = String::new();
    for seg in path {
        let plain = !seg.is_empty()
            && seg.bytes().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'/' | b'@' | b'$')
            });
        if plain {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(seg);
        } else if seg.contains('\'') {
            out.push_str(&format!("[\"{seg}\"]"));
        } else {
            out.push_str(&format!("['{seg}']"));
        }
    }
    out
}

/// A syntax error in override `text`, labelled at `span`.
pub(crate) fn syntax_error(
    text: &str,
    msg: impl Into<String>,
    span: Span,
    help: impl Into<String>,
) -> Diag {
    let msg = msg.into();
    Diag::new(
        CODE_SYNTAX,
        format!("cannot parse override `{text}`: {msg}"),
    )
    .label(Some(span), msg)
    .help(help)
}

/// Parse one override argument. The text is registered as a source so every value node
/// and every error points into it.
pub fn parse_override(index: usize, text: &str) -> Result<Override> {
    let src = add_override_source(index, text);
    let key = parser::parse_key(src, text)?;
    let span = Span::new(src, 0, text.len());
    let parsed = match key.value_start {
        Some(from) => Some(parser::parse_value(src, text, from)?),
        None => None,
    };
    let (value, extend_list) = match parsed {
        None => (None, false),
        Some(Parsed::Value(n)) => (Some(n), false),
        Some(Parsed::Extend(items, call)) => {
            if key.op != Op::Set {
                return Err(syntax_error(
                    text,
                    "extend_list(...) cannot be combined with +, ++ or ~",
                    call,
                    format!(
                        "drop the prefix: `{}=extend_list(...)` appends to the existing list",
                        dotted(&key.path)
                    ),
                ));
            }
            (
                Some(Node::spanned(crate::config::Value::List(items), Some(call))),
                true,
            )
        }
        Some(Parsed::Sweep(sweep, sweep_span)) => {
            return Err(sweep_error(text, &key, &sweep, sweep_span));
        }
    };
    Ok(Override {
        op: key.op,
        path: key.path,
        value,
        extend_list,
        text: text.to_string(),
        index,
        side: Side::Recipe,
        span,
        key_span: key.key_span,
        segment_spans: key.segment_spans,
    })
}

/// Hydra's "Ambiguous value" advice, pointing at nrl's sweep feature instead of
/// `--multirun`.
fn sweep_error(text: &str, key: &parser::ParsedKey, sweep: &Sweep, span: Span) -> Diag {
    let k = key.key_span.text();
    let value_text = span.text();
    match sweep {
        Sweep::Choice { simple: true, .. } => Diag::new(
            CODE_SWEEP,
            format!("Ambiguous value for argument '{text}'"),
        )
        .label(Some(span), "a comma-separated value is a sweep")
        .help(format!(
            "1. To use it as a list, use {k}=[{value_text}]\n\
             2. To use it as string, quote the value: {k}='{value_text}' (in the shell: \"{k}='{value_text}'\")\n\
             3. To sweep over it, use `sweep` from the nrl script stdlib (one run per value)"
        )),
        _ => {
            let function = match sweep {
                Sweep::Choice { .. } => "choice",
                Sweep::Range(_) => "range",
                Sweep::Unsupported { function } => function,
            };
            Diag::new(
                CODE_SWEEP,
                format!("'{text}' is a sweep ({function}); a single run takes one value"),
            )
            .label(Some(span), format!("{function}(...) describes several runs"))
            .help(format!(
                "to sweep over it, use `sweep` from the nrl script stdlib (one run per value); \
                 to set a list, write {k}=[a,b]"
            ))
        }
    }
}

/// Parse every argument and split them into (recipe side, infra side), keeping order.
///
/// An argument whose key starts with `infra.` goes to the infra side with `infra` removed
/// from `path` (`+infra.labels.a=b` becomes `+labels.a=b`); everything else is the recipe
/// side. `infra=…`, `~infra` and `infra` alone are errors: unlike the reference (which
/// silently sent them to the recipe), nrl asks for individual keys. All errors are
/// reported together.
pub fn partition(args: &[String]) -> Result<(Vec<Override>, Vec<Override>)> {
    let mut recipe = Vec::new();
    let mut infra = Vec::new();
    let mut errors = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        match route(i, arg) {
            Ok((Side::Infra, ov)) => infra.push(ov),
            Ok((_, ov)) => recipe.push(ov),
            Err(e) => errors.push(e),
        }
    }
    match Diag::aggregate(errors) {
        Some(e) => Err(e),
        None => Ok((recipe, infra)),
    }
}

fn route(index: usize, arg: &str) -> Result<(Side, Override)> {
    let parsed = parse_override(index, arg);
    // `infra` alone (no `=`) is a syntax error for the grammar, but the useful message is
    // the infra one.
    let mut ov = match parsed {
        Ok(ov) => ov,
        Err(e) if arg.trim_start_matches(['+', '~']) == "infra" => {
            let src = e.labels.first().map(|l| l.span.src);
            let span = src.map(|s| Span::new(s, 0, arg.len()));
            return Err(infra_root_error(arg, span));
        }
        Err(e) => return Err(e),
    };
    if ov.path.first().map(String::as_str) != Some("infra") {
        return Ok((Side::Recipe, ov));
    }
    if ov.path.len() == 1 {
        return Err(infra_root_error(arg, Some(ov.key_span)));
    }
    ov.path.remove(0);
    ov.segment_spans.remove(0);
    ov.side = Side::Infra;
    Ok((Side::Infra, ov))
}

fn infra_root_error(arg: &str, span: Option<Span>) -> Diag {
    Diag::new(
        CODE_INFRA_ROOT,
        format!("override `{arg}` targets the whole `infra` section"),
    )
    .label(span, "the infra section itself")
    .help(
        "set individual keys instead: infra.KEY=VALUE (for example infra.labels.team=rl), \
         or put a whole infra file in --infra",
    )
}
