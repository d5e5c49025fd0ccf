//! Diagnostics: one error type for the whole library, rendered with miette.
//!
//! Every error carries a stable code (`nrl::config::unknown_key`), a message, labels at
//! source spans, an optional help line, and the exit code it maps to. Labels that point
//! into a different file than the first label become related diagnostics so miette can
//! show each file's snippet.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use miette::{
    Diagnostic, LabeledSpan, MietteError, MietteSpanContents, Severity, SourceCode, SourceSpan,
    SpanContents,
};

use crate::config::source::Span;
use crate::terminal_text::escape_keeping_lines;

/// Process exit codes (DESIGN §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Ok,
    /// The job or run failed.
    Failed,
    /// Bad input: usage, configuration, script compile errors.
    Input,
    /// A cluster or Ray API failure.
    Api,
    /// Interrupted (Ctrl-C).
    Interrupted,
    /// A status passed through unchanged: a remote command's (`nrl dev connect -- CMD`)
    /// or a script's `exit(n)`.
    Code(i32),
}

impl Exit {
    pub fn code(self) -> i32 {
        match self {
            Exit::Ok => 0,
            Exit::Failed => 1,
            Exit::Input => 2,
            Exit::Api => 3,
            Exit::Interrupted => 130,
            Exit::Code(code) => code,
        }
    }
}

/// A labelled source span.
#[derive(Debug, Clone)]
pub struct Label {
    pub span: Span,
    pub text: String,
}

/// The library's error type. Boxed so that `Result<T, Diag>` stays one pointer wide;
/// fields are reached through `Deref` (`diag.code`, `diag.message`).
#[derive(Debug, Clone)]
pub struct Diag(Box<DiagInner>);

/// The contents of a [`Diag`].
#[derive(Debug, Clone)]
pub struct DiagInner {
    /// Stable code (`nrl::config::unknown_key`); a playbook's own findings bring theirs.
    pub code: Cow<'static, str>,
    pub message: String,
    pub labels: Vec<Label>,
    pub help: Option<String>,
    pub notes: Vec<String>,
    pub exit: Exit,
    pub severity: Severity,
    /// Further errors reported together (schema errors aggregate).
    pub related: Vec<Diag>,
}

pub type Result<T, E = Diag> = std::result::Result<T, E>;

