//! `scripts/disagg_first_launch.rhai` against the fake API server (with a stand-in Ray
//! dashboard behind the head pods) and `scripts/dev_loop.rhai` in a dev pod on the fake
//! and as a local run. Their plans are snapshot-tested in `script_cli.rs`.

use std::path::Path;
use std::sync::Arc;

use nrl::config::env::MapEnv;
use nrl::diag::Exit;

use crate::support;
use crate::support::dev_env::DevEnv;
use crate::support::fake_k8s::{ClusterFate, FakeK8s};
use crate::support::script_host::{Run, repo, run_with};
use crate::support::stub_ray::StubRay;

/// Run a playbook from `scripts/` in-process with `args`, as user alice.
fn playbook(name: &str, args: &[&str], setup: impl FnOnce(&mut nrl::script::HostOptions)) -> Run {
    let path = format!("scripts/{name}");
    let text = std::fs::read_to_string(repo().join(&path)).expect("playbook");
    run_with(&path, &text, args, setup)
}

const DISAGG: [&str; 4] = [
    "--recipe",
    "tests/data/cluster/recipe.yaml",
    "--infra",
    "tests/data/cluster/infra.yaml",
];

fn disagg_on(fake: &FakeK8s, extra: &[&str]) -> Run {
    let kubeconfig = fake.kubeconfig_path().to_path_buf();
    let mut args = DISAGG.to_vec();
    args.extend_from_slice(extra);
    playbook("disagg_first_launch.rhai", &args, move |o| {
        o.connect.kubeconfig = Some(kubeconfig)
    })
}

#[test]
fn disagg_first_launch_brings_roles_up_in_order_then_shows_status_and_daemon_logs() {
    let fake = FakeK8s::start();
    let ray = StubRay::start();
    fake.use_ray_dashboard(Some(&ray.url()));
    let r = disagg_on(
        &fake,
        &[
            "--yes",
            "--timeout",
            "60",
            "--tail",
            "1",
            "--repo-root",
            "tests/data/cluster",
        ],
    );
    r.ok();
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "doctor: no problems found",
            "",
            "namespace default: bring up, in order",
            "STEP  ROLE              CLUSTER   WORKERS  DAEMON",
            "1     generation        rc-gen    2        -",
            "2     gym               rc-gym    1        gym-daemon",
            "3     training          rc-train  1        -",
            "4     deployments.vllm  vllm      -        -",
            "kuberay.generation: RayCluster rc-gen created, ready",
            "kuberay.gym: RayCluster rc-gym created, ready; daemon gym-daemon submitted",
            "kuberay.training: RayCluster rc-train created, ready",
            "deployments.vllm: Deployment vllm applied, ready; DNS vllm.default.svc.cluster.local",
            "",
            "ROLE        NAME      STATE  HEAD     WORKERS  DAEMON",
            "generation  rc-gen    ready  Running  2/2      -",
            "gym         rc-gym    ready  Running  1/1      gym-daemon=RUNNING",
            "training    rc-train  ready  Running  1/1      -",
            "",
            "--- gym daemon gym-daemon (last 1 lines) ---",
            "line 2",
        ],
        "{out}"
    );
    // Each cluster was ready (its watch ended) before the next one was applied.
    let log = fake.request_log();
    let pos = |pred: &dyn Fn(&support::fake_k8s::RequestRecord) -> bool| {
        log.iter().position(pred).expect("request seen")
    };
    let apply_of = |name: &'static str| {
        move |q: &support::fake_k8s::RequestRecord| {
            q.is_apply() && !q.is_dry_run() && q.name.as_deref() == Some(name)
        }
    };
    let watch_of = |name: &'static str| {
        move |q: &support::fake_k8s::RequestRecord| {
            q.watch
                && q.resource.as_deref() == Some("rayclusters")
                && q.query_param("fieldSelector")
                    .is_some_and(|f| f.contains(name))
        }
    };
    assert!(pos(&apply_of("rc-gen")) < pos(&watch_of("rc-gen")));
    assert!(pos(&watch_of("rc-gen")) < pos(&apply_of("rc-gym")));
    assert!(pos(&watch_of("rc-gym")) < pos(&apply_of("rc-train")));
    assert_eq!(ray.submitted().len(), 1);
    // The preflight ran against the cluster (access reviews) before anything was applied.
    assert!(
        pos(&|q| q.base_resource() == Some("selfsubjectaccessreviews")) < pos(&apply_of("rc-gen"))
    );
}

#[test]
fn disagg_first_launch_stops_on_its_own_rules_before_touching_the_cluster() {
    let fake = FakeK8s::start();
    let kubeconfig = fake.kubeconfig_path().to_path_buf();
    let r = playbook(
        "disagg_first_launch.rhai",
        &[
            "--recipe",
            "tests/data/cluster/recipe.yaml",
            "--infra",
            "tests/data/script/disagg_bad.infra.yaml",
            "--yes",
        ],
        move |o| o.connect.kubeconfig = Some(kubeconfig),
    );
    assert_eq!(r.exit(), Exit::Code(2));
    let out = r.stdout();
    for expected in [
        "disagg::missing_role",
        "infra.kuberay.generation is not declared",
        "`generation` is not set here",
        "disagg::shared_name",
        "the gym cluster's name",
        "disagg::gym_without_daemon",
        "doctor: 2 errors, 1 warning",
    ] {
        assert!(out.contains(expected), "no `{expected}` in:\n{out}");
    }
    assert!(!out.contains("bring up, in order"), "{out}");
    let writes = fake
        .requests(|q| q.method != "GET" && q.base_resource() != Some("selfsubjectaccessreviews"));
    assert!(writes.is_empty(), "{writes:?}");
}

