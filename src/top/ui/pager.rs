//! The full-log pager: scrolling, and `/` search with `n`/`N`, like `less`.

use std::borrow::Cow;

use crossterm::event::{KeyCode, KeyEvent};

use crate::top::model::RunKind;

/// Columns ←/→ scroll sideways.
const SIDEWAYS: usize = 8;

/// What a key did to the pager.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PagerKey {
    Handled,
    /// `q` or Esc: back to the main view.
    Close,
}

/// One run's log, open in the pager.
#[derive(Debug, Clone, PartialEq)]
pub struct Pager {
    name: String,
    kind: RunKind,
    lines: Vec<String>,
    /// Whether the session's whole log arrived; until then the lines are the view's tail.
    loaded: bool,
    /// The first line shown, unless `follow`.
    top: usize,
    /// Stick to the end as lines arrive (where the pager opens, and `G`/End).
    follow: bool,
    /// Columns scrolled off to the left (long lines are cut, not wrapped, as `less -S`).
    left: usize,
    /// The last search.
    query: Option<String>,
    /// Indexes of the lines that match `query`, ascending.
    matches: Vec<usize>,
    /// Which of `matches` the last jump went to.
    current: Option<usize>,
    /// The search being typed after `/`.
    input: Option<String>,
    /// What the last search said (not found, wrapped).
    message: Option<String>,
}

impl Pager {
    /// A pager on `preview` (the view's log tail) until the whole log arrives.
    pub(crate) fn new(name: String, kind: RunKind, preview: Vec<String>) -> Pager {
        let mut pager = Pager {
            name,
            kind,
            lines: Vec::new(),
            loaded: false,
            top: 0,
            follow: true,
            left: 0,
            query: None,
            matches: Vec::new(),
            current: None,
            input: None,
            message: None,
        };
        pager.set_lines(preview);
        pager.loaded = false;
        pager
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn kind(&self) -> RunKind {
        self.kind
    }

    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    pub fn loaded(&self) -> bool {
        self.loaded
    }

    pub fn query(&self) -> Option<&str> {
        self.query.as_deref()
    }

    /// The search being typed, when `/` was pressed.
    pub fn input(&self) -> Option<&str> {
        self.input.as_deref()
    }

    /// Columns scrolled off to the left.
    pub fn left(&self) -> usize {
        self.left
    }

    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The line of the current match, and which match of how many it is (1-based).
    pub fn current_match(&self) -> Option<(usize, usize, usize)> {
        let i = self.current?;
        Some((*self.matches.get(i)?, i + 1, self.matches.len()))
    }

    /// The first line shown in a body `height` lines tall.
    pub fn top(&self, height: usize) -> usize {
        let last_page = self.lines.len().saturating_sub(height.max(1));
        if self.follow {
            last_page
        } else {
            self.top.min(last_page)
        }
    }

    /// Whether the last line is on screen.
    pub fn at_end(&self, height: usize) -> bool {
        self.top(height) + height.max(1) >= self.lines.len()
    }

    /// The session's whole log replaces what the pager shows.
    pub(crate) fn set_lines(&mut self, mut lines: Vec<String>) {
        // Shown and searched as drawn: without colour codes and redraws.
        for line in &mut lines {
            if let Cow::Owned(clean) = super::text::log_line(line) {
                *line = clean;
            }
        }
        let current_line = self.current_match().map(|(line, _, _)| line);
        self.lines = lines;
        self.loaded = true;
        if let Some(query) = self.query.clone() {
            self.matches = find_matches(&self.lines, &query);
            self.current = current_line.and_then(|l| self.matches.iter().position(|&m| m == l));
        }
    }

    /// A key, with the body's height for paging.
    pub(crate) fn on_key(&mut self, key: KeyEvent, page: usize) -> PagerKey {
        if self.input.is_some() {
            self.on_search_key(key, page);
            return PagerKey::Handled;
        }
        let page = page.max(1);
        let top = self.top(page);
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => return PagerKey::Close,
            KeyCode::Up | KeyCode::Char('k') => self.scroll_to(top.saturating_sub(1), page),
            KeyCode::Down | KeyCode::Char('j') | KeyCode::Enter => self.scroll_to(top + 1, page),
            KeyCode::PageUp | KeyCode::Char('b') => self.scroll_to(top.saturating_sub(page), page),
            KeyCode::PageDown | KeyCode::Char(' ') | KeyCode::Char('f') => {
                self.scroll_to(top + page, page)
            }
            KeyCode::Left | KeyCode::Char('h') => self.left = self.left.saturating_sub(SIDEWAYS),
            KeyCode::Right | KeyCode::Char('l') => self.left += SIDEWAYS,
            KeyCode::Home | KeyCode::Char('g') => self.scroll_to(0, page),
            KeyCode::End | KeyCode::Char('G') => self.follow = true,
            KeyCode::Char('/') => {
                self.input = Some(String::new());
                self.message = None;
            }
            KeyCode::Char('n') => self.jump(true, page),
            KeyCode::Char('N') => self.jump(false, page),
            _ => {}
        }
        PagerKey::Handled
    }

