//! Drawing an [`App`] into a frame. Everything is laid out from the frame's size on each
//! draw, so a resize needs nothing but a redraw.

use std::borrow::Cow;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Block, Cell, Clear, Gauge, Paragraph, Row, Sparkline, Table, Wrap};

use super::app::{App, Mode, Notice, StopTarget};
use super::pager::{Pager, match_ranges};
use super::text;
use crate::top::model::{
    ClusterView, Connection, EventRow, LogTail, PodRow, Progress, RunDetail, RunRow, StepPoint,
};

/// The smallest terminal the view is drawn in; below it, one line says so.
pub const MIN_WIDTH: u16 = 60;
pub const MIN_HEIGHT: u16 = 15;

/// From this width, events and progress sit side by side.
const WIDE: u16 = 120;
/// The progress panel beside the log: a border, the gauge, three lines of numbers, three
/// sparklines under them.
const PROGRESS_HEIGHT: u16 = 9;
/// The progress panel across the screen: the sparklines beside the numbers.
const PROGRESS_HEIGHT_STACKED: u16 = 6;
const PROGRESS_WIDTH: u16 = 44;

/// Styles, with colours only where allowed (`NO_COLOR`: bold, dim and reversed only).
#[derive(Debug, Clone, Copy)]
struct Theme {
    color: bool,
}

impl Theme {
    fn with_color(self, color: Color, fallback: Modifier) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new().add_modifier(fallback)
        }
    }
    fn alert(self) -> Style {
        self.with_color(Color::Red, Modifier::BOLD)
            .add_modifier(Modifier::BOLD)
    }
    fn warning(self) -> Style {
        self.with_color(Color::Yellow, Modifier::BOLD)
    }
    fn ok(self) -> Style {
        self.with_color(Color::Green, Modifier::empty())
    }
    fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }
    fn bold(self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }
    fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }
    fn title(self) -> Style {
        self.with_color(Color::Cyan, Modifier::BOLD)
            .add_modifier(Modifier::BOLD)
    }
    fn search_match(self) -> Style {
        if self.color {
            Style::new().fg(Color::Black).bg(Color::Yellow)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
    fn current_match(self) -> Style {
        self.search_match()
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }
    fn gauge(self) -> Style {
        if self.color {
            Style::new().fg(Color::Green).bg(Color::DarkGray)
        } else {
            Style::new()
        }
    }
    fn block(self, title: impl Into<Line<'static>>) -> Block<'static> {
        Block::bordered().title(title).title_style(self.title())
    }
}

/// Draws the screen: the main view or the pager, then any help, confirmation or notice
/// over it.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        let message = format!(
            "terminal too small: {}x{}, nrl top needs {MIN_WIDTH}x{MIN_HEIGHT}",
            area.width, area.height
        );
        frame.render_widget(Paragraph::new(message), area);
        return;
    }
    let theme = Theme { color: app.color() };
    match app.mode() {
        Mode::Pager(pager) => draw_pager(frame, area, pager, theme),
        // Until the first view (a help or a notice may already be up).
        _ if !app.has_view() => {
            let waiting = Line::from(vec![
                Span::styled("nrl top", theme.title()),
                Span::raw("  connecting to the cluster…"),
            ]);
            frame.render_widget(Paragraph::new(waiting), area);
        }
        Mode::Main | Mode::Help | Mode::Confirm(_) => draw_main(frame, area, app, theme),
    }
    match app.mode() {
        Mode::Help => draw_help(frame, area, theme),
        Mode::Confirm(target) => draw_confirm(frame, area, target, theme),
        Mode::Main | Mode::Pager(_) => {}
    }
    if let Some(notice) = app.notice() {
        draw_notice(frame, area, notice, theme);
    }
}

fn draw_main(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let runs = app.view().runs.len() as u16;
    // The runs take what they need, up to a third of the screen.
    let runs_height = (runs.max(1) + 3).min((area.height / 3).max(5));
    let [header, runs_area, detail, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(runs_height),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, header, app, theme);
    draw_runs(frame, runs_area, app, theme);
    match &app.view().selected {
        Some(run) => draw_detail(frame, detail, run, app, theme),
        None => {
            let why = if app.view().runs.is_empty() {
                "no runs in this namespace"
            } else {
                "no run selected"
            };
            frame.render_widget(Paragraph::new(why).style(theme.dim()), detail);
        }
    }
    let keys = "j/k select  enter log  d diagnose  p dashboard  s stop  ? help  q quit";
    frame.render_widget(Paragraph::new(keys).style(theme.dim()), footer);
}

