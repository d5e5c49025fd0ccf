//! Applying overrides to a config tree (Hydra's `_apply_overrides_to_config` over
//! `OmegaConf.update(..., merge=True)`).
//!
//! The recipe side runs in struct mode like NeMo-RL (a missing key needs `+`); the infra
//! side creates missing keys. Dict values merge into an existing mapping, lists replace,
//! `extend_list` appends, null replaces anything. Errors point at the override argument
//! and, where there is one, at the config line that holds the existing value.

use super::{CODE_DELETE, CODE_EXISTS, CODE_MISSING, CODE_TYPE, Op, Override, Side, dotted};
use crate::config::env::Env;
use crate::config::interp;
use crate::config::node::{Map, Node, Value, deep_merge, python_str};
use crate::config::source::Span;
use crate::diag::{Diag, Result};

/// Apply overrides in order; stops at the first error.
pub fn apply_all(root: &mut Node, ovs: &[Override], side: Side) -> Result<()> {
    ovs.iter().try_for_each(|ov| apply(root, ov, side))
}

/// [`apply_all`] where `+key` and `~key` look at the value as Hydra does: through
/// `OmegaConf.select`, which resolves an interpolation first (so `~k` on `k: ${missing}`
/// fails, and `+k=v` on `k: ${something_null}` adds). Used for the recipe, with the
/// environment interpolations read.
pub fn apply_all_resolving(
    root: &mut Node,
    ovs: &[Override],
    side: Side,
    env: &dyn Env,
) -> Result<()> {
    ovs.iter()
        .try_for_each(|ov| apply_with(root, ov, side, Some(env)))
}

/// Apply one override to `root` (the merged recipe, or the merged infra mapping).
pub fn apply(root: &mut Node, ov: &Override, side: Side) -> Result<()> {
    apply_with(root, ov, side, None)
}

fn apply_with(root: &mut Node, ov: &Override, side: Side, env: Option<&dyn Env>) -> Result<()> {
    let cx = Cx {
        ov,
        strict: side == Side::Recipe,
    };
    // What Hydra's `select` sees at the key, when that is an interpolation.
    let selected = match (env, ov.op) {
        (Some(env), Op::Add | Op::Delete) => cx.select_interpolation(root, env)?,
        _ => None,
    };
    if let Some(v) = &selected
        && ov.op == Op::Add
        && v.is_null()
        && !ov.extend_list
    {
        // `select` gave None: Hydra adds (force_add), replacing the interpolation.
        let mut forced = ov.clone();
        forced.op = Op::ForceAdd;
        return apply_with(root, &forced, side, None);
    }
    if let (Some(v), Op::Delete) = (&selected, ov.op) {
        cx.check_delete_value(v)?;
        // Checked against the resolved value; now delete whatever is stored.
        let mut plain = ov.clone();
        plain.value = None;
        return apply_with(root, &plain, side, None);
    }
    if ov.path.is_empty() {
        return Err(
            Diag::new(CODE_TYPE, format!("override `{}` has no key", ov.text))
                .label(Some(ov.key_span), "no key")
                .help("write `key=value`"),
        );
    }
    if root.is_null() {
        *root = Node::spanned(Value::Map(Map::new()), root.span);
    }
    match ov.op {
        Op::Delete => cx.delete(root),
        _ if ov.extend_list => cx.extend(root),
        _ => cx.set(root),
    }
}

struct Cx<'a> {
    ov: &'a Override,
    /// Struct mode: `key=value` may not create keys.
    strict: bool,
}

