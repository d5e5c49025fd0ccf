//! The screen as text (colours off) for a scripted RayJob, and what keys do.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::text::Span;

use super::*;
use crate::top::model::{
    Action, ClusterView, Connection, EventRow, LogTail, PodRow, Progress, RunDetail, RunKind,
    RunRow, ScreenUpdate, StepPoint, TopView,
};

/// Hand-built views of `alice-grpo`, a RayJob, as the session would send them.
mod views {
    use super::*;

    pub const CLUSTER: &str = "alice-grpo-raycluster-x7k2p";

    pub fn run_row(name: &str, state: &str, age: &str) -> RunRow {
        RunRow {
            name: name.to_string(),
            kind: RunKind::RayJob,
            owner: Some("alice".to_string()),
            state: state.to_string(),
            finished: false,
            alert: false,
            created: None,
            age: age.to_string(),
            wandb: None,
        }
    }

    /// An older run that ended: drawn dimmed.
    pub fn finished_run() -> RunRow {
        RunRow {
            finished: true,
            ..run_row("alice-sft", "Complete/SUCCEEDED", "2d")
        }
    }

    pub fn pod(suffix: &str, group: &str, phase: &str, reason: Option<&str>) -> PodRow {
        let running = phase == "Running";
        PodRow {
            name: format!("{CLUSTER}-{suffix}"),
            group: group.to_string(),
            phase: phase.to_string(),
            reason: reason.map(str::to_string),
            ready: if running { "1/1" } else { "0/1" }.to_string(),
            restarts: 0,
            node: running.then(|| format!("gpu-node-{}", suffix.len() % 3 + 1)),
            gpus: if group == "head" { 0 } else { 8 },
        }
    }

    pub fn event(kind: &str, reason: &str, object: &str, message: &str, age: &str) -> EventRow {
        EventRow {
            object: object.to_string(),
            kind: kind.to_string(),
            reason: reason.to_string(),
            message: message.to_string(),
            count: 1,
            last_seen: None,
            age: age.to_string(),
        }
    }

    pub fn view(runs: Vec<RunRow>, selected: RunDetail) -> TopView {
        TopView {
            context: "kind-dev".to_string(),
            namespace: "team-a".to_string(),
            user: Some("alice".to_string()),
            connection: Connection::Live,
            runs,
            selected: Some(selected),
        }
    }

    /// (a) Submitted: the head runs, the worker cannot be scheduled.
    pub fn initializing() -> TopView {
        let worker = format!("{CLUSTER}-gpu-group-worker-q9w8e");
        let mut failed = event(
            "Warning",
            "FailedScheduling",
            &format!("Pod/{worker}"),
            "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.",
            "40s",
        );
        failed.count = 3;
        let mut run = run_row("alice-grpo", "Initializing", "2m");
        run.alert = true;
        view(
            vec![run, finished_run()],
            RunDetail {
                name: "alice-grpo".to_string(),
                kind: RunKind::RayJob,
                clusters: vec![ClusterView {
                    name: CLUSTER.to_string(),
                    role: None,
                    state: "-".to_string(),
                    pods: vec![
                        pod("head-5tzkq", "head", "Running", None),
                        pod(
                            "gpu-group-worker-q9w8e",
                            "gpu-group",
                            "Pending",
                            Some("Unschedulable"),
                        ),
                    ],
                }],
                events: vec![
                    failed,
                    event(
                        "Normal",
                        "Started",
                        &format!("Pod/{CLUSTER}-head-5tzkq"),
                        "Started container ray-head",
                        "2m",
                    ),
                    event(
                        "Normal",
                        "Created",
                        "RayJob/alice-grpo",
                        "Created RayCluster team-a/alice-grpo-raycluster-x7k2p",
                        "2m",
                    ),
                ],
                log: LogTail {
                    lines: Vec::new(),
                    source: None,
                    note: Some("no driver yet: the job starts once the cluster is ready".into()),
                },
                progress: Progress::default(),
            },
        )
    }

