//! `nrl doctor`: the launch playbook's hard-won rules as automatic checks.
//!
//! Two halves share one finding model:
//! - [`offline`]: lint rules over the loaded recipe + infra and the rendered manifests
//!   (pure apart from reading user defaults and, for the upload-size rule, the upload set);
//! - [`preflight`]: read-only checks against the target cluster (referenced objects, CRDs,
//!   access reviews, KAI queues).
//!
//! Every finding has a stable code (`nrl::doctor::<rule>`, listed in [`RULES`]), a
//! severity, a message, the recipe or infra line it is about and a fix. Findings can be
//! silenced with `# nrl: allow CODE` comments or `doctor.allow` in user defaults (see
//! [`allow`]). The report renders errors first, then warnings, then a one-line summary.

pub mod allow;
mod backends;
mod cluster_shape;
pub mod diagnose;
mod effective;
pub mod gate;
pub(crate) mod pods;
pub mod preflight;
mod recipe_keys;
mod report;
mod rules;
pub(crate) mod scheduling;
mod secrets;
mod shell;
mod text;
mod upload;
mod webhooks;

use std::borrow::Cow;
use std::path::PathBuf;

use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::config::schema::CodeSource;
use crate::config::source::Span;

pub use preflight::{preflight, preflight_manifests};
pub use report::Report;
pub use rules::{RULES, Rule, Stage, rule};

/// How bad a finding is: errors stop `check`, `run` and `cluster up`; warnings are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// A secondary label: another line that takes part in the problem.
#[derive(Debug, Clone, PartialEq)]
pub struct Related {
    pub span: Span,
    pub text: String,
}

/// One problem found by a rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Stable code: `nrl::doctor::<rule>` for the built-in rules (see [`RULES`]); a
    /// playbook's own rules bring their own codes ([`Finding::custom`]).
    pub code: Cow<'static, str>,
    pub severity: Severity,
    pub message: String,
    /// The recipe or infra line the finding is about (None when nothing in the inputs
    /// wrote it, e.g. a missing CRD).
    pub span: Option<Span>,
    /// Text shown at `span`.
    pub label: String,
    /// Further lines that take part (the other side of a mismatch).
    pub related: Vec<Related>,
    /// How to fix it.
    pub fix: String,
    /// Extra facts (which manifest references an object, the largest files…).
    pub notes: Vec<String>,
    /// The rendered place the message names (`RayCluster/x workerGroupSpecs[0]
    /// (gpu-workers-segment-0)`), when the same line may be found in several: copies that
    /// differ only in it are reported once, naming every place (see [`dedupe`]).
    pub place: Option<String>,
}

impl Finding {
    /// A finding with the severity registered for `code` in [`RULES`].
    pub fn new(code: &'static str, message: impl Into<String>) -> Finding {
        let severity = rule(code).map_or(Severity::Error, |r| r.severity);
        Finding {
            code: Cow::Borrowed(code),
            ..Finding::custom(String::new(), severity, message)
        }
    }

    /// A finding of a rule that is not in [`RULES`] (a playbook's own check, built at
    /// run time), with its severity given. Allow comments and `doctor.allow` only know
    /// the registered codes, so they never silence these.
    pub fn custom(
        code: impl Into<String>,
        severity: Severity,
        message: impl Into<String>,
    ) -> Finding {
        Finding {
            code: Cow::Owned(code.into()),
            severity,
            message: message.into(),
            span: None,
            label: String::new(),
            related: Vec::new(),
            fix: String::new(),
            notes: Vec::new(),
            place: None,
        }
    }

    pub fn at(mut self, span: Option<Span>, label: impl Into<String>) -> Finding {
        self.span = span;
        self.label = label.into();
        self
    }

    /// Add a secondary label; `None` spans (and repeats of a span) are ignored.
    pub fn also(mut self, span: Option<Span>, text: impl Into<String>) -> Finding {
        if let Some(span) = span
            && Some(span) != self.span
            && !self.related.iter().any(|r| r.span == span)
        {
            self.related.push(Related {
                span,
                text: text.into(),
            });
        }
        self
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Finding {
        self.fix = fix.into();
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Finding {
        self.notes.push(note.into());
        self
    }

    /// Say which part of the message is the rendered place it was found at.
    pub fn place(mut self, place: impl Into<String>) -> Finding {
        self.place = Some(place.into());
        self
    }

    pub fn with_severity(mut self, severity: Severity) -> Finding {
        self.severity = severity;
        self
    }

    /// Every span the finding labels (primary first).
    pub fn spans(&self) -> impl Iterator<Item = Span> + '_ {
        self.span
            .into_iter()
            .chain(self.related.iter().map(|r| r.span))
    }

    /// `path:line:col` of the primary span.
    pub fn location(&self) -> Option<String> {
        self.span.map(|s| s.location())
    }
}

/// Knobs of a launch that change which rules apply.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--code-source` from the command line; beats `infra.launch.codeSource`.
    pub code_source: Option<CodeSource>,
    /// Where `rayUploadPaths` are read from (`run --repo-root`; default: the current
    /// directory).
    pub repo_root: Option<PathBuf>,
    /// The launch submits a RayJob, which uploads nothing (upload rules do not apply).
    pub rayjob: bool,
}

