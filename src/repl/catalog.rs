//! What the REPL knows about callable things, from the engine's function metadata (the
//! same source as `nrl script --builtins`): functions, methods by receiver type,
//! properties, their signatures and doc comments. Completion, hints, `:help` and `:doc`
//! read it.
//!
//! The built-in part ([`Catalog::builtins`]) is built once per process, on first use
//! (the REPL starts that in the background so the prompt does not wait). Functions the
//! user defines and modules they import are a second, small catalog that the engine
//! thread sends after each line.

use std::sync::OnceLock;

use rhai::Engine;
use rhai::packages::{Package, StandardPackage};
use serde::Deserialize;

use crate::script::builtins::BUILTINS;
use crate::script::docs::{clean_type, doc_text, is_handle};
use crate::script::engine::metadata_engine;

/// How an entry is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// `name(…)` or `module::name(…)`.
    Function,
    /// `value.name(…)`.
    Method,
    /// `value.name`.
    Property,
}

/// Where an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// nrl's built-in modules.
    Nrl,
    /// Rhai's standard library.
    Std,
    /// Defined in the session or in an imported module.
    Script,
}

/// One callable thing.
#[derive(Debug, Clone)]
pub struct Entry {
    pub kind: EntryKind,
    pub origin: Origin,
    /// The module that defines it (`util`, `k8s`, `std`, an import's alias, `session`).
    pub home: String,
    /// `k8s` for `k8s::list`; `None` when called bare or on a value.
    pub module: Option<String>,
    pub name: String,
    /// Type of the value methods and properties are called on (`Config`, `string`).
    pub receiver: Option<String>,
    /// Parameters after the receiver: `(name, type)`; the type is empty when unknown.
    pub params: Vec<(String, String)>,
    /// Return type as scripts know it (`array`, `Config`), empty when unknown.
    pub ret: String,
    pub doc: String,
}

