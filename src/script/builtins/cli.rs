//! `cli` (global functions): a playbook declares the arguments it takes, and gets them
//! checked and typed, with `-- --help`. The parsing and the help text are
//! [`crate::script::declared`]'s; these are the script-facing constructors.

use rhai::plugin::*;
use rhai::{Dynamic, EvalAltResult, Map, Position};

use crate::script::declared::{Arg, Declaration, Kind, Parsed};
use crate::script::errors::{RhaiResult, fail};
use crate::script::host::host;
use crate::script::output::Stream;

fn declare(kind: Kind, options: &Map) -> RhaiResult<Arg> {
    Arg::declare(kind, options).map_err(fail)
}

#[export_module]
pub mod cli_module {
    use super::*;

    /// Declare the playbook's arguments and parse the words after `nrl script FILE --`
    /// against them; the result maps every declared name to its value (the given one,
    /// else its `default_value`, else `false` for a flag, `[]` for lists, overrides and
    /// positional, `()` otherwise). Options are the names with `_` as `-`
    /// (`keep_cluster` is `--keep-cluster`). Unknown options (with a did-you-mean),
    /// values of the wrong type, missing required arguments and a repeated single option
    /// stop the script with exit 2 (`nrl::script::unknown_arg`, `arg_type`,
    /// `missing_arg`, `repeated_arg`). `-h`/`--help` prints the script's leading `//`
    /// comment block, a usage line and every argument with its type, default and help,
    /// then stops with exit 0. In the REPL there are no words: defaults only.
    ///
    /// ```rhai
    /// let args = cli(#{
    ///     recipe: file(#{required: true, help: "the NeMo-RL recipe"}),
    ///     ttl: int(#{default_value: 600, metavar: "SECONDS", help: "cluster lifetime"}),
    ///     keep_cluster: flag(#{help: "do not delete the cluster"}),
    ///     tag: list(string(#{help: "a label; repeatable"})),
    ///     overrides: overrides(#{help: "Hydra overrides"}),
    /// });
    /// ```
    #[rhai_fn(return_raw)]
    pub fn cli(ctx: NativeCallContext, spec: Map) -> RhaiResult<Map> {
        let h = host(&ctx)?;
        let declaration = Declaration::new(&spec).map_err(fail)?;
        h.set_declaration(declaration.clone());
        let invocation = h.invocation();
        let (words, script) = match &invocation {
            Some(i) => (i.words.as_slice(), Some(i.script.as_str())),
            None => (&[][..], None),
        };
        match declaration
            .parse(words, &h.opts.workdir, script)
            .map_err(fail)?
        {
            Parsed::Values(values) => Ok(values),
            Parsed::Help => {
                let (script, header) = invocation.map(|i| (i.script, i.header)).unwrap_or_default();
                h.print(Stream::Stdout, &declaration.help(&script, &header));
                h.mark_help_shown();
                h.set_exit_code(0);
                Err(Box::new(EvalAltResult::Exit(
                    Dynamic::from_int(0),
                    Position::NONE,
                )))
            }
        }
    }

    /// A flag: `--name` alone is `true` (also `--name=true|false`); absent, `false`.
    #[rhai_fn(return_raw)]
    pub fn flag() -> RhaiResult<Arg> {
        declare(Kind::Flag, &Map::new())
    }

    /// A flag with `options`: `help` (one line, shown by `--help`).
    #[rhai_fn(name = "flag", return_raw)]
    pub fn flag_with(options: Map) -> RhaiResult<Arg> {
        declare(Kind::Flag, &options)
    }

    /// An option with a text value: `--name VALUE` or `--name=VALUE`.
    #[rhai_fn(return_raw)]
    pub fn string() -> RhaiResult<Arg> {
        declare(Kind::String, &Map::new())
    }

