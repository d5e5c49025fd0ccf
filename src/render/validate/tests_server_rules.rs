//! The API server's rules the schemas do not express (`server_rules.rs`).

use serde_json::Value as Json;

use super::server_rules::{CEL_RULES, CODE};
use super::testdata::reference_dir;
use super::tests::load_documents;
use super::validate_object;
use crate::diag::Diag;

fn problems(name: &str, text: &str) -> Vec<Diag> {
    let docs = load_documents(name, text);
    assert_eq!(docs.len(), 1);
    validate_object(&docs[0])
}

fn messages(diags: &[Diag]) -> Vec<String> {
    diags.iter().map(|d| d.message.clone()).collect()
}

fn help(d: &Diag) -> &str {
    d.help.as_deref().unwrap_or("")
}

/// A RayCluster whose worker template carries `pod_extra` (indented under `spec:`).
fn raycluster(pod_extra: &str) -> String {
    let extra: String = pod_extra
        .lines()
        .map(|l| format!("        {l}\n"))
        .collect();
    format!(
        "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: c\nspec:\n  headGroupSpec:\n    template:\n      spec:\n        containers:\n        - name: ray-head\n          image: x\n  workerGroupSpecs:\n  - groupName: gpu\n    template:\n      spec:\n{extra}"
    )
}

/// Kubernetes `validation.go` `validatePodResourceClaim`: exactly one source per entry. The
/// RayCluster itself is accepted, its pods are not: the help says so.
#[test]
fn a_resource_claim_naming_both_a_claim_and_a_template_is_refused() {
    let text = raycluster(
        "containers:\n- name: w\n  image: x\nresourceClaims:\n- name: roce-channel\n  resourceClaimName: shared\n  resourceClaimTemplateName: roce-x\n",
    );
    let diags = problems("rc.yaml", &text);
    assert_eq!(
        messages(&diags),
        [
            "RayCluster c: spec.workerGroupSpecs[0].template.spec.resourceClaims[0]: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
        ]
    );
    let d = &diags[0];
    assert_eq!(d.code, CODE);
    assert_eq!(d.location().as_deref(), Some("rc.yaml:20:11"));
    assert!(
        help(d).contains("refuses every pod KubeRay creates"),
        "{}",
        help(d)
    );
}

#[test]
fn a_resource_claim_naming_neither_duplicates_and_unknown_container_claims() {
    let text = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  selector:\n    matchLabels: {app: d}\n  template:\n    metadata:\n      labels: {app: d}\n    spec:\n      containers:\n      - name: c\n        image: x\n        resources:\n          claims:\n          - name: gpu\n          - name: nic\n      resourceClaims:\n      - name: gpu\n        resourceClaimTemplateName: gpu-t\n      - name: gpu\n        resourceClaimName: gpu-c\n      - name: other\n";
    let diags = problems("deploy.yaml", text);
    assert_eq!(
        messages(&diags),
        [
            "Deployment d: spec.template.spec.resourceClaims[1].name: Duplicate value: \"gpu\"",
            "Deployment d: spec.template.spec.resourceClaims[2]: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            "Deployment d: spec.template.spec.containers[0].resources.claims[1]: Not found: \"nic\": must be one of the names in pod.spec.resourceClaims: gpu, other",
        ]
    );
    assert_eq!(diags[2].location().as_deref(), Some("deploy.yaml:18:19"));
    // A Deployment is refused by the server itself: no note about pods created later.
    assert!(diags.iter().all(|d| !help(d).contains("KubeRay")));
}

/// ray.io_rayclusters.yaml `managedBy`: `self in ['ray.io/kuberay-operator', ...]`.
#[test]
fn managed_by_must_name_kuberay_or_multikueue() {
    let ok = raycluster("containers:\n- name: w\n  image: x\n").replace(
        "spec:\n  headGroupSpec",
        "spec:\n  managedBy: kueue.x-k8s.io/multikueue\n  headGroupSpec",
    );
    assert_eq!(messages(&problems("rc.yaml", &ok)), Vec::<String>::new());
    let bad = ok.replace("kueue.x-k8s.io/multikueue", "kueue");
    let diags = problems("rc.yaml", &bad);
    assert_eq!(
        messages(&diags),
        [
            "RayCluster c: spec.managedBy: the managedBy field value must be either 'ray.io/kuberay-operator' or 'kueue.x-k8s.io/multikueue'"
        ]
    );
    assert!(help(&diags[0]).contains("x-kubernetes-validations"));
    assert_eq!(diags[0].location().as_deref(), Some("rc.yaml:6:14"));
}

