//! The dev pod: defaults, every configurable field, and offline validation.

use serde_json::json;

use super::*;
use crate::config::schema::{InfraConfig, validate};
use crate::config::source::{SourceKind, add_source};
use crate::config::yaml::parse_source;
use crate::render::validate::validate_object;

const BASE: &str = "namespace: team-ns\nimage: registry/img:1\nimagePullSecrets: [infra-pull]\n";

fn infra(extra: &str) -> InfraConfig {
    let id = add_source(
        "dev.infra.yaml",
        None,
        format!("{BASE}{extra}"),
        SourceKind::Infra,
    );
    let node = match parse_source(id) {
        Ok(n) => n,
        Err(e) => panic!("test YAML: {e}"),
    };
    match validate(&node) {
        Ok(c) => c,
        Err(e) => panic!("infra invalid: {}", e.render(false, 100)),
    }
}

fn pod(extra: &str) -> serde_json::Value {
    match dev_pod(&infra(extra), "alice") {
        Ok(p) => p.to_json(),
        Err(e) => panic!("dev pod: {}", e.render(false, 100)),
    }
}

fn container(p: &serde_json::Value) -> &serde_json::Value {
    &p["spec"]["containers"][0]
}

#[test]
fn defaults_follow_the_reference_pod() {
    let p = pod("");
    assert_eq!(p["apiVersion"], "v1");
    assert_eq!(p["kind"], "Pod");
    assert_eq!(
        p["metadata"],
        json!({
            "name": "alice-dev-pod",
            "namespace": "team-ns",
            "labels": {
                "app.kubernetes.io/managed-by": "nrl-k8s",
                "nrl-k8s/owner": "alice",
                "nrl-k8s/component": "dev-pod",
            },
        })
    );
    let spec = &p["spec"];
    assert_eq!(spec["restartPolicy"], "Never");
    assert_eq!(spec["imagePullSecrets"], json!([{"name": "infra-pull"}]));
    assert_eq!(
        spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
        json!({"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"}
        ]}]})
    );
    assert_eq!(
        spec["volumes"],
        json!([{"name": "workspace", "persistentVolumeClaim": {"claimName": "rl-workspace"}}])
    );
    let c = container(&p);
    assert_eq!(c["name"], "dev");
    assert_eq!(c["image"], "registry/img:1");
    assert_eq!(c["workingDir"], "/mnt/rl-workspace/alice");
    assert_eq!(c["env"], json!([{"name": "USER", "value": "alice"}]));
    assert_eq!(
        c["envFrom"],
        json!([{"secretRef": {"name": "alice-secrets", "optional": true}}])
    );
    assert_eq!(
        c["resources"],
        json!({"requests": {"cpu": "100m", "memory": "256Mi"},
               "limits": {"cpu": "5", "memory": "10Gi"}})
    );
    assert_eq!(
        c["volumeMounts"],
        json!([{"name": "workspace", "mountPath": "/mnt/rl-workspace"}])
    );
    let expected: Vec<serde_json::Value> =
        keep_alive_command().into_iter().map(Into::into).collect();
    assert_eq!(c["command"], json!(expected));
}

#[test]
fn keep_alive_command_downloads_nothing_and_traps_sigterm() {
    let cmd = keep_alive_command();
    assert_eq!(&cmd[..2], ["sh", "-c"]);
    let script = &cmd[2];
    for word in ["curl", "wget", "http", "apt", "pip", "install"] {
        assert!(
            !script.contains(word),
            "start-up script mentions {word}:\n{script}"
        );
    }
    assert!(script.starts_with("trap 'exit 0' TERM INT\n"), "{script}");
    assert!(script.ends_with("sleep infinity &\nwait"), "{script}");
    assert!(script.contains("SSH_KEY_CONTENT") && script.contains("RCLONE_CONF"));
}

#[test]
fn an_empty_dev_section_renders_the_defaults() {
    assert_eq!(pod("dev: {}\n"), pod(""));
    assert_eq!(pod("dev: null\n"), pod(""));
}

#[test]
fn pod_name_is_configurable() {
    let p = pod("dev:\n  podName: alice-sandbox\n");
    assert_eq!(p["metadata"]["name"], "alice-sandbox");
    assert_eq!(pod_name(&infra("dev:\n  podName: x\n"), "alice"), "x");
    assert_eq!(pod_name(&infra(""), "bob"), "bob-dev-pod");
}

#[test]
fn image_overrides_the_infra_image() {
    let p = pod("dev:\n  image: nvcr.io/nvidian/nemo-rl:nightly\n");
    assert_eq!(container(&p)["image"], "nvcr.io/nvidian/nemo-rl:nightly");
}

#[test]
fn pull_secrets_override_the_infra_list_and_can_be_emptied() {
    let p = pod("dev:\n  imagePullSecrets: [nvcr-secret, other]\n");
    assert_eq!(
        p["spec"]["imagePullSecrets"],
        json!([{"name": "nvcr-secret"}, {"name": "other"}])
    );
    let p = pod("dev:\n  imagePullSecrets: []\n");
    assert!(p["spec"].get("imagePullSecrets").is_none(), "{p}");
}

