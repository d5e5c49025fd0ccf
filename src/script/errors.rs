//! Errors: built-in failures carried through Rhai, and Rhai errors rendered as `Diag`s
//! with the script span and the call chain through imported modules.
//!
//! A built-in that fails returns `ErrorRuntime` holding a [`ScriptError`] (the library's
//! `Diag`), so `try … catch (e)` sees `e.code`/`e.message`, and an uncaught one renders
//! with the original diagnostic (YAML spans included) under `nrl::script::runtime`.
//! Cancellation is `ErrorTerminated`, which `catch` cannot swallow.

use rhai::{Dynamic, EvalAltResult, ParseError, Position};

use super::host::Host;
use crate::config::source::{Span, SrcId, source};
use crate::diag::{Diag, Exit};

pub type RhaiResult<T> = Result<T, Box<EvalAltResult>>;

pub const CODE_COMPILE: &str = "nrl::script::compile";
pub const CODE_RUNTIME: &str = "nrl::script::runtime";
pub const CODE_INTERRUPTED: &str = "nrl::script::interrupted";
pub const CODE_LIMIT: &str = "nrl::script::limit";

/// The token of a cancelled run (`ErrorTerminated`).
pub const CANCELLED: &str = "cancelled";

/// A library diagnostic inside a Rhai error value (`type_of(e) == "Error"`).
#[derive(Debug, Clone)]
pub struct ScriptError(pub Diag);

/// A built-in failure.
pub fn fail(d: Diag) -> Box<EvalAltResult> {
    Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(ScriptError(d)),
        Position::NONE,
    ))
}

/// A script-level usage error of a built-in (bad argument).
pub fn usage(code: &'static str, message: impl Into<String>, help: &str) -> Box<EvalAltResult> {
    fail(Diag::new(code, message).help(help))
}

/// The library code of a built-in failure (`None` for script errors).
pub fn error_code(e: &EvalAltResult) -> Option<String> {
    match e {
        EvalAltResult::ErrorRuntime(v, _) => {
            v.read_lock::<ScriptError>().map(|s| s.0.code.to_string())
        }
        _ => None,
    }
}

/// Give an error without a position the built-in's call site. Rhai positions the errors
/// of plain and method calls itself, but not those of namespaced ones (`k8s::get(…)`).
pub fn at<T>(pos: Position, result: RhaiResult<T>) -> RhaiResult<T> {
    result.map_err(|mut e| {
        if e.position().is_none() {
            e.set_position(pos);
        }
        e
    })
}

/// Ctrl-C: ends the script; not catchable.
pub fn cancelled() -> Box<EvalAltResult> {
    Box::new(EvalAltResult::ErrorTerminated(
        CANCELLED.into(),
        Position::NONE,
    ))
}

/// A frame of the call chain: where a function was called or a module imported.
#[derive(Debug, Clone)]
struct Frame {
    source: String,
    pos: Position,
    /// Label text at the call site.
    text: String,
    /// What was called, for the one-line chain.
    callee: String,
}

/// A compile (syntax) error of the main script.
pub fn parse_error(host: &Host, source_name: &str, err: &ParseError) -> Diag {
    let mut d = Diag::new(CODE_COMPILE, format!("syntax error: {}", err.err_type()));
    d = d.label(span_at(host, source_name, err.position()), "here");
    if matches!(err.err_type(), rhai::ParseErrorType::ModuleUndefined(m) if m == "sim") {
        return d.help("`sim::…` scripts the simulated cluster of a test: it exists only in `*_test.rhai` files run by `nrl script test`");
    }
    d.help("Rhai reports the first syntax error only: fix it and run again")
}

