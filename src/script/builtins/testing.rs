//! `testing`: assertions for playbook tests (`nrl script test`) and scripts alike —
//! `assert`, `assert_eq`, the plan assertions `assert_planned` and `planned`, and
//! `run_script`, which runs a whole script file in plan mode and returns its exit code
//! and plan. A failed assertion is an error (`nrl::script::assertion`) at the call.

use std::path::Path;
use std::sync::Arc;

use rhai::plugin::*;
use rhai::{Array, Dynamic, INT, Map};

use crate::diag::{Diag, Exit};
use crate::script::convert::{json_to_dynamic, string_list};
use crate::script::errors::{RhaiResult, at, fail};
use crate::script::host::{Host, host};
use crate::script::output::CapturedOutput;
use crate::script::plan::PlanStep;
use crate::script::run::run_file;

/// Code of a failed assertion.
pub const CODE_ASSERTION: &str = "nrl::script::assertion";

fn assertion(message: impl Into<String>) -> Box<EvalAltResult> {
    fail(Diag::new(CODE_ASSERTION, message).with_exit(Exit::Failed))
}

#[export_module]
pub mod testing_module {
    use super::*;

    /// Fail with `message` unless `condition` is true.
    #[rhai_fn(name = "assert", return_raw)]
    pub fn assert_with(ctx: NativeCallContext, condition: bool, message: &str) -> RhaiResult<()> {
        let r = if condition {
            Ok(())
        } else {
            Err(assertion(format!("assertion failed: {message}")))
        };
        at(ctx.call_position(), r)
    }

    /// Fail unless `condition` is true.
    #[rhai_fn(name = "assert", return_raw)]
    pub fn assert_plain(ctx: NativeCallContext, condition: bool) -> RhaiResult<()> {
        let r = if condition {
            Ok(())
        } else {
            Err(assertion("assertion failed"))
        };
        at(ctx.call_position(), r)
    }

    /// Fail unless `left == right`; the message shows both values.
    #[rhai_fn(name = "assert_eq", return_raw)]
    pub fn assert_eq(ctx: NativeCallContext, left: Dynamic, right: Dynamic) -> RhaiResult<()> {
        at(ctx.call_position(), check_eq(&ctx, left, right, None))
    }

    /// `assert_eq` with a message saying what was compared.
    #[rhai_fn(name = "assert_eq", return_raw)]
    pub fn assert_eq_with(
        ctx: NativeCallContext,
        left: Dynamic,
        right: Dynamic,
        message: &str,
    ) -> RhaiResult<()> {
        at(
            ctx.call_position(),
            check_eq(&ctx, left, right, Some(message)),
        )
    }

    /// Fail unless the plan has a step `action` (`apply`, `delete`, `submit`, …) on
    /// `kind`/`name`. Example: `assert_planned("apply", "RayJob", "alice-quickstart");`
    #[rhai_fn(return_raw)]
    pub fn assert_planned(
        ctx: NativeCallContext,
        action: &str,
        kind: &str,
        name: &str,
    ) -> RhaiResult<()> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<()> {
                let h = host(&ctx)?;
                let target = format!("{kind}/{name}");
                let steps = h.plan.steps();
                if steps
                    .iter()
                    .any(|s| s.action == action && s.target == target)
                {
                    return Ok(());
                }
                let had = if steps.is_empty() {
                    "the plan is empty".to_string()
                } else {
                    let listed: Vec<String> = steps
                        .iter()
                        .map(|s| format!("{} {}", s.action, s.target))
                        .collect();
                    format!("the plan has: {}", listed.join(", "))
                };
                Err(assertion(format!(
                    "nothing planned to {action} {target}; {had}"
                )))
            })(),
        )
    }

    /// The object of the last planned `action` on `kind`/`name` as a map (the rendered
    /// manifest of an `apply`), the step `#{action, target, details}` when it carries no
    /// object, `()` when nothing is planned. Example:
    /// `planned("apply", "RayJob", "alice-quickstart").spec.shutdownAfterJobFinishes`
    #[rhai_fn(return_raw)]
    pub fn planned(
        ctx: NativeCallContext,
        action: &str,
        kind: &str,
        name: &str,
    ) -> RhaiResult<Dynamic> {
        let h = host(&ctx)?;
        let target = format!("{kind}/{name}");
        let steps = h.plan.steps();
        let Some(i) = steps
            .iter()
            .rposition(|s| s.action == action && s.target == target)
        else {
            return Ok(Dynamic::UNIT);
        };
        Ok(match h.plan.object_of(i + 1) {
            Some(obj) => json_to_dynamic(&obj),
            None => Dynamic::from_map(step_map(&steps[i], None)),
        })
    }

    /// Run the script at `path` (from the working directory) in plan mode with `args`
    /// (what follows `--` on the command line), sharing this run's simulated cluster.
    /// Returns `#{exit, error, plan, stdout, stderr}`: the exit code (`exit(n)`, 1 for an
    /// uncaught error, 2 for a syntax error), the error message or `()`, its plan steps
    /// `[#{action, target, details, object}]` (also added to this run's plan), and what
    /// it printed. Example:
    /// `run_script("scripts/launch.rhai", ["--recipe", "examples/quickstart/recipe.yaml"])`
    #[rhai_fn(return_raw)]
    pub fn run_script(ctx: NativeCallContext, path: &str, args: Array) -> RhaiResult<Map> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Map> {
                let h = host(&ctx)?;
                let args = string_list(&Dynamic::from_array(args), "the script's arguments")
                    .map_err(fail)?;
                run_planned(&h, path, &args)
            })(),
        )
    }
}

