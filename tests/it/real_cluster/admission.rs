//! `Suspended` and admission on the real operator: a queueing system (here a
//! MutatingAdmissionPolicy standing for Kueue's webhook) creates the RayJob suspended; nrl
//! waits for admission, and when the RayJob is resumed it submits and follows the job.

use std::io::BufRead;
use std::process::Stdio;

use super::*;

const QS_RECIPE: &str = "examples/quickstart/recipe.yaml";
const QS_INFRA: &str = "examples/quickstart/infra.yaml";

/// RayJobs created in `ns` get `spec.suspend: true`, as Kueue's defaulting webhook does for
/// a queued workload (admissionregistration.k8s.io/v1 MutatingAdmissionPolicy, evaluated by
/// the real API server). Removed with [`suspend_policy_gone`].
fn suspend_on_create(ns: &Namespace) {
    let yaml = format!(
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {{name: suspend-{ns}}}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [ray.io]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [rayjobs]
  failurePolicy: Fail
  reinvocationPolicy: Never
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{{spec: Object.spec{{suspend: true}}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {{name: suspend-{ns}}}
spec:
  policyName: suspend-{ns}
  matchResources:
    namespaceSelector:
      matchLabels: {{kubernetes.io/metadata.name: {ns}}}
"#,
        ns = ns.name
    );
    let out = ns.apply(&yaml);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The API server loads policies through an informer: wait until a dry-run create of a
    // RayJob here comes back suspended.
    const PROBE: &str = "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: probe}\n\
        spec: {entrypoint: 'true', rayClusterSpec: {headGroupSpec: {rayStartParams: {}, \
        template: {spec: {containers: [{name: h, image: x}]}}}}}\n";
    ns.eventually(LONG, "the suspend policy to take effect", |ns| {
        use std::io::Write;
        let mut child = ns
            .kubectl()
            .args([
                "create",
                "--dry-run=server",
                "-o",
                "jsonpath={.spec.suspend}",
                "-f",
                "-",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("kubectl");
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(PROBE.as_bytes());
        }
        let out = child.wait_with_output().ok()?;
        (text(&out.stdout) == "true").then_some(())
    });
}

fn suspend_policy_gone(ns: &Namespace) {
    for kind in ["mutatingadmissionpolicybinding", "mutatingadmissionpolicy"] {
        let _ = ns
            .tb
            .kubectl()
            .args([
                "delete",
                kind,
                &format!("suspend-{}", ns.name),
                "--ignore-not-found",
            ])
            .output();
    }
}

on_each_kuberay! {
    fn a_suspended_rayjob_is_submitted_after_admission(tb) {
        let Some(w) = World::with_ray(tb, "adm") else { return };
        suspend_on_create(&w.ns);
        let run = run_id("qs-queued");
        let mut child = w.ctx.command()
            .args(["run", QS_RECIPE, "--infra", QS_INFRA, "--run-id", &run, "--ttl", "0",
                "grpo.max_num_steps=1", "-n", &w.ns.name])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("nrl runs");
        // nrl says it waits for admission, and nothing runs meanwhile.
        let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let mut seen = String::new();
        let mut line = String::new();
        while stderr.read_line(&mut line).expect("read") > 0 {
            seen.push_str(&line);
            if line.contains("waiting for admission (suspended)") {
                break;
            }
            line.clear();
        }
        assert!(seen.contains("waiting for admission (suspended)"), "{seen}");
        let rj = w.ns.get("rayjob", "tester-quickstart").expect("the RayJob");
        assert_eq!(rj["spec"]["suspend"], true, "created suspended by the policy");
        assert!(w.ns.list("rayclusters", "").is_empty(), "no cluster before admission");
        // Admission: the queue resumes the RayJob.
        let out = w.ns.kubectl()
            .args(["patch", "rayjob", "tester-quickstart", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#])
            .output().expect("kubectl");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).expect("read");
        let out = child.wait_with_output().expect("nrl ends");
        let stdout = text(&out.stdout);
        suspend_policy_gone(&w.ns);
        assert_eq!(out.status.code(), Some(0), "{seen}{rest}\n{stdout}");
        assert!(rest.contains(&format!("follow:  nrl job logs {run} -f")), "{rest}");
        assert!(stdout.contains("Processed prompts: 100%"), "{stdout}");
        let rj = w.ns.get("rayjob", "tester-quickstart").expect("the RayJob");
        assert_eq!(rj["spec"]["jobId"], run.as_str());
        assert_eq!(rj["status"]["jobDeploymentStatus"], "Complete", "{rj}");
    }
}
