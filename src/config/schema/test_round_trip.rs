//! Reading a dump back gives the model it came from: `validate(to_node(m)) == m`. With a
//! config that sets every field away from its default, a field that were declared but not
//! read, or read but not dumped, would come back as its default and fail here.

use super::test_reference::{
    QWEN3, SHIPPED_DEFAULTS, ULTRA_48N, ULTRA_64N, golden_infra, resolved_example,
};
use super::test_schema::{ok, yaml};
use super::*;
use crate::config::node::Value;

/// Every field set, none to its default (enums, bools and numbers included).
const EVERY_FIELD: &str = r#"
namespace: ns-full
image: img:full
imagePullSecrets: [pull]
rayVersion: "2.49.0"
serviceAccount: sa
scheduler: {kind: kai, queue: q}
placement:
  nodeSelector: {pool: gpu}
  tolerations:
    - {key: k, operator: Exists, value: v, effect: NoExecute, tolerationSeconds: 30}
  affinity: {nodeAffinity: {weight: 1}}
networking:
  hostNetwork: true
  gloo_socket_ifname: eth0
  nccl_socket_ifname: eth1
  nccl_ib_disable: true
  nccl_net: IB
  extra_env: {A: b}
workspace: {kind: hostPath, pvcName: ws, mountPath: /ws, repoSubdir: sub, size: 10Gi, hostPath: /data}
hf_cache: {kind: pvc, pvcName: hf, mountPath: /hf}
checkpoints: {kind: lustre, pvcName: ck, mountPath: /ck}
submit:
  kind: rayjob
  portForward: kubectl-port-forward
  devPod: required
  localDashboardPort: 1234
  submitter: exec
  execTmpDir: /var/tmp
launch:
  mode: attach
  runMode: batch
  attach: {generation: g, gym: y, training: t}
  peerWatcher: false
  entrypoint: python train.py
  env: {E: f}
  rayUploadPaths: [src]
  codeSource: image
  codePath: /opt/code
resources:
  training: {head: {cpu: "1", memory: 1Gi, gpu: 1}, worker: {cpu: "2", memory: 2Gi, gpu: 2}}
  generation: {head: {cpu: "3", memory: 3Gi, gpu: 3}, worker: {cpu: "4", memory: 4Gi, gpu: 4}}
  gym: {head: {cpu: "5", memory: 5Gi, gpu: 5}, worker: {cpu: "6", memory: 6Gi, gpu: 6}}
kuberay:
  training: &cluster
    name: t
    spec: {headGroupSpec: {rayStartParams: {num-cpus: "0"}}}
    labels: {l: m}
    annotations: {n: o}
    segmentSize: 2
    daemon:
      entrypoint: d
      submissionId: s
      env: {X: y}
      healthCheckUrl: http://h
      healthCheckTimeoutS: 5
      rayUploadPaths: [p]
  generation: *cluster
  gym: *cluster
deployments:
  tools:
    name: tools
    spec: {replicas: 1}
    labels: {l: m}
    annotations: {n: o}
    healthCheckUrl: http://t
    healthCheckTimeoutS: 9
labels: {team: a}
annotations: {note: b}
dev:
  podName: p
  image: i
  imagePullSecrets: [s]
  pvcName: w
  mountPath: /w
  workingDir: /w/me
  avoidNodeLabels: [gpu]
  resources: {requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 2, memory: 2Gi}}
  envFromSecret: env
  command: [sleep, infinity]
  ownerLabel: o/owner
  labels: {nrl-k8s/component: x}
"#;

/// The model without its source tree (which holds the input as written, not the model).
fn content(mut cfg: InfraConfig) -> InfraConfig {
    cfg.source = Node::null();
    cfg
}

fn assert_round_trips(name: &str, infra: &Node) {
    let cfg = ok(validate(infra));
    let dumped = cfg.to_node();
    let again = ok(validate(&dumped));
    assert_eq!(
        again.to_node().to_json(),
        dumped.to_json(),
        "{name}: the dump of the reread model"
    );
    assert_eq!(content(again), content(cfg), "{name}: the reread model");
}

/// That `full` is set everywhere `default` has a value, and differs from it there: no
/// null, no empty list or map, no value equal to the default's at the same place.
fn differs_everywhere(full: &Node, default: Option<&Node>, at: &str) {
    match (&full.value, default.map(|d| &d.value)) {
        (Value::Map(m), d) => {
            assert!(!m.is_empty(), "`{at}` is empty");
            if let Some(Value::Map(d)) = d {
                for k in d.keys() {
                    assert!(m.contains_key(k), "`{at}.{k}` is not set");
                }
            }
            for (k, v) in m {
                let d = match d {
                    Some(Value::Map(d)) => d.get(k),
                    _ => None,
                };
                differs_everywhere(v, d, &format!("{at}.{k}"));
            }
        }
        (Value::List(items), _) => {
            assert!(!items.is_empty(), "`{at}` is empty");
            for (i, v) in items.iter().enumerate() {
                differs_everywhere(v, None, &format!("{at}.{i}"));
            }
        }
        (Value::Null, _) => panic!("`{at}` is null"),
        (v, Some(d)) => assert_ne!(v, d, "`{at}` is its default"),
        (_, None) => {}
    }
}

#[test]
fn the_every_field_config_sets_every_field_away_from_its_default() {
    let full = ok(validate(&yaml(EVERY_FIELD))).to_node();
    let default = ok(validate(&yaml("namespace: ns\nimage: img\ndev: {}\n"))).to_node();
    differs_everywhere(&full, Some(&default), "infra");
}

#[test]
fn every_field_round_trips() {
    assert_round_trips("every field", &yaml(EVERY_FIELD));
    assert_round_trips("no field", &yaml("namespace: ns\nimage: img\n"));
    assert_round_trips("empty dev", &yaml("namespace: ns\nimage: img\ndev: {}\n"));
}

#[test]
fn reference_infra_files_round_trip() {
    assert_round_trips("golden bundle", &golden_infra());
    for (name, text) in [
        ("qwen3", QWEN3),
        ("ultra 48n", ULTRA_48N),
        ("ultra 64n", ULTRA_64N),
    ] {
        assert_round_trips(name, &resolved_example(text));
    }
    for (name, text) in [
        ("reference shipped defaults", SHIPPED_DEFAULTS),
        (
            "nrl shipped defaults",
            include_str!("../shipped_defaults.yaml"),
        ),
    ] {
        let mut infra = match yaml(text).get("infra") {
            Some(n) => n.clone(),
            None => panic!("{name} have no infra"),
        };
        if let Some(m) = infra.as_map_mut() {
            m.insert("namespace".into(), Node::str("ns"));
            m.insert("image".into(), Node::str("img"));
        }
        assert_round_trips(name, &infra);
    }
}

#[test]
fn dev_overlay_removals_round_trip() {
    let infra = yaml(
        "namespace: ns\nimage: img\ndev:\n  labels: {nrl-k8s/component: null, purpose: debug}\n  resources: {requests: {memory: null}, limits: {cpu: null}}\n",
    );
    assert_round_trips("dev overlay removals", &infra);
    // A removed default shows as null, after the keys kept.
    let dev = ok(validate(&infra)).to_node().get("dev").map(Node::to_json);
    let dev = dev.unwrap_or_default();
    assert_eq!(
        dev["labels"],
        serde_json::json!({"purpose": "debug", "nrl-k8s/component": null})
    );
    assert_eq!(
        dev["resources"],
        serde_json::json!({
            "requests": {"cpu": "100m", "memory": null},
            "limits": {"memory": "10Gi", "cpu": null},
        })
    );
}