/// Any error that ended a run.
pub fn eval_error(host: &Host, main_source: &str, err: &EvalAltResult) -> Diag {
    let mut frames = Vec::new();
    let mut current = main_source.to_string();
    let mut e = err;
    loop {
        match e {
            EvalAltResult::ErrorInFunctionCall(name, fn_source, inner, pos) => {
                let callee = if name.starts_with("anon$") {
                    "a closure".to_string()
                } else {
                    format!("`{name}`")
                };
                frames.push(Frame {
                    source: current.clone(),
                    pos: *pos,
                    text: format!("in {callee}, called here"),
                    callee,
                });
                if !fn_source.is_empty() {
                    current = fn_source.clone();
                }
                e = inner;
            }
            EvalAltResult::ErrorInModule(path, inner, pos) => {
                frames.push(Frame {
                    source: current.clone(),
                    pos: *pos,
                    text: format!("while importing `{path}`"),
                    callee: format!("import `{path}`"),
                });
                current = host.import_source(path).unwrap_or_else(|| path.clone());
                e = inner;
            }
            _ => break,
        }
    }
    let here = span_at(host, &current, e.position());
    let mut d = match (e, host.opts.limits.max_duration) {
        // A stop by the time limit looks like Ctrl-C to the engine and the built-ins.
        (EvalAltResult::ErrorTerminated(..), Some(limit)) if host.out_of_time() => Diag::new(
            CODE_LIMIT,
            format!(
                "the script ran longer than its time limit of {}s",
                limit.as_secs_f64()
            ),
        )
        .with_exit(Exit::Failed)
        .label(here, "stopped here")
        .help("raise the limit with `nrl script --max-seconds N`, or leave it out for no limit"),
        _ => innermost(e, here),
    };
    // Outer frames, innermost first: labels (a snippet per file) plus one chain note.
    let mut chain = Vec::new();
    for f in frames.iter().rev() {
        let span = span_at(host, &f.source, f.pos);
        d = d.label(span, f.text.clone());
        chain.push(format!(
            "{} at {}",
            f.callee,
            location(host, &f.source, f.pos)
        ));
    }
    if !chain.is_empty() {
        d = d.note(format!("called through {}", chain.join(" <- ")));
    }
    d
}

/// The diagnostic for the innermost error, labelled at `here`.
fn innermost(e: &EvalAltResult, here: Option<Span>) -> Diag {
    use EvalAltResult as E;
    match e {
        E::ErrorParsing(kind, _) => Diag::new(CODE_COMPILE, format!("syntax error: {kind}"))
            .label(here, "here")
            .help("fix the syntax of this module"),
        E::ErrorTerminated(..) => {
            Diag::new(CODE_INTERRUPTED, "interrupted").with_exit(Exit::Interrupted)
        }
        E::ErrorRuntime(value, _) => match value.read_lock::<ScriptError>() {
            Some(inner) => wrap_library_error(&inner.0, here),
            None => Diag::new(CODE_RUNTIME, thrown_message(value))
                .with_exit(Exit::Failed)
                .label(here, "thrown here"),
        },
        E::ErrorTooManyOperations(_) => Diag::new(
            CODE_LIMIT,
            "the script ran too many operations (an endless loop?)",
        )
        .with_exit(Exit::Failed)
        .label(here, "stopped here")
        .help("raise the limit with `nrl script --max-operations N` if the work is real"),
        E::ErrorStackOverflow(_) => Diag::new(CODE_LIMIT, "functions call each other too deeply")
            .with_exit(Exit::Failed)
            .label(here, "stopped here")
            .help("look for unbounded recursion"),
        E::ErrorTooManyModules(_) => Diag::new(CODE_LIMIT, "too many modules imported")
            .with_exit(Exit::Failed)
            .label(here, "stopped here")
            .help("modules that import each other in a cycle load forever; break the cycle"),
        E::ErrorDataTooLarge(what, _) => {
            Diag::new(CODE_LIMIT, format!("{what} is over the size limit"))
                .with_exit(Exit::Failed)
                .label(here, "here")
        }
        other => {
            let plain = without_position(&other.to_string());
            let help = match other {
                E::ErrorFunctionNotFound(..) => {
                    Some("`nrl script --builtins` lists every built-in with its parameters")
                }
                E::ErrorPropertyNotFound(..) => Some(
                    "read optional keys with `m.get(\"key\")` (gives `()`) or test `\"key\" in m` first",
                ),
                E::ErrorVariableNotFound(..) => Some("declare it with `let` before use"),
                E::ErrorModuleNotFound(..) => Some(
                    "`nrl/…` names the bundled stdlib; other imports are looked up next to the script, then along NRL_PATH",
                ),
                _ => None,
            };
            let mut d = Diag::new(CODE_RUNTIME, plain.to_string())
                .with_exit(Exit::Failed)
                .label(here, "here");
            if let Some(h) = help {
                d = d.help(h);
            }
            d
        }
    }
}

