//! Training progress read from a run's log, one line at a time.
//!
//! The defaults read the lines NeMo-RL's GRPO, async GRPO, SFT, DPO and distillation
//! loops print on the driver (step and epoch banners, the `📊 Training Results:`,
//! `⏱️  Timing:` and `🔍 Performance Metrics:` blocks, validation results), and the
//! progress bar vLLM workers print through Ray (`Processed prompts: 45%|██ | 29/64`).
//! Users override any field's pattern with `NAME=REGEX` ([`ProgressPatterns::with_overrides`]).
//!
//! Bullets look alike across blocks (`  • Loss:` under results, `  • accuracy:` in DPO's
//! training results but `    • Accuracy:` under validation), so a default pattern only
//! applies inside its block: the parser remembers which header came last. A user's
//! pattern applies to every line: their program prints its own format, without
//! NeMo-RL's headers.
//!
//! Steps and the history: a step's numbers are complete when the next step banner
//! arrives, or when a driver line that is not a bullet follows its timing or performance
//! block (the last blocks of a step). It is then pushed into `history` (oldest dropped
//! past [`HISTORY_LEN`]), in arrival order. `Progress::step` is the banner's `N`, which
//! sync GRPO (v0.4+), SFT, DPO and distillation reset every epoch; a history point's
//! `step` is a global 1-based index instead: the banner's `N` plus the steps of the
//! epochs before it, counted when the banner's number goes back (a new epoch), assumed
//! to be `(epoch - 1) × M` when the first banner seen is already past the first epoch,
//! and corrected by `Saving checkpoint for step N...`, which prints the global step.

use std::borrow::Cow;
use std::fmt;

use regex::{CaptureLocations, Regex};

use super::model::{Progress, StepPoint};

/// Finished steps kept in [`Progress::history`].
pub const HISTORY_LEN: usize = 120;

/// The unit of the default throughput pattern (NeMo-RL's `E2E (Tokens/sec/gpu)`).
pub const DEFAULT_THROUGHPUT_UNIT: &str = "tokens/s/gpu";

/// A number as Python's `f"{x:.4f}"` prints it, including `nan` and `inf`.
const NUMBER: &str = r"(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-?nan|-?inf)";

/// The fields a pattern sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProgressField {
    /// `N/M` of the step banner (groups 1 and 2).
    Step,
    /// `N/M` of the epoch banner (groups 1 and 2).
    Epoch,
    Loss,
    Reward,
    Throughput,
    StepTime,
    /// vLLM's `Processed prompts` `done/total` (groups 1 and 2).
    Prompts,
    ValidationAccuracy,
}

impl ProgressField {
    pub const ALL: [ProgressField; 8] = [
        ProgressField::Step,
        ProgressField::Epoch,
        ProgressField::Loss,
        ProgressField::Reward,
        ProgressField::Throughput,
        ProgressField::StepTime,
        ProgressField::Prompts,
        ProgressField::ValidationAccuracy,
    ];

    /// The name used in `NAME=REGEX` overrides.
    pub fn name(self) -> &'static str {
        match self {
            ProgressField::Step => "step",
            ProgressField::Epoch => "epoch",
            ProgressField::Loss => "loss",
            ProgressField::Reward => "reward",
            ProgressField::Throughput => "throughput",
            ProgressField::StepTime => "step_time",
            ProgressField::Prompts => "prompts",
            ProgressField::ValidationAccuracy => "validation_accuracy",
        }
    }

    pub fn from_name(name: &str) -> Option<ProgressField> {
        Self::ALL.into_iter().find(|f| f.name() == name)
    }

    /// Whether the field is an `N/M` pair (group 2 is the `M`, optional in a user's regex).
    pub fn is_pair(self) -> bool {
        matches!(
            self,
            ProgressField::Step | ProgressField::Epoch | ProgressField::Prompts
        )
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ProgressField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which block of a NeMo-RL step the last header opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    /// After a step banner, before any header.
    None,
    Results,
    Timing,
    Performance,
    Validation,
    ValidationTiming,
    /// A block no default pattern reads (efficiency summary, setup timing, …).
    Other,
}

