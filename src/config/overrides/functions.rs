//! Hydra's grammar functions: casts (`int float str bool json_str`), `extend_list`, and
//! the sweep constructors (`choice range interval glob tag sort shuffle`).
//!
//! Semantics follow `hydra/_internal/grammar/grammar_functions.py`: casts recurse into
//! lists and dict values, `bool("foo")` and `int("10.0")` are errors, several positional
//! arguments to a cast make a choice sweep.

use super::parser::{Parsed, RangeSweep, Sweep};
use super::pyconv::{python_float, python_int, python_json};
use super::{CODE_SYNTAX, CODE_TYPE};
use crate::config::node::{Node, Value, python_float_repr};
use crate::config::source::Span;
use crate::diag::{Diag, Result};

/// Positional arguments, then named ones.
type SplitArgs = (Vec<Parsed>, Vec<(String, Parsed)>);

/// One function argument, optionally named (`reverse=true`).
pub(crate) struct Arg {
    pub name: Option<(String, Span)>,
    pub value: Parsed,
}

const FUNCTIONS: &str = "bool, choice, extend_list, float, glob, int, interval, json_str, range, shuffle, sort, str, tag";

fn fn_error(text: &str, code: &'static str, msg: String, span: Span, help: &str) -> Diag {
    Diag::new(code, format!("cannot parse override `{text}`: {msg}"))
        .label(Some(span), msg)
        .help(help.to_string())
}

/// Require a plain value (sweeps and `extend_list` cannot sit inside containers or casts
/// of containers).
pub(crate) fn expect_value(text: &str, p: Parsed, what: &str) -> Result<Node> {
    match p {
        Parsed::Value(n) => Ok(n),
        Parsed::Sweep(_, span) => Err(fn_error(
            text,
            CODE_SYNTAX,
            format!("a sweep cannot be used as {what}"),
            span,
            "sweeps are only allowed as the whole value of an override (`key=choice(a,b)`)",
        )),
        Parsed::Extend(_, span) => Err(fn_error(
            text,
            CODE_SYNTAX,
            format!("extend_list(...) cannot be used as {what}"),
            span,
            "extend_list(...) must be the whole value: `key=extend_list(a, b)`",
        )),
    }
}

/// Evaluate `name(args)`.
pub(crate) fn call(
    text: &str,
    name: &str,
    name_span: Span,
    call_span: Span,
    args: Vec<Arg>,
) -> Result<Parsed> {
    let cx = Call {
        text,
        name,
        span: call_span,
    };
    match name {
        "int" | "float" | "str" | "bool" | "json_str" => cx.cast(args),
        "extend_list" => {
            cx.only_positional(&args)?;
            let mut items = Vec::with_capacity(args.len());
            for a in args {
                items.push(expect_value(text, a.value, "an extend_list item")?);
            }
            Ok(Parsed::Extend(items, call_span))
        }
        "choice" => cx.choice(args),
        "range" => cx.range(args),
        "interval" | "glob" | "tag" => cx.unsupported_sweep(args),
        "sort" => cx.sort(args),
        "shuffle" => cx.shuffle(args),
        _ => Err(fn_error(
            text,
            CODE_SYNTAX,
            format!("unknown function `{name}`"),
            name_span,
            &format!(
                "available functions: {FUNCTIONS}. For literal parentheses quote the value or escape them as `\\(` `\\)`"
            ),
        )),
    }
}

/// One function call being evaluated (the methods live here and in `reorder`).
pub(crate) struct Call<'a> {
    pub text: &'a str,
    pub name: &'a str,
    pub span: Span,
}

