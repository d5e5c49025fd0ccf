//! The built-in reference (`nrl script --builtins`), generated from the engine's
//! function metadata: every module, every function with its signature and doc comment.

use serde::Deserialize;

use super::builtins::BUILTINS;
use super::engine::metadata_engine;

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

/// The reference text: per module a heading, then `signature` + indented doc lines.
pub fn builtins_reference() -> String {
    let meta: Metadata = serde_json::from_str(&builtins_json()).unwrap_or(Metadata {
        modules: Default::default(),
    });
    let mut out = String::from(
        "Built-in modules of `nrl script` (functions of global modules are called without a prefix;\n\
         methods and properties are called on a value: `cfg.get(\"a.b\")`, `m.kind`).\n",
    );
    for b in BUILTINS {
        let Some(module) = meta.modules.get(b.name) else {
            continue;
        };
        let how = if b.global {
            "global".to_string()
        } else {
            format!("call as {}::name(…)", b.name)
        };
        out.push_str(&format!("\n## {} — {} ({how})\n", b.name, b.about));
        let mut entries: Vec<(String, String)> = module
            .functions
            .iter()
            .filter(|f| !HIDDEN.contains(&f.name.as_str()))
            .map(|f| (signature(b.name, b.global, f), doc(f)))
            .collect();
        entries.sort_by_key(|e| e.0.to_lowercase());
        for (sig, doc) in entries {
            out.push_str(&format!("\n  {sig}\n"));
            for line in doc.lines() {
                out.push_str(&format!("      {line}\n"));
            }
        }
    }
    out
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
