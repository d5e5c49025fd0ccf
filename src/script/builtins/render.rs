//! `render`: manifests of a `Config`, offline validation, and the `Manifest` handle.
//!
//! A `Manifest` keeps the rendered object as the library's ordered, spanned tree, so
//! `m.yaml()` prints exactly what `nrl check --manifests-only` prints and validation
//! problems point at the infra line that produced them.

use std::sync::Arc;

use indexmap::IndexMap;
use rhai::plugin::*;
use rhai::{Array, Dynamic, Map};

use super::config::Config;
use crate::config::node::Node;
use crate::diag::{Diag, Result};
use crate::launch::check::validate_manifests;
use crate::render::rayjob::RayJobOptions;
use crate::render::{emit, summary};
use crate::run_id::RunId;
use crate::script::convert::{node_to_dynamic, string_list};
use crate::script::errors::{RhaiResult, fail, usage};

/// A rendered Kubernetes object.
#[derive(Clone)]
pub struct Manifest {
    node: Arc<Node>,
}

impl Manifest {
    pub fn new(node: Node) -> Manifest {
        Manifest {
            node: Arc::new(node),
        }
    }

    pub fn node(&self) -> &Node {
        &self.node
    }

    fn str_at(&self, path: &str) -> String {
        self.node
            .get_path(path)
            .and_then(Node::as_str)
            .unwrap_or("")
            .to_string()
    }

    pub fn kind(&self) -> String {
        self.str_at("kind")
    }

    pub fn name(&self) -> String {
        self.str_at("metadata.name")
    }

    pub fn namespace(&self) -> String {
        self.str_at("metadata.namespace")
    }

    /// `Kind/name`.
    pub fn describe(&self) -> String {
        format!("{}/{}", self.kind(), self.name())
    }
}

/// Diagnostics as script data: `[#{code, message, location, help}, …]`.
pub fn problems_of(diags: Vec<Diag>) -> Array {
    let mut out = Array::new();
    let mut stack: Vec<Diag> = diags.into_iter().rev().collect();
    while let Some(d) = stack.pop() {
        let mut m = Map::new();
        m.insert("code".into(), d.code.to_string().into());
        m.insert("message".into(), d.message.clone().into());
        m.insert(
            "location".into(),
            d.location().map(Dynamic::from).unwrap_or(Dynamic::UNIT),
        );
        m.insert(
            "help".into(),
            d.help.clone().map(Dynamic::from).unwrap_or(Dynamic::UNIT),
        );
        out.push(Dynamic::from_map(m));
        for r in d.related.iter().rev() {
            stack.push(r.clone());
        }
    }
    out
}

/// Options of a RayJob render/launch: `run_id`, `name`, `ttl`, `shutdown`, `labels`.
pub struct RunOptions {
    pub run_id: Option<String>,
    pub rayjob: RayJobOptions,
}

pub const RUN_OPTIONS: [&str; 5] = ["run_id", "name", "ttl", "shutdown", "labels"];

/// Parse the RayJob options map, refusing unknown keys (`extra` lists more allowed keys).
pub fn run_options(options: &Map, extra: &[&str]) -> Result<RunOptions> {
    let mut out = RunOptions {
        run_id: None,
        rayjob: RayJobOptions::default(),
    };
    for (key, value) in options {
        let key = key.as_str();
        let bad = |want: &str| {
            Diag::new(
                "nrl::script::option",
                format!("option `{key}` must be {want} (got {})", value.type_name()),
            )
        };
        match key {
            "run_id" => out.run_id = Some(value.to_string()),
            "name" => out.rayjob.name = Some(value.to_string()),
            "ttl" => {
                out.rayjob.ttl_seconds_after_finished =
                    value.as_int().map_err(|_| bad("a number of seconds"))?
            }
            "shutdown" => {
                out.rayjob.shutdown_after_finishes =
                    value.as_bool().map_err(|_| bad("true or false"))?
            }
            "labels" => {
                let m = value.read_lock::<Map>().ok_or_else(|| bad("a map"))?;
                out.rayjob.extra_labels = m
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<IndexMap<_, _>>();
            }
            _ if extra.contains(&key) => {}
            _ => {
                let all: Vec<&str> = RUN_OPTIONS.iter().chain(extra).copied().collect();
                let mut d = Diag::new("nrl::script::option", format!("unknown option `{key}`"));
                if let Some(s) = crate::config::suggest::did_you_mean(key, all.iter().copied()) {
                    d = d.help(format!("did you mean `{s}`? (options: {})", all.join(", ")));
                } else {
                    d = d.help(format!("the options are: {}", all.join(", ")));
                }
                return Err(d);
            }
        }
    }
    // KubeRay refuses a TTL on a RayJob that keeps its cluster (validation.go,
    // ValidateRayJobSpec): unless given, the TTL follows the choice, for a render and a
    // launch alike.
    if !out.rayjob.shutdown_after_finishes && !options.contains_key("ttl") {
        out.rayjob.ttl_seconds_after_finished = 0;
    }
    Ok(out)
}

