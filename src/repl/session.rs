//! The engine side of a REPL session: one engine, a scope that persists between inputs,
//! the functions defined so far, and the modules imported so far.
//!
//! Each input is compiled against the scope (so strict variables know earlier `let`s),
//! appended to an AST that keeps only function definitions (as `rhai-repl` does) and
//! evaluated with `eval_ast_with_scope`, which leaves top-level `let`s in the scope.
//! A successful `import "path" as name;` at the top level of an input is also registered
//! on the engine as a static module, so later inputs can call `name::f()` (an import
//! otherwise lasts for one evaluation only). Everything runs on the engine thread.

use std::path::Path;
use std::sync::Arc;

use rhai::{AST, Dynamic, Engine, EvalAltResult, Module, Position, Scope, Shared};

use super::catalog::{Catalog, Entry, EntryKind, Origin};
use super::lexer::{Import, top_level_imports};
use super::pretty::Printer;
use crate::config::source::{SourceKind, add_source};
use crate::diag::{Diag, Exit};
use crate::script::builtins::config::{Config, ConfigKey};
use crate::script::docs::doc_text;
use crate::script::engine::new_engine;
use crate::script::errors::{CODE_INTERRUPTED, ScriptError, eval_error, parse_error};
use crate::script::host::Host;
use crate::script::output::Stream;

/// How one input ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineResult {
    Ok,
    /// It failed; the exit code `nrl script` would use (2 syntax, 1 runtime, 3 API).
    Failed(Exit),
    /// Ctrl-C stopped it.
    Interrupted,
    /// The script called `exit(n)`: the session ends with `n`.
    Exit(i32),
}

/// A variable in the session's scope, for completion and `:vars`.
#[derive(Debug, Clone)]
pub struct Var {
    pub name: String,
    /// `string`, `int`, `map`, `Config`, …
    pub type_name: String,
    /// Top-level keys of a map (for `m.<Tab>`).
    pub keys: Vec<String>,
    /// A `Config`'s keys and values (for `cfg.get("<Tab>`), shared with the handle.
    pub config_keys: Option<Arc<Vec<ConfigKey>>>,
    /// A `Config`'s recipe path as it was given (`recipe("r.yaml", #{overrides: ["…`
    /// completes from a Config of the same recipe).
    pub config_recipe: Option<String>,
    pub constant: bool,
}

/// What the line editor needs to know about the session; sent after every request.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub vars: Vec<Var>,
    /// Functions defined in the session and those of imported modules.
    pub catalog: Catalog,
    pub dry_run: bool,
}

/// The engine, scope and definitions of one session.
pub struct Session {
    host: Arc<Host>,
    engine: Engine,
    scope: Scope<'static>,
    /// Function definitions so far (statements are cleared after each evaluation).
    lib: AST,
    /// Imports kept so far, with the modules they resolved to.
    imports: Vec<(Import, Shared<Module>)>,
    imports_catalog: Catalog,
    inputs: usize,
    printer: Printer,
}

impl Session {
    pub fn new(host: Arc<Host>, printer: Printer) -> Session {
        Session {
            engine: new_engine(&host),
            host,
            scope: Scope::new(),
            lib: AST::empty(),
            imports: Vec::new(),
            imports_catalog: Catalog::default(),
            inputs: 0,
            printer,
        }
    }

    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Evaluate one input and print its result or error.
    pub fn eval(&mut self, text: &str) -> LineResult {
        self.inputs += 1;
        let name = format!("input-{}", self.inputs);
        let id = add_source(name.clone(), None, text.to_string(), SourceKind::Text);
        self.host.add_source(&name, id);
        self.run(&name, text)
    }

    /// Evaluate a script file into the session (`:load`): its functions, top-level
    /// variables and imports stay.
    pub fn load(&mut self, path: &Path) -> LineResult {
        let text = match crate::config::input::read_text(path) {
            Ok(t) => t,
            Err(e) => {
                self.error(
                    &Diag::new(
                        "nrl::repl::load",
                        format!("cannot read {}: {e}", path.display()),
                    )
                    .help("give the path of a .rhai file, relative to the working directory"),
                );
                return LineResult::Failed(Exit::Input);
            }
        };
        let name = path.display().to_string();
        let id = add_source(name.clone(), Some(path), text.clone(), SourceKind::Text);
        self.host.add_source(&name, id);
        self.run(&name, &text)
    }

