//! `nrl completions SHELL` and `nrl man`: shell completion scripts and man pages, both
//! generated from the clap definitions (so they cannot drift from the commands). The
//! scripts call nrl back (`COMPLETE=<shell> nrl -- <words>`, clap's dynamic engine) for
//! the candidates of the line; the candidates themselves are `crate::completion`'s.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{ArgMatches, Args, CommandFactory, ValueEnum};
use clap_complete::engine::ValueCompleter;
use clap_complete::env::{Elvish, EnvCompleter, Fish, Powershell, Shells};
use clap_complete::{ArgValueCompleter, CompleteEnv, CompletionCandidate, PathCompleter, Shell};

use crate::completion::{self, Candidate, KeySpace, Pair, Runs};
use crate::config::env::ProcessEnv;
use crate::diag::{Diag, Exit, Result};
use crate::launch::records::RunStore;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShellArg {
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

impl From<ShellArg> for Shell {
    fn from(s: ShellArg) -> Shell {
        match s {
            ShellArg::Bash => Shell::Bash,
            ShellArg::Zsh => Shell::Zsh,
            ShellArg::Fish => Shell::Fish,
            ShellArg::Powershell => Shell::PowerShell,
            ShellArg::Elvish => Shell::Elvish,
        }
    }
}

impl ShellArg {
    fn completer(self) -> &'static dyn EnvCompleter {
        match self {
            ShellArg::Bash => &Bash,
            ShellArg::Zsh => &Zsh,
            ShellArg::Fish => &Fish,
            ShellArg::Powershell => &Powershell,
            ShellArg::Elvish => &Elvish,
        }
    }
}

/// Print the completion script for SHELL. It completes commands, flags and their values,
/// and asks nrl for what depends on the line: the override keys of the recipe (its
/// `defaults:` chain and the infra schema), `--target` and `--role`, run ids, `--context`.
#[derive(Debug, Args)]
#[command(after_help = "\
Load the script from your shell's startup file. It calls nrl back for each completion
(offline: it reads the recipe, the run records and the kubeconfig, nothing else), so load
it anew rather than keep a copy that an upgrade of nrl may leave behind. --static prints a
script that needs no nrl at completion time: commands, flags and fixed values only.

Examples:
  echo 'source <(nrl completions bash)' >> ~/.bashrc
  echo 'source <(nrl completions zsh)' >> ~/.zshrc   # after compinit
  echo 'nrl completions fish | source' > ~/.config/fish/completions/nrl.fish
  echo 'nrl completions powershell | Out-String | Invoke-Expression' >> $PROFILE
  nrl completions bash --static > ~/.local/share/bash-completion/completions/nrl")]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: ShellArg,
    /// Print a self-contained script instead: commands, flags and fixed values only (no
    /// override keys, run ids or contexts).
    #[arg(long = "static")]
    pub static_script: bool,
}

pub fn completions(args: CompletionsArgs) -> Result<Exit> {
    let mut script = Vec::new();
    if args.static_script {
        let mut cmd = super::Cli::command();
        clap_complete::generate(Shell::from(args.shell), &mut cmd, "nrl", &mut script);
    } else {
        args.shell
            .completer()
            .write_registration(VAR, "nrl", "nrl", &completer_path(), &mut script)
            .map_err(Diag::from)?;
    }
    super::run::write_stdout(&String::from_utf8_lossy(&script))
}

/// The variable the scripts set when they call nrl back (`COMPLETE=bash nrl -- nrl …`).
const VAR: &str = "COMPLETE";

/// The shells of [`complete_if_asked`].
const SHELLS: Shells<'static> = Shells(&[&Bash, &Elvish, &Fish, &Powershell, &Zsh]);

/// The program the script calls back: this one as it was started (`nrl` from PATH stays
/// `nrl`; a relative path with a directory is made absolute), as clap's `CompleteEnv`
/// does.
fn completer_path() -> String {
    let argv0 = std::env::args_os()
        .next()
        .unwrap_or_else(|| OsString::from("nrl"));
    let mut path = PathBuf::from(argv0);
    if path.components().count() > 1
        && let Ok(cwd) = std::env::current_dir()
    {
        path = cwd.join(path);
    }
    path.to_string_lossy().into_owned()
}

