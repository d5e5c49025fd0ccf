//! `env` values (ref-nemo-gym-k8s §1.8): every value carries a prefix.
//!
//! - `lit:VALUE`: the literal text.
//! - `host:VAR`: `VAR` read from the submitting machine (an unset `VAR` is an error).
//! - `secret:VAR`: like `host:`, always treated as a secret (nrl's addition).
//! - `runtime:VAR`: refused on Kubernetes (there is no shell to resolve it against).
//!
//! A `host:` value is a secret when its variable name or the env key ends in `_KEY`,
//! `_TOKEN`, `_SECRET` or `PASSWORD`; secrets reach the pod through the run's Secret,
//! never through the Job spec (ref §7 #1).

use std::collections::BTreeSet;

use crate::config::env::Env;
use crate::config::interp::{EnvGuard, EnvRefusal};
use crate::config::node::{KeyKind, Node, Value};
use crate::config::typed::check::{Cx, Path, RULE, TYPE, wrong_type};
use crate::diag::Diag;

use super::model::{EnvMap, EnvOrigin, EnvValue, placeholder};
use crate::config::source::Span;

const PREFIXES: &str = "'lit:', 'host:', 'secret:' or 'runtime:'";

/// Whether a variable name looks like it holds a credential.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["_KEY", "_TOKEN", "_SECRET", "PASSWORD"]
        .iter()
        .any(|s| upper.ends_with(s))
}

/// `^[A-Za-z_][A-Za-z0-9_]*$`
pub fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What Kubernetes accepts as a container env name: `[-._a-zA-Z][-._a-zA-Z0-9]*`.
fn is_k8s_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || "-._".contains(c))
        && chars.all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
}

/// Code of a `${oc.env:…}` that would write a secret into the Job spec.
pub const CODE_SECRET_INTERPOLATION: &str = "nrl::gym::secret_interpolation";

/// Refuses `${oc.env:VAR}` of a secret anywhere in a Gym config. Interpolations resolve on
/// the submitting machine and every resolved value lands in clear in the Job (a `run:` or
/// `prepare:` value on the driver's command line, a `command:` in its script, a `lit:` env
/// value in the spec) and in the resolved config written to the PVC. A secret is a
/// variable whose name looks like one ([`is_secret_name`]) or one the config delivers as
/// a secret (`secret:VAR`, or `host:VAR` under a secret-looking key).
pub(super) struct SecretEnvGuard {
    declared: BTreeSet<String>,
}

impl SecretEnvGuard {
    /// The guard for `tree` (unresolved): its declared secrets are collected first.
    pub fn for_tree(tree: &Node) -> SecretEnvGuard {
        let mut declared = BTreeSet::new();
        tree.walk(&mut Vec::new(), &mut |path, node| {
            let Some(raw) = node.as_str() else { return };
            let key = path.last().map(String::as_str).unwrap_or("");
            match raw.split_once(':') {
                Some(("secret", var)) => {
                    declared.insert(var.to_string());
                }
                Some(("host", var)) if is_secret_name(key) => {
                    declared.insert(var.to_string());
                }
                _ => {}
            }
        });
        SecretEnvGuard { declared }
    }
}

impl EnvGuard for SecretEnvGuard {
    fn refuse(&self, var: &str) -> Option<EnvRefusal> {
        let why = if self.declared.contains(var) {
            "the config delivers it as a secret"
        } else if is_secret_name(var) {
            "its name marks it as a secret"
        } else {
            return None;
        };
        Some(EnvRefusal {
            code: CODE_SECRET_INTERPOLATION,
            message: format!(
                "`${{oc.env:{var}}}` would write the value of {var} in clear into the Job spec and the resolved config on the PVC ({why})"
            ),
            help: format!(
                "deliver it through the run's Secret: set `{var}: secret:{var}` under `driver.env` (or the service's `env`) and let the program read ${var} from its environment; a `command:` script can use \"${var}\""
            ),
        })
    }
}

