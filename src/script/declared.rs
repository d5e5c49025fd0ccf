//! Declared playbook arguments: a script says what it takes,
//!
//! ```rhai
//! let args = cli(#{
//!     recipe: file(#{required: true, help: "the NeMo-RL recipe"}),
//!     ttl: int(#{default_value: 600, metavar: "SECONDS", help: "cluster lifetime after the job"}),
//!     keep_cluster: flag(#{help: "do not delete the cluster"}),
//!     overrides: overrides(#{help: "Hydra overrides"}),
//! });
//! ```
//!
//! and the words after `nrl script FILE --` are checked against that: `-h`/`--help` prints
//! the script's header comment and its arguments, unknown options are refused with a
//! did-you-mean, values are typed, required ones enforced, a [`list`](Arg::into_list)
//! option collects its repeats, `KEY=VALUE` words go to the declared overrides and other
//! words only to a declared positional. Dashes in option names are underscores in the
//! map (`--keep-cluster` → `args.keep_cluster`), as in the free-form [`super::args`].
//! The result has every declared name: the given value, else the default, else `false`
//! (a flag), `[]` (lists, overrides, positional) or `()`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rhai::{Array, Dynamic, FLOAT, INT, Map};

use super::args::is_override;
use crate::config::suggest::did_you_mean;
use crate::diag::{Diag, Exit};

/// A word after `--` names no declared argument.
pub const CODE_UNKNOWN_ARG: &str = "nrl::script::unknown_arg";
/// A value is not of its argument's type (`--ttl abc`, a missing file).
pub const CODE_ARG_TYPE: &str = "nrl::script::arg_type";
/// A required argument, or an option's value, is missing.
pub const CODE_MISSING_ARG: &str = "nrl::script::missing_arg";
/// A single-valued option is given twice.
pub const CODE_REPEATED_ARG: &str = "nrl::script::repeated_arg";
/// The script's declaration itself is wrong (a bug in the script, not in the command line).
pub const CODE_ARG_DECL: &str = "nrl::script::arg_decl";

/// Whether `code` is a mistake on the command line (reported as is, exit 2, without
/// pointing into the script).
pub fn is_command_line_error(code: &str) -> bool {
    [
        CODE_UNKNOWN_ARG,
        CODE_ARG_TYPE,
        CODE_MISSING_ARG,
        CODE_REPEATED_ARG,
    ]
    .contains(&code)
}

/// What an argument holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `--name` alone: `true`; absent: `false`.
    Flag,
    String,
    Int,
    Float,
    /// A path that must name an existing file (relative to the working directory).
    File,
    /// A path, not checked (an output file, a directory).
    Path,
    /// The `KEY=VALUE` Hydra overrides, in order.
    Overrides,
    /// The other words, in order.
    Positional,
}

impl Kind {
    /// The type as help and errors show it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Flag => "flag",
            Kind::String => "string",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::File => "file",
            Kind::Path => "path",
            Kind::Overrides => "overrides",
            Kind::Positional => "positional",
        }
    }

    fn default_metavar(self) -> &'static str {
        match self {
            Kind::Flag => "",
            Kind::String => "VALUE",
            Kind::Int => "N",
            Kind::Float => "X",
            Kind::File => "FILE",
            Kind::Path => "PATH",
            Kind::Overrides => "KEY=VALUE",
            Kind::Positional => "ARG",
        }
    }

    /// Options `--name VALUE` (as opposed to flags and the word collectors).
    fn takes_value(self) -> bool {
        matches!(
            self,
            Kind::String | Kind::Int | Kind::Float | Kind::File | Kind::Path
        )
    }

    fn is_option(self) -> bool {
        self == Kind::Flag || self.takes_value()
    }

    /// The keys of the options map its declarator accepts.
    fn option_keys(self) -> &'static [&'static str] {
        match self {
            Kind::Flag => &["help"],
            Kind::Overrides | Kind::Positional => &["help", "required", "metavar"],
            _ => &["help", "required", "default_value", "metavar"],
        }
    }
}

/// One declared argument (`int(#{default_value: 600})`); scripts see it as `Arg`.
#[derive(Debug, Clone)]
pub struct Arg {
    pub kind: Kind,
    /// Repeatable: the value is an array of every occurrence.
    pub list: bool,
    pub required: bool,
    /// Already of the argument's type (an array for a list).
    pub default: Option<Dynamic>,
    pub help: String,
    metavar: Option<String>,
    /// Creation order: Rhai maps are sorted by key, but help lists the arguments in the
    /// order the script wrote them (a map literal evaluates its values in that order).
    order: u64,
}