/// Answer a completion request (`COMPLETE=<shell> nrl -- <words>`, made by the scripts)
/// and exit; return at once for any other invocation. Errors are never printed: the
/// shell then just offers nothing.
pub fn complete_if_asked() {
    if std::env::var_os(VAR).is_none() {
        return;
    }
    let cwd = std::env::current_dir().ok();
    match CompleteEnv::with_factory(super::Cli::command)
        .var(VAR)
        .shells(SHELLS)
        .try_complete(std::env::args_os(), cwd.as_deref())
    {
        Ok(false) => {}
        Ok(true) => std::process::exit(0),
        Err(_) => std::process::exit(1),
    }
}

/// Bash as clap's script has it, except that a candidate ending in `.` (an override key
/// with keys under it) leaves the word open, as `=` and `/` do: `policy.` then
/// completes `optimizer.` without a space in between.
#[derive(Debug, Clone, Copy)]
struct Bash;

/// The test clap's script makes for "no space after this candidate", and ours.
const BASH_OPEN_ENDINGS: (&str, &str) = ("[=/:]$", "[=/:.]$");

impl EnvCompleter for Bash {
    fn name(&self) -> &'static str {
        clap_complete::env::Bash.name()
    }
    fn is(&self, name: &str) -> bool {
        clap_complete::env::Bash.is(name)
    }
    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let mut script = Vec::new();
        clap_complete::env::Bash.write_registration(var, name, bin, completer, &mut script)?;
        let (theirs, ours) = BASH_OPEN_ENDINGS;
        let script = String::from_utf8_lossy(&script).replace(theirs, ours);
        buf.write_all(script.as_bytes())
    }
    /// As clap's, after [`drop_flag_equals`].
    fn write_complete(
        &self,
        cmd: &mut clap::Command,
        args: Vec<OsString>,
        current_dir: Option<&Path>,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let index: usize = std::env::var("_CLAP_COMPLETE_INDEX")
            .ok()
            .and_then(|i| i.parse().ok())
            .unwrap_or_default();
        let ifs = std::env::var("_CLAP_IFS").unwrap_or_else(|_| "\n".into());
        let (args, index) = drop_flag_equals(args, index);
        let found = clap_complete::engine::complete(cmd, args, index, current_dir)?;
        let values: Vec<String> = found
            .iter()
            .map(|c| c.get_value().to_string_lossy().into_owned())
            .collect();
        buf.write_all(values.join(&ifs).as_bytes())
    }
}

/// Bash splits `--target=kuberay.t` into `--target`, `=`, `kuberay.t` (`=` is one of its
/// `COMP_WORDBREAKS`) and completes the last word alone; without the `=` word clap's
/// engine reads the value as the flag's, and its candidates replace that word as they
/// should. `index` is the word being completed; it moves with the words.
fn drop_flag_equals(args: Vec<OsString>, index: usize) -> (Vec<OsString>, usize) {
    let mut out: Vec<OsString> = Vec::with_capacity(args.len());
    let mut new_index = index;
    for (i, word) in args.into_iter().enumerate() {
        let after_flag = out
            .last()
            .and_then(|w| w.to_str())
            .is_some_and(|w| w.starts_with("--") && w.len() > 2 && !w.contains('='));
        // Only an `=` with the flag's value after it: `--target=` alone is already
        // completed as the value of `--target` (bash passes the empty word after it).
        if word == "=" && after_flag && i < index {
            new_index -= 1;
            continue;
        }
        out.push(word);
    }
    (out, new_index)
}

/// Zsh as clap's script has it, except that candidates ending in `.` or `=` (override
/// keys) get no space after them, as directories get none after their `/`.
#[derive(Debug, Clone, Copy)]
struct Zsh;

