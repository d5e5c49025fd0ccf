//! `nrl run` through the binary: the quickstart with `--local` and against a real Ray
//! head (`--ray-address`), failures, Ctrl-C, `--dry-run`, and the run records. Every
//! test has its own HOME / cache directory.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support;
use crate::support::context::{TestContext, snapshot};
use crate::support::data::parse_doc;

const QUICKSTART: [&str; 4] = [
    "run",
    "examples/quickstart/recipe.yaml",
    "--infra",
    "examples/quickstart/infra.yaml",
];

/// A context for one test (PATH reaches the entrypoints' python3 and shell; no Ray
/// variables); user tester, wide tables, time for a real local run.
fn context() -> TestContext {
    TestContext::new()
        .user("tester")
        .columns(200)
        .timeout(Duration::from_secs(300))
}

fn runs_dir(home: &Path) -> PathBuf {
    home.join(".cache/nrl/runs")
}

fn record(home: &Path, id: &str) -> Value {
    let path = runs_dir(home).join(format!("{id}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no record at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn quickstart_runs_locally_with_overrides_env_and_a_record() {
    let home = context();
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--local", "--run-id", "qs-local-1", "grpo.max_num_steps=2"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");
    // The override reached the staged recipe the program read.
    assert!(stdout.contains("step 2/2"), "{stdout}");
    assert!(!stdout.contains("step 3/"), "{stdout}");
    assert!(stdout.contains("loaded recipe nrl_run.yaml"), "{stdout}");
    // launch.env and the run id reached the process.
    assert!(
        stdout.contains("greeting: hello from launch.env"),
        "{stdout}"
    );
    assert!(stdout.contains("run id: qs-local-1"), "{stdout}");
    assert!(stderr.contains("run qs-local-1 succeeded"), "{stderr}");

    let rec = record(home.home(), "qs-local-1");
    assert_eq!(rec["kind"], "local");
    assert_eq!(rec["status"], "succeeded");
    assert_eq!(rec["exit_code"], 0);
    assert_eq!(rec["overrides"][0], "grpo.max_num_steps=2");
    assert!(rec["local"]["pid"].as_u64().is_some_and(|p| p > 0), "{rec}");
    let run_dir = runs_dir(home.home()).join("qs-local-1");
    assert_eq!(rec["run_dir"], run_dir.display().to_string());
    let staged = std::fs::read_to_string(run_dir.join("nrl_run.yaml")).unwrap();
    assert!(staged.contains("max_num_steps: 2"), "{staged}");
    assert!(run_dir.join("examples/quickstart/train.py").is_file());
    let log = std::fs::read_to_string(run_dir.join("driver.log")).unwrap();
    assert!(log.contains("Processed prompts: 100%"), "{log}");
}

#[test]
fn generated_run_ids_and_xdg_cache_home() {
    let home = context();
    let xdg = home.home().join("xdg");
    home.nrl()
        .env("XDG_CACHE_HOME", &xdg)
        .args(QUICKSTART)
        .arg("--local")
        .assert()
        .success();
    let names: Vec<String> = std::fs::read_dir(xdg.join("nrl/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let id_shape = regex::Regex::new(r"^recipe-\d{8}-\d{6}-[a-z0-9]{4}\.json$").unwrap();
    assert!(id_shape.is_match(&names[0]), "{names:?}");
    assert!(!runs_dir(home.home()).exists());
}

#[test]
fn a_failing_entrypoint_exits_1_and_is_recorded_as_failed() {
    let home = context();
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--local", "--run-id", "qs-fail-1"])
        .arg(r#"infra.launch.env.QUICKSTART_FAIL="1""#)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("failing on purpose"), "{stderr}");
    assert!(stderr.contains("exited with code 3"), "{stderr}");
    assert!(stderr.contains("qs-fail-1/driver.log"), "{stderr}");
    let rec = record(home.home(), "qs-fail-1");
    assert_eq!(rec["status"], "failed");
    assert_eq!(rec["exit_code"], 3);
}

#[test]
fn bad_run_ids_and_reused_ids_are_refused() {
    let home = context();
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--local", "--run-id", "Bad_Id"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nrl::run::run_id"));
    home.nrl()
        .args(QUICKSTART)
        .args(["--local", "--run-id", "twice"])
        .assert()
        .success();
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--local", "--run-id", "twice"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nrl::run::run_id_taken"));
}

