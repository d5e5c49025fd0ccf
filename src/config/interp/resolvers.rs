//! Built-in resolvers: `user`, every OmegaConf 2.3 built-in (`oc.env`, `oc.select`,
//! `oc.decode`, `oc.create`, `oc.deprecated`, `oc.dict.keys`, `oc.dict.values`; see
//! `omegaconf/resolvers/oc/__init__.py` and `oc/dict.py`), and
//! NeMo-RL's arithmetic `mul`, `div`, `max`, `add`, `sub` (Python semantics: int op int
//! stays int except `/`, mixing in a float gives a float, bools count as ints, `+`
//! concatenates strings and lists, `*` repeats them).

use super::ast::Interp;
use super::errors::{self, Fail, R};
use super::eval::{Engine, Site, Val};
use super::parser::parse_element;
use super::walk::{Cursor, Miss, path_of, split_select_key};
use crate::config::env::username;
use crate::config::node::{KeyKind, Map, Node, Value, python_str};
use crate::config::source::{SourceKind, add_source};
use crate::config::yaml::parse_source;
use crate::diag::Diag;

impl<'a> Engine<'a> {
    pub fn call_resolver(
        &mut self,
        name: &str,
        args: Vec<Val<'a>>,
        from_config: &[bool],
        site: Site<'_, 'a>,
        interp: &Interp,
    ) -> R<Val<'a>> {
        let fail =
            |message: String, help: String| errors::resolver_failed(site, interp, message, help);
        let arity = |min: usize, max: usize, usage: &str| {
            if (min..=max).contains(&args.len()) {
                Ok(())
            } else {
                Err(fail(
                    format!(
                        "`{name}` takes {} argument(s), got {}",
                        expected(min, max),
                        args.len()
                    ),
                    format!("write `{usage}`"),
                ))
            }
        };
        match name {
            "user" => {
                arity(0, 0, "${user:}")?;
                let env = self.env;
                let user = self.user.get_or_insert_with(|| username(env));
                Ok(Val::Owned(Node::str(user.clone())))
            }
            "oc.env" => {
                arity(1, 2, "${oc.env:VAR}` or `${oc.env:VAR,default}")?;
                let Some(var) = args[0].as_str() else {
                    return Err(fail(
                        format!(
                            "`oc.env` needs a variable name, got {} {}",
                            args[0].type_name(),
                            *args[0]
                        ),
                        "write the variable name: `${oc.env:HOME}`".into(),
                    ));
                };
                if let Some(refusal) = self.guard.and_then(|g| g.refuse(var)) {
                    return Err(errors::env_refused(site, interp, refusal));
                }
                match (self.env.var(var), args.get(1)) {
                    (Some(v), _) => Ok(Val::Owned(Node::str(v))),
                    // The default goes through Python's str(), except null.
                    (None, Some(d)) if d.is_null() => Ok(Val::Owned(Node::null())),
                    (None, Some(d)) => Ok(Val::Owned(Node::str(python_str(d)))),
                    (None, None) => Err(fail(
                        format!("Environment variable '{var}' not found"),
                        format!(
                            "set {var} in the environment, or give a default: `${{oc.env:{var},default}}`"
                        ),
                    )),
                }
            }
            "oc.select" => {
                arity(1, 2, "${oc.select:key}` or `${oc.select:key,default}")?;
                let mut args = args;
                let default = if args.len() == 2 { args.pop() } else { None };
                let Some(key) = args[0].as_str().map(str::to_string) else {
                    return Err(fail(
                        format!(
                            "`oc.select` needs a key, got {} {}",
                            args[0].type_name(),
                            *args[0]
                        ),
                        "write the key as text: `${oc.select:a.b,default}`".into(),
                    ));
                };
                self.select(&key, default, site, interp)
            }
            "oc.decode" => {
                arity(1, 1, "${oc.decode:${oc.env:VAR}}")?;
                match &args[0].value {
                    Value::Null => Ok(Val::Owned(Node::null())),
                    Value::Str(s) => {
                        let s = s.clone();
                        let el = parse_element(&s).map_err(|e| {
                            let d: Diag = errors::syntax(site.span(), &s, &e);
                            d.context(format!("`oc.decode` could not parse {s:?}"))
                        })?;
                        // A decoded string can decode again (`${oc.decode:${oc.env:X}}` with X
                        // holding the same text); bound that recursion.
                        if self.decodes >= MAX_DECODE_DEPTH {
                            return Err(fail(
                                format!("`oc.decode` nested more than {MAX_DECODE_DEPTH} levels deep"),
                                "a decoded value keeps decoding itself; check the variable it reads".into(),
                            ));
                        }
                        self.decodes += 1;
                        let inner = Site {
                            chain: site.chain,
                            text: &s,
                        };
                        let v = self.eval_element(&el, inner);
                        self.decodes -= 1;
                        v
                    }
                    _ => Err(fail(
                        format!(
                            "`oc.decode` can only take strings or None as input, but `{}` is of type {}",
                            python_str(&args[0]),
                            py_type(&args[0])
                        ),
                        "pass a string, e.g. `${oc.decode:${oc.env:PORT}}`".into(),
                    )),
                }
            }
            "oc.create" => {
                arity(1, 1, "${oc.create:{a: 1}}` or `${oc.create:'{a: 1}'}")?;
                self.create(&args[0], site, interp)
            }
            "oc.deprecated" => {
                arity(
                    1,
                    2,
                    "${oc.deprecated:new.key}` or `${oc.deprecated:new.key,message}",
                )?;
                let Some(key) = args[0].as_str().map(str::to_string) else {
                    return Err(fail(
                        format!(
                            "oc.deprecated: interpolation key type is not a string ({})",
                            py_type(&args[0])
                        ),
                        "write the new key as text: `${oc.deprecated:new.key}`".into(),
                    ));
                };
                if let Some(m) = args.get(1).filter(|m| m.as_str().is_none()) {
                    return Err(fail(
                        format!(
                            "oc.deprecated: interpolation message type is not a string ({})",
                            py_type(m)
                        ),
                        "quote the message".into(),
                    ));
                }
                match self.select_raw(&key, site, interp)? {
                    Some(found) => self.value_of(found, site, interp),
                    None => Err(fail(
                        format!(
                            "In oc.deprecated resolver at '{}': Key not found: '{key}'",
                            site.path()
                        ),
                        "point `oc.deprecated` at the key that replaced this one".into(),
                    )),
                }
            }
            "oc.dict.keys" | "oc.dict.values" => {
                arity(1, 1, &format!("${{{name}:key}}"))?;
                let Some(key) = args[0].as_str().map(str::to_string) else {
                    return Err(fail(
                        format!(
                            "`{name}` requires a string as input, but obtained `{}` of type: {}",
                            python_str(&args[0]),
                            py_type(&args[0])
                        ),
                        format!("write the key of a mapping: `${{{name}:labels}}`"),
                    ));
                };
                let Some(found) = self.select_raw(&key, site, interp)? else {
                    return Err(fail(
                        format!("Key not found: '{key}'"),
                        format!("`{name}` needs the key of a mapping"),
                    ));
                };
                if let Cursor::Raw(chain) = &found
                    && chain.last().is_some_and(|f| f.node.is_missing())
                {
                    return Err(errors::to_missing(site, interp, chain));
                }
                // `oc.dict.keys` reads the keys without resolving the values (so a key
                // may sit inside the mapping it lists); `oc.dict.values` resolves them.
                let raw_map = match &found {
                    Cursor::Raw(chain) if name == "oc.dict.keys" => chain
                        .last()
                        .filter(|f| matches!(f.node.value, Value::Map(_)))
                        .map(|f| f.node),
                    _ => None,
                };
                let dict = match raw_map {
                    Some(n) => Val::Borrowed(n),
                    None => self.value_of(found, site, interp)?,
                };
                let Value::Map(m) = &dict.value else {
                    return Err(fail(
                        format!(
                            "`{name}` cannot be applied to objects of type: {}",
                            omegaconf_type(&dict)
                        ),
                        format!("`{name}` needs the key of a mapping"),
                    ));
                };
                let items = if name == "oc.dict.keys" {
                    m.iter().map(|(k, v)| key_node(k, v)).collect()
                } else {
                    // OmegaConf builds `${key.k}` for each value, and such a lookup cannot
                    // reach a non-string key (`8080:`).
                    if let Some((k, _)) = m.iter().find(|(_, v)| v.key_kind != KeyKind::Str) {
                        return Err(fail(
                            format!("Interpolation key '{key}.{k}' not found"),
                            format!("`oc.dict.values` reaches only string keys; `{k}` is not one"),
                        ));
                    }
                    if let Some((k, _)) = m.iter().find(|(_, v)| v.is_missing()) {
                        return Err(fail(
                            format!("Missing mandatory value: {key}.{k}"),
                            format!("give `{key}.{k}` a value"),
                        ));
                    }
                    m.values().cloned().collect()
                };
                Ok(Val::Owned(Node::list(items)))
            }
            "mul" | "div" | "max" | "add" | "sub" => {
                arity(2, 2, &format!("${{{name}:a,b}}"))?;
                let config_type = |i: usize| match args[i].value {
                    Value::List(_) if from_config.get(i) == Some(&true) => Some("ListConfig"),
                    Value::Map(_) if from_config.get(i) == Some(&true) => Some("DictConfig"),
                    _ => None,
                };
                if name == "mul" && (config_type(0).is_some() || config_type(1).is_some()) {
                    let left = config_type(0).unwrap_or_else(|| py_type(&args[0]));
                    let right = config_type(1).unwrap_or_else(|| py_type(&args[1]));
                    return Err(fail(
                        format!("unsupported operand type(s) for *: '{left}' and '{right}'"),
                        "a list from the config does not repeat with `mul`; write the list in the arguments".into(),
                    ));
                }
                arithmetic(name, &args[0], &args[1])
                    .map(Val::Owned)
                    .map_err(|m| {
                        fail(
                            m,
                            format!(
                                "`{name}` follows Python: numbers, or `+`/`*` on strings and lists"
                            ),
                        )
                    })
            }
            _ => {
                let raw = errors::interp_text(site, interp);
                let first_arg = raw.split_once(':').map_or("", |(_, a)| a.trim_start());
                Err(errors::unknown_resolver(site, interp, name, first_arg))
            }
        }
    }

    /// `oc.select`: the value at `key` (absolute, or relative with leading dots), or the
    /// default (else null) when it is missing or `???`.
    fn select(
        &mut self,
        key: &str,
        default: Option<Val<'a>>,
        site: Site<'_, 'a>,
        interp: &Interp,
    ) -> R<Val<'a>> {
        let fallback = default.unwrap_or(Val::Owned(Node::null()));
        let (dots, keys) = split_select_key(key);
        let Some(start) = self.start_chain(dots, site) else {
            return Err(errors::above_root(site, interp, key));
        };
        match self.walk(start, &keys)? {
            Ok(Cursor::Raw(chain)) if chain.last().is_some_and(|f| f.node.is_missing()) => {
                Ok(fallback)
            }
            Ok(found) => self.value_of(found, site, interp),
            // A non-integer list index is an error even here (OmegaConf raises TypeError).
            Err(miss @ Miss::BadIndex { .. }) => {
                let base = path_of(&self.start_chain(dots, site).unwrap_or_default());
                let report = errors::KeyReport {
                    relative: dots > 0,
                    written: key,
                    base: &base,
                    keys: &keys,
                };
                Err(errors::missing_key(site, interp, &report, miss))
            }
            Err(_) => Ok(fallback),
        }
    }
}

