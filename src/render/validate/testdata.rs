//! Test-only helpers: the reference data vendored under `tests/data/reference/`.

use std::path::PathBuf;

/// `tests/data/reference/<sub>` (a copy of the shared reference material, so tests run
/// from a clean clone).
pub fn reference_dir(sub: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/reference")
        .join(sub)
}

/// The repository's `schemas/` folder.
pub fn vendored_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas")
}
