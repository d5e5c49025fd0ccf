//! Syntax colours for the input line (ANSI; the text's width is unchanged).

use super::lexer::{Kind, tokenize};

const RESET: &str = "\x1b[0m";
const KEYWORD: &str = "\x1b[35m";
const STRING: &str = "\x1b[32m";
const NUMBER: &str = "\x1b[36m";
const COMMENT: &str = "\x1b[90m";
const MODULE: &str = "\x1b[33m";
const CALL: &str = "\x1b[34m";
const META: &str = "\x1b[1m";
/// Hints are dim, so they do not read as typed text.
pub const HINT: &str = "\x1b[2m";
pub const PROMPT: &str = "\x1b[1;32m";

/// `line` with colours: keywords, strings, numbers, comments, `module::`, calls, and a
/// leading meta-command.
pub fn highlight(line: &str) -> String {
    let trimmed = line.trim_start();
    if trimmed.starts_with(':') {
        let lead = line.len() - trimmed.len();
        let end = trimmed
            .find(char::is_whitespace)
            .map(|i| lead + i)
            .unwrap_or(line.len());
        return format!(
            "{}{META}{}{RESET}{}",
            &line[..lead],
            &line[lead..end],
            &line[end..]
        );
    }
    let tokens = tokenize(line);
    let mut out = String::with_capacity(line.len() * 2);
    for (i, t) in tokens.iter().enumerate() {
        let text = t.text(line);
        let next = tokens[i + 1..]
            .iter()
            .find(|n| n.significant())
            .map(|n| n.text(line));
        let colour = match t.kind {
            Kind::Keyword => Some(KEYWORD),
            Kind::Str | Kind::Char => Some(STRING),
            Kind::Number => Some(NUMBER),
            Kind::Comment => Some(COMMENT),
            Kind::Ident if next == Some("::") => Some(MODULE),
            Kind::Ident if next == Some("(") => Some(CALL),
            _ => None,
        };
        match colour {
            Some(c) => {
                out.push_str(c);
                out.push_str(text);
                out.push_str(RESET);
            }
            None => out.push_str(text),
        }
    }
    out
}

/// The text without ANSI colour sequences.
pub fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_keep_the_text() {
        let line = r#"let pods = k8s::list("Pod", #{n: 1}); // all"#;
        let h = highlight(line);
        assert_eq!(strip(&h), line);
        assert!(h.starts_with(&format!("{KEYWORD}let{RESET}")));
        assert!(h.contains(&format!("{MODULE}k8s{RESET}::{CALL}list{RESET}(")));
        assert!(h.contains(&format!("{STRING}\"Pod\"{RESET}")));
        assert!(h.contains(&format!("{NUMBER}1{RESET}")));
        assert!(h.ends_with(&format!("{COMMENT}// all{RESET}")));
        let m = highlight(":load x.rhai");
        assert_eq!(m, format!("{META}:load{RESET} x.rhai"));
        assert_eq!(strip(&highlight("print(`a\n${b}`)")), "print(`a\n${b}`)");
    }
}
