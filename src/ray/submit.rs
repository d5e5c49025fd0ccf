//! Submitting a job: optional working_dir upload, then one `POST /api/jobs/`.
//! Shared by `nrl job submit`, the launchers and the Rhai built-ins.

use regex::Regex;

use super::client::RayClient;
use super::package::UploadSet;
use super::types::SubmitRequest;
use super::upload::{PackageOptions, PackageUpload, ensure_package};
use crate::diag::{Diag, Result};

/// A job to submit.
#[derive(Debug, Clone, Default)]
pub struct JobSpec {
    /// The request; `runtime_env.working_dir` is filled in from `working_dir`.
    pub request: SubmitRequest,
    /// Files to ship as the job's working directory.
    pub working_dir: Option<UploadSet>,
    pub package: PackageOptions,
}

/// A submitted job.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub submission_id: String,
    pub package: Option<PackageUpload>,
}

/// Upload the working_dir if there is one (skipped when Ray has it), then submit.
pub async fn submit_job(client: &RayClient, spec: JobSpec) -> Result<Submitted> {
    let JobSpec {
        mut request,
        working_dir,
        package,
    } = spec;
    if request.entrypoint.trim().is_empty() {
        return Err(
            Diag::new("nrl::ray::entrypoint", "the job has no entrypoint").help(
                "give the command to run, e.g. `nrl job submit --address URL -- python main.py`",
            ),
        );
    }
    let mut uploaded = None;
    if let Some(set) = working_dir {
        let outcome = ensure_package(client, &set, &package).await?;
        request.runtime_env.working_dir = Some(outcome.uri.clone());
        uploaded = Some(outcome);
    }
    let response = client.submit(&request).await?;
    Ok(Submitted {
        submission_id: response.submission_id,
        package: uploaded,
    })
}

/// The entrypoint for command-line words: one word is taken verbatim (it may be a whole
/// shell command: `"python a.py && echo done"`); several words are shell-quoted where
/// needed and joined, so `python -c 'print(1)'` arrives as typed.
pub fn entrypoint_from_words<S: AsRef<str>>(words: &[S]) -> String {
    match words {
        [single] => single.as_ref().to_string(),
        _ => words
            .iter()
            .map(|w| shell_quote(w.as_ref()))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// POSIX single-quote style, as Python's `shlex.quote`.
pub fn shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c);
    if word.is_empty() {
        return "''".to_string();
    }
    if word.chars().all(safe) {
        return word.to_string();
    }
    format!("'{}'", word.replace('\'', r#"'"'"'"#))
}

/// `KEY=VALUE` for `--env`; the key must be a shell variable name.
pub fn parse_env_pair(pair: &str) -> Result<(String, String)> {
    let Some((key, value)) = pair.split_once('=') else {
        return Err(
            Diag::new("nrl::ray::env", format!("`{pair}` is not KEY=VALUE"))
                .help("write --env NAME=value (an empty value is `NAME=`)"),
        );
    };
    let valid = Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*$")
        .map(|re| re.is_match(key))
        .unwrap_or(false);
    if !valid {
        return Err(Diag::new(
            "nrl::ray::env",
            format!("invalid environment variable name `{key}`"),
        )
        .help("names start with a letter or `_` and contain only letters, digits and `_`"));
    }
    Ok((key.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_word_is_verbatim_many_are_quoted() {
        assert_eq!(
            entrypoint_from_words(&["python a.py && echo ok"]),
            "python a.py && echo ok"
        );
        assert_eq!(
            entrypoint_from_words(&["python", "-c", "print('hi there')"]),
            r#"python -c 'print('"'"'hi there'"'"')'"#
        );
        assert_eq!(entrypoint_from_words(&["echo", "", "a=b"]), "echo '' a=b");
    }

    #[test]
    fn env_pairs() {
        assert_eq!(
            parse_env_pair("A_1=x=y").unwrap(),
            ("A_1".to_string(), "x=y".to_string())
        );
        assert_eq!(parse_env_pair("E=").unwrap().1, "");
        for bad in ["noequals", "1A=x", "A-B=x", "=x"] {
            assert_eq!(
                parse_env_pair(bad).unwrap_err().code,
                "nrl::ray::env",
                "{bad}"
            );
        }
    }
}
