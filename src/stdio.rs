//! The one way `nrl` writes to its stdout and stderr: [`outln!`](crate::outln),
//! [`out!`](crate::out), [`errln!`](crate::errln), [`err!`](crate::err). `print!` and
//! friends panic when the reader has gone (`nrl check … 2>&1 | head -1` ended with a
//! panic and exit 101); here a closed pipe is the reader's choice, not an error: the text
//! is dropped and the command carries on to its own exit code, so nothing it started is
//! left behind by an early exit. (ripgrep treats a broken pipe as success too.) Output
//! that must stop when nobody reads it (a followed log) checks [`stdout_closed`].
//!
//! The crate denies `clippy::print_stdout` and `clippy::print_stderr`, so nothing goes
//! around this module.

use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
static STDERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write to stdout found the pipe closed.
pub fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// Write to stdout (and flush, so interleaving with stderr stays in order).
pub fn write_out(args: fmt::Arguments<'_>) {
    write_to(&mut io::stdout().lock(), args, &STDOUT_CLOSED);
}

/// Write to stderr.
pub fn write_err(args: fmt::Arguments<'_>) {
    write_to(&mut io::stderr().lock(), args, &STDERR_CLOSED);
}

/// Write raw bytes to stdout (a log chunk, exactly as it came).
pub fn write_out_bytes(bytes: &[u8]) {
    write_bytes(&mut io::stdout().lock(), bytes, &STDOUT_CLOSED);
}

/// Write raw bytes to stderr.
pub fn write_err_bytes(bytes: &[u8]) {
    write_bytes(&mut io::stderr().lock(), bytes, &STDERR_CLOSED);
}

fn write_bytes(w: &mut dyn Write, bytes: &[u8], closed: &AtomicBool) {
    if closed.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = w.write_all(bytes).and_then(|()| w.flush()) {
        note_error(&e, closed);
    }
}

fn write_to(w: &mut dyn Write, args: fmt::Arguments<'_>, closed: &AtomicBool) {
    if closed.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = w.write_fmt(args).and_then(|()| w.flush()) {
        note_error(&e, closed);
    }
}

/// A closed pipe is remembered (later writes are skipped); any other write error (a full
/// disk behind a redirect) cannot be reported on the same stream either, so it is
/// dropped too.
fn note_error(e: &io::Error, closed: &AtomicBool) {
    if e.kind() == io::ErrorKind::BrokenPipe {
        closed.store(true, Ordering::Relaxed);
    }
}

/// `println!` that survives a closed stdout.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::stdio::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::stdio::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` that survives a closed stdout.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdio::write_out(format_args!($($arg)*))
    };
}

/// `eprintln!` that survives a closed stderr.
#[macro_export]
macro_rules! errln {
    () => {
        $crate::stdio::write_err(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::stdio::write_err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that survives a closed stderr.
#[macro_export]
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::stdio::write_err(format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose reader has gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_remembered_and_later_writes_are_skipped() {
        let closed = AtomicBool::new(false);
        write_to(&mut Closed, format_args!("first"), &closed);
        assert!(closed.load(Ordering::Relaxed));
        let mut sink = Vec::new();
        write_to(&mut sink, format_args!("second"), &closed);
        assert!(sink.is_empty());
    }

    #[test]
    fn other_errors_do_not_close_the_stream() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::from(io::ErrorKind::StorageFull))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let closed = AtomicBool::new(false);
        write_to(&mut Full, format_args!("x"), &closed);
        assert!(!closed.load(Ordering::Relaxed));
    }
}