fn draw_header(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let view = app.view();
    let mut spans = vec![
        Span::styled("nrl top", theme.title()),
        Span::raw("  context "),
        Span::styled(text::cell(&view.context).into_owned(), theme.bold()),
        Span::raw("  ns "),
        Span::styled(text::cell(&view.namespace).into_owned(), theme.bold()),
        Span::raw("  "),
        match view.user.as_deref() {
            Some(user) => Span::styled(format!("user {}", text::cell(user)), theme.bold()),
            None => Span::styled("all users", theme.bold()),
        },
        Span::raw("  "),
    ];
    match &view.connection {
        Connection::Live => spans.push(Span::styled("live", theme.ok())),
        Connection::Reconnecting { watches, error } => spans.push(Span::styled(
            format!(
                "reconnecting… ({}: {})",
                watches.join(", "),
                crate::terminal_text::first_line(error)
            ),
            theme.warning(),
        )),
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn run_style(run: &RunRow, theme: Theme) -> Style {
    let mut style = Style::new();
    if run.finished {
        style = style.patch(theme.dim());
    }
    if run.alert {
        style = style.patch(theme.alert());
    }
    style
}

fn draw_runs(frame: &mut Frame, area: Rect, app: &App, theme: Theme) {
    let runs = &app.view().runs;
    let block = theme.block(format!(" runs ({}) ", runs.len()));
    if runs.is_empty() {
        frame.render_widget(
            Paragraph::new("no runs").style(theme.dim()).block(block),
            area,
        );
        return;
    }
    let visible = usize::from(area.height.saturating_sub(3)).max(1);
    let selected = app.selected_index().unwrap_or(0);
    // Scroll just enough to keep the selection on screen.
    let offset = (selected + 1).saturating_sub(visible);
    let rows = runs
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
        .map(|(i, run)| {
            let mut style = run_style(run, theme);
            if i == selected {
                style = style.patch(theme.selected());
            }
            Row::new(vec![
                Cell::from(if i == selected { "›" } else { " " }),
                Cell::from(text::cell(&run.name).into_owned()),
                Cell::from(run.kind.as_str()),
                Cell::from(text::cell(run.owner.as_deref().unwrap_or("-")).into_owned()),
                Cell::from(text::cell(&run.state).into_owned()),
                Cell::from(text::age(run.created.as_deref(), &run.age, app.now())),
                Cell::from(
                    run.wandb
                        .as_deref()
                        .map(|u| text::cell(u.trim_start_matches("https://")).into_owned())
                        .unwrap_or_default(),
                ),
            ])
            .style(style)
        });
    let width = |f: fn(&RunRow) -> usize, min: usize, max: usize| {
        Constraint::Length(runs.iter().map(f).max().unwrap_or(0).clamp(min, max) as u16)
    };
    let widths = [
        Constraint::Length(1),
        width(|r| r.name.chars().count(), 4, 40),
        Constraint::Length(10),
        width(
            |r| r.owner.as_deref().map_or(1, |o| o.chars().count()),
            5,
            16,
        ),
        width(|r| r.state.chars().count(), 5, 28),
        Constraint::Length(4),
        Constraint::Fill(1),
    ];
    let header = Row::new(["", "NAME", "KIND", "OWNER", "STATE", "AGE", "W&B"]).style(theme.bold());
    frame.render_widget(Table::new(rows, widths).header(header).block(block), area);
}

/// Heights for sections in screen order from `total` rows, each wanting `(min, want)`:
/// first each one's minimum, in `priority` order (a section whose minimum no longer fits
/// is left out), then each grown towards what it wants, in the same order; the last
/// section in screen order takes what is left.
fn allot<const N: usize>(total: u16, wants: [(u16, u16); N], priority: &[usize]) -> [u16; N] {
    let mut heights = [0; N];
    let mut left = total;
    for &i in priority {
        let (min, _) = wants[i];
        if min <= left {
            heights[i] = min;
            left -= min;
        }
    }
    for &i in priority {
        let (_, want) = wants[i];
        if heights[i] > 0 {
            let grow = want.saturating_sub(heights[i]).min(left);
            heights[i] += grow;
            left -= grow;
        }
    }
    if let Some(last) = heights.last_mut()
        && *last > 0
    {
        *last += left;
    }
    heights
}

fn draw_detail(frame: &mut Frame, area: Rect, run: &RunDetail, app: &App, theme: Theme) {
    let pod_lines: usize = run.clusters.iter().map(|c| 1 + c.pods.len()).sum();
    let pods = (4, pod_lines.max(1) as u16 + 3);
    let events = (4, (run.events.len().max(1) as u16 + 3).min(8));
    let has_progress = run.progress != Progress::default();
    let wandb = app
        .view()
        .runs
        .iter()
        .find(|r| r.name == run.name && r.kind == run.kind)
        .and_then(|r| r.wandb.as_deref());
    if area.width >= WIDE {
        // Progress beside the log: events keep the width their messages need.
        let bottom = (PROGRESS_HEIGHT, PROGRESS_HEIGHT);
        let heights = allot(area.height, [pods, events, bottom], &[0, 2, 1]);
        let [pods_area, events_area, bottom_area] = Layout::vertical(lengths(heights)).areas(area);
        // Runs without training lines (a Gym run, a job not started) give the log the width.
        let progress_width = if has_progress { PROGRESS_WIDTH } else { 0 };
        let [log, progress] =
            Layout::horizontal([Constraint::Fill(1), Constraint::Length(progress_width)])
                .areas(bottom_area);
        draw_pods(frame, pods_area, run, theme);
        draw_events(frame, events_area, &run.events, app, theme);
        draw_log(frame, log, &run.log, theme);
        draw_progress(frame, progress, &run.progress, wandb, theme);
    } else {
        // Stacked: a training run's progress before its events; a pending one's events
        // get the room.
        let progress = if has_progress {
            (3, PROGRESS_HEIGHT_STACKED)
        } else {
            (0, 0)
        };
        let log = (3, 3);
        let heights = allot(area.height, [pods, events, progress, log], &[0, 2, 3, 1]);
        let [pods_area, events_area, progress_area, log_area] =
            Layout::vertical(lengths(heights)).areas(area);
        draw_pods(frame, pods_area, run, theme);
        draw_events(frame, events_area, &run.events, app, theme);
        draw_progress(frame, progress_area, &run.progress, wandb, theme);
        draw_log(frame, log_area, &run.log, theme);
    }
}

/// Heights as layout constraints (0 for a section left out).
fn lengths<const N: usize>(heights: [u16; N]) -> [Constraint; N] {
    heights.map(Constraint::Length)
}

/// `text` cut from the left to `width` characters, keeping its end (`…q9w8e`): names of
/// one run's objects share their beginning.
fn keep_end(text: &str, width: usize) -> Cow<'_, str> {
    let count = text.chars().count();
    if count <= width {
        return Cow::Borrowed(text);
    }
    if width == 0 {
        return Cow::Borrowed("");
    }
    let tail: String = text.chars().skip(count - (width - 1)).collect();
    Cow::Owned(format!("…{tail}"))
}

/// A column as wide as its widest value (`min`..=`max`).
fn fit(values: impl Iterator<Item = usize>, min: usize, max: usize) -> u16 {
    values.max().unwrap_or(0).clamp(min, max) as u16
}

fn pod_status_style(phase: &str, reason: Option<&str>, theme: Theme) -> Style {
    match (phase, reason) {
        ("Failed", _) | (_, Some(_)) => theme.alert(),
        ("Running", None) => theme.ok(),
        ("Succeeded", None) => theme.dim(),
        _ => theme.warning(),
    }
}

fn draw_pods(frame: &mut Frame, area: Rect, run: &RunDetail, theme: Theme) {
    let block = theme.block(format!(" {} · pods ", text::cell(&run.name)));
    if run.clusters.is_empty() {
        frame.render_widget(
            Paragraph::new("no clusters yet")
                .style(theme.dim())
                .block(block),
            area,
        );
        return;
    }
    let pods = || run.clusters.iter().flat_map(|c| c.pods.iter());
    let status = |pod: &PodRow| match &pod.reason {
        Some(reason) => format!("{} ({})", pod.phase, reason),
        None => pod.phase.clone(),
    };
    let widths = [
        fit(pods().map(|p| p.group.chars().count() + 2), 7, 20),
        fit(
            pods()
                .map(|p| status(p).chars().count())
                .chain(run.clusters.iter().map(|c| c.state.chars().count())),
            6,
            32,
        ),
        5,
        8,
        fit(
            pods().map(|p| p.node.as_deref().map_or(1, |n| n.chars().count())),
            4,
            24,
        ),
        4,
    ];
    // The name column takes the rest (a space between columns, the borders).
    let fixed: u16 = widths.iter().sum::<u16>() + widths.len() as u16 + 2;
    let name_width = usize::from(area.width.saturating_sub(fixed));
    let mut rows = Vec::new();
    for cluster in &run.clusters {
        rows.push(cluster_row(cluster, name_width, theme));
        for pod in &cluster.pods {
            let restarts = Cell::from(pod.restarts.to_string()).style(if pod.restarts > 0 {
                theme.warning()
            } else {
                Style::new()
            });
            rows.push(Row::new(vec![
                Cell::from(format!("  {}", text::cell(&pod.group))),
                Cell::from(text::cell(&status(pod)).into_owned()).style(pod_status_style(
                    &pod.phase,
                    pod.reason.as_deref(),
                    theme,
                )),
                Cell::from(text::cell(&pod.ready).into_owned()),
                restarts,
                Cell::from(text::cell(pod.node.as_deref().unwrap_or("-")).into_owned()),
                Cell::from(pod.gpus.to_string()),
                Cell::from(keep_end(&text::cell(&pod.name), name_width).into_owned()),
            ]));
        }
    }
    let widths = widths
        .into_iter()
        .map(Constraint::Length)
        .chain([Constraint::Fill(1)]);
    let header = Row::new([
        "GROUP", "STATUS", "READY", "RESTARTS", "NODE", "GPUS", "NAME",
    ])
    .style(theme.bold());
    frame.render_widget(Table::new(rows, widths).header(header).block(block), area);
}

fn cluster_row(cluster: &ClusterView, name_width: usize, theme: Theme) -> Row<'static> {
    let name = match &cluster.role {
        Some(role) => format!("{} ({})", cluster.name, role),
        None => cluster.name.clone(),
    };
    let name = keep_end(&text::cell(&name), name_width).into_owned();
    Row::new(vec![
        Cell::from("cluster"),
        Cell::from(text::cell(&cluster.state).into_owned()),
        Cell::from(""),
        Cell::from(""),
        Cell::from(""),
        Cell::from(""),
        Cell::from(name),
    ])
    .style(theme.bold())
}

