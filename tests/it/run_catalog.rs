//! The reference's acceptance catalogue for `run` (ref-orchestration §10.1-§10.4), ported
//! as named tests against the fake API server with its scripted Ray runner (no Ray
//! needed). Cases that pin a reference bug are regression tests of the fix; the cases
//! that need a real Ray head live in `run_k8s.rs` / `run_k8s_longlived.rs`.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::support::context::TestContext;
use crate::support::data::repo;
use crate::support::fake_k8s::{ClusterFate, FakeK8s, RayJobScript};

/// A recipe with an inline `infra:` block, as the reference's CLI tests write them.
fn recipe(dir: &Path, infra: &str) -> String {
    let path = dir.join("recipe.yaml");
    std::fs::write(&path, format!("policy: {{x: 1}}\ninfra:\n{infra}")).unwrap();
    path.display().to_string()
}

const RAYJOB_INFRA: &str = "  namespace: ns
  image: img:new
  launch:
    entrypoint: echo
    codeSource: image
    codePath: /opt/nemo-rl
  kuberay:
    training:
      name: rc-train
      spec:
        headGroupSpec:
          rayStartParams: {}
          template:
            spec:
              containers:
              - name: h
                image: old
                resources:
                  limits: {cpu: \"8\", memory: 32Gi}
";

fn fake() -> FakeK8s {
    let f = FakeK8s::builder().namespace("ns").start();
    // Fast teardown: ttlSecondsAfterFinished scaled down.
    f.set_timings(|t| t.ttl_scale = 0.001);
    f
}

/// A context for one test: its HOME is also the scratch directory the recipe is written
/// to; user tester; wide tables.
fn context() -> TestContext {
    TestContext::new().user("tester").columns(200)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---- §10.1 test_cli.py ------------------------------------------------------------------

#[test]
fn check_summary_shows_namespace_and_image() {
    let d = context();
    let r = recipe(d.home(), "  namespace: ns-a\n  image: img:1\n");
    let out = d.nrl().args(["check", &r]).output().unwrap();
    let s = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        s.contains("namespace:") && s.contains("ns-a") && s.contains("img:1"),
        "{s}"
    );
}

#[test]
fn check_summary_lists_each_declared_cluster() {
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d.nrl().args(["check", &r]).output().unwrap();
    let s = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        s.contains("training: rc-train") && s.contains("cpu=8"),
        "{s}"
    );
}

