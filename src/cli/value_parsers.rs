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
