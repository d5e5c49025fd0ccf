//! Doc comments (Markdown) for a terminal: `:doc` and `:help`.
//!
//! Only what doc comments use: `#` headings, `-`/`*` list items, fenced code blocks,
//! `` `code` `` spans and `**bold**`. With colour, headings are bold and underlined,
//! code is cyan and list items get a bullet; without (not a terminal, `NO_COLOR`) the
//! markup that reads badly as text (heading hashes, fences, `**`) is dropped and the
//! rest stays as written.

const BOLD: &str = "\x1b[1m";
const HEADING: &str = "\x1b[1;4m";
const CODE: &str = "\x1b[36m";
const RESET: &str = "\x1b[0m";

/// `markdown` as terminal lines (each ending in `\n`).
pub fn render(markdown: &str, color: bool) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            if color {
                out.push_str(&format!("  {CODE}{line}{RESET}\n"));
            } else {
                out.push_str(&format!("  {line}\n"));
            }
            continue;
        }
        let indent = &line[..line.len() - trimmed.len()];
        if let Some(title) = heading(trimmed) {
            let title = inline(title, false);
            if color {
                out.push_str(&format!("{indent}{HEADING}{title}{RESET}\n"));
            } else {
                out.push_str(&format!("{indent}{title}\n"));
            }
        } else if let Some(item) = trimmed
            .strip_prefix("- ")
            .or_else(|| trimmed.strip_prefix("* "))
        {
            let bullet = if color { "•" } else { "-" };
            out.push_str(&format!("{indent}{bullet} {}\n", inline(item, color)));
        } else {
            out.push_str(&format!("{indent}{}\n", inline(trimmed, color)));
        }
    }
    out
}

/// The text of an ATX heading (`## Title`).
fn heading(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches('#');
    let level = line.len() - rest.len();
    ((1..=6).contains(&level) && (rest.is_empty() || rest.starts_with(' '))).then(|| rest.trim())
}

/// Code spans and bold within a line. An unmatched backtick or `**` is left as it is.
fn inline(text: &str, color: bool) -> String {
    let mut out = String::new();
    let mut rest = text;
    loop {
        let tick = rest.find('`');
        let stars = rest.find("**");
        match (tick, stars) {
            (Some(t), s) if s.is_none_or(|s| t < s) => {
                let Some(len) = rest[t + 1..].find('`') else {
                    break;
                };
                let code = &rest[t + 1..t + 1 + len];
                out.push_str(&rest[..t]);
                if color {
                    out.push_str(&format!("{CODE}{code}{RESET}"));
                } else {
                    out.push_str(&format!("`{code}`"));
                }
                rest = &rest[t + len + 2..];
            }
            (_, Some(s)) => {
                let Some(len) = rest[s + 2..].find("**") else {
                    break;
                };
                let strong = &rest[s + 2..s + 2 + len];
                out.push_str(&rest[..s]);
                if color {
                    out.push_str(&format!("{BOLD}{strong}{RESET}"));
                } else {
                    out.push_str(strong);
                }
                rest = &rest[s + len + 4..];
            }
            _ => break,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "Tail a pod's log, `follow` until **stop**.\n\n## Options\n- `since`: seconds\n* `tail`: lines\n\n```rhai\nk8s::logs(\"p\", #{}, |l| true)\n```\nA lone ` stays.";

    #[test]
    fn plain_text_drops_only_the_markup_that_reads_badly() {
        assert_eq!(
            render(DOC, false),
            "Tail a pod's log, `follow` until stop.\n\nOptions\n- `since`: seconds\n- `tail`: lines\n\n  k8s::logs(\"p\", #{}, |l| true)\nA lone ` stays.\n"
        );
    }

    #[test]
    fn a_terminal_gets_headings_code_and_bullets() {
        let shown = render(DOC, true);
        assert!(
            shown
                .starts_with("Tail a pod's log, \x1b[36mfollow\x1b[0m until \x1b[1mstop\x1b[0m.\n"),
            "{shown:?}"
        );
        assert!(shown.contains("\n\x1b[1;4mOptions\x1b[0m\n"), "{shown:?}");
        assert!(
            shown.contains("\n• \x1b[36msince\x1b[0m: seconds\n• \x1b[36mtail\x1b[0m: lines\n"),
            "{shown:?}"
        );
        assert!(
            shown.contains("\n  \x1b[36mk8s::logs(\"p\", #{}, |l| true)\x1b[0m\n"),
            "{shown:?}"
        );
        assert!(
            !shown.contains("```") && !shown.contains("## "),
            "{shown:?}"
        );
    }

    #[test]
    fn headings_need_a_space_and_at_most_six_hashes() {
        assert_eq!(heading("# Title"), Some("Title"));
        assert_eq!(heading("###### Six"), Some("Six"));
        assert_eq!(heading("#######  Seven"), None);
        assert_eq!(heading("#tag"), None);
    }
}
