//! `nrl diagnose`: after a launch, what went wrong with a run, as findings of the same
//! kind `nrl doctor` reports before one.

pub mod driver_log;