fn check_eq(
    ctx: &NativeCallContext,
    left: Dynamic,
    right: Dynamic,
    message: Option<&str>,
) -> RhaiResult<()> {
    let shown = (format!("{left:?}"), format!("{right:?}"));
    // Rhai's own `==` (numbers, strings, arrays, maps, …); types without one compare
    // by their printed form and type.
    let equal = match ctx.call_native_fn::<bool>("==", (left.clone(), right.clone())) {
        Ok(b) => b,
        Err(_) => left.type_name() == right.type_name() && shown.0 == shown.1,
    };
    if equal {
        return Ok(());
    }
    let what = message.map(|m| format!(": {m}")).unwrap_or_default();
    Err(assertion(format!(
        "assert_eq failed{what}\n  left:  {}\n  right: {}",
        shown.0, shown.1
    )))
}

fn step_map(step: &PlanStep, object: Option<Dynamic>) -> Map {
    let mut m = Map::new();
    m.insert("action".into(), step.action.clone().into());
    m.insert("target".into(), step.target.clone().into());
    m.insert("details".into(), step.details.clone().into());
    m.insert("object".into(), object.unwrap_or(Dynamic::UNIT));
    m
}

/// A script file in plan mode on a host of its own (its output captured) that shares
/// `parent`'s simulation; its steps join `parent`'s plan.
fn run_planned(parent: &Arc<Host>, path: &str, args: &[String]) -> RhaiResult<Map> {
    let captured = Arc::new(CapturedOutput::new());
    let mut opts = parent.opts.clone();
    opts.dry_run = true;
    opts.live_reads = parent.live_reads();
    opts.output = captured.clone();
    opts.interactive = false;
    let child = Host::new(opts);
    if let Some(sim) = parent.plan.simulation() {
        child.plan.simulate(sim);
    }
    let file = parent.path(path);
    let result = run_file(&child, Path::new(&file), args);
    if parent.is_cancelled() {
        return Err(crate::script::errors::cancelled());
    }
    let (exit, error) = match &result {
        Ok(o) => (o.exit.code(), Dynamic::UNIT),
        Err(d) => (d.exit.code(), Dynamic::from(d.message.clone())),
    };
    let mut steps = Array::new();
    for (i, step) in child.plan.steps().iter().enumerate() {
        let object = child.plan.object_of(i + 1);
        match &object {
            Some(obj) => {
                parent
                    .plan
                    .record_apply(step.target.clone(), step.details.clone(), obj.clone())
            }
            None => parent.plan.record(
                step.action.clone(),
                step.target.clone(),
                step.details.clone(),
            ),
        };
        steps.push(Dynamic::from_map(step_map(
            step,
            object.as_ref().map(json_to_dynamic),
        )));
    }
    let mut m = Map::new();
    m.insert("exit".into(), Dynamic::from_int(INT::from(exit)));
    m.insert("error".into(), error);
    m.insert("plan".into(), Dynamic::from_array(steps));
    m.insert("stdout".into(), captured.stdout().into());
    m.insert("stderr".into(), captured.stderr().into());
    Ok(m)
}
