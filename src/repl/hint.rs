//! The hint after the cursor: the signature and first doc line of the function being
//! called (the innermost open call), or of a function name just typed; inside a config
//! key string, the key's value. Hints are clipped to the terminal's width.

use super::catalog::{Entry, Origin};
use super::complete::{Lookup, config_key_at, infer_type};
use super::lexer::{Kind, Token, tokenize};
use super::pretty::cut;

/// Longest hint, in characters (less when the terminal has less room: [`clip`]).
const MAX: usize = 110;

/// `k8s::list(kind: string) -> array — Every object of a kind in the current namespace.`
pub fn signature_hint(line: &str, pos: usize, cx: &Lookup) -> Option<String> {
    let before = &line[..pos];
    if before.trim_start().starts_with(':') {
        return None;
    }
    let tokens: Vec<Token> = tokenize(before)
        .into_iter()
        .filter(Token::significant)
        .collect();
    let last = tokens.last()?;
    let (name_at, arg_index) = match open_call(before, &tokens) {
        Some(found) => found,
        // A function name just typed (`k8s::list`), before its `(`.
        None if last.kind == Kind::Ident && last.end == before.len() => (tokens.len() - 1, None),
        None => return None,
    };
    let entry = pick(before, &tokens, name_at, arg_index, cx)?;
    let mut text = format!("  {}", entry.signature());
    let doc = entry.summary();
    if !doc.is_empty() {
        text.push_str(" — ");
        text.push_str(&doc);
    }
    Some(text)
}

/// Inside a config key string (`cfg.get("policy.max_total_seq`): the key's current value
/// (`  = 512`) when the key is typed in full, or the rest of the only key that fits and
/// its value. Returns the text shown and the text Right-arrow inserts.
pub fn config_key_hint(line: &str, pos: usize, cx: &Lookup) -> Option<(String, Option<String>)> {
    let before = &line[..pos];
    let tokens = tokenize(before);
    let k = config_key_at(before, &tokens, cx)?;
    if let Some(key) = k.exact() {
        return Some((format!("  = {}", key.value), None));
    }
    match k.candidates().as_slice() {
        [only] => {
            let rest = only.path[k.prefix.len()..].to_string();
            Some((format!("{rest}  = {}", only.value), Some(rest)))
        }
        _ => None,
    }
}

/// A hint cut to what is left of the terminal's row after the prompt and the text before
/// the cursor (a hint that wraps leaves a stray line); `None` when too little is left.
pub fn clip(hint: &str, used: usize, width: usize) -> Option<String> {
    let room = width.saturating_sub(used + 1).min(MAX);
    (room >= 8).then(|| cut(hint, room))
}

/// The name token of the innermost unclosed call and how many arguments precede the
/// cursor's (`foo(a, b|` → index 2).
fn open_call(src: &str, tokens: &[Token]) -> Option<(usize, Option<usize>)> {
    let mut depth = 0i32;
    let mut commas = 0usize;
    for (i, t) in tokens.iter().enumerate().rev() {
        match t.text(src) {
            ")" | "]" | "}" => depth += 1,
            "(" | "[" | "?[" | "{" | "#{" if depth > 0 => depth -= 1,
            "(" => {
                if i > 0 && tokens[i - 1].kind == Kind::Ident {
                    return Some((i - 1, Some(commas)));
                }
                // A parenthesised expression: look further out.
                commas = 0;
            }
            "[" | "?[" | "{" | "#{" => commas = 0,
            "," if depth == 0 => commas += 1,
            _ => {}
        }
    }
    None
}