    /// Compile and evaluate `text` (the caller renews the cancellation token first:
    /// [`super::worker::Worker::run`]).
    fn run(&mut self, name: &str, text: &str) -> LineResult {
        let ast = match self.engine.compile_with_scope(&self.scope, text) {
            Ok(ast) => ast,
            Err(e) => {
                self.error(&parse_error(&self.host, name, &e));
                return LineResult::Failed(Exit::Input);
            }
        };
        self.lib += ast;
        self.lib.set_source(name);
        let result = self
            .engine
            .eval_ast_with_scope::<Dynamic>(&mut self.scope, &self.lib);
        self.lib.clear_statements();
        // `exit(n)` ends the session, from however deep a call (Rhai's `eval` turns the
        // exit into the input's value).
        if let Some(code) = self.host.exit_code() {
            return LineResult::Exit(i32::from(code));
        }
        match result {
            Ok(value) => {
                self.register_imports(name, text);
                if let Some(shown) = self.printer.show(&self.engine, &value) {
                    self.host.print(Stream::Stdout, &shown);
                }
                LineResult::Ok
            }
            Err(e) => {
                let mut d = eval_error(&self.host, name, &e);
                if d.code == CODE_INTERRUPTED {
                    self.host.line(Stream::Stderr, "interrupted");
                    return LineResult::Interrupted;
                }
                // An uncaught built-in failure is a runtime error (1) for a script, but the
                // console's exit code tells a cluster failure (3) apart, as `nrl` commands do.
                if innermost_library_error(&e).is_some_and(|inner| inner.exit == Exit::Api) {
                    d = d.with_exit(Exit::Api);
                }
                self.error(&d);
                LineResult::Failed(d.exit)
            }
        }
    }

    /// Keep the modules a successful input imported at its top level.
    fn register_imports(&mut self, source: &str, text: &str) {
        let found = top_level_imports(text);
        if found.is_empty() {
            return;
        }
        for import in found {
            let resolved = self.engine.module_resolver().resolve(
                &self.engine,
                Some(source),
                &import.path,
                Position::NONE,
            );
            // It resolved a moment ago during evaluation; a failure now changes nothing.
            if let Ok(module) = resolved {
                self.engine
                    .register_static_module(import.alias.as_str(), module.clone());
                self.imports.retain(|(i, _)| i.alias != import.alias);
                self.imports.push((import, module));
            }
        }
        self.imports_catalog = self.catalog_of_imports();
    }

    fn catalog_of_imports(&self) -> Catalog {
        let mut engine = Engine::new_raw();
        for (import, module) in &self.imports {
            engine.register_static_module(import.alias.as_str(), module.clone());
        }
        Catalog::of_modules(&engine)
    }

    /// `:vars`: each variable with its type and a one-line value, the functions defined
    /// in the session (with the first sentence of their doc comment), the imports.
    pub fn vars(&self) -> String {
        if self.scope.is_empty()
            && self.imports.is_empty()
            && self.lib.iter_functions().next().is_none()
        {
            return "no variables or functions yet (`let x = …` defines one, `fn f(x) { … }` another)\n"
                .to_string();
        }
        let mut out = String::new();
        for (name, constant, value) in self.scope.iter_raw() {
            let kw = if constant { "const" } else { "let" };
            out.push_str(&format!(
                "{kw} {name}: {} = {}\n",
                type_name(&self.engine, value),
                self.printer.summary(&self.engine, value)
            ));
        }
        for f in self.session_functions() {
            out.push_str(&format!("fn {}", f.signature()));
            let summary = f.summary();
            if !summary.is_empty() {
                out.push_str(&format!(" — {summary}"));
            }
            out.push('\n');
        }
        for (import, _) in &self.imports {
            out.push_str(&format!("import {:?} as {}\n", import.path, import.alias));
        }
        out
    }

    /// The functions defined so far, as catalog entries.
    fn session_functions(&self) -> Vec<Entry> {
        self.lib
            .iter_functions()
            .map(|f| {
                let comments: Vec<String> = f.comments.iter().map(|c| c.to_string()).collect();
                Entry {
                    kind: EntryKind::Function,
                    origin: Origin::Script,
                    home: "session".to_string(),
                    module: None,
                    name: f.name.to_string(),
                    receiver: None,
                    params: f
                        .params
                        .iter()
                        .map(|p| (p.to_string(), String::new()))
                        .collect(),
                    ret: String::new(),
                    doc: doc_text(&comments),
                }
            })
            .collect()
    }

    /// `:clear`: forget variables, functions, imports and the plan.
    pub fn clear(&mut self) {
        self.engine = new_engine(&self.host);
        self.scope.clear();
        self.lib = AST::empty();
        self.imports.clear();
        self.imports_catalog = Catalog::default();
        self.host.plan.clear();
    }

    /// `:plan [on|off]`: switch plan mode; without an argument (and when switching it
    /// off) show what was recorded.
    pub fn plan(&mut self, on: Option<bool>) -> LineResult {
        let host = &self.host;
        match on {
            Some(true) => {
                host.set_dry_run(true);
                host.line(
                    Stream::Stderr,
                    "plan mode on: cluster changes are recorded, not made (`:plan` shows them); reads of a cluster or dashboard are refused unless allowed (`plan_options(#{live_reads: true})`)",
                );
            }
            Some(false) => {
                host.set_dry_run(false);
                if !host.plan.is_empty() {
                    host.print(Stream::Stdout, &host.plan.render());
                    host.plan.clear();
                }
                host.line(
                    Stream::Stderr,
                    "plan mode off: built-ins act on the cluster again",
                );
            }
            None => {
                let state = if host.dry_run() { "on" } else { "off" };
                host.line(Stream::Stderr, &format!("plan mode {state}"));
                host.print(Stream::Stdout, &host.plan.render());
            }
        }
        LineResult::Ok
    }

