//! A pseudo-terminal for `exec` with `tty=true`.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Both ends of a new pty; the child gets the follower as its stdio.
pub struct Pty {
    pub leader: OwnedFd,
    pub follower: OwnedFd,
}

pub fn open() -> std::io::Result<Pty> {
    let mut leader: RawFd = -1;
    let mut follower: RawFd = -1;
    // SAFETY: openpty writes two fds into the out-parameters; null name/termios/winsize are
    // allowed.
    let rc = unsafe {
        libc::openpty(
            &mut leader,
            &mut follower,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds were just opened by openpty and are owned by nobody else.
    Ok(unsafe {
        Pty {
            leader: OwnedFd::from_raw_fd(leader),
            follower: OwnedFd::from_raw_fd(follower),
        }
    })
}

/// Set the terminal size (the resize channel of exec).
pub fn resize(fd: RawFd, width: u16, height: u16) {
    let ws = libc::winsize {
        ws_row: height,
        ws_col: width,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads a winsize struct; a bad fd only makes the call fail.
    unsafe {
        libc::ioctl(fd, libc::TIOCSWINSZ, &ws);
    }
}

/// In the child, before exec: new session, and the pty as controlling terminal.
pub fn make_controlling_terminal() -> std::io::Result<()> {
    // SAFETY: setsid and ioctl(TIOCSCTTY) are async-signal-safe, fit for pre_exec.
    unsafe {
        if libc::setsid() < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