static NEXT_ORDER: AtomicU64 = AtomicU64::new(0);

fn decl_error(message: impl Into<String>, help: impl Into<String>) -> Diag {
    Diag::new(CODE_ARG_DECL, message).help(help)
}

impl Arg {
    /// An argument of `kind` with the declarator's `options` (`help`, `required`,
    /// `default_value`, `metavar`; which ones depends on the kind).
    pub fn declare(kind: Kind, options: &Map) -> Result<Arg, Diag> {
        let allowed = kind.option_keys();
        let mut arg = Arg {
            kind,
            list: false,
            required: false,
            default: None,
            help: String::new(),
            metavar: None,
            order: NEXT_ORDER.fetch_add(1, Ordering::Relaxed),
        };
        for (key, value) in options {
            let key = key.as_str();
            if !allowed.contains(&key) {
                let hint = match did_you_mean(key, allowed.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`? "),
                    None => String::new(),
                };
                return Err(decl_error(
                    format!("{}() has no option `{key}`", kind.name()),
                    format!("{hint}{}() takes {}", kind.name(), allowed.join(", ")),
                ));
            }
            match key {
                "help" | "metavar" => {
                    let Some(text) = value.clone().into_string().ok() else {
                        return Err(decl_error(
                            format!("`{key}` of {}() is a {}", kind.name(), value.type_name()),
                            format!("give `{key}` as a string"),
                        ));
                    };
                    if key == "help" {
                        arg.help = text;
                    } else {
                        arg.metavar = Some(text);
                    }
                }
                "required" => {
                    arg.required = value.as_bool().map_err(|_| {
                        decl_error(
                            format!("`required` of {}() is a {}", kind.name(), value.type_name()),
                            "write `required: true`",
                        )
                    })?;
                }
                _ => arg.default = Some(value.clone()),
            }
        }
        if arg.required && arg.default.is_some() {
            return Err(decl_error(
                format!("{}() is both required and has a default_value", kind.name()),
                "a default_value makes the argument optional: drop one of the two",
            ));
        }
        Ok(arg)
    }

    /// The repeatable form (`list(path())`): every `--name v` adds to an array; its
    /// `default_value`, if any, is an array.
    pub fn into_list(mut self) -> Result<Arg, Diag> {
        if !self.kind.takes_value() {
            return Err(decl_error(
                format!("list({}()) makes no sense", self.kind.name()),
                "list() repeats an option with a value: string(), int(), float(), file() or path()",
            ));
        }
        if self.list {
            return Err(decl_error(
                "list(list(…)) is declared",
                "one list() is enough",
            ));
        }
        self.list = true;
        Ok(self)
    }

    /// Check and convert the default to the argument's type, now that `list` is known.
    fn settle_default(&mut self, name: &str) -> Result<(), Diag> {
        let Some(default) = self.default.take() else {
            return Ok(());
        };
        let wrong = |what: String| {
            decl_error(
                format!("the default_value of `{name}` {what}"),
                format!(
                    "give a {} value{}",
                    self.kind.name(),
                    if self.list {
                        "s in an array (`default_value: [...]`)"
                    } else {
                        " (wrap the declaration in list(…) to take the option more than once)"
                    }
                ),
            )
        };
        let converted = if self.list {
            let Ok(items) = default.clone().into_array() else {
                return Err(wrong(format!("is a {}, not an array", default.type_name())));
            };
            let mut out = Array::with_capacity(items.len());
            for item in items {
                out.push(
                    default_item(self.kind, &item)
                        .ok_or_else(|| wrong(format!("holds a {}", item.type_name())))?,
                );
            }
            Dynamic::from_array(out)
        } else {
            default_item(self.kind, &default)
                .ok_or_else(|| wrong(format!("is a {}", default.type_name())))?
        };
        self.default = Some(converted);
        Ok(())
    }

    fn metavar(&self) -> &str {
        self.metavar
            .as_deref()
            .unwrap_or_else(|| self.kind.default_metavar())
    }

    /// One line, for the REPL: `int, default: 600 — how long …`.
    pub fn describe(&self) -> String {
        let attrs = self.attributes();
        if self.help.is_empty() {
            attrs
        } else {
            format!("{attrs} — {}", self.help.replace('\n', " "))
        }
    }

    /// `int, default: 600`, `file, required`, `path, repeatable`.
    fn attributes(&self) -> String {
        let mut parts = vec![self.kind.name().to_string()];
        if self.list {
            parts.push("repeatable".into());
        }
        if self.required {
            parts.push("required".into());
        }
        if let Some(d) = &self.default {
            parts.push(format!("default: {}", show_default(d)));
        }
        parts.join(", ")
    }
}

/// A default as written in a script, strings quoted but not escaped (a regex's `\b`
/// stays readable).
fn show_default(value: &Dynamic) -> String {
    if value.is_string() {
        format!("\"{value}\"")
    } else if let Ok(items) = value.clone().into_array() {
        let shown: Vec<String> = items.iter().map(show_default).collect();
        format!("[{}]", shown.join(", "))
    } else {
        value.to_string()
    }
}

/// A default value as `kind` holds it (ints are accepted for floats).
fn default_item(kind: Kind, value: &Dynamic) -> Option<Dynamic> {
    match kind {
        Kind::Int => value.as_int().ok().map(Dynamic::from_int),
        Kind::Float => value
            .as_float()
            .ok()
            .or_else(|| value.as_int().ok().map(|i| i as FLOAT))
            .map(Dynamic::from_float),
        Kind::String | Kind::File | Kind::Path => value.is_string().then(|| value.clone()),
        Kind::Flag | Kind::Overrides | Kind::Positional => None,
    }
}

/// Names the free-form map fills in, and `help`, which `-h`/`--help` is.
const RESERVED_OPTIONS: [&str; 4] = ["help", "overrides", "positional", "raw"];

/// What a script declared with `cli(#{…})`, in the order it wrote the arguments.
#[derive(Debug, Clone)]
pub struct Declaration {
    args: Vec<(String, Arg)>,
}

/// A declared argument as a reference shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ArgDoc {
    /// The key in the script's `args` map (`keep_cluster`).
    pub name: String,
    /// As typed on the command line: `--ttl SECONDS`, `KEY=VALUE …`.
    pub argument: String,
    /// `int, default: 600`.
    pub attributes: String,
    pub help: String,
}

/// What the words asked for.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// Every declared name with its value.
    Values(Map),
    /// `-h` or `--help`: show [`Declaration::help`] and stop.
    Help,
}

impl Declaration {
    /// Check a `cli(#{name: declarator, …})` map: every value an `Arg`, names usable as
    /// options, at most one overrides and one positional collector.
    pub fn new(spec: &Map) -> Result<Declaration, Diag> {
        let mut args = Vec::with_capacity(spec.len());
        for (name, value) in spec {
            let name = name.as_str();
            let Some(mut arg) = value.clone().try_cast::<Arg>() else {
                return Err(decl_error(
                    format!(
                        "`{name}` is declared as a {} ({value}), not as an argument",
                        value.type_name()
                    ),
                    format!(
                        "declare it with flag(), string(), int(), float(), file(), path(), list(…), overrides() or positional(): `{name}: string(#{{help: \"…\"}})`"
                    ),
                ));
            };
            let valid = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(decl_error(
                    format!("`{name}` cannot be an argument name"),
                    "use letters, digits and `_` (`run_id` is `--run-id` on the command line)",
                ));
            }
            if arg.kind.is_option() && RESERVED_OPTIONS.contains(&name) {
                return Err(decl_error(
                    format!("`--{name}` cannot be declared as an option"),
                    "`--help` shows the arguments, and `--overrides`, `--positional`, `--raw` name the free-form `args` keys; pick another name",
                ));
            }
            for kind in [Kind::Overrides, Kind::Positional] {
                if arg.kind == kind
                    && let Some((other, _)) =
                        args.iter().find(|e: &&(String, Arg)| e.1.kind == kind)
                {
                    return Err(decl_error(
                        format!("both `{other}` and `{name}` are {}()", kind.name()),
                        format!("declare {}() once", kind.name()),
                    ));
                }
            }
            arg.settle_default(name)?;
            args.push((name.to_string(), arg));
        }
        args.sort_by_key(|(_, a)| a.order);
        Ok(Declaration { args })
    }

    fn option(&self, key: &str) -> Option<usize> {
        self.args
            .iter()
            .position(|(n, a)| a.kind.is_option() && n == key)
    }

    fn collector(&self, kind: Kind) -> Option<usize> {
        self.args.iter().position(|(_, a)| a.kind == kind)
    }

    /// The closest option to a mistyped `name` (dashes or underscores), as typed on the
    /// command line: `--keep-cluster`. Compared without the leading `--`, which every
    /// option shares and would make unrelated short names look alike.
    fn closest_option(&self, name: &str) -> Option<String> {
        let names: Vec<String> = self
            .args
            .iter()
            .filter(|(_, a)| a.kind.is_option())
            .map(|(n, _)| n.replace('_', "-"))
            .collect();
        did_you_mean(&name.replace('_', "-"), names.iter().map(String::as_str))
            .map(|s| format!("--{s}"))
    }

    /// Parse the words after `--`. `script` names the playbook in errors (`None` in the
    /// REPL, which passes no words); `file` arguments are looked up under `workdir`.
    pub fn parse(
        &self,
        words: &[String],
        workdir: &Path,
        script: Option<&str>,
    ) -> Result<Parsed, Diag> {
        if words
            .iter()
            .take_while(|w| w.as_str() != "--")
            .any(|w| w == "-h" || w == "--help")
        {
            return Ok(Parsed::Help);
        }
        let errors = Errors { decl: self, script };
        let mut given: Vec<Vec<Dynamic>> = vec![Vec::new(); self.args.len()];
        let mut only_positional = false;
        let mut i = 0;
        while i < words.len() {
            let word = &words[i];
            i += 1;
            if !only_positional && word == "--" {
                only_positional = true;
                continue;
            }
            if !only_positional && let Some(opt) = word.strip_prefix("--") {
                let (name, inline) = match opt.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (opt, None),
                };
                let Some(at) = self.option(&name.replace('-', "_")) else {
                    return Err(errors.unknown_option(word, name));
                };
                let (key, arg) = &self.args[at];
                let value = if arg.kind == Kind::Flag {
                    match inline {
                        None => Dynamic::TRUE,
                        Some(v) if v.eq_ignore_ascii_case("true") => Dynamic::TRUE,
                        Some(v) if v.eq_ignore_ascii_case("false") => Dynamic::FALSE,
                        Some(v) => {
                            return Err(errors.wrong_type(key, arg, v, "true or false"));
                        }
                    }
                } else {
                    let text = match inline {
                        Some(v) => v,
                        None => match words.get(i) {
                            Some(next) if !next.starts_with("--") => {
                                i += 1;
                                next.as_str()
                            }
                            _ => return Err(errors.missing_value(key, arg)),
                        },
                    };
                    typed(arg.kind, text, workdir)
                        .map_err(|expected| errors.wrong_type(key, arg, text, expected))?
                };
                if !arg.list && !given[at].is_empty() {
                    return Err(errors.repeated(key, arg));
                }
                given[at].push(value);
                continue;
            }
            if !only_positional
                && word.len() > 1
                && word.starts_with('-')
                && word.parse::<f64>().is_err()
            {
                return Err(errors.unknown_option(word, word.trim_start_matches('-')));
            }
            let overrides = self.collector(Kind::Overrides);
            let positional = self.collector(Kind::Positional);
            let target = match (is_override(word) && !only_positional, overrides) {
                (true, Some(at)) => at,
                _ => match positional {
                    Some(at) => at,
                    None => return Err(errors.unexpected(word, overrides.is_some())),
                },
            };
            given[target].push(word.clone().into());
        }
        let mut values = Map::new();
        for ((name, arg), got) in self.args.iter().zip(given) {
            let value = if arg.list || matches!(arg.kind, Kind::Overrides | Kind::Positional) {
                if got.is_empty() {
                    match &arg.default {
                        Some(d) => d.clone(),
                        None if arg.required => return Err(errors.missing(name, arg)),
                        None => Dynamic::from_array(Array::new()),
                    }
                } else {
                    Dynamic::from_array(got)
                }
            } else {
                match got.into_iter().next() {
                    Some(v) => v,
                    None => match &arg.default {
                        Some(d) => d.clone(),
                        None if arg.required => return Err(errors.missing(name, arg)),
                        None if arg.kind == Kind::Flag => Dynamic::FALSE,
                        None => Dynamic::UNIT,
                    },
                }
            };
            values.insert(name.as_str().into(), value);
        }
        Ok(Parsed::Values(values))
    }

    /// `nrl script FILE -- --help`: the script's header comment, a usage line and one
    /// line per argument (its type, default and help).
    pub fn help(&self, script: &str, header: &str) -> String {
        let mut out = String::new();
        if !header.is_empty() {
            out.push_str(header);
            out.push_str("\n\n");
        }
        out.push_str(&format!("Usage: nrl script {script} -- {}\n", self.usage()));
        out.push_str("\nArguments:\n");
        let mut rows: Vec<(String, String)> = self
            .args
            .iter()
            .map(|(name, arg)| (left_column(name, arg), right_column(arg)))
            .collect();
        rows.push(("-h, --help".into(), "show this help and stop".into()));
        let width = rows
            .iter()
            .map(|(l, _)| l.chars().count())
            .filter(|w| *w <= MAX_LEFT)
            .max()
            .unwrap_or(0);
        for (left, right) in rows {
            let pad = width + 4;
            let mut lines = right.lines();
            let first = lines.next().unwrap_or("");
            if left.chars().count() > width {
                out.push_str(&format!("  {left}\n{:pad$}{first}\n", ""));
            } else {
                out.push_str(&format!("  {left:width$}  {first}\n"));
            }
            for more in lines {
                out.push_str(&format!("{:pad$}{more}\n", ""));
            }
        }
        out
    }

    /// One entry per argument, in declaration order, for a reference (`nrl script doc`).
    pub fn documented(&self) -> Vec<ArgDoc> {
        self.args
            .iter()
            .map(|(name, arg)| ArgDoc {
                name: name.clone(),
                argument: left_column(name, arg),
                attributes: arg.attributes(),
                help: arg.help.clone(),
            })
            .collect()
    }

    /// `--recipe FILE [OPTIONS] [KEY=VALUE …]`.
    fn usage(&self) -> String {
        let mut parts = Vec::new();
        for (name, arg) in &self.args {
            if arg.kind.is_option() && arg.required {
                parts.push(left_column(name, arg));
            }
        }
        if self
            .args
            .iter()
            .any(|(_, a)| a.kind.is_option() && !a.required)
        {
            parts.push("[OPTIONS]".into());
        }
        for kind in [Kind::Overrides, Kind::Positional] {
            if let Some(at) = self.collector(kind) {
                let arg = &self.args[at].1;
                let words = format!("{} …", arg.metavar());
                parts.push(if arg.required {
                    words
                } else {
                    format!("[{words}]")
                });
            }
        }
        parts.join(" ")
    }
}

/// Option columns wider than this put their help on the next line.
const MAX_LEFT: usize = 28;

fn flag_of(name: &str) -> String {
    format!("--{}", name.replace('_', "-"))
}

fn left_column(name: &str, arg: &Arg) -> String {
    match arg.kind {
        Kind::Flag => flag_of(name),
        Kind::Overrides | Kind::Positional => format!("{} …", arg.metavar()),
        _ if arg.list => format!("{} {} …", flag_of(name), arg.metavar()),
        _ => format!("{} {}", flag_of(name), arg.metavar()),
    }
}

fn right_column(arg: &Arg) -> String {
    let attrs = format!("[{}]", arg.attributes());
    if arg.help.is_empty() {
        attrs
    } else {
        format!("{} {attrs}", arg.help)
    }
}

/// A command-line value as `kind` holds it, or what was expected.
fn typed(kind: Kind, text: &str, workdir: &Path) -> Result<Dynamic, &'static str> {
    match kind {
        Kind::Int => text
            .parse::<INT>()
            .map(Dynamic::from_int)
            .map_err(|_| "an integer"),
        Kind::Float => text
            .parse::<FLOAT>()
            .map(Dynamic::from_float)
            .map_err(|_| "a number"),
        Kind::File => {
            let path = workdir.join(text);
            if path.is_file() {
                Ok(text.to_string().into())
            } else if path.is_dir() {
                Err("a file, not a directory")
            } else {
                Err("the path of an existing file")
            }
        }
        _ => Ok(text.to_string().into()),
    }
}

/// The command-line errors, each with the way to the script's `--help`.
struct Errors<'a> {
    decl: &'a Declaration,
    script: Option<&'a str>,
}

