//! Structural-schema defaults are applied before `required` is checked, as the API server
//! does for custom resources (decode, prune, default, then validate: apiextensions-apiserver
//! `pkg/apiserver/customresource_handler.go` `schemaCoercingDecoder` /
//! `unstructuredDefaulter`, then `customResourceStrategy.Validate`; docs:
//! <https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#defaulting>).

use super::check::Checker;
use super::schema::{self, Family};
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

const HEAD: &str = "  headGroupSpec:\n    template:\n      spec:\n        containers:\n        - name: ray-head\n          image: x\n";

/// KubeRay's CRDs default `minReplicas` to 0 and `maxReplicas` to 2147483647 (v1.1 on), so a
/// worker group may leave both out, in a RayCluster and in a RayJob's `rayClusterSpec`.
#[test]
fn a_worker_group_may_leave_out_min_and_max_replicas() {
    let group = "  - groupName: gpu\n    replicas: 2\n    template:\n      spec:\n        containers:\n        - name: ray-worker\n          image: x\n";
    let rc = format!(
        "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: c\nspec:\n{HEAD}  workerGroupSpecs:\n{group}"
    );
    assert_eq!(messages(&problems("rc.yaml", &rc)), Vec::<String>::new());
    let indent = |t: &str| t.lines().map(|l| format!("    {l}\n")).collect::<String>();
    let rj = format!(
        "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: j\nspec:\n  entrypoint: python x.py\n  rayClusterSpec:\n{}{}",
        indent(HEAD.trim_start_matches("  ").replace("\n  ", "\n").as_str()),
        indent(&format!(
            "workerGroupSpecs:\n{}",
            group.replace("\n  ", "\n").trim_start_matches("  ")
        ))
    );
    assert_eq!(
        messages(&problems("rj.yaml", &rj)),
        Vec::<String>::new(),
        "{rj}"
    );
}

/// A null for a field that is not `nullable` is pruned, then defaulted; a field without a
/// default stays required.
#[test]
fn a_pruned_null_is_defaulted_and_fields_without_defaults_stay_required() {
    let text = format!(
        "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: c\nspec:\n{HEAD}  workerGroupSpecs:\n  - minReplicas: null\n    template:\n      spec:\n        containers:\n        - name: w\n          image: x\n"
    );
    let diags = problems("rc.yaml", &text);
    assert_eq!(
        messages(&diags),
        ["RayCluster c: spec.workerGroupSpecs[0]: missing required field `groupName`"]
    );
}

/// Built-in kinds are defaulted by Go code, not their OpenAPI schema: nothing changes there.
#[test]
fn built_in_kinds_are_not_defaulted_from_the_schema() {
    let text =
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - image: x\n";
    let diags = problems("pod.yaml", text);
    assert_eq!(
        messages(&diags),
        ["Pod p: spec.containers[0]: missing required field `name`"]
    );
}

/// The defaults kept from the CRDs, where the API server applies them: inside list items
/// (`workerGroupSpecs[]`, `ports[]`) and nested objects.
#[test]
fn the_crd_defaults_are_bundled() {
    let i = schema::find_kind("ray.io/v1", "RayCluster").expect("RayCluster");
    let k = schema::compiled(i).expect("compiled");
    let node = |path: &[&str]| {
        path.iter().fold(k.node(k.root), |s, seg| {
            let id = match *seg {
                "[]" => s.items,
                name => s.prop(name),
            };
            k.node(id.unwrap_or_else(|| panic!("no {seg} in {path:?}")))
        })
    };
    let default = |path: &[&str]| node(path).default.map(|c| c.to_node().to_string());
    let group = ["spec", "workerGroupSpecs", "[]"];
    for (field, want) in [
        ("minReplicas", "0"),
        ("maxReplicas", "2147483647"),
        ("replicas", "0"),
        ("numOfHosts", "1"),
    ] {
        assert_eq!(
            default(&[&group[..], &[field]].concat()).as_deref(),
            Some(want),
            "{field}"
        );
    }
    let port = [
        &group[..],
        &[
            "template",
            "spec",
            "containers",
            "[]",
            "ports",
            "[]",
            "protocol",
        ],
    ]
    .concat();
    assert_eq!(default(&port).as_deref(), Some("\"TCP\""));
    assert_eq!(default(&["spec", "rayVersion"]), None);
}

/// Every bundled default is valid against its own schema node, so treating a defaulted
/// field as present is the same as filling it in and validating the result (the API server
/// also refuses a CRD whose defaults do not validate).
#[test]
fn every_bundled_default_validates_against_its_node() {
    let mut seen = 0;
    for i in 0.. {
        let Some(k) = schema::compiled(i) else { break };
        if k.family != Family::Crd {
            continue;
        }
        let mut stack = vec![k.root];
        let mut visited = std::collections::HashSet::new();
        while let Some(id) = stack.pop() {
            if !visited.insert(id) {
                continue;
            }
            let s = k.node(id);
            if let Some(c) = s.default {
                seen += 1;
                let value = c.to_node();
                let mut checker = Checker::new(k, "default");
                checker.check(id, &value, None);
                assert!(
                    checker.out.is_empty(),
                    "default {value} of node {id}: {:?}",
                    checker
                        .out
                        .iter()
                        .map(|p| p.diag.message.clone())
                        .collect::<Vec<_>>()
                );
            }
            stack.extend(s.child_ids());
        }
    }
    assert!(seen >= 10, "only {seen} defaults found");
}

/// List-map keys are unique after defaulting (apiextensions-apiserver `listtype`
/// `validateListMap`): two ports on 8265, one with the default protocol and one with `TCP`
/// written out, collide; `UDP` does not. Duplicate env and container names too.
#[test]
fn list_map_keys_are_unique_after_defaulting() {
    let text = format!(
        "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: c\nspec:\n{HEAD}  workerGroupSpecs:\n  - groupName: gpu\n    template:\n      spec:\n        containers:\n        - name: w\n          image: x\n          env:\n          - {{name: A, value: '1'}}\n          - {{name: B, value: '2'}}\n          - {{name: A, value: '3'}}\n          ports:\n          - containerPort: 8265\n          - containerPort: 8265\n            protocol: UDP\n          - containerPort: 8265\n            protocol: TCP\n        - name: w\n          image: y\n"
    );
    let diags = problems("rc.yaml", &text);
    let c = "RayCluster c: spec.workerGroupSpecs[0].template.spec.containers";
    assert_eq!(
        messages(&diags),
        [
            format!("{c}[0].env[2]: Duplicate value: {{name: \"A\"}}"),
            format!("{c}[0].ports[2]: Duplicate value: {{containerPort: 8265, protocol: \"TCP\"}}"),
            format!("{c}[1]: Duplicate value: {{name: \"w\"}}"),
        ]
    );
    assert_eq!(diags[0].location().as_deref(), Some("rc.yaml:22:14"));
    assert!(diags[1].labels[0].text.contains("same as item 0"));
}
