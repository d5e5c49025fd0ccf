//! Reference documentation generated from code, so it cannot drift from it:
//!
//! * `nrl script --builtins [MODULE]`: every built-in module (from the engine's function
//!   metadata) and every stdlib module (from its `///` doc comments), each function with
//!   its signature and documentation, as text or JSON ([`catalog`]);
//! * `nrl script doc FILE|MODULE`: one script or module as Markdown ([`module_doc`],
//!   [`markdown`]): the description of its header comment, its public functions.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::builtins::documented;
use super::declared::{ArgDoc, header_comment};
use super::engine::metadata_engine;
use super::resolver::{STDLIB, STDLIB_PREFIX, stdlib_text};
use crate::config::suggest::did_you_mean;
use crate::diag::{Diag, Result};

#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    modules: std::collections::BTreeMap<String, ModuleMeta>,
}

#[derive(Debug, Deserialize)]
struct ModuleMeta {
    #[serde(default)]
    functions: Vec<FnMeta>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FnMeta {
    name: String,
    namespace: String,
    #[serde(default)]
    params: Vec<ParamMeta>,
    #[serde(default)]
    return_type: String,
    #[serde(default)]
    doc_comments: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct ParamMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(rename = "type", default)]
    typ: Option<String>,
}

/// Functions every handle has that need no listing.
const HIDDEN: [&str; 2] = ["to_string", "to_debug"];

/// The metadata of every built-in as JSON (Rhai's `gen_fn_metadata_to_json` shape).
pub fn builtins_json() -> String {
    metadata_engine()
        .gen_fn_metadata_to_json(false)
        .unwrap_or_else(|_| "{}".to_string())
}

/// Where a documented module comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModuleKind {
    /// Registered in Rust (`k8s`, `util`, …).
    Builtin,
    /// Embedded in the binary from `stdlib/` (`import "nrl/sweep"`).
    Stdlib,
    /// A script or module file.
    Script,
}

/// One module's reference.
#[derive(Debug, Clone, Serialize)]
pub struct ModuleDoc {
    /// `k8s`, `nrl/sweep`, or the file as given.
    pub name: String,
    pub kind: ModuleKind,
    /// One line.
    pub about: String,
    /// How a script reaches it: `global`, `k8s::name(…)`, `import "nrl/sweep" as sweep`.
    pub usage: String,
    /// The header comment of a script or stdlib module (Markdown); empty for built-ins.
    pub description: String,
    /// A playbook's declared arguments (`let args = cli(#{…})`); empty otherwise.
    pub arguments: Vec<ArgDoc>,
    pub functions: Vec<FnDoc>,
}

/// One function's reference.
#[derive(Debug, Clone, Serialize)]
pub struct FnDoc {
    pub name: String,
    pub signature: String,
    pub doc: String,
}

/// The built-in and stdlib modules, in `--builtins` order; with `only`, just that module
/// (`k8s`, `sweep` or `nrl/sweep`), or an error naming the closest one.
pub fn catalog(only: Option<&str>) -> Result<Vec<ModuleDoc>> {
    let wanted = only.map(|m| m.strip_prefix(STDLIB_PREFIX).unwrap_or(m));
    let known: Vec<&str> = documented()
        .map(|b| b.name)
        .chain(STDLIB.iter().map(|(name, _)| *name))
        .collect();
    if let Some(w) = wanted
        && !known.contains(&w)
    {
        let mut d = Diag::new(
            "nrl::script::unknown_module",
            format!("no built-in or stdlib module `{w}`"),
        );
        let list = format!("modules: {}", known.join(", "));
        d = match did_you_mean(w, known.iter().copied()) {
            Some(best) => d.help(format!("did you mean `{best}`? {list}")),
            None => d.help(list),
        };
        return Err(d);
    }
    let meta: Metadata = serde_json::from_str(&builtins_json()).unwrap_or(Metadata {
        modules: Default::default(),
    });
    let mut out = Vec::new();
    for b in documented().filter(|b| wanted.is_none_or(|w| w == b.name)) {
        let Some(module) = meta.modules.get(b.name) else {
            continue;
        };
        let mut functions: Vec<FnDoc> = module
            .functions
            .iter()
            .filter(|f| !HIDDEN.contains(&f.name.as_str()))
            .map(|f| FnDoc {
                name: f.name.clone(),
                signature: signature(b.name, b.global, f),
                doc: doc(f),
            })
            .collect();
        functions.sort_by_key(|f| f.signature.to_lowercase());
        out.push(ModuleDoc {
            name: b.name.to_string(),
            kind: ModuleKind::Builtin,
            about: b.about.to_string(),
            usage: if b.global {
                "global".to_string()
            } else {
                format!("call as {}::name(…)", b.name)
            },
            description: String::new(),
            arguments: Vec::new(),
            functions,
        });
    }
    for (name, text) in STDLIB
        .iter()
        .filter(|(n, _)| wanted.is_none_or(|w| w == *n))
    {
        out.push(script_module_doc(&format!("{STDLIB_PREFIX}{name}"), ModuleKind::Stdlib, text)?.0);
    }
    Ok(out)
}

