//! The launch library against the fake API server (no Ray needed): the exec submitter
//! (ref-orchestration §10.4 "ExecLauncher", "ExecObservability", "HeadPodLookup"), the
//! dashboard through the native port-forward (§10.3 "DashboardUrl…"), daemon jobs. The
//! §10.2 "EnsureCluster"/"BringUpCluster"/"SubmitDaemon" cases are in
//! `cluster_cli/orchestrate.rs`.

use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use nrl::config::env::MapEnv;
use nrl::config::layers::{LoadRequest, LoadedConfig, load};
use nrl::config::schema::Role;
use nrl::k8s::{ConnectOptions, K8s};
use nrl::launch::Progress;
use nrl::launch::dashboard::dashboard_session;
use nrl::launch::raycluster::submit::exec::{self, ExecLaunch, ExecState};
use nrl::launch::raycluster::{EnsureOptions, ensure_cluster};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::fake_k8s::FakeK8s;

const INFRA: &str = "\
namespace: default
image: img:1
labels:
  nrl-k8s/owner: tester
launch:
  entrypoint: python run.py --config conf.yaml
kuberay:
  training:
    name: rc-train
    spec:
      rayVersion: \"2.60.0\"
      headGroupSpec:
        rayStartParams: {}
        template:
          spec:
            containers:
            - name: ray-head
      workerGroupSpecs:
      - groupName: w
        replicas: 1
        rayStartParams: {}
        template:
          spec:
            containers:
            - name: ray-worker
";

fn cfg(dir: &std::path::Path) -> LoadedConfig {
    std::fs::write(dir.join("recipe.yaml"), "policy: {x: 1}\n").unwrap();
    std::fs::write(dir.join("infra.yaml"), INFRA).unwrap();
    let mut req = LoadRequest::new(
        dir.join("recipe.yaml"),
        Arc::new(MapEnv::new([
            ("NRL_USER", "tester"),
            ("HOME", "/nonexistent"),
        ])),
    );
    req.infra = Some(dir.join("infra.yaml"));
    load(&req).unwrap()
}

async fn k8s(fake: &FakeK8s) -> K8s {
    K8s::connect(&ConnectOptions {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        ..ConnectOptions::default()
    })
    .await
    .unwrap()
}

const T: Duration = Duration::from_secs(30);

async fn up(fake: &FakeK8s, k: &K8s, dir: &std::path::Path) {
    let c = cfg(dir);
    let opts = EnsureOptions {
        timeout: T,
        ..EnsureOptions::default()
    };
    ensure_cluster(k, &c, Role::Training, &opts, &Progress::quiet())
        .await
        .unwrap();
    assert!(
        fake.pod_name("default", "ray.io/cluster=rc-train,ray.io/node-type=head")
            .is_some()
    );
}

