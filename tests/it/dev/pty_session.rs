//! An interactive session: `nrl dev connect` driven through a pseudo-terminal, as a user's
//! terminal would drive it.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::dev_env::*;
use crate::support::fake_k8s::pty;

/// What the remote side runs: report the terminal, wait for the initial size and for a
/// resize, read a line, then wait for Ctrl-C, which must reach it (and not kill nrl).
const SCRIPT: &str = r#"
test -t 0 && echo tty-ok
wait_size() { i=0; while [ "$(stty size)" != "$1" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; echo "size $(stty size)"; }
wait_size "40 100"
wait_size "50 120"
read line; echo "got:$line"
trap 'echo got-sigint; exit 5' INT
echo armed
while :; do sleep 0.1; done
"#;

fn lflag(fd: &OwnedFd) -> libc::tcflag_t {
    // SAFETY: termios is plain data; tcgetattr fills it for a valid terminal fd.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is an open pty follower.
    assert_eq!(unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut t) }, 0);
    t.c_lflag
}

fn wait_for(output: &Mutex<Vec<u8>>, marker: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = String::from_utf8_lossy(&output.lock().unwrap()).into_owned();
        if text.contains(marker) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "`{marker}` never appeared; terminal so far:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_interactive_session_through_a_pseudo_terminal() {
    let env = DevEnv::new();
    let term = pty::open().expect("a pty");
    pty::resize(term.leader.as_raw_fd(), 100, 40);
    let stdio = || Stdio::from(term.follower.try_clone().expect("dup follower"));
    let mut cmd = env.command();
    cmd.args(["dev", "connect", "--", "sh", "-c", SCRIPT])
        .stdin(stdio())
        .stdout(stdio())
        .stderr(stdio());
    // SAFETY: only async-signal-safe calls (setsid, ioctl) run between fork and exec.
    unsafe {
        cmd.pre_exec(pty::make_controlling_terminal);
    }
    let mut child = cmd.spawn().expect("nrl starts");
    let cooked = lflag(&term.follower);
    assert!(cooked & libc::ICANON != 0 && cooked & libc::ECHO != 0);

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
    let mut keyboard = std::fs::File::from(term.leader.try_clone().expect("dup leader"));

    wait_for(&output, "tty-ok");
    let raw = lflag(&term.follower);
    assert!(
        raw & libc::ICANON == 0 && raw & libc::ECHO == 0,
        "the local terminal is in raw mode during the session"
    );
    wait_for(&output, "size 40 100");
    // Resizing the local terminal sends SIGWINCH to nrl, which passes the size on.
    pty::resize(term.leader.as_raw_fd(), 120, 50);
    wait_for(&output, "size 50 120");
    keyboard.write_all(b"hello\r").unwrap();
    wait_for(&output, "got:hello");
    wait_for(&output, "armed");
    // Ctrl-C is a byte for the remote program, not a signal for nrl.
    keyboard.write_all(&[0x03]).unwrap();
    wait_for(&output, "got-sigint");

    let status = child.wait().expect("nrl ends");
    // The reader thread may still be draining the leader when nrl has exited.
    wait_for(&output, "still running; stop it with: nrl dev stop");
    let text = String::from_utf8_lossy(&output.lock().unwrap()).into_owned();
    assert_eq!(status.code(), Some(5), "the remote exit code: {text}");
    let restored = lflag(&term.follower);
    assert_eq!(restored, cooked, "the terminal settings are restored");
}
