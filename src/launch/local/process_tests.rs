//! Tests of the local child process: output, exit codes, interrupts, leftovers.

use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};

use super::*;

fn command(dir: &Path, script: &str) -> LocalCommand {
    LocalCommand {
        script: script.to_string(),
        shell: find_shell(std::env::var_os("PATH").as_deref()),
        cwd: dir.to_path_buf(),
        env: IndexMap::from([("NRL_TEST_VAR".to_string(), "from nrl".to_string())]),
        log: dir.join("driver.log"),
        stop_grace: Duration::from_secs(30),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Whether `pid` is gone (no such process, or a zombie nobody reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn wait_gone(pid: u32) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !gone(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "process {pid} survived"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn output_is_streamed_and_logged_and_the_exit_code_kept() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = command(
        dir.path(),
        "echo \"out $NRL_TEST_VAR in $(basename \"$PWD\")\"; echo err >&2; printf 'no newline'; exit 3",
    );
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (_tx, mut interrupts) = Interrupts::channel();
    let ended = runtime().block_on(async {
        let child = cmd.spawn().await.unwrap();
        assert!(child.pid() > 0);
        child
            .stream_until_exit(&mut out, &mut err, &mut interrupts)
            .await
            .unwrap()
    });
    assert_eq!(ended, Ended::Exited(3));
    let name = dir.path().file_name().unwrap().to_string_lossy();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        format!("out from nrl in {name}\nno newline")
    );
    assert_eq!(String::from_utf8(err).unwrap(), "err\n");
    let log = std::fs::read_to_string(dir.path().join("driver.log")).unwrap();
    assert!(log.contains("out from nrl") && log.contains("err\n") && log.contains("no newline"));
}

#[test]
fn a_signal_from_elsewhere_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = command(dir.path(), "kill -TERM $$");
    let (_tx, mut interrupts) = Interrupts::channel();
    let ended = runtime().block_on(async {
        let child = cmd.spawn().await.unwrap();
        child
            .stream_until_exit(&mut Vec::new(), &mut Vec::new(), &mut interrupts)
            .await
            .unwrap()
    });
    assert_eq!(ended, Ended::Signalled(128 + 15));
}

#[test]
fn background_leftovers_are_killed_when_the_entrypoint_ends() {
    let dir = tempfile::tempdir().unwrap();
    // The background sleep keeps stdout open; it must be killed, not waited for.
    let cmd = command(dir.path(), "sleep 300 & echo \"bg=$!\"");
    let (_tx, mut interrupts) = Interrupts::channel();
    let mut out = Vec::new();
    let ended = runtime().block_on(async {
        let child = cmd.spawn().await.unwrap();
        child
            .stream_until_exit(&mut out, &mut Vec::new(), &mut interrupts)
            .await
            .unwrap()
    });
    assert_eq!(ended, Ended::Exited(0));
    let text = String::from_utf8(out).unwrap();
    let bg: u32 = text.trim().strip_prefix("bg=").unwrap().parse().unwrap();
    wait_gone(bg);
}

#[test]
fn an_interrupt_stops_the_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    // A non-interactive shell's background jobs ignore SIGINT, so the sleep outlives the
    // forwarded interrupt and must be killed with the group.
    let cmd = command(
        dir.path(),
        "sleep 300 & echo \"bg=$!\"; echo \"fg=$$\"; echo ready; wait",
    );
    let rt = runtime();
    let (tx, mut interrupts) = Interrupts::channel();
    let (writer, reader) = tokio::io::duplex(64 * 1024);
    let (ended, pids) = rt.block_on(async move {
        let child = cmd.spawn().await.unwrap();
        let task = tokio::spawn(async move {
            let mut writer = writer;
            child
                .stream_until_exit(&mut writer, &mut tokio::io::sink(), &mut interrupts)
                .await
        });
        let mut lines = BufReader::new(reader).lines();
        let mut pids = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some((_, pid)) = line.split_once('=') {
                pids.push(pid.parse::<u32>().unwrap());
            }
            if line == "ready" {
                tx.send(()).unwrap();
            }
        }
        (task.await.unwrap().unwrap(), pids)
    });
    assert!(matches!(ended, Ended::Interrupted(_)), "{ended:?}");
    assert_eq!(pids.len(), 2);
    for pid in pids {
        wait_gone(pid);
    }
}

