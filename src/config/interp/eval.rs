//! The resolution engine: turns a tree with interpolations into plain data.
//!
//! Each interpolation string is evaluated at most once (memoised by node identity) and
//! each distinct string is parsed at most once (cached by content: the same
//! `${user:}` under fifty YAML aliases is one parse). Lookups walk the original tree by
//! reference; only results are built. A node being evaluated is marked busy, so a chain
//! that comes back to it is a cycle, reported with the whole chain.

use std::collections::HashMap;
use std::rc::Rc;

use super::ast::{Element, Interp, InterpKind, NamePart, Piece, SyntaxError, Template};
use super::errors::{self, Fail, R};
use super::parser::parse_template;
use super::walk::{Cursor, Frame, Key, path_of};
use crate::config::env::Env;
use crate::config::node::{KeyKind, Map, Node, Value, python_str};
use crate::config::source::Span;
use crate::diag::Diag;

/// A resolved value: borrowed from the tree when it needed no work, shared when it is
/// a memoised result, owned when freshly computed.
#[derive(Debug, Clone)]
pub(crate) enum Val<'a> {
    Borrowed(&'a Node),
    Shared(Rc<Node>),
    Owned(Node),
}

impl std::ops::Deref for Val<'_> {
    type Target = Node;
    fn deref(&self) -> &Node {
        match self {
            Val::Borrowed(n) => n,
            Val::Shared(n) => n,
            Val::Owned(n) => n,
        }
    }
}

impl Val<'_> {
    pub fn into_rc(self) -> Rc<Node> {
        match self {
            Val::Borrowed(n) => Rc::new(n.clone()),
            Val::Shared(n) => n,
            Val::Owned(n) => Rc::new(n),
        }
    }

    pub fn into_node(self) -> Node {
        match self {
            Val::Borrowed(n) => n.clone(),
            Val::Shared(n) => Rc::try_unwrap(n).unwrap_or_else(|rc| (*rc).clone()),
            Val::Owned(n) => n,
        }
    }
}

/// Where an interpolation is evaluated: the chain from the root to the node whose
/// string holds it, and the text its byte offsets refer to.
#[derive(Clone, Copy)]
pub(crate) struct Site<'c, 'a> {
    pub chain: &'c [Frame<'a>],
    pub text: &'c str,
}

impl<'a> Site<'_, 'a> {
    /// The node whose string holds the interpolation (chains are never empty: they
    /// start at the root).
    pub fn node(&self) -> &'a Node {
        static NONE: Node = Node {
            value: Value::Null,
            span: None,
            key_span: None,
            key_kind: KeyKind::Str,
        };
        self.chain.last().map_or(&NONE, |f| f.node)
    }

    pub fn path(&self) -> String {
        path_of(self.chain)
    }

    pub fn span(&self) -> Option<Span> {
        self.node().best_span()
    }
}

enum Slot {
    Busy,
    Done(Rc<Node>),
    Failed,
}

/// A node under evaluation, for cycle reports (its path is only worked out then).
pub(crate) struct Active {
    pub ptr: usize,
    pub span: Option<Span>,
}

/// Memo keys are node addresses: hash them with one multiply, not SipHash.
#[derive(Default)]
pub(crate) struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type AddrMap<V> = HashMap<usize, V, std::hash::BuildHasherDefault<AddrHasher>>;

pub(crate) struct Engine<'a> {
    pub root: &'a Node,
    pub env: &'a dyn Env,
    templates: HashMap<&'a str, Result<Rc<Template>, SyntaxError>>,
    memo: AddrMap<Slot>,
    pub active: Vec<Active>,
    /// `${user:}` is the same everywhere; work it out once.
    pub user: Option<String>,
    /// `oc.decode` calls in progress.
    pub decodes: usize,
    /// Set when the last node lookup reached a mapping or list written in the config (a
    /// DictConfig / ListConfig to Python resolvers), not a resolver result.
    pub raw_container: bool,
    /// Variables `${oc.env:…}` may not read (see [`super::EnvGuard`]).
    pub guard: Option<&'a dyn super::EnvGuard>,
}

/// How many interpolations may be under evaluation at once (a chain `a -> b -> …`).
/// Real configs stay under ten; the limit keeps a runaway chain from overflowing the stack.
const MAX_DEPTH: usize = 200;

fn ptr(n: &Node) -> usize {
    n as *const Node as usize
}