#[test]
fn check_output_writes_full_config_and_manifests() {
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let bundle = d.home().join("bundle.json");
    let out = d
        .nrl()
        .args(["check", &r, "-o"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let b: Value = serde_json::from_str(&std::fs::read_to_string(&bundle).unwrap()).unwrap();
    assert_eq!(b["infra"]["image"], "img:new");
    let rcs: Vec<&Value> = b["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["kind"] == "RayCluster")
        .collect();
    assert_eq!(rcs.len(), 1);
    assert_eq!(rcs[0]["metadata"]["name"], "rc-train");
    assert_eq!(
        rcs[0]["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"],
        "img:new"
    );
}

/// The reference exited 1 for every error; nrl exits 2 for bad input (DESIGN §7).
#[test]
fn check_reports_validation_error_cleanly() {
    let d = context();
    let r = recipe(d.home(), "  namespace: ns-a\n");
    let out = d.nrl().args(["check", &r]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("image"), "{}", text(&out.stderr));
}

#[test]
fn infra_cli_option_both_sources_rejected() {
    let d = context();
    let r = recipe(d.home(), "  namespace: ns-a\n  image: img:1\n");
    let infra = d.home().join("infra.yaml");
    std::fs::write(&infra, "namespace: ns-file\nimage: img:file\n").unwrap();
    let out = d
        .nrl()
        .args(["check", &r, "--infra"])
        .arg(&infra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("infra"));
}

#[test]
fn rayjob_dry_run_prints_manifest_without_applying() {
    let f = fake();
    let d = context();
    let r = recipe(
        d.home(),
        &RAYJOB_INFRA.replace("entrypoint: echo", "entrypoint: python run.py"),
    );
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--dry-run"])
        .output()
        .unwrap();
    let s = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(s.contains("kind: RayJob"), "{s}");
    assert!(s.contains("python run.py"), "{s}");
    assert!(f.request_log().is_empty(), "a dry run contacts nothing");
}

#[test]
fn rayjob_apply_then_wait_success() {
    let f = fake();
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--ttl", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let applies =
        f.requests(|r| r.is_apply() && r.resource.as_deref() == Some("rayjobs") && !r.is_dry_run());
    assert_eq!(applies.len(), 1);
    assert_eq!(applies[0].namespace.as_deref(), Some("ns"));
    let rj = f.get("ray.io/v1", "RayJob", "ns", "rc-train").unwrap();
    assert!(
        rj["spec"]["entrypoint"]
            .as_str()
            .unwrap()
            .ends_with("\necho"),
        "{rj}"
    );
    assert_eq!(rj["spec"]["shutdownAfterJobFinishes"], true);
    // The wait is one watch, not polling (DESIGN §3, ref §11 E3).
    let rayjob_gets = f.requests(|r| r.resource.as_deref() == Some("rayjobs") && r.verb == "get");
    assert!(rayjob_gets.len() <= 2, "{} GETs", rayjob_gets.len());
    let rayjob_watches = f.requests(|r| r.resource.as_deref() == Some("rayjobs") && r.watch);
    assert_eq!(rayjob_watches.len(), 1, "one watch for the whole wait");
}

/// `nrl run` of the RayJob recipe whose job fails with `message`: exit code and stderr.
fn run_failing_rayjob(message: &str) -> (Option<i32>, String) {
    let f = fake();
    f.set_rayjob_script("rc-train", RayJobScript::fails(message));
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--ttl", "0"])
        .output()
        .unwrap();
    (out.status.code(), text(&out.stderr))
}

#[test]
fn rayjob_failed_job_exits_non_zero() {
    let (code, e) = run_failing_rayjob("OOM");
    assert_eq!(code, Some(1), "{e}");
    assert!(e.contains("message: OOM"), "{e}");
}

/// A job's failure message is written by the job (Ray quotes the last lines of its
/// output): on nrl's stderr its escape sequences are shown, not obeyed (issue 15 item 5).
#[test]
fn rayjob_failure_messages_cannot_drive_the_terminal() {
    let (code, e) =
        run_failing_rayjob("exit 3: \u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[8mhidden\u{202e}txt");
    assert_eq!(code, Some(1), "{e}");
    assert!(
        !e.contains('\u{1b}') && !e.contains('\u{202e}') && !e.contains('\u{7}'),
        "{e:?}"
    );
    assert!(
        e.contains("exit 3: \\e]0;owned\\x07\\e[2J\\e[8mhidden\\u{202e}txt"),
        "{e}"
    );
}

/// Regression of ref §11 C2: KubeRay reports a STOPPED job as `Complete`; the reference
/// exited 0.
#[test]
fn rayjob_stopped_job_exits_1() {
    let f = fake();
    f.set_rayjob_script("rc-train", RayJobScript::stopped());
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--ttl", "0"])
        .output()
        .unwrap();
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(e.contains("deployment=Complete job=STOPPED"), "{e}");
}

/// Regression of ref §11 C1: `ValidationFailed` is terminal; the reference kept polling
/// for up to 24 h. (`Suspended` is not: issue 14 item 5, see `tests/it/launch_rayjob.rs`.)
#[test]
fn rayjob_validation_failed_is_terminal() {
    let terminal = "ValidationFailed";
    let f = fake();
    f.set_cluster_fate("*", ClusterFate::StuckPending);
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let child = d
        .command()
        .envs(f.env())
        .args(["run", &r])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = f.wait_until_blocking(Duration::from_secs(30), |f| {
        f.field(
            "ray.io/v1",
            "RayJob",
            "ns",
            "rc-train",
            "status.jobDeploymentStatus",
        ) == Some(Value::from("Initializing"))
    });
    assert!(started);
    f.patch_status(
        "ray.io/v1",
        "RayJob",
        "ns",
        "rc-train",
        serde_json::json!({"jobDeploymentStatus": terminal}),
    );
    let out = child.wait_with_output().unwrap();
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(
        e.contains(&format!("finished: deployment={terminal}")),
        "{e}"
    );
}

#[test]
fn rayjob_no_wait_skips_poll() {
    let f = fake();
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--no-wait"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(f.requests(|r| r.watch).is_empty(), "no wait, no watch");
}

#[test]
fn rayjob_errors_when_entrypoint_missing() {
    let d = context();
    let infra = RAYJOB_INFRA.replace("    entrypoint: echo\n", "");
    let r = recipe(d.home(), &infra);
    let out = d.nrl().args(["run", &r, "--dry-run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("entrypoint"));
}

/// The reference stubbed its orchestrator; here the flags drive a real long-lived run
/// (exec submitter, code in the "image", no daemons, no wait) against the fake.
#[test]
fn run_invokes_orchestrate_with_flags() {
    let f = fake();
    let d = context();
    let r = recipe(
        d.home(),
        &RAYJOB_INFRA.replace("entrypoint: echo", "entrypoint: python run.py"),
    );
    let exec_tmp = tempfile::tempdir().unwrap();
    let out = d
        .nrl()
        .envs(f.env())
        .args([
            "run",
            &r,
            "--raycluster",
            "--mode",
            "batch",
            "--code-source",
            "image",
        ])
        .args([
            "--code-path",
            "/opt/nemo-rl",
            "--run-id",
            "run-x",
            "--skip-daemons",
            "--recreate",
            "--no-wait",
        ])
        .arg(format!(
            "infra.submit.execTmpDir={}",
            exec_tmp.path().display()
        ))
        .output()
        .unwrap();
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(e.contains("run id:  run-x"), "{e}");
    assert!(
        e.contains("mode=batch submitter=exec code_source=image wait=no"),
        "{e}"
    );
    assert!(exec_tmp.path().join("nrl-run-x/launch.sh").is_file());
}

// ---- §10.2 test_orchestrate.py (the cases that need no Ray) --------------------------------

#[test]
fn submit_training_raises_when_entrypoint_unset() {
    let d = context();
    let infra = RAYJOB_INFRA.replace("    entrypoint: echo\n", "");
    let r = recipe(d.home(), &infra);
    let f = fake();
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--raycluster"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("entrypoint"));
    assert!(
        f.request_log().is_empty(),
        "checked before anything is brought up (ref §11 B3)"
    );
}

#[test]
fn run_skip_daemons_bypasses_daemon_submit() {
    let f = fake();
    let d = context();
    let exec_tmp = tempfile::tempdir().unwrap();
    let infra =
        std::fs::read_to_string(repo().join("tests/data/run/longlived.infra.yaml")).unwrap();
    let infra_path = d.home().join("ll.infra.yaml");
    std::fs::write(
        &infra_path,
        infra.replace("namespace: default", "namespace: ns"),
    )
    .unwrap();
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", "examples/quickstart/recipe.yaml", "--infra"])
        .arg(&infra_path)
        .args([
            "--raycluster",
            "--skip-daemons",
            "--submitter",
            "exec",
            "--code-source",
            "image",
        ])
        .args(["--code-path", "/opt/code", "--no-wait"])
        .arg(format!(
            "infra.submit.execTmpDir={}",
            exec_tmp.path().display()
        ))
        .output()
        .unwrap();
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(
        e.contains("[gym] --skip-daemons: not submitting the daemon"),
        "{e}"
    );
    assert!(!e.contains("submitting daemon"), "{e}");
    assert!(
        e.contains("[gym] applying RayCluster") && e.contains("[training] applying RayCluster"),
        "{e}"
    );
}

/// ref §10.2 #21-#32 (RecipePathInPod, RewriteEntrypointRecipe). nrl does not translate
/// the recipe path into the pod's checkout: it stages the resolved recipe (overrides
/// included, ref §11 A3/A4) and points every `--config X.yaml` at it, wherever the
/// recipe file lives.
#[test]
fn rewrite_entrypoint_recipe_cases() {
    use nrl::render::rayjob::rewrite_config_flag as rw;
    let to = "/tmp/nrl-r/nrl_run.yaml";
    let (t, changed) = rw(
        "cd /opt/nemo-rl && python train.py --config a/b.yaml --foo",
        to,
    );
    assert!(t.contains(&format!("--config {to}")) && !t.contains("a/b.yaml"));
    assert_eq!(changed, ["a/b.yaml"]);
    assert_eq!(
        rw(&format!("x --config {to}"), to).1,
        Vec::<String>::new(),
        "already pointing there"
    );
    assert_eq!(rw("x --config=a/b.yaml", to).0, format!("x --config={to}"));
    assert_eq!(
        rw("x --config \"a/b.yaml\"", to).0,
        format!("x --config \"{to}\"")
    );
    assert_eq!(
        rw("x --config 'a/b.yaml'", to).0,
        format!("x --config '{to}'")
    );
    let untouched = "x --config-name=foo --config-dir=bar --config-path conf --configs a.yaml";
    assert_eq!(rw(untouched, to), (untouched.to_string(), vec![]));
    assert_eq!(rw("x --some-other-flag", to).0, "x --some-other-flag");
    assert_eq!(
        rw("x --config a/b.yaml", "nrl_run.yaml").0,
        "x --config nrl_run.yaml"
    );
    let (t, changed) = rw(
        "python train.py --config a.yaml ; python verify.py --config a.yaml",
        "x.yaml",
    );
    assert_eq!(t.matches("--config x.yaml").count(), 2);
    assert!(!t.contains("a.yaml"));
    assert_eq!(changed.len(), 1, "one distinct path rewritten");
}

// ---- §10.4 test_submitters.py ------------------------------------------------------------

#[test]
fn submission_handle_roundtrips_and_missing_is_not_found() {
    use nrl::launch::records::{K8sRun, RunKind, RunRecord, RunStore};
    let d = context();
    let store = RunStore::new(d.home());
    let mut ray = RunRecord::new("raysubmit-abc", RunKind::RayclusterPortforward);
    ray.cluster = Some("rc-train".into());
    ray.namespace = Some("ns".into());
    ray.k8s = Some(K8sRun {
        submission_id: Some("raysubmit-abc".into()),
        ..K8sRun::default()
    });
    let mut exec = RunRecord::new("train-1699999999", RunKind::RayclusterExec);
    exec.k8s = Some(K8sRun {
        pod: Some("ray-head-xyz".into()),
        exec_dir: Some("/tmp/nrl-train-1699999999".into()),
        ..K8sRun::default()
    });
    for rec in [ray, exec] {
        store.save(&rec).unwrap();
        assert!(store.record_path(&rec.id).exists());
        assert_eq!(store.load(&rec.id).unwrap(), rec);
    }
    assert_eq!(
        store.load("never-submitted").unwrap_err().code,
        "nrl::run::not_found"
    );
}

#[test]
fn build_submitter_port_forward_default_and_exec_when_selected() {
    use nrl::launch::raycluster::submit::exec::run_dir;
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d
        .nrl()
        .args(["check", &r, "--explain", "infra.submit.submitter"])
        .output()
        .unwrap();
    assert!(
        text(&out.stdout).contains("portForward"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(run_dir("/scratch", "rid-1"), "/scratch/nrl-rid-1");
}

/// Regression of ref §11 D2: `job logs <bogus id>` was a `[tail error]` line and exit 0.
#[test]
fn job_logs_of_an_unknown_run_is_an_error() {
    let f = fake();
    let d = context();
    let out = d
        .nrl()
        .envs(f.env())
        .args(["job", "logs", "no-such-run", "-f"])
        .output()
        .unwrap();
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("nrl::run::not_found") && e.contains("no-such-run"),
        "{e}"
    );
}

// ---- one cluster context (issue 14 item 1) -----------------------------------------------

/// The fake's kubeconfig with its context's namespace changed.
fn kubeconfig_with_namespace(f: &FakeK8s, path: &Path, ns: &str) {
    let text = std::fs::read_to_string(f.kubeconfig_path()).unwrap();
    assert!(text.contains("namespace: default"), "{text}");
    std::fs::write(
        path,
        text.replace("namespace: default", &format!("namespace: {ns}")),
    )
    .unwrap();
}

#[test]
fn the_namespace_comes_from_the_kubeconfig_that_is_used() {
    // Regression: with `--kubeconfig FILE`, a recipe without a namespace was rendered for
    // the namespace of `KUBECONFIG`/`~/.kube/config` (here `elsewhere`) while the client
    // used FILE.
    let f = FakeK8s::builder()
        .namespace("team-a")
        .namespace("elsewhere")
        .start();
    let d = context();
    std::fs::create_dir_all(d.home().join(".kube")).unwrap();
    kubeconfig_with_namespace(&f, &d.home().join(".kube/config"), "elsewhere");
    let flag_file = d.home().join("team-a.kubeconfig");
    kubeconfig_with_namespace(&f, &flag_file, "team-a");
    let infra = RAYJOB_INFRA.replace("  namespace: ns\n", "");
    let r = recipe(d.home(), &infra);

    let out = d
        .nrl()
        .args(["run", &r, "--dry-run", "--kubeconfig"])
        .arg(&flag_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("namespace: team-a"),
        "{}",
        text(&out.stdout)
    );

    let out = d
        .nrl()
        .args(["run", &r, "--ttl", "0", "--kubeconfig"])
        .arg(&flag_file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let applies = f.requests(|r| r.is_apply() && !r.is_dry_run());
    assert!(!applies.is_empty());
    assert!(
        applies
            .iter()
            .all(|r| r.namespace.as_deref() == Some("team-a")),
        "{:?}",
        applies.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert!(f.get("ray.io/v1", "RayJob", "team-a", "rc-train").is_some());
}

#[test]
fn every_request_says_it_is_nrl() {
    let f = fake();
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--ttl", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let all = f.requests(|_| true);
    assert!(!all.is_empty());
    let want = format!("nrl/{}", env!("CARGO_PKG_VERSION"));
    for r in &all {
        assert_eq!(
            r.user_agent.as_deref(),
            Some(want.as_str()),
            "{} {}",
            r.method,
            r.path
        );
    }
}

#[test]
fn the_summary_names_only_the_records_that_were_written() {
    // Regression (issue 14 item 8): the summary said "cluster copy: ConfigMap …" after
    // the ConfigMap write had been refused.
    let f = fake();
    f.deny("patch", "configmaps", "ns");
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--no-wait"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: the run record could not be kept on the cluster"),
        "{err}"
    );
    let record = err
        .lines()
        .find(|l| l.trim_start().starts_with("record:"))
        .unwrap_or_else(|| panic!("no record line in:\n{err}"));
    assert!(
        record.ends_with("(no cluster copy: it could not be written, see the warning above)"),
        "{record}"
    );
    assert!(!err.contains("cluster copy: ConfigMap"), "{err}");
}

/// Issue 14 item 5: under Kueue the RayJob is created suspended and admitted later.
/// `Suspended` is not the end: nrl says it waits for admission, then follows the job to
/// its end on the cluster KubeRay creates after admission (before the fix: exit 1 at
/// `Suspended`).
#[test]
fn a_suspended_rayjob_waits_for_admission_then_runs() {
    let f = fake();
    f.set_kueue("rc-train", Some(Duration::from_secs(2)));
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--ttl", "0"])
        .output()
        .unwrap();
    let e = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{e}");
    let suspended = e
        .find("[rayjob] rc-train waiting for admission (suspended)")
        .unwrap_or_else(|| panic!("{e}"));
    assert!(e.contains("deployment=Suspended job=None"), "{e}");
    let finished = e
        .find("finished: deployment=Complete job=SUCCEEDED")
        .unwrap_or_else(|| panic!("{e}"));
    assert!(suspended < finished, "{e}");
    let rj = f.get("ray.io/v1", "RayJob", "ns", "rc-train").unwrap();
    assert_eq!(rj["spec"]["suspend"], Value::from(false));
    assert_eq!(rj["status"]["jobDeploymentStatus"], "Complete");
}

/// Issue 14 item 8 (one piece): in InteractiveMode nrl first waits for `Waiting` (the
/// cluster up, to upload and submit); its timeout names that state, not "finished".
#[test]
fn the_wait_for_waiting_times_out_naming_that_state() {
    let f = fake();
    f.set_cluster_fate("*", ClusterFate::StuckPending);
    let d = context();
    std::fs::create_dir_all(d.home().join("code")).unwrap();
    std::fs::write(d.home().join("code/train.py"), "print('hi')\n").unwrap();
    let infra = RAYJOB_INFRA.replace(
        "    codeSource: image\n    codePath: /opt/nemo-rl\n",
        "    codeSource: upload\n",
    );
    let r = recipe(d.home(), &infra);
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--timeout", "3s", "--repo-root"])
        .arg(d.home())
        .output()
        .unwrap();
    let e = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{e}");
    assert!(
        e.contains("to be in state Waiting (its RayCluster ready for the upload)"),
        "{e}"
    );
    assert!(!e.contains("to be finished"), "{e}");
}

/// The RayJob `nrl run` created is labelled with its owner; `--replace` by another user
/// is refused and leaves it alone; `--force` deletes it and takes over the name (issue 15
/// item 8: the ephemeral path deleted another user's running RayJob).
#[test]
fn run_replace_refuses_another_users_rayjob_unless_forced() {
    let f = fake();
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let base = ["run", &r, "--no-wait", "--rayjob-name", "shared-rj"];
    let out = d
        .nrl()
        .envs(f.env())
        .env("NRL_USER", "bob")
        .args(base)
        .args(["--run-id", "bobs-run-1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let bobs = f.get("ray.io/v1", "RayJob", "ns", "shared-rj").unwrap();
    assert_eq!(bobs["metadata"]["labels"]["nrl-k8s/owner"], "bob");
    // Its record ConfigMap is labelled too.
    let cm = f
        .get("v1", "ConfigMap", "ns", "nrl-run-bobs-run-1")
        .unwrap();
    assert_eq!(cm["metadata"]["labels"]["nrl-k8s/owner"], "bob");

    let out = d
        .nrl()
        .envs(f.env())
        .args(base)
        .arg("--replace")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("RayJob shared-rj in namespace `ns` is owned by 'bob' (you are 'tester')"),
        "{stderr}"
    );
    assert!(stderr.contains("--force"), "{stderr}");
    let still = f.get("ray.io/v1", "RayJob", "ns", "shared-rj").unwrap();
    assert_eq!(
        still["metadata"]["uid"], bobs["metadata"]["uid"],
        "not deleted"
    );

    let out = d
        .nrl()
        .envs(f.env())
        .args(base)
        .args(["--replace", "--force"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("is owned by 'bob'; --force: acting anyway"),
        "{stderr}"
    );
    let mine = f.get("ray.io/v1", "RayJob", "ns", "shared-rj").unwrap();
    assert_ne!(mine["metadata"]["uid"], bobs["metadata"]["uid"], "replaced");
    assert_eq!(mine["metadata"]["labels"]["nrl-k8s/owner"], "tester");
}

/// A RayJob without the `nrl-k8s/owner` label (made by kubectl) is refused by
/// `run --replace`, naming the label, unless `--force`.
#[test]
fn run_replace_refuses_an_unlabelled_rayjob_naming_the_label() {
    let f = fake();
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let uid = f.put(serde_json::json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "hand-rj", "namespace": "ns"},
        "spec": {"entrypoint": "echo by hand"},
    }))["metadata"]["uid"]
        .clone();
    let base = [
        "run",
        &r,
        "--no-wait",
        "--rayjob-name",
        "hand-rj",
        "--replace",
    ];
    let out = d.nrl().envs(f.env()).args(base).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("RayJob hand-rj in namespace `ns` has no `nrl-k8s/owner` label"),
        "{stderr}"
    );
    let still = f.get("ray.io/v1", "RayJob", "ns", "hand-rj").unwrap();
    assert_eq!(still["metadata"]["uid"], uid, "not deleted");
    let out = d
        .nrl()
        .envs(f.env())
        .args(base)
        .arg("--force")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mine = f.get("ray.io/v1", "RayJob", "ns", "hand-rj").unwrap();
    assert_ne!(mine["metadata"]["uid"], uid, "replaced");
    assert_eq!(mine["metadata"]["labels"]["nrl-k8s/owner"], "tester");
}

/// `run --raycluster --replace` stops the jobs on the role clusters and resets them: on
/// another user's RayCluster it is refused by the same owner check before any job is
/// stopped or object changed (issue 15 item 8).
#[test]
fn run_raycluster_replace_refuses_another_users_cluster() {
    let f = fake();
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    f.put(serde_json::json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc-train", "namespace": "ns",
                     "labels": {"nrl-k8s/owner": "bob"}},
        "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {
            "containers": [{"name": "h", "image": "img:new"}]}}}},
    }));
    f.clear_request_log();
    let out = d
        .nrl()
        .envs(f.env())
        .args(["run", &r, "--raycluster", "--replace", "--no-wait"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("RayCluster rc-train in namespace `ns` is owned by 'bob' (you are 'tester')"),
        "{stderr}"
    );
    // The doctor's access reviews are questions, not changes.
    let writes: Vec<String> = f
        .requests(|q| {
            q.method != "GET" && q.resource.as_deref() != Some("selfsubjectaccessreviews")
        })
        .iter()
        .map(|q| format!("{} {}", q.verb, q.resource.clone().unwrap_or_default()))
        .collect();
    assert!(writes.is_empty(), "{writes:?}");
    let still = f.get("ray.io/v1", "RayCluster", "ns", "rc-train").unwrap();
    assert_eq!(still["metadata"]["labels"]["nrl-k8s/owner"], "bob");
}

/// `job stop` of another user's run is refused by the owner check before anything is
/// stopped (issue 15 item 8).
#[test]
fn job_stop_refuses_another_users_run() {
    let f = fake();
    let d = context();
    let r = recipe(d.home(), RAYJOB_INFRA);
    let out = d
        .nrl()
        .envs(f.env())
        .env("NRL_USER", "bob")
        .args(["run", &r, "--no-wait", "--run-id", "bobs-run-2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = d
        .nrl()
        .envs(f.env())
        .args(["job", "stop", "bobs-run-2"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is owned by 'bob' (you are 'tester')"),
        "{stderr}"
    );
    assert!(stderr.contains("--force"), "{stderr}");
}
