//! Where a script's output goes: the terminal for `nrl script`, a buffer for tests.

use std::sync::Mutex;

/// Which of the two output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Results: `print`, tables, followed logs, the plan.
    Stdout,
    /// Commentary: log lines, `$ cmd` echoes, progress, banners.
    Stderr,
}

/// A sink for script output. Text is written as given (callers add newlines).
pub trait Output: Send + Sync {
    fn write(&self, stream: Stream, text: &str);

    /// Whether `stream` is an interactive terminal (progress bars, colour).
    fn is_terminal(&self, _stream: Stream) -> bool {
        false
    }
}

/// The process's stdout and stderr. A closed pipe (`| head`) is not an error.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdOutput;

impl Output for StdOutput {
    fn write(&self, stream: Stream, text: &str) {
        match stream {
            Stream::Stdout => crate::stdio::write_out_bytes(text.as_bytes()),
            Stream::Stderr => crate::stdio::write_err_bytes(text.as_bytes()),
        }
    }

    fn is_terminal(&self, stream: Stream) -> bool {
        use std::io::IsTerminal;
        match stream {
            Stream::Stdout => std::io::stdout().is_terminal(),
            Stream::Stderr => std::io::stderr().is_terminal(),
        }
    }
}

/// Output kept in memory, for tests and embedding.
#[derive(Debug, Default)]
pub struct CapturedOutput {
    stdout: Mutex<String>,
    stderr: Mutex<String>,
}

impl CapturedOutput {
    pub fn new() -> CapturedOutput {
        CapturedOutput::default()
    }

    pub fn stdout(&self) -> String {
        self.stdout.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Output for CapturedOutput {
    fn write(&self, stream: Stream, text: &str) {
        let buf = match stream {
            Stream::Stdout => &self.stdout,
            Stream::Stderr => &self.stderr,
        };
        if let Ok(mut b) = buf.lock() {
            b.push_str(text);
        }
    }
}