    /// `:ctx [context]` / `:ns [namespace]`: switch (when given), connect, and show
    /// where the k8s built-ins act. A context that does not work is not kept.
    pub fn kube(&mut self, context: Option<String>, namespace: Option<String>) -> LineResult {
        let before = self.host.connect_options();
        if context.is_some() || namespace.is_some() {
            self.host.set_connect(|c| {
                if let Some(ctx) = context {
                    c.context = Some(ctx);
                    // A namespace chosen for another context does not carry over.
                    c.namespace = None;
                }
                if let Some(ns) = namespace {
                    c.namespace = Some(ns);
                }
            });
        }
        match self.host.k8s() {
            Ok(k) => {
                self.host.line(Stream::Stdout, &k.banner());
                LineResult::Ok
            }
            Err(e) => {
                self.host.set_connect(|c| *c = before);
                if matches!(*e, EvalAltResult::ErrorTerminated(..)) {
                    self.host.line(Stream::Stderr, "interrupted");
                    return LineResult::Interrupted;
                }
                let d = library_error(&e).unwrap_or_else(|| eval_error(&self.host, "", &e));
                self.error(&d);
                LineResult::Failed(d.exit)
            }
        }
    }

    /// The start-up line: version, where the k8s built-ins act (from the kubeconfig, no
    /// request), how to get help.
    pub fn banner(&self) -> String {
        let target = match self.host.k8s_offline() {
            Ok(k) => k.banner(),
            Err(_) => "no kube context (`:ctx NAME` picks one)".to_string(),
        };
        let plan = if self.host.dry_run() {
            " · plan mode"
        } else {
            ""
        };
        format!(
            "nrl {} · {target}{plan} · :help for help, Ctrl-D to leave",
            env!("CARGO_PKG_VERSION")
        )
    }

    /// What completion needs: variables, session functions, imported modules.
    pub fn snapshot(&self) -> Snapshot {
        let vars = self
            .scope
            .iter_raw()
            .map(|(name, constant, value)| Var {
                name: name.to_string(),
                type_name: type_name(&self.engine, value),
                keys: value
                    .read_lock::<rhai::Map>()
                    .map(|m| m.keys().map(|k| k.to_string()).collect())
                    .unwrap_or_default(),
                config_keys: value.read_lock::<Config>().map(|c| c.keys()),
                config_recipe: value
                    .read_lock::<Config>()
                    .map(|c| c.request().recipe.display().to_string()),
                constant,
            })
            .collect();
        let mut catalog = self.imports_catalog.clone();
        catalog.entries.extend(self.session_functions());
        Snapshot {
            vars,
            catalog,
            dry_run: self.host.dry_run(),
        }
    }

    /// Print a diagnostic to stderr.
    pub fn error(&self, d: &Diag) {
        let color = self.host.opts.output.is_terminal(Stream::Stderr)
            && self.host.opts.env.var("NO_COLOR").is_none();
        let mut text = d.render(color, self.printer.width);
        if !text.ends_with('\n') {
            text.push('\n');
        }
        self.host.print(Stream::Stderr, &text);
    }
}

/// The library diagnostic a built-in failed with.
fn library_error(e: &EvalAltResult) -> Option<Diag> {
    match e {
        EvalAltResult::ErrorRuntime(v, _) => v.read_lock::<ScriptError>().map(|s| s.0.clone()),
        _ => None,
    }
}

/// The library diagnostic at the bottom of a chain of function calls and imports.
fn innermost_library_error(e: &EvalAltResult) -> Option<Diag> {
    match e {
        EvalAltResult::ErrorInFunctionCall(_, _, inner, _)
        | EvalAltResult::ErrorInModule(_, inner, _) => innermost_library_error(inner),
        other => library_error(other),
    }
}

/// A value's type as completion and `:vars` name it (`int`, `map`, `Config`).
pub fn type_name(engine: &Engine, v: &Dynamic) -> String {
    let v = v.flatten_clone();
    let simple = if v.is_string() {
        "string"
    } else if v.is_int() {
        "int"
    } else if v.is_float() {
        "float"
    } else if v.is_bool() {
        "bool"
    } else if v.is_char() {
        "char"
    } else if v.is_array() {
        "array"
    } else if v.is_map() {
        "map"
    } else if v.is_unit() {
        "()"
    } else {
        return engine.map_type_name(v.type_name()).to_string();
    };
    simple.to_string()
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
