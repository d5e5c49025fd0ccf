//! Sweep expansion for `nrl script`'s `sweep` (Hydra's BasicSweeper): `a=1,2`,
//! `choice(...)`, `range(...)` (int and float steps, computed like Hydra), and the
//! cartesian product over several overrides.
//!
//! Each expanded run is a list of plain override strings, so a run goes through the same
//! [`parse_override`](super::parse_override) path as a hand-written one.

use super::decimal::Dec;
use super::parser::{self, Parsed, RangeSweep, Sweep};
use super::{CODE_SWEEP, CODE_TYPE};
use crate::config::node::{Node, Value, python_float_repr};
use crate::config::source::{Span, SrcId, add_override_source};
use crate::diag::{Diag, Result};

/// Most runs one sweep (or a whole product) may expand to; protects against `range(0, 1e9)`.
pub const MAX_RUNS: usize = 10_000;

/// Expand one argument. A sweep gives one override per value, in sweep order
/// (`a=1,2` gives `["a=1", "a=2"]`); any other override gives itself.
pub fn expand_sweep(text: &str) -> Result<Vec<String>> {
    expand_one(0, text)
}

/// Expand several arguments into runs: the cartesian product of their values, the first
/// argument varying slowest (`a=1,2 b=x,y` gives `[a=1 b=x] [a=1 b=y] [a=2 b=x] [a=2 b=y]`).
pub fn expand_sweeps(args: &[String]) -> Result<Vec<Vec<String>>> {
    let mut runs: Vec<Vec<String>> = vec![Vec::new()];
    for (i, arg) in args.iter().enumerate() {
        let values = expand_one(i, arg)?;
        let total = runs.len().saturating_mul(values.len());
        if total > MAX_RUNS {
            return Err(Diag::new(
                CODE_SWEEP,
                format!("the sweep expands to {total} runs (more than {MAX_RUNS})"),
            )
            .help("narrow the sweep: fewer values or a coarser range step"));
        }
        let mut next = Vec::with_capacity(total);
        for run in &runs {
            for v in &values {
                let mut r = run.clone();
                r.push(v.clone());
                next.push(r);
            }
        }
        runs = next;
    }
    Ok(runs)
}

fn expand_one(index: usize, text: &str) -> Result<Vec<String>> {
    let src = add_override_source(index, text);
    let key = parser::parse_key(src, text)?;
    let Some(from) = key.value_start else {
        return Ok(vec![text.to_string()]);
    };
    let (sweep, span) = match parser::parse_value(src, text, from)? {
        Parsed::Sweep(s, span) => (s, span),
        Parsed::Value(_) | Parsed::Extend(..) => return Ok(vec![text.to_string()]),
    };
    // Keep the prefix and key exactly as written.
    let head = text.get(..key.key_span.end as usize).unwrap_or(text);
    let mut values = match sweep {
        Sweep::Choice { items, shuffle, .. } => {
            let mut out = Vec::with_capacity(items.len());
            for it in &items {
                out.push(render_value(it).ok_or_else(|| unrenderable(text, it))?);
            }
            if shuffle {
                fastrand::shuffle(&mut out);
            }
            out
        }
        Sweep::Range(r) => {
            let RangeSweep {
                start,
                stop,
                step,
                shuffle,
            } = *r;
            let mut out: Vec<String> = range_values(text, span, &start, &stop, &step)?
                .iter()
                .map(|v| render_value(&Node::new(v.clone())).unwrap_or_default())
                .collect();
            if shuffle {
                fastrand::shuffle(&mut out);
            }
            out
        }
        Sweep::Unsupported { function } => {
            let why = if function == "glob" {
                "glob() selects config-group options, and nrl recipes have no config groups"
            } else {
                "interval() is for optimising sweepers; the basic sweep needs discrete values"
            };
            return Err(Diag::new(
                CODE_SWEEP,
                format!("cannot expand `{text}`: {function}(...) is not supported"),
            )
            .label(Some(span), why)
            .help("list the values with choice(a, b, c) or range(start, stop, step)"));
        }
    };
    if values.len() > MAX_RUNS {
        return Err(Diag::new(
            CODE_SWEEP,
            format!(
                "`{text}` expands to {} values (more than {MAX_RUNS})",
                values.len()
            ),
        )
        .label(Some(span), "this sweep")
        .help("use fewer values or a coarser range step"));
    }
    Ok(values.drain(..).map(|v| format!("{head}={v}")).collect())
}

