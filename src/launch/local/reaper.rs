//! Processes a local run started, wherever they went: nrl is a child subreaper while a
//! local run is active (Linux `PR_SET_CHILD_SUBREAPER`), so a process that double-forks
//! into a new session reparents to nrl instead of init and stays findable. At the end of
//! the run every such descendant is ended (SIGTERM, a grace period, SIGKILL) and reaped.
//!
//! A process belongs to a run when it carries the run's tag in its environment
//! ([`TAG_VAR`], inherited through fork and exec; found anywhere in `/proc`, so also
//! without the subreaper), or descends from the entrypoint, or is a descendant of nrl in
//! the entrypoint's process group. Other processes (another run's, or those of tests
//! running side by side in one process) are left alone.
//!
//! Only the `nrl` binary becomes a subreaper ([`allow_subreaper`]): in a library user or
//! a test harness, orphans of unrelated code would reparent to the process and stay
//! zombies, since only the run's own processes are reaped here.
//!
//! Also the process identity of records: a pid with its start time (`/proc/<pid>/stat`
//! field 22, clock ticks since boot), since a pid alone can be reused.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The environment variable carrying a run's process tag.
pub const TAG_VAR: &str = "NRL_LOCAL_PROCESS_TAG";

/// A process: its pid and start time, which together name it for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProcessId {
    pub pid: u32,
    /// Clock ticks since boot (`/proc/<pid>/stat` field 22).
    pub start_time: u64,
}

impl ProcessId {
    /// This process.
    pub fn this() -> Option<ProcessId> {
        ProcessId::of(std::process::id())
    }

    /// `pid` as it is now, if it exists.
    pub fn of(pid: u32) -> Option<ProcessId> {
        stat(pid).map(|s| ProcessId {
            pid,
            start_time: s.start_time,
        })
    }

    /// Whether this very process still runs (a zombie has ended).
    pub fn is_alive(&self) -> bool {
        stat(self.pid).is_some_and(|s| s.start_time == self.start_time && s.state != 'Z')
    }
}

/// The fields of `/proc/<pid>/stat` nrl uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub state: char,
    pub ppid: u32,
    pub pgrp: u32,
    pub start_time: u64,
}

/// Parse one `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and
/// may contain spaces and parentheses, so the fields after it start at the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state): field N is fields[N - 3].
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// The stat of `pid`, if it exists (and /proc is there).
pub fn stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process of `/proc` with its stat.
fn all_processes() -> HashMap<u32, Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect()
}

/// The descendants of `root` in `procs` (not `root` itself).
fn descendants_in(procs: &HashMap<u32, Stat>, root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, s) in procs {
        children.entry(s.ppid).or_default().push(pid);
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    let mut seen = HashSet::from([root]);
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).into_iter().flatten() {
            if seen.insert(c) {
                out.push(c);
                todo.push(c);
            }
        }
    }
    out
}

fn has_tag(pid: u32, tag: &str) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want = format!("{TAG_VAR}={tag}");
    environ.split(|&b| b == 0).any(|kv| kv == want.as_bytes())
}

/// A fresh tag for a run's processes: unique within this machine for this boot.
pub fn new_tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let me = ProcessId::this().map_or(0, |p| p.start_time);
    format!(
        "{}-{me}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Subreaper for as long as any guard lives (runs may overlap within one process).
pub struct Subreaper {
    active: bool,
}

static SUBREAPER_USERS: Mutex<usize> = Mutex::new(0);
static SUBREAPER_ALLOWED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Let local runs make this process a child subreaper (the `nrl` binary calls this).
pub fn allow_subreaper() {
    SUBREAPER_ALLOWED.store(true, Ordering::Relaxed);
}

impl Subreaper {
    /// Make this process a child subreaper. Where that is not possible (not Linux) the
    /// run still works; escaped processes then reparent to init, out of nrl's reach.
    pub fn enable() -> Subreaper {
        if !SUBREAPER_ALLOWED.load(Ordering::Relaxed) {
            return Subreaper { active: false };
        }
        let mut users = SUBREAPER_USERS.lock().unwrap_or_else(|e| e.into_inner());
        if *users == 0 && !set_subreaper(true) {
            tracing::debug!("cannot become a child subreaper");
            return Subreaper { active: false };
        }
        *users += 1;
        Subreaper { active: true }
    }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        let mut users = SUBREAPER_USERS.lock().unwrap_or_else(|e| e.into_inner());
        *users = users.saturating_sub(1);
        if *users == 0 {
            set_subreaper(false);
        }
    }
}

#[cfg(target_os = "linux")]
fn set_subreaper(on: bool) -> bool {
    let pid = if on {
        Some(rustix::process::getpid())
    } else {
        None
    };
    rustix::process::set_child_subreaper(pid).is_ok()
}

#[cfg(not(target_os = "linux"))]
fn set_subreaper(_on: bool) -> bool {
    false
}

