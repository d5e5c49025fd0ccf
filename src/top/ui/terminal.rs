//! The full-screen loop: raw mode and the alternate screen for as long as it runs, a
//! redraw on each update, key and resize, and each second an age on screen changes;
//! nothing in between.

use std::io::{self, Stdout, Write};
use std::panic::{self, PanicHookInfo};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event::{Event, EventStream};
use crossterm::{cursor, execute, terminal};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc::{Receiver, Sender};

use super::app::App;
use super::draw::draw;
use crate::top::model::{Action, ScreenUpdate};

/// How the screen is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UiOptions {
    /// Colours allowed (false under `NO_COLOR` or `--color never`: bold, dim and reversed
    /// only).
    pub color: bool,
}

impl Default for UiOptions {
    fn default() -> Self {
        UiOptions { color: true }
    }
}

/// Updates drained before one redraw: a burst (many watch events at once) is drawn once.
const UPDATES_PER_DRAW: usize = 64;

/// Runs the full-screen view on stdout until the user quits: draws each update from
/// `updates`, sends the keys' actions to `actions`, and returns after sending
/// [`Action::Quit`] (or when `actions` is closed: no one is listening any more). The
/// terminal is restored on return, on error, on panic and if the future is dropped.
pub async fn run_terminal(
    mut updates: Receiver<ScreenUpdate>,
    actions: Sender<Action>,
    options: UiOptions,
) -> io::Result<()> {
    let _screen = FullScreen::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    let mut app = App::new(options.color);
    let size = terminal.size()?;
    app.set_size(size.width, size.height);
    app.set_now(jiff::Timestamp::now());
    // Cleared by the escape sequence itself: ratatui's `clear()` first asks the terminal
    // where the cursor is (CSI 6n), which some terminals (and pipes posing as one) never
    // answer, and the screen would then fail to start.
    blocking(|| execute!(io::stdout(), terminal::Clear(terminal::ClearType::All)))?;
    blocking(|| terminal.draw(|frame| draw(frame, &app)).map(drop))?;

    let mut keys = EventStream::new();
    let mut clock = tokio::time::interval(Duration::from_secs(1));
    clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The first tick fires at once; the screen is already drawn.
    clock.tick().await;
    let mut updates_open = true;
    loop {
        let action = tokio::select! {
            update = updates.recv(), if updates_open => match update {
                Some(update) => {
                    let mut action = app.on_update(update);
                    for _ in 1..UPDATES_PER_DRAW {
                        let Ok(update) = updates.try_recv() else { break };
                        action = app.on_update(update).or(action);
                    }
                    action
                }
                // The session ended its side; keys still work (q quits).
                None => {
                    updates_open = false;
                    None
                }
            },
            event = keys.next() => match event {
                Some(Ok(Event::Key(key))) => app.on_key(key),
                Some(Ok(Event::Resize(width, height))) => {
                    app.set_size(width, height);
                    None
                }
                // Focus, mouse and paste events change nothing on screen.
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e),
                // No more input (stdin closed): nothing can be asked of the screen.
                None => Some(Action::Quit),
            },
            // Ages are the only thing that moves with the clock: no redraw unless one did.
            _ = clock.tick() => {
                if !app.set_now(jiff::Timestamp::now()) {
                    continue;
                }
                None
            }
        };
        if let Some(action) = action {
            let quit = action == Action::Quit;
            if actions.send(action).await.is_err() || quit {
                return Ok(());
            }
        }
        blocking(|| terminal.draw(|frame| draw(frame, &app)).map(drop))?;
    }
}

/// Runs a terminal write off the async worker where the runtime allows it: a terminal
/// that stops reading (a paused SSH session, Ctrl-S) blocks the write.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

type PanicHook = Box<dyn Fn(&PanicHookInfo<'_>) + Send + Sync + 'static>;

/// Raw mode, the alternate screen and a hidden cursor, undone once on drop or on a panic
/// (before the panic message prints, so it lands on the normal screen).
struct FullScreen {
    /// Whether the terminal still needs restoring (the panic hook and drop share it).
    active: Arc<AtomicBool>,
    /// The hook that was installed before ours, put back on drop.
    previous_hook: Arc<PanicHook>,
}

impl FullScreen {
    fn enter() -> io::Result<FullScreen> {
        let active = Arc::new(AtomicBool::new(false));
        let previous_hook: Arc<PanicHook> = Arc::new(panic::take_hook());
        {
            let active = Arc::clone(&active);
            let previous = Arc::clone(&previous_hook);
            panic::set_hook(Box::new(move |info| {
                if active.swap(false, Ordering::SeqCst) {
                    restore();
                }
                previous(info);
            }));
        }
        let screen = FullScreen {
            active,
            previous_hook,
        };
        terminal::enable_raw_mode()?;
        // From here on, drop undoes whatever of the rest was done.
        screen.active.store(true, Ordering::SeqCst);
        execute!(io::stdout(), terminal::EnterAlternateScreen, cursor::Hide)?;
        Ok(screen)
    }
}

impl Drop for FullScreen {
    fn drop(&mut self) {
        if self.active.swap(false, Ordering::SeqCst) {
            restore();
        }
        // The hook can only be changed outside a panic (std panics otherwise).
        if !std::thread::panicking() {
            let previous = Arc::clone(&self.previous_hook);
            let _ = panic::take_hook();
            panic::set_hook(Box::new(move |info| previous(info)));
        }
    }
}

/// Leaves the alternate screen, shows the cursor, ends raw mode. Best effort: this runs
/// on the way out, where an error has nowhere to go.
fn restore() {
    let mut out: Stdout = io::stdout();
    let _ = execute!(out, cursor::Show, terminal::LeaveAlternateScreen);
    let _ = out.flush();
    let _ = terminal::disable_raw_mode();
}