/// What sits at a key, decided before mutating.
enum Slot {
    Missing,
    /// `null` or `???`: Hydra's `select` returns None for both.
    Empty,
    Container,
    Scalar(&'static str, Option<Span>),
}

fn slot(n: Option<&Node>) -> Slot {
    match n {
        None => Slot::Missing,
        Some(n) if n.is_null() || n.is_missing() => Slot::Empty,
        Some(n) if n.value.is_container() => Slot::Container,
        Some(n) => Slot::Scalar(n.type_name(), n.best_span()),
    }
}

impl Cx<'_> {
    /// The resolved value at the override's key when the stored value is an
    /// interpolation; a resolution failure is the override's error (Hydra: "Error merging
    /// override").
    fn select_interpolation(&self, root: &Node, env: &dyn Env) -> Result<Option<Node>> {
        if self.ov.path.iter().any(|s| s.contains('.')) {
            return Ok(None);
        }
        let mut cur = root;
        for (i, seg) in self.ov.path.iter().enumerate() {
            if i > 0 && interp::needs_eval(cur) {
                // `OmegaConf.select` resolves an interpolation it walks through, so a key
                // under an interpolation that fails to resolve fails the override.
                let prefix = self.ov.path[..i].join(".");
                interp::resolve_path(root, &prefix, env)
                    .map_err(|d| d.context(format!("Error merging override {}", self.ov.text)))?;
                return Ok(None);
            }
            match cur.child(seg) {
                Some(n) => cur = n,
                None => return Ok(None),
            }
        }
        if !interp::needs_eval(cur) {
            return Ok(None);
        }
        let dotted_path = self.ov.path.join(".");
        interp::resolve_path(root, &dotted_path, env)
            .map(Some)
            .map_err(|d| d.context(format!("Error merging override {}", self.ov.text)))
    }

    /// `~key=value` and `~key` against the resolved value of an interpolation.
    fn check_delete_value(&self, resolved: &Node) -> Result<()> {
        let key = self.ov.display_key();
        if resolved.is_null() {
            return Err(self.cannot_delete(self.ov.path.len() - 1, None));
        }
        // Hydra compares only when the value is not None: `~k=null` is `~k`.
        if let Some(expected) = &self.ov.value
            && !expected.is_null()
            && !python_eq(&resolved.value, &expected.value)
        {
            return Err(Diag::new(
                CODE_DELETE,
                format!(
                    "Could not delete from config. The value of '{key}' is {} and not {}.",
                    python_str(resolved),
                    python_str(expected)
                ),
            )
            .label(expected.span, "expected this value")
            .help(format!("to delete it whatever its value, write `~{key}`")));
        }
        Ok(())
    }

    fn seg_span(&self, i: usize) -> Span {
        self.ov
            .segment_spans
            .get(i)
            .copied()
            .unwrap_or(self.ov.key_span)
    }

    /// The key up to and including segment `i`, as the user knows it.
    fn key_upto(&self, i: usize) -> String {
        let end = (i + 1).min(self.ov.path.len());
        let k = dotted(&self.ov.path[..end]);
        match self.ov.side {
            Side::Recipe | Side::Gym => k,
            Side::Infra => format!("infra.{k}"),
        }
    }

    fn parent_name(&self, i: usize) -> String {
        if i == 0 {
            match self.ov.side {
                Side::Recipe => "the top level of the recipe".into(),
                Side::Infra => "`infra`".into(),
                Side::Gym => "the top level of the Gym config".into(),
            }
        } else {
            format!("`{}`", self.key_upto(i - 1))
        }
    }

    fn append_hint(&self) -> String {
        format!("To append to your config use +{}", self.ov.text)
    }