/// Edits of clap's zsh script: (its text, ours).
const ZSH_OPEN_ENDINGS: [(&str, &str); 3] = [
    (
        "        local -a other=()\n",
        "        local -a other=()\n        local -a open=()\n",
    ),
    (
        "            else\n                other+=(\"$completion\")\n",
        "            elif [[ \"$value\" == *[.=] ]]; then\n                open+=(\"$completion\")\n            else\n                other+=(\"$completion\")\n",
    ),
    (
        "        [[ -n $other ]] && _describe -V 'values' other\n",
        "        [[ -n $other ]] && _describe -V 'values' other\n        [[ -n $open ]] && _describe -V 'values' open -S ''\n",
    ),
];

impl EnvCompleter for Zsh {
    fn name(&self) -> &'static str {
        clap_complete::env::Zsh.name()
    }
    fn is(&self, name: &str) -> bool {
        clap_complete::env::Zsh.is(name)
    }
    fn write_registration(
        &self,
        var: &str,
        name: &str,
        bin: &str,
        completer: &str,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let mut script = Vec::new();
        clap_complete::env::Zsh.write_registration(var, name, bin, completer, &mut script)?;
        let mut script = String::from_utf8_lossy(&script).into_owned();
        for (theirs, ours) in ZSH_OPEN_ENDINGS {
            script = script.replace(theirs, ours);
        }
        buf.write_all(script.as_bytes())
    }
    fn write_complete(
        &self,
        cmd: &mut clap::Command,
        args: Vec<OsString>,
        current_dir: Option<&Path>,
        buf: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        clap_complete::env::Zsh.write_complete(cmd, args, current_dir, buf)
    }
}

// ---- Completers attached to arguments: `#[arg(add = super::completions::targets())]` ----
//
// clap's engine hands a completer only the word being completed; what else the line says
// (the recipe, --infra, --kubeconfig) is read from the request's own words.

/// The command line being completed, parsed as far as it goes: the subcommand path
/// (`["cluster", "up"]`) and the innermost command's arguments.
struct Line {
    path: Vec<String>,
    args: ArgMatches,
}

impl Line {
    /// The request's words: `COMPLETE=bash nrl -- nrl check …` carries them after `--`.
    fn read() -> Option<Line> {
        let args: Vec<OsString> = std::env::args_os().collect();
        let dash = args.iter().position(|a| a == "--")?;
        Line::parse(args[dash + 1..].to_vec())
    }

    fn parse(words: Vec<OsString>) -> Option<Line> {
        let words = super::hoist_cluster_flags(join_bash_breaks(words));
        let mut args = super::Cli::command()
            .ignore_errors(true)
            .try_get_matches_from(words)
            .ok()?;
        let mut path = Vec::new();
        while let Some((name, sub)) = args.subcommand() {
            path.push(name.to_string());
            let sub = sub.clone();
            args = sub;
        }
        Some(Line { path, args })
    }

    fn is(&self, path: &[&str]) -> bool {
        self.path
            .iter()
            .map(String::as_str)
            .eq(path.iter().copied())
    }

    /// The first value of argument `id` as typed, if the command has it and it is given.
    fn raw(&self, id: &str) -> Option<&OsStr> {
        self.args.try_get_raw(id).ok().flatten()?.next()
    }

    fn has(&self, id: &str) -> bool {
        self.raw(id).is_some()
    }

    /// The recipe + infra pair the line names: the recipe positional (a file), or for
    /// `run --from RUN_ID` what that run was launched with.
    fn pair(&self) -> Option<Pair> {
        if let Some(from) = self.raw("from") {
            let store = RunStore::from_env(&ProcessEnv).ok()?;
            let relaunch =
                crate::launch::records::snapshot::relaunch(&store, &from.to_string_lossy()).ok()?;
            return Some(Pair {
                recipe: relaunch.recipe,
                infra: Some(relaunch.infra),
            });
        }
        // `diff RUN_A B` and `diagnose TARGET` take a recipe or a run id.
        let recipe = ["recipe", "recipe_file", "b", "target"]
            .iter()
            .find_map(|id| self.raw(id))
            .map(PathBuf::from)
            .filter(|p| p.is_file())?;
        Some(Pair {
            recipe,
            infra: self.raw("infra").map(PathBuf::from),
        })
    }
}