/// One field's pattern and when it is tried.
#[derive(Debug, Clone)]
struct FieldPattern {
    regex: Regex,
    /// A default's literal the line must contain: the cheap test that keeps the regex off
    /// most lines. `None` for a user's regex (tried on every line).
    hint: Option<&'static str>,
    /// The block a default applies in; `None`: anywhere.
    section: Option<Section>,
}

/// One regex per [`ProgressField`]: NeMo-RL's by default, any replaced by the user's.
#[derive(Debug, Clone)]
pub struct ProgressPatterns {
    fields: [FieldPattern; 8],
}

impl Default for ProgressPatterns {
    fn default() -> Self {
        let fields = ProgressField::ALL.map(default_pattern);
        ProgressPatterns { fields }
    }
}

fn default_pattern(field: ProgressField) -> FieldPattern {
    let (source, hint, section): (Cow<'static, str>, &'static str, Option<Section>) = match field {
        // Anchored on runs of `=`: PPO's inner `▶ Step 1/4...` must not match.
        ProgressField::Step => (
            r"^\s*=+\s*Step (\d+)/(\d+)\s*=+\s*$".into(),
            "= Step ",
            None,
        ),
        ProgressField::Epoch => (
            r"^\s*=+\s*Epoch (\d+)/(\d+)\s*=+\s*$".into(),
            "= Epoch ",
            None,
        ),
        // DPO prints `loss` in lower case (v0.4+), the others `Loss`.
        ProgressField::Loss => (
            format!(r"^\s*• (?:Loss|loss): {NUMBER}\s*$").into(),
            "oss: ",
            Some(Section::Results),
        ),
        // DAPO prints `Avg Filtered Reward` and `Avg Total Reward`; the total is the one
        // comparable with other runs' `Avg Reward`.
        ProgressField::Reward => (
            format!(r"^\s*• Avg (?:Total )?Reward: {NUMBER}\s*$").into(),
            "Reward: ",
            Some(Section::Results),
        ),
        ProgressField::Throughput => (
            format!(r"^\s*- E2E \(Tokens/sec/gpu\): {NUMBER}\s*$").into(),
            "E2E (Tokens/sec/gpu)",
            Some(Section::Performance),
        ),
        ProgressField::StepTime => (
            format!(r"^\s*• Total step time: {NUMBER}s\s*$").into(),
            "Total step time",
            Some(Section::Timing),
        ),
        // tqdm: `{desc}: {pct:3.0f}%|{bar}| {n}/{total} [...]`.
        ProgressField::Prompts => (
            r"Processed prompts:\s*\d+%\|[^|]*\|\s*(\d+)/(\d+)".into(),
            "Processed prompts",
            None,
        ),
        // GRPO and distillation print `Accuracy`; DPO `Validation accuracy`.
        ProgressField::ValidationAccuracy => (
            format!(r"^\s*• (?:Accuracy|Validation accuracy): {NUMBER}\s*$").into(),
            "ccuracy: ",
            Some(Section::Validation),
        ),
    };
    FieldPattern {
        // The defaults are constants, checked by the tests.
        regex: Regex::new(&source).expect("default progress pattern compiles"),
        hint: Some(hint),
        section,
    }
}

impl ProgressPatterns {
    /// The defaults with the user's `NAME=REGEX` overrides applied (later ones win). A
    /// user regex puts the value in capture group 1 (for `step`, `epoch` and `prompts`,
    /// group 2 is the `M` of `N/M`, when it has one).
    pub fn with_overrides(overrides: &[String]) -> Result<ProgressPatterns, String> {
        let mut patterns = ProgressPatterns::default();
        for spec in overrides {
            let (field, regex) = parse_override(spec)?;
            patterns.fields[field.index()] = FieldPattern {
                regex,
                hint: None,
                section: None,
            };
        }
        Ok(patterns)
    }