/// OmegaConf treats every string containing `${` as an interpolation (escapes included).
pub(crate) fn needs_eval(node: &Node) -> bool {
    matches!(&node.value, Value::Str(s) if s.contains("${"))
}

impl<'a> Engine<'a> {
    pub fn new(root: &'a Node, env: &'a dyn Env) -> Engine<'a> {
        Engine {
            root,
            env,
            templates: HashMap::new(),
            memo: AddrMap::default(),
            active: Vec::new(),
            user: None,
            decodes: 0,
            raw_container: false,
            guard: None,
        }
    }

    /// Build the resolved copy of the node at the end of `chain`, collecting the errors
    /// of independent sites instead of stopping at the first. `None` when something
    /// inside failed (its error is in `errors`, or was reported by an earlier site).
    /// The copy is a plain clone (spans and order come along) whose interpolation
    /// strings are then replaced, walking both trees in step: no rehashing of keys.
    pub fn build(&mut self, chain: &mut Vec<Frame<'a>>, errors: &mut Vec<Diag>) -> Option<Node> {
        let mut out = chain.last()?.node.clone();
        self.fill(chain, &mut out, errors).then_some(out)
    }

    fn fill(&mut self, chain: &mut Vec<Frame<'a>>, out: &mut Node, errors: &mut Vec<Diag>) -> bool {
        let Some(node) = chain.last().map(|f| f.node) else {
            return false;
        };
        let mut ok = true;
        match (&node.value, &mut out.value) {
            (Value::Map(m), Value::Map(o)) => {
                for ((k, v), slot) in m.iter().zip(o.values_mut()) {
                    chain.push(Frame {
                        node: v,
                        key: Key::Name(k),
                    });
                    ok &= self.fill(chain, slot, errors);
                    chain.pop();
                }
            }
            (Value::List(items), Value::List(o)) => {
                for (i, (v, slot)) in items.iter().zip(o.iter_mut()).enumerate() {
                    chain.push(Frame {
                        node: v,
                        key: Key::Index(i),
                    });
                    ok &= self.fill(chain, slot, errors);
                    chain.pop();
                }
            }
            _ if needs_eval(node) => match self.eval_site(chain) {
                Ok(v) => out.value = v.into_node().value,
                Err(Fail::Diag(d)) => {
                    errors.push(*d);
                    ok = false;
                }
                Err(Fail::Reported) => ok = false,
            },
            _ => {}
        }
        ok
    }

    /// The parsed template of a site's string, parsed once per distinct text. A syntax
    /// error is reported at the first site that needs it and marks the site failed, so
    /// a value that refers to it does not report it again.
    fn template(&mut self, text: &'a str, site: Site<'_, 'a>) -> R<Rc<Template>> {
        let node = site.node();
        if matches!(self.memo.get(&ptr(node)), Some(Slot::Failed)) {
            return Err(Fail::Reported);
        }
        let parsed = self
            .templates
            .entry(text)
            .or_insert_with(|| parse_template(text).map(Rc::new));
        match parsed {
            Ok(t) => Ok(t.clone()),
            Err(e) => {
                let d = errors::syntax(site.span(), text, e);
                self.memo.insert(ptr(node), Slot::Failed);
                Err(Fail::from(d))
            }
        }
    }

    fn enter(&mut self, chain: &[Frame<'a>]) -> R<()> {
        let node = chain.last().map(|f| f.node).unwrap_or(self.root);
        if self.active.len() >= MAX_DEPTH {
            return Err(errors::too_deep(chain, MAX_DEPTH));
        }
        match self.memo.get(&ptr(node)) {
            Some(Slot::Busy) => Err(errors::cycle(self.root, &self.active, ptr(node))),
            Some(Slot::Failed) => Err(Fail::Reported),
            _ => {
                self.memo.insert(ptr(node), Slot::Busy);
                self.active.push(Active {
                    ptr: ptr(node),
                    span: node.best_span(),
                });
                Ok(())
            }
        }
    }

    fn leave(&mut self, node: &Node, result: &R<Rc<Node>>) {
        self.active.pop();
        let slot = match result {
            Ok(rc) => Slot::Done(rc.clone()),
            Err(_) => Slot::Failed,
        };
        self.memo.insert(ptr(node), slot);
    }

    fn done(&self, node: &Node) -> Option<Rc<Node>> {
        match self.memo.get(&ptr(node)) {
            Some(Slot::Done(rc)) => Some(rc.clone()),
            _ => None,
        }
    }

    /// Evaluate the interpolation string at the end of `chain` (memoised).
    pub fn eval_site(&mut self, chain: &[Frame<'a>]) -> R<Val<'a>> {
        let node = chain.last().map(|f| f.node).unwrap_or(self.root);
        if let Some(rc) = self.done(node) {
            return Ok(Val::Shared(rc));
        }
        let Value::Str(text) = &node.value else {
            return Ok(Val::Borrowed(node));
        };
        let site = Site { chain, text };
        let tpl = self.template(text, site)?;
        self.enter(chain)?;
        let result = self.eval_template(&tpl, site).map(Val::into_rc);
        self.leave(node, &result);
        result.map(Val::Shared)
    }

    /// Is `chain`'s node a string made of exactly one node interpolation? Then return
    /// its parsed template, so a walk can follow it without evaluating (OmegaConf
    /// dereferences such nodes to the node they point at).
    pub fn pure_reference(&mut self, chain: &[Frame<'a>]) -> R<Option<Rc<Template>>> {
        let node = chain.last().map(|f| f.node).unwrap_or(self.root);
        let Value::Str(text) = &node.value else {
            return Ok(None);
        };
        let tpl = self.template(text, Site { chain, text })?;
        let is_ref = matches!(tpl.single().map(|i| &i.kind), Some(InterpKind::Node(_)));
        Ok(is_ref.then_some(tpl))
    }

    /// Follow an interpolation string met in the middle of a path to what it stands for.
    pub fn deref(&mut self, chain: &[Frame<'a>]) -> R<Cursor<'a>> {
        let node = chain.last().map(|f| f.node).unwrap_or(self.root);
        if let Some(rc) = self.done(node) {
            return Ok(Cursor::Value(rc, Vec::new()));
        }
        let Some(tpl) = self.pure_reference(chain)? else {
            let v = self.eval_site(chain)?;
            return Ok(Cursor::Value(v.into_rc(), Vec::new()));
        };
        let Some(interp) = tpl.single() else {
            return Err(Fail::Reported);
        };
        let InterpKind::Node(path) = &interp.kind else {
            return Err(Fail::Reported);
        };
        let text = node.as_str().unwrap_or("");
        self.enter(chain)?;
        // While this node is still marked busy, keep following references, so a
        // chain `a -> b -> c` ends at c and a loop is caught as a cycle.
        let found = match self.lookup(path, Site { chain, text }, interp) {
            Ok(Cursor::Raw(next)) if next.last().is_some_and(|f| needs_eval(f.node)) => {
                self.deref(&next)
            }
            other => other,
        };
        self.active.pop();
        if found.is_err() {
            self.memo.insert(ptr(node), Slot::Failed);
        } else {
            self.memo.remove(&ptr(node));
        }
        found
    }

    pub fn eval_template(&mut self, tpl: &Template, site: Site<'_, 'a>) -> R<Val<'a>> {
        if let Some(i) = tpl.single() {
            return self.eval_interp(i, site);
        }
        self.concat(&tpl.pieces, site)
    }

    fn concat(&mut self, pieces: &[Piece], site: Site<'_, 'a>) -> R<Val<'a>> {
        let mut out = String::new();
        for p in pieces {
            match p {
                Piece::Lit(s) => out.push_str(s),
                Piece::Interp(i) => {
                    // OmegaConf writes a config node into a string with `str()`, which
                    // shows its values as written: interpolations inside stay unresolved.
                    if let InterpKind::Node(path) = &i.kind
                        && let Ok(Cursor::Raw(chain)) = self.lookup(path, site, i)
                        && let Some(target) = chain.last().map(|f| f.node)
                        && target.value.is_container()
                        && !needs_eval(target)
                        && !site.chain.iter().any(|f| std::ptr::eq(f.node, target))
                    {
                        out.push_str(&python_str(target));
                        continue;
                    }
                    let v = self.eval_interp(i, site)?;
                    out.push_str(&python_str(&v));
                }
            }
        }
        Ok(Val::Owned(Node::str(out)))
    }

    pub fn eval_interp(&mut self, interp: &Interp, site: Site<'_, 'a>) -> R<Val<'a>> {
        match &interp.kind {
            InterpKind::Node(path) => {
                let found = self.lookup(path, site, interp)?;
                self.value_of(found, site, interp)
            }
            InterpKind::Resolver { name, args } => {
                let name = self.resolver_name(name, site)?;
                // A container reached through `${path}` is a DictConfig / ListConfig to a
                // Python resolver, not a dict / list (so `*` does not repeat it).
                let mut values = Vec::with_capacity(args.len());
                let mut from_config = Vec::with_capacity(args.len());
                for a in args {
                    self.raw_container = false;
                    values.push(self.eval_element(a, site)?);
                    from_config.push(
                        self.raw_container
                            && matches!(a, Element::Interp(i) if matches!(i.kind, InterpKind::Node(_))),
                    );
                }
                self.call_resolver(&name, values, &from_config, site, interp)
            }
        }
    }

    fn resolver_name(&mut self, parts: &[NamePart], site: Site<'_, 'a>) -> R<String> {
        let mut name = String::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                name.push('.');
            }
            match part {
                NamePart::Id(id) => name.push_str(id),
                NamePart::Interp(inner) => {
                    let v = self.eval_interp(inner, site)?;
                    match v.as_str() {
                        Some(s) => name.push_str(s),
                        None => {
                            return Err(errors::not_a_string(site, inner, &v, "a resolver name"));
                        }
                    }
                }
            }
        }
        Ok(name)
    }

    pub fn eval_element(&mut self, el: &Element, site: Site<'_, 'a>) -> R<Val<'a>> {
        Ok(match el {
            Element::Scalar(v) => Val::Owned(Node::new(v.clone())),
            Element::Interp(i) => self.eval_interp(i, site)?,
            Element::Str(pieces) => self.concat(pieces, site)?,
            Element::List(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items {
                    out.push(self.eval_element(it, site)?.into_node());
                }
                Val::Owned(Node::list(out))
            }
            Element::Dict(pairs) => {
                let mut out = Map::with_capacity(pairs.len());
                for (k, v) in pairs {
                    let mut child = self.eval_element(v, site)?.into_node();
                    child.key_kind = match k {
                        Value::Int(_) => KeyKind::Int,
                        Value::Float(_) => KeyKind::Float,
                        Value::Bool(_) => KeyKind::Bool,
                        Value::Null => KeyKind::Null,
                        _ => KeyKind::Str,
                    };
                    out.insert(python_str(&Node::new(k.clone())), child);
                }
                Val::Owned(Node::from_map(out))
            }
        })
    }

    /// The value a lookup found: evaluated if it is an interpolation, resolved if it is
    /// a container, borrowed if it is a plain scalar.
    pub fn value_of(
        &mut self,
        found: Cursor<'a>,
        site: Site<'_, 'a>,
        interp: &Interp,
    ) -> R<Val<'a>> {
        let chain = match found {
            Cursor::Value(rc, path) if path.is_empty() => return Ok(Val::Shared(rc)),
            Cursor::Value(rc, path) => {
                let sub = Cursor::value_at(&rc, &path).cloned();
                return Ok(Val::Owned(sub.unwrap_or_else(Node::null)));
            }
            Cursor::Raw(chain) => chain,
        };
        let target = chain.last().map(|f| f.node).unwrap_or(self.root);
        if target.is_missing() {
            return Err(errors::to_missing(site, interp, &chain));
        }
        if target.value.is_container() && site.chain.iter().any(|f| std::ptr::eq(f.node, target)) {
            return Err(errors::to_parent(site, interp, &chain));
        }
        let result = if needs_eval(target) {
            let r = self.eval_site(&chain);
            // A reference or a config-building resolver hands on a config node.
            if let Ok(v) = &r
                && v.value.is_container()
                && super::yields_config_node(target.as_str().unwrap_or(""))
            {
                self.raw_container = true;
            }
            r
        } else if target.value.is_container() {
            self.raw_container = true;
            self.resolve_container(chain.clone())
        } else {
            return Ok(Val::Borrowed(target));
        };
        result.map_err(|f| errors::needed_by(f, site))
    }

    /// A container reached through an interpolation, resolved at its own location so
    /// that relative interpolations inside it keep their meaning.
    pub fn resolve_container(&mut self, mut chain: Vec<Frame<'a>>) -> R<Val<'a>> {
        let node = chain.last().map(|f| f.node).unwrap_or(self.root);
        if let Some(rc) = self.done(node) {
            return Ok(Val::Shared(rc));
        }
        self.enter(&chain)?;
        let mut errs = Vec::new();
        let built = self.build(&mut chain, &mut errs);
        let result = match (built, Diag::aggregate(errs)) {
            (_, Some(d)) => Err(Fail::Diag(Box::new(d))),
            (Some(n), None) => Ok(Rc::new(n)),
            (None, None) => Err(Fail::Reported),
        };
        self.leave(node, &result);
        result.map(Val::Shared)
    }
}
