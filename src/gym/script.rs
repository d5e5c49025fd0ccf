//! The driver container's startup script (ref-nemo-gym-k8s §2.6, §4): directories, the
//! two files written from base64, the `GYM_CMD` array, and the entrypoint that installs
//! Gym, runs `gym eval prepare`, then the benchmark (or its `command`).
//!
//! Text follows the reference's templates (stored version of §4.2) so a rendered Job
//! reads the same. One deliberate difference (§7 #15): `run`/`prepare` values are written
//! in Hydra's grammar (`true`, `null`, `{}` kept, quoted strings stay strings, `${` escaped,
//! keys Hydra cannot express refused; see `hydra_args`) instead of Python's `str()`
//! (`True`, `None`, empty mappings dropped).

use base64::Engine;

use super::hydra_args;
use crate::config::node::{Node, Value};
use crate::diag::Result;

/// Python's `shlex.quote`: unchanged when made only of `[A-Za-z0-9_@%+=:,./-]`, else
/// single-quoted with each `'` written as `'"'"'`.
pub fn shlex_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r#"'"'"'"#))
}

/// The reference's `flatten_run_args`: one `+dotted.key=value` token per leaf, in order,
/// shell-quoted, written in Hydra's grammar (`hydra_args`) so Hydra in the pod reads back
/// the configured value. A key Hydra cannot express is refused here.
pub fn flatten_run_args(run: &Node) -> Result<Vec<String>> {
    Ok(run_words(run)?.into_iter().map(|w| w.token).collect())
}

/// One `+key=value` argument: the dotted key, the configured value and the shell token.
pub struct RunWord<'a> {
    pub key: String,
    pub value: &'a Node,
    pub token: String,
}

/// [`flatten_run_args`] with the key and value each token carries.
pub fn run_words(run: &Node) -> Result<Vec<RunWord<'_>>> {
    let mut out = Vec::new();
    flatten_into(run, "", &mut out)?;
    Ok(out)
}

fn flatten_into<'a>(node: &'a Node, prefix: &str, out: &mut Vec<RunWord<'a>>) -> Result<()> {
    let Some(map) = node.as_map() else {
        return Ok(());
    };
    for (k, v) in map {
        let key = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        hydra_args::check_key_segment(k, v, &key)?;
        match &v.value {
            Value::Map(m) if !m.is_empty() => flatten_into(v, &key, out)?,
            _ => {
                let token = shlex_quote(&format!("+{key}={}", hydra_args::value_text(v)?));
                out.push(RunWord {
                    key,
                    value: v,
                    token,
                });
            }
        }
    }
    Ok(())
}

/// `VAR=(` + one indented entry per line + `)`: `gym <subcommand>` then `args` verbatim.
pub fn render_gym_cmd(subcommand: &str, var: &str, args: &[String]) -> String {
    let mut out = format!("{var}=(\n    gym {subcommand}");
    for a in args {
        out.push_str("\n    ");
        out.push_str(a);
    }
    out.push_str("\n)");
    out
}

/// `printf '%s' '<base64>' | base64 -d > <dest>`
pub fn write_file_from_base64(content: &str, dest: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(content.as_bytes());
    format!("printf '%s' '{b64}' | base64 -d > {}", shlex_quote(dest))
}

/// Where Gym comes from when the image does not have it.
#[derive(Debug, Clone, Copy)]
pub struct Install<'a> {
    pub repo: &'a str,
    pub git_ref: &'a str,
}

