//! The integration tests of `nrl`: one test binary, one module per area (as uv and
//! ripgrep do), so the library, the fake Kubernetes API server and the other helpers
//! under `support/` are compiled and linked once, and one Ray head serves the whole run.
//!
//! Run one area with its module path as the filter: `cargo test --test it cluster_cli::`.

mod support;

mod cli_check;
mod cli_completions;
mod cli_doctor;
mod cluster_cli;
mod dev;
mod devpod;
mod diagnose;
mod diagnostics;
mod diff;
mod doctor_allow;
mod doctor_preflight;
mod doctor_rules;
mod fake_k8s;
mod gym_cli;
mod gym_e2e;
mod gym_parity;
mod install;
mod k8s_layer;
mod launch_fake;
mod launch_rayjob;
mod logs_collect;
mod nemo_rl_oracle;
mod overrides_golden;
mod overrides_props;
mod parity;
mod ray_fake_dashboard;
mod ray_jobs;
mod real_cluster;
mod render_catalog;
mod repl;
mod run_catalog;
mod run_k8s;
mod run_k8s_longlived;
mod run_local;
mod runs;
mod schema;
mod script_args;
mod script_cli;
mod script_cluster;
mod script_config;
mod script_dev;
mod script_doctor;
mod script_gym;
mod script_k8s;
mod script_playbooks;
mod script_ray;
mod script_run;
mod script_stdlib;
mod script_test_runner;
mod script_util;
mod top;
