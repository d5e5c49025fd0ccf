//! Where a launch reports what it is doing: status lines through a [`Progress`] (a spinner
//! for steps in flight on a terminal, plain lines otherwise, captured in tests and
//! scripts) and the job's own output (the driver log) as it streams. Library functions
//! never print directly.

use super::progress::Progress;

/// Receives a launch's output.
pub trait Output: Send {
    /// Status lines and steps; also what the `launch::raycluster` functions report through.
    fn progress(&self) -> &Progress;

    /// One status line (no trailing newline), e.g. `[rayjob] applying RayJob x in ns`.
    fn status(&mut self, line: &str) {
        self.progress().line(line);
    }

    /// A chunk of the job's own output (the driver log), written as it comes.
    fn log(&mut self, chunk: &str);
}

/// Status to stderr (a spinner on a terminal), the job's output to stdout (so
/// `nrl run … > log` captures the driver log alone).
#[derive(Debug, Clone)]
pub struct Console {
    progress: Progress,
}

impl Console {
    pub fn new() -> Console {
        Console {
            progress: Progress::auto(),
        }
    }
}

impl Default for Console {
    fn default() -> Self {
        Console::new()
    }
}

impl Output for Console {
    fn progress(&self) -> &Progress {
        &self.progress
    }

    fn log(&mut self, chunk: &str) {
        // A reader that went away (`| head`) must not abort the launch.
        crate::stdio::write_out_bytes(chunk.as_bytes());
    }
}

/// Keeps everything in memory (tests, scripts).
#[derive(Debug, Clone)]
pub struct Collect {
    progress: Progress,
    pub log: String,
}

impl Collect {
    pub fn new() -> Collect {
        Collect {
            progress: Progress::capture(),
            log: String::new(),
        }
    }

    /// The status lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.progress.lines()
    }
}

impl Default for Collect {
    fn default() -> Self {
        Collect::new()
    }
}

impl Output for Collect {
    fn progress(&self) -> &Progress {
        &self.progress
    }

    fn log(&mut self, chunk: &str) {
        self.log.push_str(chunk);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collect_keeps_status_lines_and_the_log_apart() {
        let mut c = Collect::new();
        c.status("[x] status");
        c.progress().line("[cluster] line");
        c.log("line 1\n");
        c.log("line 2\n");
        assert_eq!(c.lines(), ["[x] status", "[cluster] line"]);
        assert_eq!(c.log, "line 1\nline 2\n");
    }
}