fn execs(fake: &FakeK8s) -> Vec<String> {
    fake.requests(|r| r.resource.as_deref() == Some("pods/exec"))
        .into_iter()
        .map(|r| {
            form_urlencoded::parse(r.query.as_bytes())
                .filter(|(k, _)| k == "command")
                .map(|(_, v)| v.into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// §10.4 #6 submit_invokes_mkdir_cp_exec, #7 launcher_contains_nohup…, #12
/// returned_handle_populated, #14 status, #15 stop_signals_term_then_kill; a reused id is
/// refused instead of reading the old pid file (ref §11 D4).
#[tokio::test]
async fn exec_submitter_on_the_head_pod() {
    let fake = FakeK8s::start();
    let k = k8s(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    up(&fake, &k, dir.path()).await;
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().display().to_string();
    let env = IndexMap::from([("FOO".to_string(), "bar".to_string())]);
    let launch = ExecLaunch {
        run_id: "rid-7",
        entrypoint: "echo started; sleep 30",
        env: &env,
        workdir: None,
        recipe_yaml: Some("x: 1\n"),
        tmp_root: &root,
    };
    fake.clear_request_log();
    let run = exec::submit(&k, "default", "rc-train", &launch)
        .await
        .unwrap();
    let head = fake
        .pod_name("default", "ray.io/cluster=rc-train,ray.io/node-type=head")
        .unwrap();
    assert_eq!(run.pod, head);
    assert_eq!(run.dir, format!("{root}/nrl-rid-7"));
    assert_eq!(
        (
            run.run_id.as_str(),
            run.cluster.as_str(),
            run.namespace.as_str()
        ),
        ("rid-7", "rc-train", "default")
    );
    let cmds = execs(&fake);
    assert!(cmds[0].contains("mkdir"), "{cmds:?}");
    assert!(
        cmds.iter()
            .any(|c| c.contains("cat >") && c.ends_with("/nrl-rid-7/launch.sh")),
        "{cmds:?}"
    );
    let start = cmds.last().unwrap();
    for part in ["set -m", "nohup", "</dev/null", "stdout.log", "/pid"] {
        assert!(start.contains(part), "{part} in {start}");
    }
    assert!(start.starts_with("bash -c"), "{start}");
    let launcher = std::fs::read_to_string(scratch.path().join("nrl-rid-7/launch.sh")).unwrap();
    assert!(launcher.contains("export FOO=bar\n"));
    assert!(launcher.contains("export NRL_K8S_RUN_ID=rid-7\n"));

    let running = async {
        for _ in 0..100 {
            if exec::status(&k, &run).await.unwrap() == ExecState::Running {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    };
    assert!(running.await);
    let again = exec::submit(&k, "default", "rc-train", &launch)
        .await
        .unwrap_err();
    assert_eq!(again.code, "nrl::run::exec_dir");

    fake.clear_request_log();
    assert!(exec::stop(&k, &run, false).await.unwrap());
    let term = execs(&fake);
    assert!(
        term.iter().any(|c| c.ends_with("/nrl-rid-7 TERM")),
        "{term:?}"
    );
    let mut state = ExecState::Running;
    for _ in 0..100 {
        state = exec::status(&k, &run).await.unwrap();
        if state != ExecState::Running {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(state, ExecState::Exited(143));
    fake.clear_request_log();
    assert!(!exec::stop(&k, &run, true).await.unwrap(), "already ended");
    assert!(execs(&fake).iter().any(|c| c.ends_with("/nrl-rid-7 KILL")));
}

/// §10.4 #11 invalid_run_id_rejected (before any request), #16 no running head pod names
/// the cluster and namespace.
#[tokio::test]
async fn exec_submit_refusals() {
    let fake = FakeK8s::start();
    let k = k8s(&fake).await;
    let env = IndexMap::new();
    let mut launch = ExecLaunch {
        run_id: "has spaces",
        entrypoint: "true",
        env: &env,
        workdir: None,
        recipe_yaml: None,
        tmp_root: "/tmp",
    };
    fake.clear_request_log();
    let e = exec::submit(&k, "default", "rc-train", &launch)
        .await
        .unwrap_err();
    assert_eq!(e.code, "nrl::run::run_id");
    assert!(fake.request_log().is_empty());
    launch.run_id = "ok-1";
    let e = exec::submit(&k, "default", "rc-train", &launch)
        .await
        .unwrap_err();
    assert_eq!(e.code, "nrl::cluster::no_head");
    assert!(
        e.message.contains("rc-train") && e.message.contains("default"),
        "{}",
        e.message
    );
}

/// §10.3 #4/#5: the dashboard is reached through the API's port-forward (no kubectl on
/// PATH is needed), on 127.0.0.1, and torn down when the last handle goes.
#[tokio::test]
async fn dashboard_through_the_native_port_forward_is_torn_down() {
    let fake = FakeK8s::start();
    let k = k8s(&fake).await;
    let dir = tempfile::tempdir().unwrap();
    up(&fake, &k, dir.path()).await;
    let target = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = target.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = target.accept().await {
            let _ = s.write_all(b"dashboard").await;
        }
    });
    fake.forward_port_by_labels("default", "ray.io/node-type=head", 8265, addr);
    let dash = dashboard_session(&k, "default", "rc-train").await.unwrap();
    assert!(dash.url.starts_with("http://127.0.0.1:"), "{}", dash.url);
    let local = dash
        .forward
        .as_ref()
        .expect("a forward outside the cluster")
        .local;
    let mut s = tokio::net::TcpStream::connect(local).await.unwrap();
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.unwrap();
    assert_eq!(buf, b"dashboard");
    drop(dash);
    // The listener closes asynchronously after the last handle goes: poll until refused.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut stopped = false;
    while !stopped && std::time::Instant::now() < deadline {
        stopped = tokio::net::TcpStream::connect(local).await.is_err();
        if !stopped {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    assert!(stopped, "the forward stopped");
}

/// Regression of ref §11 B5: a daemon's env travels as `export` lines (not
/// `runtime_env.env_vars`), and with the code in the image nothing is uploaded.
#[test]
fn daemon_jobs_follow_the_code_source() {
    use nrl::config::schema::DaemonSpec;
    use nrl::launch::raycluster::daemon::{DaemonOptions, daemon_job};
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("gym")).unwrap();
    std::fs::write(dir.path().join("gym/serve.py"), "print(1)\n").unwrap();
    let c = cfg(dir.path());
    let d = DaemonSpec {
        entrypoint: "python gym/serve.py".into(),
        submission_id: Some("gym-daemon".into()),
        env: IndexMap::from([("PORT".to_string(), "8000".to_string())]),
        health_check_url: None,
        health_check_timeout_s: 300,
        ray_upload_paths: Some(vec!["gym".into()]),
    };
    let mut opts = DaemonOptions {
        replace: false,
        repo_root: dir.path().to_path_buf(),
        code_path: None,
    };
    let (ep, files) = daemon_job(&c, &d, &opts).unwrap();
    assert_eq!(ep, "export PORT=8000\npython gym/serve.py");
    let files = files.expect("uploaded");
    assert_eq!(
        files.files().map(|(p, _)| p).collect::<Vec<_>>(),
        ["gym/serve.py"]
    );
    opts.code_path = Some("/opt/nemo-rl".into());
    let (ep, files) = daemon_job(&c, &d, &opts).unwrap();
    assert_eq!(ep, "export PORT=8000\ncd /opt/nemo-rl\npython gym/serve.py");
    assert!(files.is_none(), "code in the image: no upload");
}