/// ray.io_rayjobs.yaml `deletionStrategy` and `deletionRules[].condition` rules.
#[test]
fn rayjob_deletion_strategy_rules() {
    let rayjob = |ds: &str| {
        let ds: String = ds.lines().map(|l| format!("    {l}\n")).collect();
        format!(
            "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: j\nspec:\n  entrypoint: python x.py\n  deletionStrategy:\n{ds}"
        )
    };
    let cases: &[(&str, &[&str])] = &[
        (
            "onSuccess: {policy: DeleteCluster}\nonFailure: {policy: DeleteNone}\n",
            &[],
        ),
        (
            "deletionRules:\n- policy: DeleteCluster\n  condition: {jobStatus: SUCCEEDED}\n",
            &[],
        ),
        (
            "onSuccess: {policy: DeleteCluster}\n",
            &[
                "spec.deletionStrategy: deletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)",
            ],
        ),
        (
            "onSuccess: {policy: DeleteCluster}\nonFailure: {policy: DeleteNone}\ndeletionRules:\n- policy: DeleteCluster\n  condition: {jobStatus: FAILED, jobDeploymentStatus: Failed}\n- policy: DeleteSelf\n  condition: {ttlSeconds: 10}\n",
            &[
                "spec.deletionStrategy: legacy policies (onSuccess/onFailure) and deletionRules cannot be used together within the same deletionStrategy",
                "spec.deletionStrategy.deletionRules[0].condition: JobStatus and JobDeploymentStatus cannot be used together within the same deletion condition.",
                "spec.deletionStrategy.deletionRules[1].condition: the deletion condition requires either the JobStatus or the JobDeploymentStatus field.",
            ],
        ),
    ];
    for (ds, want) in cases {
        let got: Vec<String> = problems("rj.yaml", &rayjob(ds))
            .iter()
            .filter(|d| d.code == CODE)
            .map(|d| d.message.trim_start_matches("RayJob j: ").to_string())
            .collect();
        assert_eq!(got, *want, "{ds}");
    }
}

/// Every `x-kubernetes-validations` rule of the served versions nrl renders, in the CRDs
/// the schemas are trimmed from.
fn crd_rules() -> Vec<(String, String)> {
    fn walk(v: &Json, at: &str, out: &mut Vec<(String, String)>) {
        match v {
            Json::Object(m) => {
                for (k, x) in m {
                    if k == "x-kubernetes-validations" {
                        for r in x.as_array().into_iter().flatten() {
                            let rule = r["rule"].as_str().unwrap_or_default();
                            out.push((at.to_string(), rule.to_string()));
                        }
                    } else {
                        walk(x, &format!("{at}.{k}"), out);
                    }
                }
            }
            Json::Array(a) => a.iter().for_each(|x| walk(x, at, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (file, version) in [
        ("kuberay/ray.io_rayclusters.yaml", "v1"),
        ("kuberay/ray.io_rayjobs.yaml", "v1"),
        (
            "nvidia-dra/resource.nvidia.com_computedomains.yaml",
            "v1beta1",
        ),
    ] {
        let text = std::fs::read_to_string(reference_dir("schemas").join(file)).expect("CRD");
        let doc: Json = serde_saphyr::from_str(&text).expect("CRD parses");
        let v = doc["spec"]["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .find(|v| v["name"] == version)
            .expect("version");
        walk(&v["schema"]["openAPIV3Schema"], file, &mut out);
    }
    out
}

/// The translated rules are exactly the CRDs' rules that can fail on a create; the rest are
/// transition rules (`oldSelf`: checked only on update, with an old object).
#[test]
fn every_crd_rule_is_translated_or_a_transition_rule() {
    let rules = crd_rules();
    assert!(rules.len() >= 8, "{rules:?}");
    for (at, rule) in &rules {
        assert!(
            rule.contains("oldSelf") || CEL_RULES.contains(&rule.as_str()),
            "CEL rule at {at} is not translated in server_rules.rs: {rule}"
        );
    }
    for rule in CEL_RULES {
        assert!(
            rules.iter().any(|(_, r)| r == rule),
            "{rule} is no longer in the CRDs"
        );
    }
}