impl Diag {
    /// A bad-input error (exit 2).
    pub fn new(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Diag {
        Diag(Box::new(DiagInner {
            code: code.into(),
            message: message.into(),
            labels: Vec::new(),
            help: None,
            notes: Vec::new(),
            exit: Exit::Input,
            severity: Severity::Error,
            related: Vec::new(),
        }))
    }

    /// A cluster / Ray API failure (exit 3).
    pub fn api(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Diag {
        Diag::new(code, message).with_exit(Exit::Api)
    }

    pub fn with_exit(mut self, exit: Exit) -> Diag {
        self.exit = exit;
        self
    }

    pub fn warning(mut self) -> Diag {
        self.severity = Severity::Warning;
        self
    }

    /// Add a label; `None` spans are ignored so callers need not branch.
    pub fn label(mut self, span: Option<Span>, text: impl Into<String>) -> Diag {
        if let Some(span) = span {
            self.labels.push(Label {
                span,
                text: text.into(),
            });
        }
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diag {
        self.help = Some(help.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Diag {
        self.notes.push(note.into());
        self
    }

    pub fn with_related(mut self, related: Vec<Diag>) -> Diag {
        self.related.extend(related);
        self
    }

    /// Prefix the message with context ("while loading X: ...").
    pub fn context(mut self, ctx: impl fmt::Display) -> Diag {
        self.message = format!("{ctx}: {}", self.message);
        self
    }

    /// First label's `file:line:col`.
    pub fn location(&self) -> Option<String> {
        self.labels.first().map(|l| l.span.location())
    }

    /// Combine several errors into one report (the first leads).
    pub fn aggregate(mut errors: Vec<Diag>) -> Option<Diag> {
        if errors.is_empty() {
            return None;
        }
        let first = errors.remove(0);
        Some(first.with_related(errors))
    }

    /// Render for a terminal or a snapshot. `color` off gives plain ASCII-art-free
    /// unicode suitable for tests.
    pub fn render(&self, color: bool, width: usize) -> String {
        let theme = if color {
            miette::GraphicalTheme::unicode()
        } else {
            miette::GraphicalTheme::unicode_nocolor()
        };
        let handler = miette::GraphicalReportHandler::new_themed(theme)
            .with_width(width)
            .with_links(false);
        let mut out = String::new();
        let view = DiagView::new(self);
        if handler.render_report(&mut out, &view).is_err() {
            out = format!(
                "error[{}]: {}",
                self.code,
                escape_keeping_lines(&self.message)
            );
        }
        out
    }
}

impl std::ops::Deref for Diag {
    type Target = DiagInner;
    fn deref(&self) -> &DiagInner {
        &self.0
    }
}

impl std::ops::DerefMut for Diag {
    fn deref_mut(&mut self) -> &mut DiagInner {
        &mut self.0
    }
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(loc) = self.location() {
            write!(f, " (at {loc})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diag {}

impl From<std::io::Error> for Diag {
    fn from(e: std::io::Error) -> Diag {
        Diag::new("nrl::io", e.to_string())
    }
}

/// A render-time view of a [`Diag`]: the labels of one file plus related views for the
/// labels in other files, in the shape miette wants.
struct DiagView<'a> {
    diag: &'a Diag,
    message: String,
    source: Option<SourceView>,
    labels: Vec<LabeledSpan>,
    related: Vec<DiagView<'a>>,
    help: Option<String>,
    code: Option<&'a str>,
    severity: Severity,
}

impl<'a> DiagView<'a> {
    fn new(diag: &'a Diag) -> DiagView<'a> {
        let mut views = Vec::new();
        let mut labels = Vec::new();
        let mut source = None;
        let mut notes = Vec::new();
        let primary_src = diag.labels.first().map(|l| l.span.src);
        let mut others: Vec<&Label> = Vec::new();
        match diag.labels.first().map(|l| (l, clip_long_line(l))) {
            // A label on a very long line (minified YAML, a long override): show a window
            // of the line around it, and say so.
            Some((first, Some(clipped))) => {
                labels.push(clipped.label(&first.text));
                notes.push(clipped.note());
                source = Some(SourceView::Clipped(clipped));
                others.extend(diag.labels.iter().skip(1));
            }
            Some((first, None)) => {
                let file = first.span.file();
                source = Some(SourceView::File(Snippets::new(&file.name, &file.text)));
                for l in &diag.labels {
                    if Some(l.span.src) == primary_src && clip_long_line(l).is_none() {
                        labels.push(LabeledSpan::new_with_span(
                            Some(l.text.clone()),
                            (l.span.start as usize, l.span.len()),
                        ));
                    } else {
                        others.push(l);
                    }
                }
            }
            None => {}
        }
        for l in others {
            let (source, label, help) = match clip_long_line(l) {
                Some(clipped) => {
                    let label = clipped.label(&l.text);
                    let note = format!("note: {}", clipped.note());
                    (SourceView::Clipped(clipped), label, Some(note))
                }
                None => {
                    let file = l.span.file();
                    (
                        SourceView::File(Snippets::new(&file.name, &file.text)),
                        LabeledSpan::new_with_span(
                            Some(l.text.clone()),
                            (l.span.start as usize, l.span.len()),
                        ),
                        None,
                    )
                }
            };
            views.push(DiagView {
                diag,
                message: l.text.clone(),
                source: Some(source),
                labels: vec![label],
                related: Vec::new(),
                help,
                code: None,
                severity: Severity::Advice,
            });
        }
        for r in &diag.related {
            views.push(DiagView::new(r));
        }
        let mut help = diag.help.clone();
        notes.extend(diag.notes.iter().cloned());
        if !notes.is_empty() {
            let notes = notes
                .iter()
                .map(|n| format!("note: {n}"))
                .collect::<Vec<_>>()
                .join("\n");
            help = Some(match help {
                Some(h) => format!("{h}\n{notes}"),
                None => notes,
            });
        }
        DiagView {
            diag,
            // Messages quote the cluster (API server statuses, event messages, owner
            // labels): its control characters are escaped, its line feeds kept.
            message: escape_keeping_lines(&diag.message).into_owned(),
            source,
            labels,
            related: views,
            help: help.map(|h| escape_keeping_lines(&h).into_owned()),
            code: Some(&diag.code),
            severity: diag.severity,
        }
    }
}

/// A named source for miette. miette 7.6 reports a snippet's `line_count` as the absolute
/// number of its last line, so its "do these snippets overlap?" test merges any two labels
/// of a long file into one giant snippet; this reports the real number of lines.
struct Snippets {
    name: String,
    text: Arc<str>,
}

impl Snippets {
    fn new(name: &str, text: &Arc<str>) -> Snippets {
        Snippets {
            name: name.to_string(),
            text: text.clone(),
        }
    }
}

impl SourceCode for Snippets {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        // Context lines that are very long are left out (the label's own line never is:
        // labels on long lines are shown through a `ClippedLine`).
        let (mut before, mut after) = (before, after);
        let inner = loop {
            let inner = self.text.read_span(span, before, after)?;
            let start = inner.span().offset();
            let (long_before, long_after) =
                long_context_lines(inner.data(), span.offset() - start.min(span.offset()));
            match (long_before && before > 0, long_after && after > 0) {
                (false, false) => break inner,
                (b, a) => {
                    before -= usize::from(b);
                    after -= usize::from(a);
                }
            }
        };
        let data = inner.data();
        let newlines = data.iter().filter(|&&b| b == b'\n').count();
        let lines = if data.ends_with(b"\n") {
            newlines
        } else {
            newlines + 1
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            data,
            *inner.span(),
            inner.line(),
            inner.column(),
            lines,
        )))
    }
}

/// Whether `data` has a line longer than [`LONG_LINE`] before, or after, the line that
/// holds byte `at`.
fn long_context_lines(data: &[u8], at: usize) -> (bool, bool) {
    let (mut before, mut after) = (false, false);
    let mut line_start = 0;
    for line in data.split(|&b| b == b'\n') {
        let line_end = line_start + line.len();
        if line.len() > LONG_LINE {
            if line_end < at {
                before = true;
            } else if line_start > at {
                after = true;
            }
        }
        line_start = line_end + 1;
    }
    (before, after)
}

/// What a view shows: the labelled file, or a window of one very long line of it.
enum SourceView {
    File(Snippets),
    Clipped(ClippedLine),
}

/// Lines longer than this (in bytes) are shown as a window around the label: the
/// renderer lays out every column of a line it shows (past column 65,535 it panics).
const LONG_LINE: usize = 400;
/// How much of the line to show before the label and after it, in bytes.
const WINDOW_BEFORE: usize = 60;
const WINDOW_AFTER: usize = 100;
/// At most this much of a label's own text is underlined.
const MAX_LABEL: usize = 200;
const ELLIPSIS: &str = "…";

/// A window of one long line, with the line and column numbers of the original.
struct ClippedLine {
    name: String,
    /// `…` + the shown part of the line + `…`.
    window: String,
    /// 0-based number of the line in the file.
    line: usize,
    /// Length of the whole line, in characters.
    line_chars: usize,
    /// 0-based character column of the first shown character, and where it starts in
    /// `window` (after a leading `…`).
    first_column: usize,
    prefix: usize,
    /// The label, in `window` offsets.
    span: (usize, usize),
}

impl ClippedLine {
    fn label(&self, text: &str) -> LabeledSpan {
        LabeledSpan::new_with_span(Some(text.to_string()), self.span)
    }

    fn note(&self) -> String {
        let shown = self.window[self.prefix..]
            .trim_end_matches(ELLIPSIS)
            .chars()
            .count();
        format!(
            "line {} is {} characters long: showing columns {}-{}",
            self.line + 1,
            self.line_chars,
            self.first_column + 1,
            self.first_column + shown
        )
    }
}

/// The window of `label`'s line to show, when that line is too long to show whole.
fn clip_long_line(label: &Label) -> Option<ClippedLine> {
    let file = label.span.file();
    let text: &str = &file.text;
    let start = (label.span.start as usize).min(text.len());
    let end = (label.span.end as usize).clamp(start, text.len());
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    if line_end - line_start <= LONG_LINE {
        return None;
    }
    let floor = |mut i: usize| {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let from = floor(start.saturating_sub(WINDOW_BEFORE).max(line_start));
    let label_end = floor(end.min(start + MAX_LABEL).min(line_end)).max(start);
    let to = floor((label_end + WINDOW_AFTER).min(line_end));
    let prefix = if from > line_start { ELLIPSIS } else { "" };
    let suffix = if to < line_end { ELLIPSIS } else { "" };
    let window = format!("{prefix}{}{suffix}", &text[from..to]);
    let at = prefix.len() + (start - from);
    Some(ClippedLine {
        name: file.name.clone(),
        line: text[..line_start].matches('\n').count(),
        line_chars: text[line_start..line_end].chars().count(),
        first_column: text[line_start..from].chars().count(),
        prefix: prefix.len(),
        span: (at, label_end - start),
        window,
    })
}

impl SourceCode for ClippedLine {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        _before: usize,
        _after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        // The whole window is one line; the column is the original one, for the
        // `file:line:column` header.
        let at = span.offset().clamp(self.prefix, self.window.len());
        let column = self.first_column
            + self
                .window
                .get(self.prefix..at)
                .map_or(0, |s| s.chars().count());
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            self.window.as_bytes(),
            (0, self.window.len()).into(),
            self.line,
            column,
            1,
        )))
    }
}

impl fmt::Debug for DiagView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.diag, f)
    }
}

