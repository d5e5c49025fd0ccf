//! Where a launch reports what it is doing. Library functions never print: they send
//! status lines and the job's own output here, so the CLI shows them on a terminal and a
//! Rhai script or a test collects them.

use std::io::Write;

/// Receives a launch's output.
pub trait Output: Send {
    /// One status line (no trailing newline), e.g. `[rayjob] applying RayJob x in ns`.
    fn status(&mut self, line: &str);
    /// A chunk of the job's own output (the driver log), written as it comes.
    fn log(&mut self, chunk: &str);
}

/// Status lines to stderr, the job's output to stdout (so `nrl run … > log` captures the
/// driver log alone).
#[derive(Debug, Default, Clone, Copy)]
pub struct Console;

impl Output for Console {
    fn status(&mut self, line: &str) {
        eprintln!("{line}");
    }

    fn log(&mut self, chunk: &str) {
        let mut out = std::io::stdout().lock();
        // A reader that went away (`| head`) must not abort the launch.
        let _ = out.write_all(chunk.as_bytes()).and_then(|_| out.flush());
    }
}

/// Keeps everything in memory (tests, scripts).
#[derive(Debug, Default, Clone)]
pub struct Collect {
    pub lines: Vec<String>,
    pub log: String,
}

impl Output for Collect {
    fn status(&mut self, line: &str) {
        self.lines.push(line.to_string());
    }

    fn log(&mut self, chunk: &str) {
        self.log.push_str(chunk);
    }
}

/// Discards everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl Output for Quiet {
    fn status(&mut self, _line: &str) {}
    fn log(&mut self, _chunk: &str) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collect_keeps_status_lines_and_the_log_apart() {
        let mut c = Collect::default();
        c.status("[x] status");
        c.log("line 1\n");
        c.log("line 2\n");
        assert_eq!(c.lines, ["[x] status"]);
        assert_eq!(c.log, "line 1\nline 2\n");
    }
}