/// The RayJob manifest of a run of `cfg` (the path `nrl run --dry-run` takes): the given
/// run id (validated) or a fresh one from the recipe's name.
pub fn rayjob_of(cfg: &Config, opts: &RunOptions) -> Result<(RunId, Manifest)> {
    let run_id = match &opts.run_id {
        Some(id) => RunId::parse(id)?,
        None => RunId::generate(&cfg.request().recipe),
    };
    let node =
        crate::launch::rayjob::manifest::rayjob_manifest(cfg.loaded(), &run_id, &opts.rayjob)?;
    Ok((run_id, Manifest::new(node)))
}

#[export_module]
pub mod render_module {
    use super::*;

    /// Every object `nrl check` renders for the pair (DRA objects, RayClusters,
    /// Deployments, Services), in apply order.
    #[rhai_fn(global, pure, return_raw)]
    pub fn manifests(cfg: &mut Config) -> RhaiResult<Array> {
        let nodes = crate::render::check_manifests(&cfg.loaded().infra).map_err(fail)?;
        Ok(nodes
            .into_iter()
            .map(|n| Dynamic::from(Manifest::new(n)))
            .collect())
    }

    /// Render and validate every object (bundled schemas + name rules); throws one
    /// report of all problems.
    #[rhai_fn(global, pure, return_raw)]
    pub fn validate(cfg: &mut Config) -> RhaiResult<()> {
        let nodes = crate::render::check_manifests(&cfg.loaded().infra).map_err(fail)?;
        validate_manifests(&nodes).map_err(fail)
    }

    /// The validation problems of every rendered object, without throwing:
    /// `[#{code, message, location, help}, …]` (empty when all is well).
    #[rhai_fn(global, pure, return_raw)]
    pub fn problems(cfg: &mut Config) -> RhaiResult<Array> {
        let nodes = crate::render::check_manifests(&cfg.loaded().infra).map_err(fail)?;
        Ok(match validate_manifests(&nodes) {
            Ok(()) => Array::new(),
            Err(d) => problems_of(vec![d]),
        })
    }

    /// The summary `nrl check` prints.
    #[rhai_fn(global, pure, return_raw)]
    pub fn summary(cfg: &mut Config) -> RhaiResult<String> {
        let nodes = crate::render::check_manifests(&cfg.loaded().infra).map_err(fail)?;
        Ok(summary::summary(&cfg.loaded().infra, &nodes))
    }

    /// The RayJob of a run of this pair (training cluster, staged recipe), with a
    /// generated run id.
    #[rhai_fn(global, pure, return_raw)]
    pub fn rayjob(cfg: &mut Config) -> RhaiResult<Manifest> {
        rayjob_with(cfg, Map::new())
    }

    /// The RayJob of a run with options: `run_id`, `name`, `ttl` (seconds the cluster
    /// stays after the job), `shutdown` (delete the cluster when the job ends), `labels`.
    #[rhai_fn(global, name = "rayjob", pure, return_raw)]
    pub fn rayjob_with(cfg: &mut Config, options: Map) -> RhaiResult<Manifest> {
        let opts = run_options(&options, &[]).map_err(fail)?;
        Ok(rayjob_of(cfg, &opts).map_err(fail)?.1)
    }

