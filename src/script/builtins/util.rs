//! `util` (global functions): environment, files under the working directory, time and
//! cancellable sleep, log lines, plan mode and `exit`.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use rhai::plugin::*;
use rhai::{Array, Dynamic, FLOAT, INT, Map};

use crate::diag::Diag;
use crate::script::builtins::options::Options;
use crate::script::errors::{RhaiResult, ScriptError, fail, usage};
use crate::script::host::{Host, host};
use crate::script::output::Stream;

pub const CODE_FILE_ACCESS: &str = "nrl::script::file_access";

#[export_module]
pub mod util_module {
    use super::*;

    /// The value of environment variable `name`, or `()` when it is not set.
    #[rhai_fn(return_raw)]
    pub fn env(ctx: NativeCallContext, name: &str) -> RhaiResult<Dynamic> {
        let h = host(&ctx)?;
        Ok(h.opts
            .env
            .var(name)
            .map(Dynamic::from)
            .unwrap_or(Dynamic::UNIT))
    }

    /// The value of environment variable `name`, or `fallback` when it is not set.
    #[rhai_fn(name = "env", return_raw)]
    pub fn env_or(ctx: NativeCallContext, name: &str, fallback: &str) -> RhaiResult<String> {
        let h = host(&ctx)?;
        Ok(h.opts.env.var(name).unwrap_or_else(|| fallback.to_string()))
    }

    /// The working directory: relative paths start here, and files read or written by
    /// the script must lie under it.
    #[rhai_fn(return_raw)]
    pub fn cwd(ctx: NativeCallContext) -> RhaiResult<String> {
        Ok(host(&ctx)?.opts.workdir.display().to_string())
    }

    /// The text of a file under the working directory.
    #[rhai_fn(return_raw)]
    pub fn read_file(ctx: NativeCallContext, path: &str) -> RhaiResult<String> {
        let h = host(&ctx)?;
        let p = confined(&h, path).map_err(fail)?;
        crate::config::input::read_text(&p).map_err(|e| {
            fail(
                Diag::new("nrl::script::read", format!("cannot read {path}: {e}"))
                    .help("check the path; it is relative to the working directory"),
            )
        })
    }

    /// Write `text` to a file under the working directory (parent directories are
    /// created). In plan mode the write is recorded, not done.
    #[rhai_fn(return_raw)]
    pub fn write_file(ctx: NativeCallContext, path: &str, text: &str) -> RhaiResult<()> {
        let h = host(&ctx)?;
        let p = confined(&h, path).map_err(fail)?;
        if h.dry_run() {
            h.plan
                .record("write", path, format!("{} bytes", text.len()));
            return Ok(());
        }
        let write = || -> std::io::Result<()> {
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(&p, text)
        };
        write().map_err(|e| {
            fail(
                Diag::new("nrl::script::write", format!("cannot write {path}: {e}"))
                    .help("check the directory is writable"),
            )
        })
    }

    /// Whether a file or directory exists under the working directory.
    #[rhai_fn(return_raw)]
    pub fn file_exists(ctx: NativeCallContext, path: &str) -> RhaiResult<bool> {
        let h = host(&ctx)?;
        Ok(confined(&h, path).map_err(fail)?.exists())
    }

    /// The current time, RFC 3339 in UTC (`2026-01-31T12:00:00.123Z`).
    pub fn now() -> String {
        jiff::Timestamp::now()
            .round(jiff::Unit::Millisecond)
            .map(|t| t.to_string())
            .unwrap_or_default()
    }

    /// Milliseconds since the Unix epoch (for measuring durations).
    pub fn epoch_ms() -> INT {
        jiff::Timestamp::now().as_millisecond()
    }

    /// Pause for `seconds`; Ctrl-C cancels the wait (and the script).
    #[rhai_fn(return_raw)]
    pub fn sleep(ctx: NativeCallContext, seconds: INT) -> RhaiResult<()> {
        sleep_for(&ctx, seconds as FLOAT)
    }

    /// Pause for `seconds` (fractions allowed); Ctrl-C cancels the wait.
    #[rhai_fn(name = "sleep", return_raw)]
    pub fn sleep_float(ctx: NativeCallContext, seconds: FLOAT) -> RhaiResult<()> {
        sleep_for(&ctx, seconds)
    }

    /// Whether the script runs in plan mode (`nrl script --dry-run`): actions that would
    /// change a cluster are recorded and return simulated handles.
    #[rhai_fn(return_raw)]
    pub fn dry_run(ctx: NativeCallContext) -> RhaiResult<bool> {
        Ok(host(&ctx)?.dry_run())
    }