    /// NeMo-RL's lines around step 3 of a GRPO run (vLLM's bar arrives through Ray).
    pub fn grpo_log() -> Vec<String> {
        let mut lines = Vec::new();
        for step in 1..=3 {
            lines.extend([
                String::new(),
                format!("{0} Step {step}/10 {0}", "=".repeat(25)),
                "▶ Preparing batch...".into(),
                "▶ Generating responses for batch of size 64...".into(),
                format!(
                    "\x1b[36m(VllmGenerationWorker pid=2816431)\x1b[0m Processed prompts: 100%|██████████| 64/64 [00:3{step}<00:00,  1.68it/s]"
                ),
                "▶ Processing rewards...,".into(),
                "▶ Training policy...".into(),
                String::new(),
                "📊 Training Results:".into(),
                format!("  • Loss: -0.01{step}2"),
                format!("  • Avg Reward: 0.{}785", 3 + step),
                String::new(),
                "⏱️  Timing:".into(),
                format!("  • Total step time: 9{step}.31s"),
            ]);
        }
        lines.push(format!("{0} Step 4/10 {0}", "=".repeat(25)));
        lines.push("▶ Preparing batch...".into());
        lines
    }

    pub fn progress() -> Progress {
        let point = |step: u64, loss: f64, reward: f64, throughput: f64| StepPoint {
            step,
            loss: Some(loss),
            reward: Some(reward),
            throughput: Some(throughput),
            step_time: Some(90.0 + step as f64),
        };
        Progress {
            step: Some(3),
            max_steps: Some(10),
            epoch: Some(1),
            max_epochs: Some(1),
            loss: Some(-0.0132),
            reward: Some(0.6785),
            throughput: Some(700.95),
            throughput_unit: Some("tokens/s/gpu".into()),
            step_time: Some(93.31),
            prompts_done: Some(29),
            prompts_total: Some(64),
            validation_accuracy: Some(0.5312),
            history: vec![
                point(1, -0.0112, 0.4785, 650.0),
                point(2, -0.0122, 0.5785, 690.5),
                point(3, -0.0132, 0.6785, 700.95),
            ],
        }
    }

    /// (b) Running: both pods up, the driver log at step 3.
    pub fn running() -> TopView {
        let mut view = initializing();
        let mut run = run_row("alice-grpo", "Running/RUNNING", "14m");
        run.wandb = Some("https://wandb.ai/team-a/nemo-rl/runs/k3j9x2".into());
        view.runs[0] = run;
        let detail = view.selected.as_mut().expect("a selected run");
        detail.clusters[0].state = "ready".into();
        detail.clusters[0].pods[1] = pod("gpu-group-worker-q9w8e", "gpu-group", "Running", None);
        detail.events.insert(
            0,
            event(
                "Normal",
                "Scheduled",
                &format!("Pod/{CLUSTER}-gpu-group-worker-q9w8e"),
                "Successfully assigned team-a/alice-grpo-raycluster-x7k2p-gpu-group-worker-q9w8e to gpu-node-2",
                "11m",
            ),
        );
        detail.log = LogTail {
            lines: grpo_log(),
            source: Some("driver log of raysubmit_7xKq2".into()),
            note: None,
        };
        detail.progress = progress();
        view
    }
}

