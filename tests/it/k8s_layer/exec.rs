//! Exec over the API: output, exit codes and stdin; attached streams with a tty and
//! resizes; a denied exec names what was refused.

use std::time::Duration;

use nrl::k8s::AttachedIo;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::common::*;

#[tokio::test]
async fn exec_collects_stdout_stderr_exit_code_and_feeds_stdin() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "sh", json!({"app": "sh"}), &["main"]).await;
    let out = k8s
        .exec(
            "default",
            "sh",
            None,
            &["sh", "-c", "echo out; echo err >&2; exit 3"],
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (
            out.stdout_str().as_str(),
            out.stderr_str().as_str(),
            out.exit_code
        ),
        ("out\n", "err\n", 3)
    );
    let out = k8s
        .exec(
            "default",
            "sh",
            Some("main"),
            &["tr", "a-z", "A-Z"],
            Some(b"shout\n"),
        )
        .await
        .unwrap();
    assert_eq!((out.stdout_str().as_str(), out.exit_code), ("SHOUT\n", 0));
    // The runtime could not start it: no exit code, the status message says why.
    let err = k8s
        .exec("default", "sh", None, &["no-such-binary-xyz"], None)
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::exec_failed");
    assert!(
        err.message.contains("\"no-such-binary-xyz\""),
        "{}",
        err.message
    );
    assert!(
        err.help.as_deref().unwrap().contains("does not exist"),
        "{:?}",
        err.help
    );
}

#[tokio::test]
async fn exec_attached_with_a_tty_resizes_and_returns_the_exit_code() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "tty", json!({"app": "tty"}), &["main"]).await;
    let (mut to_pod, stdin) = tokio::io::duplex(1024);
    let (stdout, mut from_pod) = tokio::io::duplex(64 * 1024);
    let (resize_tx, resize_rx) = tokio::sync::mpsc::channel(4);
    resize_tx.send((100, 40)).await.unwrap();
    let script = "test -t 0 && echo is-a-tty; for i in $(seq 1 60); do s=$(stty size); [ \"$s\" = \"40 100\" ] && break; sleep 0.05; done; echo \"size $s\"; read line; echo \"got $line\"; exit 7";
    let cmd = ["sh", "-c", script];
    let run = k8s.exec_attached(
        "default",
        "tty",
        None,
        &cmd,
        true,
        AttachedIo {
            stdin: Some(Box::new(stdin)),
            stdout: Box::new(stdout),
            stderr: None,
            resize: Some(resize_rx),
        },
    );
    // Type the line once the script has printed its size, i.e. is about to `read`.
    let feed = async {
        let mut before = Vec::new();
        let mut chunk = [0u8; 1024];
        let size_printed = tokio::time::timeout(Duration::from_secs(10), async {
            while !String::from_utf8_lossy(&before).contains("size ") {
                let n = from_pod.read(&mut chunk).await.unwrap();
                assert!(
                    n > 0,
                    "output ended early: {:?}",
                    String::from_utf8_lossy(&before)
                );
                before.extend_from_slice(&chunk[..n]);
            }
        })
        .await;
        assert!(
            size_printed.is_ok(),
            "no size line: {:?}",
            String::from_utf8_lossy(&before)
        );
        to_pod.write_all(b"hello\r").await.unwrap();
        String::from_utf8_lossy(&before).into_owned()
    };
    let (code, mut out) = tokio::join!(run, feed);
    assert_eq!(code.unwrap(), 7);
    drop(resize_tx);
    from_pod.read_to_string(&mut out).await.unwrap();
    assert!(out.contains("is-a-tty"), "{out:?}");
    assert!(out.contains("size 40 100"), "{out:?}");
    assert!(out.contains("got hello"), "{out:?}");
}

#[tokio::test]
async fn exec_attached_without_a_tty_keeps_stderr_apart() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "p", json!({"app": "p"}), &["main"]).await;
    let (stdout, mut out_rd) = tokio::io::duplex(64 * 1024);
    let (stderr, mut err_rd) = tokio::io::duplex(64 * 1024);
    let code = k8s
        .exec_attached(
            "default",
            "p",
            None,
            &["sh", "-c", "cat; echo bad >&2"],
            false,
            AttachedIo {
                stdin: Some(Box::new(&b"piped\n"[..])),
                stdout: Box::new(stdout),
                stderr: Some(Box::new(stderr)),
                resize: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(code, 0);
    let (mut out, mut err) = (String::new(), String::new());
    out_rd.read_to_string(&mut out).await.unwrap();
    err_rd.read_to_string(&mut err).await.unwrap();
    assert_eq!((out.as_str(), err.as_str()), ("piped\n", "bad\n"));
}

#[tokio::test]
async fn a_denied_exec_names_the_subresource() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "p", json!({"app": "p"}), &["main"]).await;
    fake.deny("create", "pods/exec", "default");
    let err = k8s
        .exec("default", "p", None, &["true"], None)
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::forbidden");
    assert!(
        err.message
            .starts_with("forbidden: cannot create pods/exec/p in namespace `default`"),
        "{}",
        err.message
    );
}

/// Issue 14 item 7: the API server could not reach the kubelet, so the status channel
/// says `Failure` / `InternalError` with no `ExitCode` cause. That is an error showing
/// the server's message, not a silent exit 1.
#[tokio::test]
async fn an_exec_failure_without_exit_code_shows_the_status_message() {
    let (fake, k8s) = setup().await;
    running_pod(&fake, "p", json!({"app": "p"}), &["main"]).await;
    fake.inject(
        FaultMatch::verb("create", "pods/exec"),
        FaultAction::ExecFailure(
            "error dialing backend: dial tcp 127.0.0.1:10250: connect: connection refused".into(),
        ),
        Some(1),
    );
    let err = k8s
        .exec("default", "p", None, &["true"], None)
        .await
        .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::exec_failed");
    assert_eq!(
        err.message,
        "exec `true` in pod p failed: Internal error occurred: error dialing backend: dial tcp 127.0.0.1:10250: connect: connection refused"
    );
    assert!(
        err.help.as_deref().unwrap().contains("kubelet"),
        "{:?}",
        err.help
    );
    // The next exec works again, and a real non-zero exit is still just an exit code.
    let out = k8s
        .exec("default", "p", None, &["sh", "-c", "exit 4"], None)
        .await
        .unwrap();
    assert_eq!(out.exit_code, 4);
}