impl Errors<'_> {
    fn diag(&self, code: &'static str, message: String, help: Option<String>) -> Diag {
        let how = match self.script {
            Some(s) => format!("`nrl script {s} -- --help` lists its arguments"),
            None => "the REPL passes no arguments: run the playbook with `nrl script FILE -- …`"
                .to_string(),
        };
        let help = match help {
            // Two sentences: the fix for this mistake, then where the rest is listed.
            Some(h) => format!("{h}\n{how}"),
            None => how,
        };
        Diag::new(code, message).with_exit(Exit::Input).help(help)
    }

    fn unknown_option(&self, word: &str, name: &str) -> Diag {
        let hint = self
            .decl
            .closest_option(name)
            .map(|s| format!("did you mean `{s}`?"));
        self.diag(CODE_UNKNOWN_ARG, format!("unknown option `{word}`"), hint)
    }

    fn unexpected(&self, word: &str, takes_overrides: bool) -> Diag {
        if is_override(word) && !takes_overrides {
            return self.diag(
                CODE_UNKNOWN_ARG,
                format!("`{word}` is a Hydra override, and this playbook takes none"),
                None,
            );
        }
        // A word that is an option name without its dashes (`keep-cluster`).
        let hint = self
            .decl
            .closest_option(word)
            .map(|s| format!("did you mean `{s}`?"));
        self.diag(
            CODE_UNKNOWN_ARG,
            format!("unexpected argument `{word}`: this playbook takes no positional arguments"),
            hint,
        )
    }

    fn wrong_type(&self, name: &str, arg: &Arg, value: &str, expected: &str) -> Diag {
        self.diag(
            CODE_ARG_TYPE,
            format!(
                "`{} {value}`: expected {expected} ({})",
                flag_of(name),
                arg.kind.name()
            ),
            None,
        )
    }

    fn missing_value(&self, name: &str, arg: &Arg) -> Diag {
        self.diag(
            CODE_MISSING_ARG,
            format!("`{}` needs a value ({})", flag_of(name), arg.metavar()),
            Some(format!(
                "write `{0} {1}`, or `{0}=VALUE` for a value that starts with `--`",
                flag_of(name),
                arg.metavar()
            )),
        )
    }

    fn repeated(&self, name: &str, arg: &Arg) -> Diag {
        self.diag(
            CODE_REPEATED_ARG,
            format!("`{}` is given more than once", flag_of(name)),
            Some(format!("`{}` takes one {}", flag_of(name), arg.kind.name())),
        )
    }

    fn missing(&self, name: &str, arg: &Arg) -> Diag {
        let what = match arg.kind {
            Kind::Overrides | Kind::Positional => format!("{} …", arg.metavar()),
            _ => left_column(name, arg),
        };
        let help = (!arg.help.is_empty()).then(|| format!("{what}: {}", arg.help));
        self.diag(
            CODE_MISSING_ARG,
            format!("missing the required argument `{what}`"),
            help,
        )
    }
}

