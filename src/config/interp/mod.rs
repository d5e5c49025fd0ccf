//! OmegaConf 2.3 interpolation: grammar, resolution to plain data, resolvers.
//!
//! A string containing `${` is a template of literal text and interpolations:
//! `${a.b}`, `${a[0]}`, `${.sibling}`, `${..uncle}`, `${resolver:arg,…}`, nested in keys
//! (`${plans[${sel}]}`) and arguments (`${mul:${a},2}`). After the config layers are
//! merged, nrl resolves the tree eagerly (what `OmegaConf.to_container(resolve=True)`
//! does in the reference): a value that is exactly one interpolation takes the type of
//! its result; one with surrounding text becomes a string built with Python's `str()`.
//!
//! Where nrl deliberately differs from OmegaConf 2.3 (each is pinned by a test):
//! - a mapping or list embedded in text is shown resolved (`{'k': 1}`); OmegaConf shows
//!   the unresolved interpolations inside it;
//! - a cycle is reported with its members (`a -> b -> a`) instead of "Recursive
//!   interpolation detected";
//! - a path may continue into a mapping a resolver produced (`${m.k}` with
//!   `m: ${oc.decode:'{k: 1}'}`); OmegaConf says `m` is not a container;
//! - every malformed string is a syntax error at load time ([`check_syntax`]); OmegaConf's
//!   quick pre-check lets a few through to resolution time (a newline in arguments);
//! - integers are 64-bit: arithmetic that overflows is an error, and an over-long integer
//!   literal in resolver arguments stays text; `oc.decode` of a lone blank gives the
//!   blank (OmegaConf fails an internal assertion);
//! - an interpolated key that resolves to dotted text is split at the dots (as in
//!   OmegaConf) but brackets inside it are not interpreted;
//! - only the resolvers in [`KNOWN_RESOLVERS`] exist (no `oc.create`, `oc.deprecated`,
//!   `oc.dict.*`);
//! - errors of independent values are reported together (up to 20), each once.
//!
//! Error codes are in [`codes`].

mod ast;
mod errors;
mod eval;
mod lexer;
mod parser;
mod resolvers;
mod walk;

#[cfg(test)]
mod tests;

use eval::Engine;
pub(crate) use eval::needs_eval;
use walk::{Cursor, Frame, Key, Miss};

use crate::config::env::Env;
use crate::config::node::{Node, Value};
use crate::diag::{Diag, Result};

pub use errors::KNOWN_RESOLVERS;

/// Stable diagnostic codes of interpolation errors.
pub mod codes {
    pub use super::errors::{CYCLE, MISSING_KEY, MISSING_VALUE, RESOLVER, SYNTAX, TYPE};
}

/// At most this many independent errors are reported together.
const MAX_ERRORS: usize = 20;

/// Check the interpolation grammar of every string in the tree (called at load time so
/// a malformed `${` is reported with its file/line before anything else).
pub fn check_syntax(root: &Node) -> Result<()> {
    let mut errors = Vec::new();
    root.visit(&mut |node| {
        if let Value::Str(s) = &node.value
            && s.contains("${")
            && errors.len() < MAX_ERRORS
            && let Err(e) = parser::parse_template(s)
        {
            errors.push(errors::syntax(node.best_span(), s, &e));
        }
    });
    Diag::aggregate(errors).map_or(Ok(()), Err)
}

/// Decides which variables `${oc.env:…}` may not read while resolving a tree (a Gym
/// config refuses secrets: the resolved value would land in clear in a Job spec).
pub trait EnvGuard {
    /// Why `var` may not be read, and what to write instead; `None` allows it.
    fn refuse(&self, var: &str) -> Option<EnvRefusal>;
}

/// An [`EnvGuard`]'s refusal, reported at the interpolation.
#[derive(Debug, Clone)]
pub struct EnvRefusal {
    pub code: &'static str,
    pub message: String,
    pub help: String,
}

/// Resolve the whole tree.
pub fn resolve(root: &Node, env: &dyn Env) -> Result<Node> {
    resolve_guarded(root, env, None)
}

