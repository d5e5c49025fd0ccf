//! Tab completion: built-in functions, `module::` functions, methods and properties by
//! receiver type (where it can be told: a variable's type, a literal, what a function
//! returns), map keys of a variable, a Config's keys inside `cfg.get("…` and the like,
//! variables in scope, keywords, module paths after `import`, file paths inside string
//! literals, and meta-commands.

use std::path::{Path, PathBuf};

use rustyline::completion::Pair;

use super::catalog::{Catalog, Entry, EntryKind, Origin};
use super::lexer::{KEYWORDS, Kind, Token, tokenize};
use super::meta;
use super::session::Snapshot;
use crate::script::builtins::config::ConfigKey;
use crate::script::resolver::{STDLIB, STDLIB_PREFIX};

/// What completion and hints look things up in.
pub struct Lookup<'a> {
    pub builtins: &'a Catalog,
    pub session: &'a Snapshot,
    /// Relative paths in strings start here.
    pub workdir: &'a Path,
    /// `NRL_PATH`, for `import "…"`.
    pub search_path: &'a [PathBuf],
}

impl<'a> Lookup<'a> {
    fn catalogs(&self) -> [&'a Catalog; 2] {
        [&self.session.catalog, self.builtins]
    }

    /// Functions named `name` in `module` (`None`: bare functions).
    pub fn functions(&self, module: Option<&str>, name: &str) -> Vec<&'a Entry> {
        let mut out = Vec::new();
        for cat in self.catalogs() {
            match module {
                Some(m) => out.extend(cat.in_module(m).filter(|e| e.name == name)),
                None => out.extend(cat.functions().filter(|e| e.name == name)),
            }
        }
        out
    }

    /// Methods or properties named `name` on `receiver`.
    pub fn members(&self, receiver: Option<&str>, name: &str) -> Vec<&'a Entry> {
        self.builtins
            .members(receiver)
            .filter(|e| e.name == name)
            .collect()
    }
}

/// Candidates for the text before `pos`: `(start of the replaced text, candidates)`.
pub fn complete(line: &str, pos: usize, cx: &Lookup) -> (usize, Vec<Pair>) {
    let before = &line[..pos];
    if before.trim_start().starts_with(':') {
        return complete_meta(before, cx);
    }
    let tokens: Vec<Token> = tokenize(before);
    let Some(last) = tokens.last() else {
        return (pos, pairs(code_names("", cx)));
    };
    if let Some(k) = config_key_at(before, &tokens, cx) {
        let candidates = k
            .candidates()
            .into_iter()
            .map(|key| Pair {
                display: format!("{} = {}", key.path, key.value),
                replacement: if key.container {
                    format!("{}.", key.path)
                } else {
                    key.path.clone()
                },
            })
            .collect();
        return (k.start, candidates);
    }
    if last.kind == Kind::Str && !last.closed && last.text(before).starts_with(['"', '`']) {
        let start = last.start + 1;
        let prefix = &before[start..];
        let significant: Vec<&Token> = tokens.iter().filter(|t| t.significant()).collect();
        let after_import =
            significant.len() >= 2 && significant[significant.len() - 2].text(before) == "import";
        let names = if after_import {
            module_paths(prefix, cx)
        } else {
            file_paths(prefix, cx.workdir)
        };
        return (start, pairs(names));
    }
    if matches!(
        last.kind,
        Kind::Comment | Kind::Str | Kind::Char | Kind::Number
    ) {
        return (pos, Vec::new());
    }
    let (start, word) = match last.kind {
        Kind::Ident | Kind::Keyword => (last.start, last.text(before)),
        _ => (pos, ""),
    };
    let head: Vec<Token> = tokens
        .iter()
        .filter(|t| t.significant() && t.end <= start)
        .copied()
        .collect();
    let candidates = match head.last().map(|t| t.text(before)) {
        Some("::") if head.len() >= 2 => {
            let module = head[head.len() - 2].text(before);
            module_members(module, word, cx)
        }
        Some("." | "?.") => {
            let receiver_tokens = &head[..head.len() - 1];
            let receiver = infer_type(before, receiver_tokens, cx);
            let mut out = member_names(receiver.as_deref(), word, cx);
            if let [.., var] = receiver_tokens
                && var.kind == Kind::Ident
                && let Some(v) = cx.session.vars.iter().find(|v| v.name == var.text(before))
            {
                out.extend(v.keys.iter().filter(|k| k.starts_with(word)).cloned());
            }
            sorted(out)
        }
        _ => code_names(word, cx),
    };
    (start, pairs(candidates))
}

