//! The block-style YAML emitter: a port of the parts of PyYAML's `Emitter` state machine
//! that `safe_dump(doc, sort_keys=False)` drives for a tree of mappings, sequences and
//! scalars (indent 2, width 80, no anchors, implicit tags only).
//!
//! The state (`column`, `whitespace`, `indention`, the indent stack) is PyYAML's, and the
//! node walk mirrors its `expect_*` handlers, so indentation and folding decisions are
//! taken exactly where PyYAML takes them.

use super::resolve;
use super::scalar::{self, Style};
use crate::config::node::{KeyKind, Map, Node, Value};

/// PyYAML's `best_indent`.
const BEST_INDENT: usize = 2;

/// Where a node sits, as PyYAML's `expect_node(root, sequence, mapping, simple_key)` flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Root,
    Sequence,
    Mapping,
    SimpleKey,
}

pub(super) struct Emitter {
    pub(super) out: String,
    pub(super) column: usize,
    /// The last character written was whitespace (no separating space needed).
    pub(super) whitespace: bool,
    /// Only indentation has been written on the current line so far.
    pub(super) indention: bool,
    /// A root plain scalar was written; the stream must end with `...`.
    pub(super) open_ended: bool,
    pub(super) root_context: bool,
    indent: Option<usize>,
    indents: Vec<Option<usize>>,
    /// Scratch buffer holding the current scalar's characters (reused, not reallocated).
    chars: Vec<char>,
}

impl Emitter {
    pub(super) fn new(capacity: usize) -> Emitter {
        Emitter {
            out: String::with_capacity(capacity),
            column: 0,
            whitespace: true,
            indention: true,
            open_ended: false,
            root_context: false,
            indent: None,
            indents: Vec::new(),
            chars: Vec::new(),
        }
    }

    /// One `safe_dump` call: the document, its implicit end, and `...` after a root
    /// plain scalar.
    pub(super) fn document(mut self, doc: &Node) -> String {
        self.node(doc, Ctx::Root);
        self.write_indent();
        if self.open_ended {
            self.write_indicator("...", true, false, false);
            self.write_indent();
        }
        self.out
    }

    fn node(&mut self, node: &Node, ctx: Ctx) {
        match &node.value {
            Value::Map(m) => self.mapping(m),
            Value::List(items) => self.sequence(items, ctx),
            Value::Null => self.scalar("null", true, ctx),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, true, ctx),
            Value::Int(i) => self.scalar(&i.to_string(), true, ctx),
            Value::Float(f) => self.scalar(&resolve::yaml_float(*f), true, ctx),
            Value::Str(s) => self.scalar(s, resolve::str_is_implicit_plain(s), ctx),
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        self.indent = match self.indent {
            None if flow => Some(BEST_INDENT),
            None => Some(0),
            Some(i) if !indentless => Some(i + BEST_INDENT),
            Some(i) => Some(i),
        };
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().flatten();
    }

    /// An empty collection is written in flow style: `[]` / `{}`.
    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.write_indicator(close, false, false, false);
    }

    fn sequence(&mut self, items: &[Node], ctx: Ctx) {
        if items.is_empty() {
            return self.empty_flow("[", "]");
        }
        // A sequence that is a mapping value sits at the key's column.
        let mapping_context = matches!(ctx, Ctx::Mapping | Ctx::SimpleKey);
        let indentless = mapping_context && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Ctx::Sequence);
        }
        self.pop_indent();
    }

    fn mapping(&mut self, map: &Map) {
        if map.is_empty() {
            return self.empty_flow("{", "}");
        }
        self.increase_indent(false, false);
        for (key, value) in map {
            self.write_indent();
            let typed_key = resolve::key_text(key, value.key_kind);
            let (text, implicit_plain) = match &typed_key {
                Some(t) => (t.as_str(), true),
                None => (key.as_str(), resolve::str_is_implicit_plain(key)),
            };
            if is_simple_key(text, value.key_kind) {
                self.scalar(text, implicit_plain, Ctx::SimpleKey);
                self.write_indicator(":", false, false, false);
            } else {
                // Multi-line, empty or very long keys use the explicit `? key` form.
                self.write_indicator("?", true, false, true);
                self.scalar(text, implicit_plain, Ctx::Mapping);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, Ctx::Mapping);
        }
        self.pop_indent();
    }

    fn scalar(&mut self, text: &str, implicit_plain: bool, ctx: Ctx) {
        // The common case, without the per-character analysis: PyYAML would choose plain
        // style for it and write it in one piece (its indentation is never used).
        if implicit_plain && scalar::is_plain_word(text) {
            self.root_context = ctx == Ctx::Root;
            self.write_plain_word(text);
            return;
        }
        self.analyzed_scalar(text, implicit_plain, ctx);
    }

    /// PyYAML's full path: analyze the text, choose a style, write it.
    fn analyzed_scalar(&mut self, text: &str, implicit_plain: bool, ctx: Ctx) {
        self.increase_indent(true, false);
        let mut chars = std::mem::take(&mut self.chars);
        chars.clear();
        chars.extend(text.chars());
        let analysis = scalar::analyze(&chars);
        let simple_key = ctx == Ctx::SimpleKey;
        self.root_context = ctx == Ctx::Root;
        let split = !simple_key;
        match scalar::choose_style(&analysis, implicit_plain, simple_key) {
            Style::Plain => self.write_plain(&chars, split),
            Style::Single => self.write_single_quoted(&chars, split),
            Style::Double => self.write_double_quoted(&chars, split),
        }
        self.chars = chars;
        self.pop_indent();
    }

    pub(super) fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        whitespace: bool,
        indention: bool,
    ) {
        if !self.whitespace && need_whitespace {
            self.out.push(' ');
            self.column += 1;
        }
        self.out.push_str(indicator);
        self.column += indicator.len();
        self.whitespace = whitespace;
        self.indention = self.indention && indention;
        self.open_ended = false;
    }

    pub(super) fn write_indent(&mut self) {
        let indent = self.indent.unwrap_or(0);
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.write_line_break();
        }
        if self.column < indent {
            self.whitespace = true;
            self.out
                .extend(std::iter::repeat_n(' ', indent - self.column));
            self.column = indent;
        }
    }

    pub(super) fn write_line_break(&mut self) {
        self.out.push('\n');
        self.whitespace = true;
        self.indention = true;
        self.column = 0;
    }
}

