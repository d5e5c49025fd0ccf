//! `k8s`: the cluster through `crate::k8s` (kube-rs): context and namespace, get, list,
//! server-side apply, delete, watch-based waits, pod logs, exec and port-forward.
//!
//! The client connects on first use (kubeconfig context, or in-cluster). Apply, delete
//! and exec are recorded in plan mode; before the first real change the context and
//! namespace are printed. Each function runs its body through `at(call position, …)`:
//! Rhai leaves the errors of namespaced native calls (`k8s::get(…)`) without a position.

use std::ops::ControlFlow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rhai::plugin::*;
use rhai::{Array, Dynamic, FnPtr, INT, Map};
use serde_json::Value as Json;

use super::k8s_wait::condition_check;
use super::render::Manifest;
use super::stream::Pump;
use crate::diag::Diag;
use crate::k8s::logs::LogOptions;
use crate::k8s::portforward::{PodTarget, PortForward as Forward};
use crate::k8s::resources::by_kind;
use crate::k8s::wait::Verdict;
use crate::k8s::{ApplyOptions, K8s, ObjectRef};
use crate::script::convert::{dynamic_to_json, json_to_dynamic, string_list};
use crate::script::errors::{RhaiResult, at, fail, usage};
use crate::script::host::{Host, host};

/// A local port forwarded to a pod (`k8s::port_forward`); closed with `close()` or when
/// the script ends.
#[derive(Clone)]
pub struct PortForward {
    inner: Arc<Mutex<Option<Arc<Forward>>>>,
    url: String,
    port: INT,
}

#[export_module]
pub mod k8s_module {
    use super::*;