/// [`resolve`], with `${oc.env:…}` reads checked by `guard`.
pub fn resolve_guarded(root: &Node, env: &dyn Env, guard: Option<&dyn EnvGuard>) -> Result<Node> {
    let mut engine = Engine::new(root, env);
    engine.guard = guard;
    let mut chain = vec![Frame {
        node: root,
        key: Key::Root,
    }];
    let mut errors = Vec::new();
    let built = engine.build(&mut chain, &mut errors);
    errors.truncate(MAX_ERRORS);
    match (built, Diag::aggregate(errors)) {
        (_, Some(d)) => Err(d),
        (Some(n), None) => Ok(n),
        (None, None) => Err(Diag::new(
            errors::CYCLE,
            "interpolation failed without a diagnostic",
        )),
    }
}

/// Resolve one value by dotted path (used by `--explain` and Rhai `get`).
pub fn resolve_path(root: &Node, path: &str, env: &dyn Env) -> Result<Node> {
    if path.is_empty() {
        return resolve(root, env);
    }
    let mut engine = Engine::new(root, env);
    let keys: Vec<String> = path.split('.').map(str::to_string).collect();
    let start = vec![Frame {
        node: root,
        key: Key::Root,
    }];
    let result = match engine.walk(start, &keys) {
        Ok(Ok(found)) => value_at_path(&mut engine, found),
        Ok(Err(miss)) => return Err(path_not_found(root, path, &keys, miss)),
        Err(f) => Err(f),
    };
    result.map_err(|f| match f {
        errors::Fail::Diag(d) => *d,
        errors::Fail::Reported => Diag::new(errors::CYCLE, format!("could not resolve `{path}`")),
    })
}

fn value_at_path<'a>(engine: &mut Engine<'a>, found: Cursor<'a>) -> errors::R<Node> {
    let chain = match found {
        Cursor::Raw(chain) => chain,
        Cursor::Value(rc, path) => {
            return Ok(Cursor::value_at(&rc, &path)
                .cloned()
                .unwrap_or_else(Node::null));
        }
    };
    let Some(target) = chain.last().map(|f| f.node) else {
        return Ok(Node::null());
    };
    let value = if needs_eval(target) {
        engine.eval_site(&chain)?.into_node().value
    } else if target.value.is_container() {
        engine.resolve_container(chain.clone())?.into_node().value
    } else {
        // A literal `???` reads as the string "???", like everywhere else.
        target.value.clone()
    };
    Ok(Node {
        value,
        span: target.span,
        key_span: target.key_span,
        key_kind: target.key_kind,
    })
}

fn path_not_found(root: &Node, path: &str, keys: &[String], miss: Miss) -> Diag {
    let (at, why) = match miss {
        Miss::NotFound { at, .. } => (at, "not found".to_string()),
        Miss::NotContainer { at, what, .. } => (at, format!("not found: the parent is {what}")),
        Miss::BadIndex { at } => (at, "not found: the parent is a list".to_string()),
        Miss::Missing { at, .. } => (at, "not found: the parent is ??? (missing)".to_string()),
    };
    let parent = keys.get(..at).unwrap_or(keys).join(".");
    let span = root.get_path(&parent).and_then(Node::best_span);
    Diag::new(errors::MISSING_KEY, format!("key '{path}' {why}"))
        .label(
            span,
            format!("no `{}` here", keys.get(at).map_or("", |k| k.as_str())),
        )
        .help("keys are dotted paths from the root, with list indices as numbers (`a.b.0.c`)")
}

/// Does this string contain an (unescaped) interpolation? That is a `${` preceded by an
/// even number of backslashes (an odd number escapes it), whether or not it is well formed.
pub fn has_interpolation(s: &str) -> bool {
    let b = s.as_bytes();
    let mut backslashes = 0usize;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\\' => backslashes += 1,
            b'$' if b.get(i + 1) == Some(&b'{') && backslashes.is_multiple_of(2) => return true,
            _ => backslashes = 0,
        }
    }
    false
}

/// Does this interpolation give OmegaConf a config node (a node reference, or one of the
/// built-ins that return one), rather than a plain value (`oc.decode`, `oc.env`, ...)?
pub(crate) fn yields_config_node(s: &str) -> bool {
    let single = s.starts_with("${") && s.ends_with('}') && s.matches("${").count() == 1;
    let resolver = s.find(':');
    single
        && match resolver {
            None => true,
            Some(_) => [
                "${oc.create:",
                "${oc.select:",
                "${oc.dict.keys:",
                "${oc.dict.values:",
                "${oc.deprecated:",
            ]
            .iter()
            .any(|p| s.starts_with(p)),
        }
}