fn draw_events(frame: &mut Frame, area: Rect, events: &[EventRow], app: &App, theme: Theme) {
    let block = theme.block(" events ");
    if events.is_empty() {
        frame.render_widget(
            Paragraph::new("no events").style(theme.dim()).block(block),
            area,
        );
        return;
    }
    let object_width = fit(
        events.iter().map(|e| e.object.chars().count()),
        6,
        usize::from(area.width / 4).clamp(12, 40),
    );
    let rows = events.iter().map(|event| {
        let mut message = crate::terminal_text::first_line(&event.message);
        if event.count > 1 {
            message.push_str(&format!(" (×{})", event.count));
        }
        let style = if event.kind == "Warning" {
            theme.warning()
        } else {
            Style::new()
        };
        Row::new(vec![
            Cell::from(text::age(event.last_seen.as_deref(), &event.age, app.now())),
            Cell::from(text::cell(&event.kind).into_owned()),
            Cell::from(text::cell(&event.reason).into_owned()),
            Cell::from(
                keep_end(&text::cell(&event.object), usize::from(object_width)).into_owned(),
            ),
            Cell::from(message),
        ])
        .style(style)
    });
    let widths = [
        Constraint::Length(4),
        Constraint::Length(7),
        Constraint::Length(fit(events.iter().map(|e| e.reason.chars().count()), 6, 20)),
        Constraint::Length(object_width),
        Constraint::Fill(1),
    ];
    let header = Row::new(["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"]).style(theme.bold());
    frame.render_widget(Table::new(rows, widths).header(header).block(block), area);
}

