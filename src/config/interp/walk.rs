//! Following key paths through the tree: absolute from the root, relative from the
//! node's own container (`.x`) or further up (`..x`), through list indices, and through
//! interpolations met on the way (which stand for what they point at).

use std::rc::Rc;

use super::ast::{Interp, KeyPart, NodePath};
use super::errors::{self, R};
use super::eval::{Engine, Site, needs_eval};
use crate::config::node::{Node, Value};
use crate::config::source::Span;

/// One step of the chain from the root to a node.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame<'a> {
    pub node: &'a Node,
    pub key: Key<'a>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Key<'a> {
    Root,
    Name(&'a str),
    Index(usize),
}

/// Dotted path of the last node of `chain` (`a.b.0.c`; empty for the root).
pub(crate) fn path_of(chain: &[Frame<'_>]) -> String {
    let mut out = String::new();
    for f in chain {
        let seg = match f.key {
            Key::Root => continue,
            Key::Name(k) => k.to_string(),
            Key::Index(i) => i.to_string(),
        };
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(&seg);
    }
    out
}

/// Join a base path and further keys with dots.
pub(crate) fn join(base: &str, keys: &[String]) -> String {
    let mut out = base.to_string();
    for k in keys {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(k);
    }
    out
}

/// Where a walk has got to: a node of the tree (with its chain, so relative
/// interpolations under it still resolve), or somewhere inside an already resolved
/// value (the result of a resolver, or of an interpolation met mid-path).
#[derive(Debug, Clone)]
pub(crate) enum Cursor<'a> {
    Raw(Vec<Frame<'a>>),
    Value(Rc<Node>, Vec<String>),
}

impl Cursor<'_> {
    pub fn value_at<'n>(node: &'n Node, path: &[String]) -> Option<&'n Node> {
        path.iter()
            .try_fold(node, |n, k| step(n, k, 0).ok().map(|(c, _)| c))
    }
}

/// Why a path did not lead to a value; `at` indexes the key that could not be taken.
#[derive(Debug, Clone)]
pub(crate) enum Miss {
    NotFound {
        at: usize,
        candidates: Vec<String>,
    },
    NotContainer {
        at: usize,
        what: String,
        span: Option<Span>,
    },
    BadIndex {
        at: usize,
    },
    Missing {
        at: usize,
        span: Option<Span>,
    },
}

/// Take one key from a container.
fn step<'n>(node: &'n Node, key: &str, at: usize) -> Result<(&'n Node, Key<'n>), Miss> {
    if node.is_missing() {
        return Err(Miss::Missing {
            at,
            span: node.best_span(),
        });
    }
    match &node.value {
        Value::Map(m) => match m.get_key_value(key) {
            Some((k, v)) => Ok((v, Key::Name(k))),
            None => Err(Miss::NotFound {
                at,
                candidates: m.keys().cloned().collect(),
            }),
        },
        Value::List(items) => {
            let idx: i64 = key.parse().map_err(|_| Miss::BadIndex { at })?;
            usize::try_from(idx)
                .ok()
                .and_then(|i| items.get(i).map(|v| (v, Key::Index(i))))
                .ok_or(Miss::NotFound {
                    at,
                    candidates: Vec::new(),
                })
        }
        _ => Err(Miss::NotContainer {
            at,
            what: describe(node),
            span: node.best_span(),
        }),
    }
}

/// `null`, `the int 5`, `the string "x"`: how a non-container is named in messages.
pub(crate) fn describe(node: &Node) -> String {
    match &node.value {
        Value::Null => "null".into(),
        _ => format!("the {} {}", node.type_name(), node),
    }
}

/// Split an `oc.select` key like OmegaConf's `split_key`: leading dots, then keys
/// separated by `.` or written in brackets (`a[0].b`).
pub(crate) fn split_select_key(key: &str) -> (usize, Vec<String>) {
    let dots = key.len() - key.trim_start_matches('.').len();
    let mut keys = Vec::new();
    let mut cur = String::new();
    let mut chars = key[dots..].chars();
    while let Some(c) = chars.next() {
        match c {
            '.' => keys.push(std::mem::take(&mut cur)),
            '[' => {
                if !cur.is_empty() {
                    keys.push(std::mem::take(&mut cur));
                }
                keys.push(chars.by_ref().take_while(|&c| c != ']').collect());
                // A `.` right after `]` only separates; skip it.
                let rest = chars.as_str();
                if let Some(r) = rest.strip_prefix('.') {
                    chars = r.chars();
                }
            }
            c => cur.push(c),
        }
    }
    // An empty key (`''` or just dots) selects the starting node itself.
    if !cur.is_empty() || (!keys.is_empty() && key.ends_with('.')) {
        keys.push(cur);
    }
    (dots, keys)
}

