//! A run as its table: one row per benchmark, updated from the run's single Job watch.

use std::collections::HashMap;

use serde_json::Value as Json;

use crate::k8s::watch::LabelledEvent;

use super::state::{BenchStatus, Phase, benchmark_label, job_phase};

/// The rows of a run, in benchmark order.
#[derive(Debug, Clone, Default)]
pub struct RunView {
    rows: Vec<BenchStatus>,
    by_job: HashMap<String, usize>,
    /// Whether each row's Job was ever seen on the cluster.
    seen: Vec<bool>,
    /// Add rows for Jobs of the run that were not expected (status without a record).
    discover: bool,
    /// The rows the last [`RunView::apply`] changed, so a printer of changes costs the
    /// changes, not the run's size.
    changed: Vec<usize>,
}

fn job_name(obj: &Json) -> Option<&str> {
    obj.pointer("/metadata/name").and_then(Json::as_str)
}

impl RunView {
    /// Rows for `(benchmark, job name)` pairs, all Pending.
    pub fn new(expected: impl IntoIterator<Item = (String, String)>) -> RunView {
        let mut v = RunView::default();
        for (benchmark, job) in expected {
            v.push(benchmark, job);
        }
        v
    }

    /// A view that learns the run's benchmarks from the Jobs it sees.
    pub fn discovering() -> RunView {
        RunView {
            discover: true,
            ..RunView::default()
        }
    }

    fn push(&mut self, benchmark: String, job: String) -> usize {
        let i = self.rows.len();
        self.by_job.insert(job.clone(), i);
        self.rows.push(BenchStatus {
            benchmark,
            job,
            phase: Phase::Pending,
            detail: String::new(),
        });
        self.seen.push(false);
        i
    }

    pub fn rows(&self) -> &[BenchStatus] {
        &self.rows
    }

    /// Indices of the rows the last [`RunView::apply`] changed (or added).
    pub fn last_changed(&self) -> &[usize] {
        &self.changed
    }

    pub fn row_mut(&mut self, job: &str) -> Option<&mut BenchStatus> {
        self.by_job.get(job).map(|i| &mut self.rows[*i])
    }

    /// Mark a benchmark whose Job could not be created.
    pub fn apply_failed(&mut self, job: &str, error: &str) {
        if let Some(r) = self.row_mut(job) {
            r.phase = Phase::ApplyFailed;
            r.detail = error.to_string();
        }
    }

    pub fn all_terminal(&self) -> bool {
        self.rows.iter().all(|r| r.phase.is_terminal())
    }

    pub fn any_failed(&self) -> bool {
        self.rows.iter().any(|r| r.phase.is_failure())
    }

    fn index_for(&mut self, obj: &Json) -> Option<usize> {
        let name = job_name(obj)?;
        if let Some(i) = self.by_job.get(name) {
            return Some(*i);
        }
        if !self.discover {
            return None;
        }
        let bench = benchmark_label(obj).unwrap_or(name).to_string();
        Some(self.push(bench, name.to_string()))
    }

    fn set(&mut self, i: usize, phase: Phase, detail: String) -> bool {
        let r = &mut self.rows[i];
        // A finished benchmark stays finished (TTL deletion, a late event).
        if r.phase.is_terminal()
            && r.phase != Phase::Deleted
            && phase != r.phase
            && !phase.is_terminal()
        {
            return false;
        }
        if r.phase == phase && (r.detail == detail || detail.is_empty()) {
            return false;
        }
        r.phase = phase;
        if !detail.is_empty() || !phase.is_failure() {
            r.detail = detail;
        }
        self.changed.push(i);
        true
    }

    fn observe(&mut self, obj: &Json) -> bool {
        let Some(i) = self.index_for(obj) else {
            return false;
        };
        self.seen[i] = true;
        if self.rows[i].phase == Phase::ApplyFailed {
            return false;
        }
        let (phase, detail) = job_phase(obj);
        self.set(i, phase, detail)
    }

    fn gone(&mut self, i: usize) -> bool {
        let r = &self.rows[i];
        if r.phase.is_terminal() {
            return false;
        }
        self.set(i, Phase::Deleted, "the Job was deleted".into())
    }

