//! `sort(...)` and `shuffle(...)` of lists and sweeps (Hydra's `grammar_functions.py`).

use super::functions::{Arg, Call, expect_value};
use super::parser::{Parsed, RangeSweep, Sweep};
use super::{CODE_SYNTAX, CODE_TYPE};
use crate::config::node::{Node, Value};
use crate::diag::Result;

impl Call<'_> {
    pub(crate) fn sort(&self, args: Vec<Arg>) -> Result<Parsed> {
        let (positional, named) = self.split(args, &["sweep", "list", "reverse"])?;
        let mut reverse = false;
        let mut input = None;
        for (n, p) in named {
            if n == "reverse" {
                let v = expect_value(self.text, p, "reverse")?;
                reverse = v
                    .as_bool()
                    .ok_or_else(|| self.err(CODE_TYPE, "`reverse` must be true or false", ""))?;
            } else {
                input = Some(p);
            }
        }
        let input = match (input, positional.len()) {
            (Some(p), 0) => p,
            (None, 1) => positional
                .into_iter()
                .next()
                .unwrap_or(Parsed::Value(Node::null())),
            (None, 0) => return Err(self.err(CODE_SYNTAX, "empty sort input", "")),
            (None, _) => {
                let mut items = Vec::new();
                for p in positional {
                    items.push(expect_value(self.text, p, "a sort item")?);
                }
                Parsed::Sweep(
                    Sweep::Choice {
                        items,
                        simple: true,
                        shuffle: false,
                    },
                    self.span,
                )
            }
            (Some(_), _) => {
                return Err(self.err(
                    CODE_SYNTAX,
                    "cannot mix positional and list=/sweep= input",
                    "",
                ));
            }
        };
        match input {
            Parsed::Value(n) => match n.value {
                Value::List(items) => Ok(Parsed::Value(Node::spanned(
                    Value::List(self.sorted(items, reverse)?),
                    Some(self.span),
                ))),
                _ => Ok(Parsed::Value(n)),
            },
            Parsed::Sweep(
                Sweep::Choice {
                    items,
                    simple,
                    shuffle,
                },
                span,
            ) => Ok(Parsed::Sweep(
                Sweep::Choice {
                    items: self.sorted(items, reverse)?,
                    simple,
                    shuffle,
                },
                span,
            )),
            Parsed::Sweep(Sweep::Range(r), span) => Ok(Parsed::Sweep(
                Sweep::Range(Box::new(sort_range(*r, reverse))),
                span,
            )),
            other => Ok(other),
        }
    }

    fn sorted(&self, mut items: Vec<Node>, reverse: bool) -> Result<Vec<Node>> {
        let all_numbers = items
            .iter()
            .all(|n| matches!(n.value, Value::Int(_) | Value::Float(_) | Value::Bool(_)));
        let all_strings = items.iter().all(|n| matches!(n.value, Value::Str(_)));
        if all_numbers {
            items.sort_by(|a, b| as_f64(a).total_cmp(&as_f64(b)));
        } else if all_strings {
            items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        } else {
            return Err(self.err(
                CODE_TYPE,
                "items cannot be compared",
                "sort only numbers, or only strings",
            ));
        }
        if reverse {
            items.reverse();
        }
        Ok(items)
    }

    pub(crate) fn shuffle(&self, args: Vec<Arg>) -> Result<Parsed> {
        let (positional, named) = self.split(args, &["sweep", "list"])?;
        let input = match (named.into_iter().next(), positional.len()) {
            (Some((_, p)), 0) => p,
            (None, 1) => positional
                .into_iter()
                .next()
                .unwrap_or(Parsed::Value(Node::null())),
            (None, 0) => return Err(self.err(CODE_SYNTAX, "nothing to shuffle", "")),
            (None, _) => {
                let mut items = Vec::new();
                for p in positional {
                    items.push(expect_value(self.text, p, "a shuffle item")?);
                }
                return Ok(Parsed::Sweep(
                    Sweep::Choice {
                        items,
                        simple: true,
                        shuffle: true,
                    },
                    self.span,
                ));
            }
            (Some(_), _) => {
                return Err(self.err(
                    CODE_SYNTAX,
                    "cannot mix positional and list=/sweep= input",
                    "",
                ));
            }
        };
        match input {
            Parsed::Sweep(Sweep::Choice { items, simple, .. }, span) => Ok(Parsed::Sweep(
                Sweep::Choice {
                    items,
                    simple,
                    shuffle: true,
                },
                span,
            )),
            Parsed::Sweep(Sweep::Range(mut r), span) => {
                r.shuffle = true;
                Ok(Parsed::Sweep(Sweep::Range(r), span))
            }
            Parsed::Value(n) => match n.value {
                Value::List(mut items) => {
                    fastrand::shuffle(&mut items);
                    Ok(Parsed::Value(Node::spanned(
                        Value::List(items),
                        Some(self.span),
                    )))
                }
                v => Ok(Parsed::Value(Node::spanned(
                    Value::List(vec![Node { value: v, ..n }]),
                    Some(self.span),
                ))),
            },
            other => Ok(other),
        }
    }
}

fn as_f64(n: &Node) -> f64 {
    match n.value {
        Value::Int(i) => i as f64,
        Value::Float(f) => f,
        Value::Bool(b) => f64::from(u8::from(b)),
        _ => 0.0,
    }
}

/// Hydra's `_sort_sweep` for ranges: flip a descending range to ascending (or back).
fn sort_range(r: RangeSweep, reverse: bool) -> RangeSweep {
    let RangeSweep {
        start,
        stop,
        step,
        shuffle,
    } = r;
    let (a, b, s) = (as_f64(&start), as_f64(&stop), as_f64(&step));
    let flip = if reverse { a < b } else { a > b };
    if !flip {
        return RangeSweep {
            start,
            stop,
            step,
            shuffle,
        };
    }
    let all_int = [&start, &stop, &step]
        .iter()
        .all(|n| matches!(n.value, Value::Int(_)));
    let num = |f: f64, i: Option<i64>| match i {
        Some(i) if all_int => Node::new(Value::Int(i)),
        _ => Node::new(Value::Float(f)),
    };
    let (ai, bi, si) = (start.as_i64(), stop.as_i64(), step.as_i64());
    let abs_i = si.map(i64::saturating_abs);
    let add = |x: Option<i64>, y: Option<i64>| x.zip(y).map(|(x, y)| x.saturating_add(y));
    let sub = |x: Option<i64>, y: Option<i64>| x.zip(y).map(|(x, y)| x.saturating_sub(y));
    let (new_start, new_stop) = if reverse {
        (
            num(b - s.abs(), sub(bi, abs_i)),
            num(a - s.abs(), sub(ai, abs_i)),
        )
    } else {
        (
            num(b + s.abs(), add(bi, abs_i)),
            num(a + s.abs(), add(ai, abs_i)),
        )
    };
    RangeSweep {
        start: new_start,
        stop: new_stop,
        step: num(-s, si.map(i64::saturating_neg)),
        shuffle,
    }
}
