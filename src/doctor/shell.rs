//! Shell parameter expansions that OmegaConf would take for interpolations.
//!
//! In the infra file nrl resolves every `${…}` while loading, so `${LOG_DIR}` or
//! `${VAR:-x}` in an entrypoint or env value already fails `nrl check` with an
//! interpolation error whose help names the `\${…}` escape. The recipe is different: nrl
//! stages it unresolved and NeMo-RL resolves it in the pod, after the cluster came up, where
//! `${LOG_DIR}` is a missing key and `${VAR:-x}` an unknown resolver. This rule catches
//! those in the recipe (its files and its command-line overrides) before launch.

use super::rules::SHELL_EXPANSION;
use super::text::{narrow, occurrence};
use super::{Ctx, Finding};
use crate::config::node::Value;

pub(crate) fn check(ctx: &Ctx, out: &mut Vec<Finding>) {
    let recipe = &ctx.cfg.recipe;
    recipe.walk(&mut Vec::new(), &mut |path, node| {
        let Value::Str(s) = &node.value else { return };
        for (start, end) in expansions(s) {
            let raw = &s[start..end];
            let name = shell_name(&raw[2..]);
            // `${TOP}` naming a real top-level key is an interpolation, not a shell variable.
            if recipe.get(name).is_some() {
                continue;
            }
            let nth = occurrence(s, raw, start);
            let key = path.join(".");
            out.push(
                Finding::new(
                    SHELL_EXPANSION,
                    format!(
                        "`{raw}` in recipe key `{key}` reads like a shell expansion, but NeMo-RL resolves the recipe with OmegaConf in the pod, where it fails ({})",
                        if raw == format!("${{{name}}}") {
                            format!("no key `{name}`")
                        } else {
                            format!("no resolver `{name}`")
                        }
                    ),
                )
                .at(narrow(node.best_span(), raw, nth), "OmegaConf interpolation")
                .fix(fix(raw, name)),
            );
        }
    });
}

/// Read the pod's environment with `oc.env` (keeping a `:-` default), or escape.
fn fix(raw: &str, name: &str) -> String {
    let body = &raw[2..raw.len() - 1];
    let env = match body[name.len()..].strip_prefix(":-") {
        Some(default) => format!("${{oc.env:{name},{default}}}"),
        None => format!("${{oc.env:{name}}}"),
    };
    format!(
        "write `{env}` to read the variable from the pod's environment, or escape it as `\\{raw}` if the text itself is wanted"
    )
}

/// Byte ranges of unescaped `${…}` whose contents look like a shell expansion: an
/// upper-case name (`${LOG_DIR}`) or a name followed by a shell operator (`${tmp:-x}`).
pub(crate) fn expansions(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut backslashes = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => backslashes += 1,
            b'$' if b.get(i + 1) == Some(&b'{') && backslashes.is_multiple_of(2) => {
                if let Some(end) = closing(b, i + 2) {
                    if looks_like_shell(&s[i + 2..end]) {
                        out.push((i, end + 1));
                    }
                    i = end + 1;
                    backslashes = 0;
                    continue;
                }
                backslashes = 0;
            }
            _ => backslashes = 0,
        }
        i += 1;
    }
    out
}

/// Index of the `}` closing an interpolation whose body starts at `from` (nesting counted).
fn closing(b: &[u8], from: usize) -> Option<usize> {
    let mut depth = 1;
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn shell_name(body: &str) -> &str {
    let end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(body.len());
    &body[..end]
}

fn looks_like_shell(body: &str) -> bool {
    let name = shell_name(body);
    let rest = &body[name.len()..];
    let valid = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !valid {
        return false;
    }
    let upper = name.chars().any(|c| c.is_ascii_uppercase())
        && !name.chars().any(|c| c.is_ascii_lowercase());
    let operator = [":-", ":=", ":+", ":?"]
        .iter()
        .any(|op| rest.starts_with(op));
    (upper && rest.is_empty()) || operator
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(s: &str) -> Vec<&str> {
        expansions(s).into_iter().map(|(a, b)| &s[a..b]).collect()
    }

    #[test]
    fn shell_like_only_and_escapes_respected() {
        assert_eq!(found("${LOG_DIR}/x"), ["${LOG_DIR}"]);
        assert!(fix("${TB:-/tmp/tb}", "TB").contains("`${oc.env:TB,/tmp/tb}`"));
        assert!(fix("${LOG_DIR}", "LOG_DIR").contains("`\\${LOG_DIR}`"));
        assert_eq!(found("${tmp:-/tmp}"), ["${tmp:-/tmp}"]);
        assert_eq!(found("${HOME:=x} and ${A}"), ["${HOME:=x}", "${A}"]);
        assert!(found("\\${LOG_DIR}").is_empty());
        assert_eq!(found("\\\\${LOG_DIR}"), ["${LOG_DIR}"]);
        for ok in [
            "${policy.model_name}",
            "${oc.env:HOME}",
            "${user:}",
            "${mul:${a},2}",
            "${.sibling}",
            "$LOG_DIR",
            "${policy.megatron_cfg.TP}",
        ] {
            assert!(found(ok).is_empty(), "{ok}");
        }
    }
}
