//! `config`: the `Config` handle over a loaded recipe + infra pair.
//!
//! The handle keeps the library's ordered, spanned trees; values become Rhai values only
//! when a script reads them (`get`, `resolved`, `infra`). `set` and `override` go through
//! the same Hydra override path as command-line overrides and reload, so struct mode,
//! validation and provenance (`explain`) stay exactly those of `nrl check`.

use std::sync::Arc;

use rhai::plugin::*;
use rhai::{Array, Dynamic, Map};

use crate::config::layers::{LoadRequest, LoadedConfig, load};
use crate::config::node::Node;
use crate::config::overrides::{expand_sweeps as expand, render_value};
use crate::config::suggest::did_you_mean;
use crate::diag::{Diag, Result};
use crate::render::emit;
use crate::render::meta::map_of;
use crate::script::convert::{dynamic_to_node, node_to_dynamic, string_list};
use crate::script::errors::{RhaiResult, fail};
use crate::script::host::host;

/// A loaded recipe + infra pair (`recipe(path, #{infra, overrides})`).
#[derive(Clone)]
pub struct Config {
    state: Arc<ConfigState>,
}

struct ConfigState {
    request: LoadRequest,
    loaded: LoadedConfig,
    /// Built on first use (the console's key completion), once per loaded pair.
    keys: std::sync::OnceLock<Arc<Vec<ConfigKey>>>,
}

/// One key of a loaded pair, for completion: its dotted path (`policy.optimizer.kwargs.lr`,
/// `infra.namespace`) and its current value on one line.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigKey {
    pub path: String,
    /// Resolved where the recipe resolves (else as written): `1e-06`, `"logs/x"`,
    /// `{4 keys}`, `[2 items]`.
    pub value: String,
    /// A mapping or list: completion goes on with `.`.
    pub container: bool,
}

impl Config {
    /// Load (and validate) a pair.
    pub fn load(request: LoadRequest) -> Result<Config> {
        let loaded = load(&request)?;
        Ok(Config {
            state: Arc::new(ConfigState {
                request,
                loaded,
                keys: std::sync::OnceLock::new(),
            }),
        })
    }

    pub fn loaded(&self) -> &LoadedConfig {
        &self.state.loaded
    }

    pub fn request(&self) -> &LoadRequest {
        &self.state.request
    }

    /// This pair with one more override; the handle is unchanged if it fails.
    pub fn with_override(&self, text: String) -> Result<Config> {
        let mut request = self.state.request.clone();
        request.overrides.push(text);
        Config::load(request)
    }

    /// A value by dotted path: `infra.…` reads the resolved infra, anything else the
    /// resolved recipe.
    pub fn value(&self, path: &str) -> Result<Node> {
        let cfg = self.loaded();
        let env = cfg.env.as_ref();
        let (root, rest, prefix, what) = match path.strip_prefix("infra.") {
            Some(rest) => (&cfg.infra.source, rest, "infra.", "the infra settings"),
            None if path == "infra" => return Ok(cfg.infra.source.clone()),
            None => (&cfg.recipe, path, "", "the recipe"),
        };
        if let Some(d) = missing_key(root, rest, prefix, what) {
            return Err(d);
        }
        crate::config::interp::resolve_path(root, rest, env)
    }

    /// `{infra, recipe}`, both resolved, in file order (what `nrl check -o` writes).
    pub fn bundle(&self) -> Result<Node> {
        let cfg = self.loaded();
        Ok(map_of(vec![
            ("infra", cfg.infra.to_node()),
            ("recipe", cfg.resolved_recipe()?),
        ]))
    }

