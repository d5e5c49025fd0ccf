//! `import` resolution.
//!
//! * `import "nrl/<name>"` loads the stdlib module embedded in the binary
//!   (`stdlib/<name>.rhai`).
//! * Any other path is looked up relative to the directory of the importing script, then
//!   in each `NRL_PATH` directory; `.rhai` is appended when missing.
//!
//! Each module is compiled and evaluated once per run (cached by resolved path), and its
//! text is registered so errors inside it render with file, line and column.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use rhai::{AST, Engine, EvalAltResult, Module, ModuleResolver, Position, Scope, Shared};

use super::host::Host;
use crate::config::source::{SourceKind, add_source};

/// The stdlib modules: (import name without `nrl/`, text).
pub const STDLIB: &[(&str, &str)] = &[
    ("checklist", include_str!("../../stdlib/checklist.rhai")),
    ("postmortem", include_str!("../../stdlib/postmortem.rhai")),
    ("retry", include_str!("../../stdlib/retry.rhai")),
    ("rules", include_str!("../../stdlib/rules.rhai")),
    ("sweep", include_str!("../../stdlib/sweep.rhai")),
    ("teardown", include_str!("../../stdlib/teardown.rhai")),
];

/// Prefix of stdlib imports.
pub const STDLIB_PREFIX: &str = "nrl/";

/// The text of stdlib module `name` (`"checklist"`).
pub fn stdlib_text(name: &str) -> Option<&'static str> {
    STDLIB.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// A stdlib module compiled once per process (every script engine is configured alike,
/// so an AST compiled by one runs on any).
fn stdlib_ast(engine: &Engine, name: &str, text: &str) -> Result<Arc<AST>, rhai::ParseError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<AST>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(ast) = cache.lock().ok().and_then(|c| c.get(name).cloned()) {
        return Ok(ast);
    }
    let mut ast = engine.compile(text)?;
    ast.set_source(name);
    let ast = Arc::new(ast);
    if let Ok(mut c) = cache.lock() {
        c.insert(name.to_string(), ast.clone());
    }
    Ok(ast)
}

/// The resolver installed on every script engine.
pub struct NrlResolver {
    // Weak: the host's engine owns this resolver; the host must not be kept alive by it.
    host: Weak<Host>,
    search_path: Vec<PathBuf>,
    cache: Mutex<HashMap<String, Shared<Module>>>,
    /// The modules being evaluated, outermost first, each with the importer that asked
    /// for it: an import of one of them is a cycle (Rhai would recurse until the stack
    /// overflows).
    loading: Mutex<Vec<Loading>>,
}

/// One module being evaluated.
struct Loading {
    importer: Option<String>,
    name: String,
    key: PathBuf,
}

/// A name for comparing modules: the canonical file path, else the name itself.
fn module_key(name: &str, file: Option<&Path>) -> PathBuf {
    file.and_then(|f| std::fs::canonicalize(f).ok())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// Pops a module off the loading stack however its evaluation ends.
struct Loaded<'a>(&'a Mutex<Vec<Loading>>);

impl Drop for Loaded<'_> {
    fn drop(&mut self) {
        if let Ok(mut l) = self.0.lock() {
            l.pop();
        }
    }
}

impl NrlResolver {
    pub fn new(host: &Arc<Host>) -> NrlResolver {
        NrlResolver {
            host: Arc::downgrade(host),
            search_path: host.opts.search_path.clone(),
            cache: Mutex::new(HashMap::new()),
            loading: Mutex::new(Vec::new()),
        }
    }

    /// Where `path` (as written in `import`) comes from: `(source name, text, file path)`.
    fn locate(
        &self,
        importer: Option<&str>,
        path: &str,
    ) -> Option<(String, Arc<str>, Option<PathBuf>)> {
        if let Some(name) = path.strip_prefix(STDLIB_PREFIX) {
            let name = name.strip_suffix(".rhai").unwrap_or(name);
            return stdlib_text(name).map(|t| (format!("{STDLIB_PREFIX}{name}"), t.into(), None));
        }
        let file = if path.ends_with(".rhai") {
            PathBuf::from(path)
        } else {
            PathBuf::from(format!("{path}.rhai"))
        };
        let mut candidates = Vec::new();
        if file.is_absolute() {
            candidates.push(file.clone());
        } else {
            // Stdlib modules have no directory; their imports go along NRL_PATH only.
            if let Some(dir) = importer
                .filter(|s| !s.starts_with(STDLIB_PREFIX))
                .map(|s| Path::new(s).parent().unwrap_or(Path::new("")))
            {
                candidates.push(dir.join(&file));
            }
            for dir in &self.search_path {
                candidates.push(dir.join(&file));
            }
        }
        candidates.into_iter().find_map(|p| {
            let text = crate::config::input::read_text(&p).ok()?;
            Some((p.display().to_string(), text.into(), Some(p)))
        })
    }
}

