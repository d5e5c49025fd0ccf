//! The reference catalogue's fixtures (ref-config-render §7): `BASE`, `DBASE` and the
//! default infras, built as YAML text and validated by the real infra schema, so every
//! value carries the span of its line in `catalog.infra.yaml`.

use nrl::config::node::Node;
use nrl::config::schema::{ClusterSpec, DeploymentSpec, InfraConfig, Role, validate};
use nrl::config::source::{SourceKind, add_source};
use nrl::config::yaml::parse_source;
use nrl::diag::Diag;
use nrl::render::emit::to_yaml;
use nrl::render::rayjob::RayJobOptions;
use serde_json::{Value, json};

/// `BASE`: one head container and one worker group, both with an explicit old image.
pub fn base() -> Value {
    json!({
        "headGroupSpec": {"template": {"spec": {"containers": [
            {"name": "ray-head", "image": "registry/img:old"}
        ]}}},
        "workerGroupSpecs": [{
            "groupName": "gpu-workers",
            "template": {"spec": {"containers": [
                {"name": "ray-worker", "image": "registry/img:old"}
            ]}},
        }],
    })
}

/// `DBASE`: a Deployment spec with a selector and one container port.
pub fn dbase() -> Value {
    json!({
        "selector": {"matchLabels": {"app": "sidecar"}},
        "template": {"spec": {"containers": [
            {"name": "server", "ports": [{"containerPort": 8080}]}
        ]}},
    })
}

/// The infra mapping under construction, edited with [`Fixture::set`].
pub struct Fixture {
    pub infra: Value,
}

impl Fixture {
    /// test_manifest's default: infra `{namespace: ns-patched, image: registry/img:new}`
    /// with cluster `{name: rc-test, spec: BASE}` as the training role.
    pub fn manifest() -> Fixture {
        Fixture {
            infra: json!({
                "namespace": "ns-patched",
                "image": "registry/img:new",
                "kuberay": {"training": {"name": "rc-test", "spec": base()}},
            }),
        }
    }

    /// test_rayjob's default: namespace `ns`.
    pub fn rayjob() -> Fixture {
        let mut f = Fixture::manifest();
        f.set("namespace", json!("ns"));
        f
    }

    /// test_manifest's deployment cases: `deployments.sidecar = {name: my-sidecar, spec:
    /// DBASE}` and no RayCluster.
    pub fn deployment() -> Fixture {
        Fixture {
            infra: json!({
                "namespace": "ns-patched",
                "image": "registry/img:new",
                "deployments": {"sidecar": {"name": "my-sidecar", "spec": dbase()}},
            }),
        }
    }

    /// Set the value at a dotted path (list indices as numbers), creating mappings.
    pub fn set(&mut self, path: &str, value: Value) -> &mut Self {
        *slot(&mut self.infra, path) = value;
        self
    }

    /// Remove the key at a dotted path.
    pub fn remove(&mut self, path: &str) -> &mut Self {
        let (parent, key) = path.rsplit_once('.').unwrap_or(("", path));
        let target = if parent.is_empty() {
            &mut self.infra
        } else {
            slot(&mut self.infra, parent)
        };
        if let Some(m) = target.as_object_mut() {
            m.shift_remove(key);
        }
        self
    }

    /// The YAML text the schema reads.
    pub fn yaml(&self) -> String {
        to_yaml(&Node::from_json(&self.infra))
    }

    /// Validate through the real schema (spans point into `catalog.infra.yaml`).
    pub fn load(&self) -> InfraConfig {
        let id = add_source("catalog.infra.yaml", None, self.yaml(), SourceKind::Infra);
        let node = parse_source(id).expect("fixture YAML parses");
        match validate(&node) {
            Ok(cfg) => cfg,
            Err(e) => panic!("fixture infra invalid: {}", e.render(false, 100)),
        }
    }
}

fn slot<'a>(mut v: &'a mut Value, path: &str) -> &'a mut Value {
    for seg in path.split('.') {
        v = match seg.parse::<usize>() {
            Ok(i) if v.is_array() => &mut v[i],
            _ => {
                if !v.is_object() {
                    *v = json!({});
                }
                &mut v[seg]
            }
        };
    }
    v
}

pub fn training(cfg: &InfraConfig) -> &ClusterSpec {
    cfg.kuberay.get(Role::Training).expect("a training cluster")
}

pub fn sidecar(cfg: &InfraConfig) -> &DeploymentSpec {
    &cfg.deployments["sidecar"]
}

/// `build_raycluster_manifest(cluster, infra, role="training")`.
pub fn try_raycluster(f: &Fixture) -> Result<Value, Diag> {
    let cfg = f.load();
    nrl::render::raycluster::raycluster(&cfg, training(&cfg), Role::Training).map(|n| n.to_json())
}

pub fn raycluster(f: &Fixture) -> Value {
    try_raycluster(f).unwrap_or_else(|e| panic!("render: {}", e.render(false, 100)))
}

pub fn try_deployment(f: &Fixture) -> Result<Value, Diag> {
    let cfg = f.load();
    nrl::render::deployment::deployment(&cfg, "sidecar", sidecar(&cfg)).map(|n| n.to_json())
}

pub fn deployment(f: &Fixture) -> Value {
    try_deployment(f).unwrap_or_else(|e| panic!("render: {}", e.render(false, 100)))
}

pub fn try_service(f: &Fixture) -> Result<Option<Value>, Diag> {
    let cfg = f.load();
    nrl::render::deployment::service(&cfg, sidecar(&cfg)).map(|s| s.map(|n| n.to_json()))
}

pub fn service(f: &Fixture) -> Option<Value> {
    try_service(f).unwrap_or_else(|e| panic!("render: {}", e.render(false, 100)))
}

/// `build_rayjob_manifest(cluster, infra, entrypoint, ...)` through nrl's
/// `render::rayjob::rayjob`, which uses the entrypoint it is given as is.
pub fn rayjob(f: &Fixture, entrypoint: &str, opts: &RayJobOptions) -> Value {
    let cfg = f.load();
    nrl::render::rayjob::rayjob(
        &cfg,
        training(&cfg),
        Role::Training,
        Node::str(entrypoint),
        opts,
    )
    .unwrap_or_else(|e| panic!("render: {}", e.render(false, 100)))
    .to_json()
}

/// The pod specs of the head and of every worker group, in order.
pub fn pod_specs(spec: &Value) -> Vec<&Value> {
    let mut out = vec![&spec["headGroupSpec"]["template"]["spec"]];
    if let Some(groups) = spec["workerGroupSpecs"].as_array() {
        out.extend(groups.iter().map(|g| &g["template"]["spec"]));
    }
    out
}

/// Every container image of the head and worker groups.
pub fn images(spec: &Value) -> Vec<&Value> {
    pod_specs(spec)
        .into_iter()
        .flat_map(|p| p["containers"].as_array().into_iter().flatten())
        .map(|c| &c["image"])
        .collect()
}