impl Call<'_> {
    pub(crate) fn err(&self, code: &'static str, msg: impl Into<String>, help: &str) -> Diag {
        fn_error(
            self.text,
            code,
            format!("{}(...): {}", self.name, msg.into()),
            self.span,
            help,
        )
    }

    fn only_positional(&self, args: &[Arg]) -> Result<()> {
        match args.iter().find_map(|a| a.name.as_ref()) {
            Some((n, _)) => Err(self.err(
                CODE_SYNTAX,
                format!("unexpected named argument `{n}`"),
                "pass the values positionally",
            )),
            None => Ok(()),
        }
    }

    /// Split into positional values and named values, checking names and order.
    pub(crate) fn split(&self, args: Vec<Arg>, names: &[&str]) -> Result<SplitArgs> {
        let mut positional = Vec::new();
        let mut named: Vec<(String, Parsed)> = Vec::new();
        for a in args {
            match a.name {
                Some((n, _)) => {
                    if !names.contains(&n.as_str()) {
                        return Err(self.err(
                            CODE_SYNTAX,
                            format!("unexpected named argument `{n}`"),
                            &format!("{} accepts: {}", self.name, names.join(", ")),
                        ));
                    }
                    named.push((n, a.value));
                }
                None if !named.is_empty() => {
                    return Err(self.err(
                        CODE_SYNTAX,
                        "positional argument follows keyword argument",
                        "put positional arguments first (this is not Python)",
                    ));
                }
                None => positional.push(a.value),
            }
        }
        Ok((positional, named))
    }

    fn cast(&self, args: Vec<Arg>) -> Result<Parsed> {
        let (mut positional, mut named) = self.split(args, &["value"])?;
        let value = match (positional.len(), named.pop()) {
            (0, Some((_, v))) => v,
            (_, Some(_)) => {
                return Err(self.err(
                    CODE_SYNTAX,
                    "cannot use both positional and named arguments",
                    "write either `int(3.5)` or `int(value=3.5)`",
                ));
            }
            (0, None) => {
                return Err(self.err(CODE_SYNTAX, "no value to cast", "write e.g. `int(3.5)`"));
            }
            (1, None) => positional.remove(0),
            (_, None) => {
                let mut items = Vec::new();
                for p in positional {
                    items.push(expect_value(self.text, p, "a choice item")?);
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
        };
        match value {
            Parsed::Value(n) => Ok(Parsed::Value(self.cast_node(&n, Some(self.span))?)),
            Parsed::Sweep(
                Sweep::Choice {
                    items,
                    simple,
                    shuffle,
                },
                span,
            ) => {
                let mut cast = Vec::with_capacity(items.len());
                for it in &items {
                    cast.push(self.cast_node(it, it.span)?);
                }
                Ok(Parsed::Sweep(
                    Sweep::Choice {
                        items: cast,
                        simple,
                        shuffle,
                    },
                    span,
                ))
            }
            Parsed::Sweep(Sweep::Range(r), span) => {
                if !matches!(self.name, "int" | "float") {
                    return Err(self.err(
                        CODE_TYPE,
                        "a range can only be cast to int or float",
                        "",
                    ));
                }
                Ok(Parsed::Sweep(
                    Sweep::Range(Box::new(RangeSweep {
                        start: self.cast_node(&r.start, r.start.span)?,
                        stop: self.cast_node(&r.stop, r.stop.span)?,
                        step: self.cast_node(&r.step, r.step.span)?,
                        shuffle: r.shuffle,
                    })),
                    span,
                ))
            }
            s @ Parsed::Sweep(Sweep::Unsupported { .. }, _) => Ok(s),
            Parsed::Extend(_, _) => Err(self.err(
                CODE_SYNTAX,
                "extend_list(...) cannot be cast",
                "cast the items instead: `extend_list(int(1), int(2))`",
            )),
        }
    }

    fn cast_node(&self, n: &Node, span: Option<Span>) -> Result<Node> {
        if self.name == "json_str" {
            return Ok(Node::spanned(Value::Str(python_json(n)), span));
        }
        let value = match &n.value {
            Value::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    out.push(self.cast_node(it, it.span)?);
                }
                Value::List(out)
            }
            Value::Map(m) => {
                let mut out = m.clone();
                for (k, v) in m {
                    let mut c = self.cast_node(v, v.span)?;
                    c.key_span = v.key_span;
                    c.key_kind = v.key_kind;
                    out.insert(k.clone(), c);
                }
                Value::Map(out)
            }
            scalar => self.cast_scalar(scalar)?,
        };
        Ok(Node::spanned(value, span))
    }

    fn cast_scalar(&self, v: &Value) -> Result<Value> {
        let shown = crate::config::node::python_str(&Node::new(v.clone()));
        let fail = || {
            self.err(
                CODE_TYPE,
                format!("cannot cast {} `{shown}` to {}", v.type_name(), self.name),
                "see Hydra's conversion matrix: e.g. int(\"10.0\") and bool(\"foo\") are errors",
            )
        };
        Ok(match (self.name, v) {
            (_, Value::Null) => return Err(fail()),
            ("int", Value::Int(i)) => Value::Int(*i),
            ("int", Value::Bool(b)) => Value::Int(i64::from(*b)),
            ("int", Value::Float(f)) => {
                let t = f.trunc();
                if !t.is_finite() || t < i64::MIN as f64 || t >= i64::MAX as f64 {
                    return Err(fail());
                }
                Value::Int(t as i64)
            }
            ("int", Value::Str(s)) => Value::Int(python_int(s).ok_or_else(fail)?),
            ("float", Value::Int(i)) => Value::Float(*i as f64),
            ("float", Value::Bool(b)) => Value::Float(if *b { 1.0 } else { 0.0 }),
            ("float", Value::Float(f)) => Value::Float(*f),
            ("float", Value::Str(s)) => Value::Float(python_float(s).ok_or_else(fail)?),
            ("str", Value::Bool(b)) => Value::Str(b.to_string()),
            ("str", Value::Int(i)) => Value::Str(i.to_string()),
            ("str", Value::Float(f)) => Value::Str(python_float_repr(*f)),
            ("str", Value::Str(s)) => Value::Str(s.clone()),
            ("bool", Value::Bool(b)) => Value::Bool(*b),
            ("bool", Value::Int(i)) => Value::Bool(*i != 0),
            ("bool", Value::Float(f)) => Value::Bool(*f != 0.0),
            ("bool", Value::Str(s)) => match s.to_ascii_lowercase().as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => return Err(fail()),
            },
            _ => return Err(fail()),
        })
    }

    fn choice(&self, args: Vec<Arg>) -> Result<Parsed> {
        self.only_positional(&args)?;
        let mut values: Vec<Parsed> = args.into_iter().map(|a| a.value).collect();
        if values.is_empty() {
            return Err(self.err(
                CODE_SYNTAX,
                "empty choice is not legal",
                "write `choice(a, b)`",
            ));
        }
        // choice(a,b) with one simple-choice argument is the same sweep, no longer "simple".
        if let [
            Parsed::Sweep(
                Sweep::Choice {
                    items,
                    simple,
                    shuffle,
                },
                _,
            ),
        ] = values.as_slice()
        {
            if !*simple {
                return Err(self.err(CODE_SYNTAX, "nesting choices is not supported", ""));
            }
            return Ok(Parsed::Sweep(
                Sweep::Choice {
                    items: items.clone(),
                    simple: false,
                    shuffle: *shuffle,
                },
                self.span,
            ));
        }
        let mut items = Vec::with_capacity(values.len());
        for v in values.drain(..) {
            items.push(expect_value(self.text, v, "a choice item")?);
        }
        Ok(Parsed::Sweep(
            Sweep::Choice {
                items,
                simple: false,
                shuffle: false,
            },
            self.span,
        ))
    }

    fn number(&self, p: Parsed, what: &str) -> Result<Node> {
        let n = expect_value(self.text, p, what)?;
        match n.value {
            Value::Int(_) | Value::Float(_) => Ok(n),
            _ => Err(self.err(
                CODE_TYPE,
                format!("{what} must be a number, not {}", n.type_name()),
                "write e.g. `range(0, 10, 2)` or `range(0, 1, 0.25)`",
            )),
        }
    }

    fn range(&self, args: Vec<Arg>) -> Result<Parsed> {
        let (positional, named) = self.split(args, &["start", "stop", "step"])?;
        let mut slots: [Option<Parsed>; 3] = [None, None, None];
        if positional.len() > 3 {
            return Err(self.err(
                CODE_SYNTAX,
                "takes at most 3 arguments",
                "range(start, stop, step)",
            ));
        }
        for (i, p) in positional.into_iter().enumerate() {
            slots[i] = Some(p);
        }
        for (n, p) in named {
            let i = ["start", "stop", "step"]
                .iter()
                .position(|x| *x == n)
                .unwrap_or(2);
            if slots[i].is_some() {
                return Err(self.err(CODE_SYNTAX, format!("got multiple values for `{n}`"), ""));
            }
            slots[i] = Some(p);
        }
        let [start, stop, step] = slots;
        let Some(start) = start else {
            return Err(self.err(CODE_SYNTAX, "missing `start`", "range(start, stop, step)"));
        };
        let start = self.number(start, "start")?;
        let (start, stop) = match stop {
            Some(stop) => (start, self.number(stop, "stop")?),
            None => (Node::spanned(Value::Int(0), Some(self.span)), start),
        };
        let step = match step {
            Some(s) => self.number(s, "step")?,
            None => Node::spanned(Value::Int(1), Some(self.span)),
        };
        Ok(Parsed::Sweep(
            Sweep::Range(Box::new(RangeSweep {
                start,
                stop,
                step,
                shuffle: false,
            })),
            self.span,
        ))
    }

    fn unsupported_sweep(&self, args: Vec<Arg>) -> Result<Parsed> {
        let function = match self.name {
            "interval" => "interval",
            "glob" => "glob",
            _ => {
                // tag(a, b, SWEEP): the tags are metadata for optimising sweepers.
                return match args.into_iter().last().map(|a| a.value) {
                    Some(s @ Parsed::Sweep(..)) => Ok(s),
                    _ => Err(self.err(
                        CODE_SYNTAX,
                        "the last argument must be a choice(), range() or interval()",
                        "",
                    )),
                };
            }
        };
        Ok(Parsed::Sweep(Sweep::Unsupported { function }, self.span))
    }
}