/// Bash splits its words at `=` (one of its `COMP_WORDBREAKS`): `--infra=x.yaml`
/// arrives as `--infra`, `=`, `x.yaml`. Join them again.
fn join_bash_breaks(words: Vec<OsString>) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::with_capacity(words.len());
    let mut glue = false;
    for word in words {
        if word == "=" {
            match out.last_mut() {
                Some(last) => last.push("="),
                None => out.push(word),
            }
            glue = true;
        } else if glue {
            glue = false;
            match out.last_mut() {
                Some(last) => last.push(&word),
                None => out.push(word),
            }
        } else {
            out.push(word);
        }
    }
    out
}

fn candidates(found: Vec<Candidate>) -> Vec<CompletionCandidate> {
    found
        .into_iter()
        .map(|c| CompletionCandidate::new(c.value).help(c.help.map(Into::into)))
        .collect()
}

fn env() -> Arc<dyn crate::config::env::Env> {
    Arc::new(ProcessEnv)
}

/// Override arguments: the next key segment of the recipe or the infra
/// (`policy.opt` -> `policy.optimizer.`).
pub fn overrides() -> ArgValueCompleter {
    ArgValueCompleter::new(overrides_for)
}

fn overrides_for(current: &OsStr) -> Vec<CompletionCandidate> {
    override_keys(current, Line::read().as_ref())
}

fn override_keys(current: &OsStr, line: Option<&Line>) -> Vec<CompletionCandidate> {
    let (Some(word), Some(line)) = (current.to_str(), line) else {
        return Vec::new();
    };
    let Some(keys) = line.pair().and_then(|pair| KeySpace::load(&pair, env())) else {
        return Vec::new();
    };
    candidates(keys.complete(word))
}

/// `check --explain KEY`: a key of the recipe or the infra, as for an override.
pub fn explain_keys() -> ArgValueCompleter {
    ArgValueCompleter::new(explain_keys_for)
}

fn explain_keys_for(current: &OsStr) -> Vec<CompletionCandidate> {
    let (Some(key), Some(line)) = (current.to_str(), Line::read()) else {
        return Vec::new();
    };
    match line.pair().and_then(|pair| KeySpace::load(&pair, env())) {
        Some(keys) => candidates(keys.complete_key(key)),
        None => Vec::new(),
    }
}

/// Overrides of a Gym submit config (`nrl gym submit|render CONFIG …`).
pub fn gym_overrides() -> ArgValueCompleter {
    ArgValueCompleter::new(gym_overrides_for)
}

fn gym_overrides_for(current: &OsStr) -> Vec<CompletionCandidate> {
    let (Some(word), Some(line)) = (current.to_str(), Line::read()) else {
        return Vec::new();
    };
    let config = line.raw("config").map(Path::new).filter(|p| p.is_file());
    match config.and_then(KeySpace::gym) {
        Some(keys) => candidates(keys.complete(word)),
        None => Vec::new(),
    }
}

/// A recipe file; for `logs --collect`, also a run id.
pub fn recipe_or_run() -> ArgValueCompleter {
    ArgValueCompleter::new(recipe_or_run_for)
}

fn recipe_or_run_for(current: &OsStr) -> Vec<CompletionCandidate> {
    let line = Line::read();
    let mut out = Vec::new();
    if line
        .as_ref()
        .is_some_and(|l| l.is(&["logs"]) && l.has("collect"))
    {
        out.extend(recorded_runs(Runs::Launches, current));
    }
    out.extend(PathCompleter::file().complete(current));
    out
}

/// `run`'s first positional: the recipe, or with --from already an override.
pub fn run_recipe() -> ArgValueCompleter {
    ArgValueCompleter::new(run_recipe_for)
}

fn run_recipe_for(current: &OsStr) -> Vec<CompletionCandidate> {
    let line = Line::read();
    if line.as_ref().is_some_and(|l| l.has("from")) {
        return override_keys(current, line.as_ref());
    }
    PathCompleter::file().complete(current)
}

/// A run id or a recipe file (`diff`'s B, `diagnose`'s TARGET).
pub fn run_or_recipe() -> ArgValueCompleter {
    ArgValueCompleter::new(run_or_recipe_for)
}

