//! `nrl cluster up | list | status | dashboard | down` on the real operator: readiness after
//! a scale change, the CRD's own defaults, `fieldValidation=Strict`, and a conflict with
//! another field manager.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use super::*;

const QS_RECIPE: &str = "examples/quickstart/recipe.yaml";
const QS_INFRA: &str = "examples/quickstart/infra.yaml";
const NO_MIN_MAX: &str = "tests/data/run/quickstart-no-min-max.infra.yaml";

fn replicas(n: u32) -> [String; 2] {
    [
        format!("infra.kuberay.training.spec.workerGroupSpecs.0.replicas={n}"),
        "infra.kuberay.training.spec.workerGroupSpecs.0.maxReplicas=2".to_string(),
    ]
}

fn up(w: &World, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "cluster",
        "up",
        QS_RECIPE,
        "--infra",
        QS_INFRA,
        "--skip-doctor",
    ];
    args.extend_from_slice(extra);
    w.nrl(&args)
}

fn worker_pods(ns: &Namespace) -> Vec<Value> {
    ns.list(
        "pods",
        "ray.io/cluster=tester-quickstart,ray.io/node-type=worker",
    )
    .into_iter()
    .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
    .collect()
}

fn ready(p: &Value) -> bool {
    p["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

on_each_kuberay! {
    /// Up, list, status, a scale to two workers and back where "ready" means the pods are
    /// there (KubeRay keeps `state: ready` throughout), then down, which waits for the pods.
    fn up_scale_list_status_down(tb) {
        let w = World::new(tb, "cl-life");
        let out = up(&w, &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(text(&out.stdout).contains("kuberay.training: RayCluster tester-quickstart created, ready"),
            "{}", text(&out.stdout));
        assert_eq!(worker_pods(&w.ns).len(), 1);

        // Scale up: when nrl says ready, both workers exist and are Ready.
        let two = replicas(2);
        let out = up(&w, &[&two[0], &two[1]]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(stdout.contains("RayCluster tester-quickstart updated"), "{stdout}");
        let pods = worker_pods(&w.ns);
        assert_eq!(pods.len(), 2, "two workers when `up` returned");
        assert!(pods.iter().all(ready), "both Ready when `up` returned");

        // Back to one: ready means the second worker is gone.
        let one = replicas(1);
        let out = up(&w, &[&one[0], &one[1]]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let live: Vec<Value> = w.ns.list("pods", "ray.io/cluster=tester-quickstart,ray.io/node-type=worker");
        assert_eq!(live.len(), 1, "one worker pod left when `up` returned: {live:?}");

        let out = w.nrl(&["cluster", "list"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let list = text(&out.stdout);
        assert!(list.lines().any(|l| l.starts_with("tester-quickstart") && l.contains("ready")
            && l.contains("tester") && l.trim_end().ends_with("1/1")), "{list}");

        let out = w.nrl(&["status", QS_RECIPE, "--infra", QS_INFRA]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let status = text(&out.stdout);
        assert!(status.contains("training  tester-quickstart  ready  Running  1/1 ready"), "{status}");

        let out = w.nrl(&["cluster", "down", QS_RECIPE, "--infra", QS_INFRA]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(w.ns.list("rayclusters", "").is_empty());
        assert!(w.ns.list("pods", "ray.io/cluster=tester-quickstart").is_empty(),
            "down returns once the pods are gone");
    }
}

on_each_kuberay! {
    /// `cluster dashboard` forwards the head's 8265 through the real apiserver's
    /// pods/portforward (kwok's kubelet API) to the Ray head standing for it.
    fn dashboard_reaches_the_head(tb) {
        let Some(w) = World::with_ray(tb, "cl-dash") else { return };
        assert_eq!(up(&w, &[]).status.code(), Some(0));
        let mut child = w.ctx.command()
            .args(["cluster", "dashboard", "tester-quickstart", "--port", "0", "--no-open", "-n", &w.ns.name])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nrl runs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("a line");
        assert!(line.starts_with("[dashboard] forwarding tester-quickstart head :8265 → http://127.0.0.1:"), "{line}");
        let addr = line.trim().rsplit("http://").next().expect("url").to_string();
        let mut s = std::net::TcpStream::connect(&addr).expect("the forward listens");
        s.set_read_timeout(Some(Duration::from_secs(30))).expect("a timeout");
        s.write_all(b"GET /api/version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("write");
        // Read until the answer is in: the tunnel does not close when the dashboard closes
        // its end (neither does kubectl port-forward's, on this apiserver and kubelet).
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&reply).contains("\"ray_version\"") {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => reply.extend_from_slice(&buf[..n]),
                Err(e) => panic!("read: {e}; so far: {}", String::from_utf8_lossy(&reply)),
            }
        }
        assert!(String::from_utf8_lossy(&reply).contains("\"ray_version\""));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        assert_eq!(child.wait().expect("exit").code(), Some(130));
    }
}

on_each_kuberay! {
    /// A worker group without minReplicas/maxReplicas passes nrl's offline validation (the
    /// CRD defaults them before `required` is checked) and the real API server fills them in.
    fn crd_defaults_min_and_max_replicas(tb) {
        let w = World::new(tb, "cl-defaults");
        let out = w.nrl(&["cluster", "up", QS_RECIPE, "--infra", NO_MIN_MAX, "--skip-doctor", "--no-wait"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let rc = w.ns.get("raycluster", "tester-quickstart").expect("the RayCluster");
        let group = &rc["spec"]["workerGroupSpecs"][0];
        assert_eq!(group["minReplicas"], 0, "the CRD's default: {group}");
        assert_eq!(group["maxReplicas"], 2147483647, "the CRD's default: {group}");
    }
}

on_each_kuberay! {
    /// A field the schema does not know, past nrl's own validation (`--no-validate`): the
    /// real API server refuses it (`fieldValidation=Strict`) instead of pruning it, and
    /// nothing is created.
    fn strict_field_validation_refuses_unknown_fields(tb) {
        let w = World::new(tb, "cl-strict");
        let out = w.nrl(&["cluster", "up", QS_RECIPE, "--infra", QS_INFRA, "--skip-doctor", "--no-wait",
            "--no-validate", "++infra.kuberay.training.spec.headGroupSpec.bogusField=1"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(stderr.contains("bogusField"), "the server names the field: {stderr}");
        assert!(w.ns.get("raycluster", "tester-quickstart").is_none(), "nothing half-applied");
    }
}

on_each_kuberay! {
    /// Another field manager (`kubectl edit`) changed the worker groups: `up` with other
    /// values stops with the conflict and who owns the fields; `--force-conflicts` takes
    /// them over.
    fn conflicts_with_kubectl_edit_and_force_conflicts(tb) {
        let w = World::new(tb, "cl-conflict");
        assert_eq!(up(&w, &[]).status.code(), Some(0));
        // kubectl edit = an update by field manager kubectl-edit.
        let out = w.ns.kubectl()
            .args(["patch", "raycluster", "tester-quickstart", "--type=json", "--field-manager=kubectl-edit",
                "-p", r#"[{"op":"replace","path":"/spec/workerGroupSpecs/0/maxReplicas","value":3}]"#])
            .output().expect("kubectl");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let two = replicas(2);
        let out = up(&w, &[&two[0], &two[1]]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(stderr.contains("conflicts with another writer"), "{stderr}");
        assert!(stderr.contains("kubectl-edit"), "{stderr}");
        assert!(stderr.contains("--force-conflicts"), "{stderr}");
        let out = up(&w, &[&two[0], &two[1], "--force-conflicts"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let rc = w.ns.get("raycluster", "tester-quickstart").expect("the RayCluster");
        assert_eq!(rc["spec"]["workerGroupSpecs"][0]["maxReplicas"], 2);
        assert_eq!(worker_pods(&w.ns).len(), 2);
    }
}
