//! Text from the cluster and the log, made safe to draw: a control character written
//! into a cell would reach the terminal as is (an ESC sequence in an event message or a
//! log line could move the cursor or clear the screen).

use std::borrow::Cow;

use crate::launch::inspect::age_since;
use crate::terminal_text;
use crate::top::progress::strip_ansi;

/// A name, reason or message from the cluster, with control characters written out.
pub(crate) fn cell(text: &str) -> Cow<'_, str> {
    terminal_text::escape(text)
}

/// A log line as the pager and the tail show it: the last state of a `\r` redraw (tqdm
/// bars), without colour codes, tabs expanded, other control characters written out.
pub(crate) fn log_line(line: &str) -> Cow<'_, str> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let piece = if line.contains('\r') {
        line.rsplit('\r')
            .find(|p| !p.trim().is_empty())
            .unwrap_or("")
    } else {
        line
    };
    let plain = strip_ansi(piece);
    if !plain.contains('\t') {
        return match plain {
            Cow::Borrowed(b) => terminal_text::escape(b),
            Cow::Owned(o) => Cow::Owned(terminal_text::escape(&o).into_owned()),
        };
    }
    let mut expanded = String::with_capacity(plain.len() + 8);
    let mut column = 0;
    for c in plain.chars() {
        if c == '\t' {
            let spaces = 8 - column % 8;
            expanded.extend(std::iter::repeat_n(' ', spaces));
            column += spaces;
        } else {
            expanded.push(c);
            column += 1;
        }
    }
    Cow::Owned(terminal_text::escape(&expanded).into_owned())
}

/// `42s`, `5m`, `3h`, `2d` since an RFC 3339 time, counted from `now`; `fallback` (the
/// session's age, as of its last view) without a clock or a parsable time.
pub(crate) fn age(since: Option<&str>, fallback: &str, now: Option<jiff::Timestamp>) -> String {
    since
        .zip(now)
        .and_then(|(since, now)| age_since(since, now))
        .unwrap_or_else(|| fallback.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_lose_colours_and_redraws_and_keep_nothing_a_terminal_acts_on() {
        assert_eq!(log_line("plain"), Cow::Borrowed("plain"));
        assert_eq!(log_line("\x1b[36m(pid=1)\x1b[0m hi"), "(pid=1) hi");
        assert_eq!(log_line("a 10%\rb 50%\r"), "b 50%");
        assert_eq!(log_line("x\ty"), "x       y");
        assert_eq!(log_line("bell\x07"), "bell\\x07");
    }

    #[test]
    fn ages_count_from_now_or_fall_back() {
        let now: jiff::Timestamp = "2026-01-01T01:00:00Z".parse().expect("time");
        assert_eq!(age(Some("2026-01-01T00:59:30Z"), "1s", Some(now)), "30s");
        assert_eq!(age(Some("2026-01-01T00:00:00Z"), "1s", Some(now)), "60m");
        assert_eq!(age(Some("garbage"), "7m", Some(now)), "7m");
        assert_eq!(age(Some("2026-01-01T00:00:00Z"), "7m", None), "7m");
    }
}