fn run_or_recipe_for(current: &OsStr) -> Vec<CompletionCandidate> {
    let mut out = recorded_runs(Runs::Launches, current);
    out.extend(PathCompleter::file().complete(current));
    out
}

/// A run id of `nrl run`.
pub fn run_ids() -> ArgValueCompleter {
    ArgValueCompleter::new(run_ids_for)
}

fn run_ids_for(current: &OsStr) -> Vec<CompletionCandidate> {
    recorded_runs(Runs::Launches, current)
}

/// A run id of `nrl gym submit`.
pub fn gym_run_ids() -> ArgValueCompleter {
    ArgValueCompleter::new(gym_run_ids_for)
}

fn gym_run_ids_for(current: &OsStr) -> Vec<CompletionCandidate> {
    recorded_runs(Runs::Gym, current)
}

fn recorded_runs(which: Runs, current: &OsStr) -> Vec<CompletionCandidate> {
    let (Some(prefix), Ok(store)) = (current.to_str(), RunStore::from_env(&ProcessEnv)) else {
        return Vec::new();
    };
    candidates(completion::run_ids(&store, which, prefix))
}

/// `--target`: the roles and deployments the line's infra declares.
pub fn targets() -> ArgValueCompleter {
    ArgValueCompleter::new(targets_for)
}

fn targets_for(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    let cfg = Line::read()
        .and_then(|l| l.pair())
        .and_then(|p| p.load(env()));
    match cfg {
        Some(cfg) => candidates(completion::targets(&cfg.infra, prefix)),
        None => Vec::new(),
    }
}

/// `--role`: the roles the line's infra declares (every role without one).
pub fn roles() -> ArgValueCompleter {
    ArgValueCompleter::new(roles_for)
}

fn roles_for(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    let cfg = Line::read()
        .and_then(|l| l.pair())
        .and_then(|p| p.load(env()));
    candidates(completion::roles(cfg.as_ref().map(|c| &c.infra), prefix))
}

/// `--context`: the contexts of the kubeconfig the line (`--kubeconfig`) or the
/// environment selects.
pub fn contexts() -> ArgValueCompleter {
    ArgValueCompleter::new(contexts_for)
}