fn unrenderable(text: &str, n: &Node) -> Diag {
    Diag::new(
        CODE_SWEEP,
        format!("cannot write a value of `{text}` back as an override"),
    )
    .label(n.span, "this value")
    .help("dict keys in a sweep may only use characters that are valid unquoted")
}

/// Hydra's `RangeSweep.range()`: Python `range` for ints, `Decimal` stepping otherwise.
fn range_values(
    text: &str,
    span: Span,
    start: &Node,
    stop: &Node,
    step: &Node,
) -> Result<Vec<Value>> {
    let bad = |msg: &str| {
        Diag::new(CODE_TYPE, format!("cannot expand `{text}`: {msg}"))
            .label(Some(span), msg.to_string())
            .help("write range(start, stop, step) with a non-zero finite step")
    };
    let too_many = || bad(&format!("the range has more than {MAX_RUNS} values"));
    if let (Some(a), Some(b), Some(s)) = (start.as_i64(), stop.as_i64(), step.as_i64()) {
        if s == 0 {
            return Err(bad("range() step must not be zero"));
        }
        let mut out = Vec::new();
        let mut cur = a;
        while (s > 0 && cur < b) || (s < 0 && cur > b) {
            if out.len() >= MAX_RUNS {
                return Err(too_many());
            }
            out.push(Value::Int(cur));
            match cur.checked_add(s) {
                Some(n) => cur = n,
                None => break,
            }
        }
        return Ok(out);
    }
    let dec = |n: &Node| match n.value {
        Value::Int(i) => Some(Dec::from_i64(i)),
        Value::Float(f) => Dec::from_f64(f),
        _ => None,
    };
    let (Some(mut cur), Some(end), Some(s)) = (dec(start), dec(stop), dec(step)) else {
        return Err(bad("range() bounds must be finite numbers"));
    };
    if s.is_zero() {
        return Err(bad("range() step must not be zero"));
    }
    let up = !s.is_negative();
    let mut out = Vec::new();
    while (up && cur < end) || (!up && cur > end) {
        if out.len() >= MAX_RUNS {
            return Err(too_many());
        }
        out.push(Value::Float(cur.to_f64()));
        cur = cur.add(&s);
    }
    Ok(out)
}

/// Spans of values re-parsed for [`render_value`]'s check; never registered.
const SCRATCH: SrcId = SrcId(u32::MAX);

/// Write `n` back as override value text that parses to the same value (`'yes'` stays a
/// quoted string, `1.0` stays a float). `None` for dict keys the grammar cannot express.
pub fn render_value(n: &Node) -> Option<String> {
    Some(match &n.value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => python_float_repr(*f),
        Value::Str(s) => {
            if reparses_to(s, &n.value) {
                s.clone()
            } else {
                quote(s)
            }
        }
        Value::List(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for it in items {
                parts.push(render_value(it)?);
            }
            format!("[{}]", parts.join(", "))
        }
        Value::Map(m) => {
            let mut parts = Vec::with_capacity(m.len());
            for (k, v) in m {
                let key = escape_key(k);
                let probe = format!("{{{key}: 0}}");
                let ok = match parser::parse_value(SCRATCH, &probe, 0) {
                    Ok(Parsed::Value(p)) => p.as_map().is_some_and(|pm| pm.contains_key(k)),
                    _ => false,
                };
                if !ok {
                    return None;
                }
                parts.push(format!("{key}: {}", render_value(v)?));
            }
            format!("{{{}}}", parts.join(", "))
        }
    })
}

fn reparses_to(s: &str, want: &Value) -> bool {
    matches!(parser::parse_value(SCRATCH, s, 0), Ok(Parsed::Value(p)) if &p.value == want)
}

/// Single-quote `s` with Hydra's rule: backslashes before a quote are doubled.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    let mut run = 0usize;
    for c in s.chars() {
        if c == '\\' {
            run += 1;
            continue;
        }
        if c == '\'' {
            out.extend(std::iter::repeat_n('\\', 2 * run + 1));
        } else {
            out.extend(std::iter::repeat_n('\\', run));
        }
        out.push(c);
        run = 0;
    }
    out.extend(std::iter::repeat_n('\\', 2 * run));
    out.push('\'');
    out
}

/// Hydra's `escape_special_characters` for an unquoted dict key.
fn escape_key(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    for c in k.chars() {
        if "\\()[]{}:=, \t".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
