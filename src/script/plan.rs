//! Plan mode: what a script would have changed.
//!
//! Under `nrl script --dry-run`, every built-in that would change a cluster (apply,
//! delete, submit, stop, exec, launches) or the machine (`shell`, `write_file`) records a
//! step here instead of acting, and returns a simulated handle so the script carries on.
//! The plan is printed as a table when the script ends.
//!
//! The plan also remembers what it would have done to each object (`applied`,
//! `deleted`), so reads later in the same dry run (`cluster::status`, `cluster::logs`)
//! answer for the planned state instead of asking a cluster that was never changed.
//!
//! Under `nrl script test` the plan also holds the test's [`Simulation`]: reads answer
//! from the objects the plan applied or deleted over the simulated cluster
//! ([`Plan::read_object`], [`Plan::read_list`]), never from a real one.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value as Json;

use super::sim::Simulation;
use crate::diag::Result;
use crate::terminal_text::{Wrap, plain_table};

/// One recorded action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanStep {
    /// Verb: `apply`, `delete`, `submit`, `stop`, `exec`, `shell`, `write`, …
    pub action: String,
    /// What it acts on: `RayJob/alice-quickstart`, a dashboard job id, a file.
    pub target: String,
    /// One line of specifics (namespace, options).
    pub details: String,
}

/// The steps of one run, in order.
#[derive(Debug, Default)]
pub struct Plan {
    steps: Mutex<Vec<PlanStep>>,
    /// `Kind/namespace/name` → what the plan does to it (`applied`, `deleted`).
    fates: Mutex<HashMap<String, String>>,
    /// Step number → the object an `apply` step applies (what `planned(…)` returns).
    objects: Mutex<HashMap<usize, Json>>,
    /// The simulated cluster of a test (`None` outside `nrl script test`).
    sim: Mutex<Option<Simulation>>,
}

/// The key of an object in [`Plan::mark`].
pub fn object_key(kind: &str, namespace: &str, name: &str) -> String {
    format!("{kind}/{namespace}/{name}")
}

impl Plan {
    pub fn new() -> Plan {
        Plan::default()
    }

    /// Record a step; returns its 1-based number (used in simulated ids).
    pub fn record(
        &self,
        action: impl Into<String>,
        target: impl Into<String>,
        details: impl Into<String>,
    ) -> usize {
        let mut steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
        steps.push(PlanStep {
            action: action.into(),
            target: target.into(),
            details: details.into(),
        });
        steps.len()
    }

    /// Record an `apply` of `object`; returns its step number. The object is kept for
    /// [`Plan::object_of`] and, in a test, later reads see it.
    pub fn record_apply(
        &self,
        target: impl Into<String>,
        details: impl Into<String>,
        object: Json,
    ) -> usize {
        let step = self.record("apply", target, details);
        let mut objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        objects.insert(step, object);
        step
    }

    /// The object applied by step `step` (1-based), if it was recorded with one.
    pub fn object_of(&self, step: usize) -> Option<Json> {
        let objects = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        objects.get(&step).cloned()
    }

