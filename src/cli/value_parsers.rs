//! clap value parsers shared by the commands: durations, seconds, `KEY=VALUE` pairs.
//! They live apart from any one command so commands depend on them, not on each other.

use crate::ray::submit::parse_env_pair;

pub use crate::durations::{parse_age, parse_duration};

pub fn parse_env_arg(text: &str) -> std::result::Result<(String, String), String> {
    parse_env_pair(text).map_err(|d| d.message.clone())
}

pub fn parse_metadata_arg(text: &str) -> std::result::Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

pub fn parse_resources_arg(
    text: &str,
) -> std::result::Result<std::collections::BTreeMap<String, f64>, String> {
    serde_json::from_str(text)
        .map_err(|e| format!("expected a JSON object of numbers like '{{\"accel\": 1}}': {e}"))
}

/// `--max-seconds`: a positive number of seconds (fractions allowed).
pub fn parse_seconds(s: &str) -> std::result::Result<std::time::Duration, String> {
    match s.parse::<f64>() {
        Ok(n) if n > 0.0 && n.is_finite() => Ok(std::time::Duration::from_secs_f64(n)),
        _ => Err(format!(
            "`{s}` is not a positive number of seconds (e.g. 600)"
        )),
    }
}

/// Where `check -o` writes: a file, or stdout (`-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputTarget {
    Stdout,
    File(std::path::PathBuf),
}

/// kubectl's `-o` words: taken as file names they would write a file called `json`.
const FORMAT_WORDS: &[&str] = &["json", "yaml", "yml", "table", "wide", "name"];

/// `check -o FILE` (nrl-k8s's flag): a path, `-` for stdout; a bare format word is
/// refused with the spelling that does what it likely meant.
pub fn parse_output_target(text: &str) -> std::result::Result<OutputTarget, String> {
    if text == "-" {
        return Ok(OutputTarget::Stdout);
    }
    if FORMAT_WORDS.contains(&text) {
        let format = if text == "json" { "json" } else { "yaml" };
        return Err(format!(
            "`{text}` would be the name of the file to write, not a format; \
             for stdout use `-o - --format {format}`, for a file `-o bundle.{format}` \
             (or `-o ./{text}` if you mean a file of that name)"
        ));
    }
    Ok(OutputTarget::File(std::path::PathBuf::from(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_targets_are_files_stdout_or_refused_format_words() {
        assert_eq!(parse_output_target("-"), Ok(OutputTarget::Stdout));
        assert_eq!(
            parse_output_target("out/b.json"),
            Ok(OutputTarget::File("out/b.json".into()))
        );
        assert_eq!(
            parse_output_target("./json"),
            Ok(OutputTarget::File("./json".into()))
        );
        let e = parse_output_target("json").unwrap_err();
        assert!(e.contains("`-o - --format json`"), "{e}");
        assert!(
            parse_output_target("yaml")
                .unwrap_err()
                .contains("--format yaml")
        );
    }
}
