//! `nrl run` on Kubernetes, end to end: the real binary against the fake API server, whose
//! KubeRay simulation runs the RayJob's job on a real local Ray head (reached through the
//! native port-forward), so the quickstart really executes.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::support::context::{TestContext, nrl};
use crate::support::data::repo;
use crate::support::fake_k8s::FakeK8s;
use crate::support::ray_head::{self, RayHead};

const QS_RECIPE: &str = "examples/quickstart/recipe.yaml";
const DRA_INFRA: &str = "tests/data/run/quickstart-dra.infra.yaml";
const QS_INFRA: &str = "examples/quickstart/infra.yaml";

struct World {
    /// HOME, user tester, the fake's kubeconfig.
    ctx: TestContext,
    fake: FakeK8s,
}

/// A fake cluster whose Ray heads are the shared real one; `None` (skipped) without Ray
/// outside CI.
fn world() -> Option<World> {
    let head: &RayHead = ray_head::shared()?;
    let fake = FakeK8s::start();
    fake.use_ray_dashboard(Some(head.address()));
    Some(World::new(fake))
}

impl World {
    fn new(fake: FakeK8s) -> World {
        World {
            ctx: TestContext::with_fake(&fake)
                .user("tester")
                .columns(200)
                .timeout(Duration::from_secs(300)),
            fake,
        }
    }
}

