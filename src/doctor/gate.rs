//! The doctor as a gate in front of commands that change a cluster (`cluster up`,
//! `run`): offline rules plus the read-only preflight; warnings are printed, errors stop
//! the command (unless the user passed `--skip-doctor`).

use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::diag::{Diag, Result};
use crate::k8s::K8s;

use super::{Options, Report, offline_with, preflight};

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
    report.merge(preflight(k8s, cfg, manifests).await?);
    if !report.is_empty() {
        eprint!("{}", report.render(color, width));
    }
    if report.has_errors() {
        return Err(Diag::new(
            "nrl::doctor::gate",
            "the doctor found problems that would break this launch; nothing was applied",
        )
        .help(
            "fix the errors above, silence a rule with `# nrl: allow CODE`, or pass --skip-doctor",
        ));
    }
    Ok(report)
}
