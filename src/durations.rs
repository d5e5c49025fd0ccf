//! Durations as people write them on a command line or in a script option: `30s`,
//! `500ms`, `1h30m`, and for ages back from now also days (`2d`). Shared by the clap
//! value parsers and the Rhai built-ins.

use std::time::Duration;

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
