//! Meta-commands: lines starting with `:` are for the REPL, not Rhai.

use std::path::PathBuf;

use super::catalog::{Catalog, Entry};
use super::markdown;
use crate::config::suggest::did_you_mean;
use crate::diag::{Diag, Result};

/// One meta-command, for parsing, `:help` and completion.
pub struct Command {
    pub name: &'static str,
    pub args: &'static str,
    pub about: &'static str,
}

pub const COMMANDS: &[Command] = &[
    Command {
        name: "help",
        args: "[name]",
        about: "this list; with a name: a built-in's signatures and summary",
    },
    Command {
        name: "doc",
        args: "name",
        about: "the documentation of a function (`k8s::list`, `Config.get`) or module (`k8s`)",
    },
    Command {
        name: "load",
        args: "FILE",
        about: "run a script into the session (its variables, functions, imports stay)",
    },
    Command {
        name: "vars",
        args: "",
        about: "the session's variables (type and value), functions and imports",
    },
    Command {
        name: "ctx",
        args: "[context]",
        about: "show the kube context and namespace, or switch context",
    },
    Command {
        name: "ns",
        args: "[namespace]",
        about: "show the namespace, or switch namespace",
    },
    Command {
        name: "plan",
        args: "[on|off]",
        about: "record cluster changes instead of making them; alone: show the plan",
    },
    Command {
        name: "clear",
        args: "",
        about: "forget variables, functions, imports and the plan",
    },
    Command {
        name: "quit",
        args: "",
        about: "leave (also Ctrl-D)",
    },
];

/// A parsed meta-command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meta {
    Help(Option<String>),
    Doc(String),
    Load(PathBuf),
    Vars,
    Ctx(Option<String>),
    Ns(Option<String>),
    Plan(Option<bool>),
    Clear,
    Quit,
}

/// Parse a line starting with `:`.
pub fn parse(line: &str) -> Result<Meta> {
    let body = line.trim().trim_start_matches(':');
    let (name, arg) = match body.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (body, ""),
    };
    let arg_opt = (!arg.is_empty()).then(|| arg.to_string());
    let needs = |what: &str| {
        Diag::new("nrl::repl::usage", format!(":{name} needs {what}"))
            .help(format!("e.g. {}", example(name)))
    };
    let no_arg = |m: Meta| {
        if arg.is_empty() {
            Ok(m)
        } else {
            Err(
                Diag::new("nrl::repl::usage", format!(":{name} takes no argument"))
                    .help(format!("type :{name} alone")),
            )
        }
    };
    match name {
        "help" | "h" | "?" => Ok(Meta::Help(arg_opt)),
        "doc" => arg_opt.map(Meta::Doc).ok_or_else(|| needs("a name")),
        "load" => arg_opt
            .map(|a| Meta::Load(PathBuf::from(a)))
            .ok_or_else(|| needs("a file")),
        "vars" => no_arg(Meta::Vars),
        "ctx" | "context" => Ok(Meta::Ctx(arg_opt)),
        "ns" | "namespace" => Ok(Meta::Ns(arg_opt)),
        "plan" => match arg {
            "" => Ok(Meta::Plan(None)),
            "on" => Ok(Meta::Plan(Some(true))),
            "off" => Ok(Meta::Plan(Some(false))),
            other => Err(Diag::new(
                "nrl::repl::usage",
                format!(":plan takes `on` or `off`, not `{other}`"),
            )
            .help("`:plan on` records cluster changes instead of making them")),
        },
        "clear" => no_arg(Meta::Clear),
        "quit" | "q" | "exit" => no_arg(Meta::Quit),
        other => {
            let mut d = Diag::new(
                "nrl::repl::unknown_command",
                format!("unknown command :{other}"),
            );
            if let Some(s) = did_you_mean(other, COMMANDS.iter().map(|c| c.name)) {
                d = d.help(format!("did you mean :{s}? (:help lists the commands)"));
            } else {
                d = d.help(":help lists the commands");
            }
            Err(d)
        }
    }
}

fn example(name: &str) -> &'static str {
    match name {
        "doc" => ":doc k8s::list",
        "load" => ":load scripts/helpers.rhai",
        _ => ":help",
    }
}

