//! `cluster dashboard` and daemon submission against a real Ray head on 127.0.0.1, reached
//! through the fake API server's port-forward of the head pods' port 8265.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::Duration;

use super::common::*;
use crate::support::ray_head;

fn http_get(url: &str, path: &str) -> String {
    let addr = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body
}

#[test]
fn cluster_dashboard_reaches_a_real_ray_heads_api() {
    let Some(head) = ray_head::shared() else {
        return;
    };
    let fake = FakeK8s::start();
    fake.use_ray_dashboard(Some(head.address()));
    ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "training"],
    ));

    let ctx = context(&fake);
    let mut c = ctx.command();
    c.args([
        "cluster",
        "dashboard",
        "rc-train",
        "--port",
        "0",
        "--no-open",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(
        line.starts_with("[dashboard] forwarding rc-train head :8265 → http://127.0.0.1:"),
        "{line}"
    );
    let reply = http_get(&url, "/api/version");
    assert!(
        reply.starts_with("HTTP/1.1 200") || reply.starts_with("HTTP/1.0 200"),
        "{reply}"
    );
    assert!(reply.contains("\"ray_version\""), "{reply}");
    // The tunnel went through the API server's pods/portforward of the head pod.
    let tunnels = fake.requests(|r| r.resource.as_deref() == Some("pods/portforward"));
    assert!(tunnels.iter().all(|t| {
        t.name
            .as_deref()
            .unwrap_or("")
            .starts_with("rc-train-head-")
    }));
    assert!(!tunnels.is_empty());

    // Ctrl-C stops it with 130.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{status:?} {err}");
    assert!(
        err.contains("cluster dashboard: context `fake`, namespace `default`"),
        "{err}"
    );
    assert!(err.contains("[dashboard] Ray 2."), "{err}");
    assert!(err.contains("[dashboard] forward stopped"), "{err}");
    assert!(TcpStream::connect(url.trim_start_matches("http://")).is_err());
}

#[test]
fn a_missing_cluster_or_busy_port_is_explained() {
    let fake = FakeK8s::start();
    let mut c = nrl(&fake);
    c.args(["cluster", "dashboard", "nope", "--port", "0", "--no-open"]);
    let err = fails(c, 3);
    assert!(
        err.contains("no head pod for RayCluster nope in namespace `default`"),
        "{err}"
    );

    ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "training"],
    ));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let mut c = nrl(&fake);
    c.args([
        "cluster",
        "dashboard",
        "rc-train",
        "--port",
        &port,
        "--no-open",
    ]);
    let err = fails(c, 3);
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{err}"
    );
}

#[test]
fn daemons_are_submitted_to_a_real_ray_head_once() {
    let Some(head) = ray_head::shared() else {
        return;
    };
    let fake = FakeK8s::start();
    fake.use_ray_dashboard(Some(head.address()));
    // A per-run id: the shared head outlives this test's fake cluster.
    let id = format!("gym-daemon-t{}", std::process::id());
    let sid = format!("infra.kuberay.gym.daemon.submissionId={id}");
    let (out, err) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "gym", &sid],
    ));
    assert_eq!(
        out.trim(),
        format!("kuberay.gym: RayCluster rc-gym created, ready; daemon {id} submitted"),
        "{err}"
    );
    // Follow the daemon's log through the dashboard until it ends; its status is the exit.
    let (log, _) = ok(with_recipe(
        &fake,
        &["logs"],
        &["--role", "gym", "-f", &sid],
    ));
    // Ray adds its own lines (runtime env setup, "Running entrypoint…") around the output.
    assert!(
        log.contains("gym daemon up\n") && log.contains("print(\"daemon payload\")\n"),
        "{log}"
    );
    // Done and SUCCEEDED: a second `up` keeps it.
    let (out, err) = ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "gym", &sid],
    ));
    assert!(out.ends_with(&format!("daemon {id} kept\n")), "{out}");
    assert!(
        err.contains(&format!(
            "[gym] daemon {id} already SUCCEEDED — skipping submit"
        )),
        "{err}"
    );
    let (json_out, _) = ok(with_recipe(&fake, &["status"], &["-o", "json", &sid]));
    let rows: serde_json::Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!(rows[1]["daemon"]["id"], id.as_str());
    assert_eq!(rows[1]["daemon"]["status"], "SUCCEEDED");
}
