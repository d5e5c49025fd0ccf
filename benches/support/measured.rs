//! nrl as a child process whose peak RSS is its own. A bench that holds the fake API
//! server is large, and on Linux a child's `ru_maxrss` counts the memory of the process it
//! was forked from (exec keeps the old address space's high-water mark), so a child spawned
//! from the bench reads as at least the bench's size. The child is therefore started by
//! this same bench binary re-executed as a small spawner (`--spawn-measured`), which
//! reports the child's wall time, CPU time, peak RSS and exit code on its stdout.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SPAWN_FLAG: &str = "--spawn-measured";

/// What one run of nrl cost.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    pub wall: Duration,
    /// User + system CPU time of nrl itself.
    pub cpu: Duration,
    pub peak_rss_kib: i64,
    pub exit: i32,
}

fn tv(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// First thing in a bench's `main`: when this process is the spawner, run the command
/// after the flag (stdio discarded), print its usage and exit.
// The child is reaped by `wait4` (which also gives its rusage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
pub fn spawner_main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some(SPAWN_FLAG) {
        return;
    }
    let started = Instant::now();
    let child = Command::new(&args[2])
        .args(&args[3..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn nrl");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: plain wait4 on our own child; `usage` is a zeroed, owned struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 failed");
    let exit = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    println!(
        "{} {} {} {exit}",
        started.elapsed().as_micros(),
        (tv(usage.ru_utime) + tv(usage.ru_stime)).as_micros(),
        usage.ru_maxrss
    );
    std::process::exit(0);
}

/// Run nrl with `args`, its environment and directory set by `configure` (applied to the
/// spawner, whose child inherits them).
pub fn measured(args: &[&str], configure: impl FnOnce(&mut Command)) -> Usage {
    let mut spawner = Command::new(std::env::current_exe().expect("the bench binary"));
    spawner
        .arg(SPAWN_FLAG)
        .arg(env!("CARGO_BIN_EXE_nrl"))
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    configure(&mut spawner);
    let out = spawner.output().expect("run the spawner");
    let text = String::from_utf8_lossy(&out.stdout);
    let f: Vec<i64> = text
        .split_whitespace()
        .map(|v| v.parse().expect("a number"))
        .collect();
    assert_eq!(f.len(), 4, "the spawner said {text:?}");
    Usage {
        wall: Duration::from_micros(f[0] as u64),
        cpu: Duration::from_micros(f[1] as u64),
        peak_rss_kib: f[2],
        exit: f[3] as i32,
    }
}