impl fmt::Display for DiagView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DiagView<'_> {}

impl Diagnostic for DiagView<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.code.map(|c| Box::new(c) as Box<dyn fmt::Display>)
    }

    fn severity(&self) -> Option<Severity> {
        Some(self.severity)
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h.clone()) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        match self.source.as_ref()? {
            SourceView::File(s) => Some(s as &dyn SourceCode),
            SourceView::Clipped(c) => Some(c as &dyn SourceCode),
        }
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        if self.labels.is_empty() {
            None
        } else {
            Some(Box::new(self.labels.iter().cloned()))
        }
    }

    fn related<'b>(&'b self) -> Option<Box<dyn Iterator<Item = &'b dyn Diagnostic> + 'b>> {
        if self.related.is_empty() {
            None
        } else {
            Some(Box::new(self.related.iter().map(|r| r as &dyn Diagnostic)))
        }
    }
}

/// `64 MiB`, `512 KiB`, `100 bytes`: limits as people write them.
pub fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::{SourceKind, add_source};

    #[test]
    fn renders_code_label_and_help() {
        let id = add_source("r.yaml", None, "a: 1\nimagee: x\n", SourceKind::Text);
        let d = Diag::new("nrl::config::unknown_key", "unknown key `imagee`")
            .label(Some(Span::new(id, 5, 11)), "not a field of infra")
            .help("did you mean `image`?");
        let out = d.render(false, 80);
        assert!(out.contains("nrl::config::unknown_key"), "{out}");
        assert!(out.contains("r.yaml:2:1"), "{out}");
        assert!(out.contains("did you mean `image`?"), "{out}");
        assert_eq!(d.exit, Exit::Input);
        assert_eq!(d.location().as_deref(), Some("r.yaml:2:1"));
    }

    #[test]
    fn distant_labels_of_a_long_file_get_separate_snippets() {
        let text: String = (0..300).map(|i| format!("k{i}: v\n")).collect();
        let at = |line: usize| text.lines().take(line).map(|l| l.len() + 1).sum::<usize>();
        let id = add_source("long.yaml", None, text.clone(), SourceKind::Text);
        let d = Diag::new("nrl::test", "m")
            .label(Some(Span::new(id, at(200), at(200) + 4)), "a")
            .label(Some(Span::new(id, at(220), at(220) + 4)), "b");
        let out = d.render(false, 80);
        assert!(
            out.contains("long.yaml:201:1") && out.contains("long.yaml:221:1"),
            "{out}"
        );
        assert!(
            !out.contains("k210"),
            "the lines between are not shown: {out}"
        );
    }

    #[test]
    fn a_label_far_along_a_long_line_shows_a_window_of_it() {
        // Regression: a span past column 65,535 panicked inside the renderer (exit 101).
        let filler = "x".repeat(70_000);
        let text = format!("a: 1\nb: [{filler}, bad, tail]\nc: 2\n");
        let at = text.find("bad").unwrap();
        let id = add_source("minified.yaml", None, text.clone(), SourceKind::Text);
        let d =
            Diag::new("nrl::test", "bad value").label(Some(Span::new(id, at, at + 3)), "this one");
        let out = d.render(false, 100);
        assert!(out.contains("minified.yaml:2:70007"), "{out}");
        assert!(
            out.len() < 2_000,
            "the line is not shown whole: {} bytes",
            out.len()
        );
        insta::assert_snapshot!(out);
    }

    #[test]
    fn a_label_at_the_start_of_a_long_line_with_a_long_span_is_clipped() {
        let long = "é".repeat(50_000);
        let text = format!("key: {long}\n");
        let id = add_source("wide.yaml", None, text.clone(), SourceKind::Text);
        let d = Diag::new("nrl::test", "too long")
            .label(Some(Span::new(id, 5, text.len() - 1)), "this value");
        let out = d.render(false, 100);
        assert!(out.contains("wide.yaml:1:6"), "{out}");
        insta::assert_snapshot!(out);
    }

    #[test]
    fn a_second_label_on_a_long_line_gets_its_own_window() {
        let text = format!("short: 1\nlong: {}!\n", "y".repeat(1_000));
        let bang = text.find('!').unwrap();
        let id = add_source("two.yaml", None, text.clone(), SourceKind::Text);
        let d = Diag::new("nrl::test", "two places")
            .label(Some(Span::new(id, 0, 5)), "here")
            .label(Some(Span::new(id, bang, bang + 1)), "and here");
        let out = d.render(false, 100);
        assert!(
            out.contains("two.yaml:1:1") && out.contains("two.yaml:2:1007"),
            "{out}"
        );
        assert!(out.contains("line 2 is 1007 characters long"), "{out}");
        assert!(!out.contains(&"y".repeat(200)), "{out}");
    }
}