/// An uncaught library error: keep its message and help, label the script line, and
/// show its own labels (YAML spans) as a related diagnostic.
fn wrap_library_error(inner: &Diag, here: Option<Span>) -> Diag {
    // A mistake on the command line (`--keep-clustr`) is the user's, not the script's:
    // its own code and exit 2, no pointer into the script.
    if inner.code == CODE_INTERRUPTED || super::declared::is_command_line_error(&inner.code) {
        return inner.clone();
    }
    let mut d = Diag::new(CODE_RUNTIME, inner.message.clone())
        .with_exit(Exit::Failed)
        .label(here, format!("failed here ({})", inner.code));
    if let Some(h) = &inner.help {
        d = d.help(h.clone());
    }
    for n in &inner.notes {
        d = d.note(n.clone());
    }
    if !inner.labels.is_empty() || !inner.related.is_empty() {
        d = d.with_related(vec![inner.clone()]);
    }
    d
}

/// Rhai's message without its trailing ` (line 3, position 7)`: the label shows where.
fn without_position(text: &str) -> String {
    match text.rfind(" (line ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text.to_string(),
    }
}

fn thrown_message(value: &Dynamic) -> String {
    if value.is_string() {
        value.to_string()
    } else if value.is_unit() {
        "the script threw `()`".to_string()
    } else {
        format!("the script threw {} ({value})", value.type_name())
    }
}

/// `file:line:col` of a position in a named source.
fn location(host: &Host, source_name: &str, pos: Position) -> String {
    let name = host
        .source_id(source_name)
        .map(|id| source(id).name.clone())
        .unwrap_or_else(|| source_name.to_string());
    match (pos.line(), pos.position()) {
        (Some(l), Some(c)) => format!("{name}:{l}:{c}"),
        (Some(l), None) => format!("{name}:{l}"),
        _ => name,
    }
}

/// The span of the token at a Rhai position (line and column count characters).
pub(crate) fn span_at(host: &Host, source_name: &str, pos: Position) -> Option<Span> {
    let id = host.source_id(source_name)?;
    span_in(id, pos)
}

fn span_in(id: SrcId, pos: Position) -> Option<Span> {
    let line = pos.line()?;
    let col = pos.position().unwrap_or(1);
    let file = source(id);
    let text: &str = &file.text;
    let mut start = 0usize;
    for _ in 1..line {
        match text[start..].find('\n') {
            Some(i) => start += i + 1,
            None => {
                start = text.len();
                break;
            }
        }
    }
    let line_end = text[start..]
        .find('\n')
        .map(|i| start + i)
        .unwrap_or(text.len());
    let offset = text[start..line_end]
        .char_indices()
        .nth(col.saturating_sub(1))
        .map(|(i, _)| start + i)
        .unwrap_or(line_end);
    let rest = &text[offset..line_end];
    let len = token_len(rest);
    Some(Span::new(id, offset, offset + len))
}

/// Length of the token starting `rest`: an identifier or number, a string literal, or
/// one character.
fn token_len(rest: &str) -> usize {
    let mut chars = rest.char_indices();
    let Some((_, first)) = chars.next() else {
        return 0;
    };
    if first.is_alphanumeric() || first == '_' {
        return rest
            .char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
    }
    if first == '"' || first == '`' {
        let mut escaped = false;
        for (i, c) in chars {
            if c == first && !escaped {
                return i + c.len_utf8();
            }
            escaped = c == '\\' && !escaped;
        }
        return rest.len();
    }
    first.len_utf8()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::{SourceKind, add_source};

    #[test]
    fn positions_map_to_the_token_under_them() {
        let id = add_source(
            "t.rhai",
            None,
            "let x = 1;\nlet héllo = \"a b\" + foo(2);\n",
            SourceKind::Text,
        );
        let s = span_in(id, Position::new(2, 5)).unwrap();
        assert_eq!(s.text(), "héllo");
        let s = span_in(id, Position::new(2, 13)).unwrap();
        assert_eq!(s.text(), "\"a b\"");
        let s = span_in(id, Position::new(2, 21)).unwrap();
        assert_eq!(s.text(), "foo");
        let s = span_in(id, Position::new(2, 19)).unwrap();
        assert_eq!(s.text(), "+");
        // Past the end of a line or file: an empty span at the end.
        let s = span_in(id, Position::new(1, 40)).unwrap();
        assert_eq!(s.text(), "");
        assert!(span_in(id, Position::new(9, 1)).is_some());
    }
}
