//! `infra.dev`: defaults, each field, overlays, mistakes, and the bundle dump.

use super::test_schema::{err, min_plus, ok};
use super::*;

fn dev_of(extra: &str) -> DevSpec {
    match ok(validate(&min_plus(extra))).dev {
        Some(d) => d,
        None => panic!("no dev section parsed from {extra:?}"),
    }
}

fn help(e: &crate::diag::Diag) -> &str {
    e.help.as_deref().unwrap_or("")
}

#[test]
fn absent_or_null_section_is_none() {
    assert_eq!(ok(validate(&min_plus(""))).dev, None);
    assert_eq!(ok(validate(&min_plus("dev: null\n"))).dev, None);
}

#[test]
fn empty_section_has_the_reference_defaults() {
    let d = dev_of("dev: {}\n");
    assert_eq!(d, DevSpec::default());
    assert_eq!(d.pod_name, None);
    assert_eq!(d.image, None);
    assert_eq!(d.image_pull_secrets, None);
    assert_eq!(d.pvc_name, "rl-workspace");
    assert_eq!(d.mount_path, "/mnt/rl-workspace");
    assert_eq!(d.working_dir, None);
    assert_eq!(d.avoid_node_labels, ["nvidia.com/gpu.product"]);
    assert_eq!(d.resources.requests["cpu"], "100m");
    assert_eq!(d.resources.requests["memory"], "256Mi");
    assert_eq!(d.resources.limits["cpu"], "5");
    assert_eq!(d.resources.limits["memory"], "10Gi");
    assert_eq!(d.env_from_secret, None);
    assert_eq!(d.command, None);
    assert_eq!(d.owner_label, "nrl-k8s/owner");
    assert_eq!(d.labels[DEV_COMPONENT_LABEL], "dev-pod");
}

#[test]
fn every_field_is_read() {
    let d = dev_of(
        "dev:
  podName: ' me-dev '
  image: img:2
  imagePullSecrets: [a, b]
  pvcName: ws
  mountPath: /ws
  workingDir: /ws/me
  avoidNodeLabels: []
  resources: {requests: {cpu: 2}, limits: {memory: 1.5}}
  envFromSecret: me-env
  command: [sleep, infinity]
  ownerLabel: example.com/owner
  labels: {purpose: debug}
",
    );
    assert_eq!(
        d.pod_name.as_deref(),
        Some("me-dev"),
        "strings are stripped"
    );
    assert_eq!(d.image.as_deref(), Some("img:2"));
    assert_eq!(d.image_pull_secrets, Some(vec!["a".into(), "b".into()]));
    assert_eq!(d.pvc_name, "ws");
    assert_eq!(d.mount_path, "/ws");
    assert_eq!(d.working_dir.as_deref(), Some("/ws/me"));
    assert!(d.avoid_node_labels.is_empty());
    assert_eq!(
        d.resources.requests.iter().collect::<Vec<_>>(),
        [
            (&"cpu".to_string(), &"2".to_string()),
            (&"memory".into(), &"256Mi".into())
        ]
    );
    assert_eq!(d.resources.limits["memory"], "1.5");
    assert_eq!(d.resources.limits["cpu"], "5");
    assert_eq!(d.env_from_secret.as_deref(), Some("me-env"));
    assert_eq!(d.command, Some(vec!["sleep".into(), "infinity".into()]));
    assert_eq!(d.owner_label, "example.com/owner");
    assert_eq!(d.labels.len(), 2);
    assert_eq!(d.labels["purpose"], "debug");
}

#[test]
fn overlays_remove_keys_set_to_null() {
    let d =
        dev_of("dev:\n  labels: {nrl-k8s/component: null}\n  resources: {limits: {cpu: null}}\n");
    assert!(d.labels.is_empty());
    assert_eq!(d.resources.limits.keys().collect::<Vec<_>>(), ["memory"]);
}

#[test]
fn mistakes_are_reported_with_fixes() {
    let e = err(validate(&min_plus("dev:\n  pvc_name: x\n")));
    assert_eq!(e.code, "nrl::config::unknown_key");
    assert!(help(&e).contains("did you mean `pvcName`?"), "{}", help(&e));

    let e = err(validate(&min_plus("dev:\n  resources: {request: {}}\n")));
    assert!(
        help(&e).contains("did you mean `requests`?"),
        "{}",
        help(&e)
    );

    let e = err(validate(&min_plus("podName: x\n")));
    assert!(
        help(&e).contains("`podName` belongs under `infra.dev`"),
        "{}",
        help(&e)
    );

    let e = err(validate(&min_plus("dev:\n  command: []\n")));
    assert_eq!(e.code, "nrl::config::rule");
    assert!(
        e.message.contains("`infra.dev.command` must not be empty"),
        "{}",
        e.message
    );
    assert_eq!(e.location().as_deref(), Some("infra.yaml:4:12"));

    let e = err(validate(&min_plus("dev:\n  podName: '  '\n")));
    assert!(
        e.message.contains("`infra.dev.podName` must not be empty"),
        "{}",
        e.message
    );

    let e = err(validate(&min_plus("dev:\n  labels: {version: 1}\n")));
    assert_eq!(e.code, "nrl::config::type");

    let e = err(validate(&min_plus(
        "dev:\n  resources: {requests: {cpu: true}}\n",
    )));
    assert_eq!(e.code, "nrl::config::type");

    let e = err(validate(&min_plus("dev:\n  resources: {limits: null}\n")));
    assert!(help(&e).contains("to keep the defaults"), "{}", help(&e));

    let e = err(validate(&min_plus("dev: [x]\n")));
    assert_eq!(e.code, "nrl::config::type");
}

#[test]
fn bundle_dump_omits_the_section_unless_set() {
    let plain = ok(validate(&min_plus(""))).to_node();
    assert!(plain.get("dev").is_none());
    let last = plain.as_map().and_then(|m| m.keys().next_back().cloned());
    assert_eq!(last.as_deref(), Some("annotations"));

    let set = ok(validate(&min_plus("dev: {pvcName: ws}\n"))).to_node();
    let dev = set.get("dev").map(|d| d.to_json());
    assert_eq!(
        dev,
        Some(serde_json::json!({
            "podName": null,
            "image": null,
            "imagePullSecrets": null,
            "pvcName": "ws",
            "mountPath": "/mnt/rl-workspace",
            "workingDir": null,
            "avoidNodeLabels": ["nvidia.com/gpu.product"],
            "resources": {
                "requests": {"cpu": "100m", "memory": "256Mi"},
                "limits": {"cpu": "5", "memory": "10Gi"},
            },
            "envFromSecret": null,
            "command": null,
            "ownerLabel": "nrl-k8s/owner",
            "labels": {"nrl-k8s/component": "dev-pod"},
        }))
    );
}