    /// "Could not override" for a key that does not exist at segment `i` of the path.
    fn missing(&self, i: usize, keys: Option<&Map>) -> Diag {
        let seg = &self.ov.path[i];
        let mut help = String::new();
        match keys.and_then(|m| did_you_mean(seg, m.keys())) {
            // The override as it was likely meant: the same text with the key fixed.
            Some(best) => {
                let mut fixed = self.ov.path.clone();
                fixed[i] = best;
                let text = self
                    .ov
                    .text
                    .replacen(&dotted(&self.ov.path), &dotted(&fixed), 1);
                help.push_str(&format!(
                    "did you mean `{text}`? (to add `{}` as a new key: +{})",
                    self.key_upto(self.ov.path.len()),
                    self.ov.text
                ));
            }
            None => help.push_str(&self.append_hint()),
        }
        let what = match keys {
            Some(_) => format!("`{seg}` is not a key of {}", self.parent_name(i)),
            None => format!("{} is null, so it has no `{seg}`", self.parent_name(i)),
        };
        Diag::new(
            CODE_MISSING,
            format!("Could not override '{}'", self.ov.display_key()),
        )
        .label(Some(self.seg_span(i)), what)
        .help(help)
    }

    fn not_a_container(&self, i: usize, ty: &str, at: Option<Span>) -> Diag {
        let key = self.key_upto(i);
        Diag::new(
            CODE_TYPE,
            format!(
                "Could not override '{}': `{key}` is a {ty}, not a mapping",
                self.ov.display_key()
            ),
        )
        .label(Some(self.seg_span(i)), format!("`{key}` holds a {ty}"))
        .label(at, "set here")
        .help(format!(
            "to replace `{key}` with a mapping use ++{}; to change `{key}` itself write `{key}=…`",
            self.ov.text.trim_start_matches(['+', '~'])
        ))
    }

    fn list_index(&self, i: usize, len: usize) -> Result<usize> {
        let seg = &self.ov.path[i];
        let list = self.key_upto(i.saturating_sub(1));
        let at = Some(self.seg_span(i));
        match seg.parse::<usize>() {
            Ok(idx) if idx < len => Ok(idx),
            Ok(idx) => Err(Diag::new(
                CODE_TYPE,
                format!("Could not override '{}': index {idx} is out of range", self.ov.display_key()),
            )
            .label(at, format!("`{list}` has {len} item(s)"))
            .help(format!(
                "an index cannot grow a list; append with `{list}=extend_list(…)` or replace it with `{list}=[…]`"
            ))),
            Err(_) => Err(Diag::new(
                CODE_TYPE,
                format!("Could not override '{}': `{list}` is a list", self.ov.display_key()),
            )
            .label(at, format!("`{seg}` is not a list index"))
            .help(format!("address list items by position, as in `{list}.0`"))),
        }
    }

    /// A mapping created for a missing or null intermediate key.
    fn new_map(&self, i: usize) -> Node {
        let sp = Some(self.seg_span(i));
        Node {
            value: Value::Map(Map::new()),
            span: sp,
            key_span: sp,
            key_kind: Default::default(),
        }
    }

