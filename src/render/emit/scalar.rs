//! Scalars the way PyYAML 6 `safe_dump` writes them: the style analysis
//! (`Emitter.analyze_scalar` / `choose_scalar_style`) and the three writers nrl needs
//! (plain, single-quoted, double-quoted) with PyYAML's width-80 folding.
//!
//! Block styles (`|`, `>`) are never chosen by `safe_dump` for untagged strings, so they
//! are not implemented. Output is ASCII-only (`allow_unicode=False`): every character
//! outside printable ASCII forces double quotes and is escaped.

use super::yaml::Emitter;

/// PyYAML's `best_width`.
const BEST_WIDTH: usize = 80;

/// The scalar styles `safe_dump` produces for nrl trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Plain,
    Single,
    Double,
}

/// What `analyze_scalar` finds out about a text (the subset the style choice uses).
#[derive(Debug, Clone, Copy)]
pub(super) struct Analysis {
    pub(super) empty: bool,
    pub(super) multiline: bool,
    pub(super) allow_block_plain: bool,
    pub(super) allow_single_quoted: bool,
}

/// YAML line breaks as PyYAML knows them (NEL, LS, PS besides `\n`).
fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Whitespace for the "preceded/followed by whitespace" checks (PyYAML includes NUL).
fn is_blank_or_break(c: char) -> bool {
    matches!(c, '\0' | ' ' | '\t' | '\r') || is_break(c)
}

fn is_printable_ascii(c: char) -> bool {
    matches!(c, ' '..='~')
}

