//! A program driven through a pseudo-terminal, as a person at a keyboard would: keys
//! go in, everything the program draws is collected (escape sequences removed) and
//! tests wait for text to appear.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::fake_k8s::pty;

/// Longest wait for expected text.
const PATIENCE: Duration = Duration::from_secs(30);

pub const UP: &[u8] = b"\x1b[A";
pub const TAB: &[u8] = b"\t";
pub const ENTER: &[u8] = b"\r";
pub const CTRL_C: &[u8] = &[0x03];
pub const CTRL_D: &[u8] = &[0x04];

pub struct Terminal {
    child: Child,
    keyboard: std::fs::File,
    output: Arc<Mutex<Vec<u8>>>,
    /// Where the last `wait_for` matched: later waits look after it.
    seen: usize,
}

impl Terminal {
    /// Start `cmd` with a 120x40 pty as its controlling terminal and stdio.
    pub fn spawn(mut cmd: Command) -> Terminal {
        let term = pty::open().expect("a pty");
        pty::resize(term.leader.as_raw_fd(), 120, 40);
        let stdio = || Stdio::from(term.follower.try_clone().expect("dup follower"));
        cmd.stdin(stdio()).stdout(stdio()).stderr(stdio());
        // SAFETY: only async-signal-safe calls (setsid, ioctl) run between fork and exec.
        unsafe {
            cmd.pre_exec(pty::make_controlling_terminal);
        }
        let child = cmd.spawn().expect("the program starts");
        drop(term.follower);
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut leader = std::fs::File::from(term.leader.try_clone().expect("dup leader"));
        let sink = output.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = leader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Terminal {
            child,
            keyboard: std::fs::File::from(term.leader),
            output,
            seen: 0,
        }
    }

    /// Type `keys`.
    pub fn send(&mut self, keys: &[u8]) -> &mut Self {
        self.keyboard
            .write_all(keys)
            .expect("keys reach the terminal");
        self
    }

    /// Type a line and press Enter.
    pub fn line(&mut self, text: &str) -> &mut Self {
        self.send(text.as_bytes()).send(ENTER)
    }

    /// The program's process id (benches/top_idle reads its CPU time).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the program wrote so far, escape sequences included.
    pub fn raw(&self) -> Vec<u8> {
        self.output.lock().unwrap().clone()
    }

    /// Everything shown so far, without escape sequences.
    pub fn screen(&self) -> String {
        strip_escapes(&String::from_utf8_lossy(&self.output.lock().unwrap()))
    }

    /// Wait until `text` appears after the previous match; returns the screen text
    /// between the previous match and the end of this one.
    pub fn wait_for(&mut self, text: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen();
            if let Some(i) = screen.get(self.seen..).and_then(|s| s.find(text)) {
                let end = self.seen + i + text.len();
                let chunk = screen[self.seen..end].to_string();
                self.seen = end;
                return chunk;
            }
            assert!(
                Instant::now() < deadline,
                "`{text}` never appeared; the terminal after the last match:\n{}",
                screen.get(self.seen..).unwrap_or("")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait for the program to end.
    pub fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the program did not end; terminal:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Text without ANSI escape sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL`, and
/// two-byte `ESC x`) and carriage returns.
pub fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    for c in chars.by_ref() {
                        if c == '\x07' {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}