    /// The steps recorded so far in plan mode: `[#{action, target, details}, …]`.
    #[rhai_fn(return_raw)]
    pub fn plan_steps(ctx: NativeCallContext) -> RhaiResult<Array> {
        let h = host(&ctx)?;
        Ok(h.plan
            .steps()
            .into_iter()
            .map(|s| {
                let mut m = Map::new();
                m.insert("action".into(), s.action.into());
                m.insert("target".into(), s.target.into());
                m.insert("details".into(), s.details.into());
                Dynamic::from_map(m)
            })
            .collect())
    }

    /// Options of plan mode, for the rest of the run: `live_reads: true` lets built-ins
    /// read a cluster or a Ray dashboard in plan mode (each target is listed as a `read`
    /// step), as `nrl script --dry-run --allow-reads` does; `false` refuses them again
    /// (`nrl::script::plan_live_read`, the default). No effect outside plan mode.
    ///
    /// ```rhai
    /// plan_options(#{live_reads: true});
    /// let jobs = ray::dashboard("http://127.0.0.1:8265").list();
    /// ```
    #[rhai_fn(return_raw)]
    pub fn plan_options(ctx: NativeCallContext, options: Map) -> RhaiResult<()> {
        let h = host(&ctx)?;
        let o = Options::new("plan_options", &options, &["live_reads"])?;
        if o.value("live_reads").is_some() {
            h.set_live_reads(o.bool("live_reads", false)?);
        }
        Ok(())
    }

    /// End the script now with exit code `code` (0–255).
    #[rhai_fn(volatile, return_raw)]
    pub fn exit(ctx: NativeCallContext, code: INT) -> RhaiResult<Dynamic> {
        let h = host(&ctx)?;
        let Ok(c) = u8::try_from(code) else {
            return Err(usage(
                "nrl::script::exit",
                format!("exit code {code} is out of range"),
                "exit codes are 0 to 255",
            ));
        };
        h.set_exit_code(c);
        Err(Box::new(EvalAltResult::Exit(
            Dynamic::from_int(code),
            Position::NONE,
        )))
    }

    /// `exit` with anything but an integer is a mistake (`exit("1")`): refused.
    #[rhai_fn(name = "exit", return_raw)]
    pub fn exit_other(value: Dynamic) -> RhaiResult<Dynamic> {
        Err(usage(
            "nrl::script::exit",
            format!("exit takes an integer code, not a {}", value.type_name()),
            "write exit(1); parse text first: exit(parse_int(s))",
        ))
    }

    /// Print a line to stderr (commentary, kept apart from the script's results).
    #[rhai_fn(return_raw)]
    pub fn log(ctx: NativeCallContext, message: Dynamic) -> RhaiResult<()> {
        host(&ctx)?.line(Stream::Stderr, &message.to_string());
        Ok(())
    }

    /// Print `info: message` to stderr.
    #[rhai_fn(return_raw)]
    pub fn info(ctx: NativeCallContext, message: Dynamic) -> RhaiResult<()> {
        host(&ctx)?.line(Stream::Stderr, &format!("info: {message}"));
        Ok(())
    }

    /// The stable code of a caught built-in error (`try { … } catch (e) { e.code }`),
    /// e.g. `nrl::ray::not_found`.
    #[rhai_fn(global, get = "code", pure)]
    pub fn error_code(e: &mut ScriptError) -> String {
        e.0.code.to_string()
    }

    /// The message of a caught built-in error.
    #[rhai_fn(global, get = "message", pure)]
    pub fn error_message(e: &mut ScriptError) -> String {
        e.0.message.clone()
    }