#[test]
fn pvc_and_mount_path_move_the_workspace_and_the_working_dir() {
    let p = pod("dev:\n  pvcName: my-ws\n  mountPath: /ws/\n");
    assert_eq!(
        p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "my-ws"
    );
    let c = container(&p);
    assert_eq!(c["volumeMounts"][0]["mountPath"], "/ws/");
    assert_eq!(c["workingDir"], "/ws/alice");
}

#[test]
fn working_dir_is_configurable() {
    let p = pod("dev:\n  workingDir: /ws/shared\n");
    assert_eq!(container(&p)["workingDir"], "/ws/shared");
}

#[test]
fn avoided_node_labels_become_does_not_exist_terms_or_nothing() {
    let p = pod("dev:\n  avoidNodeLabels: [nvidia.com/gpu.product, example.com/reserved]\n");
    let exprs = &p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0]["matchExpressions"];
    assert_eq!(
        *exprs,
        json!([
            {"key": "nvidia.com/gpu.product", "operator": "DoesNotExist"},
            {"key": "example.com/reserved", "operator": "DoesNotExist"},
        ])
    );
    let p = pod("dev:\n  avoidNodeLabels: []\n");
    assert!(p["spec"].get("affinity").is_none(), "{p}");
}

#[test]
fn resources_overlay_the_defaults_and_null_removes() {
    let p = pod(
        "dev:\n  resources:\n    requests: {cpu: 2, ephemeral-storage: 10Gi}\n    limits: {cpu: null, memory: 0.5}\n",
    );
    assert_eq!(
        container(&p)["resources"],
        json!({"requests": {"cpu": "2", "memory": "256Mi", "ephemeral-storage": "10Gi"},
               "limits": {"memory": "0.5"}})
    );
    let p = pod(
        "dev:\n  resources:\n    requests: {cpu: null, memory: null}\n    limits: {cpu: null, memory: null}\n",
    );
    assert!(container(&p).get("resources").is_none(), "{p}");
}

#[test]
fn env_from_secret_is_configurable_and_always_optional() {
    let p = pod("dev:\n  envFromSecret: team-secrets\n");
    assert_eq!(
        container(&p)["envFrom"],
        json!([{"secretRef": {"name": "team-secrets", "optional": true}}])
    );
}

#[test]
fn command_replaces_the_keep_alive_script() {
    let p = pod("dev:\n  command: [sleep, infinity]\n");
    assert_eq!(container(&p)["command"], json!(["sleep", "infinity"]));
}

#[test]
fn labels_come_from_infra_and_dev_settings() {
    let p = pod(
        "labels: {team: rl}\nannotations: {note: hi}\ndev:\n  ownerLabel: example.com/owner\n  labels: {nrl-k8s/component: null, purpose: debugging}\n",
    );
    assert_eq!(
        p["metadata"]["labels"],
        json!({
            "app.kubernetes.io/managed-by": "nrl-k8s",
            "team": "rl",
            "example.com/owner": "alice",
            "purpose": "debugging",
        })
    );
    assert_eq!(p["metadata"]["annotations"], json!({"note": "hi"}));
}

#[test]
fn defaults_and_a_fully_configured_pod_validate_clean() {
    let full = "dev:
  podName: alice-sandbox
  image: nvcr.io/nvidian/nemo-rl:nightly
  imagePullSecrets: [nvcr-secret]
  pvcName: my-ws
  mountPath: /ws
  workingDir: /ws/alice/src
  avoidNodeLabels: [nvidia.com/gpu.product]
  resources: {requests: {cpu: 1}, limits: {memory: 4Gi}}
  envFromSecret: alice-env
  command: [sleep, infinity]
  ownerLabel: example.com/owner
  labels: {purpose: debugging}
";
    for extra in ["", full] {
        let p = match dev_pod(&infra(extra), "alice") {
            Ok(p) => p,
            Err(e) => panic!("{}", e.render(false, 100)),
        };
        let problems = validate_object(&p);
        assert!(
            problems.is_empty(),
            "{}",
            problems
                .iter()
                .map(|d| d.render(false, 100))
                .collect::<String>()
        );
    }
}

#[test]
fn invalid_values_are_reported_at_the_infra_line() {
    let p = match dev_pod(
        &infra("dev:\n  podName: Alice_Sandbox\n  labels: {purpose: not a label value}\n"),
        "alice",
    ) {
        Ok(p) => p,
        Err(e) => panic!("{}", e.render(false, 100)),
    };
    let problems = validate_object(&p);
    let at: Vec<(String, String)> = problems
        .iter()
        .map(|d| (d.code.to_string(), d.location().unwrap_or_default()))
        .collect();
    assert!(
        at.contains(&("nrl::render::name".into(), "dev.infra.yaml:5:12".into())),
        "{at:?}"
    );
    assert!(
        at.iter()
            .any(|(c, l)| c == "nrl::render::name" && l.starts_with("dev.infra.yaml:6:")),
        "{at:?}"
    );
}

#[test]
fn a_user_name_that_cannot_name_things_is_refused() {
    for bad in ["", "Alice", "a_b", "-x", &"a".repeat(64)] {
        let e = match dev_pod(&infra(""), bad) {
            Ok(_) => panic!("user {bad:?} accepted"),
            Err(e) => e,
        };
        assert_eq!(e.code, "nrl::render::dev_user");
        assert!(e.help.as_deref().unwrap_or("").contains("NRL_USER"));
    }
}
