//! Where a launch reports what it is doing. Library functions never print: they send
//! status lines and the job's own output here, so the CLI shows them on a terminal and a
//! Rhai script or a test collects them.

use std::io::Write;

/// Receives a launch's output.
pub trait Progress: Send {
    /// One status line (no trailing newline), e.g. `[rayjob] applying RayJob x in ns`.
    fn status(&mut self, line: &str);
    /// A chunk of the job's own output (the driver log), written as it comes.
    fn log(&mut self, chunk: &str);
}

/// Status lines to stderr, the job's output to stdout (so `nrl run … > log` captures the
/// driver log alone).
#[derive(Debug, Default, Clone, Copy)]
pub struct Console;

impl Progress for Console {
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

impl Progress for Collect {
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

impl Progress for Quiet {
    fn status(&mut self, _line: &str) {}
    fn log(&mut self, _chunk: &str) {}
}

/// The job output side of a [`Progress`] as an `io::Write` (for the Ray log follower),
/// optionally copied into a file (the run directory's `driver.log`).
pub struct LogWriter<'a> {
    progress: &'a mut dyn Progress,
    copy: Option<std::fs::File>,
    /// Everything written, kept for the launch checklist.
    pub captured: String,
    capture: bool,
}

impl<'a> LogWriter<'a> {
    pub fn new(progress: &'a mut dyn Progress, copy: Option<std::fs::File>, capture: bool) -> Self {
        LogWriter {
            progress,
            copy,
            captured: String::new(),
            capture,
        }
    }

    /// A status line through the same progress sink.
    pub fn status(&mut self, line: &str) {
        self.progress.status(line);
    }
}

impl Write for LogWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.progress.log(&text);
        if self.capture {
            self.captured.push_str(&text);
        }
        if let Some(f) = self.copy.as_mut() {
            // The copy is a convenience: a full disk must not stop the stream.
            let _ = f.write_all(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if let Some(f) = self.copy.as_mut() {
            let _ = f.flush();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_writer_tees_to_progress_capture_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("driver.log");
        let mut sink = Collect::default();
        let file = std::fs::File::create(&path).unwrap();
        let mut w = LogWriter::new(&mut sink, Some(file), true);
        w.write_all(b"line 1\n").unwrap();
        w.status("[x] status");
        w.write_all(b"line 2\n").unwrap();
        w.flush().unwrap();
        let captured = w.captured.clone();
        drop(w);
        assert_eq!(captured, "line 1\nline 2\n");
        assert_eq!(sink.log, "line 1\nline 2\n");
        assert_eq!(sink.lines, ["[x] status"]);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "line 1\nline 2\n");
    }
}