fn number(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

fn draw_progress(
    frame: &mut Frame,
    area: Rect,
    progress: &Progress,
    wandb: Option<&str>,
    theme: Theme,
) {
    let mut block = theme.block(" progress ");
    if let Some(url) = wandb {
        let url = text::cell(url.trim_start_matches("https://")).into_owned();
        block = block.title_bottom(Line::from(format!(" {url} ")).style(theme.dim()));
    }
    if area.is_empty() {
        return;
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [gauge, rest] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(inner);
    draw_step_gauge(frame, gauge, progress, theme);
    // Wide enough: the sparklines beside the numbers (the stacked layout's short panel);
    // otherwise under them, taller where there are rows (beside the log).
    let (numbers, sparks) = if inner.width >= NUMBERS_WIDTH + 20 {
        let [numbers, sparks] =
            Layout::horizontal([Constraint::Length(NUMBERS_WIDTH), Constraint::Fill(1)])
                .areas(rest);
        (numbers, sparks)
    } else {
        let [numbers, sparks] =
            Layout::vertical([Constraint::Length(3), Constraint::Min(0)]).areas(rest);
        (numbers, sparks)
    };
    frame.render_widget(Paragraph::new(progress_numbers(progress, theme)), numbers);
    draw_sparklines(frame, sparks, &progress.history, theme);
}

/// The width of the progress panel's numbers (`tput 700.95 tokens/s/gpu   step 93.31s`).
const NUMBERS_WIDTH: u16 = 40;

fn draw_step_gauge(frame: &mut Frame, area: Rect, progress: &Progress, theme: Theme) {
    let mut label = match (progress.step, progress.max_steps) {
        (Some(n), Some(m)) => format!("step {n}/{m}"),
        (Some(n), None) => format!("step {n}"),
        _ => "step -".to_string(),
    };
    if let Some(epoch) = progress.epoch {
        label.push_str(&format!(" · epoch {epoch}"));
        if let Some(max) = progress.max_epochs {
            label.push_str(&format!("/{max}"));
        }
    }
    let ratio = match (progress.step, progress.max_steps) {
        (Some(n), Some(m)) if m > 0 => Some((n as f64 / m as f64).clamp(0.0, 1.0)),
        _ => None,
    };
    let label_width = Line::from(label.as_str()).width() as u16 + 1;
    let [label_area, gauge_area] =
        Layout::horizontal([Constraint::Length(label_width), Constraint::Fill(1)]).areas(area);
    frame.render_widget(Paragraph::new(label).style(theme.bold()), label_area);
    // Without an `M` there is nothing to fill.
    if let Some(ratio) = ratio {
        frame.render_widget(
            Gauge::default()
                .ratio(ratio)
                .use_unicode(true)
                .gauge_style(theme.gauge()),
            gauge_area,
        );
    }
}

fn progress_numbers(progress: &Progress, theme: Theme) -> Vec<Line<'static>> {
    let value = |v: String| Span::styled(v, theme.bold());
    let throughput = match (&progress.throughput, &progress.throughput_unit) {
        (Some(v), Some(unit)) => format!("{v:.2} {}", text::cell(unit)),
        (v, _) => number(*v, 2),
    };
    let prompts = match (progress.prompts_done, progress.prompts_total) {
        (Some(done), Some(total)) => format!("{done}/{total}"),
        (Some(done), None) => done.to_string(),
        _ => "-".to_string(),
    };
    vec![
        Line::from(vec![
            Span::raw("loss "),
            value(number(progress.loss, 4)),
            Span::raw("   reward "),
            value(number(progress.reward, 4)),
        ]),
        Line::from(vec![
            Span::raw("tput "),
            value(throughput),
            Span::raw("   step "),
            value(
                progress
                    .step_time
                    .map_or("-".into(), |t| format!("{t:.2}s")),
            ),
        ]),
        Line::from(vec![
            Span::raw("prompts "),
            value(prompts),
            Span::raw("   val acc "),
            value(number(progress.validation_accuracy, 4)),
        ]),
    ]
}

/// One number of a step.
type Metric = fn(&StepPoint) -> Option<f64>;

/// Loss, reward and throughput over the last steps, one series under the other.
fn draw_sparklines(frame: &mut Frame, area: Rect, history: &[StepPoint], theme: Theme) {
    let series_height = (area.height / 3).clamp(1, 3);
    let rows = Layout::vertical([Constraint::Length(series_height); 3]).split(area);
    let series: [(&str, Metric); 3] = [
        ("loss", |p| p.loss),
        ("reward", |p| p.reward),
        ("tput", |p| p.throughput),
    ];
    for ((name, pick), row) in series.into_iter().zip(rows.iter()) {
        if row.height == 0 {
            continue;
        }
        let [label, spark] =
            Layout::horizontal([Constraint::Length(7), Constraint::Fill(1)]).areas(*row);
        // The label on the bars' baseline.
        let label = Rect {
            y: label.bottom() - 1,
            height: 1,
            ..label
        };
        frame.render_widget(Paragraph::new(name).style(theme.dim()), label);
        let data = sparkline_data(history, pick, usize::from(spark.width));
        frame.render_widget(
            Sparkline::default()
                .data(data)
                .max(8)
                .absent_value_symbol(" ")
                .style(theme.ok()),
            spark,
        );
    }
}

/// The last `width` points of one series, scaled to the eight bar heights (the smallest
/// value still shows, as `▁`); steps without the value (or with a NaN) are gaps.
pub(crate) fn sparkline_data(
    history: &[StepPoint],
    pick: Metric,
    width: usize,
) -> Vec<Option<u64>> {
    let start = history.len().saturating_sub(width);
    let values: Vec<Option<f64>> = history[start..]
        .iter()
        .map(|p| pick(p).filter(|v| v.is_finite()))
        .collect();
    let (min, max) = values
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    values
        .into_iter()
        .map(|v| {
            v.map(|v| {
                if max > min {
                    1 + ((v - min) / (max - min) * 7.0).round() as u64
                } else {
                    4
                }
            })
        })
        .collect()
}

fn draw_log(frame: &mut Frame, area: Rect, log: &LogTail, theme: Theme) {
    let title = match &log.source {
        Some(source) => format!(" log · {} ", text::cell(source)),
        None => " log ".to_string(),
    };
    let mut block = theme.block(title);
    let height = usize::from(area.height.saturating_sub(2));
    if log.lines.is_empty() {
        let why = log.note.as_deref().unwrap_or("no log yet");
        frame.render_widget(
            Paragraph::new(text::cell(why).into_owned())
                .style(theme.dim())
                .wrap(Wrap { trim: false })
                .block(block),
            area,
        );
        return;
    }
    if let Some(note) = &log.note {
        block = block
            .title_bottom(Line::from(format!(" {} ", text::cell(note))).style(theme.warning()));
    }
    let start = log.lines.len().saturating_sub(height);
    let lines: Vec<Line> = log.lines[start..]
        .iter()
        .map(|l| Line::from(text::log_line(l).into_owned()))
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn draw_pager(frame: &mut Frame, area: Rect, pager: &Pager, theme: Theme) {
    let [title, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let loading = if pager.loaded() {
        ""
    } else {
        " (loading the whole log…)"
    };
    frame.render_widget(
        Paragraph::new(format!(
            " {} {} · log{loading}",
            pager.kind().as_str(),
            text::cell(pager.name())
        ))
        .style(theme.selected()),
        title,
    );

    let height = usize::from(body.height);
    let top = pager.top(height);
    let current_line = pager.current_match().map(|(line, _, _)| line);
    let lines: Vec<Line> = pager
        .lines()
        .iter()
        .enumerate()
        .skip(top)
        .take(height)
        .map(|(i, line)| match pager.query() {
            Some(query) => highlighted(
                line,
                query,
                if current_line == Some(i) {
                    theme.current_match()
                } else {
                    theme.search_match()
                },
            ),
            None => Line::from(line.as_str()),
        })
        .collect();
    let left = u16::try_from(pager.left()).unwrap_or(u16::MAX);
    frame.render_widget(Paragraph::new(lines).scroll((0, left)), body);

    let total = pager.lines().len();
    let position = if total == 0 {
        "no lines".to_string()
    } else {
        let last = (top + height).min(total);
        let end = if pager.at_end(height) { " (END)" } else { "" };
        let column = if pager.left() > 0 {
            format!(", from column {}", pager.left() + 1)
        } else {
            String::new()
        };
        format!("lines {}-{last} of {total}{column}{end}", top + 1)
    };
    let mut spans = vec![Span::raw(format!(" {position}"))];
    if let Some(input) = pager.input() {
        spans = vec![Span::styled(format!("/{input}▏"), theme.bold())];
    } else {
        if let Some((_, n, of)) = pager.current_match()
            && let Some(query) = pager.query()
        {
            spans.push(Span::raw(format!("  /{query}: match {n} of {of}")));
        }
        if let Some(message) = pager.message() {
            spans.push(Span::styled(format!("  {message}"), theme.warning()));
        }
        spans.push(Span::styled(
            "  q back  / search  n/N next/prev  g/G top/end",
            theme.dim(),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), status);
}

/// A pager line with `query`'s matches in `style`.
fn highlighted<'a>(line: &'a str, query: &str, style: Style) -> Line<'a> {
    let mut spans = Vec::new();
    let mut at = 0;
    for (start, end) in match_ranges(line, query) {
        if start > at {
            spans.push(Span::raw(&line[at..start]));
        }
        spans.push(Span::styled(&line[start..end], style));
        at = end;
    }
    if at < line.len() {
        spans.push(Span::raw(&line[at..]));
    }
    Line::from(spans)
}

/// A box of `width`×`height` in the middle of `area` (cut to fit).
fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}

const HELP: &[(&str, &str)] = &[
    ("runs", ""),
    ("↑ k  ↓ j", "select a run"),
    ("g  G", "first, last run"),
    ("Enter  l", "open the run's whole log"),
    ("d", "diagnose the run"),
    ("p", "open the run's Ray dashboard (port-forward)"),
    ("s", "stop the run (asks first)"),
    ("?", "this help"),
    ("q  Ctrl-C", "quit"),
    ("", ""),
    ("log", ""),
    ("↑ k  ↓ j", "a line up, down"),
    ("PgUp b  PgDn Space", "a page up, down"),
    ("← h  → l", "scroll sideways"),
    ("g Home  G End", "first line, last line (follows)"),
    ("/", "search (capitals: exact case)"),
    ("n  N", "next, previous match"),
    ("q  Esc", "back to the runs"),
];

fn draw_help(frame: &mut Frame, area: Rect, theme: Theme) {
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(keys, what)| {
            if what.is_empty() {
                Line::styled(*keys, theme.title())
            } else {
                Line::from(vec![
                    Span::styled(format!("  {keys:<20}"), theme.bold()),
                    Span::raw(*what),
                ])
            }
        })
        .collect();
    let width = lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 4;
    let height = lines.len() as u16 + 2;
    let rect = centered(area, width, height);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(lines).block(
            theme
                .block(" keys ")
                .title_bottom(Line::from(" any key closes ").style(theme.dim())),
        ),
        rect,
    );
}

