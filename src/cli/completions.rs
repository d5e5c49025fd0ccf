//! `nrl completions SHELL` and `nrl man`: shell completion scripts and man pages, both
//! generated from the clap definitions (so they cannot drift from the commands).

use std::path::PathBuf;

use clap::{Args, CommandFactory, ValueEnum};
use clap_complete::Shell;

use crate::diag::{Diag, Exit, Result};

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

/// Print the completion script for SHELL: every command, flag and enumerated value.
#[derive(Debug, Args)]
#[command(after_help = "\
Install it where your shell looks for completions:

Examples:
  nrl completions bash > ~/.local/share/bash-completion/completions/nrl
  nrl completions zsh > \"${fpath[1]}/_nrl\"
  nrl completions fish > ~/.config/fish/completions/nrl.fish
  nrl completions powershell >> $PROFILE")]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: ShellArg,
}

pub fn completions(args: CompletionsArgs) -> Result<Exit> {
    let mut cmd = super::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(Shell::from(args.shell), &mut cmd, "nrl", &mut script);
    super::run::write_stdout(&String::from_utf8_lossy(&script))
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
