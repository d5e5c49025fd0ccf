//! The local end of an interactive exec: raw mode with guaranteed restore, the window
//! size, and a stdin reader that stops when the session ends.

use std::os::fd::RawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;

/// Puts a terminal into raw mode and restores the saved settings when dropped — on
/// every way out of the session, panics included.
pub struct RawMode {
    fd: RawFd,
    saved: libc::termios,
}

impl RawMode {
    /// Raw mode on `fd`; `None` when it is not a terminal.
    pub fn enable(fd: RawFd) -> Option<RawMode> {
        // SAFETY: isatty only inspects the descriptor.
        if unsafe { libc::isatty(fd) } != 1 {
            return None;
        }
        // SAFETY: termios is plain data; tcgetattr fills it or fails.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `saved` is a valid termios to write into.
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return None;
        }
        let mut raw = saved;
        // SAFETY: cfmakeraw only edits the struct it is given.
        unsafe { libc::cfmakeraw(&mut raw) };
        // SAFETY: `raw` is a valid termios derived from the current settings.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        Some(RawMode { fd, saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the settings read in `enable` on the same descriptor.
        unsafe {
            libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved);
        }
    }
}

/// (columns, rows) of the terminal on stdout, else stdin.
pub fn window_size() -> Option<(u16, u16)> {
    [libc::STDOUT_FILENO, libc::STDIN_FILENO]
        .into_iter()
        .find_map(|fd| {
            // SAFETY: winsize is plain data; TIOCGWINSZ fills it or fails.
            let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
            // SAFETY: TIOCGWINSZ writes a winsize into the pointer given.
            let rc = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
            (rc == 0 && ws.ws_col > 0 && ws.ws_row > 0).then_some((ws.ws_col, ws.ws_row))
        })
}

/// Reads stdin on its own thread and hands chunks over; `None` is end of input. The
/// thread polls with a short timeout so it stops soon after the receiver is dropped or
/// [`StdinReader::stop`] is called, instead of swallowing the user's next keystroke.
pub struct StdinReader {
    stop: Arc<AtomicBool>,
}

impl StdinReader {
    pub fn start() -> (StdinReader, mpsc::Receiver<Option<Vec<u8>>>) {
        let (tx, rx) = mpsc::channel(16);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("nrl-stdin".into())
            .spawn(move || read_loop(&flag, &tx));
        if spawned.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        (StdinReader { stop }, rx)
    }

    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Drop for StdinReader {
    fn drop(&mut self) {
        self.stop();
    }
}

fn read_loop(stop: &AtomicBool, tx: &mpsc::Sender<Option<Vec<u8>>>) {
    let poll_ms = Duration::from_millis(100).as_millis() as libc::c_int;
    let mut buf = vec![0u8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) && !tx.is_closed() {
        let mut pfd = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, a bounded timeout.
        let ready = unsafe { libc::poll(&mut pfd, 1, poll_ms) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            let _ = tx.blocking_send(None);
            return;
        }
        if ready == 0 {
            continue;
        }
        // SAFETY: reads at most buf.len() bytes into buf.
        let n = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            let _ = tx.blocking_send(None);
            return;
        }
        let chunk = (n > 0).then(|| buf[..n as usize].to_vec());
        let eof = chunk.is_none();
        if tx.blocking_send(chunk).is_err() || eof {
            return;
        }
    }
}