/// PyYAML `check_simple_key` for a scalar key: non-empty, single-line, and shorter than
/// 128 characters counting the (unwritten) tag shorthand such as `!!str`.
fn is_simple_key(text: &str, kind: KeyKind) -> bool {
    let tag_len = match kind {
        KeyKind::Str | KeyKind::Int => "!!str".len(),
        KeyKind::Bool | KeyKind::Null => "!!bool".len(),
        KeyKind::Float => "!!float".len(),
    };
    !text.is_empty()
        && !text
            .chars()
            .any(|c| matches!(c, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}'))
        && text.chars().nth(127 - tag_len).is_none()
}

/// Append `n` spaces without a per-character loop.
pub(super) fn push_spaces(out: &mut String, mut n: usize) {
    const SPACES: &str = "                                                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        n -= k;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Ctx, Emitter};
    use crate::render::emit::scalar::is_plain_word;

    /// The emitter state after writing `text` as a scalar in `ctx`, fast path or not.
    fn emit(text: &str, ctx: Ctx, after_indicator: bool, analyzed: bool) -> String {
        let mut e = Emitter::new(64);
        e.write_indicator("key", true, false, false);
        if !after_indicator {
            e.write_indicator(":", false, false, false);
        }
        e.whitespace = !after_indicator;
        if analyzed {
            e.analyzed_scalar(text, true, ctx);
        } else {
            e.scalar(text, true, ctx);
        }
        format!(
            "{:?} col={} ws={} ind={} open={} root={} indent={:?}/{:?}",
            e.out,
            e.column,
            e.whitespace,
            e.indention,
            e.open_ended,
            e.root_context,
            e.indent,
            e.indents
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// A word written by the fast path leaves exactly what PyYAML's analysis and
        /// plain writer leave.
        #[test]
        fn plain_words_skip_the_analysis_unchanged(
            text in prop_oneof!["[a-zA-Z0-9_./=@+:-]{1,90}", "[a-zA-Z0-9_./=@+:#, '-]{1,90}"],
            after_indicator in any::<bool>(),
        ) {
            for ctx in [Ctx::Root, Ctx::Sequence, Ctx::Mapping, Ctx::SimpleKey] {
                let fast = emit(&text, ctx, after_indicator, false);
                let full = emit(&text, ctx, after_indicator, true);
                prop_assert_eq!(&fast, &full, "{:?} in {:?}", text, ctx);
            }
            if is_plain_word(&text) {
                prop_assert!(!text.contains([' ', '#', ',', '\'']));
            }
        }
    }

    #[test]
    fn words_and_non_words() {
        for w in [
            "a",
            "nvcr.io/nvidia/nemo-rl:v0.4",
            "64Gi",
            "x_y=z@w+1",
            "9-9",
        ] {
            assert!(is_plain_word(w), "{w}");
        }
        for n in [
            "", "-a", ".a", "a:", "a b", "a#b", "_a", ":a", "a,b", "é", "a\n",
        ] {
            assert!(!is_plain_word(n), "{n:?}");
        }
    }
}