/// Port of PyYAML `Emitter.analyze_scalar` with `allow_unicode=False`; `chars` is the text.
pub(super) fn analyze(chars: &[char]) -> Analysis {
    if chars.is_empty() {
        return Analysis {
            empty: true,
            multiline: false,
            allow_block_plain: true,
            allow_single_quoted: true,
        };
    }
    let len = chars.len();
    let mut block_indicators = starts_with(chars, "---") || starts_with(chars, "...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;

    let mut preceded_by_whitespace = true;
    let mut followed_by_whitespace = len == 1 || is_blank_or_break(chars[1]);
    let mut previous_space = false;
    let mut previous_break = false;

    for (index, &ch) in chars.iter().enumerate() {
        if index == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(ch) {
                block_indicators = true;
            }
            if (ch == '?' || ch == ':' || ch == '-') && followed_by_whitespace {
                block_indicators = true;
            }
        } else if (ch == ':' && followed_by_whitespace) || (ch == '#' && preceded_by_whitespace) {
            block_indicators = true;
        }
        if is_break(ch) {
            line_breaks = true;
        }
        // Without allow_unicode, everything but `\n` and printable ASCII is special.
        if !(ch == '\n' || is_printable_ascii(ch)) {
            special_characters = true;
        }
        if ch == ' ' {
            leading_space |= index == 0;
            trailing_space |= index == len - 1;
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(ch) {
            leading_break |= index == 0;
            trailing_break |= index == len - 1;
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blank_or_break(ch);
        followed_by_whitespace = chars.get(index + 2).is_none_or(|&c| is_blank_or_break(c));
    }

    let mut allow_block_plain = true;
    let mut allow_single_quoted = true;
    if leading_space || leading_break || trailing_space || trailing_break {
        allow_block_plain = false;
    }
    if break_space {
        allow_block_plain = false;
        allow_single_quoted = false;
    }
    if space_break || special_characters {
        allow_block_plain = false;
        allow_single_quoted = false;
    }
    if line_breaks || block_indicators {
        allow_block_plain = false;
    }
    Analysis {
        empty: false,
        multiline: line_breaks,
        allow_block_plain,
        allow_single_quoted,
    }
}

/// A "word" that [`analyze`] would find plain-safe without looking at it character by
/// character: an ASCII letter or digit, then letters, digits and `_./=@+-`, or `:` not at
/// the end. No prefix indicator, no space, no `: ` or ` #`, nothing special, so every
/// style is allowed and nothing can fold. Most manifest strings and keys are words.
pub(super) fn is_plain_word(text: &str) -> bool {
    let b = text.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || b"_./=@+-:".contains(c);
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.iter().all(inner)
        && b.last() != Some(&b':')
}

fn starts_with(chars: &[char], prefix: &str) -> bool {
    chars.len() >= prefix.len() && prefix.chars().zip(chars).all(|(a, &b)| a == b)
}

/// `choose_scalar_style` for block context. `implicit_plain` is the serializer's
/// `implicit[0]`: the text would be read back as the same value if written plain.
pub(super) fn choose_style(a: &Analysis, implicit_plain: bool, simple_key: bool) -> Style {
    if implicit_plain && !(simple_key && (a.empty || a.multiline)) && a.allow_block_plain {
        return Style::Plain;
    }
    if a.allow_single_quoted && !(simple_key && a.multiline) {
        return Style::Single;
    }
    Style::Double
}

/// PyYAML's short escapes in double-quoted scalars.
fn short_escape(c: char) -> Option<char> {
    Some(match c {
        '\0' => '0',
        '\x07' => 'a',
        '\x08' => 'b',
        '\t' => 't',
        '\n' => 'n',
        '\x0B' => 'v',
        '\x0C' => 'f',
        '\r' => 'r',
        '\x1B' => 'e',
        '"' => '"',
        '\\' => '\\',
        '\u{85}' => 'N',
        '\u{A0}' => '_',
        '\u{2028}' => 'L',
        '\u{2029}' => 'P',
        _ => return None,
    })
}

impl Emitter {
    /// `write_plain` of an [`is_plain_word`] text: no space in it, so nothing to fold.
    pub(super) fn write_plain_word(&mut self, text: &str) {
        if self.root_context {
            self.open_ended = true;
        }
        if !self.whitespace {
            self.out.push(' ');
            self.column += 1;
        }
        self.whitespace = false;
        self.indention = false;
        self.out.push_str(text);
        self.column += text.len();
    }

    /// Append `chars[start..end]` (ASCII in every caller) and advance the column.
    fn write_run(&mut self, chars: &[char], start: usize, end: usize) {
        self.out.extend(&chars[start..end]);
        self.column += end - start;
    }

    /// Port of `Emitter.write_plain` (line breaks never occur: they rule plain out).
    pub(super) fn write_plain(&mut self, chars: &[char], split: bool) {
        if self.root_context {
            self.open_ended = true;
        }
        if chars.is_empty() {
            return;
        }
        if !self.whitespace {
            self.out.push(' ');
            self.column += 1;
        }
        self.whitespace = false;
        self.indention = false;
        let mut spaces = false;
        let mut start = 0;
        for end in 0..=chars.len() {
            let ch = chars.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end && self.column > BEST_WIDTH && split {
                        self.write_indent();
                        self.whitespace = false;
                        self.indention = false;
                    } else {
                        self.write_run(chars, start, end);
                    }
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ' || is_break(c)) {
                self.write_run(chars, start, end);
                start = end;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
            }
        }
    }

    /// Port of `Emitter.write_single_quoted`.
    pub(super) fn write_single_quoted(&mut self, chars: &[char], split: bool) {
        self.write_indicator("'", true, false, false);
        let len = chars.len();
        let mut spaces = false;
        let mut breaks = false;
        let mut start = 0;
        for end in 0..=len {
            let ch = chars.get(end).copied();
            if spaces {
                if ch != Some(' ') {
                    if start + 1 == end
                        && self.column > BEST_WIDTH
                        && split
                        && start != 0
                        && end != len
                    {
                        self.write_indent();
                    } else {
                        self.write_run(chars, start, end);
                    }
                    start = end;
                }
            } else if breaks {
                if ch.is_none_or(|c| !is_break(c)) {
                    // Only `\n` can get here: other breaks force double quotes.
                    if chars[start] == '\n' {
                        self.write_line_break();
                    }
                    for _ in start..end {
                        self.write_line_break();
                    }
                    self.write_indent();
                    start = end;
                }
            } else if ch.is_none_or(|c| c == ' ' || c == '\'' || is_break(c)) && start < end {
                self.write_run(chars, start, end);
                start = end;
            }
            if ch == Some('\'') {
                self.out.push_str("''");
                self.column += 2;
                start = end + 1;
            }
            if let Some(c) = ch {
                spaces = c == ' ';
                breaks = is_break(c);
            }
        }
        self.write_indicator("'", false, false, false);
    }

    /// Port of `Emitter.write_double_quoted` with `allow_unicode=False`.
    pub(super) fn write_double_quoted(&mut self, chars: &[char], split: bool) {
        self.write_indicator("\"", true, false, false);
        let len = chars.len();
        let mut start = 0;
        for end in 0..=len {
            let ch = chars.get(end).copied();
            let needs_escape = ch
                .is_none_or(|c| c == '"' || c == '\\' || c == '\u{FEFF}' || !is_printable_ascii(c));
            if needs_escape {
                if start < end {
                    self.write_run(chars, start, end);
                    start = end;
                }
                if let Some(c) = ch {
                    self.write_escape(c);
                    start = end + 1;
                }
            }
            if 0 < end
                && end + 1 < len
                && (ch == Some(' ') || start >= end)
                // PyYAML computes `column + (end - start)` in signed arithmetic; right
                // after an escape `start` is `end + 1`.
                && self.column + end > BEST_WIDTH + start
                && split
            {
                if start < end {
                    self.write_run(chars, start, end);
                    start = end;
                }
                self.out.push('\\');
                self.column += 1;
                self.write_indent();
                self.whitespace = false;
                self.indention = false;
                if chars.get(start) == Some(&' ') {
                    self.out.push('\\');
                    self.column += 1;
                }
            }
        }
        self.write_indicator("\"", false, false, false);
    }

    fn write_escape(&mut self, c: char) {
        use std::fmt::Write as _;
        let before = self.out.len();
        self.out.push('\\');
        match short_escape(c) {
            Some(e) => self.out.push(e),
            None => {
                let code = c as u32;
                // Writing to a String cannot fail.
                let _ = if code <= 0xFF {
                    write!(self.out, "x{code:02X}")
                } else if code <= 0xFFFF {
                    write!(self.out, "u{code:04X}")
                } else {
                    write!(self.out, "U{code:08X}")
                };
            }
        }
        self.column += self.out.len() - before;
    }
}

#[cfg(test)]
mod tests {
    use super::super::resolve::{str_is_implicit_plain, yaml_float};
    use super::*;

    fn style_of(s: &str) -> Style {
        let chars: Vec<char> = s.chars().collect();
        choose_style(&analyze(&chars), str_is_implicit_plain(s), false)
    }

    #[test]
    fn plain_when_it_reads_back_as_the_same_string() {
        for s in [
            "y",
            "n",
            "0o17",
            "2.52.0",
            "0.0.0.0",
            "a:b",
            "a#b",
            "-lc",
            "--",
            "$HOME",
            "${X}",
            "nvidia.com/gpu",
            "1.5.",
            "-",
            "a b",
        ] {
            let want = if s == "-" {
                Style::Single
            } else {
                Style::Plain
            };
            assert_eq!(style_of(s), want, "{s:?}");
        }
    }

    #[test]
    fn single_quoted_for_typed_or_indicator_text() {
        for s in [
            "true",
            "0",
            "200000000",
            "1.5",
            "1:30",
            "2024-01-01",
            "- a",
            "#a",
            "a: b",
            "a #b",
            "",
            " x",
            "x ",
            "a\nb",
            "=",
            "<<",
            "~",
            "NULL",
            "0x1F",
            "0b101",
            ".inf",
            "1_000",
        ] {
            assert_eq!(style_of(s), Style::Single, "{s:?}");
        }
    }

    #[test]
    fn nrl_loader_floats_are_quoted_too() {
        // PyYAML writes these plain; nrl's OmegaConf-dialect loader reads them as floats.
        assert_eq!(style_of("1e3"), Style::Single);
        assert_eq!(style_of("1.0e3"), Style::Single);
    }

    #[test]
    fn double_quoted_for_special_characters() {
        for s in [
            "tab\there",
            "em\u{2014}dash",
            "a \nb",
            "a\n b",
            "\r",
            "\u{1F600}",
        ] {
            assert_eq!(style_of(s), Style::Double, "{s:?}");
        }
    }

    #[test]
    fn floats_like_pyyaml() {
        assert_eq!(yaml_float(1e-7), "1.0e-07");
        assert_eq!(yaml_float(1e17), "1.0e+17");
        assert_eq!(yaml_float(1.5), "1.5");
        assert_eq!(yaml_float(3.0), "3.0");
        assert_eq!(yaml_float(f64::NEG_INFINITY), "-.inf");
        assert_eq!(yaml_float(f64::NAN), ".nan");
        assert_eq!(yaml_float(-0.0), "-0.0");
    }
}
