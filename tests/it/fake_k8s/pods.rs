//! Pod subresources: logs (follow), exec (real local processes), port-forward.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, LogParams, PostParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::common::*;

async fn running_pod(
    fake: &FakeK8s,
    client: &kube::Client,
    name: &str,
    containers: &[&str],
) -> Api<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let cs: Vec<_> = containers
        .iter()
        .map(|c| json!({"name": c, "image": "busybox:1.36", "env": [{"name": "GREETING", "value": "hello from env"}]}))
        .collect();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": cs}});
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(pod).unwrap(),
    )
    .await
    .unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| f.field(
            "v1",
            "Pod",
            "default",
            name,
            "status.phase"
        ) == Some(json!("Running")))
            .await
    );
    pods
}

#[tokio::test]
async fn logs_tail_and_follow_until_the_pod_ends() {
    let (fake, client) = setup().await;
    let pods = running_pod(&fake, &client, "worker", &["main", "side"]).await;
    for i in 0..5 {
        fake.append_pod_log("default", "worker", Some("main"), &format!("line {i}"));
    }
    // With two containers the container must be named, as on a real cluster.
    let err = pods
        .logs("worker", &LogParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 400 && s.message.contains("choose one of: [main side]")),
        "{err:?}"
    );
    let tail = pods
        .logs(
            "worker",
            &LogParams {
                container: Some("main".into()),
                tail_lines: Some(2),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(tail, "line 3\nline 4\n");
    let stamped = pods
        .logs(
            "worker",
            &LogParams {
                container: Some("main".into()),
                tail_lines: Some(1),
                timestamps: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        stamped.ends_with("Z line 4\n") && stamped.starts_with("20"),
        "{stamped}"
    );

    let params = LogParams {
        container: Some("main".into()),
        follow: true,
        tail_lines: Some(1),
        ..Default::default()
    };
    use futures::AsyncBufReadExt;
    let mut lines = pods
        .log_stream("worker", &params)
        .await
        .unwrap()
        .lines()
        .boxed();
    macro_rules! next {
        () => {
            tokio::time::timeout(Duration::from_secs(3), lines.next())
                .await
                .expect("a line in time")
        };
    }
    assert_eq!(next!().unwrap().unwrap(), "line 4");
    fake.append_pod_log("default", "worker", Some("main"), "live 1");
    assert_eq!(next!().unwrap().unwrap(), "live 1");
    fake.append_pod_log("default", "worker", Some("side"), "other container");
    fake.append_pod_log("default", "worker", Some("main"), "live 2");
    assert_eq!(next!().unwrap().unwrap(), "live 2");
    // The stream ends when the pod terminates.
    fake.set_pod_phase("default", "worker", "Succeeded");
    assert!(next!().is_none());
}

#[tokio::test]
async fn logs_of_a_pending_pod_are_refused_like_the_kubelet_does() {
    let (fake, client) = setup().await;
    fake.set_pod_fate("app=stuck", PodFate::ImagePullBackOff);
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "stuck"}},
                     "spec": {"containers": [{"name": "c", "image": "nope:1"}]}});
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(pod).unwrap(),
    )
    .await
    .unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| {
            f.field("v1", "Pod", "default", "p", "status.containerStatuses")
                .is_some_and(|cs| cs[0]["state"]["waiting"]["reason"] == "ImagePullBackOff")
        })
        .await
    );
    let err = pods.logs("p", &LogParams::default()).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 400 && s.message == "container \"c\" in pod \"p\" is waiting to start: ImagePullBackOff"),
        "{err:?}"
    );
}

