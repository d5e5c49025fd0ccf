//! Run ids: `<prefix>-<UTC yyyymmdd-hhmmss>-<4 random [a-z0-9]>`.
//!
//! Ids name Ray submissions, run records, run directories and (later) Kubernetes objects
//! and labels, so every id is a DNS-1123 label that starts with a letter and is at most
//! [`MAX_RUN_ID_LEN`] characters, which leaves room for suffixes under the 47-character
//! RayJob name limit. Generated ids of the same recipe sort by creation time.

use std::fmt;
use std::ops::Deref;
use std::path::Path;

use crate::diag::{Diag, Result};

/// A run id of `nrl run` (every executor) and `launch::rayjob`: only [`RunId::parse`]
/// (which validates) and [`RunId::generate`] make one, so a value of this type is
/// always usable as a DNS label, a Ray submission id and a file name. Gym runs follow
/// the same rule (`gym::names::parse_run_id`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(String);

impl RunId {
    /// An id given by the user (`--run-id`, a script's `run_id`), checked.
    pub fn parse(id: &str) -> Result<RunId> {
        validate(id)?;
        Ok(RunId(id.to_string()))
    }

    /// A fresh id for a run of `recipe`, stamped with the current UTC time.
    pub fn generate(recipe: &Path) -> RunId {
        RunId(generate(recipe))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for RunId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for RunId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&RunId> for String {
    fn from(id: &RunId) -> String {
        id.0.clone()
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> String {
        id.0
    }
}

/// The longest run id accepted or generated.
pub const MAX_RUN_ID_LEN: usize = 40;

/// Error code for a run id that cannot be used.
pub const CODE_RUN_ID: &str = "nrl::run::run_id";

/// `-yyyymmdd-hhmmss-xxxx`
const SUFFIX_LEN: usize = 1 + 8 + 1 + 6 + 1 + 4;
const MAX_PREFIX_LEN: usize = MAX_RUN_ID_LEN - SUFFIX_LEN;
const RANDOM_CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A fresh id for a run of `recipe`, stamped with the current UTC time.
pub fn generate(recipe: &Path) -> String {
    generate_at(recipe, jiff::Timestamp::now(), &mut fastrand::Rng::new())
}

/// [`generate`] with the clock and randomness supplied (reproducible in tests).
pub fn generate_at(recipe: &Path, now: jiff::Timestamp, rng: &mut fastrand::Rng) -> String {
    let stamp = now.strftime("%Y%m%d-%H%M%S");
    let random: String = (0..4)
        .map(|_| char::from(RANDOM_CHARS[rng.usize(..RANDOM_CHARS.len())]))
        .collect();
    format!("{}-{stamp}-{random}", prefix_for(recipe))
}

/// The id prefix for `recipe`: its file stem in lower case, runs of other characters
/// turned into one `-`, at most 19 characters, starting with a letter (`run` when the
/// stem has nothing usable).
pub fn prefix_for(recipe: &Path) -> String {
    let stem = recipe
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut out = String::new();
    for c in stem.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    if !out.starts_with(|c: char| c.is_ascii_lowercase()) {
        out = if out.is_empty() {
            "run".to_string()
        } else {
            format!("run-{out}")
        };
    }
    out.truncate(MAX_PREFIX_LEN);
    out.trim_end_matches('-').to_string()
}

/// Check an id given with `--run-id` ([`RunId::parse`] is the way to keep it).
pub fn validate(id: &str) -> Result<()> {
    let problem = if id.is_empty() {
        Some("is empty".to_string())
    } else if id.len() > MAX_RUN_ID_LEN {
        Some(format!(
            "is {} characters long (at most {MAX_RUN_ID_LEN})",
            id.len()
        ))
    } else if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
    {
        Some(format!("contains `{c}`"))
    } else if !id.starts_with(|c: char| c.is_ascii_lowercase()) {
        Some("does not start with a letter".to_string())
    } else if id.ends_with('-') {
        Some("ends with `-`".to_string())
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(why) => Err(
            Diag::new(CODE_RUN_ID, format!("run id `{id}` {why}")).help(format!(
                "run ids name Kubernetes objects and Ray jobs: lower-case letters, digits and `-`, \
             starting with a letter, not ending with `-`, at most {MAX_RUN_ID_LEN} characters \
             (e.g. `grpo-sweep-3`)"
            )),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> jiff::Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn generated_ids_have_the_documented_shape() {
        let mut rng = fastrand::Rng::with_seed(1);
        let id = generate_at(
            Path::new("configs/grpo_math_1B.yaml"),
            at("2026-03-04T05:06:07Z"),
            &mut rng,
        );
        let re = regex::Regex::new(r"^grpo-math-1b-20260304-050607-[a-z0-9]{4}$").unwrap();
        assert!(re.is_match(&id), "{id}");
        validate(&id).unwrap();
    }

    #[test]
    fn ids_sort_by_time() {
        let mut rng = fastrand::Rng::with_seed(2);
        let recipe = Path::new("r.yaml");
        let a = generate_at(recipe, at("2026-03-04T23:59:59Z"), &mut rng);
        let b = generate_at(recipe, at("2026-03-05T00:00:00Z"), &mut rng);
        let c = generate_at(recipe, at("2026-12-01T00:00:00Z"), &mut rng);
        assert!(a < b && b < c, "{a} {b} {c}");
    }

    #[test]
    fn prefixes_are_sanitised_and_bounded() {
        assert_eq!(prefix_for(Path::new("recipe.yaml")), "recipe");
        assert_eq!(
            prefix_for(Path::new("a/My__Recipe.v2.yaml")),
            "my-recipe-v2"
        );
        assert_eq!(prefix_for(Path::new("--x--.yaml")), "x");
        assert_eq!(prefix_for(Path::new("7b.yaml")), "run-7b");
        assert_eq!(prefix_for(Path::new("ünïcode.yaml")), "n-code");
        assert_eq!(prefix_for(Path::new(".yaml")), "yaml");
        assert_eq!(prefix_for(Path::new("___.yaml")), "run");
        let long = prefix_for(Path::new(
            "grpo-qwen3-30ba3b-4n4g-async-1off-with-a-long-tail.yaml",
        ));
        assert_eq!(long, "grpo-qwen3-30ba3b-4");
        // Truncation never leaves a trailing `-`.
        assert_eq!(
            prefix_for(Path::new("abcdefghijklmnopqr-stu.yaml")),
            "abcdefghijklmnopqr"
        );
        for stem in ["", "a", "x".repeat(80).as_str(), "Z-9_.", "0"] {
            let id = generate_at(
                Path::new(&format!("{stem}.yaml")),
                at("2026-01-01T00:00:00Z"),
                &mut fastrand::Rng::with_seed(3),
            );
            assert!(id.len() <= MAX_RUN_ID_LEN, "{id}");
            validate(&id).unwrap();
        }
    }

    #[test]
    fn user_ids_are_validated() {
        for ok in ["a", "run-1", "grpo-sweep-3", &"a".repeat(40)] {
            validate(ok).unwrap();
        }
        for (bad, why) in [
            ("", "is empty"),
            ("Run-1", "contains `R`"),
            ("run_1", "contains `_`"),
            ("run.1", "contains `.`"),
            ("a/b", "contains `/`"),
            ("1run", "does not start with a letter"),
            ("-run", "does not start with a letter"),
            ("run-", "ends with `-`"),
            (&"a".repeat(41), "41 characters"),
        ] {
            let err = validate(bad).unwrap_err();
            assert_eq!(err.code, CODE_RUN_ID);
            assert!(err.message.contains(why), "{bad}: {}", err.message);
        }
    }

    /// The one rule everywhere: what the render used to accept on its own (`_`, `.`, 63
    /// characters) is no run id, and every generated id is one.
    #[test]
    fn run_ids_are_made_only_by_parse_and_generate() {
        for looser in ["my_run", "run.1", &"a".repeat(63)] {
            assert_eq!(RunId::parse(looser).unwrap_err().code, CODE_RUN_ID);
        }
        let id = RunId::parse("grpo-sweep-3").unwrap();
        assert_eq!(
            (id.as_str(), id.to_string()),
            ("grpo-sweep-3", "grpo-sweep-3".into())
        );
        let fresh = RunId::generate(Path::new("configs/GRPO_Qwen3.yaml"));
        assert_eq!(RunId::parse(&fresh).unwrap(), fresh);
        assert!(fresh.starts_with("grpo-qwen3-"), "{fresh}");
    }
}