/// Without a mode the run goes to Kubernetes: RAY_ADDRESS in the environment does not
/// pick `--ray-address`. With no kubeconfig that is an API-side error (exit 3), and
/// nothing is recorded.
#[test]
fn without_a_mode_ray_address_in_the_environment_does_not_choose_one() {
    let home = context();
    let out = home
        .nrl()
        .env("RAY_ADDRESS", "http://127.0.0.1:1")
        .env("KUBECONFIG", home.home().join("no-such-kubeconfig"))
        .args(QUICKSTART)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("nrl::k8s::"), "{stderr}");
    assert!(!stderr.contains("127.0.0.1:1"), "{stderr}");
    assert!(!runs_dir(home.home()).exists());
}

#[test]
fn dry_run_prints_the_rayjob_with_the_preamble() {
    let home = context();
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--dry-run", "--run-id", "dry-1", "--ttl", "600"])
        .args(["--rayjob-name", "qs-job", "grpo.max_num_steps=2"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.ends_with("\n") && !stdout.ends_with("\n\n"));
    // The plan: the RayJob with the run's preamble (id, launch.env) before the staged
    // entrypoint; codeSource upload (the quickstart's default) means InteractiveMode: nrl
    // uploads the working_dir and submits once KubeRay has the cluster up.
    snapshot!(home, stdout);
    // A dry run creates no run.
    assert!(!runs_dir(home.home()).exists());
}

#[test]
fn dry_run_with_code_in_the_image_lets_kuberay_submit_the_staged_entrypoint() {
    let home = context();
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--dry-run", "--run-id", "dry-2"])
        .args(["--code-source", "image", "--code-path", "/opt/code"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = parse_doc(&text(&out.stdout));
    assert_eq!(
        doc.get_path("spec.submissionMode").and_then(|n| n.as_str()),
        Some("HTTPMode")
    );
    assert_eq!(
        doc.get_path("spec.jobId").and_then(|n| n.as_str()),
        Some("dry-2")
    );
    let entrypoint = doc
        .get_path("spec.entrypoint")
        .and_then(|n| n.as_str())
        .unwrap();
    assert!(entrypoint.contains("\ncd /opt/code\n"), "{entrypoint}");
    assert!(
        entrypoint.ends_with("train.py --config /tmp/nrl-dry-2/nrl_run.yaml"),
        "{entrypoint}"
    );
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--dry-run", "--code-source", "image"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("infra.launch.codePath"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn dry_run_validates_unless_told_not_to() {
    let home = context();
    let bad_name = "infra.kuberay.training.name=Bad_Name";
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--dry-run", bad_name])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.matches("nrl::render::name").count(), 1, "{stderr}");
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--dry-run", "--no-validate", bad_name])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("name: Bad_Name"));
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

#[test]
fn ctrl_c_stops_the_local_run_and_everything_it_started() {
    let home = context();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("recipe.yaml"), "steps: 1\n").unwrap();
    // The background sleep ignores SIGINT (a non-interactive shell's background job),
    // so only the group kill ends it.
    std::fs::write(
        project.path().join("infra.yaml"),
        "namespace: ns\nimage: img\nlaunch:\n  rayUploadPaths: [recipe.yaml]\n  entrypoint: |\n    \
         sleep 300 & echo \"bg=$!\"\n    echo \"fg=$$\"\n    sleep 300\n",
    )
    .unwrap();
    let mut child = home
        .command()
        .args(["run", "recipe.yaml", "--infra", "infra.yaml", "--local"])
        .args(["--run-id", "sigint-1"])
        .current_dir(project.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut pids = Vec::new();
    while pids.len() < 2 {
        let line = lines
            .next()
            .expect("the entrypoint printed its pids")
            .unwrap();
        if let Some((_, pid)) = line.split_once('=') {
            pids.push(pid.parse::<u32>().unwrap());
        }
    }
    let nrl_pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(nrl_pid, rustix::process::Signal::INT).unwrap();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted: run sigint-1 stopped"),
        "{stderr}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    for pid in pids {
        while !gone(pid) {
            assert!(Instant::now() < deadline, "process {pid} is still running");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let rec = record(home.home(), "sigint-1");
    assert_eq!(rec["status"], "stopped");
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}-{:04x}", std::process::id(), fastrand::u16(..))
}

#[test]
fn quickstart_runs_on_a_ray_dashboard() {
    let Some(head) = support::ray_head::shared() else {
        return;
    };
    let home = context();
    let id = unique("qs-ray");
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--ray-address", head.address(), "--run-id", &id])
        .arg("grpo.max_num_steps=2")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");
    assert!(
        stdout.contains("step 2/2") && !stdout.contains("step 3/"),
        "{stdout}"
    );
    assert!(
        stdout.contains("greeting: hello from launch.env"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("run id: {id}")), "{stdout}");
    let followup = format!("nrl job logs {id} --address {} -f", head.address());
    assert!(stderr.contains(&followup), "{stderr}");
    assert!(stderr.contains("SUCCEEDED"), "{stderr}");

    let rec = record(home.home(), &id);
    assert_eq!(rec["kind"], "ray");
    assert_eq!(rec["status"], "succeeded");
    assert_eq!(rec["ray"]["submission_id"], id.as_str());
    assert_eq!(rec["ray"]["address"], head.address());
    let run_dir = runs_dir(home.home()).join(&id);
    let log = std::fs::read_to_string(run_dir.join("driver.log")).unwrap();
    assert!(log.contains("Processed prompts: 100%"), "{log}");
    assert!(
        std::fs::read_to_string(run_dir.join("nrl_run.yaml"))
            .unwrap()
            .contains("max_num_steps: 2")
    );
}

#[test]
fn a_failing_ray_run_exits_1() {
    let Some(head) = support::ray_head::shared() else {
        return;
    };
    let home = context();
    let id = unique("qs-ray-fail");
    let out = home
        .nrl()
        .args(QUICKSTART)
        .args(["--ray-address", head.address(), "--run-id", &id])
        .args([
            "grpo.max_num_steps=1",
            r#"infra.launch.env.QUICKSTART_FAIL="1""#,
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains(&format!("run {id} FAILED")), "{stderr}");
    let rec = record(home.home(), &id);
    assert_eq!(rec["status"], "failed");
    assert_eq!(rec["exit_code"], 3);
}

/// Kills `pid` when dropped: a failing test leaves nothing behind.
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

/// Starts `nrl run --local` on a one-file project whose entrypoint is `script`.
fn spawn_local(ctx: &TestContext, project: &Path, id: &str, script: &str) -> std::process::Child {
    std::fs::write(project.join("recipe.yaml"), "steps: 1\n").unwrap();
    let indented: String = script.lines().map(|l| format!("    {l}\n")).collect();
    std::fs::write(
        project.join("infra.yaml"),
        format!(
            "namespace: ns\nimage: img\nlaunch:\n  rayUploadPaths: [recipe.yaml]\n  entrypoint: |\n{indented}"
        ),
    )
    .unwrap();
    ctx.command()
        .args(["run", "recipe.yaml", "--infra", "infra.yaml", "--local"])
        .args(["--run-id", id])
        .current_dir(project)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads `key=<pid>` lines from the entrypoint's output until all `keys` were seen.
fn read_pids(child: &mut std::process::Child, keys: &[&str]) -> Vec<u32> {
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut pids = vec![0; keys.len()];
    while pids.contains(&0) {
        let line = lines
            .next()
            .expect("the entrypoint printed its pids")
            .unwrap();
        if let Some((key, pid)) = line.split_once('=')
            && let Some(i) = keys.iter().position(|k| *k == key)
        {
            pids[i] = pid.parse().unwrap();
        }
    }
    pids
}

#[test]
fn ctrl_c_ends_a_grandchild_that_escaped_into_a_new_session_and_ignores_sigterm() {
    assert!(
        Path::new("/usr/bin/setsid").exists() || Path::new("/bin/setsid").exists(),
        "the test needs setsid (util-linux)"
    );
    let home = context();
    let project = tempfile::tempdir().unwrap();
    // The subshell exits at once (double fork), the grandchild leads a new session and
    // ignores SIGTERM, SIGINT and SIGHUP: neither the group kill nor a TERM ends it.
    let script = "(setsid sh -c 'trap \"\" TERM INT HUP; echo $$ > esc.tmp; mv esc.tmp esc.pid; exec sleep 300' &)\n\
                  while [ ! -s esc.pid ]; do sleep 0.05; done\n\
                  echo \"esc=$(cat esc.pid)\"\n\
                  echo \"fg=$$\"\n\
                  sleep 300\n";
    let mut child = spawn_local(&home, project.path(), "escape-1", script);
    let nrl_guard = KillOnDrop(child.id());
    let pids = read_pids(&mut child, &["esc", "fg"]);
    let _guards: Vec<KillOnDrop> = pids.iter().map(|&p| KillOnDrop(p)).collect();
    let nrl_pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(nrl_pid, rustix::process::Signal::INT).unwrap();
    let status = child.wait().unwrap();
    drop(nrl_guard);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted: run escape-1 stopped (its processes were ended)"),
        "{stderr}"
    );
    // nrl's message is true when it exits: ended and reaped, not even a zombie is left.
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} outlived nrl"
        );
    }
    assert_eq!(record(home.home(), "escape-1")["status"], "stopped");
}

/// Kills the process group `pgid` when dropped.
struct KillGroupOnDrop(u32);

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = i32::try_from(self.0)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

#[test]
fn a_run_whose_nrl_was_sigkilled_is_lost_and_job_stop_ends_its_entrypoint() {
    let home = context();
    let project = tempfile::tempdir().unwrap();
    let script = "echo started\necho \"fg=$$\"\nsleep 300\n";
    let mut child = spawn_local(&home, project.path(), "lost-1", script);
    let nrl_pid = child.id();
    let nrl_guard = KillOnDrop(nrl_pid);
    let fg = read_pids(&mut child, &["fg"])[0];
    let _group = KillGroupOnDrop(fg);
    assert_eq!(record(home.home(), "lost-1")["status"], "running");
    let pid = rustix::process::Pid::from_raw(nrl_pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    child.wait().unwrap();
    drop(nrl_guard);
    // The record on disk still says running; every reader now says lost.
    assert_eq!(record(home.home(), "lost-1")["status"], "running");

    let out = home.nrl().args(["job", "logs", "lost-1"]).output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("started"), "{stdout}");
    assert!(
        stderr.contains(&format!(
            "run lost-1 is lost: nrl (pid {nrl_pid}) ended without recording how the run \
             ended; its entrypoint (pid {fg}) is still running"
        )),
        "{stderr}"
    );
    let rec = record(home.home(), "lost-1");
    assert_eq!(rec["status"], "lost");
    assert_eq!(rec["supervisor"]["pid"], nrl_pid);
    assert!(rec["local"]["start_time"].as_u64().is_some(), "{rec}");

    let out = home.nrl().args(["job", "stop", "lost-1"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "stopped run lost-1: ended its entrypoint's process group ({fg})"
        )),
        "{stderr}"
    );
    assert!(gone(fg), "the entrypoint {fg} is still running");
    assert_eq!(record(home.home(), "lost-1")["status"], "stopped");

    // Nothing left to stop: the record says what became of the run.
    let out = home.nrl().args(["job", "stop", "lost-1"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("run lost-1 had already ended: local run lost-1 is stopped"),
        "{stderr}"
    );
}

#[test]
fn job_stop_of_a_running_local_run_stops_it_through_its_nrl() {
    let home = context();
    let project = tempfile::tempdir().unwrap();
    let mut child = spawn_local(
        &home,
        project.path(),
        "live-1",
        "echo \"fg=$$\"\nsleep 300\n",
    );
    let nrl_guard = KillOnDrop(child.id());
    let fg = read_pids(&mut child, &["fg"])[0];
    let _group = KillGroupOnDrop(fg);
    let out = home.nrl().args(["job", "stop", "live-1"]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "stopped run live-1: ended its nrl (pid {})",
            child.id()
        )),
        "{stderr}"
    );
    // nrl took the stop as an interrupt: it ended the run and recorded it.
    assert_eq!(child.wait().unwrap().code(), Some(130));
    drop(nrl_guard);
    assert!(gone(fg), "the entrypoint {fg} is still running");
    assert_eq!(record(home.home(), "live-1")["status"], "stopped");
}
