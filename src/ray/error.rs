//! Turning Ray dashboard failures into diagnostics.
//!
//! Ray's job API answers errors with `text/plain` bodies: a sentence ("Job x does not
//! exist") or a whole Python traceback whose last line carries the meaning
//! ("ValueError: Job with submission_id x already exists. …"). Users want that last line,
//! not forty lines of aiohttp frames.

use std::time::Duration;

use crate::diag::Diag;

/// Ray answered, but not with success.
pub const CODE_API: &str = "nrl::ray::api";
/// No connection, or no answer within the timeout.
pub const CODE_UNREACHABLE: &str = "nrl::ray::unreachable";
/// The job (or package) does not exist.
pub const CODE_NOT_FOUND: &str = "nrl::ray::not_found";
/// Ray refused a job submission.
pub const CODE_SUBMIT: &str = "nrl::ray::submit";
/// The dashboard address cannot be used (bad URL or scheme).
pub const CODE_ADDRESS: &str = "nrl::ray::address";
/// A response body was larger than nrl buffers (see `RayClientOptions::max_response_bytes`).
pub const CODE_RESPONSE_TOO_LARGE: &str = "nrl::ray::response_too_large";

/// Longest message we show from a server body; the rest is noise in a terminal.
const MAX_MESSAGE_CHARS: usize = 400;

/// The meaningful part of a Ray error body, on one line.
///
/// - JSON bodies with `msg`/`message`/`detail`/`error`: that string.
/// - Python tracebacks: the last non-empty line, without the exception class
///   (`ValueError: Job … exists` → `Job … exists`).
/// - Anything else: the last non-empty line.
///
/// An empty body gives `None` so callers can fall back to the HTTP status text.
pub fn concise_error_body(body: &str) -> Option<String> {
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return None;
    }
    if let Some(msg) = json_message(trimmed) {
        return Some(clip(&msg));
    }
    let is_traceback = trimmed.contains("Traceback (most recent call last)");
    // Lines with something to say ("." closes Ray's nested tracebacks).
    let meaningful = |l: &&str| l.chars().any(char::is_alphanumeric);
    let last = trimmed
        .lines()
        .map(str::trim)
        .rfind(meaningful)
        .unwrap_or(trimmed);
    if is_traceback {
        // The innermost exception is the last unindented `Class: message` line; Ray
        // nests the job agent's traceback inside the dashboard's.
        let exception = trimmed
            .lines()
            .filter(|l| !l.starts_with(char::is_whitespace))
            .map(str::trim)
            .rfind(|l| looks_like_exception_line(l))
            .unwrap_or(last);
        return Some(clip(strip_exception_class(exception)));
    }
    if looks_like_exception_line(last) {
        return Some(clip(strip_exception_class(last)));
    }
    // A sentence, possibly wrapped: keep all of it, on one line.
    Some(clip(
        &trimmed.split_whitespace().collect::<Vec<_>>().join(" "),
    ))
}

fn json_message(body: &str) -> Option<String> {
    if !body.starts_with('{') {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    ["msg", "message", "detail", "error"]
        .iter()
        .find_map(|k| value.get(*k).and_then(|v| v.as_str()))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// `ValueError: text`, `ray.exceptions.RayTaskError(Foo): text`, `KeyError: 'x'`.
fn looks_like_exception_line(line: &str) -> bool {
    exception_prefix_len(line).is_some()
}

fn exception_prefix_len(line: &str) -> Option<usize> {
    let colon = line.find(": ")?;
    let class = &line[..colon];
    let bare = class.split('(').next().unwrap_or(class);
    let last_segment = bare.rsplit('.').next().unwrap_or(bare);
    let is_identifier_path = !bare.is_empty()
        && bare
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let is_exception_name = last_segment.ends_with("Error")
        || last_segment.ends_with("Exception")
        || last_segment.ends_with("Exit")
        || last_segment == "Warning";
    (is_identifier_path && is_exception_name).then_some(colon + 2)
}

fn strip_exception_class(line: &str) -> &str {
    match exception_prefix_len(line) {
        Some(n) if n < line.len() => line[n..].trim(),
        _ => line,
    }
}

fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_MESSAGE_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_MESSAGE_CHARS).collect();
    out.push('…');
    out
}

