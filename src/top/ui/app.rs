//! The screen's state and what keys and updates do to it. No I/O: the terminal loop
//! ([`super::run_terminal`]) feeds it and draws it, tests drive it directly.

use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::pager::{Pager, PagerKey};
use super::text;
use crate::top::model::{Action, RunKind, RunRow, ScreenUpdate, TopView};

/// What fills the screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// The runs, and the selected run's pods, events, progress and log tail.
    Main,
    /// One run's whole log.
    Pager(Pager),
    /// The keys, over the main view.
    Help,
    /// `Stop RayJob … ? y/N`, over the main view.
    Confirm(StopTarget),
}

/// The run a stop confirmation names (as it was when `s` was pressed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopTarget {
    pub name: String,
    pub kind: RunKind,
    pub namespace: String,
}

/// A box from [`ScreenUpdate::Notice`], shown until a key dismisses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub title: String,
    pub body: String,
    pub error: bool,
}

/// The screen's state: the latest view, the selection, the mode.
#[derive(Debug, Clone)]
pub struct App {
    view: TopView,
    /// Whether a view arrived yet (until then the screen says it is connecting).
    has_view: bool,
    /// The selected run, by identity: rows move as runs come and go.
    selected: Option<(String, RunKind)>,
    /// Its row in `view.runs`.
    selected_index: usize,
    mode: Mode,
    /// Notices not dismissed yet, oldest first (shown one at a time, over any mode).
    notices: VecDeque<Notice>,
    color: bool,
    /// The clock ages are counted from; `None`: the view's own ages.
    now: Option<jiff::Timestamp>,
    /// The terminal's size, for paging.
    size: (u16, u16),
}

impl App {
    /// `color`: whether colours may be used (false under `NO_COLOR`: modifiers only).
    pub fn new(color: bool) -> App {
        App {
            view: TopView::default(),
            has_view: false,
            selected: None,
            selected_index: 0,
            mode: Mode::Main,
            notices: VecDeque::new(),
            color,
            now: None,
            size: (80, 24),
        }
    }

    pub fn view(&self) -> &TopView {
        &self.view
    }

    /// Whether the session sent a view yet.
    pub fn has_view(&self) -> bool {
        self.has_view
    }

    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The notice on screen.
    pub fn notice(&self) -> Option<&Notice> {
        self.notices.front()
    }

    pub fn color(&self) -> bool {
        self.color
    }

    pub fn now(&self) -> Option<jiff::Timestamp> {
        self.now
    }

    /// The row of the selected run in `view().runs`.
    pub fn selected_index(&self) -> Option<usize> {
        (!self.view.runs.is_empty()).then_some(self.selected_index)
    }

    pub fn selected_run(&self) -> Option<&RunRow> {
        self.view.runs.get(self.selected_index)
    }

    /// The clock ages are counted from (the terminal loop sets it every second). Returns
    /// whether an age on screen changed with it, i.e. whether a redraw shows anything new.
    pub fn set_now(&mut self, now: jiff::Timestamp) -> bool {
        let Some(before) = self.now.replace(now) else {
            return true;
        };
        if matches!(self.mode, Mode::Pager(_)) {
            return false;
        }
        let run_ages = self
            .view
            .runs
            .iter()
            .map(|r| (r.created.as_deref(), r.age.as_str()));
        let event_ages = self
            .view
            .selected
            .iter()
            .flat_map(|d| d.events.iter())
            .map(|e| (e.last_seen.as_deref(), e.age.as_str()));
        run_ages.chain(event_ages).any(|(since, fallback)| {
            text::age(since, fallback, Some(before)) != text::age(since, fallback, Some(now))
        })
    }

    /// The terminal's size (for the pager's page keys; drawing uses the frame's).
    pub fn set_size(&mut self, width: u16, height: u16) {
        self.size = (width, height);
    }

    /// Lines of log the pager shows at once: the screen less its title and status lines.
    pub(crate) fn pager_height(&self) -> usize {
        usize::from(self.size.1.saturating_sub(2)).max(1)
    }

    /// An update from the session. A new view that no longer has the selected run moves
    /// the selection to its neighbour and asks for that run's details.
    pub fn on_update(&mut self, update: ScreenUpdate) -> Option<Action> {
        match update {
            ScreenUpdate::View(view) => {
                self.view = *view;
                self.has_view = true;
                self.reselect()
            }
            ScreenUpdate::FullLog { name, lines } => {
                if let Mode::Pager(pager) = &mut self.mode
                    && pager.name() == name
                {
                    pager.set_lines(lines);
                }
                None
            }
            ScreenUpdate::Notice { title, body, error } => {
                self.notices.push_back(Notice { title, body, error });
                None
            }
        }
    }