/// A config key being typed in a string: `cfg.get("…`, `cfg.set("…`, `cfg.explain("…`
/// or the override `cfg.override("…` (after `+`, `++` or `~`, before `=`), where `cfg`
/// holds a `Config`; or an override in `recipe("r.yaml", #{overrides: ["…` when a Config
/// of the session was loaded from `r.yaml`.
pub struct KeyInString<'a> {
    /// The Config's keys.
    pub keys: &'a [ConfigKey],
    /// Where the key text starts in the line.
    pub start: usize,
    /// The key text so far.
    pub prefix: &'a str,
}

impl<'a> KeyInString<'a> {
    /// Keys one level below the last `.` of the prefix that start with it, in file order.
    pub fn candidates(&self) -> Vec<&'a ConfigKey> {
        let level = self.prefix.rfind('.').map_or(0, |i| i + 1);
        self.keys
            .iter()
            .filter(|k| k.path.starts_with(self.prefix) && !k.path[level..].contains('.'))
            .collect()
    }

    /// The key the prefix names exactly.
    pub fn exact(&self) -> Option<&'a ConfigKey> {
        self.keys.iter().find(|k| k.path == self.prefix)
    }
}

/// The config key under the cursor, when `tokens` (of `before`) end inside a key string.
pub fn config_key_at<'a>(
    before: &'a str,
    tokens: &[Token],
    cx: &Lookup<'a>,
) -> Option<KeyInString<'a>> {
    let last = tokens.last()?;
    if last.kind != Kind::Str || last.closed || !last.text(before).starts_with(['"', '`']) {
        return None;
    }
    let sig: Vec<&Token> = tokens.iter().filter(|t| t.significant()).collect();
    let (keys, is_override) = match sig.as_slice() {
        [.., var, dot, method, open, _]
            if var.kind == Kind::Ident
                && matches!(dot.text(before), "." | "?.")
                && open.text(before) == "(" =>
        {
            let is_override = match method.text(before) {
                "get" | "set" | "explain" => false,
                "override" => true,
                _ => return override_in_recipe(before, &sig, cx),
            };
            let keys = cx
                .session
                .vars
                .iter()
                .find(|v| v.name == var.text(before))?
                .config_keys
                .as_deref()?;
            (keys, is_override)
        }
        _ => return override_in_recipe(before, &sig, cx),
    };
    key_in_string(before, last, keys, is_override)
}

/// The key text of the unclosed string `last`; an override's `+`, `++` or `~` is not
/// part of it, and after its `=` there is no key.
fn key_in_string<'a>(
    before: &'a str,
    last: &Token,
    keys: &'a [ConfigKey],
    is_override: bool,
) -> Option<KeyInString<'a>> {
    let mut start = last.start + 1;
    let mut prefix = &before[start..];
    if is_override {
        let key = prefix.trim_start_matches(['+', '~']);
        if key.contains('=') {
            return None;
        }
        start += prefix.len() - key.len();
        prefix = key;
    }
    Some(KeyInString {
        keys,
        start,
        prefix,
    })
}

/// An override in `recipe("r.yaml", #{overrides: ["…`: the keys of a Config in the
/// session loaded from the same recipe path (the recipe being typed is not loaded yet).
fn override_in_recipe<'a>(
    before: &'a str,
    sig: &[&Token],
    cx: &Lookup<'a>,
) -> Option<KeyInString<'a>> {
    let (last, head) = sig.split_last()?;
    // Back over the earlier items of the list: `"a=1", "b=2", `.
    let mut i = head.len();
    while i >= 2 && head[i - 1].text(before) == "," && head[i - 2].kind == Kind::Str {
        i -= 2;
    }
    let [.., key, colon, bracket] = &head[..i] else {
        return None;
    };
    if key.text(before).trim_matches(['"', '`']) != "overrides"
        || colon.text(before) != ":"
        || bracket.text(before) != "["
    {
        return None;
    }
    // The call the options map is an argument of: `recipe(` and its first argument.
    let open = innermost_open_paren(before, &head[..i])?;
    let (name, path) = (head.get(open.checked_sub(1)?)?, head.get(open + 1)?);
    if name.text(before) != "recipe" || path.kind != Kind::Str || !path.closed {
        return None;
    }
    let path = path.text(before);
    let path = &path[1..path.len() - 1];
    let keys = cx
        .session
        .vars
        .iter()
        .find(|v| v.config_recipe.as_deref() == Some(path))?
        .config_keys
        .as_deref()?;
    key_in_string(before, last, keys, true)
}