impl<'a> Engine<'a> {
    /// What `key` (absolute, or relative with leading dots) points at; `None` when it
    /// does not exist (OmegaConf's `select_value` with a default marker).
    fn select_raw(
        &mut self,
        key: &str,
        site: Site<'_, 'a>,
        interp: &Interp,
    ) -> R<Option<Cursor<'a>>> {
        let (dots, keys) = split_select_key(key);
        let Some(start) = self.start_chain(dots, site) else {
            return Err(errors::above_root(site, interp, key));
        };
        Ok(self.walk(start, &keys)?.ok())
    }

    /// `oc.create`: a container from a dict or list argument, or from a YAML string
    /// (OmegaConf.create: an empty document is `{}`, a plain string `s` is `{s: None}`).
    fn create(&mut self, arg: &Node, site: Site<'_, 'a>, interp: &Interp) -> R<Val<'a>> {
        let fail =
            |message: String, help: String| errors::resolver_failed(site, interp, message, help);
        let node = match &arg.value {
            Value::Map(_) | Value::List(_) | Value::Null => arg.clone(),
            Value::Str(s) => {
                let src = add_source(
                    format!("<oc.create at {}>", site.path()),
                    None,
                    s.as_str(),
                    SourceKind::Text,
                );
                let doc = parse_source(src).map_err(|d| {
                    Fail::from(d.context(format!("`oc.create` could not parse {s:?}")))
                })?;
                match doc.value {
                    Value::Null => Node::from_map(Map::new()),
                    Value::Str(k) => {
                        let mut m = Map::new();
                        m.insert(k, Node::null());
                        Node::from_map(m)
                    }
                    Value::Map(_) | Value::List(_) => doc,
                    _ => {
                        return Err(fail(
                            format!("`oc.create` cannot create a config from {s:?}"),
                            "give a YAML mapping or list: `${oc.create:'{team: rl}'}`".into(),
                        ));
                    }
                }
            }
            _ => {
                return Err(fail(
                    format!("Object of unsupported type: '{}'", py_type(arg)),
                    "give a mapping or list, or a YAML string of one".into(),
                ));
            }
        };
        if contains_interpolation(&node) {
            return Err(fail(
                "`oc.create` made a config that holds interpolations; nrl resolves only \
                 interpolations that live in the recipe itself"
                    .into(),
                "write the interpolations in the arguments instead (they resolve first)".into(),
            ));
        }
        Ok(Val::Owned(node))
    }
}

