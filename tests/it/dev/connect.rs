//! `nrl dev connect` and `nrl dev stop`: the pod from the defaults, waiting, running a
//! command, image mismatch, recreate, and a stop that waits.

use std::io::Write;
use std::process::Stdio;

use crate::support::dev_env::*;

#[test]
fn connect_creates_the_pod_waits_and_runs_a_command() {
    let env = DevEnv::new();
    let r = run(env.nrl().args([
        "dev",
        "connect",
        "--",
        "sh",
        "-c",
        "echo \"user=$USER\"; echo to-stderr >&2; exit 7",
    ]));
    assert_eq!(r.code, 7, "the remote exit code is passed through: {r:?}");
    assert_eq!(r.stdout, "user=alice\n", "{r:?}");
    assert!(r.stderr.contains("to-stderr"), "{r:?}");
    assert!(
        r.stderr.contains("context `fake`, namespace `default`"),
        "{r:?}"
    );
    assert!(
        r.stderr
            .contains("creating dev pod alice-dev-pod (image busybox:1.36)"),
        "{r:?}"
    );

    // The pod comes from the user defaults' `dev:` section.
    let pod = env.pod().expect("pod created");
    assert_eq!(pod["metadata"]["labels"]["nrl-k8s/owner"], USER);
    assert_eq!(pod["spec"]["containers"][0]["image"], IMAGE);
    assert_eq!(
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "home-ws"
    );
    assert_eq!(pod["spec"]["imagePullSecrets"][0]["name"], "regcred");
    assert_eq!(
        pod["spec"]["containers"][0]["envFrom"][0]["secretRef"]["name"],
        SECRET
    );
    let script = pod["spec"]["containers"][0]["command"].to_string();
    for download in ["curl", "wget", "http"] {
        assert!(
            !script.contains(download),
            "the start-up downloads nothing: {script}"
        );
    }
    // Waiting is a watch, not polling.
    let watches = env
        .fake
        .requests(|q| q.watch && q.resource.as_deref() == Some("pods"));
    assert!(!watches.is_empty());
    assert!(
        env.fake
            .requests(|q| q.method == "GET" && !q.watch && q.name.as_deref() == Some(POD))
            .len()
            <= 2
    );

    // Connecting again reuses the running pod.
    env.fake.clear_request_log();
    let r = run(env.nrl().args(["dev", "connect", "--", "true"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        env.fake.requests(|q| q.is_apply()).is_empty(),
        "no second create"
    );
}

#[test]
fn stdin_is_forwarded_without_a_terminal() {
    let env = DevEnv::new();
    let mut child = env
        .command()
        .args(["dev", "connect", "--", "sh", "-c", "tr a-z A-Z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nrl starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"shout\n")
        .expect("write");
    let out = child.wait_with_output().expect("nrl ends");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "SHOUT\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn an_image_mismatch_points_at_recreate_which_replaces_the_pod() {
    let env = DevEnv::new();
    assert_eq!(
        run(env.nrl().args(["dev", "connect", "--", "true"])).code,
        0
    );
    let uid = env.pod().unwrap()["metadata"]["uid"].clone();

    let r = run(env
        .nrl()
        .args(["dev", "connect", "--image", "busybox:1.37", "--", "true"]));
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("runs image busybox:1.36, not busybox:1.37"),
        "{r:?}"
    );
    assert!(r.stderr.contains("--recreate"), "{r:?}");
    assert_eq!(env.pod().unwrap()["metadata"]["uid"], uid, "left alone");

    let r = run(env.nrl().args([
        "dev",
        "connect",
        "--image",
        "busybox:1.37",
        "--recreate",
        "--",
        "true",
    ]));
    assert_eq!(r.code, 0, "{r:?}");
    let pod = env.pod().unwrap();
    assert_ne!(pod["metadata"]["uid"], uid);
    assert_eq!(pod["spec"]["containers"][0]["image"], "busybox:1.37");
}

#[test]
fn a_pod_that_cannot_pull_its_image_fails_fast() {
    let env = DevEnv::new();
    env.fake
        .set_pod_fate("nrl-k8s/component=dev-pod", PodFate::ImagePullBackOff);
    let r = run(env.nrl().args(["dev", "connect", "--", "true"]));
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("cannot start: ImagePullBackOff"), "{r:?}");
}

#[test]
fn without_any_image_configured_connect_says_how_to_set_one() {
    let env = DevEnv::bare();
    let r = run(env.nrl().args(["dev", "connect", "--", "true"]));
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--image"), "{r:?}");
    assert!(env.pod().is_none());
    // `--image` alone is enough.
    let r = run(env
        .nrl()
        .args(["dev", "connect", "--image", IMAGE, "--", "true"]));
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn stop_waits_until_the_pod_is_gone() {
    let env = DevEnv::new();
    assert_eq!(
        run(env.nrl().args(["dev", "connect", "--", "true"])).code,
        0
    );
    // A slow termination: stop must still return only once the pod is gone.
    env.fake
        .set_timings(|t| t.pod_termination = std::time::Duration::from_millis(800));
    let r = run(env.nrl().args(["dev", "stop"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("alice-dev-pod deleted."), "{r:?}");
    assert!(env.pod().is_none(), "gone when stop returns");

    let r = run(env.nrl().args(["dev", "stop"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr
            .contains("no dev pod alice-dev-pod in namespace `default`"),
        "{r:?}"
    );
}

#[test]
fn connect_waits_for_a_terminating_pod_before_creating_a_new_one() {
    let env = DevEnv::new();
    assert_eq!(
        run(env.nrl().args(["dev", "connect", "--", "true"])).code,
        0
    );
    let uid = env.pod().unwrap()["metadata"]["uid"].clone();
    env.fake
        .set_timings(|t| t.pod_termination = std::time::Duration::from_millis(500));
    env.fake.delete("v1", "Pod", "default", POD, None);
    let r = run(env.nrl().args(["dev", "connect", "--", "true"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("finish terminating"), "{r:?}");
    assert_ne!(env.pod().unwrap()["metadata"]["uid"], uid);
}

#[test]
fn stop_refuses_another_users_pod_without_force() {
    let env = DevEnv::new();
    env.write_defaults(&format!(
        "infra:\n  image: {IMAGE}\n  dev:\n    podName: shared-dev\n"
    ));
    assert_eq!(
        run(env.nrl().args(["dev", "connect", "--", "true"])).code,
        0
    );
    let r = run(env.nrl().env("NRL_USER", "bob").args(["dev", "stop"]));
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("belongs to `alice`"), "{r:?}");
    assert!(env.fake.get("v1", "Pod", "default", "shared-dev").is_some());
    let r = run(env
        .nrl()
        .env("NRL_USER", "bob")
        .args(["dev", "stop", "--force"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(env.fake.get("v1", "Pod", "default", "shared-dev").is_none());
}

/// A pod of that name without the owner label (made by kubectl) is refused, naming the
/// label, unless --force (issue 15 item 8).
#[test]
fn stop_refuses_an_unlabelled_pod_naming_the_label() {
    let env = DevEnv::new();
    env.fake.put(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": POD, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": IMAGE}]},
    }));
    let r = run(env.nrl().args(["dev", "stop"]));
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("has no `nrl-k8s/owner` label"), "{r:?}");
    assert!(env.pod().is_some(), "not deleted");
    let r = run(env.nrl().args(["dev", "stop", "--force"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(env.pod().is_none());
}

#[test]
fn namespace_flag_and_infra_file_choose_where() {
    let env = DevEnv::new();
    env.fake.create_namespace("team-a");
    let infra = env.home().join("infra.yaml");
    std::fs::write(&infra, "namespace: team-b\ndev:\n  pvcName: from-file\n").unwrap();
    env.fake.create_namespace("team-b");
    let r = run(env
        .nrl()
        .args(["dev", "connect", "--infra"])
        .arg(&infra)
        .args(["--", "true"]));
    assert_eq!(r.code, 0, "{r:?}");
    let pod = env
        .fake
        .get("v1", "Pod", "team-b", POD)
        .expect("in the infra file's namespace");
    assert_eq!(
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "from-file"
    );
    let r = run(env
        .nrl()
        .args(["dev", "connect", "-n", "team-a", "--infra"])
        .arg(&infra)
        .args(["--", "true"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        env.fake.get("v1", "Pod", "team-a", POD).is_some(),
        "-n wins"
    );
}