/// The processes of one run still around.
pub struct RunProcesses {
    /// The run's tag ([`TAG_VAR`]).
    pub tag: String,
    /// The entrypoint (also its process group id).
    pub leader: u32,
    /// The tokio child (never reaped here: its `wait` owns its status).
    claimed: HashSet<ProcessId>,
    /// Set once `end_all` ran to its end; until then dropping kills what is left.
    ended: bool,
}

impl RunProcesses {
    pub fn new(tag: String, leader: u32) -> RunProcesses {
        RunProcesses {
            tag,
            leader,
            claimed: HashSet::new(),
            ended: false,
        }
    }

    /// The run's processes now (living ones and zombies claimed earlier), without the
    /// entrypoint itself.
    fn scan(&mut self) -> Vec<(ProcessId, Stat)> {
        let procs = all_processes();
        let me = std::process::id();
        let mut theirs: HashSet<u32> = descendants_in(&procs, self.leader).into_iter().collect();
        let mine: HashSet<u32> = descendants_in(&procs, me).into_iter().collect();
        for (&pid, s) in &procs {
            if pid == self.leader || pid == me {
                continue;
            }
            let id = ProcessId {
                pid,
                start_time: s.start_time,
            };
            if (mine.contains(&pid) && s.pgrp == self.leader)
                || self.claimed.contains(&id)
                || has_tag(pid, &self.tag)
            {
                theirs.insert(pid);
            }
        }
        theirs.remove(&self.leader);
        let mut out = Vec::new();
        for pid in theirs {
            let Some(&s) = procs.get(&pid) else { continue };
            let id = ProcessId {
                pid,
                start_time: s.start_time,
            };
            self.claimed.insert(id);
            out.push((id, s));
        }
        out
    }

    /// End every process of the run: SIGTERM, then SIGKILL after `grace` for those still
    /// running, reaping the ones that became nrl's children. Returns the pids that
    /// survived even SIGKILL (empty when all are gone).
    pub async fn end_all(&mut self, grace: Duration) -> Vec<u32> {
        const PAUSE: Duration = Duration::from_millis(20);
        const KILL_WAIT: Duration = Duration::from_secs(5);
        let start = tokio::time::Instant::now();
        let mut killing = false;
        let mut termed: HashSet<ProcessId> = HashSet::new();
        loop {
            let living = self.pass(if killing { Some(Sig::Kill) } else { None }, &mut termed);
            if living.is_empty() {
                self.ended = true;
                return Vec::new();
            }
            let waited = start.elapsed();
            if !killing && waited >= grace {
                killing = true;
                continue;
            }
            if killing && waited >= grace + KILL_WAIT {
                self.ended = true;
                return living.into_iter().map(|p| p.pid).collect();
            }
            tokio::time::sleep(PAUSE).await;
        }
    }

    /// One pass: reap our zombies, TERM the new living ones (or KILL all with `force`);
    /// returns the living ones.
    fn pass(&mut self, force: Option<Sig>, termed: &mut HashSet<ProcessId>) -> Vec<ProcessId> {
        let me = std::process::id();
        let mut living = Vec::new();
        for (id, s) in self.scan() {
            if s.state == 'Z' {
                if s.ppid == me {
                    reap(id.pid);
                }
                continue;
            }
            living.push(id);
            if force.is_some() {
                signal(id.pid, Sig::Kill);
            } else if termed.insert(id) {
                signal(id.pid, Sig::Term);
            }
        }
        living
    }
}

impl Drop for RunProcesses {
    /// An error or panic in nrl must not leave the run's processes behind: one SIGKILL
    /// pass (no waiting; the group guard kills the group too).
    fn drop(&mut self) {
        if !self.ended {
            self.pass(Some(Sig::Kill), &mut HashSet::new());
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Sig {
    Term,
    Kill,
}

fn signal(pid: u32, sig: Sig) {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process};
        let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
            return;
        };
        let sig = match sig {
            Sig::Term => Signal::TERM,
            Sig::Kill => Signal::KILL,
        };
        // ESRCH: it is gone already.
        let _ = kill_process(p, sig);
    }
    #[cfg(not(unix))]
    let _ = (pid, sig);
}

fn reap(pid: u32) {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, WaitOptions, waitpid};
        if let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
            let _ = waitpid(Some(p), WaitOptions::NOHANG);
        }
    }
    #[cfg(not(unix))]
    let _ = pid;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_past_odd_command_names() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 10 18446744073709551615";
        let s = parse_stat(line).unwrap();
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.pgrp, 4242);
        assert_eq!(s.start_time, 987654);
        assert_eq!(parse_stat("12 (x) S 1"), None);
    }

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not_it() {
        let me = ProcessId::this().unwrap();
        assert!(me.is_alive());
        let other = ProcessId {
            start_time: me.start_time + 1,
            ..me
        };
        assert!(!other.is_alive());
    }
}