    /// Finds the selected run in a new view.
    fn reselect(&mut self) -> Option<Action> {
        let runs = &self.view.runs;
        if runs.is_empty() {
            self.selected_index = 0;
            return None;
        }
        let found = self
            .selected
            .as_ref()
            .and_then(|(name, kind)| runs.iter().position(|r| &r.name == name && r.kind == *kind));
        match (found, &self.selected) {
            (Some(i), _) => {
                self.selected_index = i;
                None
            }
            // Nothing chosen yet: the run the session shows.
            (None, None) => {
                self.selected_index = self
                    .view
                    .selected
                    .as_ref()
                    .and_then(|d| {
                        runs.iter()
                            .position(|r| r.name == d.name && r.kind == d.kind)
                    })
                    .unwrap_or(0);
                let run = &runs[self.selected_index];
                self.selected = Some((run.name.clone(), run.kind));
                None
            }
            // The selected run is gone: its neighbour (the row it was on, or the last).
            (None, Some(_)) => {
                self.selected_index = self.selected_index.min(runs.len() - 1);
                self.select(self.selected_index)
            }
        }
    }

    /// Selects row `index` and asks for its details.
    fn select(&mut self, index: usize) -> Option<Action> {
        let run = self.view.runs.get(index)?;
        self.selected_index = index;
        self.selected = Some((run.name.clone(), run.kind));
        Some(Action::Select {
            name: run.name.clone(),
            kind: run.kind,
        })
    }

    /// A key. Ctrl-C quits from anywhere; a notice takes the first key; then the mode's keys.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<Action> {
        // Terminals that report releases would otherwise act twice per press.
        if key.kind == KeyEventKind::Release {
            return None;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Some(Action::Quit);
        }
        if self.notices.pop_front().is_some() {
            return None;
        }
        let page = self.pager_height();
        match &mut self.mode {
            Mode::Main => self.on_main_key(key),
            Mode::Help => {
                self.mode = Mode::Main;
                None
            }
            Mode::Confirm(target) => {
                let action =
                    matches!(key.code, KeyCode::Char('y') | KeyCode::Char('Y')).then(|| {
                        Action::Stop {
                            name: target.name.clone(),
                            kind: target.kind,
                        }
                    });
                self.mode = Mode::Main;
                action
            }
            Mode::Pager(pager) => {
                if pager.on_key(key, page) == PagerKey::Close {
                    self.mode = Mode::Main;
                }
                None
            }
        }
    }

    fn on_main_key(&mut self, key: KeyEvent) -> Option<Action> {
        let last = self.view.runs.len().checked_sub(1);
        let run_action = |app: &App, make: fn(String, RunKind) -> Action| {
            app.selected_run().map(|r| make(r.name.clone(), r.kind))
        };
        match key.code {
            KeyCode::Char('q') => Some(Action::Quit),
            KeyCode::Up | KeyCode::Char('k') => {
                let i = self.selected_index.checked_sub(1)?;
                self.select(i)
            }
            KeyCode::Down | KeyCode::Char('j') if last.is_some_and(|l| self.selected_index < l) => {
                self.select(self.selected_index + 1)
            }
            KeyCode::Home | KeyCode::Char('g') if self.selected_index != 0 => self.select(0),
            KeyCode::End | KeyCode::Char('G') if last.is_some_and(|l| l != self.selected_index) => {
                self.select(last?)
            }
            KeyCode::Enter | KeyCode::Char('l') => {
                let run = self.selected_run()?;
                let (name, kind) = (run.name.clone(), run.kind);
                // Until the whole log arrives, the tail the view has (when it is this run's).
                let preview = self
                    .view
                    .selected
                    .as_ref()
                    .filter(|d| d.name == name && d.kind == kind)
                    .map(|d| d.log.lines.clone())
                    .unwrap_or_default();
                self.mode = Mode::Pager(Pager::new(name.clone(), kind, preview));
                Some(Action::OpenLog { name, kind })
            }
            KeyCode::Char('d') => run_action(self, |name, kind| Action::Diagnose { name, kind }),
            KeyCode::Char('p') => run_action(self, |name, kind| Action::Dashboard { name, kind }),
            KeyCode::Char('s') => {
                let run = self.selected_run()?;
                self.mode = Mode::Confirm(StopTarget {
                    name: run.name.clone(),
                    kind: run.kind,
                    namespace: self.view.namespace.clone(),
                });
                None
            }
            KeyCode::Char('?') => {
                self.mode = Mode::Help;
                None
            }
            _ => None,
        }
    }
}
