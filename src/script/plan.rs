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

use std::collections::HashMap;
use std::sync::Mutex;

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

    /// Forget the recorded steps (REPL `:clear`).
    pub fn clear(&self) {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.fates.lock().unwrap_or_else(|e| e.into_inner()).clear();
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
