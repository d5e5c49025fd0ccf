//! `sim`: the simulated cluster a test scripts (only under `nrl script test`). What it
//! holds answers the reads of the plan-mode run ([`crate::script::sim`]).

use rhai::plugin::*;
use rhai::{Dynamic, Map};
use serde_json::{Value as Json, json};

use super::render::Manifest;
use crate::diag::Diag;
use crate::script::convert::dynamic_to_json;
use crate::script::errors::{RhaiResult, at, fail, usage};
use crate::script::host::host;
use crate::script::sim::Simulation;

/// The Ray job statuses a simulated job can be in.
const STATUSES: [&str; 5] = ["PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED"];

fn with_sim(
    ctx: &NativeCallContext,
    f: impl FnOnce(&mut Simulation) -> RhaiResult<()>,
) -> RhaiResult<()> {
    let h = host(ctx)?;
    match h.plan.with_simulation(f) {
        Some(r) => r,
        None => Err(fail(
            Diag::new(
                "nrl::script::sim",
                "there is no simulated cluster outside a test",
            )
            .help("`sim::…` is for `nrl script test` files (`*_test.rhai`)"),
        )),
    }
}

#[export_module]
pub mod sim_module {
    use super::*;

    /// An object the simulated cluster holds, as `k8s::get`/`k8s::list`/`k8s::wait`
    /// return it: a map (or Manifest) with `kind` and `metadata.name` (and, if wanted,
    /// `metadata.namespace`, `metadata.labels`, `status`). Replaces one of the same kind
    /// and name. Example: `sim::object(#{kind: "RayCluster", metadata: #{name: "rc"}})`
    #[rhai_fn(return_raw)]
    pub fn object(ctx: NativeCallContext, manifest: Dynamic) -> RhaiResult<()> {
        let obj: Json = match manifest.read_lock::<Manifest>() {
            Some(m) => m.node().to_json(),
            None => dynamic_to_json(&manifest).map_err(fail)?,
        };
        at(
            ctx.call_position(),
            with_sim(&ctx, |s| s.add_object(obj).map_err(fail)),
        )
    }

    /// The RayJob `name` (or the Ray job with submission id `name`) ends with Ray job
    /// status `status` (`SUCCEEDED`, `FAILED`, `STOPPED`; `PENDING`/`RUNNING` keep it
    /// going): what a planned RayJob's `status()`, `wait()`, `follow()` and a dashboard's
    /// `status(id)`/`wait(id)` return. Example: `sim::rayjob_ends("alice-quickstart", "FAILED")`
    #[rhai_fn(return_raw)]
    pub fn rayjob_ends(ctx: NativeCallContext, name: &str, status: &str) -> RhaiResult<()> {
        at(ctx.call_position(), end_job(&ctx, name, status, None))
    }

    /// `rayjob_ends` with the job's message (a dashboard's `message`).
    #[rhai_fn(name = "rayjob_ends", return_raw)]
    pub fn rayjob_ends_with(
        ctx: NativeCallContext,
        name: &str,
        status: &str,
        message: &str,
    ) -> RhaiResult<()> {
        at(
            ctx.call_position(),
            end_job(&ctx, name, status, Some(message.to_string())),
        )
    }

    /// The log of a RayJob (its driver log: what `follow()` prints and `log()` keeps),
    /// of a Ray job id (`dashboard.logs(id)`) or of a pod (`k8s::logs(pod)`).
    #[rhai_fn(return_raw)]
    pub fn log(ctx: NativeCallContext, name: &str, text: &str) -> RhaiResult<()> {
        at(
            ctx.call_position(),
            with_sim(&ctx, |s| {
                s.set_log(name, text);
                Ok(())
            }),
        )
    }

    /// Set an environment variable for the test's scripts (`${oc.env:…}`, Gym secrets
    /// `host:NAME`, `env()`). A test starts with only `NRL_USER=tester` and an empty `HOME`: the shell's
    /// environment is not seen. Example: `sim::env("HF_TOKEN", "hf_test")`
    #[rhai_fn(return_raw)]
    pub fn env(ctx: NativeCallContext, name: &str, value: &str) -> RhaiResult<()> {
        at(
            ctx.call_position(),
            with_sim(&ctx, |s| {
                s.env().set(name, value);
                Ok(())
            }),
        )
    }

    /// A pod `name` that stays `Pending`, its `PodScheduled` condition false with the
    /// scheduler's `reason` and `message` (what its event says), as `k8s::get("Pod", name)`
    /// returns it. Options: `namespace`, `labels` (map).
    #[rhai_fn(return_raw)]
    pub fn pending_pod(
        ctx: NativeCallContext,
        name: &str,
        reason: &str,
        message: &str,
        options: Map,
    ) -> RhaiResult<()> {
        let mut meta = json!({"name": name});
        for (key, value) in &options {
            match key.as_str() {
                "namespace" => meta["namespace"] = json!(value.to_string()),
                "labels" => meta["labels"] = dynamic_to_json(value).map_err(fail)?,
                other => {
                    return Err(usage(
                        "nrl::script::option",
                        format!("pending_pod() has no option `{other}`"),
                        "the options are `namespace` and `labels`",
                    ));
                }
            }
        }
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "status": {
                "phase": "Pending",
                "conditions": [{
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": reason,
                    "message": message,
                }],
            },
        });
        at(
            ctx.call_position(),
            with_sim(&ctx, |s| s.add_object(pod).map_err(fail)),
        )
    }
}

fn end_job(
    ctx: &NativeCallContext,
    name: &str,
    status: &str,
    message: Option<String>,
) -> RhaiResult<()> {
    if !STATUSES.contains(&status) {
        return Err(usage(
            "nrl::script::option",
            format!("`{status}` is not a Ray job status"),
            &format!("the statuses are {}", STATUSES.join(", ")),
        ));
    }
    with_sim(ctx, |s| {
        s.end_job(name, status, message);
        Ok(())
    })
}
