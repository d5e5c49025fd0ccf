//! The rustyline helper: completion, hints and highlighting over the catalog and the
//! session's snapshot; [`needs_more`] tells the console whether an input continues on
//! the next line.

use std::borrow::Cow;
use std::path::PathBuf;

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::{CmdKind, Highlighter};
use rustyline::hint::{Hint, Hinter};
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use super::catalog::Catalog;
use super::complete::{Lookup, complete};
use super::highlight::{HINT, PROMPT, highlight};
use super::hint::{clip, config_key_hint, signature_hint};
use super::lexer::unfinished;
use super::session::Snapshot;

/// The line editor's view of the session.
pub struct ReplHelper {
    pub session: Snapshot,
    pub workdir: PathBuf,
    pub search_path: Vec<PathBuf>,
    /// ANSI colours (a terminal, `NO_COLOR` unset).
    pub color: bool,
    /// Columns of the prompt being shown (hints are clipped to the row).
    pub prompt_width: usize,
    /// The terminal's width at start, when it cannot be asked again.
    pub width: usize,
}

impl ReplHelper {
    pub fn new(
        workdir: PathBuf,
        search_path: Vec<PathBuf>,
        color: bool,
        width: usize,
    ) -> ReplHelper {
        ReplHelper {
            session: Snapshot::default(),
            workdir,
            search_path,
            color,
            prompt_width: 0,
            width,
        }
    }

    fn lookup<'a>(&'a self, builtins: &'a Catalog) -> Lookup<'a> {
        Lookup {
            builtins,
            session: &self.session,
            workdir: &self.workdir,
            search_path: &self.search_path,
        }
    }
}

/// An engine that only parses (no limits beyond the defaults, no modules).
pub fn parser() -> rhai::Engine {
    let mut e = rhai::Engine::new_raw();
    e.set_optimization_level(rhai::OptimizationLevel::None);
    e
}

/// Whether `text` should continue on the next line: open brackets, blocks, back-tick
/// strings or comments, or an expression Rhai finds cut short (`1 +`). Meta-commands
/// are one line.
pub fn needs_more(parser: &rhai::Engine, text: &str) -> bool {
    if text.trim_start().starts_with(':') {
        return false;
    }
    if unfinished(text) {
        return true;
    }
    matches!(
        parser.compile(text).map_err(|e| e.err_type().clone()),
        Err(rhai::ParseErrorType::UnexpectedEOF)
    )
}

/// A hint: shown after the cursor; some (the rest of a config key) Right-arrow inserts.
pub struct ReplHint {
    display: String,
    completion: Option<String>,
}

impl Hint for ReplHint {
    fn display(&self) -> &str {
        &self.display
    }

    fn completion(&self) -> Option<&str> {
        self.completion.as_deref()
    }
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        // Waits for the catalog if the background build has not finished yet.
        Ok(complete(line, pos, &self.lookup(Catalog::builtins())))
    }
}

impl Hinter for ReplHelper {
    type Hint = ReplHint;

    fn hint(&self, line: &str, pos: usize, _ctx: &Context<'_>) -> Option<ReplHint> {
        // Never wait for the catalog while typing.
        let builtins = Catalog::ready()?;
        let cx = self.lookup(builtins);
        let (text, completion) = config_key_hint(line, pos, &cx)
            .or_else(|| signature_hint(line, pos, &cx).map(|h| (h, None)))?;
        // The row the cursor is on: a recalled multi-line input starts rows at column 0.
        let row = &line[..pos];
        let used = match row.rfind('\n') {
            Some(i) => row[i + 1..].chars().count(),
            None => self.prompt_width + row.chars().count(),
        };
        let width = crossterm::terminal::size()
            .map(|(w, _)| usize::from(w))
            .unwrap_or(self.width);
        let display = clip(&text, used, width)?;
        Some(ReplHint {
            display,
            completion,
        })
    }
}

/// Every line is accepted: the console gathers the lines of an unfinished input itself,
/// so each continuation line gets its own prompt (rustyline has none for the lines of
/// one multi-line buffer).
impl Validator for ReplHelper {}

impl Highlighter for ReplHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        if self.color {
            Cow::Owned(highlight(line))
        } else {
            Cow::Borrowed(line)
        }
    }

    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        if self.color {
            Cow::Owned(format!("{PROMPT}{prompt}\x1b[0m"))
        } else {
            Cow::Borrowed(prompt)
        }
    }

    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        if self.color {
            Cow::Owned(format!("{HINT}{hint}\x1b[0m"))
        } else {
            Cow::Borrowed(hint)
        }
    }

    fn highlight_char(&self, _line: &str, _pos: usize, kind: CmdKind) -> bool {
        self.color && kind != CmdKind::MoveCursor
    }
}

impl Helper for ReplHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unfinished_input_is_recognised() {
        let p = parser();
        for text in [
            "fn f() {",
            "let x = 1 +",
            "foo(1,",
            "print(`a",
            "let m = #{",
        ] {
            assert!(needs_more(&p, text), "{text:?}");
        }
        for text in ["1 + 1", "print(\"abc", "x.", ":load (", "let = 1"] {
            assert!(!needs_more(&p, text), "{text:?}");
        }
    }
}