/// `:help` without a name.
pub fn overview() -> String {
    let mut out = String::from(
        "Type Rhai; each input runs in one session (variables, functions and imports stay).\n\
         Tab completes, Enter on unfinished input continues it, Ctrl-C stops a running input\n\
         (or clears the line), Ctrl-D leaves. Built-ins: `nrl script --builtins`.\n\n",
    );
    for c in COMMANDS {
        let head = format!(":{} {}", c.name, c.args);
        out.push_str(&format!("  {:<18} {}\n", head.trim_end(), c.about));
    }
    out.push_str("\nModules: ");
    out.push_str(
        &Catalog::builtins()
            .modules
            .iter()
            .map(|m| m.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.push_str(" (`:doc k8s` lists a module)\n");
    out
}

/// `:help name` (`full == false`: signatures and first doc lines) and `:doc name`; the
/// doc comments' Markdown rendered for a terminal when `color`, else as plain text.
pub fn describe(catalogs: &[&Catalog], name: &str, full: bool, color: bool) -> Result<String> {
    let name = name.trim();
    if let Some(cmd) = COMMANDS
        .iter()
        .find(|c| name.strip_prefix(':') == Some(c.name))
    {
        return Ok(format!(":{} {}\n    {}\n", cmd.name, cmd.args, cmd.about));
    }
    for cat in catalogs {
        if let Some(m) = cat.module(name) {
            let how = if m.global {
                "functions called without a prefix"
            } else {
                "call as `name::function(…)`"
            };
            let mut out = format!("{} — {} ({how})\n", m.name, m.about);
            let members: Vec<&Entry> = cat.entries.iter().filter(|e| e.home == m.name).collect();
            out.push_str(&entries_text(&members, false, color));
            return Ok(out);
        }
    }
    let found: Vec<&Entry> = catalogs.iter().flat_map(|c| c.lookup(name)).collect();
    if found.is_empty() {
        let all: Vec<String> = catalogs
            .iter()
            .flat_map(|c| c.entries.iter().map(Entry::qualified))
            .collect();
        let mut d = Diag::new(
            "nrl::repl::unknown_name",
            format!("no built-in named `{name}`"),
        );
        d = match did_you_mean(name, all.iter().map(String::as_str)) {
            Some(s) => d.help(format!("did you mean `{s}`?")),
            None => d.help("`:help` lists the modules; `:doc k8s` lists a module's functions"),
        };
        return Err(d);
    }
    Ok(entries_text(&found, full, color))
}

fn entries_text(entries: &[&Entry], full: bool, color: bool) -> String {
    let mut out = String::new();
    for e in entries {
        if color {
            out.push_str(&format!("  \x1b[1m{}\x1b[0m\n", e.signature()));
        } else {
            out.push_str(&format!("  {}\n", e.signature()));
        }
        let doc = if full { e.doc.clone() } else { e.summary() };
        for line in markdown::render(&doc, color).lines() {
            if line.is_empty() {
                out.push('\n');
            } else {
                out.push_str(&format!("      {line}\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_mistakes_are_explained() {
        assert_eq!(parse(":quit").unwrap(), Meta::Quit);
        assert_eq!(parse(" :q ").unwrap(), Meta::Quit);
        assert_eq!(parse(":plan on").unwrap(), Meta::Plan(Some(true)));
        assert_eq!(
            parse(":ns team-a").unwrap(),
            Meta::Ns(Some("team-a".into()))
        );
        assert_eq!(parse(":help").unwrap(), Meta::Help(None));
        assert_eq!(
            parse(":load my file.rhai").unwrap(),
            Meta::Load("my file.rhai".into())
        );
        let e = parse(":lod x").unwrap_err();
        assert!(e.help.as_deref().unwrap().contains(":load"));
        assert!(parse(":doc").is_err());
        assert!(parse(":plan maybe").is_err());
        assert!(parse(":vars x").is_err());
    }

    #[test]
    fn help_and_doc_texts() {
        let cats = [Catalog::builtins()];
        let short = describe(&cats, "k8s::list", false, false).unwrap();
        assert!(
            short.contains("k8s::list(kind: string) -> array"),
            "{short}"
        );
        let module = describe(&cats, "k8s", false, false).unwrap();
        assert!(module.starts_with("k8s — the cluster"), "{module}");
        assert!(module.contains("k8s::logs(pod: string"), "{module}");
        assert!(
            describe(&cats, ":load", false, false)
                .unwrap()
                .contains("FILE")
        );
        let e = describe(&cats, "k8s::lst", false, false).unwrap_err();
        assert!(e.help.as_deref().unwrap().contains("k8s::list"), "{e:?}");
        assert!(overview().contains(":plan [on|off]"));
    }

    #[test]
    fn doc_renders_markdown_for_a_terminal() {
        let cats = [Catalog::builtins()];
        // Plain: the fenced example is indented code, without its fences.
        let plain = describe(&cats, "plan_options", true, false).unwrap();
        assert!(
            plain.contains("\n\n        plan_options(#{live_reads: true});\n"),
            "{plain}"
        );
        assert!(!plain.contains("```") && !plain.contains('\x1b'), "{plain}");
        // A terminal: the signature bold, code spans and the example in colour.
        let shown = describe(&cats, "plan_options", true, true).unwrap();
        assert!(shown.starts_with("  \x1b[1mplan_options("), "{shown:?}");
        assert!(
            shown.contains("\x1b[36mlive_reads: true\x1b[0m"),
            "{shown:?}"
        );
        assert!(
            shown.contains("        \x1b[36mplan_options(#{live_reads: true});\x1b[0m\n"),
            "{shown:?}"
        );
        assert!(!shown.contains("```"), "{shown:?}");
    }
}
