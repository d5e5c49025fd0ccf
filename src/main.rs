//! `nrl` binary: install the crypto provider, parse the command line, run, and map the
//! outcome to an exit code. Everything else lives in the library.

use std::io::IsTerminal;

use clap::Parser;

fn main() {
    // `COMPLETE=bash nrl -- nrl …`: a completion script asking for candidates.
    nrl::cli::completions::complete_if_asked();
    // One TLS crypto library (ring) for kube and reqwest; must precede any client.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // nrl's own process: local runs may make it a child subreaper (not in a test harness,
    // where unrelated tests' orphans would become its zombies).
    nrl::launch::local::reaper::allow_subreaper();
    let cli =
        nrl::cli::Cli::parse_from(nrl::cli::hoist_cluster_flags(std::env::args_os().collect()));
    let code = match nrl::cli::run(cli) {
        Ok(exit) => exit.code(),
        Err(diag) => {
            let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let width = terminal_width().unwrap_or(100);
            nrl::errln!("{}", diag.render(color, width));
            diag.exit.code()
        }
    };
    std::process::exit(code);
}

fn terminal_width() -> Option<usize> {
    std::env::var("COLUMNS").ok()?.parse().ok()
}