fn contains_interpolation(n: &Node) -> bool {
    match &n.value {
        Value::Str(s) => s.contains("${"),
        Value::List(items) => items.iter().any(contains_interpolation),
        Value::Map(m) => m.values().any(contains_interpolation),
        _ => false,
    }
}

/// A mapping key as the Python value OmegaConf's `keys()` returns (`8080:` is an int).
fn key_node(k: &str, v: &Node) -> Node {
    let value = match v.key_kind {
        KeyKind::Int => k.parse().map_or_else(|_| Value::Str(k.into()), Value::Int),
        KeyKind::Float => k
            .parse()
            .map_or_else(|_| Value::Str(k.into()), Value::Float),
        KeyKind::Bool => Value::Bool(k == "True"),
        KeyKind::Null => Value::Null,
        KeyKind::Str => Value::Str(k.into()),
    };
    Node::new(value)
}

/// OmegaConf's class name for a selected value, as in its TypeError messages.
fn omegaconf_type(n: &Node) -> &'static str {
    match n.value {
        Value::List(_) => "ListConfig",
        _ => py_type(n),
    }
}

const MAX_DECODE_DEPTH: usize = 16;

fn expected(min: usize, max: usize) -> String {
    if min == max {
        min.to_string()
    } else {
        format!("{min} or {max}")
    }
}