#[test]
fn a_second_interrupt_kills_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // Ignores SIGINT itself; with a 30 s grace only the second interrupt ends it.
    let cmd = command(
        dir.path(),
        "trap '' INT; echo ready; while :; do sleep 1; done",
    );
    let rt = runtime();
    let (tx, mut interrupts) = Interrupts::channel();
    let (writer, reader) = tokio::io::duplex(64 * 1024);
    let ended = rt.block_on(async move {
        let child = cmd.spawn().await.unwrap();
        let task = tokio::spawn(async move {
            let mut writer = writer;
            child
                .stream_until_exit(&mut writer, &mut tokio::io::sink(), &mut interrupts)
                .await
        });
        let mut lines = BufReader::new(reader).lines();
        while let Some(line) = lines.next_line().await.unwrap() {
            if line == "ready" {
                tx.send(()).unwrap();
                tx.send(()).unwrap();
            }
        }
        task.await.unwrap().unwrap()
    });
    assert_eq!(ended, Ended::Interrupted(128 + 9));
}

#[test]
fn dropping_a_running_child_kills_its_group() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = command(dir.path(), "sleep 300 & wait");
    let pid = runtime().block_on(async {
        let child = cmd.spawn().await.unwrap();
        child.pid()
    });
    wait_gone(pid);
}

#[test]
fn shell_lookup_prefers_bash_then_sh() {
    let dir = tempfile::tempdir().unwrap();
    let only_sh = dir.path().join("a");
    let both = dir.path().join("b");
    for (d, names) in [(&only_sh, &["sh"][..]), (&both, &["sh", "bash"][..])] {
        std::fs::create_dir_all(d).unwrap();
        for n in names {
            let p = d.join(n);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
    }
    // A non-executable bash is not a shell.
    std::fs::write(only_sh.join("bash"), "").unwrap();
    let path = std::env::join_paths([&only_sh, &both]).unwrap();
    assert_eq!(find_shell(Some(&path)), both.join("bash"));
    let path = std::env::join_paths([&only_sh]).unwrap();
    assert_eq!(find_shell(Some(&path)), only_sh.join("sh"));
    assert_eq!(find_shell(None), PathBuf::from("/bin/sh"));
}

/// A guard that kills and reaps a process the test started itself.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Kills `pid` when dropped, in case the run under test left it behind.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = i32::try_from(self.0)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

#[test]
fn a_process_that_escapes_into_a_new_session_is_ended_and_reaped() {
    let dir = tempfile::tempdir().unwrap();
    // A process of nrl's own that is not part of the run: it must survive the sweep.
    let bystander = Reaped(
        std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap(),
    );
    // Double fork (the subshell exits at once) into a new session, ignoring SIGTERM.
    let mut cmd = command(
        dir.path(),
        "(setsid sh -c 'trap \"\" TERM INT HUP; echo $$ > esc.tmp; mv esc.tmp esc.pid; exec sleep 300' &)\n\
         while [ ! -s esc.pid ]; do sleep 0.05; done; echo \"esc=$(cat esc.pid)\"",
    );
    cmd.stop_grace = Duration::from_millis(500);
    let (_tx, mut interrupts) = Interrupts::channel();
    let mut out = Vec::new();
    let finished = runtime().block_on(async {
        let child = cmd.spawn().await.unwrap();
        child
            .run_to_end(&mut out, &mut Vec::new(), &mut interrupts)
            .await
            .unwrap()
    });
    let text = String::from_utf8(out).unwrap();
    let esc: u32 = text
        .trim()
        .strip_prefix("esc=")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {text:?}"));
    let _guard = KillOnDrop(esc);
    assert_eq!(finished.ended, Ended::Exited(0));
    assert_eq!(finished.survivors, Vec::<u32>::new());
    // Ended by the time the run is over. (A test harness is no subreaper: init reaps
    // it. tests/it/run_local.rs checks that the nrl binary reaps it itself.)
    assert!(gone(esc), "escaped process {esc} is still running");
    assert!(
        !gone(bystander.0.id()),
        "the sweep ended a process not of the run"
    );
}