    fn on_search_key(&mut self, key: KeyEvent, page: usize) {
        let Some(input) = self.input.as_mut() else {
            return;
        };
        match key.code {
            KeyCode::Esc => self.input = None,
            // Backspace on an empty search leaves it, as in `less`.
            KeyCode::Backspace if input.pop().is_none() => self.input = None,
            KeyCode::Char(c) => input.push(c),
            KeyCode::Enter => {
                let typed = self.input.take().unwrap_or_default();
                // An empty search repeats the last one, as in `less`.
                if !typed.is_empty() {
                    self.matches = find_matches(&self.lines, &typed);
                    self.query = Some(typed);
                    self.current = None;
                }
                if self.query.is_some() {
                    self.search_from(self.top(page), page);
                }
            }
            _ => {}
        }
    }

    /// The first match at or after `line`, wrapping to the top.
    fn search_from(&mut self, line: usize, page: usize) {
        match self.matches.iter().position(|&m| m >= line) {
            Some(i) => self.go_to_match(i, None, page),
            None if !self.matches.is_empty() => {
                self.go_to_match(0, Some("search hit the end, continued at the top"), page)
            }
            None => self.not_found(),
        }
    }

    /// `n` (forward) and `N` (backward) from the current match, or from the top line.
    fn jump(&mut self, forward: bool, page: usize) {
        if self.query.is_none() {
            self.message = Some("no search yet: press / to search".into());
            return;
        }
        if self.matches.is_empty() {
            self.not_found();
            return;
        }
        let last = self.matches.len() - 1;
        let Some(current) = self.current else {
            self.search_from(self.top(page), page);
            return;
        };
        let (next, wrapped) = if forward {
            if current < last {
                (current + 1, None)
            } else {
                (0, Some("search hit the end, continued at the top"))
            }
        } else if current > 0 {
            (current - 1, None)
        } else {
            (last, Some("search hit the top, continued at the end"))
        };
        self.go_to_match(next, wrapped, page);
    }

    fn go_to_match(&mut self, i: usize, message: Option<&str>, page: usize) {
        self.current = Some(i);
        self.message = message.map(str::to_string);
        if let Some(&line) = self.matches.get(i) {
            self.scroll_to(line, page);
        }
    }

    fn not_found(&mut self) {
        self.current = None;
        self.message = Some(format!(
            "not found: {}",
            self.query.as_deref().unwrap_or_default()
        ));
    }

    fn scroll_to(&mut self, top: usize, page: usize) {
        let last_page = self.lines.len().saturating_sub(page);
        self.top = top.min(last_page);
        // Scrolling onto the last page follows new lines again, like `tail -f`.
        self.follow = self.top >= last_page;
    }
}

/// Whether `line` contains `query`: ignoring case unless the query has capitals
/// ("smart case", as in `less -i` and most editors).
pub(crate) fn matches_query(line: &str, query: &str) -> bool {
    match_ranges(line, query).next().is_some()
}

/// Byte ranges of `query` in `line`, smart case.
pub(crate) fn match_ranges<'a>(
    line: &'a str,
    query: &'a str,
) -> impl Iterator<Item = (usize, usize)> + 'a {
    let ignore_case = !query.chars().any(char::is_uppercase);
    let mut from = 0;
    std::iter::from_fn(move || {
        if query.is_empty() {
            return None;
        }
        // `from` is always the end of a match, so a char boundary.
        let rest = line.get(from..)?;
        let (at, end) = if ignore_case {
            find_ignoring_case(rest, query)?
        } else {
            rest.find(query).map(|at| (at, at + query.len()))?
        };
        let range = (from + at, from + end);
        // A match holds at least one character, so this moves on.
        from += end;
        Some(range)
    })
}

/// The first match of `query` in `hay` ignoring case, as byte offsets into `hay`.
fn find_ignoring_case(hay: &str, query: &str) -> Option<(usize, usize)> {
    let first = query.chars().next()?;
    for (at, _) in hay
        .char_indices()
        .filter(|(_, c)| c.to_lowercase().eq(first.to_lowercase()))
    {
        let mut hay_chars = hay[at..].char_indices();
        let mut end = at;
        let mut all = true;
        for q in query.chars() {
            match hay_chars.next() {
                Some((offset, h)) if h.to_lowercase().eq(q.to_lowercase()) => {
                    end = at + offset + h.len_utf8();
                }
                _ => {
                    all = false;
                    break;
                }
            }
        }
        if all {
            return Some((at, end));
        }
    }
    None
}

fn find_matches(lines: &[String], query: &str) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, line)| matches_query(line, query))
        .map(|(i, _)| i)
        .collect()
}
