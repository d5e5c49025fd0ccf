//! `nrl job …` and the Ray client against a real Ray head on 127.0.0.1 (the one the test
//! run shares, see `support::ray_head`). Skipped with a notice when Ray is not installed,
//! failed under `CI=true`.

use std::path::Path;
use std::time::{Duration, Instant};

use futures::StreamExt;
use nrl::ray::{JobStatus, RayClient, RayClientOptions, SubmitRequest, UploadSet};

use crate::support::context::{Nrl, TestContext};
use crate::support::ray_head::{self, RayHead};

/// `nrl` from a fresh context, wide enough that job tables are not cut.
fn nrl() -> Nrl {
    TestContext::new()
        .columns(200)
        .timeout(Duration::from_secs(120))
        .into_nrl()
}

fn head() -> Option<&'static RayHead> {
    ray_head::shared()
}

fn client(head: &RayHead) -> RayClient {
    let _ = rustls::crypto::ring::default_provider().install_default();
    RayClient::new(head.address(), RayClientOptions::default()).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Poll until `check` holds for the job's details, or panic after `timeout`.
fn wait_until(
    ray: &RayClient,
    id: &str,
    timeout: Duration,
    check: impl Fn(JobStatus, &str) -> bool,
) {
    let rt = runtime();
    let deadline = Instant::now() + timeout;
    loop {
        // The job may not be submitted yet.
        let status = match rt.block_on(ray.status(id)) {
            Ok(job) => job.status,
            Err(e) if e.code == "nrl::ray::not_found" => JobStatus::Pending,
            Err(e) => panic!("{e}"),
        };
        let logs = rt.block_on(ray.logs(id)).unwrap_or_default();
        if check(status, &logs) {
            return;
        }
        assert!(Instant::now() < deadline, "job {id} still {status}: {logs}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn submit_passes_env_vars_and_exits_with_the_job_status() {
    let Some(head) = head() else { return };
    let out = nrl()
        .args(["job", "submit", "--address", head.address()])
        .args(["--env", "NRL_GREETING=hello", "--env", "NRL_SPACED=a b"])
        .args(["--", r#"echo "greeting=$NRL_GREETING spaced=$NRL_SPACED""#])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(
        stdout_of(&out).contains("greeting=hello spaced=a b"),
        "{}",
        stdout_of(&out)
    );
    assert!(stderr_of(&out).contains("SUCCEEDED"), "{}", stderr_of(&out));

    let out = nrl()
        .args(["job", "submit", "--address", head.address()])
        .args(["--", "sh", "-c", "echo about to fail; exit 3"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    assert!(
        stdout_of(&out).contains("about to fail"),
        "{}",
        stdout_of(&out)
    );
    assert!(stderr_of(&out).contains("FAILED"), "{}", stderr_of(&out));
}

fn write(root: &Path, rel: &str, contents: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
}

#[test]
fn working_dir_is_uploaded_once_and_read_by_the_job() {
    let Some(head) = head() else { return };
    let dir = tempfile::tempdir().unwrap();
    let marker = unique("payload");
    write(dir.path(), "data.txt", &format!("{marker}\n"));
    write(dir.path(), "sub/x.txt", "nested\n");
    write(dir.path(), "__pycache__/junk.cpython-311.pyc", "junk");
    write(dir.path(), ".gitignore", "data.txt\n");
    let entrypoint = "cat data.txt sub/x.txt; ls -A";

    let out = nrl()
        .args([
            "job",
            "submit",
            "--address",
            head.address(),
            "--working-dir",
        ])
        .arg(dir.path())
        .args(["--", entrypoint])
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = stdout_of(&out);
    assert!(
        stdout.contains(&marker) && stdout.contains("nested"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("__pycache__") && !stdout.contains(".gitignore"),
        "{stdout}"
    );
    assert!(
        stderr_of(&out).contains("uploaded working_dir"),
        "{}",
        stderr_of(&out)
    );

    // Same content again: Ray already has the package.
    let out = nrl()
        .args([
            "job",
            "submit",
            "--address",
            head.address(),
            "--working-dir",
        ])
        .arg(dir.path())
        .args(["--", entrypoint])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(stdout_of(&out).contains(&marker));
    assert!(
        stderr_of(&out).contains("upload skipped"),
        "{}",
        stderr_of(&out)
    );
}

#[test]
fn package_upload_through_the_client() {
    let Some(head) = head() else { return };
    let ray = client(head);
    let rt = runtime();
    let mut set = UploadSet::new();
    set.add_file_contents("hello.txt", unique("library-upload"))
        .unwrap();
    let uri = set.package_uri().unwrap();
    assert!(!rt.block_on(ray.package_exists(&uri)).unwrap());
    let first = rt
        .block_on(nrl::ray::ensure_package(&ray, &set, &Default::default()))
        .unwrap();
    assert!(first.uploaded && first.uri == uri);
    assert!(rt.block_on(ray.package_exists(&uri)).unwrap());
    let second = rt
        .block_on(nrl::ray::ensure_package(&ray, &set, &Default::default()))
        .unwrap();
    assert!(!second.uploaded);
}

#[test]
fn logs_follow_until_the_end_and_full_logs_match() {
    let Some(head) = head() else { return };
    let out = nrl()
        .args(["job", "submit", "--address", head.address(), "--no-wait"])
        .args(["--", "for i in 1 2 3 4 5; do echo tick $i; sleep 0.5; done"])
        .assert()
        .success()
        .get_output()
        .clone();
    let id = stdout_of(&out).trim().to_string();
    assert!(!id.is_empty());
    assert!(stderr_of(&out).contains(&format!("nrl job logs {id}")));

    // A per-call timeout far shorter than the job: the log stream must not be cut by it.
    let out = nrl()
        .args([
            "job",
            "logs",
            &id,
            "--address",
            head.address(),
            "-f",
            "--timeout",
            "1s",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let followed = stdout_of(&out);
    for i in 1..=5 {
        assert_eq!(
            followed.matches(&format!("tick {i}\n")).count(),
            1,
            "{followed}"
        );
    }

    let out = nrl()
        .args(["job", "logs", &id, "--address", head.address()])
        .assert()
        .success()
        .get_output()
        .clone();
    let full = stdout_of(&out);
    assert!(full.contains("tick 5"), "{full}");
    assert_eq!(full, followed, "followed output equals the full log");

    let out = nrl()
        .args(["job", "status", &id, "--address", head.address()])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(stdout_of(&out).contains("SUCCEEDED"), "{}", stdout_of(&out));

    let out = nrl()
        .args(["job", "list", "--address", head.address()])
        .assert()
        .success()
        .get_output()
        .clone();
    let table = stdout_of(&out);
    let row = table.lines().find(|l| l.contains(&id)).unwrap_or_default();
    assert!(
        row.contains("SUCCEEDED") && row.contains("for i in 1 2 3 4 5"),
        "{table}"
    );
}

#[test]
fn tail_stream_outlives_the_call_timeout() {
    let Some(head) = head() else { return };
    let rt = runtime();
    let ray = RayClient::new(
        head.address(),
        RayClientOptions {
            timeout: Duration::from_secs(1),
            ..RayClientOptions::default()
        },
    )
    .unwrap();
    let id = unique("tail");
    let mut request = SubmitRequest::new("for i in 1 2 3; do echo step $i; sleep 1; done");
    request.submission_id = Some(id.clone());
    rt.block_on(ray.submit(&request)).unwrap();
    let text = rt.block_on(async {
        let mut tail = ray.tail(&id).await.unwrap();
        let mut text = String::new();
        while let Some(chunk) = tail.next().await {
            text.push_str(&chunk.expect("the stream must end with a close, not an error"));
        }
        text
    });
    assert!(text.contains("step 1") && text.contains("step 3"), "{text}");
    let job = rt.block_on(ray.status(&id)).unwrap();
    assert_eq!(job.status, JobStatus::Succeeded);
    assert!(rt.block_on(ray.delete(&id)).unwrap());
    let err = rt.block_on(ray.status(&id)).unwrap_err();
    assert_eq!(err.code, "nrl::ray::not_found");
}

#[test]
fn stopping_a_followed_job_ends_it_stopped_with_exit_1() {
    let Some(head) = head() else { return };
    let id = unique("stop");
    let ctx = TestContext::new().columns(200);
    let follower = ctx
        .command()
        .args([
            "job",
            "submit",
            "--address",
            head.address(),
            "--submission-id",
            &id,
        ])
        .args(["--", "echo started; sleep 120"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ray = client(head);
    wait_until(&ray, &id, Duration::from_secs(60), |status, logs| {
        status == JobStatus::Running && logs.contains("started")
    });

    let out = nrl()
        .args(["job", "stop", &id, "--address", head.address()])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(stderr_of(&out).contains("STOPPED"), "{}", stderr_of(&out));

    let started = Instant::now();
    let followed = follower.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(followed.status.code(), Some(1), "{}", stderr_of(&followed));
    assert!(stdout_of(&followed).contains("started"));
    assert!(
        stderr_of(&followed).contains("STOPPED"),
        "{}",
        stderr_of(&followed)
    );

    // Stopping again reports the job had already ended.
    let out = nrl()
        .args(["job", "stop", &id, "--address", head.address()])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(
        stderr_of(&out).contains("already ended"),
        "{}",
        stderr_of(&out)
    );

    // Following a stopped job exits 1 too.
    nrl()
        .args(["job", "logs", &id, "--address", head.address(), "-f"])
        .assert()
        .code(1);
}

#[test]
fn unknown_job_ids_are_not_found() {
    let Some(head) = head() else { return };
    for args in [
        vec!["job", "status", "no-such-job"],
        vec!["job", "logs", "no-such-job"],
        vec!["job", "logs", "no-such-job", "-f"],
        vec!["job", "stop", "no-such-job"],
    ] {
        let out = nrl()
            .args(&args)
            .args(["--address", head.address()])
            .assert()
            .code(3)
            .get_output()
            .clone();
        let stderr = stderr_of(&out);
        assert!(stderr.contains("nrl::ray::not_found"), "{args:?}: {stderr}");
        assert!(stderr.contains("no-such-job"), "{args:?}: {stderr}");
    }
}

#[test]
fn duplicate_submission_id_is_refused_with_rays_reason() {
    let Some(head) = head() else { return };
    let id = unique("dup");
    nrl()
        .args(["job", "submit", "--address", head.address(), "--no-wait"])
        .args(["--submission-id", &id, "--", "true"])
        .assert()
        .success();
    let out = nrl()
        .args(["job", "submit", "--address", head.address(), "--no-wait"])
        .args(["--submission-id", &id, "--", "true"])
        .assert()
        .code(3)
        .get_output()
        .clone();
    let stderr = stderr_of(&out);
    assert!(stderr.contains("nrl::ray::submit"), "{stderr}");
    assert!(
        stderr.contains(&format!("Job with submission_id {id} already exists")),
        "{stderr}"
    );
    assert!(!stderr.contains("Traceback"), "{stderr}");
    assert!(stderr.contains("--submission-id"), "{stderr}");
}

#[test]
fn version_reports_the_ray_release() {
    let Some(head) = head() else { return };
    let version = runtime().block_on(client(head).version()).unwrap();
    assert_eq!(version.version, "4");
    assert!(version.ray_version.starts_with("2."), "{version:?}");
}

/// `job list` and `job status` print Ray's Job API fields as data with `-o json|yaml`.
#[test]
fn list_and_status_print_the_job_api_fields_as_data() {
    let Some(head) = head() else { return };
    let id = unique("nrl-o-json");
    nrl()
        .args([
            "job",
            "submit",
            "--address",
            head.address(),
            "--submission-id",
            &id,
        ])
        .args(["--", "echo", "hi"])
        .assert()
        .success();
    let out = nrl()
        .args(["job", "list", "--address", head.address(), "-o", "json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let jobs: serde_json::Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    let job = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["submission_id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} not in {jobs}"));
    assert_eq!(job["status"], "SUCCEEDED");
    assert_eq!(job["type"], "SUBMISSION");
    let out = nrl()
        .args([
            "job",
            "status",
            &id,
            "--address",
            head.address(),
            "-o",
            "yaml",
        ])
        .assert()
        .success()
        .get_output()
        .clone();
    let text = stdout_of(&out);
    assert!(text.contains("status: SUCCEEDED"), "{text}");
    assert!(text.contains(&format!("submission_id: {id}")), "{text}");
}