#[tokio::test]
async fn exec_runs_commands_with_exit_codes_env_and_stdin() {
    let (fake, client) = setup().await;
    let pods = running_pod(&fake, &client, "shell", &["main"]).await;
    let ap = AttachParams::default().stderr(true);

    let mut proc = pods
        .exec(
            "shell",
            ["sh", "-c", "echo \"$GREETING\"; echo oops >&2; pwd"],
            &ap,
        )
        .await
        .unwrap();
    let (mut out, mut err) = (String::new(), String::new());
    let (mut so, mut se) = (proc.stdout().unwrap(), proc.stderr().unwrap());
    let status = proc.take_status().unwrap();
    let (a, b) = tokio::join!(so.read_to_string(&mut out), se.read_to_string(&mut err));
    a.unwrap();
    b.unwrap();
    let status = status.await.unwrap();
    assert_eq!(status.status.as_deref(), Some("Success"));
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("hello from env"));
    assert!(
        lines.next().unwrap().ends_with("/pods/default/shell"),
        "runs in the pod's directory: {out}"
    );
    assert_eq!(err, "oops\n");

    let mut proc = pods
        .exec("shell", ["sh", "-c", "exit 3"], &ap)
        .await
        .unwrap();
    let status = proc.take_status().unwrap().await.unwrap();
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NonZeroExitCode"));
    let cause = &status.details.unwrap().causes.unwrap()[0];
    assert_eq!(
        (cause.reason.as_deref(), cause.message.as_deref()),
        (Some("ExitCode"), Some("3"))
    );

    let ap_in = AttachParams::default().stdin(true).stderr(false);
    let mut proc = pods
        .exec("shell", ["sh", "-c", "tr a-z A-Z"], &ap_in)
        .await
        .unwrap();
    let mut stdin = proc.stdin().unwrap();
    let mut stdout = proc.stdout().unwrap();
    let status = proc.take_status().unwrap();
    stdin.write_all(b"shout\n").await.unwrap();
    // EOF on stdin (kube's stdin pipe needs an explicit shutdown; v5 sends it as a close frame).
    stdin.shutdown().await.unwrap();
    let mut upper = String::new();
    tokio::time::timeout(Duration::from_secs(5), stdout.read_to_string(&mut upper))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(upper, "SHOUT\n");
    assert_eq!(status.await.unwrap().status.as_deref(), Some("Success"));

    let err = pods
        .exec("shell", ["no-such-binary-xyz"], &ap)
        .await
        .unwrap();
    let mut err = err;
    let status = err.take_status().unwrap().await.unwrap();
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert!(status.message.unwrap().contains("no-such-binary-xyz"));

    // exec is a websocket upgrade on pods/exec with the command in the query.
    let execs = fake.requests(|r| r.resource.as_deref() == Some("pods/exec"));
    assert_eq!(execs.len(), 4);
    assert!(execs.iter().all(|r| r.status == 101 && r.verb == "create"));
}

#[tokio::test]
async fn exec_with_a_tty() {
    let (fake, client) = setup().await;
    let pods = running_pod(&fake, &client, "tty", &["main"]).await;
    let ap = AttachParams::interactive_tty();
    let mut proc = pods.exec("tty", ["sh", "-c", "test -t 0 && echo is-a-tty; for i in $(seq 1 60); do s=$(stty size); [ \"$s\" = \"40 100\" ] && break; sleep 0.05; done; echo \"size $s\""], &ap).await.unwrap();
    let mut resize = proc.terminal_size().unwrap();
    use futures::SinkExt;
    resize
        .send(kube::api::TerminalSize {
            width: 100,
            height: 40,
        })
        .await
        .unwrap();
    let mut out = String::new();
    let mut stdout = proc.stdout().unwrap();
    let status = proc.take_status().unwrap();
    tokio::time::timeout(Duration::from_secs(5), stdout.read_to_string(&mut out))
        .await
        .unwrap()
        .unwrap();
    assert!(out.contains("is-a-tty"), "{out:?}");
    assert!(
        out.contains("size 40 100"),
        "the resize reached the terminal: {out:?}"
    );
    assert_eq!(status.await.unwrap().status.as_deref(), Some("Success"));
}

