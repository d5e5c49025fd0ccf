//! Text from a cluster or a Ray dashboard, made safe to show in a table or a one-line
//! summary. Entrypoints, metadata, event messages and pod reasons are written by whoever
//! can submit a job or create an object; printed raw, an ESC sequence in one of them can
//! recolour, move the cursor, retitle or clear the terminal, and a bidi override can make
//! a cell read differently from what it holds (CVE-2021-42574 "Trojan Source"). Log
//! streams are not passed through here: they stay byte-exact.

use std::borrow::Cow;

use comfy_table::{ContentArrangement, Table, presets};

/// `text` with every character a terminal would act on written out visibly: ESC as `\e`,
/// tab, carriage return and line feed as `\t`, `\r`, `\n`, the other C0 controls and DEL
/// as `\xNN`, C1 controls and the bidi embedding, override and isolate controls as
/// `\u{NNNN}`. Text without any comes back borrowed. For table cells and one-line
/// summaries.
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_with(text, false)
}

/// [`escape`], but line feeds and tabs stay: for messages that are several lines on
/// purpose (a diagnostic, a progress line with a note).
pub fn escape_keeping_lines(text: &str) -> Cow<'_, str> {
    escape_with(text, true)
}

fn escape_with(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let kept = |c: char| keep_lines && (c == '\n' || c == '\t');
    if !text.chars().any(|c| needs_escape(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if kept(c) => out.push(c),
            '\u{1b}' => out.push_str("\\e"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`escape`] into an owned cell.
pub fn cell(text: &str) -> String {
    escape(text).into_owned()
}

/// The first line of `text`, escaped: what a one-line summary shows of a multi-line
/// message.
pub fn first_line(text: &str) -> String {
    cell(text.lines().next().unwrap_or(""))
}

/// How a [`plain_table`] fits its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrap {
    /// Wrap cells to the terminal's width.
    ToTerminal,
    /// One line per row, however long (pipes, files, scripts).
    Never,
}

/// A borderless table, columns two spaces apart, trailing spaces trimmed, no final line
/// feed; every header and cell [`escape`]d. The one table layout of `nrl`'s listings.
pub fn plain_table<H: AsRef<str>>(header: &[H], rows: Vec<Vec<String>>, wrap: Wrap) -> String {
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    match wrap {
        Wrap::ToTerminal => {
            table.set_content_arrangement(ContentArrangement::Dynamic);
        }
        Wrap::Never => {
            table.force_no_tty();
            table.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    table.set_header(header.iter().map(|h| cell(h.as_ref())).collect::<Vec<_>>());
    for row in rows {
        table.add_row(row.iter().map(|c| cell(c)).collect::<Vec<_>>());
    }
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    table
        .lines()
        .map(|line| line.trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn needs_escape(c: char) -> bool {
    let u = c as u32;
    u < 0x20
        || (0x7f..=0x9f).contains(&u)
        || (0x202a..=0x202e).contains(&u)
        || (0x2066..=0x2069).contains(&u)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let text = "python -m nemo_rl.train --cfg=grpo.yaml · é 漢字 🚀";
        assert!(matches!(escape(text), Cow::Borrowed(t) if t == text));
    }

    #[test]
    fn controls_are_written_out() {
        assert_eq!(
            escape("a\u{1b}[31mred\u{1b}]0;pwned\u{7}\tb\r\nc\u{0}\u{7f}"),
            "a\\e[31mred\\e]0;pwned\\x07\\tb\\r\\nc\\x00\\x7f"
        );
        assert_eq!(escape("\u{9b}2J"), "\\u{009b}2J");
        assert_eq!(
            escape("admin\u{202e}txt.exe\u{2066}x\u{2069}"),
            "admin\\u{202e}txt.exe\\u{2066}x\\u{2069}"
        );
    }

    #[test]
    fn messages_keep_their_lines_and_lose_their_escapes() {
        assert_eq!(
            escape_keeping_lines("a\n\tb\u{1b}[2J\rc"),
            "a\n\tb\\e[2J\\rc"
        );
        assert!(matches!(escape_keeping_lines("a\nb"), Cow::Borrowed(_)));
    }

    #[test]
    fn tables_escape_headers_and_cells() {
        let table = plain_table(
            &["NAME", "NOTE\u{1b}[8m"],
            vec![
                vec!["a".into(), "\u{1b}]0;title\u{7}ok".into()],
                vec!["bb".into(), "two\nlines".into()],
            ],
            Wrap::Never,
        );
        insta::assert_snapshot!(table, @r"
        NAME  NOTE\e[8m
        a     \e]0;title\x07ok
        bb    two\nlines
        ");
    }

    #[test]
    fn a_one_line_summary_takes_the_first_line() {
        assert_eq!(first_line("boom\u{1b}[2J\nsecond"), "boom\\e[2J");
        assert_eq!(first_line(""), "");
    }

    proptest! {
        #[test]
        fn escaped_text_holds_no_control_a_terminal_acts_on(s in "\\PC*|[\\x00-\\x1f\\x7f-\\x9f\u{202a}-\u{202e}\u{2066}-\u{2069}a]*") {
            let out = escape(&s);
            prop_assert!(!out.chars().any(needs_escape), "{out:?}");
            // Nothing is dropped: every printable character of the input survives in order.
            let kept: String = s.chars().filter(|c| !needs_escape(*c) && *c != '\\').collect();
            let shown: String = out.chars().filter(|c| *c != '\\').collect();
            let mut rest = shown.chars();
            prop_assert!(kept.chars().all(|k| rest.any(|c| c == k)), "{s:?} -> {out:?}");
        }
    }
}
