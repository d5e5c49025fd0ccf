//! clap value parsers shared by the commands: durations, seconds, `KEY=VALUE` pairs.
//! They live apart from any one command so commands depend on them, not on each other.

use std::time::Duration;

use crate::ray::submit::parse_env_pair;

/// `30`, `30s`, `500ms`, `2m`, `1h30m`.
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    let text = text.trim();
    if let Ok(secs) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).map_err(|e| e.to_string());
    }
    let signed: jiff::SignedDuration = text
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (examples: 30s, 500ms, 2m, 1h30m)"))?;
    Duration::try_from(signed).map_err(|_| format!("`{text}` is negative"))
}

/// A span of time back from now: a duration, where `d` (days of 24 hours) is allowed too
/// (`2d`, `1d12h`).
pub fn parse_age(text: &str) -> std::result::Result<Duration, String> {
    let t = text.trim();
    if let Some((days, rest)) = t.split_once('d')
        && let Ok(days) = days.trim().parse::<u64>()
    {
        let rest = if rest.trim().is_empty() {
            Duration::ZERO
        } else {
            parse_duration(rest)?
        };
        return Ok(Duration::from_secs(days.saturating_mul(86_400)) + rest);
    }
    parse_duration(t).map_err(|_| format!("`{text}` is not a duration (examples: 90m, 6h, 2d)"))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-5s").is_err());
    }

    #[test]
    fn ages_allow_days() {
        assert_eq!(parse_age("2d"), Ok(Duration::from_secs(2 * 86_400)));
        assert_eq!(
            parse_age("1d12h"),
            Ok(Duration::from_secs(86_400 + 12 * 3600))
        );
        assert_eq!(parse_age("90m"), Ok(Duration::from_secs(5400)));
        assert!(parse_age("1.5d").is_err());
        assert!(parse_age("yesterday").is_err());
    }
}