    /// How to fix a caught built-in error, or `()`.
    #[rhai_fn(global, get = "help", pure)]
    pub fn error_help(e: &mut ScriptError) -> Dynamic {
        e.0.help.clone().map(Dynamic::from).unwrap_or(Dynamic::UNIT)
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn error_string(e: &mut ScriptError) -> String {
        format!("{} [{}]", e.0, e.0.code)
    }

    #[rhai_fn(global, name = "to_debug", pure)]
    pub fn error_debug(e: &mut ScriptError) -> String {
        format!("{} [{}]", e.0, e.0.code)
    }

    /// Print `warning: message` to stderr.
    #[rhai_fn(return_raw)]
    pub fn warn(ctx: NativeCallContext, message: Dynamic) -> RhaiResult<()> {
        host(&ctx)?.line(Stream::Stderr, &format!("warning: {message}"));
        Ok(())
    }
}

fn sleep_for(ctx: &NativeCallContext, seconds: FLOAT) -> RhaiResult<()> {
    let h = host(ctx)?;
    let Ok(d) = Duration::try_from_secs_f64(seconds) else {
        return Err(usage(
            "nrl::script::sleep",
            format!("cannot sleep {seconds} seconds"),
            "give a number of seconds, zero or more",
        ));
    };
    h.block_on(async move {
        tokio::time::sleep(d).await;
        Ok(())
    })
}

/// `path` (relative to the working directory) if it stays inside it, symlinks resolved.
pub fn confined(h: &Host, path: &str) -> Result<PathBuf, Diag> {
    confined_in(&h.opts.workdir, path)
}

/// `path` (relative to `workdir`) with every symlink resolved, if it stays under
/// `workdir`. Symlinks are followed even when they point at nothing yet (a dangling link
/// is where a write would land), so no link can lead a write outside.
pub fn confined_in(workdir: &Path, path: &str) -> Result<PathBuf, Diag> {
    let root = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    let outside = |why: String| {
        Diag::new(CODE_FILE_ACCESS, why)
            .help("scripts read and write files only under the directory `nrl script` runs in; run it from a directory that contains the file")
    };
    let real = resolve_links(&normalize(&root.join(path))).ok_or_else(|| {
        outside(format!(
            "`{path}` goes through a symlink loop or a link that cannot be read"
        ))
    })?;
    if real.starts_with(&root) {
        Ok(real)
    } else {
        Err(outside(format!(
            "`{path}` is outside the working directory {}{}",
            root.display(),
            if real == normalize(&root.join(path)) {
                String::new()
            } else {
                format!(" (it leads to {})", real.display())
            }
        )))
    }
}

/// Where `p` (absolute, normalised) really is: symlinks resolved through the part that
/// exists, including a dangling link at its end; the missing rest appended. `None` for a
/// loop.
fn resolve_links(p: &Path) -> Option<PathBuf> {
    let mut current = p.to_path_buf();
    // As many hops as Linux allows (MAXSYMLINKS).
    for _ in 0..40 {
        // The longest prefix that is an entry (`symlink_metadata`: a dangling link counts).
        let mut existing = current.clone();
        let mut rest = Vec::new();
        while std::fs::symlink_metadata(&existing).is_err() {
            match (existing.file_name(), existing.parent()) {
                (Some(name), Some(parent)) => {
                    rest.push(name.to_owned());
                    existing = parent.to_path_buf();
                }
                _ => break,
            }
        }
        let with_rest = |mut base: PathBuf| {
            for part in rest.iter().rev() {
                base.push(part);
            }
            base
        };
        match std::fs::canonicalize(&existing) {
            Ok(real) => return Some(with_rest(real)),
            // Only a dangling link (or a loop) fails here: follow it by hand.
            Err(_) => {
                let target = std::fs::read_link(&existing).ok()?;
                let parent = existing.parent().unwrap_or(Path::new("/"));
                current = with_rest(normalize(&parent.join(target)));
            }
        }
    }
    None
}

/// Remove `.` and `..` components without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(all(test, unix))]
mod confinement_tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("work");
        let outside = d.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        (d, root, outside)
    }

    #[test]
    fn plain_names_and_missing_directories_stay_inside() {
        let (_d, root, _) = dirs();
        let real = std::fs::canonicalize(&root).unwrap();
        assert_eq!(
            confined_in(&root, "a/b/c.txt").unwrap(),
            real.join("a/b/c.txt")
        );
        assert!(confined_in(&root, "../outside/x").is_err());
    }

    #[test]
    fn a_dangling_absolute_link_to_outside_is_refused() {
        // Regression (issue 15 item 11): a link to a file that does not exist yet was
        // treated as a plain name, and write_file created the file outside.
        let (_d, root, outside) = dirs();
        symlink(outside.join("planted.txt"), root.join("out.txt")).unwrap();
        let e = confined_in(&root, "out.txt").unwrap_err();
        assert_eq!(e.code, CODE_FILE_ACCESS);
        assert!(e.message.contains("it leads to"), "{}", e.message);
    }

    #[test]
    fn a_dangling_relative_link_to_outside_is_refused() {
        let (_d, root, _) = dirs();
        symlink("../outside/planted.txt", root.join("out.txt")).unwrap();
        assert!(confined_in(&root, "out.txt").is_err());
        // Through a directory link that leads outside, too.
        symlink("../outside", root.join("dir")).unwrap();
        assert!(confined_in(&root, "dir/new.txt").is_err());
    }

    #[test]
    fn links_that_stay_inside_are_followed() {
        let (_d, root, _) = dirs();
        let real = std::fs::canonicalize(&root).unwrap();
        std::fs::create_dir_all(root.join("data")).unwrap();
        symlink("data", root.join("alias")).unwrap();
        assert_eq!(
            confined_in(&root, "alias/x.txt").unwrap(),
            real.join("data/x.txt")
        );
        // A dangling link to a missing file inside: the write lands inside.
        symlink("data/later.txt", root.join("later")).unwrap();
        assert_eq!(
            confined_in(&root, "later").unwrap(),
            real.join("data/later.txt")
        );
    }

    #[test]
    fn a_link_loop_is_refused() {
        let (_d, root, _) = dirs();
        symlink("b", root.join("a")).unwrap();
        symlink("a", root.join("b")).unwrap();
        assert!(confined_in(&root, "a").is_err());
    }
}
