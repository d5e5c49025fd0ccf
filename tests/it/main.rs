//! The integration tests of `nrl`: one test binary, one module per area (as uv and
//! ripgrep do), so the library, the fake Kubernetes API server and the other helpers
//! under `support/` are compiled and linked once, and one Ray head serves the whole run.
//!
//! Run one area with its module path as the filter: `cargo test --test it cluster_cli::`.

mod nemo_rl_oracle;
mod overrides_golden;
mod overrides_props;
mod ray_fake_dashboard;
mod render_catalog;
