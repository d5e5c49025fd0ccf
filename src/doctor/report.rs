//! The report: findings that survived the allows, errors first, rendered with miette,
//! and a one-line summary.

use super::allow::{AllowedBy, Allows};
use super::{Finding, Severity};
use crate::diag::{Diag, Exit};

/// What `nrl doctor` (and `check`, `run`, `cluster up`) show.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Reported findings: errors first, then warnings, each in rule order.
    pub findings: Vec<Finding>,
    /// Findings an allow comment or `doctor.allow` silenced.
    pub silenced: Vec<(Finding, AllowedBy)>,
}

impl Finding {
    /// The finding as data — the `-o json|yaml` vocabulary of `nrl doctor` and
    /// `nrl diagnose`: `code`, `severity`, `message`, `location` (`file:line:col`, when a
    /// line of the inputs wrote it), `fix`, `notes`, `related` (`[{location, text}]`).
    pub fn to_json(&self) -> serde_json::Value {
        let related: Vec<serde_json::Value> = self
            .related
            .iter()
            .map(|r| serde_json::json!({"location": r.span.location(), "text": r.text}))
            .collect();
        serde_json::json!({
            "code": self.code,
            "severity": self.severity.as_str(),
            "message": self.message,
            "location": self.span.map(|s| s.location()),
            "fix": self.fix,
            "notes": self.notes,
            "related": related,
        })
    }
}

impl Report {
    /// The report as data: `{ok, errors, warnings, findings: [...], silenced: [{code,
    /// allowed_by}]}` (see [`Finding::to_json`]).
    pub fn to_json(&self) -> serde_json::Value {
        let count = |sev: Severity| self.findings.iter().filter(|f| f.severity == sev).count();
        let silenced: Vec<serde_json::Value> = self
            .silenced
            .iter()
            .map(|(f, by)| serde_json::json!({"code": f.code, "allowed_by": by.to_string()}))
            .collect();
        serde_json::json!({
            "ok": self.findings.iter().all(|f| f.severity != Severity::Error),
            "errors": count(Severity::Error),
            "warnings": count(Severity::Warning),
            "findings": self.findings.iter().map(Finding::to_json).collect::<Vec<_>>(),
            "silenced": silenced,
        })
    }

    /// Apply `allows` to raw findings; problems with the allows themselves are added.
    pub fn new(findings: Vec<Finding>, allows: &Allows) -> Report {
        let mut r = Report::default();
        for f in findings {
            match allows.allowed(&f) {
                Some(by) => r.silenced.push((f, by)),
                None => r.findings.push(f),
            }
        }
        r.findings.extend(allows.problems.iter().cloned());
        r.sort();
        r
    }

    fn sort(&mut self) {
        // Stable: rule order is kept within a severity.
        self.findings.sort_by_key(|f| f.severity);
    }

    /// Add another report's findings (preflight after offline), dropping repeats of
    /// allow problems both reported.
    pub fn merge(&mut self, other: Report) {
        for f in other.findings {
            if !self.findings.contains(&f) {
                self.findings.push(f);
            }
        }
        self.silenced.extend(other.silenced);
        self.sort();
    }

    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }

    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
    }

    pub fn has_errors(&self) -> bool {
        self.errors().next().is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// Exit code of `nrl doctor`: 2 on errors (bad input), 0 otherwise.
    pub fn exit(&self) -> Exit {
        if self.has_errors() {
            Exit::Input
        } else {
            Exit::Ok
        }
    }

    /// Codes of the reported findings, in report order (handy in tests and scripts).
    pub fn codes(&self) -> Vec<&str> {
        self.findings.iter().map(|f| f.code.as_ref()).collect()
    }

    /// `doctor: 2 errors, 1 warning (1 silenced)` or `doctor: no problems found`.
    pub fn summary(&self) -> String {
        self.summary_as("doctor")
    }

    pub(crate) fn summary_as(&self, title: &str) -> String {
        let e = self.errors().count();
        let w = self.warnings().count();
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let mut s = if e + w == 0 {
            format!("{title}: no problems found")
        } else {
            format!("{title}: {}, {}", plural(e, "error"), plural(w, "warning"))
        };
        if !self.silenced.is_empty() {
            s.push_str(&format!(" ({} silenced)", self.silenced.len()));
        }
        s
    }

    /// Every finding as a miette report (errors first), then the summary line.
    pub fn render(&self, color: bool, width: usize) -> String {
        self.render_as(color, width, "doctor")
    }

    /// [`Report::render`] with another summary title (`doctor (offline rules only)`).
    pub fn render_as(&self, color: bool, width: usize, title: &str) -> String {
        let mut out = String::new();
        for f in &self.findings {
            out.push_str(&to_diag(f).render(color, width));
            out.push('\n');
        }
        out.push_str(&self.summary_as(title));
        out.push('\n');
        out
    }
}

/// A finding as a diagnostic (warnings keep their severity).
pub fn to_diag(f: &Finding) -> Diag {
    let mut d = Diag::new(f.code.clone(), f.message.clone()).label(f.span, f.label.clone());
    for r in &f.related {
        d = d.label(Some(r.span), r.text.clone());
    }
    if !f.fix.is_empty() {
        d = d.help(f.fix.clone());
    }
    for n in &f.notes {
        d = d.note(n.clone());
    }
    if f.severity == Severity::Warning {
        d = d.warning();
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_codes_report_render_and_dedupe_like_built_in_ones() {
        let custom = || Finding::custom("team::gym", Severity::Warning, "no gym").fix("add it");
        let findings = super::super::dedupe(vec![
            custom(),
            custom(),
            Finding::new(super::super::rules::GPU_MISMATCH, "gpus"),
        ]);
        let report = Report::new(findings, &Allows::default());
        assert_eq!(report.codes(), ["nrl::doctor::gpu_mismatch", "team::gym"]);
        let text = report.render(false, 80);
        assert!(text.contains("team::gym"), "{text}");
        assert!(text.ends_with("doctor: 1 error, 1 warning\n"), "{text}");
        // A custom code is the diagnostic's code as it is (nothing is interned or leaked).
        assert_eq!(to_diag(&custom()).code, "team::gym");
    }

    #[test]
    fn copies_of_one_line_differing_only_in_their_place_name_every_place() {
        use crate::config::source::{SourceKind, Span, add_source};
        let src = add_source("infra.yaml", None, "a: 1\nb: 2\n", SourceKind::Text);
        let (line1, line2) = (Some(Span::new(src, 0, 1)), Some(Span::new(src, 5, 6)));
        let rule = super::super::rules::NO_TOLERATIONS;
        let f = |span, i: usize, text: &str| {
            let place = format!("RayCluster/x workerGroupSpecs[{i}] (gpu-segment-{i})");
            Finding::new(rule, format!("pods of {place} {text}"))
                .at(span, "here")
                .place(place)
        };
        let mut all: Vec<Finding> = (0..4).map(|i| f(line1, i, "have none")).collect();
        // Another line stays apart; a copy that differs in more than its place is dropped
        // as before, without naming its place.
        all.push(f(line2, 0, "have none"));
        all.push(f(line1, 7, "differ"));
        let out = super::super::dedupe(all);
        let messages: Vec<&str> = out.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "pods of RayCluster/x workerGroupSpecs[0..3] (gpu-segment-0..3) have none",
                "pods of RayCluster/x workerGroupSpecs[0] (gpu-segment-0) have none",
            ]
        );
    }
}