/// The dashboard could not be reached (refused, DNS, TLS, or silent past the deadline).
pub fn unreachable(address: &str, timeout: Duration, cause: &str, attempts: u32) -> Diag {
    let tries = if attempts > 1 {
        format!(" after {attempts} attempts")
    } else {
        String::new()
    };
    Diag::api(
        CODE_UNREACHABLE,
        format!(
            "cannot reach the Ray dashboard at {address}: {cause}{tries} (timeout {})",
            human_duration(timeout)
        ),
    )
    .help(
        "check --address / RAY_ADDRESS (the dashboard URL, usually http://HOST:8265), that \
         the Ray head is running and any port-forward is open; raise --timeout for slow links",
    )
}

/// A job id the dashboard does not know.
pub fn job_not_found(address: &str, id: &str) -> Diag {
    Diag::api(
        CODE_NOT_FOUND,
        format!("Ray job `{id}` does not exist at {address}"),
    )
    .help(format!(
        "list the jobs with `nrl job list --address {address}`"
    ))
}

/// Ray refused a submission; `detail` is the concise server message.
pub fn submit_refused(address: &str, status: u16, detail: &str) -> Diag {
    let help = if detail.contains("already exists") {
        "choose another --submission-id, or omit it to let Ray generate one"
    } else if detail.contains("unexpected keyword") || status == 400 {
        "the dashboard rejected the request body; check that its Ray version speaks Job API v4"
    } else {
        "see the Ray dashboard's log (dashboard_JobHead.log) for details"
    };
    Diag::api(
        CODE_SUBMIT,
        format!("Ray at {address} refused the job (HTTP {status}): {detail}"),
    )
    .help(help)
}

/// Any other non-success answer.
pub fn api_failure(address: &str, what: &str, status: u16, detail: &str) -> Diag {
    let diag = Diag::api(
        CODE_API,
        format!("Ray dashboard at {address} failed {what} (HTTP {status}): {detail}"),
    );
    match status {
        401 | 403 => diag.help(
            "the dashboard requires a token: pass --token or set RAY_AUTH_TOKEN (sent as \
             `Authorization: Bearer …`)",
        ),
        500..=599 => diag.help(
            "the dashboard itself failed; retry in a few seconds or look at its logs \
             (dashboard*.log in the Ray session directory)",
        ),
        _ => diag,
    }
}

/// A success answer we could not understand (wrong service on that port, version skew).
pub fn bad_response(address: &str, what: &str, cause: impl std::fmt::Display) -> Diag {
    Diag::api(
        CODE_API,
        format!("unexpected answer from {address} to {what}: {cause}"),
    )
    .help("is this address a Ray dashboard (Ray >= 2.9, port 8265 by default)?")
}

/// A body over the cap: `declared` is its Content-Length when the server sent one (the
/// call then fails before reading), else nrl counted past the cap while reading.
pub fn response_too_large(address: &str, what: &str, limit: u64, declared: Option<u64>) -> Diag {
    let size = match declared {
        Some(n) => format!("a {n}-byte answer"),
        None => "an answer".to_string(),
    };
    let diag = Diag::api(
        CODE_RESPONSE_TOO_LARGE,
        format!(
            "{address} sent {size} to {what}, over nrl's limit of {} for it; stopped reading",
            crate::diag::human_bytes(limit)
        ),
    );
    if what.ends_with("/logs") {
        diag.help(
            "the job's log is too large to fetch in one piece: follow it instead with \
             `nrl job logs ID -f` (streamed, no size limit)",
        )
    } else {
        diag.help(
            "a Ray dashboard does not send this much: check that --address / RAY_ADDRESS is \
             the dashboard (port 8265 by default), not a proxy or another service",
        )
    }
}

