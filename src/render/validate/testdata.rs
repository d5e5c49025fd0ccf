//! Test-only helpers: finding the shared reference data beside the repository.

use std::path::PathBuf;

/// `shared/reference/<sub>`, looked up beside the repository and its ancestors (a worktree
/// sits two levels below `shared/`, CI's clone one level), or `$NRL_SHARED_REFERENCE`.
/// Panics with a clear message when it cannot be found: these tests must not skip.
pub fn reference_dir(sub: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("NRL_SHARED_REFERENCE") {
        return PathBuf::from(dir).join(sub);
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for dir in manifest.ancestors() {
        let candidate = dir.join("shared").join("reference").join(sub);
        if candidate.is_dir() {
            return candidate;
        }
    }
    panic!(
        "shared/reference/{sub} not found beside {} or its parents; set NRL_SHARED_REFERENCE",
        manifest.display()
    );
}

/// The repository's `schemas/` folder.
pub fn vendored_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas")
}