/// The entry for the name at `name_at`: by module prefix, receiver or bare name; among
/// overloads, the shortest that takes the argument being typed.
fn pick<'a>(
    src: &str,
    tokens: &[Token],
    name_at: usize,
    arg_index: Option<usize>,
    cx: &'a Lookup,
) -> Option<&'a Entry> {
    let name = tokens[name_at].text(src);
    let prev = name_at.checked_sub(1).map(|i| tokens[i].text(src));
    let mut entries = match prev {
        Some("::") if name_at >= 2 => cx.functions(Some(tokens[name_at - 2].text(src)), name),
        Some("." | "?.") => {
            let receiver = infer_type(src, &tokens[..name_at - 1], cx);
            cx.members(receiver.as_deref(), name)
        }
        _ => cx.functions(None, name),
    };
    // After a comma the call has at least that many arguments and one more coming.
    let wanted = match arg_index {
        Some(commas) if commas > 0 => commas + 1,
        _ => 0,
    };
    entries.retain(|e| e.accepts(wanted));
    entries.sort_by_key(|e| e.params.len());
    if let Some(own) = entries.iter().find(|e| e.origin != Origin::Std) {
        return Some(own);
    }
    // The standard library overloads by type (`print(map)`, `print(array)`, …): a hint
    // only when one signature is left.
    let signatures: std::collections::BTreeSet<String> =
        entries.iter().map(|e| e.signature()).collect();
    (signatures.len() == 1).then(|| entries[0])
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::repl::catalog::Catalog;
    use std::sync::Arc;

    use crate::repl::session::{Snapshot, Var};
    use crate::script::builtins::config::ConfigKey;

    fn snapshot() -> Snapshot {
        let key = |path: &str, value: &str, container| ConfigKey {
            path: path.into(),
            value: value.into(),
            container,
        };
        Snapshot {
            vars: vec![Var {
                name: "cfg".into(),
                type_name: "Config".into(),
                keys: Vec::new(),
                config_keys: Some(Arc::new(vec![
                    key("grpo", "{2 keys}", true),
                    key("grpo.max_num_steps", "3", false),
                    key("grpo.max_rollout_turns", "1", false),
                ])),
                config_recipe: None,
                constant: false,
            }],
            ..Snapshot::default()
        }
    }

    fn with_lookup<T>(f: impl FnOnce(&Lookup) -> T) -> T {
        let snap = snapshot();
        let cx = Lookup {
            builtins: Catalog::builtins(),
            session: &snap,
            workdir: Path::new("."),
            search_path: &[],
        };
        f(&cx)
    }

    fn hint(line: &str) -> Option<String> {
        with_lookup(|cx| signature_hint(line, line.len(), cx))
    }

    fn key_hint(line: &str) -> Option<(String, Option<String>)> {
        with_lookup(|cx| config_key_hint(line, line.len(), cx))
    }

    #[test]
    fn a_config_key_hints_its_value() {
        assert_eq!(
            key_hint(r#"cfg.get("grpo.max_num_steps"#),
            Some(("  = 3".to_string(), None))
        );
        // The only key that fits: its rest (Right-arrow inserts it) and value.
        assert_eq!(
            key_hint(r#"cfg.set("grpo.max_r"#),
            Some((
                "ollout_turns  = 1".to_string(),
                Some("ollout_turns".to_string())
            ))
        );
        assert_eq!(key_hint(r#"cfg.get("grpo.max_"#), None);
        assert_eq!(key_hint(r#"cfg.get("grpo")"#), None);
        assert_eq!(key_hint("cfg.get("), None);
    }

    #[test]
    fn hints_fit_the_terminal_row() {
        let text = "  k8s::list(kind: string) -> array — Every object of a kind.";
        assert_eq!(clip(text, 10, 200).as_deref(), Some(text));
        let clipped = clip(text, 90, 120).unwrap();
        assert_eq!(clipped.chars().count(), 29);
        assert!(clipped.ends_with('…') && text.starts_with(clipped.trim_end_matches('…')));
        // Too little room: no hint rather than a stub.
        assert_eq!(clip(text, 113, 120), None);
        // Never longer than MAX on a wide terminal.
        let long = "x".repeat(300);
        assert_eq!(clip(&long, 0, 500).unwrap().chars().count(), MAX);
    }

    #[test]
    fn the_call_under_the_cursor() {
        let h = hint("let pods = k8s::list(").unwrap();
        assert!(
            h.starts_with("  k8s::list(kind: string) -> array — Every object"),
            "{h}"
        );
        // The second argument picks the overload that has one.
        let h = hint("k8s::list(\"Pod\", ").unwrap();
        assert!(h.contains("options: map"), "{h}");
        let h = hint("print(cfg.get(\"a.b\"").unwrap();
        assert!(h.starts_with("  Config.get(path: string)"), "{h}");
        // Back out of a closed inner call to the enclosing one.
        let h = hint("k8s::logs(k8s::namespace(), ").unwrap();
        assert!(h.contains("k8s::logs("), "{h}");
        let h = hint("k8s::banner(").unwrap();
        assert!(h.contains("k8s::banner() -> string"), "{h}");
        let h = hint("k8s::banner").unwrap();
        assert!(h.contains("k8s::banner() -> string"), "{h}");
        assert!(
            hint("\"a\".to_upper(")
                .unwrap()
                .contains("string.to_upper() -> string")
        );
    }

    #[test]
    fn nothing_to_say() {
        assert_eq!(hint("let x = 1 + "), None);
        assert_eq!(hint(":doc k8s::list("), None);
        assert_eq!(hint("(1 + "), None);
        assert_eq!(hint("no_such_function("), None);
        // The standard library's overloads by type are too many to pick one.
        assert_eq!(hint("print("), None);
        // A Config has no `name`; a Manifest's is not offered for it.
        assert_eq!(hint("cfg.name"), None);
    }
}