    /// The kube context in use (connects on first use).
    #[rhai_fn(name = "context", return_raw)]
    pub fn current_context(ctx: NativeCallContext) -> RhaiResult<String> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<String> { Ok(host(&ctx)?.k8s_offline()?.context) })(),
        )
    }

    /// The namespace in use: `use_namespace`, else the context's, else `default`.
    #[rhai_fn(name = "namespace", return_raw)]
    pub fn current_namespace(ctx: NativeCallContext) -> RhaiResult<String> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<String> { Ok(host(&ctx)?.k8s_offline()?.namespace) })(),
        )
    }

    /// Switch to another kube context (the next call reconnects).
    #[rhai_fn(return_raw)]
    pub fn use_context(ctx: NativeCallContext, name: &str) -> RhaiResult<()> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<()> {
                host(&ctx)?.set_connect(|c| c.context = Some(name.to_string()));
                Ok(())
            })(),
        )
    }

    /// Act in another namespace from now on.
    #[rhai_fn(return_raw)]
    pub fn use_namespace(ctx: NativeCallContext, namespace: &str) -> RhaiResult<()> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<()> {
                host(&ctx)?.set_connect(|c| c.namespace = Some(namespace.to_string()));
                Ok(())
            })(),
        )
    }

    /// An object by kind (`RayCluster`, `RayJob`, `Pod`, …) and name in the current
    /// namespace, as a map; `()` when it does not exist.
    #[rhai_fn(return_raw)]
    pub fn get(ctx: NativeCallContext, kind: &str, name: &str) -> RhaiResult<Dynamic> {
        at(ctx.call_position(), get_in(&ctx, kind, name, None))
    }

    /// An object by kind and name in `namespace`; `()` when it does not exist.
    #[rhai_fn(name = "get", return_raw)]
    pub fn get_ns(
        ctx: NativeCallContext,
        kind: &str,
        name: &str,
        namespace: &str,
    ) -> RhaiResult<Dynamic> {
        at(
            ctx.call_position(),
            get_in(&ctx, kind, name, Some(namespace)),
        )
    }

    /// Every object of a kind in the current namespace.
    #[rhai_fn(return_raw)]
    pub fn list(ctx: NativeCallContext, kind: &str) -> RhaiResult<Array> {
        at(ctx.call_position(), list_with(ctx, kind, Map::new()))
    }

    /// Objects of a kind with options: `namespace`, `selector` (label selector,
    /// `"ray.io/cluster=x"`).
    #[rhai_fn(name = "list", return_raw)]
    pub fn list_with(ctx: NativeCallContext, kind: &str, options: Map) -> RhaiResult<Array> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Array> {
                let h = host(&ctx)?;
                check_keys("list", &options, &["namespace", "selector"])?;
                let ar = by_kind(kind).map_err(fail)?;
                let selector = opt_str(&options, "selector");
                let namespace = opt_str(&options, "namespace");
                if let Some(items) = h.sim_list(&ar.kind, namespace.as_deref(), selector.as_deref())
                {
                    return Ok(items.map_err(fail)?.iter().map(json_to_dynamic).collect());
                }
                let k = h.k8s()?;
                let ns = namespace.unwrap_or_else(|| k.namespace.clone());
                let items = h.block_on(k.list(&ar, &ns, selector.as_deref()))?;
                Ok(items.iter().map(json_to_dynamic).collect())
            })(),
        )
    }

    /// Server-side apply (field manager `nrl`) of a manifest, a map, or an array of them;
    /// returns what the server stored. Recorded in plan mode (the input comes back).
    #[rhai_fn(return_raw)]
    pub fn apply(ctx: NativeCallContext, objects: Dynamic) -> RhaiResult<Dynamic> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Dynamic> {
                let h = host(&ctx)?;
                if objects.is_array() {
                    let mut out = Array::new();
                    for o in objects.cast::<Array>() {
                        out.push(apply_one(&h, &o)?);
                    }
                    return Ok(Dynamic::from_array(out));
                }
                apply_one(&h, &objects)
            })(),
        )
    }

    /// Delete an object in the current namespace; returns whether it existed. Recorded
    /// in plan mode.
    #[rhai_fn(return_raw)]
    pub fn delete(ctx: NativeCallContext, kind: &str, name: &str) -> RhaiResult<bool> {
        at(ctx.call_position(), delete_in(&ctx, kind, name, None))
    }

    /// Delete an object in `namespace`; returns whether it existed.
    #[rhai_fn(name = "delete", return_raw)]
    pub fn delete_ns(
        ctx: NativeCallContext,
        kind: &str,
        name: &str,
        namespace: &str,
    ) -> RhaiResult<bool> {
        at(
            ctx.call_position(),
            delete_in(&ctx, kind, name, Some(namespace)),
        )
    }

    /// Watch an object until `condition` holds or `timeout` seconds pass: `"exists"`,
    /// `"deleted"`, `"ready"` (RayCluster ready, Deployment available, Pod running, Job
    /// complete), `"terminal"` (RayJob finished, Job or Pod done). Returns the object
    /// (`()` for `"deleted"`).
    #[rhai_fn(return_raw)]
    pub fn wait(
        ctx: NativeCallContext,
        kind: &str,
        name: &str,
        condition: &str,
        timeout: INT,
    ) -> RhaiResult<Dynamic> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Dynamic> {
                let h = host(&ctx)?;
                let ar = by_kind(kind).map_err(fail)?;
                let mut check = condition_check(&ar.kind, condition)?;
                if let Some(obj) = h.sim_object(&ar.kind, None, name) {
                    seconds(timeout)?;
                    // A simulated cluster does not change while a test waits: the
                    // condition holds now or never.
                    return match check(obj.as_ref()) {
                        Verdict::Done(v) => {
                            Ok(v.as_ref().map(json_to_dynamic).unwrap_or(Dynamic::UNIT))
                        }
                        Verdict::Fail(d) => Err(fail(d)),
                        Verdict::Pending => Err(fail(sim_never(&ar.kind, name, condition))),
                    };
                }
                let k = h.k8s()?;
                let ns = k.namespace.clone();
                let what = condition.to_string();
                let v = h.block_on(k.wait_for(&ar, &ns, name, seconds(timeout)?, &what, check))?;
                Ok(v.as_ref().map(json_to_dynamic).unwrap_or(Dynamic::UNIT))
            })(),
        )
    }

    /// Watch an object until `check(obj)` returns true (`obj` is `()` while it does not
    /// exist) or `timeout` seconds pass; returns the object.
    #[rhai_fn(name = "wait", return_raw)]
    pub fn wait_until(
        ctx: NativeCallContext,
        kind: &str,
        name: &str,
        check: FnPtr,
        timeout: INT,
    ) -> RhaiResult<Dynamic> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Dynamic> {
                let h = host(&ctx)?;
                let ar = by_kind(kind).map_err(fail)?;
                let timeout = seconds(timeout)?;
                if let Some(obj) = h.sim_object(&ar.kind, None, name) {
                    let value = obj.as_ref().map(json_to_dynamic).unwrap_or(Dynamic::UNIT);
                    let done: Dynamic = check.call_within_context(&ctx, (value.clone(),))?;
                    if done.as_bool().unwrap_or(false) {
                        return Ok(value);
                    }
                    return Err(fail(sim_never(
                        &ar.kind,
                        name,
                        "as the script's check wants",
                    )));
                }
                let k = h.k8s()?;
                let (name_owned, ns) = (name.to_string(), k.namespace.clone());
                let mut pump = Pump::start(&h, |tx| async move {
                    let states = tx.clone();
                    let r = k
                        .wait_for(
                            &ar,
                            &ns,
                            &name_owned,
                            timeout,
                            "as the script's check wants",
                            |o| {
                                let _ = states.send(Ok(o.cloned()));
                                Verdict::<()>::Pending
                            },
                        )
                        .await;
                    if let Err(e) = r {
                        let _ = tx.send(Err(e));
                    }
                })?;
                while let Some(state) = pump.next(&h)? {
                    let obj = state.map_err(fail)?;
                    let value = obj.as_ref().map(json_to_dynamic).unwrap_or(Dynamic::UNIT);
                    let done: Dynamic = check.call_within_context(&ctx, (value.clone(),))?;
                    if done.as_bool().unwrap_or(false) {
                        return Ok(value);
                    }
                }
                Err(fail(Diag::api(
                    "nrl::k8s::watch",
                    format!("the watch on {kind} {name} ended"),
                )))
            })(),
        )
    }

    /// A pod's log (the current container's, all of it).
    #[rhai_fn(return_raw)]
    pub fn logs(ctx: NativeCallContext, pod: &str) -> RhaiResult<String> {
        at(ctx.call_position(), logs_with(ctx, pod, Map::new()))
    }

    /// A pod's log with options: `container`, `tail` (last N lines), `namespace`.
    #[rhai_fn(name = "logs", return_raw)]
    pub fn logs_with(ctx: NativeCallContext, pod: &str, options: Map) -> RhaiResult<String> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<String> {
                let h = host(&ctx)?;
                if let Some(text) = sim_pod_log(&h, pod, &options)? {
                    return Ok(text);
                }
                let (k, ns, opts) = log_setup(&h, &options, false)?;
                let mut text = String::new();
                h.block_on(k.stream_pod_logs(&ns, pod, &opts, |line| {
                    text.push_str(line);
                    text.push('\n');
                    ControlFlow::Continue(())
                }))?;
                Ok(text)
            })(),
        )
    }

    /// Follow a pod's log, calling `callback(line)` per line until the pod ends or the
    /// callback returns `false`. Options as for `logs`.
    #[rhai_fn(name = "logs", return_raw)]
    pub fn logs_follow(
        ctx: NativeCallContext,
        pod: &str,
        options: Map,
        callback: FnPtr,
    ) -> RhaiResult<()> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<()> {
                let h = host(&ctx)?;
                if let Some(text) = sim_pod_log(&h, pod, &options)? {
                    for line in text.lines() {
                        let more: Dynamic =
                            callback.call_within_context(&ctx, (line.to_string(),))?;
                        if !more.as_bool().unwrap_or(true) {
                            break;
                        }
                    }
                    return Ok(());
                }
                let (k, ns, opts) = log_setup(&h, &options, true)?;
                let pod_owned = pod.to_string();
                let mut pump = Pump::start(&h, |tx| async move {
                    let lines = tx.clone();
                    let r = k
                        .stream_pod_logs(&ns, &pod_owned, &opts, |line| {
                            match lines.send(Ok(line.to_string())) {
                                Ok(()) => ControlFlow::Continue(()),
                                Err(_) => ControlFlow::Break(()),
                            }
                        })
                        .await;
                    if let Err(e) = r {
                        let _ = tx.send(Err(e));
                    }
                })?;
                while let Some(line) = pump.next(&h)? {
                    let line = line.map_err(fail)?;
                    let more: Dynamic = callback.call_within_context(&ctx, (line,))?;
                    if !more.as_bool().unwrap_or(true) {
                        break;
                    }
                }
                Ok(())
            })(),
        )
    }

    /// Run a command in a pod (`"ls /tmp"` runs through `sh -c`; an array runs as is);
    /// returns `#{code, stdout, stderr, planned}`. Recorded in plan mode.
    #[rhai_fn(return_raw)]
    pub fn exec(ctx: NativeCallContext, pod: &str, command: Dynamic) -> RhaiResult<Map> {
        at(
            ctx.call_position(),
            exec_with(ctx, pod, command, Map::new()),
        )
    }

    /// `exec` with options: `container`, `namespace`, `stdin` (text fed to the command).
    #[rhai_fn(name = "exec", return_raw)]
    pub fn exec_with(
        ctx: NativeCallContext,
        pod: &str,
        command: Dynamic,
        options: Map,
    ) -> RhaiResult<Map> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Map> {
                let h = host(&ctx)?;
                check_keys("exec", &options, &["container", "namespace", "stdin"])?;
                let argv = if command.is_string() {
                    vec!["sh".to_string(), "-c".to_string(), command.to_string()]
                } else {
                    string_list(&command, "the command").map_err(fail)?
                };
                let mut out = Map::new();
                if h.dry_run() {
                    h.plan.record("exec", format!("Pod/{pod}"), argv.join(" "));
                    out.insert("code".into(), Dynamic::from_int(0));
                    out.insert("stdout".into(), "".into());
                    out.insert("stderr".into(), "".into());
                    out.insert("planned".into(), Dynamic::TRUE);
                    return Ok(out);
                }
                let k = h.k8s()?;
                let ns = opt_str(&options, "namespace").unwrap_or_else(|| k.namespace.clone());
                h.announce(&k, &ns);
                let container = opt_str(&options, "container");
                let stdin = opt_str(&options, "stdin");
                let args: Vec<&str> = argv.iter().map(String::as_str).collect();
                let r = h.block_on(k.exec(
                    &ns,
                    pod,
                    container.as_deref(),
                    &args,
                    stdin.as_deref().map(str::as_bytes),
                ))?;
                out.insert("code".into(), Dynamic::from_int(r.exit_code.into()));
                out.insert("stdout".into(), r.stdout_str().into());
                out.insert(
                    "stderr".into(),
                    String::from_utf8_lossy(&r.stderr).into_owned().into(),
                );
                out.insert("planned".into(), Dynamic::FALSE);
                Ok(out)
            })(),
        )
    }

    /// Forward a local port (127.0.0.1, free port) to `port` of a pod: `target` is a pod
    /// name or `#{selector: "ray.io/cluster=x,ray.io/node-type=head"}` (first running
    /// pod, re-resolved per connection). Forwards to the same target are shared.
    #[rhai_fn(return_raw)]
    pub fn port_forward(
        ctx: NativeCallContext,
        target: Dynamic,
        port: INT,
    ) -> RhaiResult<PortForward> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<PortForward> {
                let h = host(&ctx)?;
                let k = h.k8s()?;
                let target = if target.is_string() {
                    PodTarget::Name(target.to_string())
                } else if let Some(m) = target
                    .read_lock::<Map>()
                    .filter(|m| m.contains_key("selector"))
                {
                    PodTarget::Selector(
                        m.get("selector").map(|v| v.to_string()).unwrap_or_default(),
                    )
                } else {
                    return Err(usage(
                        "nrl::script::type",
                        "port_forward needs a pod name or #{selector: \"…\"}",
                        "e.g. k8s::port_forward(#{selector: \"ray.io/node-type=head\"}, 8265)",
                    ));
                };
                let Ok(remote) = u16::try_from(port) else {
                    return Err(usage(
                        "nrl::script::option",
                        format!("port {port} is out of range"),
                        "ports are 1-65535",
                    ));
                };
                let ns = k.namespace.clone();
                let fwd = h.block_on(k.port_forward(&ns, target, remote))?;
                Ok(PortForward {
                    url: fwd.url(),
                    port: INT::from(fwd.local.port()),
                    inner: Arc::new(Mutex::new(Some(fwd))),
                })
            })(),
        )
    }

    /// `http://127.0.0.1:<local port>`.
    #[rhai_fn(global, get = "url", pure)]
    pub fn url(p: &mut PortForward) -> String {
        p.url.clone()
    }

    /// The local port.
    #[rhai_fn(global, get = "port", pure)]
    pub fn port(p: &mut PortForward) -> INT {
        p.port
    }

    /// Stop forwarding (once no other handle shares it).
    #[rhai_fn(global, pure)]
    pub fn close(p: &mut PortForward) {
        if let Ok(mut slot) = p.inner.lock() {
            slot.take();
        }
    }

    /// "context `x`, namespace `y`".
    #[rhai_fn(return_raw)]
    pub fn banner(ctx: NativeCallContext) -> RhaiResult<String> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<String> { Ok(host(&ctx)?.k8s_offline()?.banner()) })(),
        )
    }
}