    /// Step from `cur` into segment `i`, creating or replacing as the op and mode allow.
    fn descend<'n>(&self, cur: &'n mut Node, i: usize) -> Result<&'n mut Node> {
        let seg = self.ov.path[i].as_str();
        let op = self.ov.op;
        let may_create = op != Op::Set || !self.strict;
        let cur_span = cur.best_span();
        let cur_type = cur.type_name();
        match &mut cur.value {
            Value::Map(m) => {
                match slot(m.get(seg)) {
                    Slot::Container => {}
                    Slot::Missing if may_create => {
                        m.insert(seg.to_string(), self.new_map(i));
                    }
                    Slot::Missing => return Err(self.missing(i, Some(m))),
                    Slot::Empty if may_create => self.replace_with_map(m.get_mut(seg), i),
                    Slot::Empty => return Err(self.missing(i + 1, None)),
                    Slot::Scalar(ty, at) if op == Op::Set => {
                        return Err(self.not_a_container(i, ty, at));
                    }
                    // Hydra's force-add (used by `+` and `++`) replaces a scalar with {}.
                    Slot::Scalar(..) => self.replace_with_map(m.get_mut(seg), i),
                }
                m.get_mut(seg).ok_or_else(|| self.missing(i, None))
            }
            Value::List(l) => {
                let idx = self.list_index(i, l.len())?;
                let child = &mut l[idx];
                match slot(Some(child)) {
                    Slot::Container => {}
                    Slot::Empty if may_create => self.replace_with_map(Some(child), i),
                    Slot::Empty | Slot::Missing => return Err(self.missing(i + 1, None)),
                    Slot::Scalar(ty, at) if op == Op::Set => {
                        return Err(self.not_a_container(i, ty, at));
                    }
                    Slot::Scalar(..) => self.replace_with_map(Some(child), i),
                }
                Ok(child)
            }
            _ => Err(self.not_a_container(i.saturating_sub(1), cur_type, cur_span)),
        }
    }

    fn replace_with_map(&self, n: Option<&mut Node>, i: usize) {
        if let Some(n) = n {
            let key_span = n.key_span;
            *n = self.new_map(i);
            n.key_span = key_span.or(n.key_span);
        }
    }

    fn parent<'n>(&self, root: &'n mut Node) -> Result<&'n mut Node> {
        let mut cur = root;
        for i in 0..self.ov.path.len() - 1 {
            cur = self.descend(cur, i)?;
        }
        Ok(cur)
    }

    /// The override's value as it will sit in the tree.
    fn value_node(&self) -> Node {
        let mut v = self
            .ov
            .value
            .clone()
            .unwrap_or_else(|| Node::spanned(Value::Null, Some(self.ov.span)));
        v.key_span = Some(self.ov.key_span);
        v
    }

    fn set(&self, root: &mut Node) -> Result<()> {
        let last = self.ov.path.len() - 1;
        let seg = self.ov.path[last].as_str();
        let value = self.value_node();
        let strict_merge = self.ov.op == Op::Set && self.strict;
        let parent = self.parent(root)?;
        let parent_span = parent.best_span();
        let parent_type = parent.type_name();
        let target = match &mut parent.value {
            Value::Map(m) => {
                if !m.contains_key(seg) {
                    if strict_merge {
                        return Err(self.missing(last, Some(m)));
                    }
                    m.insert(seg.to_string(), value);
                    return Ok(());
                }
                m.get_mut(seg)
            }
            Value::List(l) => {
                let idx = self.list_index(last, l.len())?;
                l.get_mut(idx)
            }
            _ => {
                return Err(self.not_a_container(last.saturating_sub(1), parent_type, parent_span));
            }
        };
        let Some(target) = target else {
            return Err(self.missing(last, None));
        };
        let occupied = !(target.is_null() || target.is_missing());
        if self.ov.op == Op::Add && occupied && !value.value.is_container() {
            return Err(self.exists(target));
        }
        self.assign(target, value, strict_merge)
    }

    fn exists(&self, target: &Node) -> Diag {
        let key = self.ov.display_key();
        let plain = self.ov.text.trim_start_matches('+');
        Diag::new(
            CODE_EXISTS,
            format!("Could not append to config. An item is already at '{key}'."),
        )
        .label(Some(self.ov.key_span), format!("`{key}` is already set"))
        .label(target.best_span(), format!("currently {}", python_str(target)))
        .help(format!(
            "Either remove + prefix: '{plain}'\nOr add a second + to add or override '{key}': '++{plain}'"
        ))
    }

    /// Put `value` at `target`: mappings merge (struct-checked on the recipe side), lists
    /// and scalars replace.
    fn assign(&self, target: &mut Node, mut value: Node, strict: bool) -> Result<()> {
        match (&target.value, &value.value) {
            (Value::Map(have), Value::Map(_)) => {
                if strict {
                    self.check_struct(have, &value, &mut self.ov.path.clone())?;
                }
                // The mapping stays where the config file put it; merged children carry
                // the override's spans.
                deep_merge(target, value).map_err(|c| {
                    let path = if c.path.is_empty() {
                        self.ov.display_key()
                    } else {
                        format!("{}.{}", self.ov.display_key(), c.path)
                    };
                    self.merge_type_error(&path, c.base_type, c.base_span, c.over_type, c.over_span)
                })?;
                Ok(())
            }
            (Value::Map(_), Value::List(_)) | (Value::List(_), Value::Map(_)) => Err(self
                .merge_type_error(
                    &self.ov.display_key(),
                    target.type_name(),
                    target.best_span(),
                    value.type_name(),
                    value.span,
                )),
            _ => {
                value.key_kind = target.key_kind;
                *target = value;
                Ok(())
            }
        }
    }

    fn merge_type_error(
        &self,
        path: &str,
        have: &str,
        have_span: Option<Span>,
        got: &str,
        got_span: Option<Span>,
    ) -> Diag {
        Diag::new(
            CODE_TYPE,
            format!("Could not override '{path}': cannot merge a {got} into a {have}"),
        )
        .label(got_span, format!("a {got}"))
        .label(have_span, format!("`{path}` is a {have} here"))
        .help(format!(
            "a mapping value merges into a mapping and a list replaces a list; to replace the {have} \
             with a {got}, delete it first (`~{path}`) and add the new value with `+`"
        ))
    }

    /// Struct mode: merging a dict may not introduce keys (Hydra: "Key 'k' is not in struct").
    fn check_struct(&self, have: &Map, value: &Node, path: &mut Vec<String>) -> Result<()> {
        let Some(new) = value.as_map() else {
            return Ok(());
        };
        for (k, v) in new {
            match have.get(k) {
                None => {
                    let mut help = String::new();
                    if let Some(best) = did_you_mean(k, have.keys()) {
                        let mut fixed = path.clone();
                        fixed.push(best);
                        let prefix = if self.ov.side == Side::Infra {
                            "infra."
                        } else {
                            ""
                        };
                        help.push_str(&format!("did you mean `{prefix}{}`?\n", dotted(&fixed)));
                    }
                    help.push_str(&self.append_hint());
                    let parent = dotted(path);
                    return Err(Diag::new(
                        CODE_MISSING,
                        format!("Could not override '{}'", self.ov.display_key()),
                    )
                    .label(
                        v.key_span.or(v.span),
                        format!("`{k}` is not a key of `{parent}`"),
                    )
                    .help(help));
                }
                Some(existing) => {
                    if let (Some(inner), true) = (existing.as_map(), v.as_map().is_some()) {
                        path.push(k.clone());
                        self.check_struct(inner, v, path)?;
                        path.pop();
                    }
                }
            }
        }
        Ok(())
    }

    fn extend(&self, root: &mut Node) -> Result<()> {
        let last = self.ov.path.len() - 1;
        let seg = self.ov.path[last].as_str();
        let items = self.value_node();
        let parent = self.parent(root)?;
        let target = match &mut parent.value {
            Value::Map(m) => {
                if !m.contains_key(seg) {
                    if self.strict {
                        return Err(self.missing(last, Some(m)));
                    }
                    m.insert(seg.to_string(), items);
                    return Ok(());
                }
                m.get_mut(seg)
            }
            Value::List(l) => {
                let idx = self.list_index(last, l.len())?;
                l.get_mut(idx)
            }
            _ => None,
        };
        let Some(target) = target else {
            return Err(self.missing(last, None));
        };
        if (target.is_null() || target.is_missing()) && !self.strict {
            *target = Node {
                key_kind: target.key_kind,
                ..items
            };
            return Ok(());
        }
        let shown = python_str(target);
        let (ty, at) = (target.type_name(), target.best_span());
        match (target.as_list_mut(), items.value) {
            (Some(list), Value::List(new)) => {
                list.extend(new);
                Ok(())
            }
            _ => Err(Diag::new(
                CODE_TYPE,
                format!(
                    "Could not append to config list. The existing value of '{}' is {shown} which is not a list.",
                    self.ov.display_key()
                ),
            )
            .label(Some(self.ov.key_span), format!("a {ty}, not a list"))
            .label(at, "set here")
            .help("extend_list(...) appends to a list; to set the value write `key=value`")),
        }
    }

    fn delete(&self, root: &mut Node) -> Result<()> {
        let last = self.ov.path.len() - 1;
        let seg = self.ov.path[last].as_str();
        // Validate with a read-only walk first, so errors can name what is there.
        let mut cur: &Node = root;
        for i in 0..last {
            match cur.child(&self.ov.path[i]) {
                Some(n) if n.value.is_container() => cur = n,
                _ => return Err(self.cannot_delete(i, cur.as_map())),
            }
        }
        let existing = match cur.child(seg) {
            Some(n) if !(n.is_null() || n.is_missing()) => n,
            _ => return Err(self.cannot_delete(last, cur.as_map())),
        };
        // Hydra compares only when the value is not None: `~k=null` is `~k`.
        if let Some(expected) = &self.ov.value
            && !expected.is_null()
            && !python_eq(&existing.value, &expected.value)
        {
            let key = self.ov.display_key();
            return Err(Diag::new(
                CODE_DELETE,
                format!(
                    "Could not delete from config. The value of '{key}' is {} and not {}.",
                    python_str(existing),
                    python_str(expected)
                ),
            )
            .label(expected.span, "expected this value")
            .label(existing.best_span(), "the current value")
            .help(format!("to delete it whatever its value, write `~{key}`")));
        }
        let parent = node_at_mut(root, &self.ov.path[..last]);
        let removed = match parent.map(|p| &mut p.value) {
            Some(Value::Map(m)) => m.shift_remove(seg).is_some(),
            Some(Value::List(l)) => match seg.parse::<usize>() {
                Ok(i) if i < l.len() => {
                    l.remove(i);
                    true
                }
                _ => false,
            },
            _ => false,
        };
        if removed {
            Ok(())
        } else {
            Err(self.cannot_delete(last, None))
        }
    }

    fn cannot_delete(&self, i: usize, keys: Option<&Map>) -> Diag {
        let key = self.ov.display_key();
        let mut d = Diag::new(
            CODE_DELETE,
            format!("Could not delete from config. '{key}' does not exist."),
        )
        .label(
            Some(self.seg_span(i)),
            format!("`{}` is not set", self.key_upto(i)),
        );
        let suggestion = keys.and_then(|m| did_you_mean(&self.ov.path[i], m.keys()));
        d = match suggestion {
            Some(best) => {
                let mut fixed = self.ov.path.clone();
                fixed[i] = best;
                let prefix = if self.ov.side == Side::Infra {
                    "infra."
                } else {
                    ""
                };
                d.help(format!("did you mean `~{prefix}{}`?", dotted(&fixed)))
            }
            None => d.help(
                "only keys with a non-null value can be deleted (Hydra treats null as absent)",
            ),
        };
        d
    }
}

fn node_at_mut<'n>(root: &'n mut Node, path: &[String]) -> Option<&'n mut Node> {
    let mut cur = root;
    for seg in path {
        cur = cur.child_mut(seg)?;
    }
    Some(cur)
}

/// Python `==` between two config values (`1 == 1.0 == True`, dicts ignore order).
pub(crate) fn python_eq(a: &Value, b: &Value) -> bool {
    fn num(v: &Value) -> Option<f64> {
        match v {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            _ => None,
        }
    }
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| python_eq(&p.value, &q.value))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| python_eq(&v.value, &w.value)))
        }
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        },
    }
}

/// The closest candidate to `word`, if it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl Iterator<Item = &'a String>,
) -> Option<String> {
    let lower = word.to_lowercase();
    let mut best: Option<(f64, &String)> = None;
    for c in candidates {
        if c == word {
            continue;
        }
        let score = strsim::jaro_winkler(&lower, &c.to_lowercase());
        if score >= 0.8 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c.clone())
}
