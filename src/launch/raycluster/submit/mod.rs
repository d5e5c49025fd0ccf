//! Submitting training to a long-lived RayCluster: which submitter, where the code comes
//! from, whether to wait — and the two submitters themselves.
//!
//! Resolution (ref-orchestration §3.2 with DESIGN §3's change, ref §11 A1): the infra's
//! `submit.submitter` and `launch.codeSource`, when the infra (or user defaults, or an
//! override) sets them, are the baseline; `--mode` (or `launch.runMode`) fills in what the
//! infra leaves unset, an explicit `--mode` overrides the infra, and `--submitter`,
//! `--code-source`, `--wait/--no-wait` override everything.
//!
//! | mode        | submitter   | codeSource | wait |
//! |-------------|-------------|------------|------|
//! | interactive | portForward | upload     | yes  |
//! | batch       | exec        | image      | no   |

pub mod exec;
mod exec_io;
pub mod portforward;

pub use exec_io::head_pod;

use crate::config::layers::LoadedConfig;
use crate::config::schema::{CodeSource, RunMode, SubmitterMode};
use crate::config::source::SourceKind;
use crate::diag::{Diag, Result};

/// The command line's say.
#[derive(Debug, Clone, Default)]
pub struct ModeFlags {
    pub mode: Option<RunMode>,
    pub submitter: Option<SubmitterMode>,
    pub code_source: Option<CodeSource>,
    pub code_path: Option<String>,
    pub wait: Option<bool>,
}

/// The outcome of the resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub mode: RunMode,
    pub submitter: SubmitterMode,
    pub code_source: CodeSource,
    pub code_path: Option<String>,
    pub wait: bool,
}

impl Resolved {
    /// `mode=batch submitter=exec code_source=image wait=no`
    pub fn describe(&self) -> String {
        format!(
            "mode={} submitter={} code_source={} wait={}",
            self.mode,
            self.submitter,
            self.code_source,
            if self.wait { "yes" } else { "no" }
        )
    }
}

fn macro_for(mode: RunMode) -> (SubmitterMode, CodeSource, bool) {
    match mode {
        RunMode::Interactive => (SubmitterMode::PortForward, CodeSource::Upload, true),
        RunMode::Batch => (SubmitterMode::Exec, CodeSource::Image, false),
    }
}

/// Whether a layer above the shipped defaults set the infra key at `path`.
fn infra_sets(cfg: &LoadedConfig, path: &str) -> bool {
    cfg.infra
        .source
        .get_path(path)
        .and_then(|n| n.span)
        .is_some_and(|s| s.kind() != SourceKind::Shipped)
}

/// Resolve submitter, code source, code path and waiting for `cfg` and `flags`.
pub fn resolve(cfg: &LoadedConfig, flags: &ModeFlags) -> Result<Resolved> {
    let launch = &cfg.infra.launch;
    let mode = flags.mode.unwrap_or(launch.run_mode);
    let (m_submitter, m_code, m_wait) = macro_for(mode);
    let submitter = flags.submitter.unwrap_or(
        if flags.mode.is_none() && infra_sets(cfg, "submit.submitter") {
            cfg.infra.submit.submitter
        } else {
            m_submitter
        },
    );
    let code_source = flags.code_source.unwrap_or(
        if flags.mode.is_none() && infra_sets(cfg, "launch.codeSource") {
            launch.code_source
        } else {
            m_code
        },
    );
    let code_path = flags
        .code_path
        .clone()
        .or_else(|| launch.code_path.clone())
        .filter(|p| !p.is_empty());
    let resolved = Resolved {
        mode,
        submitter,
        code_source,
        code_path,
        wait: flags.wait.unwrap_or(m_wait),
    };
    check(&resolved)?;
    Ok(resolved)
}

/// Code in the image or on Lustre needs to say where it is.
pub fn require_code_path(code_source: CodeSource, code_path: Option<&str>) -> Result<()> {
    if code_source != CodeSource::Upload && code_path.is_none_or(str::is_empty) {
        return Err(Diag::new(
            "nrl::run::code_path",
            format!("--code-source {code_source} requires --code-path (or infra.launch.codePath)"),
        )
        .help(
            "pass --code-path /opt/nemo-rl (where the image has the code) or a Lustre mount path",
        ));
    }
    Ok(())
}

/// The combinations that cannot work.
pub fn check(r: &Resolved) -> Result<()> {
    require_code_path(r.code_source, r.code_path.as_deref())?;
    if r.submitter == SubmitterMode::Exec && r.code_source == CodeSource::Upload {
        return Err(Diag::new(
            "nrl::run::exec_upload",
            "the exec submitter runs code already on the head pod; it cannot upload a working_dir",
        )
        .help(
            "use --code-source image|lustre with --code-path, or --submitter portForward to upload",
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "mode_tests.rs"]
mod tests;