fn check_keys(what: &str, options: &Map, allowed: &[&str]) -> RhaiResult<()> {
    for key in options.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(usage(
                "nrl::script::option",
                format!("{what}() has no option `{key}`"),
                &format!("the options are: {}", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

fn opt_str(options: &Map, key: &str) -> Option<String> {
    options
        .get(key)
        .filter(|v| !v.is_unit())
        .map(|v| v.to_string())
}

fn seconds(timeout: INT) -> RhaiResult<Duration> {
    u64::try_from(timeout)
        .map(Duration::from_secs)
        .map_err(|_| {
            usage(
                "nrl::script::option",
                format!("timeout {timeout} is negative"),
                "give seconds, zero or more",
            )
        })
}

fn get_in(
    ctx: &NativeCallContext,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
) -> RhaiResult<Dynamic> {
    let h = host(ctx)?;
    let ar = by_kind(kind).map_err(fail)?;
    if let Some(obj) = h.sim_object(&ar.kind, namespace, name) {
        return Ok(obj.as_ref().map(json_to_dynamic).unwrap_or(Dynamic::UNIT));
    }
    let k = h.k8s()?;
    let ns = namespace
        .map(str::to_string)
        .unwrap_or_else(|| k.namespace.clone());
    let obj = h.block_on(k.get(&ar, &ns, name))?;
    Ok(obj.as_ref().map(json_to_dynamic).unwrap_or(Dynamic::UNIT))
}

fn delete_in(
    ctx: &NativeCallContext,
    kind: &str,
    name: &str,
    namespace: Option<&str>,
) -> RhaiResult<bool> {
    let h = host(ctx)?;
    let ar = by_kind(kind).map_err(fail)?;
    if h.dry_run() {
        let ns = namespace
            .map(str::to_string)
            .unwrap_or_else(|| planned_namespace(&h));
        h.plan.record(
            "delete",
            format!("{}/{name}", ar.kind),
            format!("namespace {ns}"),
        );
        return Ok(true);
    }
    let k = h.k8s()?;
    let ns = namespace
        .map(str::to_string)
        .unwrap_or_else(|| k.namespace.clone());
    h.announce(&k, &ns);
    h.block_on(k.delete(&ar, &ns, name))
}

/// The namespace shown in plan steps without connecting.
fn planned_namespace(h: &Host) -> String {
    h.connect_options()
        .namespace
        .unwrap_or_else(|| "(current)".to_string())
}

fn apply_one(h: &Host, obj: &Dynamic) -> RhaiResult<Dynamic> {
    let json: Json = match obj.read_lock::<Manifest>() {
        Some(m) => m.node().to_json(),
        None => dynamic_to_json(obj).map_err(fail)?,
    };
    if h.dry_run() {
        let ns_hint = planned_namespace(h);
        let r = ObjectRef::of(&json, &ns_hint).map_err(fail)?;
        h.plan.record_apply(
            r.describe(),
            format!(
                "namespace {} (server-side apply, field manager nrl)",
                r.namespace
            ),
            json.clone(),
        );
        return Ok(json_to_dynamic(&json));
    }
    let k = h.k8s()?;
    let r = ObjectRef::of(&json, &k.namespace).map_err(fail)?;
    h.announce(&k, &r.namespace);
    let stored = h.block_on(k.apply(&json, ApplyOptions::default()))?;
    Ok(json_to_dynamic(&stored))
}

/// A condition the simulated object does not meet: in a test it never will.
fn sim_never(kind: &str, name: &str, condition: &str) -> Diag {
    Diag::api(
        "nrl::k8s::timeout",
        format!("{kind} {name} is not {condition} in the simulated cluster, and it does not change while a test waits"),
    )
    .help("script the state the wait should see with sim::object (or leave the object out for \"deleted\")")
}

/// In a test, a pod's log from the simulation (empty when none was scripted), with
/// `tail` applied; `None`: not a test.
fn sim_pod_log(h: &Host, pod: &str, options: &Map) -> RhaiResult<Option<String>> {
    check_keys("logs", options, &["container", "tail", "namespace"])?;
    let Some(text) = h.sim_log(pod) else {
        return Ok(None);
    };
    let text = text.unwrap_or_default();
    let tail = options
        .get("tail")
        .and_then(|v| v.as_int().ok())
        .and_then(|n| usize::try_from(n).ok());
    let Some(n) = tail else {
        return Ok(Some(text));
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines[lines.len().saturating_sub(n)..].join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    Ok(Some(out))
}

fn log_setup(h: &Host, options: &Map, follow: bool) -> RhaiResult<(K8s, String, LogOptions)> {
    check_keys("logs", options, &["container", "tail", "namespace"])?;
    let k = h.k8s()?;
    let ns = opt_str(options, "namespace").unwrap_or_else(|| k.namespace.clone());
    let tail = match options.get("tail") {
        Some(v) => Some(v.as_int().map_err(|_| {
            usage(
                "nrl::script::option",
                "`tail` must be a number of lines",
                "e.g. #{tail: 100}",
            )
        })?),
        None => None,
    };
    let opts = LogOptions {
        container: opt_str(options, "container"),
        follow,
        tail,
        previous: false,
    };
    Ok((k, ns, opts))
}