/// The reference's `render_driver_entrypoint`: run `GYM_CMD` (or `command`) after
/// installing Gym and preparing the benchmark, inside `bash -c '…'` so `set -e` covers the
/// preamble.
pub fn driver_entrypoint(
    install: Option<Install>,
    prepare: Option<&str>,
    command: Option<&str>,
) -> String {
    if install.is_none() && prepare.is_none() && command.is_none() {
        return r#""${GYM_CMD[@]}""#.to_string();
    }
    let mut lines: Vec<String> = vec!["set -euo pipefail".into()];
    if let Some(i) = install.filter(|i| !i.repo.is_empty() && !i.git_ref.is_empty()) {
        lines.extend([
            "curl -LsSf https://astral.sh/uv/install.sh | sh".to_string(),
            r#"source "$HOME/.local/bin/env""#.to_string(),
            r#"GYM_SRC="$(mktemp -d /tmp/gym-install-XXXXXX)""#.to_string(),
            format!(
                r#"(command -v git >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq git)) && git clone {} "$GYM_SRC/gym" && cd "$GYM_SRC/gym" && git checkout {}"#,
                shlex_quote(i.repo),
                shlex_quote(i.git_ref)
            ),
            "uv venv --seed .venv".to_string(),
            "source .venv/bin/activate".to_string(),
            "uv pip install -e .".to_string(),
        ]);
    }
    if let Some(p) = prepare {
        lines.push(p.to_string());
    }
    lines.push(command.unwrap_or(r#"exec "$@""#).to_string());
    let body = lines.join("\n    ").replace('\'', r#"'"'"'"#);
    match command {
        Some(_) => format!("bash -c '\n    {body}\n'"),
        None => format!("bash -c '\n    {body}\n' -- \"${{GYM_CMD[@]}}\""),
    }
}

/// Everything the driver script needs for one benchmark.
pub struct DriverScript<'a> {
    pub run_dir: &'a str,
    pub resolved_config: &'a str,
    pub record_json: &'a str,
    /// `gym eval run` arguments after the output path (`--model-type` and the run tokens);
    /// `None` for a `command` benchmark.
    pub run_args: Option<Vec<String>>,
    pub install: Option<Install<'a>>,
    pub prepare: Option<String>,
    pub command: Option<&'a str>,
}

/// The script passed as `bash -c <script>` (lines joined with `\n`, empty lines dropped).
pub fn driver_script(s: &DriverScript) -> String {
    let dir = shlex_quote(s.run_dir);
    let mut lines = vec![
        "set -euo pipefail".to_string(),
        format!("mkdir -p {dir}/logs {dir}/artifacts"),
        write_file_from_base64(
            s.resolved_config,
            &format!("{}/resolved-config.yaml", s.run_dir),
        ),
        write_file_from_base64(s.record_json, &format!("{}/gym-job.json", s.run_dir)),
    ];
    if let Some(args) = &s.run_args {
        let mut all = vec![shlex_quote(&format!(
            "+output_jsonl_fpath={}/artifacts/rollouts.jsonl",
            s.run_dir
        ))];
        all.extend(args.iter().cloned());
        lines.push(render_gym_cmd("eval run", "GYM_CMD", &all));
    }
    lines.push(driver_entrypoint(
        s.install,
        s.prepare.as_deref(),
        s.command,
    ));
    lines.retain(|l| !l.is_empty());
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::source::{SourceKind, add_source};
    use crate::config::yaml::parse_source;

    fn yaml(text: &str) -> Node {
        parse_source(add_source("run.yaml", None, text, SourceKind::Text)).unwrap()
    }

    #[test]
    fn quoting_like_python() {
        assert_eq!(shlex_quote("+split=benchmark"), "+split=benchmark");
        assert_eq!(shlex_quote(""), "''");
        assert_eq!(shlex_quote("it's"), r#"'it'"'"'s'"#);
        assert_eq!(shlex_quote("a b"), "'a b'");
    }

    // ref §4.4 table, with the Hydra spelling of §7 #15 where the reference used Python's.
    #[test]
    fn flatten_run_args_table() {
        let f = |t: &str| flatten_run_args(&yaml(t)).unwrap();
        assert_eq!(f("split: benchmark"), ["+split=benchmark"]);
        assert_eq!(
            f("config_paths: [a.yaml, b.yaml]"),
            ["'+config_paths=[a.yaml,b.yaml]'"]
        );
        assert_eq!(f("a: {b: 1, c: true}"), ["+a.b=1", "+a.c=true"]);
        assert_eq!(f("x: null"), ["+x=null"]);
        assert_eq!(f("msg: hello world"), ["'+msg=hello world'"]);
        assert_eq!(f("k: []"), ["'+k=[]'"]);
        assert_eq!(f("k: {}"), ["'+k={}'"]);
        assert_eq!(f("k: [{a: 1}]"), ["'+k=[{a: 1}]'"]);
        assert_eq!(
            f("url: http://localhost:8000/v1"),
            ["+url=http://localhost:8000/v1"]
        );
        // A quoted number stays a string for Hydra.
        assert_eq!(f("n: '4'"), [r#"'+n='"'"'4'"'"''"#]);
        assert_eq!(f("n: 4"), ["+n=4"]);
    }

    // ref §4.1
    #[test]
    fn gym_cmd_array() {
        assert_eq!(
            render_gym_cmd("eval run", "GYM_CMD", &["+a=1".into(), "+b=2".into()]),
            "GYM_CMD=(\n    gym eval run\n    +a=1\n    +b=2\n)"
        );
        assert_eq!(
            render_gym_cmd("eval run", "GYM_CMD", &[]),
            "GYM_CMD=(\n    gym eval run\n)"
        );
    }

    // ref §4.3
    #[test]
    fn base64_writes() {
        assert_eq!(
            write_file_from_base64("", "/x/y.json"),
            "printf '%s' '' | base64 -d > /x/y.json"
        );
        assert_eq!(
            write_file_from_base64("hi", "/a b"),
            "printf '%s' 'aGk=' | base64 -d > '/a b'"
        );
    }

    // ref §5.3
    #[test]
    fn entrypoint_without_install_or_prepare() {
        let e = driver_entrypoint(None, None, None);
        assert_eq!(e, r#""${GYM_CMD[@]}""#);
        assert!(!e.contains("set -euo pipefail"));
    }

    // ref §5.3
    #[test]
    fn entrypoint_with_install() {
        let i = Install {
            repo: "https://github.com/NVIDIA-NeMo/gym",
            git_ref: "main",
        };
        let e = driver_entrypoint(Some(i), None, None);
        for want in [
            "git clone",
            "checkout main",
            "uv venv --seed .venv",
            "source .venv/bin/activate",
            "uv pip install -e .",
            r#"exec "$@""#,
            r#""${GYM_CMD[@]}""#,
        ] {
            assert!(e.contains(want), "{want}: {e}");
        }
        assert!(!e.contains("--system") && !e.contains("--break-system-packages"));
        let lines: Vec<&str> = e.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        assert_eq!(&lines[..2], ["bash -c '", "set -euo pipefail"]);
        assert!(e.find("command -v git").unwrap() < e.find("git clone").unwrap());
        assert!(e.contains(r#"mktemp -d /tmp/gym-install-"#));
        assert!(e.contains(r#"git clone https://github.com/NVIDIA-NeMo/gym "$GYM_SRC/gym""#));
        assert_eq!(e.matches("cd ").count(), 1);
        assert!(e.find(r#"cd "$GYM_SRC/gym""#).unwrap() < e.find(r#"exec "$@""#).unwrap());
    }

    // ref §5.3: a command benchmark runs prepare first and keeps a multi-line command intact.
    #[test]
    fn entrypoint_with_command() {
        let e = driver_entrypoint(
            None,
            Some("gym eval prepare +a=1"),
            Some("./run.sh --name 'a b'\necho done"),
        );
        assert!(!e.contains("GYM_CMD") && !e.contains("gym eval run"));
        assert!(e.find("gym eval prepare").unwrap() < e.find("./run.sh").unwrap());
        assert!(e.contains(r#"--name '"'"'a b'"'"'"#), "{e}");
    }
}

/// Python's `shlex.split` (POSIX mode, no comments): the words of `s`, or why it cannot be
/// split (an unclosed quote, a trailing backslash).
pub fn shlex_split(s: &str) -> std::result::Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err("no closing quotation".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some('\n') => {}
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err("no closing quotation".into()),
                        },
                        Some(x) => cur.push(x),
                        None => return Err("no closing quotation".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(x) => cur.push(x),
                    None => return Err("no escaped character".into()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod split_tests {
    use super::shlex_split;

    #[test]
    fn splits_like_python() {
        assert_eq!(
            shlex_split("--max-model-len 16384").unwrap(),
            ["--max-model-len", "16384"]
        );
        assert_eq!(
            shlex_split(r#"--x 'a b' "c \"d\"" e\ f"#).unwrap(),
            ["--x", "a b", r#"c "d""#, "e f"]
        );
        assert_eq!(shlex_split("  ").unwrap(), Vec::<String>::new());
        assert_eq!(shlex_split("''").unwrap(), [""]);
        assert!(shlex_split("'open").is_err());
        assert!(shlex_split("x\\").is_err());
    }
}