impl NrlResolver {
    /// If importing the module `key` from `importer` closes a cycle, the chain
    /// (`a.rhai → b.rhai → a.rhai`).
    fn cycle(&self, importer: Option<&str>, key: &Path, display: &str) -> Option<String> {
        let loading = self.loading.lock().ok()?;
        // The outermost importer is the script being run; it is part of the chain too.
        let root = loading
            .first()
            .and_then(|l| l.importer.clone())
            .or_else(|| importer.map(str::to_string));
        let mut chain: Vec<(String, PathBuf)> = Vec::new();
        if let Some(r) = root {
            let k = module_key(&r, Some(Path::new(&r)));
            chain.push((r, k));
        }
        chain.extend(loading.iter().map(|l| (l.name.clone(), l.key.clone())));
        let at = chain.iter().position(|(_, k)| k == key)?;
        let mut names: Vec<&str> = chain[at..].iter().map(|(n, _)| n.as_str()).collect();
        names.push(display);
        Some(names.join(" → "))
    }
}

impl ModuleResolver for NrlResolver {
    fn resolve(
        &self,
        engine: &Engine,
        source: Option<&str>,
        path: &str,
        pos: Position,
    ) -> Result<Shared<Module>, Box<EvalAltResult>> {
        let Some((name, text, file)) = self.locate(source, path) else {
            return Err(Box::new(EvalAltResult::ErrorModuleNotFound(
                path.to_string(),
                pos,
            )));
        };
        let host = self.host.upgrade();
        if let Some(h) = &host {
            h.add_import(path, &name);
        }
        if let Some(m) = self.cache.lock().ok().and_then(|c| c.get(&name).cloned()) {
            return Ok(m);
        }
        let display = match &file {
            Some(_) => name.clone(),
            None => format!("{name}.rhai"),
        };
        let key = module_key(&name, file.as_deref());
        if let Some(chain) = self.cycle(source, &key, &display) {
            return Err(Box::new(EvalAltResult::ErrorInModule(
                path.to_string(),
                super::errors::fail(
                    crate::diag::Diag::new(
                        "nrl::script::import_cycle",
                        format!("import cycle: {chain}"),
                    )
                    .help("modules cannot import each other in a circle; move what both need into a third module"),
                ),
                pos,
            )));
        }
        if let Ok(mut l) = self.loading.lock() {
            l.push(Loading {
                importer: source.map(str::to_string),
                name: display.clone(),
                key,
            });
        }
        let _loaded = Loaded(&self.loading);
        let id = add_source(display, file.as_deref(), text.clone(), SourceKind::Text);
        if let Some(h) = &host {
            h.add_source(&name, id);
        }
        let in_module = |e: Box<EvalAltResult>| {
            Box::new(EvalAltResult::ErrorInModule(path.to_string(), e, pos))
        };
        let ast = if file.is_none() {
            stdlib_ast(engine, &name, &text).map_err(|e| in_module(e.into()))?
        } else {
            let mut ast = engine.compile(&*text).map_err(|e| in_module(e.into()))?;
            ast.set_source(name.as_str());
            Arc::new(ast)
        };
        let module = Module::eval_ast_as_new(Scope::new(), &ast, engine).map_err(in_module)?;
        let module: Shared<Module> = module.into();
        if let Ok(mut c) = self.cache.lock() {
            c.insert(name, module.clone());
        }
        Ok(module)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_stdlib_is_every_module_of_stdlib_and_no_test_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("stdlib");
        let mut modules: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                name.strip_suffix(".rhai").map(str::to_string)
            })
            .filter(|stem| !stem.ends_with("_test"))
            .collect();
        modules.sort();
        let embedded: Vec<&str> = STDLIB.iter().map(|(n, _)| *n).collect();
        assert_eq!(embedded, modules);
        assert!(stdlib_text("retry_test").is_none());
    }
}