    /// Update from one watch event; whether any row changed.
    pub fn apply(&mut self, ev: &LabelledEvent) -> bool {
        self.changed.clear();
        match ev {
            LabelledEvent::Applied(o) => self.observe(o),
            LabelledEvent::Deleted(o) => match self.index_for(o) {
                Some(i) => {
                    self.seen[i] = true;
                    self.gone(i)
                }
                None => false,
            },
            LabelledEvent::Reset(all) => {
                let mut changed = false;
                let mut present = vec![false; self.rows.len()];
                for o in all {
                    changed |= self.observe(o);
                    if let Some(i) = job_name(o).and_then(|n| self.by_job.get(n)) {
                        if *i >= present.len() {
                            present.resize(*i + 1, false);
                        }
                        present[*i] = true;
                    }
                }
                for i in 0..self.rows.len() {
                    if self.seen[i] && !present.get(i).copied().unwrap_or(false) {
                        changed |= self.gone(i);
                    }
                }
                changed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(name: &str, status: Json) -> Json {
        json!({"metadata": {"name": name, "labels": {"gym-benchmark": name.trim_start_matches("j-")}}, "status": status})
    }

    #[test]
    fn rows_follow_the_watch() {
        let mut v = RunView::new([
            ("a".to_string(), "j-a".to_string()),
            ("b".to_string(), "j-b".to_string()),
        ]);
        assert!(!v.all_terminal());
        assert!(v.apply(&LabelledEvent::Reset(vec![job(
            "j-a",
            json!({"active": 1})
        )])));
        assert_eq!(v.rows()[0].phase, Phase::Starting);
        assert_eq!(v.rows()[1].phase, Phase::Pending);
        assert!(!v.apply(&LabelledEvent::Applied(job("j-a", json!({"active": 1})))));
        let done = json!({"conditions": [{"type": "Complete", "status": "True"}]});
        assert!(v.apply(&LabelledEvent::Applied(job("j-a", done.clone()))));
        v.apply_failed("j-b", "forbidden");
        assert!(v.all_terminal() && v.any_failed());
        // A finished Job removed by its TTL stays finished.
        assert!(!v.apply(&LabelledEvent::Deleted(job("j-a", done))));
        assert_eq!(v.rows()[0].phase, Phase::Succeeded);
        // Unknown Jobs are ignored unless discovering.
        assert!(!v.apply(&LabelledEvent::Applied(job("j-c", json!({})))));
    }

    #[test]
    fn each_update_names_the_rows_it_changed() {
        let mut v = RunView::new(["a", "b", "c"].map(|b| (b.to_string(), format!("j-{b}"))));
        assert!(v.last_changed().is_empty());
        v.apply(&LabelledEvent::Applied(job("j-b", json!({"active": 1}))));
        assert_eq!(v.last_changed(), [1]);
        assert_eq!(crate::gym::table::changes(&v), ["b: Starting"]);
        // A relist touches only the rows whose state moved.
        v.apply(&LabelledEvent::Reset(vec![
            job("j-a", json!({"active": 1})),
            job("j-b", json!({"active": 1})),
            job("j-c", json!({"active": 1})),
        ]));
        assert_eq!(v.last_changed(), [0, 2]);
        // An event that changes nothing names nothing.
        v.apply(&LabelledEvent::Applied(job("j-b", json!({"active": 1}))));
        assert!(v.last_changed().is_empty());
    }

    #[test]
    fn deletion_before_the_end_is_a_failure() {
        let mut v = RunView::new([("a".to_string(), "j-a".to_string())]);
        v.apply(&LabelledEvent::Applied(job(
            "j-a",
            json!({"active": 1, "ready": 1}),
        )));
        assert_eq!(v.rows()[0].phase, Phase::Running);
        // A relist without the Job: it is gone.
        assert!(v.apply(&LabelledEvent::Reset(vec![])));
        assert_eq!(v.rows()[0].phase, Phase::Deleted);
        assert!(v.any_failed());
    }

    #[test]
    fn discovering_learns_benchmarks_from_labels() {
        let mut v = RunView::discovering();
        v.apply(&LabelledEvent::Reset(vec![
            job("j-x", json!({})),
            job("j-y", json!({"active": 1})),
        ]));
        let names: Vec<&str> = v.rows().iter().map(|r| r.benchmark.as_str()).collect();
        assert_eq!(names, ["x", "y"]);
    }
}