fn draw_confirm(frame: &mut Frame, area: Rect, target: &StopTarget, theme: Theme) {
    let question = format!(
        "Stop {} {} in namespace {}? y/N",
        target.kind.as_str(),
        text::cell(&target.name),
        text::cell(&target.namespace)
    );
    let width = Line::from(question.as_str()).width() as u16 + 4;
    let rect = centered(area, width, 3);
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(question)
            .style(theme.bold())
            .wrap(Wrap { trim: true })
            .block(
                Block::bordered()
                    .title(" stop ")
                    .border_style(theme.alert())
                    .title_style(theme.alert()),
            ),
        rect,
    );
}

fn draw_notice(frame: &mut Frame, area: Rect, notice: &Notice, theme: Theme) {
    let body: Cow<str> = crate::terminal_text::escape_keeping_lines(&notice.body);
    let body = body.replace('\t', "    ");
    let max_width = area.width.saturating_sub(4).min(100);
    let widest = body
        .lines()
        .map(|l| Line::from(l).width())
        .chain([Line::from(notice.title.as_str()).width() + 4, 20])
        .max()
        .unwrap_or(20) as u16;
    let width = (widest + 4).min(max_width);
    let inner = usize::from(width.saturating_sub(2)).max(1);
    // Lines once wrapped to the box (an estimate: word wrapping may take one more).
    let wrapped: usize = body
        .lines()
        .map(|l| Line::from(l).width().div_ceil(inner).max(1))
        .sum();
    let height = (wrapped as u16 + 2).min(area.height.saturating_sub(2));
    let rect = centered(area, width, height);
    let border = if notice.error {
        theme.alert()
    } else {
        theme.title()
    };
    frame.render_widget(Clear, rect);
    frame.render_widget(
        Paragraph::new(Text::from(body))
            .wrap(Wrap { trim: false })
            .block(
                Block::bordered()
                    .title(format!(" {} ", text::cell(&notice.title)))
                    .title_bottom(Line::from(" any key closes ").style(theme.dim()))
                    .border_style(border)
                    .title_style(border),
            ),
        rect,
    );
}
