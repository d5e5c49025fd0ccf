//! `nrl top`'s full-screen view (ratatui on crossterm): the runs, the selected run's
//! pods, events, training progress and log tail, a pager for its whole log, and the keys
//! that ask the session to select, diagnose, port-forward or stop a run.
//!
//! [`App`] is the state (no I/O), [`draw`] renders it into any ratatui frame (the tests
//! use a `TestBackend`), and [`run_terminal`] runs both on the real terminal.

mod app;
mod draw;
mod pager;
mod terminal;
mod text;

pub use app::{App, Mode, Notice, StopTarget};
pub use draw::{MIN_HEIGHT, MIN_WIDTH, draw};
pub use pager::Pager;
pub use terminal::{UiOptions, run_terminal};

#[cfg(test)]
pub(crate) mod tests;