impl<'a> Engine<'a> {
    /// Where a path with `dots` leading dots starts: the root, or an ancestor of the site
    /// (one dot = the site's own container). `None` when that goes above the root.
    pub fn start_chain(&self, dots: usize, site: Site<'_, 'a>) -> Option<Vec<Frame<'a>>> {
        if dots == 0 {
            return Some(vec![Frame {
                node: self.root,
                key: Key::Root,
            }]);
        }
        let last = site.chain.len().checked_sub(1 + dots)?;
        Some(site.chain[..=last].to_vec())
    }

    /// Walk `keys` from `chain`. Interpolations met before the last key are followed.
    pub fn walk(&mut self, chain: Vec<Frame<'a>>, keys: &[String]) -> R<Result<Cursor<'a>, Miss>> {
        let mut cur = Cursor::Raw(chain);
        for (i, key) in keys.iter().enumerate() {
            if let Cursor::Raw(chain) = &cur
                && chain.last().is_some_and(|f| needs_eval(f.node))
            {
                cur = self.deref(chain)?;
            }
            cur = match cur {
                Cursor::Raw(mut chain) => {
                    let node = chain.last().map_or(self.root, |f| f.node);
                    match step(node, key, i) {
                        Ok((child, k)) => {
                            chain.push(Frame {
                                node: child,
                                key: k,
                            });
                            Cursor::Raw(chain)
                        }
                        Err(miss) => return Ok(Err(miss)),
                    }
                }
                Cursor::Value(rc, mut path) => {
                    let Some(node) = Cursor::value_at(&rc, &path) else {
                        return Ok(Err(Miss::NotFound {
                            at: i,
                            candidates: Vec::new(),
                        }));
                    };
                    if let Err(miss) = step(node, key, i) {
                        return Ok(Err(miss));
                    }
                    path.push(key.clone());
                    Cursor::Value(rc, path)
                }
            };
        }
        Ok(Ok(cur))
    }

    /// Resolve the keys of a node interpolation (nested interpolations in keys must give
    /// strings; outside brackets a dotted result is several keys, as in OmegaConf).
    fn path_keys(&mut self, path: &NodePath, site: Site<'_, 'a>) -> R<(Vec<String>, String)> {
        let mut keys = Vec::with_capacity(path.segs.len());
        let mut written = ".".repeat(path.dots);
        for (i, seg) in path.segs.iter().enumerate() {
            let key = match &seg.key {
                KeyPart::Text(t) => t.clone(),
                KeyPart::Interp(inner) => {
                    let v = self.eval_interp(inner, site)?;
                    match v.as_str() {
                        Some(s) => s.to_string(),
                        None => return Err(errors::not_a_string(site, inner, &v, "a config key")),
                    }
                }
            };
            if seg.bracket {
                written.push_str(&format!("[{key}]"));
                keys.push(key);
            } else {
                if i > 0 {
                    written.push('.');
                }
                written.push_str(&key);
                keys.extend(key.split('.').map(str::to_string));
            }
        }
        Ok((keys, written))
    }

    /// Find what a node interpolation points at.
    pub fn lookup(
        &mut self,
        path: &NodePath,
        site: Site<'_, 'a>,
        interp: &Interp,
    ) -> R<Cursor<'a>> {
        let (keys, written) = self.path_keys(path, site)?;
        let Some(start) = self.start_chain(path.dots, site) else {
            return Err(errors::above_root(site, interp, &written));
        };
        let base = path_of(&start);
        match self.walk(start, &keys)? {
            Ok(found) => Ok(found),
            Err(miss) => {
                let report = errors::KeyReport {
                    relative: path.dots > 0,
                    written: &written,
                    base: &base,
                    keys: &keys,
                };
                Err(errors::missing_key(site, interp, &report, miss))
            }
        }
    }
}