/// The reference text of [`catalog`]: per module a heading, then `signature` + indented
/// doc lines.
pub fn reference_text(modules: &[ModuleDoc]) -> String {
    let mut out = String::from(
        "Built-in modules of `nrl script` (functions of global modules are called without a prefix;\n\
         methods and properties are called on a value: `cfg.get(\"a.b\")`, `m.kind`), then the\n\
         stdlib modules (`import \"nrl/<name>\" as <name>`).\n",
    );
    for m in modules {
        out.push_str(&format!("\n## {} — {} ({})\n", m.name, m.about, m.usage));
        for f in &m.functions {
            out.push_str(&format!("\n  {}\n", f.signature));
            for line in f.doc.lines() {
                out.push_str(&format!("      {line}\n"));
            }
        }
    }
    out
}

/// The text of `nrl script --builtins` without a filter.
pub fn builtins_reference() -> String {
    catalog(None)
        .map(|m| reference_text(&m))
        .unwrap_or_default()
}

/// The reference of one script or module: `nrl/<name>` is the stdlib module, anything
/// else a file (`.rhai` may be left off), looked up as `import` would from the working
/// directory: as given, then along `base.search_path` (NRL_PATH). A playbook's declared
/// arguments are learnt by running it in plan mode, output discarded, as
/// `nrl script FILE --dry-run -- --help` would: up to its `cli(…)` call.
pub fn module_doc(target: &str, base: &super::HostOptions) -> Result<ModuleDoc> {
    let search_path = &base.search_path;
    if let Some(name) = target.strip_prefix(STDLIB_PREFIX) {
        let name = name.strip_suffix(".rhai").unwrap_or(name);
        let Some(text) = stdlib_text(name) else {
            return Err(catalog(Some(target)).err().unwrap_or_else(|| {
                Diag::new(
                    "nrl::script::unknown_module",
                    format!("no stdlib module `{name}`"),
                )
            }));
        };
        return script_module_doc(&format!("{STDLIB_PREFIX}{name}"), ModuleKind::Stdlib, text)
            .map(|(doc, _)| doc);
    }
    let file = if target.ends_with(".rhai") {
        PathBuf::from(target)
    } else {
        PathBuf::from(format!("{target}.rhai"))
    };
    let mut candidates = vec![file.clone()];
    if file.is_relative() {
        candidates.extend(search_path.iter().map(|dir| dir.join(&file)));
    }
    let Some(found) = candidates.iter().find(|c| c.is_file()) else {
        return Err(Diag::new(
            "nrl::script::not_found",
            format!("no script or module `{target}`"),
        )
        .help(format!(
            "looked for {} (a stdlib module is `nrl/<name>`: {})",
            candidates
                .iter()
                .map(|c| c.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            STDLIB
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let text = std::fs::read_to_string(found)
        .map_err(|e| Diag::new("nrl::io", format!("cannot read {}: {e}", found.display())))?;
    // Named as asked for: `team` found along NRL_PATH is imported as `team`.
    let (mut doc, playbook) = script_module_doc(target, ModuleKind::Script, &text)?;
    if playbook {
        doc.arguments = declared_arguments(target, found, &text, base);
    }
    Ok(doc)
}

/// What the playbook declares with `cli(…)`: run in plan mode with `--help` (no reads,
/// nothing printed) until `cli(…)` stops it. A playbook that declares nothing, or fails
/// before it does, has no arguments to list.
fn declared_arguments(
    name: &str,
    path: &Path,
    text: &str,
    base: &super::HostOptions,
) -> Vec<ArgDoc> {
    let mut opts = base.clone();
    opts.dry_run = true;
    opts.live_reads = false;
    opts.interactive = false;
    opts.output = std::sync::Arc::new(super::CapturedOutput::new());
    let host = super::Host::new(opts);
    let _ = super::run_source(&host, name, Some(path), text, &["--help".to_string()]);
    host.declaration()
        .map(|d| d.documented())
        .unwrap_or_default()
}

/// A script or module's reference from its text: the header comment and every
/// non-private function with its `///` doc comment.
/// Also says whether it is a playbook (statements of its own) rather than a module.
fn script_module_doc(name: &str, kind: ModuleKind, text: &str) -> Result<(ModuleDoc, bool)> {
    // Parsing needs no built-ins (functions are looked up when called); the expression
    // depths are a run's, so whatever runs also documents.
    let mut engine = rhai::Engine::new_raw();
    let limits = super::Limits::default();
    engine.set_max_expr_depths(limits.max_expr_depth, limits.max_fn_expr_depth);
    let ast = engine.compile(text).map_err(|e| {
        let pos = e.position();
        Diag::new(
            "nrl::script::syntax",
            format!(
                "{name}:{}:{}: {}",
                pos.line().unwrap_or(0),
                pos.position().unwrap_or(0),
                e.err_type()
            ),
        )
    })?;
    // A header's first line names the file (`nrl/sweep — what it is`): the title says that.
    let mut description = header_comment(text);
    if let Some(rest) = description
        .strip_prefix(name)
        .and_then(|r| r.trim_start().strip_prefix('—'))
    {
        description = rest.trim_start().to_string();
    }
    let about = first_paragraph(&description);
    let short = Path::new(name)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(name)
        .to_string();
    // A file with statements of its own is a playbook to run; one of only functions,
    // constants and imports is a module to import.
    let playbook = ast.statements().iter().any(|st| {
        !matches!(
            st,
            rhai::Stmt::Import(..) | rhai::Stmt::Var(..) | rhai::Stmt::Noop(..)
        )
    });
    let usage = match kind {
        ModuleKind::Stdlib => format!("import \"{name}\" as {short}"),
        _ if playbook => format!("nrl script {name} -- …"),
        _ => format!("import \"{}\" as {short}", name.trim_end_matches(".rhai")),
    };
    // Closures are functions to Rhai (`anon$…`), not part of a module's interface.
    let mut functions: Vec<FnDoc> = ast
        .iter_functions()
        .filter(|f| f.access != rhai::FnAccess::Private && !f.name.starts_with("anon$"))
        .map(|f| {
            let comments: Vec<String> = f.comments.iter().map(|c| c.to_string()).collect();
            FnDoc {
                name: f.name.to_string(),
                // A playbook's functions are called within it, without a prefix.
                signature: if playbook {
                    format!("{}({})", f.name, f.params.join(", "))
                } else {
                    format!("{short}::{}({})", f.name, f.params.join(", "))
                },
                doc: doc_text(&comments),
            }
        })
        .collect();
    // In the order they are written (Rhai keeps them in a hash map).
    let at = |f: &FnDoc| text.find(&format!("fn {}(", f.name)).unwrap_or(usize::MAX);
    functions.sort_by_key(|f| (at(f), f.signature.clone()));
    let doc = ModuleDoc {
        name: name.to_string(),
        kind,
        about,
        usage,
        description,
        arguments: Vec::new(),
        functions,
    };
    Ok((doc, playbook))
}

/// The first paragraph of `text`, on one line.
fn first_paragraph(text: &str) -> String {
    text.split("\n\n")
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A module's reference as Markdown: a title, the description, how to import it, then a
/// section per function.
pub fn markdown(m: &ModuleDoc) -> String {
    let mut out = format!("# {}\n\n", m.name);
    if m.description.is_empty() {
        if !m.about.is_empty() {
            out.push_str(&format!("{}\n\n", m.about));
        }
    } else {
        out.push_str(&format!("{}\n\n", m.description));
    }
    out.push_str(&format!("Use: `{}`\n", m.usage));
    if !m.arguments.is_empty() {
        out.push_str("\n## Arguments\n\n| Argument | Type | Description |\n|---|---|---|\n");
        for a in &m.arguments {
            out.push_str(&format!(
                "| `{}` | {} | {} |\n",
                a.argument,
                table_cell(&a.attributes),
                table_cell(&a.help)
            ));
        }
    }
    if !m.functions.is_empty() {
        out.push_str("\n## Functions\n");
    }
    for f in &m.functions {
        out.push_str(&format!("\n### `{}`\n", f.signature));
        if !f.doc.is_empty() {
            out.push_str(&format!("\n{}\n", f.doc));
        }
    }
    out
}

/// Text in a Markdown table cell: one line, `|` escaped.
fn table_cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

/// A Rust type as scripts know it: `RhaiResult<ImmutableString>` → `string`.
pub(crate) fn clean_type(t: &str) -> String {
    let t = t.trim();
    for wrapper in ["RhaiResult<", "RhaiResultOf<", "Result<"] {
        if let Some(inner) = t.strip_prefix(wrapper).and_then(|r| r.strip_suffix('>')) {
            let ok = inner.split_once(',').map(|(a, _)| a).unwrap_or(inner);
            return clean_type(ok);
        }
    }
    let t = t.trim_start_matches("&mut ").trim_start_matches('&').trim();
    match t {
        "str" | "ImmutableString" | "String" => "string".to_string(),
        "INT" | "i64" => "int".to_string(),
        "FLOAT" | "f64" => "float".to_string(),
        "Dynamic" => "any".to_string(),
        "Array" => "array".to_string(),
        "Map" => "map".to_string(),
        "FnPtr" => "fn".to_string(),
        "ScriptError" => "Error".to_string(),
        "NativeCallContext" => String::new(),
        other => other.rsplit("::").next().unwrap_or(other).to_string(),
    }
}

fn signature(module: &str, global_module: bool, f: &FnMeta) -> String {
    let params: Vec<(String, String)> = f
        .params
        .iter()
        .map(|p| {
            (
                p.name.clone().unwrap_or_else(|| "_".to_string()),
                clean_type(p.typ.as_deref().unwrap_or("")),
            )
        })
        .filter(|(_, t)| !t.is_empty())
        .collect();
    let ret = clean_type(&f.return_type);
    let arrow = if ret.is_empty() || ret == "()" {
        String::new()
    } else {
        format!(" -> {ret}")
    };
    if let Some(prop) = f.name.strip_prefix("get$") {
        let owner = params.first().map(|p| p.1.as_str()).unwrap_or("?");
        return format!("{owner}.{prop}{arrow}");
    }
    let callable_bare = global_module || f.namespace == "global";
    let is_method = callable_bare && params.first().is_some_and(|(_, t)| is_handle(t));
    let list = |ps: &[(String, String)]| {
        ps.iter()
            .map(|(n, t)| format!("{n}: {t}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if is_method {
        let owner = &params[0].1;
        return format!("{owner}.{}({}){arrow}", f.name, list(&params[1..]));
    }
    let prefix = if callable_bare {
        String::new()
    } else {
        format!("{module}::")
    };
    format!("{prefix}{}({}){arrow}", f.name, list(&params))
}

/// Whether `t` (a cleaned type) is one of the handle types built-ins return.
pub(crate) fn is_handle(t: &str) -> bool {
    matches!(
        t,
        "Config"
            | "Manifest"
            | "Dashboard"
            | "Submission"
            | "RayJob"
            | "Cluster"
            | "Run"
            | "Span"
            | "GymConfig"
            | "GymRun"
            | "PortForward"
            | "Progress"
            | "Error"
    )
}

fn doc(f: &FnMeta) -> String {
    doc_text(&f.doc_comments)
}

/// Doc comments (`/// …` lines, `/** … */` blocks) as plain text.
pub(crate) fn doc_text(comments: &[String]) -> String {
    comments
        .iter()
        .flat_map(|c| c.lines())
        .map(|l| {
            l.trim()
                .trim_start_matches("///")
                .trim_start_matches("/**")
                .trim_end_matches("*/")
                .trim()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}