impl Entry {
    /// `k8s::list(kind: string) -> array`, `Config.get(path: string) -> any`,
    /// `Manifest.kind -> string`.
    pub fn signature(&self) -> String {
        let arrow = if self.ret.is_empty() || self.ret == "()" {
            String::new()
        } else {
            format!(" -> {}", self.ret)
        };
        let params = self
            .params
            .iter()
            .map(|(n, t)| {
                if t.is_empty() {
                    n.clone()
                } else {
                    format!("{n}: {t}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        match self.kind {
            EntryKind::Property => format!("{}{arrow}", self.qualified()),
            _ => format!("{}({params}){arrow}", self.qualified()),
        }
    }

    /// `k8s::list`, `Config.get`, `recipe`.
    pub fn qualified(&self) -> String {
        match (&self.module, &self.receiver) {
            (Some(m), _) => format!("{m}::{}", self.name),
            (None, Some(r)) => format!("{r}.{}", self.name),
            (None, None) => self.name.clone(),
        }
    }

    /// The first sentence of the documentation (doc comments wrap mid-sentence, so the
    /// first paragraph is joined first).
    pub fn summary(&self) -> String {
        let paragraph = self
            .doc
            .lines()
            .map(str::trim)
            .take_while(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        // A sentence ends at ". ", but not after an abbreviation (`e.g. x`).
        let end = paragraph.match_indices(". ").map(|(i, _)| i).find(|&i| {
            let word = paragraph[..i].rsplit(' ').next().unwrap_or("");
            !word.ends_with("e.g") && !word.ends_with("i.e")
        });
        match end {
            Some(i) => paragraph[..=i].to_string(),
            None => paragraph,
        }
    }

    /// Whether a call with `n` arguments (after the receiver) can match.
    pub fn accepts(&self, n: usize) -> bool {
        self.params.len() >= n
    }
}

/// A module users can name: `k8s` (namespaced) or `util` (global functions).
#[derive(Debug, Clone)]
pub struct ModuleInfo {
    pub name: String,
    pub about: String,
    /// Functions are called without the `name::` prefix.
    pub global: bool,
}

/// A set of entries and the modules they belong to.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub entries: Vec<Entry>,
    pub modules: Vec<ModuleInfo>,
}

#[derive(Debug, Default, Deserialize)]
struct MetaModule {
    #[serde(default)]
    modules: std::collections::BTreeMap<String, MetaModule>,
    #[serde(default)]
    functions: Vec<MetaFn>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct MetaFn {
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    access: String,
    #[serde(default)]
    params: Vec<MetaParam>,
    #[serde(default)]
    return_type: String,
    #[serde(default)]
    doc_comments: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct MetaParam {
    #[serde(default)]
    name: Option<String>,
    #[serde(rename = "type", default)]
    typ: Option<String>,
}

static BUILTIN_CATALOG: OnceLock<Catalog> = OnceLock::new();

/// Functions every value has that completion need not offer.
const HIDDEN: [&str; 2] = ["to_debug", "to_string"];

impl Catalog {
    /// nrl's built-ins and Rhai's standard library (built once per process).
    pub fn builtins() -> &'static Catalog {
        BUILTIN_CATALOG.get_or_init(build_builtins)
    }

    /// The built-in catalog if it has been built (never waits).
    pub fn ready() -> Option<&'static Catalog> {
        BUILTIN_CATALOG.get()
    }

    /// The functions of modules registered on `engine` under their names (a module a
    /// session imported), attributed to those names.
    pub fn of_modules(engine: &Engine) -> Catalog {
        let meta = parse(&engine.gen_fn_metadata_to_json(false).unwrap_or_default());
        let mut cat = Catalog::default();
        for (name, module) in &meta.modules {
            cat.modules.push(ModuleInfo {
                name: name.clone(),
                about: "imported module".to_string(),
                global: false,
            });
            for f in &module.functions {
                cat.add(f, name, Some(name), Origin::Script);
            }
        }
        cat
    }

    /// Bare functions (what `name(` can call).
    pub fn functions(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(|e| e.kind == EntryKind::Function && e.module.is_none())
    }

    /// The functions of namespaced module `module`.
    pub fn in_module<'a, 'm>(
        &'a self,
        module: &'m str,
    ) -> impl Iterator<Item = &'a Entry> + use<'a, 'm> {
        self.entries
            .iter()
            .filter(move |e| e.module.as_deref() == Some(module))
    }

    /// Methods and properties callable on a `receiver` (every one when unknown).
    pub fn members<'a, 'r>(
        &'a self,
        receiver: Option<&'r str>,
    ) -> impl Iterator<Item = &'a Entry> + use<'a, 'r> {
        self.entries.iter().filter(move |e| {
            e.kind != EntryKind::Function
                && match (receiver, e.receiver.as_deref()) {
                    (None, _) => true,
                    (Some(want), Some(have)) => have == want || have == "any",
                    (Some(_), None) => false,
                }
        })
    }

    /// Entries for `:doc`/`:help`: `k8s::list`, `Config.get`, `recipe`, or a bare name
    /// matching functions, methods and properties of that name anywhere.
    pub fn lookup(&self, query: &str) -> Vec<&Entry> {
        let query = query.trim().trim_end_matches("()");
        self.entries
            .iter()
            .filter(|e| {
                if query.contains("::") || query.contains('.') {
                    e.qualified() == query
                } else {
                    e.name == query
                }
            })
            .collect()
    }

    pub fn module(&self, name: &str) -> Option<&ModuleInfo> {
        self.modules.iter().find(|m| m.name == name)
    }

    /// Add function `f` of module `home`; `module` is its call prefix, if it needs one.
    fn add(&mut self, f: &MetaFn, home: &str, module: Option<&str>, origin: Origin) {
        if f.access == "private" || HIDDEN.contains(&f.name.as_str()) {
            return;
        }
        let (name, property) = match f.name.strip_prefix("get$") {
            Some(p) => (p, true),
            None => (f.name.as_str(), false),
        };
        if !is_identifier(name) {
            return; // operators, setters, indexers
        }
        let params: Vec<(String, String)> = f
            .params
            .iter()
            .map(|p| {
                let name = p.name.clone().unwrap_or_else(|| "_".to_string());
                let typ = p.typ.as_deref().map(clean_type).unwrap_or_default();
                (name, typ)
            })
            // The native call context is not an argument (script functions have no types).
            .filter(|(_, t)| !t.is_empty() || f.params.iter().all(|p| p.typ.as_deref().is_none()))
            .collect();
        let entry = |kind, module: Option<&str>, receiver: Option<String>, params| Entry {
            kind,
            origin,
            home: home.to_string(),
            module: module.map(str::to_string),
            name: name.to_string(),
            receiver,
            params,
            ret: clean_type(&f.return_type),
            doc: doc_text(&f.doc_comments),
        };
        let first_type = params.first().map(|(_, t)| t.clone());
        if property {
            let rest = params.get(1..).unwrap_or_default().to_vec();
            self.entries
                .push(entry(EntryKind::Property, None, first_type, rest));
            return;
        }
        let bare = module.is_none() || f.namespace == "global";
        match origin {
            Origin::Nrl if bare && first_type.as_deref().is_some_and(is_handle) => {
                let rest = params[1..].to_vec();
                self.entries
                    .push(entry(EntryKind::Method, None, first_type, rest));
            }
            Origin::Std => {
                if let Some(receiver) = first_type.filter(|t| !t.is_empty()) {
                    let rest = params[1..].to_vec();
                    self.entries
                        .push(entry(EntryKind::Method, None, Some(receiver), rest));
                }
                self.entries
                    .push(entry(EntryKind::Function, None, None, params));
            }
            _ => {
                let module = if bare { None } else { module };
                self.entries
                    .push(entry(EntryKind::Function, module, None, params));
            }
        }
    }
}

fn parse(json: &str) -> MetaModule {
    serde_json::from_str(json).unwrap_or_default()
}

fn build_builtins() -> Catalog {
    let mut engine = metadata_engine();
    engine.register_global_module(StandardPackage::new().as_shared_module());
    let meta = parse(&engine.gen_fn_metadata_to_json(true).unwrap_or_default());
    let mut cat = Catalog::default();
    for b in BUILTINS {
        cat.modules.push(ModuleInfo {
            name: b.name.to_string(),
            about: b.about.to_string(),
            global: b.global,
        });
        let Some(module) = meta.modules.get(b.name) else {
            continue;
        };
        for f in &module.functions {
            cat.add(f, b.name, (!b.global).then_some(b.name), Origin::Nrl);
        }
    }
    for f in &meta.functions {
        cat.add(f, "std", None, Origin::Std);
    }
    cat
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sigs(entries: &[&Entry]) -> Vec<String> {
        entries.iter().map(|e| e.signature()).collect()
    }

    #[test]
    fn the_summary_is_the_first_sentence() {
        let e = Entry {
            kind: EntryKind::Function,
            origin: Origin::Script,
            home: "session".into(),
            module: None,
            name: "f".into(),
            receiver: None,
            params: vec![("a".into(), String::new())],
            ret: String::new(),
            doc: "Wraps across\nlines, e.g. here. Then more.\n\nNext paragraph.".into(),
        };
        assert_eq!(e.summary(), "Wraps across lines, e.g. here.");
        assert_eq!(e.signature(), "f(a)");
    }

    #[test]
    fn builtins_are_attributed_and_typed() {
        let cat = Catalog::builtins();
        let list = sigs(&cat.lookup("k8s::list"));
        assert!(
            list.contains(&"k8s::list(kind: string) -> array".to_string()),
            "{list:?}"
        );
        let recipe = cat.lookup("recipe");
        assert!(
            recipe
                .iter()
                .any(|e| e.kind == EntryKind::Function && e.ret == "Config"),
            "{:?}",
            sigs(&recipe)
        );
        assert!(recipe[0].summary().ends_with('.'));
        let get = sigs(&cat.lookup("Config.get"));
        assert_eq!(get, ["Config.get(path: string) -> any"]);
        assert_eq!(
            sigs(&cat.lookup("Manifest.kind")),
            ["Manifest.kind -> string"]
        );
        // Methods by receiver type: Config has `manifests`, strings have `to_upper`.
        let names = |r| {
            cat.members(Some(r))
                .map(|e| e.name.clone())
                .collect::<Vec<_>>()
        };
        assert!(names("Config").contains(&"manifests".to_string()));
        assert!(!names("Config").contains(&"to_upper".to_string()));
        assert!(names("string").contains(&"to_upper".to_string()));
        assert!(names("map").contains(&"keys".to_string()));
        assert!(cat.module("k8s").is_some_and(|m| !m.global));
        assert!(cat.in_module("k8s").any(|e| e.name == "logs"));
        assert!(cat.functions().any(|e| e.name == "sleep"));
        // Module functions are not global (`k8s::logs` is not `logs`).
        assert!(!cat.functions().any(|e| e.name == "logs"));
    }
}
