//! How the commands that read a namespace grow with it (`nrl cluster list`, `nrl status`
//! of one recipe, `nrl top --once`): 10, 100 and 1,000 RayClusters, each with a head and
//! two worker pods, on the fake API server. Prints one line per size and command: wall
//! time of the nrl process, its peak RSS, and the API requests it made by verb, so a
//! per-object GET (or a list per cluster) shows as a count that grows.
//!
//! `cargo bench --profile release --bench cluster_list_scaling`; under `cargo test` it
//! runs the smallest size once (a smoke test that still checks the request count).

// The fake API server of the integration tests (only it, not the other test helpers),
// reachable at the module path its files use there: `crate::support::fake_k8s`.
#[path = "../tests/it/support/fake_k8s/mod.rs"]
mod fake_k8s;
mod support {
    pub(crate) use super::fake_k8s;
}

// Only its wall time and peak RSS are reported here.
#[allow(dead_code)]
#[path = "support/measured.rs"]
mod measured;

use measured::measured;

use serde_json::json;
use support::fake_k8s::FakeK8s;

fn seed(fake: &FakeK8s, clusters: usize) {
    for i in 0..clusters {
        let name = format!("alice-rc-{i:04}");
        fake.put(json!({
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"nrl-k8s/owner": "alice"}},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
                {"name": "ray-head", "image": "rayproject/ray:2.60.0"}]}}},
                     "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "minReplicas": 2,
                         "maxReplicas": 2, "rayStartParams": {}, "template": {"spec": {"containers": [
                         {"name": "ray-worker", "image": "rayproject/ray:2.60.0"}]}}}]},
            "status": {"state": "ready", "readyWorkerReplicas": 2, "desiredWorkerReplicas": 2},
        }));
        for (pod, kind) in [
            ("head", "head"),
            ("worker-0", "worker"),
            ("worker-1", "worker"),
        ] {
            fake.put(json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": format!("{name}-{pod}"), "namespace": "default",
                             "labels": {"ray.io/cluster": name, "ray.io/node-type": kind}},
                "spec": {"containers": [{"name": "ray", "image": "rayproject/ray:2.60.0"}]},
                "status": {"phase": "Running"},
            }));
        }
    }
}

/// One run of `nrl ARGS` against the fake: wall time (ms) and peak RSS (KiB).
fn run_once(fake: &FakeK8s, home: &std::path::Path, args: &[&str]) -> (f64, i64) {
    let u = measured(args, |c| {
        c.current_dir(env!("CARGO_MANIFEST_DIR"))
            .envs(fake.env())
            .env("HOME", home)
            .env("NRL_USER", "alice")
            .env("NO_COLOR", "1");
    });
    assert_eq!(u.exit, 0, "nrl {args:?} failed");
    (u.wall.as_secs_f64() * 1e3, u.peak_rss_kib)
}

fn main() {
    measured::spawner_main();
    let full = std::env::args().any(|a| a == "--bench");
    let (sizes, runs): (&[usize], usize) = if full {
        (&[10, 100, 1000], 5)
    } else {
        (&[10], 1)
    };
    let home = tempfile::tempdir().expect("tempdir");
    println!("cluster_list_scaling: RayClusters, median [min..max] ms, peak RSS, requests by verb");
    // The commands that read a namespace: the cluster table, one recipe's status (its
    // roles' clusters among all the others), and the live view's one-shot form.
    let commands: [(&str, &[&str]); 3] = [
        ("cluster list", &["cluster", "list"]),
        (
            "status",
            &[
                "status",
                "examples/quickstart/recipe.yaml",
                "--infra",
                "examples/quickstart/infra.yaml",
                "-n",
                "default",
            ],
        ),
        ("top --once", &["top", "--once", "--all-users"]),
    ];
    for &n in sizes {
        let fake = FakeK8s::start();
        seed(&fake, n);
        for (what, args) in &commands {
            let mut walls = Vec::new();
            let mut rss = 0;
            fake.clear_request_log();
            for _ in 0..runs {
                let (wall, r) = run_once(&fake, home.path(), args);
                walls.push(wall);
                rss = rss.max(r);
            }
            let log = fake.request_log();
            let per_run = |verb: &str, pages: bool| {
                log.iter()
                    .filter(|r| r.verb == verb && r.resource.is_some())
                    .filter(|r| pages || !r.query.contains("continue="))
                    .count()
                    / runs
            };
            // A list is read a page of 500 at a time (kubectl's chunking): its further
            // pages are counted apart, as they grow with the objects by design.
            let (lists, gets) = (per_run("list", false), per_run("get", false));
            let pages = per_run("list", true) - lists;
            walls.sort_by(f64::total_cmp);
            println!(
                "  {n:>5} clusters  {what:<12}  {:>7.1} ms [{:.1}..{:.1}]  {:>6.1} MiB  {lists} lists (+{pages} pages), {gets} gets per run",
                walls[walls.len() / 2],
                walls[0],
                walls[walls.len() - 1],
                rss as f64 / 1024.0,
            );
            // Constant requests, whatever the namespace holds: a growing count is a defect.
            // (`top --once` also opens the selected run's dashboard for its log: the head's
            // pods and Service, and the port-forward's endpoints.)
            assert!(
                lists <= 8 && gets <= 3,
                "{what} made {lists} lists and {gets} gets for {n} clusters"
            );
        }
    }
}
