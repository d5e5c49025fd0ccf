//! Progress of long operations, shared by the commands and the Rhai built-ins: on a
//! terminal a spinner shows the step in flight and finished steps stay as lines; otherwise
//! every line is printed plainly (CI logs, pipes); tests and scripts can capture them.
//! Everything goes to stderr, so stdout stays for data (tables, JSON, manifests).

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::terminal_text::escape_keeping_lines;

/// Where every line goes when the caller routes progress itself.
type LineFn = Box<dyn Fn(&str) + Send + Sync>;

enum Sink {
    Terminal(MultiProgress),
    Plain,
    Quiet,
    Capture(Mutex<Vec<String>>),
    Lines(LineFn),
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sink::Terminal(_) => "Terminal",
            Sink::Plain => "Plain",
            Sink::Quiet => "Quiet",
            Sink::Capture(_) => "Capture",
            Sink::Lines(_) => "Lines",
        })
    }
}

/// Where progress goes (cheap to clone).
#[derive(Debug, Clone)]
pub struct Progress {
    sink: Arc<Sink>,
}

impl Progress {
    /// A spinner when stderr is a terminal, plain lines otherwise.
    pub fn auto() -> Progress {
        if std::io::stderr().is_terminal() {
            Progress::terminal()
        } else {
            Progress::plain()
        }
    }

    pub fn terminal() -> Progress {
        Progress {
            sink: Arc::new(Sink::Terminal(MultiProgress::with_draw_target(
                ProgressDrawTarget::stderr(),
            ))),
        }
    }

    /// One line per message on stderr.
    pub fn plain() -> Progress {
        Progress {
            sink: Arc::new(Sink::Plain),
        }
    }

    pub fn quiet() -> Progress {
        Progress {
            sink: Arc::new(Sink::Quiet),
        }
    }

    /// Keep the lines in memory ([`Progress::lines`]).
    pub fn capture() -> Progress {
        Progress {
            sink: Arc::new(Sink::Capture(Mutex::new(Vec::new()))),
        }
    }

    /// Every line handed to `f` (a script's output, a log): steps and updates become
    /// plain lines, as off a terminal.
    pub fn lines_to(f: impl Fn(&str) + Send + Sync + 'static) -> Progress {
        Progress {
            sink: Arc::new(Sink::Lines(Box::new(f))),
        }
    }

    /// A line that stays. Progress quotes what the cluster says (states, reasons, event
    /// messages), so control characters are escaped; line feeds stay.
    pub fn line(&self, msg: impl AsRef<str>) {
        let msg = &*escape_keeping_lines(msg.as_ref());
        match &*self.sink {
            Sink::Terminal(m) => {
                let _ = m.println(msg);
            }
            Sink::Plain => crate::errln!("{msg}"),
            Sink::Quiet => {}
            Sink::Capture(v) => v
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(msg.to_string()),
            Sink::Lines(f) => f(msg),
        }
    }

    /// A step in flight: a spinner on a terminal (its message can change as the step
    /// progresses), a single line otherwise.
    pub fn step(&self, msg: impl Into<String>) -> Step {
        let msg = msg.into();
        let bar = match &*self.sink {
            Sink::Terminal(m) => {
                let bar = m.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_message(escape_keeping_lines(&msg).into_owned());
                bar.enable_steady_tick(Duration::from_millis(120));
                Some(bar)
            }
            _ => {
                self.line(&msg);
                None
            }
        };
        Step {
            progress: self.clone(),
            bar,
            last: Mutex::new(msg),
        }
    }

    /// The captured lines (empty unless made with [`Progress::capture`]).
    pub fn lines(&self) -> Vec<String> {
        match &*self.sink {
            Sink::Capture(v) => v.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            _ => Vec::new(),
        }
    }
}

/// A step started with [`Progress::step`]; finish it with a line, or drop it.
#[derive(Debug)]
pub struct Step {
    progress: Progress,
    bar: Option<ProgressBar>,
    last: Mutex<String>,
}

impl Step {
    /// Update what the step is doing. Off a terminal only changes are printed, so a wait
    /// that sees many identical states prints one line.
    pub fn update(&self, msg: impl Into<String>) {
        let msg = msg.into();
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if *last == msg {
            return;
        }
        match &self.bar {
            Some(b) => b.set_message(escape_keeping_lines(&msg).into_owned()),
            None => self.progress.line(&msg),
        }
        *last = msg;
    }

    /// End the step with a line that stays.
    pub fn finish(self, msg: impl AsRef<str>) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
        self.progress.line(msg);
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_from_the_cluster_cannot_drive_the_terminal() {
        let p = Progress::capture();
        p.line("[training] pod p Pending: \u{1b}[2J\u{1b}]0;x\u{7}\nnext line");
        let s = p.step("waiting: \u{9b}K");
        s.update("waiting: \u{202e}gnidnep");
        assert_eq!(
            p.lines(),
            [
                "[training] pod p Pending: \\e[2J\\e]0;x\\x07\nnext line",
                "waiting: \\u{009b}K",
                "waiting: \\u{202e}gnidnep",
            ]
        );
    }

    #[test]
    fn captured_steps_print_changes_only() {
        let p = Progress::capture();
        p.line("[training] applying RayCluster rc");
        let s = p.step("[training] waiting: state=none");
        s.update("[training] waiting: state=none");
        s.update("[training] waiting: state=ready");
        s.finish("[training] RayCluster rc is ready");
        assert_eq!(
            p.lines(),
            [
                "[training] applying RayCluster rc",
                "[training] waiting: state=none",
                "[training] waiting: state=ready",
                "[training] RayCluster rc is ready"
            ]
        );
    }

    #[test]
    fn lines_go_to_the_given_function() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let p = Progress::lines_to(move |l| sink.lock().unwrap().push(l.to_string()));
        let s = p.step("waiting");
        s.update("waiting");
        s.update("still waiting");
        s.finish("done");
        assert_eq!(*seen.lock().unwrap(), ["waiting", "still waiting", "done"]);
    }
}