    /// The object's kind (`RayCluster`).
    #[rhai_fn(global, get = "kind", pure)]
    pub fn kind(m: &mut Manifest) -> String {
        m.kind()
    }

    /// `metadata.name`.
    #[rhai_fn(global, get = "name", pure)]
    pub fn name(m: &mut Manifest) -> String {
        m.name()
    }

    /// `metadata.namespace`.
    #[rhai_fn(global, get = "namespace", pure)]
    pub fn namespace(m: &mut Manifest) -> String {
        m.namespace()
    }

    /// `apiVersion`.
    #[rhai_fn(global, get = "api_version", pure)]
    pub fn api_version(m: &mut Manifest) -> String {
        m.str_at("apiVersion")
    }

    /// `metadata` as a map.
    #[rhai_fn(global, get = "metadata", pure)]
    pub fn metadata(m: &mut Manifest) -> Dynamic {
        m.node
            .get("metadata")
            .map(node_to_dynamic)
            .unwrap_or(Dynamic::UNIT)
    }

    /// `spec` as a map.
    #[rhai_fn(global, get = "spec", pure)]
    pub fn spec(m: &mut Manifest) -> Dynamic {
        m.node
            .get("spec")
            .map(node_to_dynamic)
            .unwrap_or(Dynamic::UNIT)
    }

    /// The value at a dotted path (`"spec.rayClusterSpec.headGroupSpec"`), or `()`.
    #[rhai_fn(global, pure)]
    pub fn get(m: &mut Manifest, path: &str) -> Dynamic {
        m.node
            .get_path(path)
            .map(node_to_dynamic)
            .unwrap_or(Dynamic::UNIT)
    }

    /// The object as YAML (key order as rendered).
    #[rhai_fn(global, pure)]
    pub fn yaml(m: &mut Manifest) -> String {
        emit::to_yaml(&m.node)
    }

    /// The object as indented JSON (key order as rendered).
    #[rhai_fn(global, pure)]
    pub fn json(m: &mut Manifest) -> String {
        emit::to_json(&m.node, false)
    }

    /// The object as a Rhai map.
    #[rhai_fn(global, pure)]
    pub fn to_map(m: &mut Manifest) -> Dynamic {
        node_to_dynamic(&m.node)
    }

    /// Schema and name problems of this object: `[#{code, message, location, help}, …]`.
    #[rhai_fn(global, name = "validate", pure)]
    pub fn validate_manifest(m: &mut Manifest) -> Array {
        // `validate_object` includes the name checks.
        problems_of(crate::render::validate::validate_object(&m.node))
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn to_string(m: &mut Manifest) -> String {
        m.describe()
    }

    #[rhai_fn(global, name = "to_debug", pure)]
    pub fn to_debug(m: &mut Manifest) -> String {
        m.describe()
    }

    /// Several manifests as one YAML stream (`---` between documents).
    #[rhai_fn(return_raw)]
    pub fn yaml_stream(manifests: Array) -> RhaiResult<String> {
        let mut nodes = Vec::with_capacity(manifests.len());
        for m in &manifests {
            match m.read_lock::<Manifest>() {
                Some(m) => nodes.push(m.node().clone()),
                None => {
                    return Err(usage(
                        "nrl::script::type",
                        format!("yaml_stream takes manifests, not a {}", m.type_name()),
                        "pass the array `cfg.manifests()` returns",
                    ));
                }
            }
        }
        Ok(emit::to_yaml_stream(&nodes))
    }

    /// Keep the manifests whose kind is one of `kinds`.
    #[rhai_fn(return_raw)]
    pub fn of_kind(manifests: Array, kinds: Dynamic) -> RhaiResult<Array> {
        let kinds = string_list(&kinds, "kinds").map_err(fail)?;
        Ok(manifests
            .into_iter()
            .filter(|m| {
                m.read_lock::<Manifest>()
                    .is_some_and(|m| kinds.iter().any(|k| *k == m.kind()))
            })
            .collect())
    }
}