/// Index of the innermost `(` not closed within `tokens` (inside any unclosed `[`/`#{`).
fn innermost_open_paren(src: &str, tokens: &[&Token]) -> Option<usize> {
    let mut depth = 0i32;
    for (i, t) in tokens.iter().enumerate().rev() {
        match t.text(src) {
            ")" | "]" | "}" => depth += 1,
            "(" | "[" | "?[" | "{" | "#{" if depth > 0 => depth -= 1,
            "(" => return Some(i),
            _ => {}
        }
    }
    None
}

fn pairs(names: Vec<String>) -> Vec<Pair> {
    names
        .into_iter()
        .map(|n| Pair {
            display: n.clone(),
            replacement: n,
        })
        .collect()
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names.dedup();
    names
}

/// Names at the start of an expression: variables, functions (Rhai's standard library
/// only once a prefix is typed), modules, keywords.
fn code_names(word: &str, cx: &Lookup) -> Vec<String> {
    let mut out: Vec<String> = cx
        .session
        .vars
        .iter()
        .map(|v| v.name.clone())
        .filter(|n| n.starts_with(word))
        .collect();
    for cat in cx.catalogs() {
        out.extend(
            cat.functions()
                .filter(|e| {
                    e.name.starts_with(word) && (!word.is_empty() || e.origin != Origin::Std)
                })
                .map(|e| format!("{}(", e.name)),
        );
        out.extend(
            cat.modules
                .iter()
                .filter(|m| !m.global && m.name.starts_with(word))
                .map(|m| format!("{}::", m.name)),
        );
    }
    out.extend(
        KEYWORDS
            .iter()
            .filter(|k| k.starts_with(word))
            .map(|k| k.to_string()),
    );
    sorted(out)
}

fn module_members(module: &str, word: &str, cx: &Lookup) -> Vec<String> {
    sorted(
        cx.catalogs()
            .iter()
            .flat_map(|c| c.in_module(module))
            .filter(|e| e.name.starts_with(word))
            .map(|e| format!("{}(", e.name))
            .collect(),
    )
}

fn member_names(receiver: Option<&str>, word: &str, cx: &Lookup) -> Vec<String> {
    let typed = receiver.is_some();
    cx.builtins
        .members(receiver)
        // A value of a known type: its own methods, not the standard library's functions
        // of any value (`exit`, `take`, `tag`, …), which would bury them. On an unknown
        // value, nrl's methods plus the standard library's for a prefix.
        .filter(|e| {
            let fits = if typed {
                e.receiver.as_deref() != Some("any")
            } else {
                !word.is_empty() || e.origin == Origin::Nrl
            };
            e.name.starts_with(word) && fits
        })
        .map(|e| match e.kind {
            EntryKind::Property => e.name.clone(),
            _ => format!("{}(", e.name),
        })
        .collect()
}

/// The type of the expression ending at the last of `tokens`, where it can be told.
pub fn infer_type(src: &str, tokens: &[Token], cx: &Lookup) -> Option<String> {
    let last = tokens.last()?;
    let text = last.text(src);
    match last.kind {
        Kind::Str => return Some("string".into()),
        Kind::Char => return Some("char".into()),
        Kind::Number if text.contains('.') => return Some("float".into()),
        Kind::Number => return Some("int".into()),
        Kind::Keyword if matches!(text, "true" | "false") => return Some("bool".into()),
        _ => {}
    }
    let n = tokens.len();
    if last.kind == Kind::Ident {
        return match n.checked_sub(2).map(|i| tokens[i].text(src)) {
            // `x.prop`: the property's type.
            Some("." | "?.") => {
                let receiver = infer_type(src, &tokens[..n - 2], cx);
                unique_return(cx.members(receiver.as_deref(), text))
            }
            Some("::") => None,
            _ => cx
                .session
                .vars
                .iter()
                .find(|v| v.name == text)
                .map(|v| v.type_name.clone()),
        };
    }
    let open = matching_open(src, tokens)?;
    match text {
        ")" => {
            let name_at = open.checked_sub(1)?;
            let name_tok = tokens[name_at];
            if name_tok.kind != Kind::Ident {
                return None;
            }
            let name = name_tok.text(src);
            let before = name_at.checked_sub(1).map(|i| tokens[i].text(src));
            match before {
                Some("::") if name_at >= 2 => {
                    let module = tokens[name_at - 2].text(src);
                    unique_return(cx.functions(Some(module), name))
                }
                Some("." | "?.") => {
                    let receiver = infer_type(src, &tokens[..name_at - 1], cx);
                    unique_return(cx.members(receiver.as_deref(), name))
                }
                _ => unique_return(cx.functions(None, name)),
            }
        }
        "]" => {
            // An array literal, not an index (`a[0]`).
            let literal = open == 0
                || (matches!(tokens[open - 1].kind, Kind::Punct | Kind::Keyword)
                    && !matches!(tokens[open - 1].text(src), ")" | "]" | "}"));
            literal.then(|| "array".to_string())
        }
        "}" if tokens[open].text(src) == "#{" => Some("map".into()),
        _ => None,
    }
}