async fn echo_server() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                while let Ok(n) = sock.read(&mut buf).await {
                    if n == 0 || sock.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn port_forward_carries_bytes_both_ways() {
    let (fake, client) = setup().await;
    let pods = running_pod(&fake, &client, "web", &["main"]).await;
    let target = echo_server().await;
    fake.forward_port("default", "web", 8265, target);
    let mut pf = pods.portforward("web", &[8265]).await.unwrap();
    let mut stream = pf.take_stream(8265).unwrap();
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let (mut rd, mut wr) = tokio::io::split(&mut stream);
    let send = async {
        wr.write_all(&payload).await.unwrap();
    };
    let mut back = vec![0u8; payload.len()];
    let recv = async {
        tokio::time::timeout(Duration::from_secs(10), rd.read_exact(&mut back))
            .await
            .unwrap()
            .unwrap();
    };
    tokio::join!(send, recv);
    assert_eq!(back, payload);
    drop(stream);
    pf.join().await.unwrap();

    // A port nobody forwards reports an error on the error channel.
    let mut pf = pods.portforward("web", &[9999]).await.unwrap();
    let err = pf.take_error(9999).unwrap().await;
    assert!(err.is_some_and(|e| e.contains("error forwarding port 9999")));
    let _ = pf.take_stream(9999);
    let _ = tokio::time::timeout(Duration::from_secs(2), pf.join()).await;
}

/// A client that writes or closes stdin at once races the command's exit. The fake must
/// finish the websocket close handshake instead of dropping the socket with the client's
/// frames unread (the kernel then resets the connection, and the client could lose the
/// output or hang). This failed about one time in ten before the fix.
#[tokio::test]
async fn exec_output_survives_stdin_written_and_closed_at_once() {
    let (fake, client) = setup().await;
    let pods = running_pod(&fake, &client, "race", &["main"]).await;
    for i in 0..40 {
        let ap = AttachParams::default().stdin(true).stderr(true);
        let mut proc = pods
            .exec("race", ["sh", "-c", "echo out; echo err >&2"], &ap)
            .await
            .unwrap();
        let mut stdin = proc.stdin().unwrap();
        stdin.write_all(b"ignored\n").await.unwrap();
        stdin.shutdown().await.unwrap();
        let (mut so, mut se) = (proc.stdout().unwrap(), proc.stderr().unwrap());
        let status = proc.take_status().unwrap();
        let (mut out, mut err) = (String::new(), String::new());
        let status = tokio::time::timeout(Duration::from_secs(10), async {
            let (a, b) = tokio::join!(so.read_to_string(&mut out), se.read_to_string(&mut err));
            a.unwrap();
            b.unwrap();
            status.await
        })
        .await
        .unwrap_or_else(|_| panic!("exec {i} hung"));
        assert_eq!((out.as_str(), err.as_str()), ("out\n", "err\n"), "exec {i}");
        assert_eq!(status.and_then(|s| s.status).as_deref(), Some("Success"));
    }
}

/// Pod spec immutability (spec §4.9; kubernetes `validation.go` `ValidatePodUpdate`): an
/// image change and added tolerations go through, anything else is 422 with a
/// `Forbidden` cause at `spec`; the scheduler's `nodeName` (a binding) is not an update.
#[tokio::test]
async fn pod_spec_is_immutable_but_for_what_kubernetes_allows() {
    use kube::api::{Patch, PatchParams};
    let (fake, client) = setup().await;
    let pods = running_pod(&fake, &client, "imm", &["main"]).await;
    let live = fake.get("v1", "Pod", "default", "imm").unwrap();
    assert_eq!(live["spec"]["nodeName"], json!("fake-node-1"));
    let pp = PatchParams::default();
    pods.patch(
        "imm",
        &pp,
        &Patch::Strategic(
            json!({"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}],
            "tolerations": [{"key": "gpu", "operator": "Exists"}], "activeDeadlineSeconds": 600}}),
        ),
    )
    .await
    .unwrap();
    for forbidden in [
        json!({"spec": {"restartPolicy": "Never"}}),
        json!({"spec": {"containers": [{"name": "main", "env": [{"name": "X", "value": "1"}]}]}}),
        json!({"spec": {"activeDeadlineSeconds": 900}}),
        json!({"spec": {"tolerations": []}}),
    ] {
        let err = pods
            .patch("imm", &pp, &Patch::Merge(forbidden.clone()))
            .await
            .unwrap_err();
        let kube::Error::Api(s) = err else {
            panic!("{err:?}")
        };
        assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{forbidden}");
        assert!(
            s.message.starts_with("Pod \"imm\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`"),
            "{}",
            s.message
        );
        let cause = &s.details.unwrap().causes[0];
        assert_eq!(
            (cause.reason.as_str(), cause.field.as_str()),
            ("FieldValueForbidden", "spec")
        );
    }
}
