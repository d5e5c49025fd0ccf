//! The doctor as a gate in front of commands that change a cluster (`cluster up`, and the
//! script built-in `cluster::up`): offline rules plus the read-only preflight; warnings
//! are shown, errors stop the command (unless the user passed `--skip-doctor`).

use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::diag::{Diag, Result};
use crate::k8s::K8s;

use super::{Options, Report, offline_with, preflight};

/// The offline rules and the preflight over `manifests`, in one report.
pub async fn report(
    k8s: &K8s,
    cfg: &LoadedConfig,
    manifests: &[Node],
    opts: &Options,
) -> Result<Report> {
    let mut report = offline_with(cfg, manifests, opts);
    report.merge(preflight(k8s, cfg, manifests).await?);
    Ok(report)
}

/// `nrl::doctor::gate` (exit 2) when the report has errors.
pub fn verdict(report: &Report) -> Result<()> {
    if report.has_errors() {
        return Err(Diag::new(
            "nrl::doctor::gate",
            "the doctor found problems that would break this launch; nothing was applied",
        )
        .help(
            "fix the errors above, silence a rule with `# nrl: allow CODE`, or pass --skip-doctor",
        ));
    }
    Ok(())
}

/// Run the offline rules and the preflight; print a non-empty report to stderr; fail
/// with `nrl::doctor::gate` (exit 2) when it has errors.
pub async fn gate(
    k8s: &K8s,
    cfg: &LoadedConfig,
    manifests: &[Node],
    opts: &Options,
    color: bool,
    width: usize,
) -> Result<Report> {
    let mut report = offline_with(cfg, manifests, opts);
    match preflight(k8s, cfg, manifests).await {
        Ok(pre) => report.merge(pre),
        Err(e) => {
            // What the offline rules found does not need the cluster: show it before
            // saying the cluster could not be asked.
            print_offline(&report, color, width);
            return Err(e);
        }
    }
    if !report.is_empty() {
        crate::err!("{}", report.render(color, width));
    }
    verdict(&report)?;
    Ok(report)
}

/// The offline rules' report, when it has anything, with a title that says the preflight
/// did not run.
pub fn print_offline(report: &Report, color: bool, width: usize) {
    if !report.is_empty() {
        crate::err!(
            "{}",
            report.render_as(color, width, "doctor (offline rules only)")
        );
    }
}
