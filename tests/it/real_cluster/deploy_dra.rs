//! Deployments (with their Service) rolled out as `kubectl rollout status` decides, on the
//! real Deployment controller; DRA objects owned by their RayCluster or RayJob and removed
//! by the real garbage collector when the owner goes, whoever deletes it.

use super::*;

const CL_RECIPE: &str = "tests/data/cluster/recipe.yaml";
const CL_INFRA: &str = "tests/data/cluster/infra.yaml";
const QS_RECIPE: &str = "examples/quickstart/recipe.yaml";
const DRA_INFRA: &str = "tests/data/run/quickstart-dra.infra.yaml";

fn available(d: &Value) -> bool {
    d["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True")
    })
}

on_each_kuberay! {
    /// `cluster up` of a Deployment returns once its rollout is complete; a changed image
    /// rolls out a new ReplicaSet, and `up` waits until the old pods are gone.
    fn deployment_rollout(tb) {
        let w = World::new(tb, "deploy");
        let up = |extra: &[&str]| {
            let mut args = vec!["cluster", "up", CL_RECIPE, "--infra", CL_INFRA, "--target",
                "deployments.vllm", "--skip-doctor"];
            args.extend_from_slice(extra);
            w.nrl(&args)
        };
        let out = up(&[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let d = w.ns.get("deployment", "vllm").expect("the Deployment");
        assert!(available(&d), "available when `up` returned: {d}");
        assert_eq!(d["status"]["updatedReplicas"], 1, "{d}");
        assert!(w.ns.get("service", "vllm").is_some(), "its Service");

        let out = up(&["infra.deployments.vllm.spec.template.spec.containers.0.image=vllm/vllm-openai:v0.9.1"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let d = w.ns.get("deployment", "vllm").expect("the Deployment");
        assert_eq!(d["status"]["observedGeneration"], d["metadata"]["generation"], "{d}");
        assert_eq!(d["status"]["updatedReplicas"], 1, "{d}");
        let pods: Vec<Value> = w.ns.list("pods", "app=vllm").into_iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null()).collect();
        assert_eq!(pods.len(), 1, "{pods:?}");
        assert_eq!(pods[0]["spec"]["containers"][0]["image"], "vllm/vllm-openai:v0.9.1");

        let out = w.nrl(&["cluster", "down", CL_RECIPE, "--infra", CL_INFRA, "--target", "deployments.vllm"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(w.ns.get("deployment", "vllm").is_none());
        assert!(w.ns.get("service", "vllm").is_none());
    }
}

/// The DRA objects of the namespace (ComputeDomains and ResourceClaimTemplates).
fn dra_objects(ns: &Namespace) -> Vec<Value> {
    let mut all = ns.list("computedomains.resource.nvidia.com", "");
    all.extend(ns.list("resourceclaimtemplates.resource.k8s.io", ""));
    all
}

on_each_kuberay! {
    /// A RayCluster's DRA objects carry an ownerReference to it: deleting the RayCluster
    /// with kubectl (not nrl) lets the real garbage collector remove them.
    fn raycluster_dra_objects_are_garbage_collected(tb) {
        let w = World::new(tb, "dra-rc");
        let out = w.nrl(&["cluster", "up", CL_RECIPE, "--infra", CL_INFRA, "--role", "generation",
            "--no-wait", "--skip-doctor"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let rc = w.ns.get("raycluster", "rc-gen").expect("the RayCluster");
        let dra = dra_objects(&w.ns);
        assert_eq!(dra.len(), 2, "{dra:?}");
        for o in &dra {
            let owners = &o["metadata"]["ownerReferences"];
            assert_eq!(owners[0]["kind"], "RayCluster", "{o}");
            assert_eq!(owners[0]["uid"], rc["metadata"]["uid"], "{o}");
        }
        let out = w.ns.kubectl().args(["delete", "raycluster", "rc-gen", "--wait=false"]).output().expect("kubectl");
        assert!(out.status.success());
        w.ns.eventually(LONG, "the garbage collector to remove the DRA objects", |ns| {
            dra_objects(ns).is_empty().then_some(())
        });
    }
}

on_each_kuberay! {
    /// A RayJob's DRA objects are owned by the RayJob: created before it, handed over, and
    /// collected with it.
    fn rayjob_dra_objects_are_garbage_collected(tb) {
        let w = World::new(tb, "dra-rj");
        let out = w.nrl(&["run", QS_RECIPE, "--infra", DRA_INFRA, "--no-wait", "--skip-doctor",
            "--code-source", "image", "--code-path", "/tmp"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let rj = w.ns.get("rayjob", "tester-qs").expect("the RayJob");
        let dra = dra_objects(&w.ns);
        assert_eq!(dra.len(), 2, "{dra:?}");
        for o in &dra {
            assert_eq!(o["metadata"]["ownerReferences"][0]["uid"], rj["metadata"]["uid"], "{o}");
        }
        let out = w.ns.kubectl().args(["delete", "rayjob", "tester-qs", "--wait=false"]).output().expect("kubectl");
        assert!(out.status.success());
        w.ns.eventually(LONG, "the garbage collector to remove the DRA objects", |ns| {
            dra_objects(ns).is_empty().then_some(())
        });
    }
}