#[test]
fn disagg_first_launch_needs_a_yes_without_a_terminal() {
    let fake = FakeK8s::start();
    let r = disagg_on(&fake, &["--offline"]);
    assert_eq!(r.exit(), Exit::Code(2));
    assert!(
        r.stderr().contains("not confirmed; nothing was changed"),
        "{}",
        r.stderr()
    );
    assert!(fake.request_log().is_empty(), "{:?}", fake.request_log());
}

#[test]
fn disagg_first_launch_stops_at_a_cluster_that_does_not_come_up() {
    let fake = FakeK8s::start();
    let ray = StubRay::start();
    fake.use_ray_dashboard(Some(&ray.url()));
    fake.set_cluster_fate("rc-gym", ClusterFate::StuckPending);
    let r = disagg_on(&fake, &["--yes", "--offline", "--timeout", "2"]);
    assert_eq!(r.exit(), Exit::Code(1));
    let out = r.stdout();
    assert!(
        out.contains("kuberay.generation: RayCluster rc-gen created, ready\n"),
        "{out}"
    );
    assert!(out.contains("kuberay.gym: did not come up: "), "{out}");
    assert!(out.contains("training    rc-train  (not found)"), "{out}");
    assert!(
        fake.get("ray.io/v1", "RayCluster", "default", "rc-train")
            .is_none()
    );
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn dev_loop_syncs_runs_in_the_pod_and_summarises_the_output() {
    let env = DevEnv::new();
    let work = tempfile::tempdir().unwrap();
    write(
        work.path(),
        "nemo_rl/train.py",
        "import sys\nfor s in (1, 2):\n    print(f'step {s}: loss={1/s:.2f} reward={s/10}')\n\
         print('Traceback (most recent call last):', file=sys.stderr)\n\
         print('  File \"nemo_rl/train.py\", line 4, in <module>', file=sys.stderr)\n\
         print('ValueError: bad batch', file=sys.stderr)\nsys.exit(4)\n",
    );
    write(work.path(), "tests/test_a.py", "def test_a():\n    pass\n");
    let kubeconfig = env.fake.kubeconfig_path().to_path_buf();
    let home = env.home().display().to_string();
    let workdir = work.path().to_path_buf();
    let r = playbook(
        "dev_loop.rhai",
        &[
            "--cmd",
            "python3 nemo_rl/train.py",
            "--tail",
            "2",
            "--save",
            "out/round.log",
        ],
        move |o| {
            o.env = Arc::new(MapEnv::new([
                ("NRL_USER", "alice"),
                ("HOME", home.as_str()),
            ]));
            o.connect.kubeconfig = Some(kubeconfig);
            o.workdir = workdir;
        },
    );
    assert_eq!(r.exit(), Exit::Code(4), "{}", r.stderr());
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("== FAILED (exit 4) in ")
            && lines[0].ends_with("s — pod alice-dev-pod"),
        "{out}"
    );
    assert_eq!(
        lines[1..],
        [
            "  step 1: loss=1.00 reward=0.1",
            "  step 2: loss=0.50 reward=0.2",
            "-- last traceback --",
            "Traceback (most recent call last):",
            "  File \"nemo_rl/train.py\", line 4, in <module>",
            "ValueError: bad batch",
            "-- last 2 line(s) --",
            "  File \"nemo_rl/train.py\", line 4, in <module>",
            "ValueError: bad batch",
        ],
        "{out}"
    );
    let err = r.stderr();
    assert!(
        err.contains("-- round 1: python3 nemo_rl/train.py\n"),
        "{err}"
    );
    assert!(err.contains("synced 2 file(s) to alice-dev-pod:."), "{err}");
    let saved = std::fs::read_to_string(work.path().join("out/round.log")).unwrap();
    assert!(saved.contains("ValueError: bad batch"), "{saved}");
}

#[test]
fn dev_loop_runs_the_recipe_locally() {
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().display().to_string();
    let r = playbook(
        "dev_loop.rhai",
        &[
            "--local",
            "--recipe",
            "examples/quickstart/recipe.yaml",
            "--infra",
            "examples/quickstart/infra.yaml",
            "grpo.max_num_steps=2",
        ],
        move |o| {
            o.env = Arc::new(MapEnv::new([
                ("NRL_USER", "alice"),
                ("HOME", "/nonexistent/nrl-test-home"),
                ("XDG_CACHE_HOME", cache_dir.as_str()),
            ]))
        },
    );
    r.ok();
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("== ok in "), "{out}");
    assert!(lines[0].contains("driver.log)"), "{out}");
    assert_eq!(
        lines[1..],
        [
            "  step 1/2: loss=1.0000 reward=0.10",
            "  step 2/2: loss=0.5000 reward=0.20"
        ],
        "{out}"
    );
}
