//! Unit tests of the exec submitter's scripts (ref-orchestration §10.4 "ExecLauncher" and
//! "ExecObservability"), run for real with the local bash where they matter.

use super::*;
use std::process::Command;

fn env(pairs: &[(&str, &str)]) -> IndexMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn launch<'a>(entry: &'a str, env: &'a IndexMap<String, String>) -> ExecLaunch<'a> {
    ExecLaunch {
        run_id: "rid-4",
        entrypoint: entry,
        env,
        workdir: None,
        recipe_yaml: None,
        tmp_root: "/tmp",
    }
}

/// Write the run's scripts into `dir` and run the launcher there with the local bash.
fn run_locally(dir: &std::path::Path, l: &ExecLaunch) -> (i32, String) {
    let d = dir.to_str().unwrap();
    std::fs::write(dir.join("launch.sh"), launcher(l.run_id, d, l.env).unwrap()).unwrap();
    std::fs::write(dir.join("entrypoint.sh"), entry_script(l, d)).unwrap();
    if let Some(r) = l.recipe_yaml {
        std::fs::write(dir.join(STAGED_RECIPE), r).unwrap();
    }
    let out = Command::new("bash")
        .arg(dir.join("launch.sh"))
        .current_dir(dir)
        .output()
        .unwrap();
    let recorded = std::fs::read_to_string(dir.join("exitcode")).unwrap_or_default();
    (
        recorded.trim().parse().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn run_dir_forms() {
    assert_eq!(run_dir("/scratch/", "rid-7"), "/scratch/nrl-rid-7");
    assert_eq!(run_dir("", "r"), "/tmp/nrl-r");
    assert_eq!(run_dir("/", "r"), "/tmp/nrl-r");
}

/// Regression of ref §11 D4: a failing command under `set -eu` used to end the launcher
/// before it wrote `exitcode`, so the run read as "stopped".
#[test]
fn a_failing_entrypoint_under_set_eu_records_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let e = env(&[]);
    let (code, _) = run_locally(dir.path(), &launch("set -eu\nfalse\necho not reached", &e));
    assert_eq!(code, 1);
    let (code, _) = run_locally(dir.path(), &launch("exit 7", &e));
    assert_eq!(code, 7);
    let (code, out) = run_locally(dir.path(), &launch("echo ok", &e));
    assert_eq!((code, out.as_str()), (0, "ok\n"));
}

/// 10.4 #8: values with spaces, `$` and quotes reach the entrypoint unchanged, and the
/// run-id variables are exported (a user value wins).
#[test]
fn launcher_exports_env_vars_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let e = env(&[
        ("SIMPLE", "value"),
        ("HAS_SPACES", "foo bar"),
        ("HAS_DOLLAR", "$PATH"),
        ("HAS_QUOTES", "it's fine"),
        ("NRL_K8S_RUN_ID", "user-wins"),
    ]);
    let entry = "printf '%s|' \"$SIMPLE\" \"$HAS_SPACES\" \"$HAS_DOLLAR\" \"$HAS_QUOTES\" \"$NRL_RUN_ID\" \"$NRL_K8S_RUN_ID\"";
    let (code, out) = run_locally(dir.path(), &launch(entry, &e));
    assert_eq!(code, 0);
    assert_eq!(out, "value|foo bar|$PATH|it's fine|rid-4|user-wins|");
    let text = launcher("rid-4", "/tmp/nrl-rid-4", &e).unwrap();
    assert!(text.contains("export SIMPLE=value\n"), "{text}");
    assert!(text.contains("export HAS_SPACES='foo bar'\n"));
    assert!(text.contains("export HAS_DOLLAR='$PATH'\n"));
}

/// 10.4 #9: the launcher records `$ec` and ends with `exit "$ec"`.
#[test]
fn launcher_writes_exitcode_and_exits_with_it() {
    let text = launcher("rid-4", "/tmp/nrl-rid-4", &env(&[])).unwrap();
    assert!(text.contains(
        "> /tmp/nrl-rid-4/exitcode.tmp && mv /tmp/nrl-rid-4/exitcode.tmp /tmp/nrl-rid-4/exitcode"
    ));
    assert!(text.trim_end().ends_with("exit \"$ec\""));
    assert!(text.starts_with("#!/usr/bin/env bash\n"));
}