/// The return type all `entries` agree on (`any` and unknown do not count).
fn unique_return(entries: Vec<&Entry>) -> Option<String> {
    let mut types = entries.iter().map(|e| e.ret.as_str());
    let first = types.next()?;
    (!first.is_empty() && first != "any" && types.all(|t| t == first)).then(|| first.to_string())
}

/// Index of the bracket that opens the one closing `tokens`.
fn matching_open(src: &str, tokens: &[Token]) -> Option<usize> {
    let mut depth = 0i32;
    for (i, t) in tokens.iter().enumerate().rev() {
        match t.text(src) {
            ")" | "]" | "}" => depth += 1,
            "(" | "[" | "?[" | "{" | "#{" => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Entries of the directory part of `prefix` whose names start with its last part;
/// directories end in `/`.
pub fn file_paths(prefix: &str, workdir: &Path) -> Vec<String> {
    let (dir, stem) = match prefix.rfind('/') {
        Some(i) => (&prefix[..=i], &prefix[i + 1..]),
        None => ("", prefix),
    };
    let base = if Path::new(dir).is_absolute() {
        PathBuf::from(dir)
    } else {
        workdir.join(dir)
    };
    let Ok(entries) = std::fs::read_dir(&base) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().into_string().ok()?;
            if !name.starts_with(stem) || (name.starts_with('.') && !stem.starts_with('.')) {
                return None;
            }
            let slash = if e.path().is_dir() { "/" } else { "" };
            Some(format!("{dir}{name}{slash}"))
        })
        .collect();
    out.sort();
    out
}

/// `import "…"`: the bundled `nrl/…` modules, then `.rhai` files (without the
/// extension; not `*_test.rhai`) and directories under the working directory and
/// `NRL_PATH`.
fn module_paths(prefix: &str, cx: &Lookup) -> Vec<String> {
    let mut out: Vec<String> = STDLIB
        .iter()
        .map(|(name, _)| format!("{STDLIB_PREFIX}{name}"))
        .filter(|n| n.starts_with(prefix))
        .collect();
    let roots = std::iter::once(cx.workdir.to_path_buf()).chain(cx.search_path.iter().cloned());
    for root in roots {
        for p in file_paths(prefix, &root) {
            if p.ends_with('/') {
                out.push(p);
            } else if let Some(stem) = p.strip_suffix(".rhai")
                // Tests (`nrl script test`) are run, not imported.
                && !p.ends_with(crate::script::test_runner::TEST_FILE_SUFFIX)
            {
                out.push(stem.to_string());
            }
        }
    }
    sorted(out)
}

/// `:co` → `:command`; arguments of `:doc`/`:help` (names), `:load` (paths), `:plan`.
fn complete_meta(before: &str, cx: &Lookup) -> (usize, Vec<Pair>) {
    let body_start = before.len() - before.trim_start().len();
    let body = &before[body_start..];
    let Some((command, arg)) = body.split_once(char::is_whitespace) else {
        let names = meta::COMMANDS
            .iter()
            .map(|c| format!(":{}", c.name))
            .filter(|n| n.starts_with(body))
            .collect();
        return (body_start, pairs(names));
    };
    let arg = arg.trim_start();
    let arg_start = before.len() - arg.len();
    let names = match command {
        ":doc" | ":help" => {
            let mut out: Vec<String> = Vec::new();
            for cat in cx.catalogs() {
                out.extend(cat.modules.iter().map(|m| m.name.clone()));
                out.extend(cat.entries.iter().map(Entry::qualified));
            }
            if command == ":help" {
                out.extend(meta::COMMANDS.iter().map(|c| format!(":{}", c.name)));
            }
            out.retain(|n| n.starts_with(arg));
            sorted(out)
        }
        ":load" => file_paths(arg, cx.workdir),
        ":plan" => ["on", "off"]
            .iter()
            .filter(|w| w.starts_with(arg))
            .map(|w| w.to_string())
            .collect(),
        _ => Vec::new(),
    };
    (arg_start, pairs(names))
}

#[cfg(test)]
#[path = "complete_tests.rs"]
mod tests;
