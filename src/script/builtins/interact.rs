//! `interact` (global functions): questions to the user, shell commands, progress.

use std::process::Stdio;

use indicatif::{ProgressBar, ProgressStyle};
use rhai::plugin::*;
use rhai::{Dynamic, INT, Map};

use crate::diag::Diag;
use crate::script::errors::{RhaiResult, fail, usage};
use crate::script::host::{Host, host};
use crate::script::output::Stream;

/// A progress indicator on stderr (`progress(total, message)`).
#[derive(Clone)]
pub struct Progress {
    bar: ProgressBar,
    total: u64,
    message: String,
}

#[export_module]
pub mod interact_module {
    use super::*;

    /// Ask a question and return the answer. Without a terminal on stdin this fails:
    /// give a default with `prompt(question, fallback)`.
    #[rhai_fn(return_raw)]
    pub fn prompt(ctx: NativeCallContext, question: &str) -> RhaiResult<String> {
        ask(&ctx, question, None)
    }

    /// Ask a question; an empty answer, or no terminal on stdin, gives `fallback`.
    #[rhai_fn(name = "prompt", return_raw)]
    pub fn prompt_or(ctx: NativeCallContext, question: &str, fallback: &str) -> RhaiResult<String> {
        ask(&ctx, question, Some(fallback))
    }

    /// Ask a yes/no question. Without a terminal on stdin this fails: give a default with
    /// `confirm(question, fallback)`.
    #[rhai_fn(return_raw)]
    pub fn confirm(ctx: NativeCallContext, question: &str) -> RhaiResult<bool> {
        yes_no(&ctx, question, None)
    }

    /// Ask a yes/no question; an empty answer, or no terminal on stdin, gives `fallback`.
    #[rhai_fn(name = "confirm", return_raw)]
    pub fn confirm_or(ctx: NativeCallContext, question: &str, fallback: bool) -> RhaiResult<bool> {
        yes_no(&ctx, question, Some(fallback))
    }

    /// Whether stdin is a terminal: `prompt` and `confirm` ask only then (otherwise they
    /// take their default), so a loop that asks "again?" can stop when nobody answers.
    #[rhai_fn(return_raw)]
    pub fn interactive(ctx: NativeCallContext) -> RhaiResult<bool> {
        Ok(host(&ctx)?.opts.interactive)
    }

    /// Run `command` with `sh -c` in the working directory, printing `$ command` first.
    /// Returns `#{code, stdout, stderr, planned}`. In plan mode it is recorded, not run.
    #[rhai_fn(return_raw)]
    pub fn shell(ctx: NativeCallContext, command: &str) -> RhaiResult<Map> {
        run_shell(&ctx, command, &Map::new())
    }

    /// `shell` with options: `check: true` throws when the exit code is not 0;
    /// `quiet: true` does not print `$ command`.
    #[rhai_fn(name = "shell", return_raw)]
    pub fn shell_with(ctx: NativeCallContext, command: &str, options: Map) -> RhaiResult<Map> {
        run_shell(&ctx, command, &options)
    }

    /// A progress indicator on stderr for `total` steps: a bar on a terminal, otherwise
    /// one line when it finishes.
    #[rhai_fn(return_raw)]
    pub fn progress(ctx: NativeCallContext, total: INT, message: &str) -> RhaiResult<Progress> {
        let h = host(&ctx)?;
        let total = u64::try_from(total).unwrap_or(0);
        let live = h.opts.output.is_terminal(Stream::Stderr);
        let bar = if live {
            let bar = ProgressBar::new(total);
            if let Ok(style) =
                ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} {elapsed}")
            {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(message.to_string());
            bar
        } else {
            ProgressBar::hidden()
        };
        Ok(Progress {
            bar,
            total,
            message: message.to_string(),
        })
    }

    /// Advance by one step.
    #[rhai_fn(global, name = "inc")]
    pub fn inc(p: &mut Progress) {
        p.bar.inc(1);
    }

    /// Advance by `n` steps.
    #[rhai_fn(global, name = "inc")]
    pub fn inc_by(p: &mut Progress, n: INT) {
        p.bar.inc(u64::try_from(n).unwrap_or(0));
    }

    /// Set the position.
    #[rhai_fn(global, name = "set")]
    pub fn set_position(p: &mut Progress, position: INT) {
        p.bar.set_position(u64::try_from(position).unwrap_or(0));
    }

    /// The current position.
    #[rhai_fn(global, get = "position", pure)]
    pub fn position(p: &mut Progress) -> INT {
        INT::try_from(p.bar.position()).unwrap_or(INT::MAX)
    }

    /// Finish: clear the bar, or print `message: done (n/total)` without a terminal.
    #[rhai_fn(global, return_raw)]
    pub fn finish(ctx: NativeCallContext, p: &mut Progress) -> RhaiResult<()> {
        let h = host(&ctx)?;
        p.bar.finish_and_clear();
        let line = format!("{}: done ({}/{})", p.message, p.bar.position(), p.total);
        // One summary line either way: the bar itself is cleared.
        h.line(Stream::Stderr, &line);
        Ok(())
    }
}