    /// A text option with `options`: `help`, `required: true`, `default_value`, `metavar`
    /// (the value's name in help, `VALUE` by default). Options with values take
    /// the same options.
    #[rhai_fn(name = "string", return_raw)]
    pub fn string_with(options: Map) -> RhaiResult<Arg> {
        declare(Kind::String, &options)
    }

    /// An integer option (`--ttl 600`); `--ttl abc` is refused (`nrl::script::arg_type`).
    #[rhai_fn(return_raw)]
    pub fn int() -> RhaiResult<Arg> {
        declare(Kind::Int, &Map::new())
    }

    /// An integer option with `options` (`help`, `required`, `default_value`, `metavar`).
    #[rhai_fn(name = "int", return_raw)]
    pub fn int_with(options: Map) -> RhaiResult<Arg> {
        declare(Kind::Int, &options)
    }

    /// A number option (`--lr 3e-4`).
    #[rhai_fn(return_raw)]
    pub fn float() -> RhaiResult<Arg> {
        declare(Kind::Float, &Map::new())
    }

    /// A number option with `options` (`help`, `required`, `default_value`, `metavar`).
    #[rhai_fn(name = "float", return_raw)]
    pub fn float_with(options: Map) -> RhaiResult<Arg> {
        declare(Kind::Float, &options)
    }

    /// An input file option: the value must name an existing file (relative to the
    /// working directory); the script gets the path as given.
    #[rhai_fn(return_raw)]
    pub fn file() -> RhaiResult<Arg> {
        declare(Kind::File, &Map::new())
    }

    /// An input file option with `options` (`help`, `required`, `default_value`,
    /// `metavar`).
    #[rhai_fn(name = "file", return_raw)]
    pub fn file_with(options: Map) -> RhaiResult<Arg> {
        declare(Kind::File, &options)
    }

    /// A path option, not checked (an output file, a directory).
    #[rhai_fn(return_raw)]
    pub fn path() -> RhaiResult<Arg> {
        declare(Kind::Path, &Map::new())
    }

    /// A path option with `options` (`help`, `required`, `default_value`, `metavar`).
    #[rhai_fn(name = "path", return_raw)]
    pub fn path_with(options: Map) -> RhaiResult<Arg> {
        declare(Kind::Path, &options)
    }

    /// The repeatable form of an option with a value: `list(path(#{default_value:
    /// ["a", "b"]}))` collects every `--name v` into an array (its `default_value`, if
    /// any, is an array).
    #[rhai_fn(return_raw)]
    pub fn list(item: Arg) -> RhaiResult<Arg> {
        item.into_list().map_err(fail)
    }

    /// The `KEY=VALUE` words (Hydra overrides: `a.b=1`, `+c=2`, `~d`), in order, as an
    /// array; without it such words are refused.
    #[rhai_fn(return_raw)]
    pub fn overrides() -> RhaiResult<Arg> {
        declare(Kind::Overrides, &Map::new())
    }

    /// The overrides with `options`: `help`, `required: true` (at least one), `metavar`.
    #[rhai_fn(name = "overrides", return_raw)]
    pub fn overrides_with(options: Map) -> RhaiResult<Arg> {
        declare(Kind::Overrides, &options)
    }

    /// The other words (and every word after a bare `--`), in order, as an array;
    /// without it such words are refused.
    #[rhai_fn(return_raw)]
    pub fn positional() -> RhaiResult<Arg> {
        declare(Kind::Positional, &Map::new())
    }

    /// The positional words with `options`: `help`, `required: true` (at least one),
    /// `metavar`.
    #[rhai_fn(name = "positional", return_raw)]
    pub fn positional_with(options: Map) -> RhaiResult<Arg> {
        declare(Kind::Positional, &options)
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn arg_to_string(arg: &mut Arg) -> String {
        arg.describe()
    }

    #[rhai_fn(global, name = "to_debug", pure)]
    pub fn arg_to_debug(arg: &mut Arg) -> String {
        arg.describe()
    }
}