    /// The regex a field is read with.
    pub fn regex(&self, field: ProgressField) -> &Regex {
        &self.fields[field.index()].regex
    }

    /// Whether a field still uses NeMo-RL's pattern.
    pub fn is_default(&self, field: ProgressField) -> bool {
        self.fields[field.index()].hint.is_some()
    }
}

fn parse_override(spec: &str) -> Result<(ProgressField, Regex), String> {
    let names = || {
        ProgressField::ALL
            .iter()
            .map(|f| f.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((name, source)) = spec.split_once('=') else {
        return Err(format!(
            "progress pattern `{spec}` is not NAME=REGEX (names: {})",
            names()
        ));
    };
    let name = name.trim();
    let Some(field) = ProgressField::from_name(name) else {
        let hint =
            crate::config::suggest::did_you_mean(name, ProgressField::ALL.iter().map(|f| f.name()))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
        return Err(format!(
            "unknown progress field `{name}`{hint} (fields: {})",
            names()
        ));
    };
    if source.is_empty() {
        return Err(format!("progress pattern `{name}` has an empty regex"));
    }
    let regex =
        Regex::new(source).map_err(|e| format!("progress pattern `{name}`: invalid regex: {e}"))?;
    // captures_len counts the whole match as group 0.
    if regex.captures_len() < 2 {
        let what = if field.is_pair() {
            "put N in group 1 and M in group 2, e.g. `step (\\d+)/(\\d+)`"
        } else {
            "put the number in group 1, e.g. `loss=([-\\d.]+)`"
        };
        return Err(format!(
            "progress pattern `{name}` has no capture group: {what}"
        ));
    }
    Ok((field, regex))
}

/// Reads [`Progress`] from log lines fed one at a time.
#[derive(Debug, Clone)]
pub struct ProgressParser {
    patterns: ProgressPatterns,
    /// One reusable set of capture slots per field, so matching allocates nothing.
    locations: Vec<CaptureLocations>,
    progress: Progress,
    wandb_url: Option<String>,
    section: Section,
    /// The numbers of the step in progress, pushed into the history when it finishes.
    pending: Option<StepPoint>,
    /// The last step banner's `N`.
    last_banner_step: Option<u64>,
    /// Steps of the epochs before the current one (see the module docs).
    step_offset: u64,
}

impl Default for ProgressParser {
    fn default() -> Self {
        ProgressParser::new(ProgressPatterns::default())
    }
}

impl ProgressParser {
    pub fn new(patterns: ProgressPatterns) -> ProgressParser {
        let locations = patterns
            .fields
            .iter()
            .map(|p| p.regex.capture_locations())
            .collect();
        ProgressParser {
            patterns,
            locations,
            progress: Progress::default(),
            wandb_url: None,
            section: Section::None,
            pending: None,
            last_banner_step: None,
            step_offset: 0,
        }
    }

    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// The W&B run URL, once wandb printed `View run at …` (or `View run NAME at: …`).
    pub fn wandb_url(&self) -> Option<&str> {
        self.wandb_url.as_deref()
    }

    /// Reads one log line (with or without its `\n`).
    pub fn feed(&mut self, raw: &str) {
        let worker = has_ray_prefix(raw);
        // tqdm redraws with `\r`: only the last state counts.
        let piece = raw
            .rsplit('\r')
            .find(|p| !p.trim().is_empty())
            .unwrap_or("");
        let clean = strip_ansi(piece);
        let line = strip_ray_decorations(&clean).trim_end();
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            return;
        }

        if line.contains("View run") {
            self.read_wandb_url(line);
        }
        if let Some(rest) = trimmed.strip_prefix("Saving checkpoint for step ") {
            self.read_checkpoint_step(rest);
        }

        let bullet = trimmed.starts_with('•') || trimmed.starts_with('-');
        let header = if bullet {
            None
        } else {
            section_header(trimmed)
        };
        // A driver line that is neither a bullet nor the next block's header ends the
        // timing or performance block, the last blocks of a step.
        if !worker
            && !bullet
            && header.is_none()
            && matches!(self.section, Section::Timing | Section::Performance)
        {
            self.section = Section::Other;
            if self.pending.as_ref().is_some_and(|p| p.step_time.is_some()) {
                self.finish_step();
            }
        }
        if let Some(section) = header {
            self.section = section;
        }

        for field in ProgressField::ALL {
            let pattern = &self.patterns.fields[field.index()];
            if pattern.hint.is_some_and(|hint| !line.contains(hint))
                || pattern.section.is_some_and(|s| s != self.section)
            {
                continue;
            }
            let locations = &mut self.locations[field.index()];
            if pattern.regex.captures_read(locations, line).is_none() {
                continue;
            }
            let group = |i: usize| locations.get(i).map(|(start, end)| line[start..end].trim());
            let first = group(1);
            let second = group(2);
            self.apply(field, first, second);
        }
    }

    fn apply(&mut self, field: ProgressField, first: Option<&str>, second: Option<&str>) {
        let int = |s: Option<&str>| s.and_then(|s| s.parse::<u64>().ok());
        let float = first.and_then(|s| s.parse::<f64>().ok());
        match field {
            ProgressField::Step => {
                if let Some(n) = int(first) {
                    self.start_step(n, int(second));
                }
            }
            ProgressField::Epoch => {
                if let Some(n) = int(first) {
                    self.progress.epoch = Some(n);
                    self.progress.max_epochs = int(second);
                }
            }
            ProgressField::Prompts => {
                if let Some(n) = int(first) {
                    self.progress.prompts_done = Some(n);
                    self.progress.prompts_total = int(second);
                }
            }
            ProgressField::Loss => {
                if let Some(v) = float {
                    self.progress.loss = Some(v);
                    self.pending_point().loss = Some(v);
                }
            }
            ProgressField::Reward => {
                if let Some(v) = float {
                    self.progress.reward = Some(v);
                    self.pending_point().reward = Some(v);
                }
            }
            ProgressField::Throughput => {
                if let Some(v) = float {
                    self.progress.throughput = Some(v);
                    self.progress.throughput_unit = self
                        .patterns
                        .is_default(ProgressField::Throughput)
                        .then(|| DEFAULT_THROUGHPUT_UNIT.to_string());
                    self.pending_point().throughput = Some(v);
                }
            }
            ProgressField::StepTime => {
                if let Some(v) = float {
                    self.progress.step_time = Some(v);
                    self.pending_point().step_time = Some(v);
                }
            }
            ProgressField::ValidationAccuracy => {
                if let Some(v) = float {
                    self.progress.validation_accuracy = Some(v);
                }
            }
        }
    }

    fn start_step(&mut self, n: u64, max: Option<u64>) {
        self.finish_step();
        match self.last_banner_step {
            // The banner's number went back: a new epoch of a per-epoch counter.
            Some(previous) if n <= previous => self.step_offset += previous,
            Some(_) => {}
            // Joined past the first epoch: assume full epochs of M steps before it.
            None => {
                if let (Some(epoch), Some(max)) = (self.progress.epoch, max)
                    && epoch > 1
                {
                    self.step_offset = (epoch - 1) * max;
                }
            }
        }
        self.last_banner_step = Some(n);
        self.progress.step = Some(n);
        self.progress.max_steps = max;
        // Last step's generation is done; this one's bar has not started.
        self.progress.prompts_done = None;
        self.progress.prompts_total = None;
        self.section = Section::None;
        self.pending = Some(StepPoint {
            step: self.step_offset + n,
            ..StepPoint::default()
        });
    }

    /// The current step's point (one without a banner, for formats that print none).
    fn pending_point(&mut self) -> &mut StepPoint {
        let step = self.step_offset + self.last_banner_step.unwrap_or(0);
        self.pending.get_or_insert_with(|| StepPoint {
            step,
            ..StepPoint::default()
        })
    }

    fn finish_step(&mut self) {
        let Some(point) = self.pending.take() else {
            return;
        };
        if point.loss.is_none()
            && point.reward.is_none()
            && point.throughput.is_none()
            && point.step_time.is_none()
        {
            return;
        }
        let history = &mut self.progress.history;
        if history.len() >= HISTORY_LEN {
            history.drain(..=history.len() - HISTORY_LEN);
        }
        history.push(point);
    }

    /// `Saving checkpoint for step N...`: N is the global 1-based step of the current one.
    fn read_checkpoint_step(&mut self, rest: &str) {
        let digits = rest.split(|c: char| !c.is_ascii_digit()).next();
        let (Some(global), Some(banner)) = (
            digits.and_then(|d| d.parse::<u64>().ok()),
            self.last_banner_step,
        ) else {
            return;
        };
        if global >= banner {
            self.step_offset = global - banner;
            if let Some(point) = self.pending.as_mut() {
                point.step = global;
            }
        }
    }

    fn read_wandb_url(&mut self, line: &str) {
        // `wandb: 🚀 View run at URL` (start) and `wandb: 🚀 View run NAME at: URL` (end).
        let Some(after) = line.split_once("View run").map(|(_, rest)| rest) else {
            return;
        };
        let Some(start) = after.find("https://").or_else(|| after.find("http://")) else {
            return;
        };
        if !after[..start].trim_end().ends_with(" at")
            && !after[..start].trim_end().ends_with("at:")
        {
            return;
        }
        let url = after[start..]
            .split(char::is_whitespace)
            .next()
            .unwrap_or_default();
        if self.wandb_url.as_deref() != Some(url) {
            self.wandb_url = Some(url.to_string());
        }
    }
}

/// The block a header line opens, for the headers NeMo-RL prints; `None` for other lines.
fn section_header(trimmed: &str) -> Option<Section> {
    // Every header starts with an emoji; most lines start with ASCII.
    if trimmed.as_bytes().first().is_none_or(u8::is_ascii) {
        return None;
    }
    if trimmed.contains("Training Results:") {
        Some(Section::Results)
    } else if trimmed.contains("Validation Results") {
        Some(Section::Validation)
    } else if trimmed.contains("Validation Timing") {
        Some(Section::ValidationTiming)
    } else if trimmed.starts_with('⏱') && trimmed.ends_with(" Timing:") {
        Some(Section::Timing)
    } else if trimmed.contains("Performance Metrics:") {
        Some(Section::Performance)
    } else if trimmed.contains("Efficiency Summary") || trimmed.contains("Timing:") {
        Some(Section::Other)
    } else {
        None
    }
}

/// Whether a line starts with Ray's `(Actor pid=N[, ip=…])` worker prefix (maybe coloured).
fn has_ray_prefix(raw: &str) -> bool {
    let rest = raw.strip_prefix("\x1b[36m").unwrap_or(raw);
    ray_prefix_len(rest).is_some()
}

/// The length of a leading `(Actor pid=N[, ip=…]) ` prefix.
fn ray_prefix_len(line: &str) -> Option<usize> {
    if !line.starts_with('(') {
        return None;
    }
    let close = line.find(") ")?;
    line[..close].contains("pid=").then_some(close + 2)
}

/// A line without Ray's worker prefix and its ` [repeated 7x across cluster]` suffix.
fn strip_ray_decorations(line: &str) -> &str {
    let mut line = match ray_prefix_len(line) {
        Some(len) => &line[len..],
        None => line,
    };
    if line.ends_with("across cluster]")
        && let Some(at) = line.rfind(" [repeated ")
    {
        line = &line[..at];
    }
    line
}

/// A line without ANSI escape sequences (CSI colours, OSC 8 links); borrowed when it has none.
pub(crate) fn strip_ansi(line: &str) -> Cow<'_, str> {
    if !line.contains('\x1b') {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters and intermediates, then one final byte in `@`..=`~`.
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC `\`.
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\x07' {
                        break;
                    }
                    if c == '\x1b' {
                        chars.next_if_eq(&'\\');
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests;
