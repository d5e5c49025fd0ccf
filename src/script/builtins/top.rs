//! `top`: what `nrl top` shows, as data — the same library call as `nrl top --once`
//! (`crate::top::session::snapshot`), read-only.

use rhai::plugin::*;
use rhai::{Dynamic, Map};

use super::options::Options;
use crate::script::errors::{RhaiResult, at, fail};
use crate::script::host::host;
use crate::top::progress::ProgressPatterns;
use crate::top::session::{TopOptions, snapshot};

fn view(ctx: &NativeCallContext, options: &Map) -> RhaiResult<Dynamic> {
    let o = Options::new(
        "top::snapshot",
        options,
        &["all_users", "run", "tail", "progress_patterns"],
    )?;
    let h = host(ctx)?;
    let patterns =
        ProgressPatterns::with_overrides(&o.strings("progress_patterns")?.unwrap_or_default())
            .map_err(|e| fail(crate::diag::Diag::new("nrl::top::pattern", e)))?;
    let opts = TopOptions {
        user: (!o.bool("all_users", false)?)
            .then(|| crate::config::env::username(h.opts.env.as_ref())),
        focus: o
            .str("run")
            .map(|name| crate::top::session::focus_named(&name, h.opts.env.as_ref()))
            .transpose()
            .map_err(fail)?,
        tail: o.int("tail")?.map_or(20, |n| n.max(0) as usize),
        patterns,
        width: 100,
    };
    let k = h.k8s()?;
    let view = h.block_on(snapshot(&k, &opts))?;
    rhai::serde::to_dynamic(&view)
}

#[export_module]
pub mod top_module {
    use super::*;

    /// Your runs in the namespace, as `nrl top -o json` prints them: `#{context,
    /// namespace, user, connection, runs: [#{name, kind, owner, state, finished, alert,
    /// created, age, wandb}], selected: #{name, kind, clusters: [#{name, role, state,
    /// pods: [...]}], events: [...], log: #{lines, source, note}, progress: #{step,
    /// max_steps, loss, reward, throughput, step_time, prompts_done, prompts_total,
    /// validation_accuracy, history}}}`.
    ///
    /// ```rhai
    /// let v = top::snapshot();
    /// for r in v.runs { print(`${r.name} ${r.state}`); }
    /// ```
    #[rhai_fn(name = "snapshot", return_raw)]
    pub fn snapshot_mine(ctx: NativeCallContext) -> RhaiResult<Dynamic> {
        at(ctx.call_position(), view(&ctx, &Map::new()))
    }

    /// [`snapshot`] with options: `all_users` (everyone's runs), `run` (the run whose
    /// details are returned: a run id, as `nrl top RUN_ID`, or a RayJob, RayCluster or
    /// Gym run name), `tail` (log lines), `progress_patterns` (`["NAME=REGEX"]`,
    /// as `--progress-pattern`).
    ///
    /// ```rhai
    /// let v = top::snapshot(#{ run: "alice-grpo", tail: 50 });
    /// if v.selected.progress.step != () { print(`step ${v.selected.progress.step}`); }
    /// ```
    #[rhai_fn(name = "snapshot", return_raw)]
    pub fn snapshot_with(ctx: NativeCallContext, options: Map) -> RhaiResult<Dynamic> {
        at(ctx.call_position(), view(&ctx, &options))
    }
}