/// What the offline rules look at.
pub(crate) struct Ctx<'a> {
    pub cfg: &'a LoadedConfig,
    pub manifests: &'a [Node],
    pub opts: &'a Options,
    entry_overrides: std::cell::OnceCell<Vec<effective::EntryOverride>>,
}

impl<'a> Ctx<'a> {
    fn new(cfg: &'a LoadedConfig, manifests: &'a [Node], opts: &'a Options) -> Ctx<'a> {
        Ctx {
            cfg,
            manifests,
            opts,
            entry_overrides: std::cell::OnceCell::new(),
        }
    }

    /// The Hydra overrides the training entrypoint passes (parsed once).
    pub fn entry_overrides(&self) -> &[effective::EntryOverride] {
        self.entry_overrides
            .get_or_init(|| effective::entrypoint_overrides(self.cfg))
    }
}

/// The offline rules over a loaded pair and its rendered manifests (from
/// `render::check_manifests`, optionally plus `launch::rayjob::manifest::rayjob_manifest`), with
/// default [`Options`]. Allow comments and user-defaults allows are applied.
pub fn offline(cfg: &LoadedConfig, manifests: &[Node]) -> Report {
    offline_with(cfg, manifests, &Options::default())
}

/// [`offline`] with launch options (`run` passes its `--code-source`, `--repo-root` and
/// mode).
pub fn offline_with(cfg: &LoadedConfig, manifests: &[Node], opts: &Options) -> Report {
    let findings = offline_findings(cfg, manifests, opts);
    let allows = allow::Allows::collect(cfg);
    Report::new(findings, &allows)
}

/// The secrets written literally into the recipe's env values (the `literal_secret`
/// rule alone, allows ignored): what a file written from these manifests holds in clear.
pub fn literal_secrets(cfg: &LoadedConfig, manifests: &[Node]) -> Vec<Finding> {
    let opts = Options::default();
    let ctx = Ctx::new(cfg, manifests, &opts);
    let mut out = Vec::new();
    secrets::check(&ctx, &mut out);
    dedupe(out)
}

/// The raw findings of every offline rule, before allows (deduplicated, in rule order).
pub fn offline_findings(cfg: &LoadedConfig, manifests: &[Node], opts: &Options) -> Vec<Finding> {
    let ctx = Ctx::new(cfg, manifests, opts);
    let mut out = Vec::new();
    cluster_shape::check(&ctx, &mut out);
    secrets::check(&ctx, &mut out);
    shell::check(&ctx, &mut out);
    recipe_keys::check(&ctx, &mut out);
    backends::check(&ctx, &mut out);
    webhooks::check(&ctx, &mut out);
    scheduling::check(&ctx, &mut out);
    upload::check(&ctx, &mut out);
    dedupe(out)
}

/// Segment expansion, per-role clusters and RayJob/RayCluster pairs copy the same infra
/// lines into several objects; report each (code, line) once. When the copies differ only
/// in their [`Finding::place`], the one reported names every place
/// (`workerGroupSpecs[0..3] (gpu-workers-segment-0..3)`).
pub(crate) fn dedupe(findings: Vec<Finding>) -> Vec<Finding> {
    let mut seen: Vec<(Cow<'static, str>, Option<Span>, String)> = Vec::new();
    let mut out: Vec<Finding> = Vec::new();
    let mut places: Vec<Vec<String>> = Vec::new();
    for f in findings {
        let key = (
            f.code.clone(),
            f.span,
            if f.span.is_some() {
                String::new()
            } else {
                f.message.clone()
            },
        );
        if let Some(i) = seen.iter().position(|k| *k == key) {
            if let Some(p) = &f.place
                && out[i].place.is_some()
                && without_place(&out[i]) == without_place(&f)
            {
                places[i].push(p.clone());
            }
            continue;
        }
        seen.push(key);
        places.push(f.place.iter().cloned().collect());
        out.push(f);
    }
    for (f, ps) in out.iter_mut().zip(places) {
        if ps.len() < 2 {
            continue;
        }
        if let Some(first) = f.place.take() {
            let all = crate::render::validate::join_places(&ps);
            f.message = f.message.replacen(&first, &all, 1);
            f.place = Some(all);
        }
    }
    out
}

/// The message with its place cut out, to compare copies.
fn without_place(f: &Finding) -> String {
    match &f.place {
        Some(p) => f.message.replacen(p.as_str(), "\u{0}", 1),
        None => f.message.clone(),
    }
}
