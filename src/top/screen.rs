//! The full-screen view: the terminal UI (`ui`) and the session (`session::live`) side by
//! side, joined by two channels: views and notices to the screen, the keys' actions back.

use tokio::sync::mpsc;

use super::session::{TopOptions, live};
use super::ui::{UiOptions, run_terminal};
use crate::diag::{Diag, Result};
use crate::k8s::K8s;

/// Log lines a view carries to the screen: more than any terminal is tall, so the log panel
/// is always full (the pager asks for the whole kept log).
const SCREEN_TAIL: usize = 500;

/// Show the live view on this terminal until the user quits.
pub async fn run(k8s: &K8s, opts: &TopOptions, me: &str) -> Result<()> {
    let opts = &TopOptions {
        tail: SCREEN_TAIL,
        ..opts.clone()
    };
    let (updates_tx, updates_rx) = mpsc::channel(64);
    let (actions_tx, actions_rx) = mpsc::channel(16);
    let ui_options = UiOptions {
        color: std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let screen = tokio::spawn(run_terminal(updates_rx, actions_tx, ui_options));
    let session = live(k8s, opts, me, updates_tx, actions_rx).await;
    // The session ends when the screen quits (its channel closes) or fails; the screen
    // ends when its update channel closes.
    let shown = screen
        .await
        .map_err(|e| Diag::new("nrl::top::screen", format!("the screen stopped: {e}")))?;
    session?;
    shown.map_err(|e| Diag::new("nrl::top::terminal", format!("the terminal failed: {e}")))
}