fn id(prefix: &str) -> String {
    format!("{prefix}-{}", fastrand::u32(..) % 1_000_000)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn record(w: &World, id: &str) -> Value {
    let path = w.ctx.home().join(format!(".cache/nrl/runs/{id}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn rayjob(w: &World, name: &str) -> Value {
    w.fake
        .get("ray.io/v1", "RayJob", "default", name)
        .unwrap_or_else(|| panic!("no RayJob {name}"))
}

/// The staged HTTPMode preamble writes on the "head", which here is this machine.
fn remove_staging(id: &str) {
    let _ = std::fs::remove_dir_all(format!("/tmp/nrl-{id}"));
}

#[test]
fn ephemeral_quickstart_streams_its_log_passes_the_checklist_and_cleans_up() {
    let Some(w) = world() else { return };
    let run = id("qs-ok");
    let out = w
        .ctx
        .nrl()
        .args(["run", QS_RECIPE, "--infra", DRA_INFRA, "--run-id", &run])
        .args(["--ttl", "0", "--verify", "grpo.max_num_steps=2"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // The driver log streamed through the port-forward, with the override, env and run id.
    assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");
    assert!(
        stdout.contains("step 2/2") && !stdout.contains("step 3/"),
        "{stdout}"
    );
    assert!(
        stdout.contains("greeting: hello from launch.env"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("run id: {run}")), "{stdout}");
    // Context first, the follow-ups after the submit, every checklist point.
    assert!(
        stderr.starts_with("[rayjob] context `fake`, namespace `default`"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("follow:  nrl job logs {run} -f")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("stop:    nrl job stop {run}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("checklist: 4 passed, 1 not applicable"),
        "{stderr}"
    );
    assert!(stderr.contains("pass  cluster torn down"), "{stderr}");
    assert!(stderr.contains(&format!("run {run} SUCCEEDED")), "{stderr}");
    // The teardown cutting the log stream is no reason to warn about retries.
    assert!(!stderr.contains("(retrying in"), "{stderr}");

    // InteractiveMode: nrl submitted the job with the run id and told KubeRay.
    let rj = rayjob(&w, "tester-qs");
    assert_eq!(rj["spec"]["submissionMode"], "InteractiveMode");
    assert_eq!(rj["spec"]["jobId"], run.as_str());
    assert_eq!(rj["status"]["jobStatus"], "SUCCEEDED");
    assert_eq!(rj["metadata"]["labels"]["nrl/run-id"], run.as_str());
    // The cluster is gone, and with it the DRA objects (garbage-collected).
    assert!(
        w.fake
            .list("ray.io/v1", "RayCluster", Some("default"), "")
            .is_empty()
    );
    let dra_gone = w.fake.wait_until_blocking(Duration::from_secs(10), |f| {
        f.get(
            "resource.nvidia.com/v1beta1",
            "ComputeDomain",
            "default",
            "compute-domain-tester-qs-training",
        )
        .is_none()
            && f.get(
                "resource.k8s.io/v1",
                "ResourceClaimTemplate",
                "default",
                "roce-tester-qs-training",
            )
            .is_none()
    });
    assert!(
        dra_gone,
        "the DRA objects were garbage-collected with the cluster"
    );
    // DRA objects were created before the RayJob, then owned by it.
    let log = w.fake.request_log();
    let first = |res: &str| {
        log.iter()
            .position(|r| r.is_apply() && r.resource.as_deref() == Some(res))
    };
    assert!(
        first("computedomains") < first("rayjobs"),
        "DRA objects first"
    );

    // The records: local, and the cluster copy owned by the RayJob.
    let rec = record(&w, &run);
    assert_eq!(rec["kind"], "rayjob");
    assert_eq!(rec["status"], "succeeded");
    assert_eq!(rec["context"], "fake");
    assert_eq!(rec["k8s"]["rayjob"], "tester-qs");
    let log_copy = w
        .ctx
        .home()
        .join(format!(".cache/nrl/runs/{run}/driver.log"));
    assert!(
        std::fs::read_to_string(log_copy)
            .unwrap()
            .contains("Processed prompts: 100%")
    );
    // The launch snapshot `nrl diff` and `nrl run --from` read: the uploaded code's
    // hash, the rendered objects, and which layer set each key.
    let snapshot: Value = serde_json::from_str(
        &std::fs::read_to_string(
            w.ctx
                .home()
                .join(format!(".cache/nrl/runs/{run}/.nrl/launch.json")),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(snapshot["code"]["source"], "upload");
    assert!(
        snapshot["code"]["digest"]
            .as_str()
            .is_some_and(|d| d.starts_with("gcs://_ray_pkg_")),
        "{}",
        snapshot["code"]
    );
    assert_eq!(snapshot["recipe"]["grpo"]["max_num_steps"], 2);
    assert_eq!(
        snapshot["decided_by"]["grpo.max_num_steps"]["layer"],
        "override"
    );
    assert!(
        snapshot["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["kind"] == "RayCluster"),
        "{}",
        snapshot["manifests"]
    );
    let cm = w
        .fake
        .get("v1", "ConfigMap", "default", &format!("nrl-run-{run}"))
        .unwrap();
    assert_eq!(cm["metadata"]["ownerReferences"][0]["kind"], "RayJob");
    let copy: Value = serde_json::from_str(cm["data"]["record.json"].as_str().unwrap()).unwrap();
    assert_eq!(copy["status"], "succeeded");

    // `nrl verify` later, from the saved log copy and the cluster.
    let out = w.ctx.nrl().args(["verify", &run]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("checklist: 4 passed"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_failing_entrypoint_exits_1() {
    let Some(w) = world() else { return };
    let run = id("qs-fail");
    let out = w
        .ctx
        .nrl()
        .args([
            "run", QS_RECIPE, "--infra", QS_INFRA, "--run-id", &run, "--ttl", "0",
        ])
        .arg(r#"infra.launch.env.QUICKSTART_FAIL="1""#)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("run {run} FAILED")), "{stderr}");
    assert!(stderr.contains("deployment=Failed job=FAILED"), "{stderr}");
    assert_eq!(record(&w, &run)["status"], "failed");
}

/// `--no-wait` with the code in the "image" (HTTPMode: KubeRay submits): nrl returns
/// once the RayJob exists, printing the follow-ups; `nrl job logs` then finds the job
/// through the RayJob's own cluster (ref §11 C6), and a second run of the same
/// `--rayjob-name` is refused until `--replace` (ref §11 C4).
#[test]
fn no_wait_returns_at_once_and_the_run_can_be_followed_replaced_and_verified() {
    let Some(w) = world() else { return };
    let run = id("qs-nowait");
    let root = repo().display().to_string();
    let base = [
        "run",
        QS_RECIPE,
        "--infra",
        QS_INFRA,
        "--rayjob-name",
        "nowait-job",
        "--no-shutdown",
        "--code-source",
        "image",
        "--code-path",
        &root,
    ];
    let out = w
        .ctx
        .nrl()
        .args(base)
        .args(["--run-id", &run, "--no-wait"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(out.stdout.is_empty(), "no log without waiting");
    assert!(
        stderr.contains(&format!("follow:  nrl job logs {run} -f")),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("run {run} submitted")), "{stderr}");
    let rj = rayjob(&w, "nowait-job");
    assert_eq!(rj["spec"]["submissionMode"], "HTTPMode");
    assert_eq!(rj["spec"]["jobId"], run.as_str());

    let out = w
        .ctx
        .nrl()
        .args(["job", "logs", &run, "-f"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");
    assert!(
        stdout.contains(&format!("loaded recipe /tmp/nrl-{run}/nrl_run.yaml")),
        "{stdout}"
    );

    let out = w.ctx.nrl().args(["verify", &run]).output().unwrap();
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{report}");
    assert!(report.contains("skip  cluster torn down"), "{report}");

    // From "another machine" (no local record): the record comes from the cluster's
    // ConfigMap (ref §11 D5: the reference's handle cache was local only).
    let elsewhere = tempfile::tempdir().unwrap();
    let out = w
        .ctx
        .nrl()
        .env("HOME", elsewhere.path())
        .args(["job", "logs", &run, "-n", "default"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Processed prompts: 100%"));
    assert!(
        elsewhere
            .path()
            .join(format!(".cache/nrl/runs/{run}.json"))
            .is_file(),
        "cached locally"
    );

    // The finished RayJob of that name: a clear refusal, then --replace.
    let again = id("qs-again");
    let out = w
        .ctx
        .nrl()
        .args(base)
        .args(["--run-id", &again, "--no-wait"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nrl::run::rayjob_exists"), "{stderr}");
    assert!(stderr.contains(&format!("(run `{run}`)")), "{stderr}");
    assert!(stderr.contains("--replace"), "{stderr}");
    let out = w
        .ctx
        .nrl()
        .args(base)
        .args(["--run-id", &again, "--replace"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("--replace: deleting RayJob nowait-job"),
        "{stderr}"
    );
    assert_eq!(rayjob(&w, "nowait-job")["spec"]["jobId"], again.as_str());
    remove_staging(&run);
    remove_staging(&again);
}

#[test]
fn ctrl_c_detaches_and_the_job_keeps_running() {
    let Some(w) = world() else { return };
    let run = id("qs-detach");
    let root = repo().display().to_string();
    let mut child = w
        .ctx
        .command()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            QS_INFRA,
            "--run-id",
            &run,
            "--no-shutdown",
        ])
        .args(["--code-source", "image", "--code-path", &root])
        .arg("infra.launch.entrypoint='echo started; sleep 30'")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupt once the job's own output arrived (it is running on Ray).
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    use std::io::BufRead;
    while stdout.read_line(&mut line).unwrap() > 0 && !line.contains("started") {
        line.clear();
    }
    assert!(line.contains("started"), "the job never started");
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains(&format!("re-attach: nrl job logs {run} -f")),
        "{stderr}"
    );
    // The job keeps running; stopping it by run id works and is recorded.
    let running = w.fake.wait_until_blocking(Duration::from_secs(10), |f| {
        f.field(
            "ray.io/v1",
            "RayJob",
            "default",
            "tester-quickstart",
            "status.jobStatus",
        ) == Some(Value::from("RUNNING"))
    });
    assert!(running, "the job kept running after nrl detached");
    let out = w.ctx.nrl().args(["job", "stop", &run]).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("stopped run {run}: STOPPED")),
        "{stderr}"
    );
    assert_eq!(record(&w, &run)["status"], "stopped");
    // The record ConfigMap, updated by the stop, still belongs to the RayJob (issue 15
    // item 9: an apply without ownerReferences removed them, so it was never collected).
    let cm = w
        .fake
        .get("v1", "ConfigMap", "default", &format!("nrl-run-{run}"))
        .expect("the run's record ConfigMap");
    assert!(
        cm["data"]["record.json"]
            .as_str()
            .is_some_and(|t| t.contains("\"stopped\"")),
        "{cm}"
    );
    let owners = cm["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(owners.len(), 1, "{cm}");
    assert_eq!(owners[0]["kind"], "RayJob");
    assert_eq!(owners[0]["name"], "tester-quickstart");
    assert_eq!(
        owners[0]["uid"],
        rayjob(&w, "tester-quickstart")["metadata"]["uid"]
    );
    remove_staging(&run);
}

#[test]
fn bad_input_fails_before_any_cluster_call() {
    let Some(w) = world() else { return };
    let out = w
        .ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            QS_INFRA,
            "--no-shutdown",
            "--ttl",
            "60",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("nrl::run::ttl"),
        "{}",
        text(&out.stderr)
    );
    let out = w
        .ctx
        .nrl()
        .args(["run", QS_RECIPE, "--infra", QS_INFRA])
        .arg("~infra.kuberay.training")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nrl::run::no_training_cluster"));
    let out = w
        .ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            QS_INFRA,
            "--rayjob-name",
            &"x".repeat(48),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        w.fake.request_log().is_empty(),
        "nrl never contacted the cluster"
    );
}

/// `nrl run` without waiting, code in the image (KubeRay submits), no doctor gate: only
/// the offline validation stands between the infra and the fake API server.
fn submit(w: &World, infra: &str, extra: &[&str]) -> std::process::Output {
    w.ctx
        .nrl()
        .args([
            "run",
            QS_RECIPE,
            "--infra",
            infra,
            "--no-wait",
            "--skip-doctor",
        ])
        .args(["--code-source", "image", "--code-path", "/opt/nemo-rl"])
        .args(extra)
        .output()
        .unwrap()
}

/// A worker group without `minReplicas`/`maxReplicas` is accepted (the CRD defaults them
/// before `required` is checked), applied without them, and filled in by the server.
#[test]
fn run_applies_a_worker_group_without_min_and_max_replicas() {
    let w = World::new(FakeK8s::start());
    let run = id("no-min-max");
    let infra = "tests/data/run/quickstart-no-min-max.infra.yaml";
    let out = submit(&w, infra, &["--run-id", &run]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rj = rayjob(&w, "tester-quickstart");
    let group = &rj["spec"]["rayClusterSpec"]["workerGroupSpecs"][0];
    assert_eq!(group["groupName"], "cpu-workers");
    assert_eq!(group["minReplicas"], 0, "server default");
    assert_eq!(group["maxReplicas"], 2147483647, "server default");
    let dry = w
        .ctx
        .nrl()
        .args(["run", QS_RECIPE, "--infra", infra, "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry.stderr));
    let printed = text(&dry.stdout);
    assert!(
        printed.contains("groupName: cpu-workers") && !printed.contains("Replicas:"),
        "{printed}"
    );
}

/// `--no-validate` works for a real run, not only `--dry-run`: a pod-template label value
/// the offline name checks refuse (the CRD itself accepts it) reaches the API server.
#[test]
fn run_no_validate_skips_the_offline_checks() {
    let w = World::new(FakeK8s::start());
    let label = "+infra.kuberay.training.spec.headGroupSpec.template.metadata.labels.team='a b'";
    let out = submit(&w, QS_INFRA, &[label]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nrl::render::name"), "{err}");
    assert!(
        w.fake.request_log().is_empty(),
        "nothing reached the cluster"
    );
    let out = submit(&w, QS_INFRA, &[label, "--no-validate"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rj = rayjob(&w, "tester-quickstart");
    assert_eq!(
        rj["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["metadata"]["labels"]["team"],
        "a b"
    );
}

/// `--no-validate` also covers a long-lived run (`--raycluster`): the RayCluster the
/// offline name checks refuse is applied.
#[test]
fn longlived_run_no_validate_skips_the_offline_checks() {
    let w = World::new(FakeK8s::start());
    let label = "+infra.kuberay.training.spec.headGroupSpec.template.metadata.labels.team='a b'";
    let longlived = |extra: &[&str]| {
        w.ctx
            .nrl()
            .args([
                "run",
                QS_RECIPE,
                "--infra",
                QS_INFRA,
                "--raycluster",
                "--skip-doctor",
            ])
            .args([
                "--code-source",
                "image",
                "--code-path",
                "/opt/nemo-rl",
                "--no-wait",
            ])
            .args(["--timeout", "20s", label])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = longlived(&[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nrl::render::name"), "{err}");
    assert!(
        w.fake.request_log().is_empty(),
        "nothing reached the cluster"
    );
    let out = longlived(&["--no-validate"]);
    let rc = w
        .fake
        .get("ray.io/v1", "RayCluster", "default", "tester-quickstart")
        .unwrap_or_else(|| panic!("RayCluster applied: {}", text(&out.stderr)));
    assert_eq!(
        rc["spec"]["headGroupSpec"]["template"]["metadata"]["labels"]["team"],
        "a b"
    );
}

/// ref §11 C3: the help says what KubeRay does with the TTL.
#[test]
fn ttl_help_says_it_delays_the_cluster_teardown() {
    let out = nrl().args(["run", "--help"]).output().unwrap();
    let help = text(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(help.contains("before it deletes the RayCluster"), "{help}");
    assert!(
        help.contains("does not keep or delete the RayJob"),
        "{help}"
    );
}

/// ref §10.3 #6 TailJobLogs/bridges_async_iterator_to_generator: the log of a Ray job
/// reaches the consumer chunk by chunk, in order, and the stream ends with the job.
#[test]
fn tail_job_logs_bridges_chunks_to_a_channel() {
    let Some(head) = ray_head::shared() else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = nrl::ray::RayClient::new(head.address(), Default::default()).unwrap();
        let id = id("tail");
        let mut req = nrl::ray::SubmitRequest::new("echo 'line one'; echo 'line two'; echo done");
        req.submission_id = Some(id.clone());
        client.submit(&req).await.unwrap();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let details = nrl::launch::follow::follow_into(&client, &id, tx, Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(details.status.to_string(), "SUCCEEDED");
        let mut all = String::new();
        while let Some(chunk) = rx.recv().await {
            all.push_str(&chunk);
        }
        // Everything Ray logged arrived, once, in order (Ray interleaves its own lines).
        assert_eq!(all, client.logs(&id).await.unwrap());
        let at = |want: &str| {
            all.lines()
                .position(|l| l == want)
                .unwrap_or_else(|| panic!("{want} in {all}"))
        };
        assert!(
            at("line one") < at("line two") && at("line two") < at("done"),
            "{all}"
        );
    });
}

/// `run` runs the doctor gate before applying anything: a literal secret in `launch.env`
/// stops it with exit 2 and nothing is applied; `--skip-doctor` lets it through to the
/// RayJob apply.
#[test]
fn doctor_errors_stop_run_unless_skipped() {
    let fake = FakeK8s::start();
    let ctx = TestContext::with_fake(&fake).user("tester");
    let secret = "infra.launch.env.WANDB_API_KEY=\"0123456789abcdef0123456789abcdef01234567\"";
    let base = |extra: &[&str]| {
        let mut cmd = ctx.nrl();
        cmd.args([
            "run",
            QS_RECIPE,
            "--infra",
            QS_INFRA,
            "--no-wait",
            "--code-source",
            "image",
            "--code-path",
            "/opt/nemo-rl",
        ])
        .arg(secret)
        .args(extra);
        cmd.output().unwrap()
    };
    let out = base(&[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("nrl::doctor::literal_secret"), "{err}");
    assert!(err.contains("nrl::doctor::gate"), "{err}");
    assert!(
        !fake.request_log().iter().any(|r| r.is_apply()),
        "nothing applied"
    );
    let out = base(&["--skip-doctor"]);
    let err = text(&out.stderr);
    assert!(
        fake.request_log()
            .iter()
            .any(|r| r.is_apply() && r.path.contains("rayjobs")),
        "RayJob applied: {err}"
    );
}

/// Issue 14 item 5 in InteractiveMode: under Kueue the RayJob is created suspended and
/// admitted later. nrl waits through Suspended, and once KubeRay reaches Waiting on the
/// cluster it made after admission, nrl uploads and submits (before the fix nobody
/// submitted: the run failed at Suspended and the admitted cluster would wait forever).
#[test]
fn a_queued_interactive_run_submits_after_admission() {
    let Some(w) = world() else { return };
    w.fake.set_kueue("*", Some(Duration::from_secs(2)));
    let run = id("qs-queued");
    let out = w
        .ctx
        .nrl()
        .args(["run", QS_RECIPE, "--infra", QS_INFRA, "--run-id", &run])
        .args(["--ttl", "0", "grpo.max_num_steps=1"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let waiting = stderr
        .find("waiting for admission (suspended)")
        .unwrap_or_else(|| panic!("{stderr}"));
    let submitted = stderr
        .find(&format!("follow:  nrl job logs {run} -f"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(waiting < submitted, "{stderr}");
    assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");
    let rjs = w.fake.list("ray.io/v1", "RayJob", Some("default"), "");
    assert_eq!(rjs.len(), 1, "{rjs:#?}");
    let rj = &rjs[0];
    assert_eq!(rj["spec"]["suspend"], false);
    assert_eq!(rj["spec"]["jobId"], run.as_str());
    assert_eq!(rj["status"]["jobStatus"], "SUCCEEDED");
    assert_eq!(rj["status"]["jobDeploymentStatus"], "Complete");
    remove_staging(&run);
}

/// A request as the comparison below sees it: method, path and query with what differs
/// between two runs of one launch taken out (the run id, the RayCluster and head pod
/// names KubeRay generates, the resourceVersion a watch resumes from). `None` for the
/// dashboard's port-forwards (and the head Service read before each): the Ray client
/// opens one per HTTP call, and how many calls a log follow makes is a matter of timing.
fn request_shape(
    r: &crate::support::fake_k8s::RequestRecord,
    run: &str,
    rec: &Value,
) -> Option<String> {
    if r.path.ends_with("/portforward") || r.path.contains("-head-svc") {
        return None;
    }
    let mut query: Vec<&str> = r
        .query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("resourceVersion="))
        .collect();
    query.sort_unstable();
    let cluster = rec["k8s"]["raycluster"]
        .as_str()
        .expect("the record names the RayCluster");
    Some(
        format!("{} {}?{}", r.method, r.path, query.join("&"))
            .replace(run, "<run>")
            .replace(cluster, "<cluster>"),
    )
}

/// A run record with what differs between two runs of the same launch taken out.
fn record_shape(w: &World, run: &str) -> Value {
    let mut rec = record(w, run);
    let obj = rec.as_object_mut().unwrap();
    for key in [
        "created_at",
        "updated_at",
        "started_at",
        "ended_at",
        "finished_at",
    ] {
        obj.remove(key);
    }
    let cluster = rec["k8s"]["raycluster"].as_str().unwrap_or("-").to_string();
    let text = serde_json::to_string(&rec)
        .unwrap()
        .replace(run, "<run>")
        .replace(&cluster, "<cluster>")
        .replace(&w.ctx.home().display().to_string(), "<home>");
    serde_json::from_str(&text).unwrap()
}

/// Issue 16 item 1: a playbook's launch is `nrl run`'s. The same launch through `nrl run`
/// and through a one-line script makes the same API requests in the same order (DRA
/// objects, the RayJob, the upload and submit, the record's cluster copy, the DRA objects
/// handed to the RayCluster, the teardown) and leaves the same run record.
#[test]
fn a_script_launch_makes_the_requests_and_the_record_of_nrl_run() {
    let Some(by_cli) = world() else { return };
    let Some(by_script) = world() else { return };
    let (cli_run, script_run) = (id("same-cli"), id("same-rhai"));
    let out = by_cli
        .ctx
        .nrl()
        .args(["run", QS_RECIPE, "--infra", DRA_INFRA, "--run-id", &cli_run])
        .args(["--ttl", "0", "--skip-doctor", "grpo.max_num_steps=2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let dir = tempfile::tempdir().unwrap();
    let playbook = dir.path().join("launch.rhai");
    std::fs::write(
        &playbook,
        format!(
            r#"launch::rayjob(recipe("{QS_RECIPE}", #{{infra: "{DRA_INFRA}", overrides: ["grpo.max_num_steps=2"]}}), #{{run_id: "{script_run}", ttl: 0}}).follow();"#
        ),
    )
    .unwrap();
    let out = by_script
        .ctx
        .nrl()
        .arg("script")
        .arg(&playbook)
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");

    // One sequence per task of the launch (they interleave as timing has it): its own
    // steps, the RayJob watch, and the log follower's head-pod lookups.
    fn is_rayjob_watch(r: &str) -> bool {
        r.starts_with("GET /apis/ray.io/v1/namespaces/default/rayjobs?")
    }
    fn is_follower_lookup(r: &str) -> bool {
        r.starts_with("GET /api/v1/namespaces/default/pods?")
    }
    fn is_launch_step(r: &str) -> bool {
        !is_rayjob_watch(r) && !is_follower_lookup(r)
    }
    let requests = |w: &World, run: &str| -> (Vec<String>, Vec<String>, Vec<String>) {
        let rec = record(w, run);
        let log = w.fake.request_log();
        assert!(
            log.iter().any(|r| r.path.ends_with("/portforward")),
            "the driver log came through a port-forward"
        );
        let shapes: Vec<String> = log
            .iter()
            .filter_map(|r| request_shape(r, run, &rec))
            .collect();
        let of = |task: fn(&str) -> bool| -> Vec<String> {
            shapes.iter().filter(|r| task(r)).cloned().collect()
        };
        (
            of(is_launch_step),
            of(is_rayjob_watch),
            of(is_follower_lookup),
        )
    };
    let (cli, script) = (
        requests(&by_cli, &cli_run),
        requests(&by_script, &script_run),
    );
    assert_eq!(
        script.0,
        cli.0,
        "script requests:\n{}\n\nnrl run requests:\n{}",
        script.0.join("\n"),
        cli.0.join("\n")
    );
    assert_eq!(script.1, cli.1, "the RayJob watch");
    assert_eq!(script.2, cli.2, "the log follower's requests");
    assert!(!cli.1.is_empty() && !cli.2.is_empty());
    assert_eq!(
        record_shape(&by_script, &script_run),
        record_shape(&by_cli, &cli_run)
    );
    assert_eq!(record(&by_script, &script_run)["status"], "succeeded");
    // `nrl verify` finds the playbook's run from another machine (the record's cluster
    // copy) and checks it from the RayJob and the copied driver log.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = by_script
        .ctx
        .nrl()
        .env("HOME", elsewhere.path())
        .args(["verify", &script_run, "-n", "default"])
        .output()
        .unwrap();
    let report = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report}\n{}",
        text(&out.stderr)
    );
    assert!(report.contains("checklist: 4 passed"), "{report}");
}

/// `nrl run --from` promotes a local smoke test to a RayJob: the same merged recipe and
/// infra, and the code the smoke test staged (its run directory) uploaded as the
/// working_dir; the RayJob run then diffs against the smoke test as the same launch.
#[test]
fn a_local_smoke_test_relaunches_as_a_rayjob() {
    let Some(w) = world() else { return };
    let smoke = id("qs-smoke");
    let out = w
        .ctx
        .nrl()
        .args([
            "run", QS_RECIPE, "--infra", QS_INFRA, "--local", "--run-id", &smoke,
        ])
        .arg("grpo.max_num_steps=2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = id("qs-promoted");
    let out = w
        .ctx
        .nrl()
        .args(["run", "--from", &smoke, "--run-id", &run, "--ttl", "0"])
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("step 2/2") && !stdout.contains("step 3/"),
        "{stdout}"
    );
    assert_eq!(record(&w, &run)["kind"], "rayjob");
    assert_eq!(record(&w, &run)["k8s"]["rayjob"], "tester-quickstart");
    let out = w.ctx.nrl().args(["diff", &smoke, &run]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// `nrl diagnose` end to end on a real failure: a RayJob whose driver (run by the real
/// Ray head, through the fake's port-forward) reports a W&B run and then raises. The
/// finding names the exception and the user's innermost frame, from the real Python
/// traceback in the log nrl kept; the W&B URL is among the notes.
#[test]
fn diagnose_explains_a_real_python_failure_from_the_kept_driver_log() {
    let Some(w) = world() else { return };
    let code = tempfile::tempdir().unwrap();
    let dir = code.path().join("examples/quickstart");
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["recipe.yaml", "base.yaml", "infra.yaml"] {
        std::fs::copy(repo().join("examples/quickstart").join(f), dir.join(f)).unwrap();
    }
    std::fs::write(
        dir.join("train.py"),
        "import sys\n\
         print('wandb: 🚀 View run at https://wandb.ai/rl-team/grpo/runs/e2e42x', flush=True)\n\
         def reward(batch):\n    return batch['scores'][3]\n\
         def step(n):\n    return reward({'scores': [0.1] * n})\n\
         print('step 1/4', flush=True)\n\
         step(2)\n",
    )
    .unwrap();
    let run = id("qs-raise");
    let out = w
        .ctx
        .nrl()
        .arg("run")
        .arg(dir.join("recipe.yaml"))
        .arg("--infra")
        .arg(dir.join("infra.yaml"))
        .args(["--run-id", &run, "--ttl", "0", "--repo-root"])
        .arg(code.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));

    let out = w
        .ctx
        .nrl()
        .args(["diagnose", &run, "-o", "json"])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let traceback = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == "nrl::diagnose::python_traceback")
        .unwrap_or_else(|| panic!("no traceback finding: {stdout}"));
    let message = traceback["message"].as_str().unwrap();
    assert!(
        message.contains("IndexError: list index out of range"),
        "{message}"
    );
    assert!(traceback.to_string().contains("train.py"), "{traceback}");
    assert!(
        v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "W&B run: https://wandb.ai/rl-team/grpo/runs/e2e42x"),
        "{stdout}"
    );
}