#[test]
fn entrypoint_reads_the_staged_recipe_and_runs_in_the_code_path() {
    let dir = tempfile::tempdir().unwrap();
    let code_dir = dir.path().join("code");
    std::fs::create_dir(&code_dir).unwrap();
    std::fs::write(code_dir.join("marker"), "here").unwrap();
    let e = env(&[]);
    let mut l = launch("python train.py --config conf/x.yaml", &e);
    let code_path = code_dir.to_str().unwrap().to_string();
    l.workdir = Some(&code_path);
    l.recipe_yaml = Some("grpo:\n  max_num_steps: 2\n");
    let script = entry_script(&l, "/R");
    assert!(script.contains(&format!("cd {} || exit 1\n", shell_quote(&code_path))));
    assert!(script.contains("--config /R/nrl_run.yaml"), "{script}");
    let mut l2 = launch("cat marker", &e);
    l2.workdir = Some(&code_path);
    let (code, out) = run_locally(dir.path(), &l2);
    assert_eq!((code, out.as_str()), (0, "here"));
    let mut l3 = launch("true", &e);
    l3.workdir = Some("/definitely/not/here");
    assert_eq!(
        run_locally(dir.path(), &l3).0,
        1,
        "a missing code path fails the run"
    );
}

/// 10.4 #13: following uses `tail -F` (follows a rotated or not yet created file), never
/// `-f`, and ends when the launcher is gone (ref §11 D3: it used to never end).
#[test]
fn follow_uses_tail_capital_f_and_ends_with_the_run() {
    assert!(TAIL.contains("tail -n +1 -F \"$d/stdout.log\""));
    assert!(!TAIL.contains(" -f "));
    assert!(TAIL.contains("kill -0 \"$pid\""));
}

/// 10.4 #14: the probe's answers, anything else is not understood.
#[test]
fn status_probe_answers() {
    assert_eq!(parse_state("running\n"), Some(ExecState::Running));
    assert_eq!(parse_state("exited 0\n"), Some(ExecState::Exited(0)));
    assert_eq!(parse_state("exited 143"), Some(ExecState::Exited(143)));
    assert_eq!(parse_state("killed"), Some(ExecState::Killed));
    assert_eq!(parse_state("missing"), Some(ExecState::Missing));
    assert_eq!(parse_state("garbage\n"), None);
}

/// The probe and stop scripts, run for real against a local process group.
#[test]
fn probe_and_stop_scripts_work_on_a_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let probe = |d: &str| {
        let out = Command::new("sh")
            .args(["-c", PROBE, "sh", d])
            .output()
            .unwrap();
        parse_state(&String::from_utf8_lossy(&out.stdout)).unwrap()
    };
    assert_eq!(probe(d), ExecState::Missing);
    let e = env(&[]);
    let l = launch("sleep 30 & wait", &e);
    std::fs::write(
        dir.path().join("launch.sh"),
        launcher("rid-4", d, &e).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.path().join("entrypoint.sh"), entry_script(&l, d)).unwrap();
    let start = Command::new("bash")
        .args([
            "-c",
            "set -m; nohup bash \"$1/launch.sh\" </dev/null >\"$1/stdout.log\" 2>&1 & echo $! > \"$1/pid\"; echo $!",
            "bash",
            d,
        ])
        .output()
        .unwrap();
    let pid: i32 = String::from_utf8_lossy(&start.stdout)
        .trim()
        .parse()
        .unwrap();
    assert_eq!(probe(d), ExecState::Running);
    // Signal only once the entrypoint runs (so the launcher's trap is in place): a TERM
    // during bash's own start-up would kill the launcher before it can record anything.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while group_size(pid) < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let stop = Command::new("sh")
        .args(["-c", STOP, "sh", d, "TERM"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&stop.stdout).trim(), "signalled");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while probe(d) == ExecState::Running && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The launcher outlived its child, recorded 143 (TERM), and the `sleep` in the same
    // group is gone too.
    assert_eq!(probe(d), ExecState::Exited(143));
    let group_alive = Command::new("sh")
        .args(["-c", &format!("kill -0 -- -{pid} 2>/dev/null")])
        .status()
        .unwrap()
        .success();
    assert!(!group_alive, "the run's process group was signalled");
}

/// How many processes are in process group `pgid` (from /proc/*/stat, field 5).
fn group_size(pgid: i32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("stat")).ok())
        .filter(|stat| {
            // `pid (comm) state ppid pgrp …`; comm may contain spaces, so split after ')'.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(2)?.parse::<i32>().ok())
                == Some(pgid)
        })
        .count()
}
