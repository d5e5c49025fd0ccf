//! `nrl script`: Rhai playbooks over the same library functions the commands use.
//!
//! One engine factory ([`engine::new_engine`]) builds a sandboxed engine (strict variables,
//! failing map properties, operation/depth/size limits, cancellation through
//! `on_progress`) with the built-in modules of [`builtins`]. A script runs on its own OS
//! thread ([`run::run_on_thread`]); built-ins that do I/O block on a shared tokio runtime
//! and watch the run's cancellation token, so Ctrl-C stops a `sleep(60)` or a log follow
//! at once. `import "nrl/…"` loads the embedded `stdlib/`; other imports resolve next to
//! the importing script, then along `NRL_PATH` ([`resolver`]). In plan mode (`--dry-run`)
//! every built-in that would change a cluster records a step in the run's [`plan::Plan`]
//! and returns a simulated handle. Errors become [`crate::diag::Diag`]s with the script
//! span and the call chain through imported modules ([`errors`]). `nrl script test`
//! ([`test_runner`]) runs the `test_*` functions of `*_test.rhai` files in plan mode
//! against a simulated cluster ([`sim`]).

pub mod args;
pub mod builtins;
pub mod convert;
pub mod declared;
pub mod docs;
pub mod engine;
pub mod errors;
pub mod host;
pub mod output;
pub mod plan;
pub mod resolver;
pub mod run;
pub mod sim;
pub mod test_runner;

pub use host::{Host, HostOptions, Invocation, Limits};
pub use output::{CapturedOutput, Output, StdOutput, Stream};
pub use plan::{Plan, PlanStep};
pub use run::{Outcome, run_file, run_on_thread, run_source};