/// The leading `//` comment block of a script (after a `#!` line), without the slashes:
/// the description `--help` shows. A `///` line is a doc comment of what follows, so it
/// ends the block, as does the first line that is not a comment.
pub fn header_comment(text: &str) -> String {
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if n == 0 && line.starts_with("#!") {
            continue;
        }
        let line = line.trim_end();
        let Some(body) = line.strip_prefix("//") else {
            break;
        };
        if body.starts_with('/') || body.starts_with('!') {
            break;
        }
        lines.push(body.strip_prefix(' ').unwrap_or(body));
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, Dynamic)]) -> Map {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), v.clone()))
            .collect()
    }

    fn declare(kind: Kind, pairs: &[(&str, Dynamic)]) -> Dynamic {
        Dynamic::from(Arg::declare(kind, &opts(pairs)).unwrap())
    }

    /// The launch playbook's declaration.
    fn launch() -> Declaration {
        let spec = opts(&[
            (
                "recipe",
                declare(Kind::File, &[("required", Dynamic::TRUE)]),
            ),
            ("infra", declare(Kind::File, &[])),
            ("run_id", declare(Kind::String, &[("metavar", "ID".into())])),
            (
                "ttl",
                declare(
                    Kind::Int,
                    &[
                        ("default_value", Dynamic::from_int(600)),
                        ("help", "lifetime".into()),
                    ],
                ),
            ),
            ("keep_cluster", declare(Kind::Flag, &[])),
            (
                "tag",
                Dynamic::from(
                    Arg::declare(Kind::String, &Map::new())
                        .unwrap()
                        .into_list()
                        .unwrap(),
                ),
            ),
            ("overrides", declare(Kind::Overrides, &[])),
        ]);
        Declaration::new(&spec).unwrap()
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn parse(decl: &Declaration, s: &str) -> Result<Map, Diag> {
        match decl.parse(
            &words(s),
            Path::new(env!("CARGO_MANIFEST_DIR")),
            Some("x.rhai"),
        )? {
            Parsed::Values(m) => Ok(m),
            Parsed::Help => panic!("help"),
        }
    }

    fn strs(d: &Dynamic) -> Vec<String> {
        d.clone()
            .cast::<Array>()
            .iter()
            .map(|x| x.to_string())
            .collect()
    }

    #[test]
    fn values_are_typed_and_absent_ones_defaulted() {
        let m = parse(
            &launch(),
            "--recipe Cargo.toml --keep-cluster a.b=1 --run-id=x7 +c=2 --tag a --tag b",
        )
        .unwrap();
        assert_eq!(m["recipe"].to_string(), "Cargo.toml");
        assert!(m["infra"].is_unit());
        assert_eq!(m["run_id"].to_string(), "x7");
        assert_eq!(m["ttl"].as_int(), Ok(600));
        assert_eq!(m["keep_cluster"].as_bool(), Ok(true));
        assert_eq!(strs(&m["tag"]), ["a", "b"]);
        assert_eq!(strs(&m["overrides"]), ["a.b=1", "+c=2"]);

        let m = parse(
            &launch(),
            "--recipe Cargo.toml --ttl 0 --keep_cluster=false",
        )
        .unwrap();
        assert_eq!(m["ttl"].as_int(), Ok(0));
        assert_eq!(m["keep_cluster"].as_bool(), Ok(false));
        assert!(strs(&m["tag"]).is_empty());
    }

    #[test]
    fn command_line_mistakes_are_refused_with_their_codes() {
        let d = launch();
        let err = |s: &str| parse(&d, s).unwrap_err();
        let e = err("--recipe Cargo.toml --keep-clustr");
        assert_eq!(e.code, CODE_UNKNOWN_ARG);
        assert_eq!(e.exit, Exit::Input);
        assert!(
            e.help
                .as_deref()
                .unwrap()
                .contains("did you mean `--keep-cluster`?")
        );
        let e = err("--recipe Cargo.toml --ttl abc");
        assert_eq!(e.code, CODE_ARG_TYPE);
        assert_eq!(e.message, "`--ttl abc`: expected an integer (int)");
        assert_eq!(err("--ttl 5").code, CODE_MISSING_ARG);
        assert_eq!(err("--recipe no/such.yaml").code, CODE_ARG_TYPE);
        assert_eq!(err("--recipe src").code, CODE_ARG_TYPE);
        assert_eq!(err("--recipe Cargo.toml --ttl").code, CODE_MISSING_ARG);
        assert_eq!(
            err("--recipe Cargo.toml --ttl --keep-cluster").code,
            CODE_MISSING_ARG
        );
        assert_eq!(
            err("--recipe Cargo.toml --ttl 1 --ttl 2").code,
            CODE_REPEATED_ARG
        );
        assert_eq!(err("--recipe Cargo.toml extra").code, CODE_UNKNOWN_ARG);
        assert_eq!(err("--recipe Cargo.toml -x").code, CODE_UNKNOWN_ARG);
        assert_eq!(
            err("--recipe Cargo.toml --keep-cluster=maybe").code,
            CODE_ARG_TYPE
        );
        let e = err("--recipe Cargo.toml keep-cluster");
        assert!(
            e.help.as_deref().unwrap().contains("`--keep-cluster`"),
            "{e:?}"
        );
    }

    #[test]
    fn help_wins_before_a_bare_double_dash_only() {
        let d = launch();
        let at = |s: &str| {
            d.parse(&words(s), Path::new("."), Some("x.rhai"))
                .map(|p| matches!(p, Parsed::Help))
        };
        assert!(at("--nonsense -h").unwrap());
        assert!(at("--help").unwrap());
        assert!(at("--recipe x -- --help").is_err());
    }

    #[test]
    fn words_go_to_the_declared_collectors() {
        let spec = opts(&[
            (
                "files",
                declare(Kind::Positional, &[("required", Dynamic::TRUE)]),
            ),
            ("verbose", declare(Kind::Flag, &[])),
        ]);
        let d = Declaration::new(&spec).unwrap();
        // Without declared overrides, `k=v` is a positional word; after `--` options are too.
        let m = parse(&d, "a k=v -5 -- --verbose").unwrap();
        assert_eq!(strs(&m["files"]), ["a", "k=v", "-5", "--verbose"]);
        assert_eq!(m["verbose"].as_bool(), Ok(false));
        assert_eq!(parse(&d, "--verbose").unwrap_err().code, CODE_MISSING_ARG);
        // Without either collector, an override is refused as such.
        let d = Declaration::new(&opts(&[("verbose", declare(Kind::Flag, &[]))])).unwrap();
        let e = parse(&d, "a=1").unwrap_err();
        assert!(e.message.contains("takes none"), "{}", e.message);
    }

    #[test]
    fn bad_declarations_are_script_errors() {
        let bad = |kind, pairs: &[(&str, Dynamic)]| Arg::declare(kind, &opts(pairs)).unwrap_err();
        let e = bad(Kind::Int, &[("default", Dynamic::from_int(1))]);
        assert_eq!(e.code, CODE_ARG_DECL);
        assert!(
            e.help
                .as_deref()
                .unwrap()
                .contains("did you mean `default_value`?")
        );
        bad(Kind::Flag, &[("required", Dynamic::TRUE)]);
        bad(
            Kind::Int,
            &[
                ("required", Dynamic::TRUE),
                ("default_value", Dynamic::from_int(1)),
            ],
        );
        assert!(
            Arg::declare(Kind::Flag, &Map::new())
                .unwrap()
                .into_list()
                .is_err()
        );
        let spec = |name: &str, arg: Dynamic| Declaration::new(&opts(&[(name, arg)]));
        assert!(spec("help", declare(Kind::Flag, &[])).is_err());
        assert!(spec("ttl", Dynamic::from_int(600)).is_err());
        assert!(spec("ttl", declare(Kind::Int, &[("default_value", "x".into())])).is_err());
        assert!(
            spec(
                "ttl",
                declare(Kind::Int, &[("default_value", Dynamic::from_array(vec![]))])
            )
            .is_err()
        );
        let f = spec(
            "x",
            declare(Kind::Float, &[("default_value", Dynamic::from_int(2))]),
        )
        .unwrap();
        let m = match f.parse(&[], Path::new("."), None).unwrap() {
            Parsed::Values(m) => m,
            Parsed::Help => unreachable!(),
        };
        assert_eq!(m["x"].as_float(), Ok(2.0));
        let two = opts(&[
            ("a", declare(Kind::Overrides, &[])),
            ("b", declare(Kind::Overrides, &[])),
        ]);
        assert!(Declaration::new(&two).is_err());
    }

    #[test]
    fn the_header_is_the_leading_comment_block() {
        let text = "#!/usr/bin/env nrl\n// t.rhai — does things.\n//\n//   nrl script t.rhai\n//\n\nimport \"x\";\n// not this\n";
        assert_eq!(
            header_comment(text),
            "t.rhai — does things.\n\n  nrl script t.rhai"
        );
        assert_eq!(header_comment("/// a doc\nfn f() {}"), "");
    }

    #[test]
    fn help_lists_arguments_in_declaration_order() {
        let text = launch().help("x.rhai", "x.rhai — a test.");
        let names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("  "))
            .map(|l| l.split_whitespace().next().unwrap_or(""))
            .collect();
        assert_eq!(
            names,
            [
                "--recipe",
                "--infra",
                "--run-id",
                "--ttl",
                "--keep-cluster",
                "--tag",
                "KEY=VALUE",
                "-h,"
            ]
        );
        assert!(
            text.contains("Usage: nrl script x.rhai -- --recipe FILE [OPTIONS] [KEY=VALUE …]\n"),
            "{text}"
        );
        assert!(text.contains("lifetime [int, default: 600]"), "{text}");
    }
}