/// Python's name for a value's type, as in its error messages.
fn py_type(n: &Node) -> &'static str {
    match n.value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(_) => "float",
        Value::Str(_) => "str",
        Value::List(_) => "list",
        Value::Map(_) => "dict",
    }
}

#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

fn num(n: &Node) -> Option<Num> {
    match n.value {
        Value::Bool(b) => Some(Num::Int(i64::from(b))),
        Value::Int(i) => Some(Num::Int(i)),
        Value::Float(f) => Some(Num::Float(f)),
        _ => None,
    }
}

fn as_f64(n: Num) -> f64 {
    match n {
        Num::Int(i) => i as f64,
        Num::Float(f) => f,
    }
}

/// Repetition count for `str * int` / `list * int` (bools count; negatives give empty).
fn times(n: &Node) -> Option<usize> {
    match num(n)? {
        Num::Int(i) => Some(usize::try_from(i).unwrap_or(0)),
        Num::Float(_) => None,
    }
}

const MAX_REPEAT: usize = 1 << 24;

fn arithmetic(op: &str, a: &Node, b: &Node) -> Result<Node, String> {
    let symbol = match op {
        "mul" => "*",
        "div" => "/",
        "add" => "+",
        "sub" => "-",
        _ => ">",
    };
    let unsupported = || {
        if op == "max" {
            format!(
                "'>' not supported between instances of '{}' and '{}'",
                py_type(b),
                py_type(a)
            )
        } else {
            format!(
                "unsupported operand type(s) for {symbol}: '{}' and '{}'",
                py_type(a),
                py_type(b)
            )
        }
    };
    let overflow = || format!("integer overflow in `{op}` (nrl uses 64-bit integers)");
    if let (Some(x), Some(y)) = (num(a), num(b)) {
        let value = match (op, x, y) {
            ("div", _, y) if as_f64(y) == 0.0 => return Err("division by zero".into()),
            ("div", x, y) => Value::Float(as_f64(x) / as_f64(y)),
            ("max", x, y) => {
                let bigger = match (x, y) {
                    (Num::Int(x), Num::Int(y)) => y > x,
                    (x, y) => as_f64(y) > as_f64(x),
                };
                return Ok(Node::new(if bigger {
                    b.value.clone()
                } else {
                    a.value.clone()
                }));
            }
            (_, Num::Int(x), Num::Int(y)) => Value::Int(
                match op {
                    "mul" => x.checked_mul(y),
                    "add" => x.checked_add(y),
                    _ => x.checked_sub(y),
                }
                .ok_or_else(overflow)?,
            ),
            (_, x, y) => {
                let (x, y) = (as_f64(x), as_f64(y));
                Value::Float(match op {
                    "mul" => x * y,
                    "add" => x + y,
                    _ => x - y,
                })
            }
        };
        return Ok(Node::new(value));
    }
    let value = match (op, &a.value, &b.value) {
        ("add", Value::Str(x), Value::Str(y)) => Value::Str(format!("{x}{y}")),
        ("add", Value::List(x), Value::List(y)) => {
            Value::List(x.iter().chain(y).cloned().collect())
        }
        ("max", Value::Str(x), Value::Str(y)) => Value::Str(if y > x { y } else { x }.clone()),
        ("mul", Value::Str(s), _) | ("mul", _, Value::Str(s)) => {
            let n = times(if matches!(a.value, Value::Str(_)) {
                b
            } else {
                a
            })
            .ok_or_else(unsupported)?;
            if n.saturating_mul(s.len()) > MAX_REPEAT {
                return Err(format!(
                    "`mul` would build a string of more than {MAX_REPEAT} bytes"
                ));
            }
            Value::Str(s.repeat(n))
        }
        ("mul", Value::List(l), _) | ("mul", _, Value::List(l)) => {
            let n = times(if matches!(a.value, Value::List(_)) {
                b
            } else {
                a
            })
            .ok_or_else(unsupported)?;
            if n.saturating_mul(l.len()) > MAX_REPEAT {
                return Err(format!(
                    "`mul` would build a list of more than {MAX_REPEAT} items"
                ));
            }
            Value::List((0..n).flat_map(|_| l.iter().cloned()).collect())
        }
        _ => return Err(unsupported()),
    };
    Ok(Node::new(value))
}
