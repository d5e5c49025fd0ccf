//! `nrl gym submit | status | logs | cancel` on the real Job controller: kwok runs the
//! benchmarks' pods (one succeeds, one fails with exit code 3, one runs until cancelled),
//! the Job controller decides what each Job became.

use std::io::BufRead;
use std::process::Stdio;

use super::*;

const CONFIG: &str = "tests/data/testbed/gym.yaml";

/// A bound volume for the runs' results (the Jobs mount `gym-results`): a PV of the
/// namespace's own and a claim on it, bound by the real PV controller. Deleted on drop.
struct Results<'a> {
    ns: &'a Namespace,
}

impl<'a> Results<'a> {
    fn bind(ns: &'a Namespace) -> Results<'a> {
        let yaml = format!(
            r#"apiVersion: v1
kind: PersistentVolume
metadata: {{name: gym-{ns}}}
spec:
  capacity: {{storage: 1Gi}}
  accessModes: [ReadWriteMany]
  storageClassName: ""
  hostPath: {{path: /tmp/gym-{ns}}}
  claimRef: {{namespace: {ns}, name: gym-results}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: gym-results, namespace: {ns}}}
spec:
  accessModes: [ReadWriteMany]
  storageClassName: ""
  volumeName: gym-{ns}
  resources: {{requests: {{storage: 1Gi}}}}
"#,
            ns = ns.name
        );
        let out = ns.apply(&yaml);
        assert!(out.status.success(), "{}", text(&out.stderr));
        ns.eventually(LONG, "the results claim to be bound", |ns| {
            (ns.get("pvc", "gym-results")?["status"]["phase"] == "Bound").then_some(())
        });
        Results { ns }
    }
}

impl Drop for Results<'_> {
    fn drop(&mut self) {
        let _ = self
            .ns
            .tb
            .kubectl()
            .args([
                "delete",
                "pv",
                &format!("gym-{}", self.ns.name),
                "--wait=false",
            ])
            .output();
    }
}

fn row<'a>(table: &'a str, bench: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(bench))
        .unwrap_or_else(|| panic!("no row for {bench} in\n{table}"))
}

on_each_kuberay! {
    fn submit_status_logs_cancel(tb) {
        let w = World::new(tb, "gym");
        let _results = Results::bind(&w.ns);
        // The driver's log, as kwok serves it for every pod of the namespace.
        let log = tempfile::NamedTempFile::new().expect("a log file");
        // (kwok serves a file in the container runtimes' CRI log format.)
        std::fs::write(log.path(), "2026-12-06T08:00:00.000000000Z stdout F gym driver: accuracy=0.41\n")
            .expect("write the log");
        let out = w.ns.apply(&format!(
            "apiVersion: kwok.x-k8s.io/v1alpha1\nkind: ClusterLogs\nmetadata: {{name: logs-{ns}}}\n\
             spec:\n  selector: {{matchNamespaces: [{ns}]}}\n  logs:\n  - containers: [driver]\n    logsFile: {f}\n",
            ns = w.ns.name, f = log.path().display()));
        assert!(out.status.success(), "{}", text(&out.stderr));
        let run = run_id("gym-tb");
        // submit watches until every Job ended or is left running: run it in the
        // background and cancel once the held benchmark is the only one left.
        let mut child = w.ctx.command()
            .args(["gym", "submit", CONFIG, "--run-id", &run, "-n", &w.ns.name])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nrl runs");
        let jobs = w.ns.eventually(LONG, "gpqa to complete and math to fail", |ns| {
            let jobs = ns.list("jobs", &format!("gym-job-id={run}"));
            let done = |suffix: &str, cond: &str| jobs.iter().any(|j| {
                j["metadata"]["name"].as_str().is_some_and(|n| n.ends_with(suffix))
                    && j["status"]["conditions"].as_array().is_some_and(|c| c.iter()
                        .any(|c| c["type"] == cond && c["status"] == "True"))
            });
            (done("-gpqa", "Complete") && done("-math-exit-3", "Failed")).then_some(jobs)
        });
        assert_eq!(jobs.len(), 3, "{jobs:?}");

        let out = w.nrl(&["gym", "status", &run]);
        let table = text(&out.stdout);
        assert!(row(&table, "gpqa").contains("Succeeded"), "{table}");
        assert!(row(&table, "math-exit-3").contains("Failed"), "{table}");
        assert!(row(&table, "tau2-hold").contains("Running"), "{table}");

        let out = w.nrl(&["gym", "logs", &run, "gpqa"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("gym driver: accuracy=0.41"), "{}", text(&out.stdout));

        // Cancel: the run's Jobs and Secret go; submit, still watching, ends with exit 1.
        let out = w.nrl(&["gym", "cancel", &run]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        w.ns.eventually(LONG, "the run's Jobs to be gone", |ns| {
            ns.list("jobs", &format!("gym-job-id={run}")).is_empty().then_some(())
        });
        assert!(w.ns.get("secret", &format!("{run}-env")).is_none());
        let mut stderr = String::new();
        let mut r = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        while r.read_line(&mut line).expect("read") > 0 {
            stderr.push_str(&line);
            line.clear();
        }
        let out = child.wait_with_output().expect("submit ends");
        assert_eq!(out.status.code(), Some(1), "{stderr}\n{}", text(&out.stdout));
        assert!(stderr.contains("math-exit-3: Failed"), "{stderr}");
        let _ = w.ns.tb.kubectl().args(["delete", "clusterlogs", &format!("logs-{}", w.ns.name)]).output();
    }
}
