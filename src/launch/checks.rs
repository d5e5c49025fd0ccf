//! The checks `nrl run` puts around a launch, both modes: the doctor gate before anything
//! is applied, and (with `--verify`) the launch checklist after it.

use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::diag::{Exit, Result};
use crate::k8s::K8s;
use crate::launch::logscan::LogScan;
use crate::launch::output::Output;
use crate::launch::records::RunRecord;
use crate::launch::verify::verify;

/// The doctor gate: which findings to look for, and how its report is printed.
#[derive(Debug, Clone)]
pub struct DoctorGate {
    pub options: crate::doctor::Options,
    pub color: bool,
    pub width: usize,
}

/// What a launch checks around itself.
#[derive(Debug, Clone)]
pub struct LaunchChecks {
    /// `None` with `--skip-doctor`.
    pub doctor: Option<DoctorGate>,
    /// Run the checklist once the run ends (or is submitted).
    pub verify: bool,
}

/// The doctor gate over every object `nrl check` renders plus `launch` (what this launch
/// applies itself); an error finding stops the launch before anything is created.
pub async fn doctor_gate(
    k8s: &K8s,
    cfg: &LoadedConfig,
    launch: &[Node],
    checks: &LaunchChecks,
) -> Result<()> {
    let Some(gate) = &checks.doctor else {
        return Ok(());
    };
    let mut manifests = crate::render::check_manifests(&cfg.infra)?;
    manifests.extend(launch.iter().cloned());
    crate::doctor::gate::gate(k8s, cfg, &manifests, &gate.options, gate.color, gate.width).await?;
    Ok(())
}

/// The doctor gate's offline half, for when the cluster cannot be reached at all: its
/// findings are printed (stderr) before the connection error is reported.
pub fn offline_findings_before_connecting(
    cfg: &LoadedConfig,
    launch: &[Node],
    checks: &LaunchChecks,
) {
    let Some(gate) = &checks.doctor else {
        return;
    };
    let Ok(mut manifests) = crate::render::check_manifests(&cfg.infra) else {
        return;
    };
    manifests.extend(launch.iter().cloned());
    let report = crate::doctor::offline_with(cfg, &manifests, &gate.options);
    crate::doctor::gate::print_offline(&report, gate.color, gate.width);
}

/// With `verify`, the launch checklist of `record` (from `scan`, the log as it streamed,
/// when the run was followed to its end); a failed checklist turns a clean exit into a
/// failure.
pub async fn checklist(
    k8s: &K8s,
    record: &RunRecord,
    scan: Option<LogScan>,
    checks: &LaunchChecks,
    exit: Exit,
    progress: &mut dyn Output,
) -> Exit {
    if !checks.verify {
        return exit;
    }
    let report = verify(k8s, record, scan).await;
    if let Some(url) = &report.wandb_url {
        progress.status(&format!("W&B run: {url}"));
    }
    progress.status(report.to_string().trim_end_matches('\n'));
    if !report.ok() && exit == Exit::Ok {
        Exit::Failed
    } else {
        exit
    }
}