/// `2.5s`, `30s`, `2m`, `1m30s` — how a human writes it on the command line.
pub fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    if !ms.is_multiple_of(1000) && ms < 60_000 {
        return format!("{:.1}s", d.as_secs_f64());
    }
    let secs = d.as_secs();
    match (secs / 60, secs % 60) {
        (0, s) => format!("{s}s"),
        (m, 0) => format!("{m}m"),
        (m, s) => format!("{m}m{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUPLICATE: &str = "Traceback (most recent call last):\n  File \"/x/job_head.py\", \
        line 321, in submit_job\n    resp = await job_agent_client.submit_job_internal(req)\n  \
        File \"/x/job_manager.py\", line 512, in submit_job\n    raise ValueError(\nValueError: \
        Job with submission_id nrl-test-1 already exists. Please use a different \
        submission_id.\n";

    #[test]
    fn traceback_becomes_its_last_line_without_the_class() {
        assert_eq!(
            concise_error_body(DUPLICATE).as_deref(),
            Some(
                "Job with submission_id nrl-test-1 already exists. Please use a different \
                 submission_id."
            )
        );
    }

    #[test]
    fn nested_tracebacks_give_the_innermost_exception() {
        // Ray 2.60's answer to a duplicate submission id (paths shortened).
        let body = "Traceback (most recent call last):\n  File \"job_head.py\", line 148, in \
            submit_job_internal\n    await self._raise_error(resp)\n  File \"job_head.py\", line \
            134, in _raise_error\n    raise RuntimeError(f\"Request failed with status code \
            {status}: {error_text}.\")\nRuntimeError: Request failed with status code 400: \
            Traceback (most recent call last):\n  File \"job_agent.py\", line 45, in \
            submit_job\n    submission_id = await self.get_job_manager().submit_job(\n    \
            ^^^^^^^^^^^^\n  File \"job_manager.py\", line 553, in submit_job\n    raise \
            ValueError(\nValueError: Job with submission_id dup1 already exists. Please use a \
            different submission_id.\n.\n";
        assert_eq!(
            concise_error_body(body).as_deref(),
            Some(
                "Job with submission_id dup1 already exists. Please use a different submission_id."
            )
        );
    }

    #[test]
    fn dotted_and_parenthesised_exception_classes_are_stripped() {
        let body = "Traceback (most recent call last):\n  x\nray.exceptions.RayTaskError(\
                    KeyError): boom\n";
        assert_eq!(concise_error_body(body).as_deref(), Some("boom"));
        let body = "Traceback (most recent call last):\n  x\nTypeError: \
                    JobSubmitRequest.__init__() got an unexpected keyword argument 'bogus'";
        assert_eq!(
            concise_error_body(body).as_deref(),
            Some("JobSubmitRequest.__init__() got an unexpected keyword argument 'bogus'")
        );
    }

    #[test]
    fn plain_sentence_is_kept() {
        assert_eq!(
            concise_error_body("Job does-not-exist does not exist").as_deref(),
            Some("Job does-not-exist does not exist")
        );
        // A sentence with a colon that is not an exception class stays whole.
        assert_eq!(
            concise_error_body("Package gcs://_ray_pkg_1.zip does not exist").as_deref(),
            Some("Package gcs://_ray_pkg_1.zip does not exist")
        );
    }

    #[test]
    fn json_and_empty_bodies() {
        assert_eq!(
            concise_error_body(r#"{"result": false, "msg": "no such node"}"#).as_deref(),
            Some("no such node")
        );
        assert_eq!(concise_error_body("  \n"), None);
    }

    #[test]
    fn long_bodies_are_clipped() {
        let long = "x".repeat(2000);
        let out = concise_error_body(&long).unwrap_or_default();
        assert_eq!(out.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(out.ends_with('…'));
    }

    #[test]
    fn unreachable_names_address_and_timeout() {
        let d = unreachable(
            "http://127.0.0.1:9",
            Duration::from_secs(3),
            "connection refused",
            4,
        );
        assert_eq!(d.code, CODE_UNREACHABLE);
        assert_eq!(d.exit, crate::diag::Exit::Api);
        assert!(d.message.contains("http://127.0.0.1:9"), "{}", d.message);
        assert!(d.message.contains("timeout 3s"), "{}", d.message);
        assert!(d.message.contains("after 4 attempts"), "{}", d.message);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(human_duration(Duration::from_millis(2500)), "2.5s");
        assert_eq!(human_duration(Duration::from_secs(30)), "30s");
        assert_eq!(human_duration(Duration::from_secs(120)), "2m");
        assert_eq!(human_duration(Duration::from_secs(90)), "1m30s");
    }
}
