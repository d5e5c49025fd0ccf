//! `nrl run --raycluster` on the real operator: both roles' clusters, a daemon, training
//! followed to its end; a rerun that reuses them; a recipe change that is drift (warned,
//! then `--recreate`); the exec submitter through the apiserver's `pods/exec`; `--replace`.

use std::sync::Mutex;

use super::*;
use crate::support::data::repo;
use crate::support::ray_head::{RayHead, SharedHead};

const QS_RECIPE: &str = "examples/quickstart/recipe.yaml";
const LL_INFRA: &str = "tests/data/run/longlived.infra.yaml";

/// `--replace` stops every running job on the head behind the clusters: these scenarios
/// have a head of their own and run one at a time (both operator versions included).
static HEAD: SharedHead = SharedHead::new();
static SERIAL: Mutex<()> = Mutex::new(());

fn ray_job(head: &RayHead, id: &str) -> Value {
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client =
            nrl::ray::RayClient::new(head.address(), Default::default()).expect("a client");
        serde_json::to_value(client.status(id).await.expect("the job's status")).expect("JSON")
    })
}

/// Stop, then delete, every job of the head (its daemons outlive the clusters they stand for:
/// in a real cluster they go with the head pod).
fn clear_jobs(head: &RayHead) {
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    rt.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client =
            nrl::ray::RayClient::new(head.address(), Default::default()).expect("a client");
        let jobs = client.list_jobs().await.expect("the head's jobs");
        let ids: Vec<String> = jobs
            .iter()
            .filter_map(|j| j.submission_id.clone())
            .collect();
        for id in &ids {
            let _ = client.stop(id).await;
        }
        // A stop is asynchronous: wait until none of them runs any more.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        for id in &ids {
            while std::time::Instant::now() < deadline {
                let status = client.status(id).await.map(|j| j.status.to_string());
                if !matches!(status.as_deref(), Ok("RUNNING" | "PENDING")) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            // Gone, so no later run finds it (a daemon's newest `<id>-<ts>` decides).
            let _ = client.delete(id).await;
        }
    })
}

fn ll_run(w: &World, run: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        QS_RECIPE,
        "--infra",
        LL_INFRA,
        "--raycluster",
        "--run-id",
        run,
    ];
    args.extend_from_slice(extra);
    w.nrl(&args)
}

on_each_kuberay! {
    fn reuse_drift_recreate_exec_and_replace(tb) {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let Some(head) = HEAD.get() else { return };
        clear_jobs(head);
        let mut w = World::new(tb, "ll");
        w.ns.attach_dashboard(head.address());
        let exec_tmp = tempfile::tempdir().expect("a temp dir");
        w.ns.attach_exec(exec_tmp.path());
        let exec_root = format!("infra.submit.execTmpDir={}", exec_tmp.path().display());
        let [first, second, drifted, recreated, sleeper, replaced] =
            ["a", "b", "c", "d", "e", "f"].map(|s| run_id(&format!("ll-{s}")));

        // 1. Both clusters, the gym daemon, training followed to its end.
        let out = ll_run(&w, &first, &[]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        for line in [
            "[gym] daemon submitted as job gym-daemon",
            &format!("run {first} SUCCEEDED"),
        ] {
            assert!(stderr.contains(line), "missing {line:?} in\n{stderr}");
        }
        assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");
        assert_eq!(w.record(&first)["kind"], "raycluster-portforward");
        assert_eq!(w.record(&first)["status"], "succeeded");
        assert_eq!(ray_job(head, "gym-daemon")["status"], "RUNNING");

        // 2. A rerun reuses both (a server-side dry run finds no drift on the real server,
        // whose defaults and the operator's own writes are not drift).
        let out = ll_run(&w, &second, &[]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("[gym] RayCluster tester-ll-gym already exists and matches — reusing"), "{stderr}");
        assert!(stderr.contains("[training] RayCluster tester-ll-train already exists and matches — reusing"), "{stderr}");
        assert!(stderr.contains("[gym] daemon gym-daemon already RUNNING — skipping submit"), "{stderr}");

        // 3. A pod template change is drift: warned and reused, then --recreate.
        let cpu = "++infra.kuberay.training.spec.headGroupSpec.template.spec.containers.0.resources.limits.cpu=3";
        let uid = w.ns.get("raycluster", "tester-ll-train").expect("training")["metadata"]["uid"].clone();
        let out = ll_run(&w, &drifted, &[cpu]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("tester-ll-train") && stderr.contains("drift"), "{stderr}");
        assert_eq!(w.ns.get("raycluster", "tester-ll-train").expect("training")["metadata"]["uid"], uid,
            "a drifted cluster is reused without --recreate");
        let out = ll_run(&w, &recreated, &[cpu, "--recreate"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("--recreate: RayCluster tester-ll-train has drifted"), "{stderr}");
        let rc = w.ns.get("raycluster", "tester-ll-train").expect("training");
        assert_ne!(rc["metadata"]["uid"], uid, "re-created");
        assert_eq!(rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"], 3);

        // 4. The exec submitter: the entrypoint started on the head pod through pods/exec.
        let root = repo().display().to_string();
        let out = ll_run(&w, &sleeper, &[cpu, "--submitter", "exec", "--code-source", "image",
            "--code-path", &root, "--no-wait", &exec_root, "infra.launch.entrypoint='sleep 60'"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let sleeper_dir = exec_tmp.path().join(format!("nrl-{sleeper}"));
        assert!(sleeper_dir.join("pid").is_file(), "the launcher wrote its pid");

        // 5. --replace stops the daemon and the exec run, then runs afresh.
        let out = ll_run(&w, &replaced, &[cpu, "--replace"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains("[replace] stopping gym-daemon (RUNNING)"), "{stderr}");
        assert!(stderr.contains(&format!("[replace] stopping exec run {sleeper}")), "{stderr}");
        assert_eq!(ray_job(head, "gym-daemon")["status"], "STOPPED");
        assert_eq!(w.record(&replaced)["status"], "succeeded");
        let code = std::fs::read_to_string(sleeper_dir.join("exitcode")).expect("an exit code");
        assert_eq!(code.trim(), "143", "SIGTERM");
        clear_jobs(head);
    }
}