/// Read an `env` mapping, resolving `host:` values through `env`.
pub(super) fn env_map(env: &dyn Env) -> impl Fn(&mut Cx, &Node, &Path) -> Option<EnvMap> + '_ {
    move |cx, node, path| {
        let Value::Map(m) = &node.value else {
            cx.report(wrong_type(
                node,
                path,
                "a mapping of names to prefixed values",
                "write `NAME: lit:value` or `NAME: host:VAR` lines".into(),
            ));
            return None;
        };
        let mut out = EnvMap::new();
        let mut ok = true;
        for (key, v) in m {
            let here = path.key(key);
            if v.key_kind != KeyKind::Str || !is_k8s_env_name(key) {
                cx.report(
                    Diag::new(
                        RULE,
                        format!("`{here}`: `{key}` is not a valid environment variable name"),
                    )
                    .label(v.key_span.or(v.span), "not a variable name")
                    .help(
                        "use letters, digits and `_` (not starting with a digit), e.g. `HF_TOKEN`",
                    ),
                );
                ok = false;
                continue;
            }
            match value(cx, env, key, v, &here) {
                Some(ev) => {
                    out.insert(key.clone(), ev);
                }
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

fn value(cx: &mut Cx, env: &dyn Env, key: &str, node: &Node, path: &Path) -> Option<EnvValue> {
    let Value::Str(raw) = &node.value else {
        let help = format!(
            "env values are prefixed strings; quote it: `{key}: \"lit:{}\"`",
            node
        );
        cx.report(wrong_type(node, path, "a prefixed string", help));
        return None;
    };
    let ev = |value: String, origin: EnvOrigin| EnvValue {
        value,
        origin,
        written: raw.clone(),
        span: node.best_span(),
        unset_at: None,
    };
    if let Some(lit) = raw.strip_prefix("lit:") {
        return Some(ev(lit.to_string(), EnvOrigin::Literal));
    }
    let (prefix, var) = match raw.split_once(':') {
        Some((p @ ("host" | "secret" | "runtime"), var)) => (p, var),
        _ => {
            cx.report(
                Diag::new(
                    TYPE,
                    format!("`{path}`: `{raw}` must start with one of the prefixes {PREFIXES}"),
                )
                .label(node.best_span(), "no prefix")
                .help(format!(
                    "write `{key}: lit:{raw}` for this exact text, or `{key}: host:VAR` to copy VAR from your shell (a bare value is not an implicit `lit:`)"
                )),
            );
            return None;
        }
    };
    if !is_var_name(var) {
        cx.report(
            Diag::new(
                RULE,
                format!(
                    "`{path}`: `{var}` is not a valid environment variable name for {prefix}:{var}"
                ),
            )
            .label(node.best_span(), "not a variable name")
            .help("names match [A-Za-z_][A-Za-z0-9_]*"),
        );
        return None;
    }
    if prefix == "runtime" {
        cx.report(
            Diag::new(
                RULE,
                format!("`{path}`: `runtime:{var}` is not supported on Kubernetes (no shell to resolve it against)"),
            )
            .label(node.best_span(), "runtime: value")
            .help(format!(
                "use `lit:` for a fixed value, or `host:{var}` to copy it from the submitting shell"
            )),
        );
        return None;
    }
    let secret = prefix == "secret" || is_secret_name(var) || is_secret_name(key);
    let origin = EnvOrigin::Host {
        var: var.to_string(),
        secret,
    };
    match env.var(var) {
        Some(value) => Some(ev(value, origin)),
        // A secret only reaches the run's Secret, so an offline render can show a
        // placeholder there; a submit refuses it (`require_secret_values`).
        None if secret => Some(EnvValue {
            unset_at: Some(path.to_string()),
            ..ev(placeholder(var), origin)
        }),
        // Any other value is written into the Job spec: it must be real.
        None => {
            cx.report(unset_error(&path.to_string(), raw, var, node.best_span()));
            None
        }
    }
}

/// `path` asks for `written` (`host:VAR`), but `VAR` is not set here.
pub(super) fn unset_error(path: &str, written: &str, var: &str, span: Option<Span>) -> Diag {
    Diag::new(
        "nrl::gym::host_env_unset",
        format!("`{path}` references {written}, but `{var}` is not set in the submitting shell's environment"),
    )
    .label(span, format!("`{var}` is unset"))
    .help(format!("export {var}=... before running nrl, or use `lit:` for a fixed value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in [
            "HF_TOKEN",
            "OPENAI_API_KEY",
            "AWS_SECRET",
            "DB_PASSWORD",
            "PASSWORD",
            "hf_token",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in ["HF_HOME", "TOKENIZERS_PARALLELISM", "KEYRING", "USER"] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn variable_names() {
        assert!(is_var_name("HF_TOKEN"));
        assert!(is_var_name("_x1"));
        assert!(!is_var_name("1X"));
        assert!(!is_var_name("A-B"));
        assert!(!is_var_name(""));
        assert!(is_k8s_env_name("my.var-1"));
        assert!(!is_k8s_env_name("9lives"));
    }
}
