//! The benchmark table of a run (`nrl gym submit` live, `nrl gym status`), and the
//! one-line transitions printed instead when the output is not a terminal.

use comfy_table::{ContentArrangement, Table, presets};

use super::state::{BenchStatus, summary};
use crate::terminal_text::{cell, escape};

/// How many rows a table shows before it summarises the rest.
pub const MAX_ROWS: usize = 40;

/// The table of `rows` (`width` for a terminal; `None` lays out without wrapping). Large
/// runs show the unfinished and failed rows first, then a count of the others.
pub fn render(rows: &[BenchStatus], width: Option<u16>) -> String {
    let mut table = Table::new();
    table.load_style(presets::NOTHING);
    match width {
        Some(w) => {
            table.set_content_arrangement(ContentArrangement::Dynamic);
            table.set_width(w);
        }
        None => {
            table.force_no_tty();
        }
    }
    table.set_header(vec!["BENCHMARK", "STATE", "JOB", "DETAIL"]);
    let mut shown: Vec<&BenchStatus> = rows.iter().collect();
    let mut hidden = 0;
    if rows.len() > MAX_ROWS {
        // Failures first, then what is still going on; finished successes last.
        shown.sort_by_key(|r| match r.phase {
            p if p.is_failure() => 0,
            p if !p.is_terminal() => 1,
            _ => 2,
        });
        hidden = rows.len() - MAX_ROWS;
        shown.truncate(MAX_ROWS);
    }
    for r in shown {
        // The detail quotes pod reasons and messages from the cluster.
        table.add_row(vec![
            cell(&r.benchmark),
            r.phase.as_str().to_string(),
            cell(&r.job),
            cell(&r.detail),
        ]);
    }
    let mut out = table.trim_fmt();
    out.push('\n');
    if hidden > 0 {
        out.push_str(&format!("… and {hidden} more\n"));
    }
    out.push_str(&format!("{} benchmark(s): {}\n", rows.len(), summary(rows)));
    out
}

/// One line per row that changed since `before` (for logs and pipes).
/// The lines for the rows `view`'s last update changed (what a follower prints after each
/// change: the cost is the change's, not the run's size).
pub fn changes(view: &crate::gym::view::RunView) -> Vec<String> {
    let rows = view.rows();
    let changed: Vec<BenchStatus> = view
        .last_changed()
        .iter()
        .filter_map(|i| rows.get(*i).cloned())
        .collect();
    transitions(&[], &changed)
}

pub fn transitions(before: &[BenchStatus], after: &[BenchStatus]) -> Vec<String> {
    after
        .iter()
        .enumerate()
        .filter(|(i, r)| before.get(*i) != Some(*r))
        .map(|(_, r)| {
            let benchmark = escape(&r.benchmark);
            if r.detail.is_empty() {
                format!("{benchmark}: {}", r.phase)
            } else {
                format!("{benchmark}: {} ({})", r.phase, escape(&r.detail))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gym::state::Phase;

    fn row(b: &str, phase: Phase, detail: &str) -> BenchStatus {
        BenchStatus {
            benchmark: b.into(),
            job: format!("gym-run-{b}"),
            phase,
            detail: detail.into(),
        }
    }

    #[test]
    fn table_lists_rows_and_counts() {
        let rows = vec![
            row("gpqa", Phase::Succeeded, ""),
            row("math", Phase::Failed, "driver exited 3 (Error)"),
            row("tau2", Phase::Running, ""),
        ];
        let t = render(&rows, None);
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[0].contains("BENCHMARK") && lines[0].contains("STATE"),
            "{t}"
        );
        assert!(
            lines[2].contains("math")
                && lines[2].contains("Failed")
                && lines[2].contains("driver exited 3 (Error)"),
            "{t}"
        );
        assert_eq!(
            lines.last(),
            Some(&"3 benchmark(s): 1 Running, 1 Succeeded, 1 Failed")
        );
    }

    #[test]
    fn big_tables_show_failures_first() {
        let mut rows: Vec<BenchStatus> = (0..100)
            .map(|i| row(&format!("b{i}"), Phase::Succeeded, ""))
            .collect();
        rows[77] = row("b77", Phase::Failed, "boom");
        let t = render(&rows, Some(100));
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[1].contains("b77"), "{t}");
        assert!(t.contains("… and 60 more"));
        assert_eq!(lines.len(), 1 + MAX_ROWS + 2);
    }

    #[test]
    fn cluster_text_in_the_table_and_transitions_is_escaped() {
        let rows = vec![row(
            "math",
            Phase::Failed,
            "\u{1b}[2Jdriver\u{202e} exited 3\nmore",
        )];
        let t = render(&rows, None);
        assert_eq!(
            t.lines().nth(1).map(str::trim_end),
            Some(" math       Failed  gym-run-math  \\e[2Jdriver\\u{202e} exited 3\\nmore"),
            "{t}"
        );
        assert_eq!(
            transitions(&[], &rows),
            ["math: Failed (\\e[2Jdriver\\u{202e} exited 3\\nmore)"]
        );
    }

    #[test]
    fn transitions_name_changed_rows() {
        let a = vec![row("x", Phase::Pending, ""), row("y", Phase::Running, "")];
        let b = vec![row("x", Phase::Starting, ""), row("y", Phase::Running, "")];
        assert_eq!(transitions(&a, &b), ["x: Starting"]);
        let c = vec![
            row("x", Phase::Failed, "the pod failed"),
            row("y", Phase::Running, ""),
        ];
        assert_eq!(transitions(&b, &c), ["x: Failed (the pod failed)"]);
        assert_eq!(transitions(&[], &c).len(), 2);
    }
}