fn ask(ctx: &NativeCallContext, question: &str, fallback: Option<&str>) -> RhaiResult<String> {
    let h = host(ctx)?;
    if !h.opts.interactive {
        return match fallback {
            Some(f) => {
                h.line(
                    Stream::Stderr,
                    &format!("{question} {f} (no terminal: default)"),
                );
                Ok(f.to_string())
            }
            None => Err(not_interactive(question)),
        };
    }
    let shown = match fallback {
        Some(f) => format!("{question} [{f}] "),
        None => format!("{question} "),
    };
    h.print(Stream::Stderr, &shown);
    let answer = read_line(&h)?;
    let answer = answer.trim();
    Ok(match (answer.is_empty(), fallback) {
        (true, Some(f)) => f.to_string(),
        _ => answer.to_string(),
    })
}

fn yes_no(ctx: &NativeCallContext, question: &str, fallback: Option<bool>) -> RhaiResult<bool> {
    let h = host(ctx)?;
    let hint = match fallback {
        Some(true) => "[Y/n]",
        Some(false) => "[y/N]",
        None => "[y/n]",
    };
    if !h.opts.interactive {
        return match fallback {
            Some(f) => {
                let word = if f { "yes" } else { "no" };
                h.line(
                    Stream::Stderr,
                    &format!("{question} {hint} {word} (no terminal: default)"),
                );
                Ok(f)
            }
            None => Err(not_interactive(question)),
        };
    }
    loop {
        h.print(Stream::Stderr, &format!("{question} {hint} "));
        let answer = read_line(&h)?.trim().to_lowercase();
        match (answer.as_str(), fallback) {
            ("y" | "yes", _) => return Ok(true),
            ("n" | "no", _) => return Ok(false),
            ("", Some(f)) => return Ok(f),
            _ => h.line(Stream::Stderr, "please answer y or n"),
        }
    }
}

fn read_line(h: &Host) -> RhaiResult<String> {
    h.block_on(async {
        let read = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|_| line)
        });
        match read.await {
            Ok(Ok(line)) => Ok(line),
            Ok(Err(e)) => Err(Diag::new(
                "nrl::script::stdin",
                format!("cannot read stdin: {e}"),
            )),
            Err(e) => Err(Diag::new("nrl::script::stdin", e.to_string())),
        }
    })
}

fn not_interactive(question: &str) -> Box<EvalAltResult> {
    usage(
        "nrl::script::not_interactive",
        format!("cannot ask \"{question}\": stdin is not a terminal"),
        "give the answer a default (`confirm(question, false)`, `prompt(question, \"x\")`) or pass it as a script argument",
    )
}

fn run_shell(ctx: &NativeCallContext, command: &str, options: &Map) -> RhaiResult<Map> {
    let h = host(ctx)?;
    for key in options.keys() {
        if !["check", "quiet"].contains(&key.as_str()) {
            return Err(usage(
                "nrl::script::option",
                format!("shell has no option `{key}`"),
                "the options are `check` and `quiet`",
            ));
        }
    }
    let flag = |k: &str| {
        options
            .get(k)
            .and_then(|v| v.as_bool().ok())
            .unwrap_or(false)
    };
    let (check, quiet) = (flag("check"), flag("quiet"));
    if !quiet {
        h.line(Stream::Stderr, &format!("$ {command}"));
    }
    let mut result = Map::new();
    if h.dry_run() {
        h.plan
            .record("shell", command, format!("in {}", h.opts.workdir.display()));
        result.insert("code".into(), Dynamic::from_int(0));
        result.insert("stdout".into(), "".into());
        result.insert("stderr".into(), "".into());
        result.insert("planned".into(), Dynamic::TRUE);
        return Ok(result);
    }
    let workdir = h.opts.workdir.clone();
    let command_owned = command.to_string();
    let output = h.block_on(async move {
        let mut command = tokio::process::Command::new("sh");
        command
            .arg("-c")
            .arg(&command_owned)
            .current_dir(&workdir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Its own process group, so Ctrl-C can take down what the command started too.
        #[cfg(unix)]
        command.process_group(0);
        let spawn_error = |e: std::io::Error| {
            Diag::new(
                "nrl::script::shell",
                format!("cannot run `{command_owned}`: {e}"),
            )
            .help("check `sh` is on PATH")
        };
        let child = command.spawn().map_err(spawn_error)?;
        // Dropped with this future on Ctrl-C: kills the whole group.
        let mut group = GroupKill(child.id());
        let output = child.wait_with_output().await.map_err(spawn_error)?;
        group.0 = None;
        Ok(output)
    })?;
    let code = output.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if check && code != 0 {
        let last = stderr.lines().last().unwrap_or("").to_string();
        return Err(fail(
            Diag::new(
                "nrl::script::shell",
                format!("`{command}` exited with code {code}"),
            )
            .help(if last.is_empty() {
                "see its output above".to_string()
            } else {
                format!("its last error line: {last}")
            }),
        ));
    }
    result.insert("code".into(), Dynamic::from_int(code.into()));
    result.insert("stdout".into(), stdout.into());
    result.insert("stderr".into(), stderr.into());
    result.insert("planned".into(), Dynamic::FALSE);
    Ok(result)
}

/// Kills a process group when dropped (unless emptied).
struct GroupKill(Option<u32>);

impl Drop for GroupKill {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self
            .0
            .and_then(|p| i32::try_from(p).ok())
            .and_then(rustix::process::Pid::from_raw)
        {
            // ESRCH: the group is already gone.
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}
