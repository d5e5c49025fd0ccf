//! One source line copied into several rendered places (segment copies, YAML aliases,
//! the clusters of several roles) is one problem, reported once, naming every place.

use super::tests::load_documents;
use super::{NAME, SCHEMA, validate_object, validate_objects};
use crate::config::node::Node;
use crate::diag::Diag;

/// A RayCluster whose head and two worker groups share one pod spec (a YAML alias) with a
/// misspelt field, and whose labels carry a bad value.
const SHARED: &str = r#"apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: rc-a
  namespace: ns
  labels: {team: "a b"}
spec:
  headGroupSpec:
    rayStartParams: {}
    template:
      spec: &pod
        nodeSelecter: {nodeGroup: gpu}
        containers:
        - name: ray
          image: img
  workerGroupSpecs:
  - groupName: gpu-segment-0
    rayStartParams: {}
    template: {spec: *pod}
  - groupName: gpu-segment-1
    rayStartParams: {}
    template: {spec: *pod}
"#;

fn messages(diags: &[Diag]) -> Vec<String> {
    diags.iter().map(|d| d.message.clone()).collect()
}

fn rename(obj: &Node, name: &str) -> Node {
    let mut obj = obj.clone();
    if let Some(n) = obj.get_path_mut("metadata.name") {
        *n = Node::str(name).with_span(n.span);
    }
    obj
}

#[test]
fn copies_in_one_object_are_one_problem_naming_every_place() {
    let docs = load_documents("shared.yaml", SHARED);
    let diags = validate_object(&docs[0]);
    assert_eq!(
        messages(&diags),
        [
            "RayCluster rc-a: spec.headGroupSpec.template.spec.nodeSelecter, \
             spec.workerGroupSpecs[0,1].template.spec.nodeSelecter: unknown field",
            "RayCluster rc-a: label value \"a b\" (key `team`) contains a space",
        ]
    );
    let typo = &diags[0];
    assert_eq!(typo.code, SCHEMA);
    assert_eq!(typo.labels.len(), 1);
    assert_eq!(typo.labels[0].span.text(), "nodeSelecter");
    assert!(
        typo.notes
            .iter()
            .any(|n| n == "reported once for the 3 rendered places this line reaches"),
        "{:?}",
        typo.notes
    );
    // The label is one place (the object): no note.
    assert_eq!(diags[1].code, NAME);
    assert!(diags[1].notes.is_empty(), "{:?}", diags[1].notes);
}

#[test]
fn copies_across_objects_name_the_objects() {
    let docs = load_documents("shared.yaml", SHARED);
    let other = rename(&docs[0], "rc-b");
    let diags = validate_objects([&docs[0], &other]);
    assert_eq!(
        messages(&diags),
        [
            "RayCluster rc-a, RayCluster rc-b: spec.headGroupSpec.template.spec.nodeSelecter, \
             spec.workerGroupSpecs[0,1].template.spec.nodeSelecter: unknown field",
            "RayCluster rc-a, RayCluster rc-b: label value \"a b\" (key `team`) contains a space",
        ]
    );
    // Each object alone still reports its own problems.
    assert_eq!(validate_object(&other).len(), 2);
}

#[test]
fn problems_of_different_lines_stay_apart() {
    let text = SHARED.replace(
        "    template: {spec: *pod}\n  - groupName: gpu-segment-1",
        "    template: {spec: {nodeSelecter: {}, containers: [{name: w, image: i}]}}\n  - groupName: gpu-segment-1",
    );
    let docs = load_documents("apart.yaml", &text);
    let diags = validate_object(&docs[0]);
    let typos: Vec<String> = messages(&diags)
        .into_iter()
        .filter(|m| m.contains("nodeSelecter"))
        .collect();
    assert_eq!(
        typos,
        [
            "RayCluster rc-a: spec.headGroupSpec.template.spec.nodeSelecter, \
             spec.workerGroupSpecs[1].template.spec.nodeSelecter: unknown field",
            "RayCluster rc-a: spec.workerGroupSpecs[0].template.spec.nodeSelecter: unknown field",
        ]
    );
}
