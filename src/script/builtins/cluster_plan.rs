//! Plan mode of the `cluster` built-ins: what `up` and `down` record, the simulated
//! handles `up` returns, and the status rows of clusters the dry run brings up or down
//! (nothing is read from the cluster for those).

use rhai::{Array, Dynamic, Map};

use super::cluster::Cluster;
use super::config::Config;
use crate::config::layers::LoadedConfig;
use crate::config::schema::{ClusterSpec, Role};
use crate::launch::raycluster::daemon::daemon_base_id;
use crate::launch::raycluster::{DownOptions, UpOptions, cluster_of, dra_objects};
use crate::render::targets::Target;
use crate::script::errors::{RhaiResult, fail};
use crate::script::host::Host;
use crate::script::plan::object_key;

/// `#{id, submitted}` of a daemon.
pub fn daemon_map(id: &str, submitted: Dynamic) -> Map {
    let mut m = Map::new();
    m.insert("id".into(), id.into());
    m.insert("submitted".into(), submitted);
    m
}

/// Record bringing up one target and return its simulated handle.
pub fn plan_up(h: &Host, cfg: &Config, t: &Target, opts: &UpOptions) -> RhaiResult<Dynamic> {
    let loaded = cfg.loaded();
    let ns = loaded.infra.namespace.clone();
    let wait = |state: &str| {
        if opts.wait {
            format!("; wait until {state} ({}s)", opts.timeout.as_secs())
        } else {
            String::new()
        }
    };
    let handle = match t {
        Target::Role(role) => {
            let c = cluster_of(loaded, *role).map_err(fail)?;
            let dra = dra_objects(&loaded.infra, c, *role, "").len();
            let mut details = format!("{} in namespace {ns}", t.label());
            if dra > 0 {
                details.push_str(&format!("; {dra} DRA object(s) first"));
            }
            details.push_str(&wait("ready"));
            let daemon = c.daemon.as_ref().map(|d| daemon_base_id(c, d));
            if let Some(id) = daemon.as_ref().filter(|_| opts.wait && opts.daemons) {
                details.push_str(&format!("; then daemon {id}"));
            }
            h.plan
                .record("apply", format!("RayCluster/{}", c.name), details);
            h.plan
                .mark(object_key("RayCluster", &ns, &c.name), "applied");
            Cluster {
                target: t.label(),
                kind: "RayCluster",
                role: Some(*role),
                name: c.name.clone(),
                namespace: ns,
                action: "planned",
                drift: Vec::new(),
                ready: false,
                daemon: daemon.map(|id| daemon_map(&id, Dynamic::FALSE)),
                dns: None,
                planned: true,
                cfg: cfg.clone(),
            }
        }
        Target::Deployment(key) => {
            let name = loaded
                .infra
                .deployments
                .get(key)
                .map(|d| d.name.clone())
                .unwrap_or_else(|| key.clone());
            let details = format!(
                "{} in namespace {ns}; with its Service{}",
                t.label(),
                wait("available")
            );
            h.plan
                .record("apply", format!("Deployment/{name}"), details);
            h.plan.mark(object_key("Deployment", &ns, &name), "applied");
            Cluster {
                target: t.label(),
                kind: "Deployment",
                role: None,
                name,
                namespace: ns,
                action: "planned",
                drift: Vec::new(),
                ready: false,
                daemon: None,
                dns: None,
                planned: true,
                cfg: cfg.clone(),
            }
        }
    };
    Ok(Dynamic::from(handle))
}

/// Record deleting each target (its planned fate is `deleted`); returns their labels.
pub fn plan_down(
    h: &Host,
    cfg: &Config,
    targets: &[Target],
    opts: &DownOptions,
) -> RhaiResult<Array> {
    let loaded = cfg.loaded();
    let ns = &loaded.infra.namespace;
    let wait = if opts.wait {
        format!("; wait until gone ({}s)", opts.timeout.as_secs())
    } else {
        String::new()
    };
    let mut labels = Array::new();
    for t in targets {
        let (kind, name, with) = match t {
            Target::Role(role) => (
                "RayCluster",
                cluster_of(loaded, *role).map_err(fail)?.name.clone(),
                "its DRA objects",
            ),
            Target::Deployment(key) => (
                "Deployment",
                loaded
                    .infra
                    .deployments
                    .get(key)
                    .map(|d| d.name.clone())
                    .unwrap_or_else(|| key.clone()),
                "its Service",
            ),
        };
        let details = format!("{} in namespace {ns}; with {with}{wait}", t.label());
        h.plan.record("delete", format!("{kind}/{name}"), details);
        h.plan.mark(object_key(kind, ns, &name), "deleted");
        labels.push(t.label().into());
    }
    Ok(labels)
}

/// The planned fate of a role's RayCluster in this dry run, if any.
pub fn planned_fate(h: &Host, cfg: &Config, role: Role) -> RhaiResult<Option<String>> {
    if !h.dry_run() {
        return Ok(None);
    }
    let loaded = cfg.loaded();
    let c = cluster_of(loaded, role).map_err(fail)?;
    Ok(h.plan
        .fate(&object_key("RayCluster", &loaded.infra.namespace, &c.name)))
}

/// The row of a role whose RayCluster this dry run brings up (`fate` = `applied`) or
/// deletes (`deleted`): the same keys as a live row, nothing read from the cluster.
pub fn planned_row(cfg: &LoadedConfig, role: Role, cluster: &ClusterSpec, fate: &str) -> Map {
    let applied = fate == "applied";
    let mut pods = Map::new();
    pods.insert("head".into(), Dynamic::UNIT);
    pods.insert("workers".into(), Dynamic::from_array(Array::new()));
    let daemon = match &cluster.daemon {
        Some(d) => {
            let mut m = Map::new();
            m.insert("id".into(), daemon_base_id(cluster, d).into());
            m.insert("status".into(), Dynamic::UNIT);
            m.insert("error".into(), Dynamic::UNIT);
            Dynamic::from_map(m)
        }
        None => Dynamic::UNIT,
    };
    let mut m = Map::new();
    m.insert("role".into(), role.as_str().into());
    m.insert("name".into(), cluster.name.clone().into());
    m.insert("namespace".into(), cfg.infra.namespace.clone().into());
    m.insert("exists".into(), Dynamic::from_bool(applied));
    m.insert(
        "state".into(),
        if applied {
            "planned".into()
        } else {
            Dynamic::UNIT
        },
    );
    m.insert("workers_ready".into(), Dynamic::from_int(0));
    m.insert("workers_desired".into(), Dynamic::from_int(0));
    m.insert("pods".into(), Dynamic::from_map(pods));
    m.insert("daemon".into(), daemon);
    m.insert("planned".into(), Dynamic::TRUE);
    m
}
