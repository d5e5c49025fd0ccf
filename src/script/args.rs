//! The `args` map a script sees: `nrl script f.rhai -- --recipe r.yaml --infra i.yaml
//! a=1 +b.c=2 extra` gives
//!
//! ```text
//! #{ recipe: "r.yaml", infra: "i.yaml",
//!    overrides: ["a=1", "+b.c=2"], positional: ["extra"], raw: [every word] }
//! ```
//!
//! * `--name value` and `--name=value` set `name` (dashes become underscores:
//!   `--run-id x` is `args.run_id`); a `--name` followed by another `--option` or by
//!   nothing is the flag `true`. Repeating an option collects its values in an array.
//! * Words that look like Hydra overrides (`key=value`, `+key=…`, `++key=…`, `~key`) go
//!   to `overrides`, in order; other words to `positional`. After a bare `--` every word
//!   is positional.
//! * `overrides`, `positional` and `raw` are always there; options only when given, so
//!   scripts read optional ones with `args.get("name") ?? default`.
//!
//! A script that declares its arguments (`let args = cli(#{…})`, [`super::declared`])
//! gets them checked and typed instead.

use rhai::{Array, Dynamic, Map};

use crate::diag::{Diag, Result};

const RESERVED: [&str; 3] = ["overrides", "positional", "raw"];

/// Build the `args` map from the words after `nrl script FILE --`.
pub fn script_args(words: &[String]) -> Result<Map> {
    let mut map = Map::new();
    let mut overrides = Array::new();
    let mut positional = Array::new();
    let mut only_positional = false;
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        i += 1;
        if only_positional {
            positional.push(word.clone().into());
            continue;
        }
        if word == "--" {
            only_positional = true;
            continue;
        }
        if let Some(opt) = word.strip_prefix("--") {
            let (name, value) = match opt.split_once('=') {
                Some((n, v)) => (n, Dynamic::from(v.to_string())),
                None => match words.get(i) {
                    Some(next) if !next.starts_with("--") => {
                        i += 1;
                        (opt, Dynamic::from(next.clone()))
                    }
                    _ => (opt, Dynamic::TRUE),
                },
            };
            let key = option_key(name)?;
            match map.get_mut(key.as_str()) {
                Some(existing) if existing.is_array() => {
                    if let Some(mut arr) = existing.write_lock::<Array>() {
                        arr.push(value);
                    }
                }
                Some(existing) => {
                    let first = std::mem::take(existing);
                    *existing = Dynamic::from_array(vec![first, value]);
                }
                None => {
                    map.insert(key.as_str().into(), value);
                }
            }
            continue;
        }
        if is_override(word) {
            overrides.push(word.clone().into());
        } else {
            positional.push(word.clone().into());
        }
    }
    map.insert("overrides".into(), Dynamic::from_array(overrides));
    map.insert("positional".into(), Dynamic::from_array(positional));
    map.insert(
        "raw".into(),
        Dynamic::from_array(words.iter().map(|w| w.clone().into()).collect()),
    );
    Ok(map)
}

fn option_key(name: &str) -> Result<String> {
    let key = name.replace('-', "_");
    let valid = key
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(Diag::new(
            "nrl::script::args",
            format!("`--{name}` is not a valid script option name"),
        )
        .help("option names use letters, digits, `-` and `_` (e.g. `--run-id x`)"));
    }
    if RESERVED.contains(&key.as_str()) {
        return Err(Diag::new(
            "nrl::script::args",
            format!("`--{name}` clashes with `args.{key}`, which nrl fills in"),
        )
        .help(
            "rename the option; `args.overrides`, `args.positional` and `args.raw` are reserved",
        ));
    }
    Ok(key)
}

/// `key=value`, `+key=value`, `++key=value`, `~key`, `~key=value` (Hydra overrides).
pub(crate) fn is_override(word: &str) -> bool {
    let body = word.trim_start_matches('+');
    if let Some(del) = word.strip_prefix('~') {
        return del.chars().next().is_some_and(key_start);
    }
    match body.split_once('=') {
        Some((key, _)) => {
            key.chars().next().is_some_and(key_start)
                && !key.contains(char::is_whitespace)
                && !key.is_empty()
        }
        None => false,
    }
}

fn key_start(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn strs(d: &Dynamic) -> Vec<String> {
        d.clone()
            .cast::<Array>()
            .iter()
            .map(|x| x.to_string())
            .collect()
    }

    #[test]
    fn options_overrides_and_positionals() {
        let m = script_args(&words(
            "--recipe r.yaml --infra=i.yaml a=1 +b.c=2 ~d extra --run-id x7 --verbose",
        ))
        .unwrap();
        assert_eq!(m["recipe"].to_string(), "r.yaml");
        assert_eq!(m["infra"].to_string(), "i.yaml");
        assert_eq!(m["run_id"].to_string(), "x7");
        assert!(m["verbose"].as_bool().unwrap());
        assert_eq!(strs(&m["overrides"]), ["a=1", "+b.c=2", "~d"]);
        assert_eq!(strs(&m["positional"]), ["extra"]);
        assert_eq!(strs(&m["raw"]).len(), 10);
    }

    #[test]
    fn repeated_options_collect_and_double_dash_ends_options() {
        let m = script_args(&words("--tag a --tag b -- --not-an-option k=v")).unwrap();
        assert_eq!(strs(&m["tag"]), ["a", "b"]);
        assert_eq!(strs(&m["positional"]), ["--not-an-option", "k=v"]);
        assert!(strs(&m["overrides"]).is_empty());
    }

    #[test]
    fn reserved_and_invalid_names_are_refused() {
        assert!(script_args(&words("--overrides x")).is_err());
        assert!(script_args(&words("--9lives x")).is_err());
    }

    #[test]
    fn sweeps_and_values_with_equals_are_overrides() {
        let m = script_args(&words("lr=1e-4,3e-4 name=a=b ./path")).unwrap();
        assert_eq!(strs(&m["overrides"]), ["lr=1e-4,3e-4", "name=a=b"]);
        assert_eq!(strs(&m["positional"]), ["./path"]);
    }
}
