//! `nrl run` as an ephemeral RayJob on the real operator.

use super::*;

const QS_RECIPE: &str = "examples/quickstart/recipe.yaml";
const QS_INFRA: &str = "examples/quickstart/infra.yaml";

on_each_kuberay! {
    /// Upload mode: RayJob → RayCluster → pods Ready → port-forward → submit to the real
    /// Ray head → the driver's log to its end → RayJob Complete → the cluster deleted.
    fn upload_succeeds(tb) {
        let Some(w) = World::with_ray(tb, "rj-upload") else { return };
        let run = run_id("qs-up");
        let out = w.nrl(&["run", QS_RECIPE, "--infra", QS_INFRA, "--run-id", &run, "--ttl", "0",
            "grpo.max_num_steps=2"]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert!(stdout.contains("step 2/2: loss="), "{stdout}");
        assert!(stdout.contains(&format!("run id: {run}")), "{stdout}");
        assert!(stderr.contains(&format!("run {run} SUCCEEDED")), "{stderr}");
        assert_eq!(w.record(&run)["status"], "succeeded");
        let rj = w.ns.get("rayjob", "tester-quickstart").expect("the RayJob");
        assert_eq!(rj["status"]["jobDeploymentStatus"], "Complete", "{rj}");
        assert_eq!(rj["status"]["jobStatus"], "SUCCEEDED", "{rj}");
        assert_eq!(rj["spec"]["jobId"], run.as_str());
        // shutdownAfterJobFinishes with a TTL of 0: the operator deletes the cluster.
        w.ns.eventually(LONG, "the RayCluster's deletion", |ns| {
            ns.list("raycluster", "").is_empty().then_some(())
        });
        // The log of the finished run, by its id.
        let out = w.nrl(&["job", "logs", &run]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("training finished"), "{}", text(&out.stdout));
    }
}

on_each_kuberay! {
    /// A failing entrypoint: exit 1, the reason shown, the record says failed, and the
    /// RayJob ends Failed on the operator's word.
    fn failing_entrypoint_exits_1(tb) {
        let Some(w) = World::with_ray(tb, "rj-fail") else { return };
        let run = run_id("qs-fail");
        let out = w.nrl(&["run", QS_RECIPE, "--infra", QS_INFRA, "--run-id", &run, "--ttl", "0",
            r#"infra.launch.env.QUICKSTART_FAIL="1""#]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&format!("run {run} FAILED")), "{stderr}");
        // The reason: Ray's message, through the RayJob's status, and the driver's own words.
        assert!(stderr.contains("Job entrypoint command failed with exit code 3"), "{stderr}");
        assert!(stdout.contains("QUICKSTART_FAIL=1: failing on purpose"), "{stdout}");
        assert_eq!(w.record(&run)["status"], "failed");
        let rj = w.ns.eventually(LONG, "the RayJob to end Failed", |ns| {
            let rj = ns.get("rayjob", "tester-quickstart")?;
            (rj["status"]["jobDeploymentStatus"] == "Failed").then_some(rj)
        });
        assert_eq!(rj["status"]["jobStatus"], "FAILED", "{rj}");
    }
}

on_each_kuberay! {
    /// Code in the image (HTTPMode): KubeRay itself submits the staged entrypoint to the
    /// dashboard (through the testbed's proxy), nrl follows it to the end.
    fn image_mode_kuberay_submits(tb) {
        let Some(w) = World::with_ray(tb, "rj-image") else { return };
        let run = run_id("qs-img");
        let root = crate::support::data::repo().display().to_string();
        let out = w.nrl(&["run", QS_RECIPE, "--infra", QS_INFRA, "--run-id", &run, "--ttl", "0",
            "--code-source", "image", "--code-path", &root, "grpo.max_num_steps=1"]);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert!(stdout.contains("step 1/1: loss="), "{stdout}");
        assert!(stderr.contains(&format!("run {run} SUCCEEDED")), "{stderr}");
        let rj = w.ns.get("rayjob", "tester-quickstart").expect("the RayJob");
        assert_eq!(rj["spec"]["submissionMode"], "HTTPMode");
        assert_eq!(rj["status"]["jobDeploymentStatus"], "Complete", "{rj}");
        assert_eq!(w.record(&run)["status"], "succeeded");
        let _ = std::fs::remove_dir_all(format!("/tmp/nrl-{run}"));
    }
}
