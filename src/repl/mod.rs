//! `nrl repl`: an interactive console onto the same engine and built-ins as
//! `nrl script`, for ad-hoc debugging.
//!
//! * [`session`] — the engine thread's state: one engine, a scope that persists between
//!   inputs, the functions defined so far, imports kept as static modules.
//! * [`worker`] — runs the session on its own thread; Ctrl-C cancels the host's token.
//! * [`console`] — the loop: rustyline on a terminal, plain lines from a pipe;
//!   meta-commands ([`meta`]: `:help`, `:doc`, `:load`, `:vars`, `:ctx`, `:ns`, `:plan`,
//!   `:clear`, `:quit`).
//! * [`helper`] — the rustyline helper: completion ([`complete`]), signature hints
//!   ([`hint`]), the "unfinished input" validator and highlighting ([`highlight`]),
//!   over a [`catalog`] built from the engine's function metadata and a [`lexer`].
//! * [`markdown`] — doc comments for the terminal (`:doc`, `:help`).
//! * [`pretty`] — results: tables, YAML, one-line handles. [`history`] — where history
//!   is kept.

pub mod catalog;
pub mod complete;
pub mod console;
pub mod helper;
pub mod highlight;
pub mod hint;
pub mod history;
pub mod lexer;
pub mod markdown;
pub mod meta;
pub mod pretty;
pub mod session;
pub mod worker;

pub use console::{ReplOptions, run};
pub use history::history_path;
pub use session::{LineResult, Session, Snapshot};