    /// Forget the recorded steps (REPL `:clear`).
    pub fn clear(&self) {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.fates.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Answer reads from `sim` from now on (a test of `nrl script test`).
    pub fn simulate(&self, sim: Simulation) {
        *self.sim.lock().unwrap_or_else(|e| e.into_inner()) = Some(sim);
    }

    /// Whether reads answer from a simulated cluster.
    pub fn is_simulated(&self) -> bool {
        self.sim.lock().map(|s| s.is_some()).unwrap_or(false)
    }

    /// A copy of the simulation (for a script a test runs, which shares it).
    pub fn simulation(&self) -> Option<Simulation> {
        self.sim.lock().ok().and_then(|s| s.clone())
    }

    /// Change the simulation; `None` when there is none.
    pub fn with_simulation<T>(&self, f: impl FnOnce(&mut Simulation) -> T) -> Option<T> {
        let mut sim = self.sim.lock().unwrap_or_else(|e| e.into_inner());
        sim.as_mut().map(f)
    }

    /// The simulated cluster as this plan leaves it: the test's objects, then each
    /// planned apply (replacing) and delete (removing) in step order.
    fn simulated_view(&self) -> Option<Simulation> {
        let mut view = self.simulation()?;
        let steps = self.steps();
        for (i, step) in steps.iter().enumerate() {
            match step.action.as_str() {
                "apply" => {
                    if let Some(obj) = self.object_of(i + 1) {
                        // Planned objects carry kind and name (validated when recorded).
                        let _ = view.add_object(obj);
                    }
                }
                "delete" => {
                    if let Some((kind, name)) = step.target.split_once('/') {
                        view.remove(kind, name);
                    }
                }
                _ => {}
            }
        }
        Some(view)
    }

    /// In a test: the object the simulated cluster holds after this plan's steps
    /// (`Some(None)`: no such object). `None` outside a test.
    pub fn read_object(
        &self,
        kind: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Option<Json>> {
        self.simulated_view().map(|v| v.get(kind, namespace, name))
    }

    /// In a test: the objects of `kind` the simulated cluster lists after this plan's
    /// steps. `None` outside a test.
    pub fn read_list(
        &self,
        kind: &str,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Option<Result<Vec<Json>>> {
        self.simulated_view()
            .map(|v| v.list(kind, namespace, selector))
    }

    /// Remember that the plan `fate`s (`applied`, `deleted`) the object `key`
    /// ([`object_key`]); the last mark wins.
    pub fn mark(&self, key: String, fate: &str) {
        let mut fates = self.fates.lock().unwrap_or_else(|e| e.into_inner());
        fates.insert(key, fate.to_string());
    }

    /// What the plan does to object `key`, if anything.
    pub fn fate(&self, key: &str) -> Option<String> {
        let fates = self.fates.lock().unwrap_or_else(|e| e.into_inner());
        fates.get(key).cloned()
    }

    pub fn steps(&self) -> Vec<PlanStep> {
        self.steps.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.steps.lock().map(|s| s.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The plan as printed at the end of a dry run.
    pub fn render(&self) -> String {
        render_steps(&self.steps())
    }
}

/// `plan: N step(s), nothing was changed` followed by a `#  ACTION  TARGET  DETAILS` table.
pub fn render_steps(steps: &[PlanStep]) -> String {
    if steps.is_empty() {
        return "plan: no changes (the script would not change anything)\n".to_string();
    }
    let rows = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            vec![
                (i + 1).to_string(),
                s.action.clone(),
                s.target.clone(),
                s.details.clone(),
            ]
        })
        .collect();
    let table = plain_table(&["#", "ACTION", "TARGET", "DETAILS"], rows, Wrap::Never);
    let mut out = format!(
        "plan: {} step{} (dry run: nothing was changed)\n",
        steps.len(),
        if steps.len() == 1 { "" } else { "s" }
    );
    out.push_str(&table);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_render_as_a_numbered_table() {
        let plan = Plan::new();
        assert_eq!(plan.record("apply", "RayJob/a", "namespace ns"), 1);
        assert_eq!(plan.record("submit", "job", ""), 2);
        let text = plan.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "plan: 2 steps (dry run: nothing was changed)");
        assert!(lines[1].starts_with('#') && lines[1].contains("ACTION"));
        assert!(lines[2].starts_with("1  ") && lines[2].contains("RayJob/a"));
        assert!(lines[3].contains("submit"));
    }

    #[test]
    fn the_last_mark_of_an_object_wins() {
        let plan = Plan::new();
        let key = object_key("RayCluster", "ns", "rc");
        assert_eq!(plan.fate(&key), None);
        plan.mark(key.clone(), "applied");
        plan.mark(key.clone(), "deleted");
        assert_eq!(plan.fate(&key).as_deref(), Some("deleted"));
        assert_eq!(plan.fate(&object_key("RayCluster", "other", "rc")), None);
    }

    #[test]
    fn an_empty_plan_says_so() {
        assert!(Plan::new().render().starts_with("plan: no changes"));
    }
}