fn contexts_for(current: &OsStr) -> Vec<CompletionCandidate> {
    let Some(prefix) = current.to_str() else {
        return Vec::new();
    };
    let line = Line::read();
    let kubeconfig = line
        .as_ref()
        .and_then(|l| l.raw("kubeconfig"))
        .map(Path::new);
    candidates(completion::contexts(kubeconfig, &ProcessEnv, prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<OsString> {
        line.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn the_line_names_the_recipe_and_the_infra() {
        let line = Line::parse(words(
            "nrl check examples/quickstart/recipe.yaml --infra examples/quickstart/infra.yaml po",
        ))
        .unwrap();
        assert!(line.is(&["check"]));
        let pair = line.pair().unwrap();
        assert_eq!(pair.recipe, Path::new("examples/quickstart/recipe.yaml"));
        assert_eq!(
            pair.infra.as_deref(),
            Some(Path::new("examples/quickstart/infra.yaml"))
        );
        // Bash's split at `=`; a subcommand two levels down; a flag before the command.
        let line = Line::parse(words(
            "nrl --context lab cluster up examples/quickstart/recipe.yaml --infra = x.yaml --kubeconfig k",
        ))
        .unwrap();
        assert!(line.is(&["cluster", "up"]));
        assert_eq!(line.raw("infra"), Some(OsStr::new("x.yaml")));
        assert_eq!(line.raw("context"), Some(OsStr::new("lab")));
        assert_eq!(line.raw("kubeconfig"), Some(OsStr::new("k")));
        // Not a file: no pair.
        let line = Line::parse(words("nrl diff run-a run-b ")).unwrap();
        assert!(line.pair().is_none());
        assert_eq!(line.raw("nope"), None);
    }

    #[test]
    fn bash_word_breaks_are_joined() {
        let joined = join_bash_breaks(words("nrl check r.yaml a = 1 --infra = i.yaml b ="));
        assert_eq!(joined, words("nrl check r.yaml a=1 --infra=i.yaml b="));
    }

    #[test]
    fn bash_completes_a_flag_value_after_an_equals_sign() {
        let dropped = drop_flag_equals(words("nrl cluster up --target = k"), 5);
        assert_eq!(dropped, (words("nrl cluster up --target k"), 4));
        // An override's `=` stays; so does a flag's `=` with nothing typed after it yet.
        let kept = words("nrl check r a.b = 1 x");
        assert_eq!(drop_flag_equals(kept.clone(), 6), (kept, 6));
        let kept = words("nrl cluster up --target =");
        assert_eq!(drop_flag_equals(kept.clone(), 4), (kept, 4));
    }

    /// clap's bash script keeps the word open only after `=`, `/` and `:`; ours also
    /// after `.` (this fails when clap's script changes its test).
    #[test]
    fn bash_keeps_the_word_open_after_a_dot() {
        let mut script = Vec::new();
        Bash.write_registration(VAR, "nrl", "nrl", "nrl", &mut script)
            .unwrap();
        let script = String::from_utf8(script).unwrap();
        assert!(script.contains(BASH_OPEN_ENDINGS.1), "{script}");
        assert!(!script.contains(BASH_OPEN_ENDINGS.0), "{script}");
    }

    /// Each edit of clap's zsh script finds its text (this fails when clap's changes).
    #[test]
    fn zsh_keeps_the_word_open_after_a_dot_or_an_equals_sign() {
        let mut theirs = Vec::new();
        clap_complete::env::Zsh
            .write_registration(VAR, "nrl", "nrl", "nrl", &mut theirs)
            .unwrap();
        let theirs = String::from_utf8(theirs).unwrap();
        let mut ours = Vec::new();
        Zsh.write_registration(VAR, "nrl", "nrl", "nrl", &mut ours)
            .unwrap();
        let ours = String::from_utf8(ours).unwrap();
        for (from, to) in ZSH_OPEN_ENDINGS {
            assert!(theirs.contains(from), "{from:?} in {theirs}");
            assert!(ours.contains(to), "{to:?} in {ours}");
        }
    }
}

/// Man pages: `nrl(1)` on stdout, or with --dir one page per command (`nrl-run.1`,
/// `nrl-cluster-up.1`, …) written into DIR.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  nrl man | man -l -
  nrl man --dir ~/.local/share/man/man1 && man nrl-run")]
pub struct ManArgs {
    /// Write every command's page into DIR (created if missing).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

pub fn man(args: ManArgs) -> Result<Exit> {
    let cmd = super::Cli::command();
    let Some(dir) = args.dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut page)
            .map_err(Diag::from)?;
        return super::run::write_stdout(&String::from_utf8_lossy(&page));
    };
    std::fs::create_dir_all(&dir).map_err(|e| {
        Diag::new(
            "nrl::man::dir",
            format!("cannot create {}: {e}", dir.display()),
        )
        .help("pass a directory you can write to")
    })?;
    let pages = write_pages(cmd, &dir)?;
    crate::errln!("wrote {pages} man pages to {}", dir.display());
    Ok(Exit::Ok)
}

/// `cmd`'s page and, recursively, its subcommands' (`nrl-cluster-up.1`); the count.
fn write_pages(cmd: clap::Command, dir: &std::path::Path) -> Result<usize> {
    let mut cmd = cmd;
    cmd.build();
    let mut count = 0;
    let mut stack = vec![(cmd, String::from("nrl"))];
    while let Some((cmd, name)) = stack.pop() {
        for sub in cmd.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            stack.push((sub.clone(), format!("{name}-{}", sub.get_name())));
        }
        let path = dir.join(format!("{name}.1"));
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd.clone().name(name.clone()))
            .render(&mut page)
            .map_err(Diag::from)?;
        std::fs::write(&path, page).map_err(|e| {
            Diag::new(
                "nrl::man::write",
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
        count += 1;
    }
    Ok(count)
}