    /// Every key of the recipe, then of the infra settings (`infra.…`), in file order.
    pub fn keys(&self) -> Arc<Vec<ConfigKey>> {
        self.state
            .keys
            .get_or_init(|| {
                let cfg = self.loaded();
                // A recipe with a `???` or a broken interpolation still lists its keys.
                let recipe = cfg.resolved_recipe().unwrap_or_else(|_| cfg.recipe.clone());
                let mut out = Vec::new();
                collect_keys(&recipe, "", &mut out);
                out.push(key_of("infra".to_string(), &cfg.infra.source));
                collect_keys(&cfg.infra.source, "infra.", &mut out);
                Arc::new(out)
            })
            .clone()
    }

    fn describe(&self) -> String {
        let req = self.request();
        let mut s = format!("Config({}", req.recipe.display());
        if let Some(i) = &req.infra {
            s.push_str(&format!(", infra {}", i.display()));
        }
        if !req.overrides.is_empty() {
            s.push_str(&format!(", {} override(s)", req.overrides.len()));
        }
        s.push(')');
        s
    }
}

fn collect_keys(node: &Node, prefix: &str, out: &mut Vec<ConfigKey>) {
    use crate::config::node::Value;
    let children: Vec<(String, &Node)> = match &node.value {
        Value::Map(m) => m.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::List(l) => l
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => return,
    };
    for (key, child) in children {
        let path = format!("{prefix}{key}");
        out.push(key_of(path.clone(), child));
        collect_keys(child, &format!("{path}."), out);
    }
}

fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn key_of(path: String, node: &Node) -> ConfigKey {
    use crate::config::node::Value;
    let (value, container) = match &node.value {
        Value::Map(m) => (format!("{{{}}}", count(m.len(), "key")), true),
        Value::List(l) => (format!("[{}]", count(l.len(), "item")), true),
        _ => (node.to_json().to_string(), false),
    };
    ConfigKey {
        path,
        value,
        container,
    }
}

/// The error for a path whose key is not in the (unresolved) tree, when that can be told
/// without resolving: one message with a did-you-mean, no label (the label of the
/// resolver's own error would underline the whole parent mapping, often the file).
/// `None` when the path exists or runs through a value only resolving can open (an
/// interpolation).
fn missing_key(root: &Node, path: &str, prefix: &str, what: &str) -> Option<Diag> {
    use crate::config::node::Value;
    if path.is_empty() {
        return None;
    }
    let keys: Vec<&str> = path.split('.').collect();
    let mut node = root;
    for (at, key) in keys.iter().enumerate() {
        let siblings: Vec<&str> = match &node.value {
            Value::Map(m) if !m.contains_key(*key) => m.keys().map(String::as_str).collect(),
            Value::List(l) if key.parse::<usize>().map_or(true, |i| i >= l.len()) => Vec::new(),
            Value::Map(_) | Value::List(_) => {
                node = node.child(key)?;
                continue;
            }
            _ => return None,
        };
        let parent = keys[..at].join(".");
        let full = |k: &str| {
            if parent.is_empty() {
                format!("{prefix}{k}")
            } else {
                format!("{prefix}{parent}.{k}")
            }
        };
        let message = format!("no key `{prefix}{path}` in {what}");
        let mut d = Diag::new(crate::config::interp::codes::MISSING_KEY, message);
        let rest: String = keys[at + 1..].iter().map(|k| format!(".{k}")).collect();
        let which = if parent.is_empty() {
            format!("the top-level keys of {what} are")
        } else {
            format!("the keys under `{prefix}{parent}` are")
        };
        d = match did_you_mean(key, siblings.iter().copied()) {
            Some(s) => d.help(format!("did you mean `{}{rest}`?", full(s))),
            None if siblings.is_empty() => d.help(format!(
                "`{prefix}{parent}` has {} items, numbered from 0",
                node.as_list().map_or(0, Vec::len)
            )),
            None => d.help(format!("{which}: {}", key_list(&siblings))),
        };
        return Some(d);
    }
    None
}