/// The screen as plain text lines, trailing spaces trimmed.
/// The screen `app` draws on a `width`×`height` terminal, as plain text lines.
pub(crate) fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal.draw(|frame| draw(frame, app)).expect("draw");
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..height {
        let mut line = String::new();
        // A wide character's cell is followed by a filler cell the terminal skips.
        let mut skip = 0;
        for x in 0..width {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let symbol = buffer[(x, y)].symbol();
            line.push_str(symbol);
            skip = Span::raw(symbol).width().saturating_sub(1);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn press(app: &mut App, keys: &str) -> Vec<Action> {
    keys.chars()
        .filter_map(|c| app.on_key(key(KeyCode::Char(c))))
        .collect()
}

fn app_with(view: TopView) -> App {
    let mut app = App::new(false);
    app.set_size(120, 36);
    assert_eq!(app.on_update(ScreenUpdate::View(Box::new(view))), None);
    app
}

#[test]
fn a_initializing_rayjob_with_an_unschedulable_worker() {
    let app = app_with(views::initializing());
    insta::assert_snapshot!(screen(&app, 120, 36));
}

#[test]
fn b_running_rayjob_with_progress_and_log_tail() {
    let app = app_with(views::running());
    insta::assert_snapshot!(screen(&app, 120, 36));
}

#[test]
fn b_running_rayjob_on_a_narrow_terminal() {
    let app = app_with(views::running());
    insta::assert_snapshot!(screen(&app, 80, 30));
}

#[test]
fn c_pager_with_a_search_match() {
    let mut app = app_with(views::running());
    app.set_size(100, 20);
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        Some(Action::OpenLog {
            name: "alice-grpo".into(),
            kind: RunKind::RayJob
        })
    );
    let mut full = vec!["Starting NeMo-RL GRPO (setup)...".to_string()];
    full.extend(views::grpo_log());
    app.on_update(ScreenUpdate::FullLog {
        name: "alice-grpo".into(),
        lines: full,
    });
    // `g` to the top, then search forward: the first match is step 1's loss.
    assert!(press(&mut app, "g/loss").is_empty());
    assert_eq!(app.on_key(key(KeyCode::Enter)), None);
    insta::assert_snapshot!(screen(&app, 100, 20));
}

#[test]
fn d_confirm_stop() {
    let mut app = app_with(views::running());
    assert!(press(&mut app, "s").is_empty());
    insta::assert_snapshot!(screen(&app, 120, 36));
}

#[test]
fn e_help() {
    let mut app = app_with(views::running());
    assert!(press(&mut app, "?").is_empty());
    insta::assert_snapshot!(screen(&app, 120, 36));
}

#[test]
fn before_the_first_view_the_screen_says_it_is_connecting() {
    let mut app = App::new(false);
    assert_eq!(
        screen(&app, 60, 15).lines().next(),
        Some("nrl top  connecting to the cluster…")
    );
    // A failure to connect arrives as a notice, and shows.
    app.on_update(ScreenUpdate::Notice {
        title: "cannot watch team-a".into(),
        body: "pods is forbidden".into(),
        error: true,
    });
    assert!(screen(&app, 60, 15).contains("pods is forbidden"));
}

#[test]
fn f_too_small() {
    let app = app_with(views::running());
    insta::assert_snapshot!(screen(&app, 59, 14));
}

#[test]
fn g_notice_over_a_reconnecting_view() {
    let mut view = views::running();
    view.connection = Connection::Reconnecting {
        watches: vec!["pods".into(), "events".into()],
        error: "connection refused (os error 111)".into(),
    };
    let mut app = app_with(view);
    app.on_update(ScreenUpdate::Notice {
        title: "dashboard".into(),
        body: "Ray dashboard of alice-grpo: http://127.0.0.1:8265\n(port-forward stays open while nrl top runs)".into(),
        error: false,
    });
    insta::assert_snapshot!(screen(&app, 120, 36));
    // Any key dismisses it and does nothing else.
    assert_eq!(app.on_key(key(KeyCode::Char('q'))), None);
    assert_eq!(app.notice(), None);
}

fn three_runs() -> App {
    let mut view = views::running();
    view.runs = vec![
        views::run_row("alice-grpo", "Running/RUNNING", "14m"),
        views::run_row("alice-dpo", "Running/RUNNING", "1h"),
        views::finished_run(),
    ];
    app_with(view)
}

fn select(name: &str) -> Action {
    Action::Select {
        name: name.into(),
        kind: RunKind::RayJob,
    }
}

#[test]
fn moving_the_selection_emits_select_only_when_it_changes() {
    let mut app = three_runs();
    assert_eq!(app.selected_index(), Some(0));
    assert_eq!(app.on_key(key(KeyCode::Up)), None);
    assert_eq!(app.on_key(key(KeyCode::Down)), Some(select("alice-dpo")));
    assert_eq!(press(&mut app, "j"), vec![select("alice-sft")]);
    assert_eq!(press(&mut app, "j"), vec![]);
    assert_eq!(press(&mut app, "k"), vec![select("alice-dpo")]);
    assert_eq!(press(&mut app, "g"), vec![select("alice-grpo")]);
    assert_eq!(press(&mut app, "G"), vec![select("alice-sft")]);
    // Releases are not presses.
    let mut release = key(KeyCode::Up);
    release.kind = KeyEventKind::Release;
    assert_eq!(app.on_key(release), None);
    assert_eq!(app.selected_index(), Some(2));
}

#[test]
fn the_selection_follows_its_run_when_rows_move_and_moves_on_when_it_goes() {
    let mut app = three_runs();
    press(&mut app, "j");
    let mut view = app.view().clone();
    // A new run on top: the selection stays on alice-dpo, now row 2.
    view.runs
        .insert(0, views::run_row("alice-new", "Initializing", "1s"));
    assert_eq!(
        app.on_update(ScreenUpdate::View(Box::new(view.clone()))),
        None
    );
    assert_eq!(
        app.selected_run().map(|r| r.name.as_str()),
        Some("alice-dpo")
    );
    // alice-dpo is deleted: its row now holds alice-sft, which is asked for.
    view.runs.remove(2);
    assert_eq!(
        app.on_update(ScreenUpdate::View(Box::new(view))),
        Some(select("alice-sft"))
    );
}

#[test]
fn stop_asks_first_and_only_y_stops() {
    let mut app = three_runs();
    assert_eq!(press(&mut app, "s"), vec![]);
    assert_eq!(
        app.mode(),
        &Mode::Confirm(StopTarget {
            name: "alice-grpo".into(),
            kind: RunKind::RayJob,
            namespace: "team-a".into()
        })
    );
    assert_eq!(
        press(&mut app, "y"),
        vec![Action::Stop {
            name: "alice-grpo".into(),
            kind: RunKind::RayJob
        }]
    );
    assert_eq!(app.mode(), &Mode::Main);

    assert_eq!(press(&mut app, "sn"), vec![]);
    assert_eq!(app.mode(), &Mode::Main);
    // Enter is the default: no.
    assert_eq!(press(&mut app, "s"), vec![]);
    assert_eq!(app.on_key(key(KeyCode::Enter)), None);
    assert_eq!(app.mode(), &Mode::Main);
}

#[test]
fn run_keys_name_the_selected_run() {
    let mut app = three_runs();
    press(&mut app, "j");
    assert_eq!(
        press(&mut app, "dp"),
        vec![
            Action::Diagnose {
                name: "alice-dpo".into(),
                kind: RunKind::RayJob
            },
            Action::Dashboard {
                name: "alice-dpo".into(),
                kind: RunKind::RayJob
            },
        ]
    );
    assert_eq!(
        press(&mut app, "l"),
        vec![Action::OpenLog {
            name: "alice-dpo".into(),
            kind: RunKind::RayJob
        }]
    );
}

#[test]
fn q_and_ctrl_c_quit() {
    let mut app = three_runs();
    assert_eq!(press(&mut app, "q"), vec![Action::Quit]);
    // q in the pager goes back; Ctrl-C quits from anywhere.
    press(&mut app, "l");
    assert_eq!(press(&mut app, "q"), vec![]);
    assert_eq!(app.mode(), &Mode::Main);
    press(&mut app, "l");
    assert_eq!(
        app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        Some(Action::Quit)
    );
    // Help closes on any key, q included, without quitting.
    press(&mut app, "?");
    assert_eq!(press(&mut app, "q"), vec![]);
    assert_eq!(app.mode(), &Mode::Main);
}

fn pager(app: &App) -> &Pager {
    match app.mode() {
        Mode::Pager(pager) => pager,
        other => panic!("not in the pager: {other:?}"),
    }
}

#[test]
fn pager_search_finds_the_next_and_previous_match() {
    let mut app = three_runs();
    app.set_size(80, 12); // 10 lines of log on screen
    press(&mut app, "l");
    let lines: Vec<String> = (0..100)
        .map(|i| {
            if i % 30 == 5 {
                format!("line {i}: Loss spike")
            } else {
                format!("line {i}")
            }
        })
        .collect();
    // Another run's log is not this pager's.
    app.on_update(ScreenUpdate::FullLog {
        name: "alice-dpo".into(),
        lines: vec!["other".into()],
    });
    assert!(!pager(&app).loaded());
    app.on_update(ScreenUpdate::FullLog {
        name: "alice-grpo".into(),
        lines,
    });
    // It opens at the end.
    assert_eq!(pager(&app).top(10), 90);
    press(&mut app, "g/loss");
    assert_eq!(pager(&app).input(), Some("loss"));
    app.on_key(key(KeyCode::Enter));
    assert_eq!(pager(&app).current_match(), Some((5, 1, 4)));
    assert_eq!(pager(&app).top(10), 5);
    press(&mut app, "n");
    assert_eq!(pager(&app).current_match(), Some((35, 2, 4)));
    press(&mut app, "nn");
    assert_eq!(pager(&app).current_match(), Some((95, 4, 4)));
    // The last page holds it: the screen stops at the end.
    assert_eq!(pager(&app).top(10), 90);
    press(&mut app, "n");
    assert_eq!(pager(&app).current_match(), Some((5, 1, 4)));
    assert!(
        pager(&app)
            .message()
            .is_some_and(|m| m.contains("continued at the top"))
    );
    press(&mut app, "N");
    assert_eq!(pager(&app).current_match(), Some((95, 4, 4)));

    // Backspace edits the search; on an empty one it leaves the search.
    press(&mut app, "/x");
    app.on_key(key(KeyCode::Backspace));
    assert_eq!(pager(&app).input(), Some(""));
    app.on_key(key(KeyCode::Backspace));
    assert_eq!(pager(&app).input(), None);
    assert_eq!(pager(&app).current_match(), Some((95, 4, 4)));

    // Capitals search the exact case.
    press(&mut app, "/LOSS");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(pager(&app).current_match(), None);
    assert_eq!(pager(&app).message(), Some("not found: LOSS"));
}

#[test]
fn pager_scrolls_by_line_and_page_and_follows_at_the_end() {
    let mut app = three_runs();
    app.set_size(80, 12);
    press(&mut app, "l");
    app.on_update(ScreenUpdate::FullLog {
        name: "alice-grpo".into(),
        lines: (0..100).map(|i| format!("line {i}")).collect(),
    });
    app.on_key(key(KeyCode::PageUp));
    assert_eq!(pager(&app).top(10), 80);
    app.on_key(key(KeyCode::Up));
    assert_eq!(pager(&app).top(10), 79);
    app.on_key(key(KeyCode::Home));
    assert_eq!(pager(&app).top(10), 0);
    app.on_key(key(KeyCode::PageDown));
    assert_eq!(pager(&app).top(10), 10);
    // Not following: more lines keep the screen where it is.
    app.on_update(ScreenUpdate::FullLog {
        name: "alice-grpo".into(),
        lines: (0..120).map(|i| format!("line {i}")).collect(),
    });
    assert_eq!(pager(&app).top(10), 10);
    app.on_key(key(KeyCode::End));
    assert_eq!(pager(&app).top(10), 110);
    // Following: the end moves with the log.
    app.on_update(ScreenUpdate::FullLog {
        name: "alice-grpo".into(),
        lines: (0..130).map(|i| format!("line {i}")).collect(),
    });
    assert_eq!(pager(&app).top(10), 120);
    assert!(pager(&app).at_end(10));
}

#[test]
fn sparklines_scale_each_series_and_leave_gaps() {
    let history = [
        StepPoint {
            step: 1,
            loss: Some(1.0),
            ..StepPoint::default()
        },
        StepPoint {
            step: 2,
            loss: None,
            ..StepPoint::default()
        },
        StepPoint {
            step: 3,
            loss: Some(f64::NAN),
            ..StepPoint::default()
        },
        StepPoint {
            step: 4,
            loss: Some(3.0),
            ..StepPoint::default()
        },
    ];
    assert_eq!(
        draw::sparkline_data(&history, |p| p.loss, 10),
        vec![Some(1), None, None, Some(8)]
    );
    assert_eq!(draw::sparkline_data(&history, |p| p.loss, 1), vec![Some(4)]);
}

#[test]
fn control_characters_from_the_cluster_do_not_reach_the_terminal() {
    let mut view = views::running();
    view.runs[0].state = "Running\x1b[2J".into();
    if let Some(detail) = view.selected.as_mut() {
        detail.log.lines.push("\x1b]0;pwned\x07boom".into());
    }
    let app = app_with(view);
    let text = screen(&app, 120, 36);
    assert!(!text.contains('\x1b'), "{text}");
    assert!(text.contains("Running\\e[2J"), "{text}");
    assert!(text.contains("boom"), "{text}");
}

#[test]
fn the_clock_asks_for_a_redraw_only_when_an_age_on_screen_changes() {
    let mut view = views::running();
    view.runs[0].created = Some("2026-01-01T00:00:00Z".into());
    let mut app = app_with(view);
    let at = |s: &str| s.parse::<jiff::Timestamp>().expect("time");
    assert!(app.set_now(at("2026-01-01T00:10:00Z")));
    // 10m either way.
    assert!(!app.set_now(at("2026-01-01T00:10:30Z")));
    assert!(app.set_now(at("2026-01-01T00:11:00Z")));
    let text = screen(&app, 120, 36);
    assert!(
        text.contains("alice-grpo RayJob     alice Running/RUNNING    11m"),
        "{text}"
    );
    // The pager shows no ages.
    press(&mut app, "l");
    assert!(!app.set_now(at("2026-01-01T00:12:00Z")));
}