/// `a, b, c` — at most ten, then how many more.
fn key_list(keys: &[&str]) -> String {
    const SHOWN: usize = 10;
    let mut text = keys
        .iter()
        .take(SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > SHOWN {
        text.push_str(&format!(" and {} more", keys.len() - SHOWN));
    }
    text
}

const RECIPE_OPTIONS: [&str; 3] = ["infra", "overrides", "context"];

#[export_module]
pub mod config_module {
    use super::*;

    /// Load a NeMo-RL recipe (following its `defaults:` chain) with the infra from the
    /// recipe's own `infra:` block; validated as `nrl check` does.
    #[rhai_fn(return_raw)]
    pub fn recipe(ctx: NativeCallContext, path: &str) -> RhaiResult<Config> {
        load_recipe(&ctx, path, &Map::new())
    }

    /// Load a recipe with options: `infra` (infra YAML path), `overrides` (array of
    /// Hydra overrides: `a.b=v`, `+a=v`, `~a`, `infra.x=v`), `context` (kube context used
    /// when the namespace is inferred).
    #[rhai_fn(name = "recipe", return_raw)]
    pub fn recipe_with(ctx: NativeCallContext, path: &str, options: Map) -> RhaiResult<Config> {
        load_recipe(&ctx, path, &options)
    }

    /// A value by dotted path, resolved: `cfg.get("policy.optimizer.kwargs.lr")`,
    /// `cfg.get("infra.namespace")`. Maps and lists come back as Rhai maps and arrays.
    #[rhai_fn(global, pure, return_raw)]
    pub fn get(cfg: &mut Config, path: &str) -> RhaiResult<Dynamic> {
        Ok(node_to_dynamic(&cfg.value(path).map_err(fail)?))
    }

    /// Set a value as the override `path=value` would (recipe keys must exist — add
    /// new ones with `override("+path=value")`); the pair is reloaded and re-validated.
    #[rhai_fn(global, return_raw)]
    pub fn set(cfg: &mut Config, path: &str, value: Dynamic) -> RhaiResult<()> {
        let node = dynamic_to_node(&value).map_err(fail)?;
        let Some(text) = render_value(&node) else {
            return Err(fail(
                Diag::new(
                    "nrl::script::override",
                    format!("cannot write this value for `{path}` as an override"),
                )
                .help("use `override(\"path=…\")` with the value written in Hydra syntax"),
            ));
        };
        *cfg = cfg.with_override(format!("{path}={text}")).map_err(fail)?;
        Ok(())
    }

    /// Apply one Hydra override (`"+a.b=1"`, `"~a.b"`, `"infra.labels.team=rl"`) and
    /// reload; the handle is unchanged if it fails.
    #[rhai_fn(global, name = "override", return_raw)]
    pub fn apply_override(cfg: &mut Config, text: &str) -> RhaiResult<()> {
        *cfg = cfg.with_override(text.to_string()).map_err(fail)?;
        Ok(())
    }

    /// Which layer, file and line set `key` (what `nrl check --explain KEY` prints).
    #[rhai_fn(global, pure, return_raw)]
    pub fn explain(cfg: &mut Config, key: &str) -> RhaiResult<String> {
        let e = crate::config::provenance::explain(cfg.loaded(), key).map_err(fail)?;
        Ok(e.to_string())
    }

    /// The resolved pair: `#{infra: …, recipe: …}`.
    #[rhai_fn(global, pure, return_raw)]
    pub fn resolved(cfg: &mut Config) -> RhaiResult<Map> {
        let bundle = cfg.bundle().map_err(fail)?;
        match node_to_dynamic(&bundle).try_cast::<Map>() {
            Some(m) => Ok(m),
            None => Ok(Map::new()),
        }
    }

    /// The resolved infra settings as a map.
    #[rhai_fn(global, pure)]
    pub fn infra(cfg: &mut Config) -> Dynamic {
        node_to_dynamic(&cfg.loaded().infra.to_node())
    }

    /// The resolved pair as YAML, keys in file order.
    #[rhai_fn(global, pure, return_raw)]
    pub fn to_yaml(cfg: &mut Config) -> RhaiResult<String> {
        Ok(emit::to_yaml(&cfg.bundle().map_err(fail)?))
    }

    /// The resolved pair as JSON (indented), keys in file order.
    #[rhai_fn(global, pure, return_raw)]
    pub fn to_json(cfg: &mut Config) -> RhaiResult<String> {
        Ok(emit::to_json(&cfg.bundle().map_err(fail)?, false))
    }

    /// The recipe path as given.
    #[rhai_fn(global, get = "recipe_path", pure)]
    pub fn recipe_path(cfg: &mut Config) -> String {
        cfg.request().recipe.display().to_string()
    }

    /// The infra path as given, or `()` when the recipe carries its infra.
    #[rhai_fn(global, get = "infra_path", pure)]
    pub fn infra_path(cfg: &mut Config) -> Dynamic {
        match &cfg.request().infra {
            Some(p) => p.display().to_string().into(),
            None => Dynamic::UNIT,
        }
    }

    /// The overrides applied so far, in order.
    #[rhai_fn(global, get = "overrides", pure)]
    pub fn overrides(cfg: &mut Config) -> Array {
        cfg.request()
            .overrides
            .iter()
            .map(|o| o.clone().into())
            .collect()
    }

    /// The namespace the run goes to.
    #[rhai_fn(global, get = "namespace", pure)]
    pub fn namespace(cfg: &mut Config) -> String {
        cfg.loaded().infra.namespace.clone()
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn to_string(cfg: &mut Config) -> String {
        cfg.describe()
    }

    #[rhai_fn(global, name = "to_debug", pure)]
    pub fn to_debug(cfg: &mut Config) -> String {
        cfg.describe()
    }

    /// Expand Hydra sweeps into runs: `["a=1,2", "b=x,y"]` gives
    /// `[["a=1","b=x"], ["a=1","b=y"], ["a=2","b=x"], ["a=2","b=y"]]` (first varies slowest).
    #[rhai_fn(return_raw)]
    pub fn expand_sweeps(overrides: Array) -> RhaiResult<Array> {
        let args =
            string_list(&Dynamic::from_array(overrides), "the sweep overrides").map_err(fail)?;
        let runs = expand(&args).map_err(fail)?;
        Ok(runs
            .into_iter()
            .map(|run| Dynamic::from_array(run.into_iter().map(Dynamic::from).collect()))
            .collect())
    }
}

fn load_recipe(ctx: &NativeCallContext, path: &str, options: &Map) -> RhaiResult<Config> {
    let h = host(ctx)?;
    for key in options.keys() {
        if !RECIPE_OPTIONS.contains(&key.as_str()) {
            let mut d = Diag::new(
                "nrl::script::option",
                format!("recipe() has no option `{key}`"),
            );
            d = match did_you_mean(key, RECIPE_OPTIONS) {
                Some(s) => d.help(format!(
                    "did you mean `{s}`? (options: infra, overrides, context)"
                )),
                None => d.help("the options are `infra`, `overrides` and `context`"),
            };
            return Err(fail(d));
        }
    }
    let mut req = LoadRequest::new(h.path(path), h.opts.env.clone());
    if let Some(infra) = options.get("infra").filter(|v| !v.is_unit()) {
        req.infra = Some(h.path(&infra.to_string()));
    }
    if let Some(ovs) = options.get("overrides").filter(|v| !v.is_unit()) {
        req.overrides = string_list(ovs, "`overrides`").map_err(fail)?;
    }
    let mut connect = h.connect_options();
    if let Some(c) = options.get("context").filter(|v| !v.is_unit()) {
        connect.context = Some(c.to_string());
    }
    req.namespace_fallback = crate::k8s::context::inferred_namespace(&connect, h.opts.env.as_ref());
    Config::load(req).map_err(fail)
}
