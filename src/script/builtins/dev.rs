//! `dev`: the personal dev pod through `crate::dev` — the library behind
//! `nrl dev setup-secrets|connect|stop` — plus `sync_code`, which copies local code into
//! the pod. The pod comes from `dev:` in the infra layers (shipped defaults, user defaults,
//! an `infra` file), as for the commands.
//!
//! Everything that changes the cluster is recorded in plan mode. Secret values are never
//! printed or recorded: summaries list keys and sizes only.

use std::sync::Arc;
use std::time::Duration;

use rhai::plugin::*;
use rhai::{Array, Dynamic, Map};

use super::options::Options;
use crate::config::infra_only::InfraRequest;
use crate::dev::secrets::{SecretEdit, check_key, check_unique};
use crate::dev::{self, ConnectOptions, DevPod, Report, Stopped};
use crate::diag::Diag;
use crate::ray::UploadSet;
use crate::script::errors::{RhaiResult, at, fail, usage};
use crate::script::host::{Host, host};
use crate::script::output::Stream;

/// How long `connect_run` and `sync` wait for the pod to run (as `nrl dev connect`).
const START_TIMEOUT: Duration = Duration::from_secs(300);
/// How long `stop` waits for the pod to go (as `nrl dev stop`).
const STOP_TIMEOUT: Duration = Duration::from_secs(120);

/// Options that choose the pod, accepted by every `dev` function.
const WHERE: [&str; 3] = ["namespace", "infra", "image"];

#[export_module]
pub mod dev_module {
    use super::*;

    /// Your dev pod as the infra layers describe it (nothing is contacted): `#{name,
    /// namespace, image, container, secret, service_account, workdir, user}`.
    #[rhai_fn(return_raw)]
    pub fn pod(ctx: NativeCallContext) -> RhaiResult<Map> {
        at(ctx.call_position(), describe(&ctx, &Map::new()))
    }

    /// `pod` with options: `namespace`, `infra` (an infra YAML whose `dev:` applies),
    /// `image`.
    #[rhai_fn(name = "pod", return_raw)]
    pub fn pod_with(ctx: NativeCallContext, options: Map) -> RhaiResult<Map> {
        at(ctx.call_position(), describe(&ctx, &options))
    }

    /// Create or update your secret `<user>-secrets` (its keys are the dev pod's
    /// environment) — `nrl dev setup-secrets`: `#{HF_TOKEN: "hf_…", OLD_KEY: ()}` sets
    /// HF_TOKEN and removes OLD_KEY. Values are never printed. Returns `#{secret,
    /// namespace, created, keys: [#{key, state, bytes}]}`. Recorded in plan mode.
    #[rhai_fn(return_raw)]
    pub fn setup_secrets(ctx: NativeCallContext, values: Map) -> RhaiResult<Map> {
        at(ctx.call_position(), secrets(&ctx, &values, &Map::new()))
    }

    /// `setup_secrets` with options: `namespace`, `infra`.
    #[rhai_fn(name = "setup_secrets", return_raw)]
    pub fn setup_secrets_with(
        ctx: NativeCallContext,
        values: Map,
        options: Map,
    ) -> RhaiResult<Map> {
        at(ctx.call_position(), secrets(&ctx, &values, &options))
    }

    /// Run a command in your dev pod — `nrl dev connect -- CMD` without a terminal —
    /// starting the pod first if needed. A string runs with `sh -c`; an array is the
    /// command's words. Returns `#{code, stdout, stderr, planned}`. Recorded in plan mode.
    #[rhai_fn(return_raw)]
    pub fn connect_run(ctx: NativeCallContext, command: Dynamic) -> RhaiResult<Map> {
        at(ctx.call_position(), run_in_pod(&ctx, &command, &Map::new()))
    }

    /// `connect_run` with options: `stdin` (text fed to the command), `timeout` (seconds
    /// to wait for the pod, default 300), `recreate` (replace the pod first),
    /// `namespace`, `infra`, `image`.
    #[rhai_fn(name = "connect_run", return_raw)]
    pub fn connect_run_with(
        ctx: NativeCallContext,
        command: Dynamic,
        options: Map,
    ) -> RhaiResult<Map> {
        at(ctx.call_position(), run_in_pod(&ctx, &command, &options))
    }

    /// Copy local files and directories (relative to the working directory) into the dev
    /// pod's working directory, starting the pod if needed. The selection is a Ray
    /// upload's: `.git`, `__pycache__`, `.venv`, `*.pyc`… are left out; files deleted
    /// locally stay in the pod. Needs `python3` in the image. Returns `#{files, bytes,
    /// dest, pod, planned}`. Recorded in plan mode.
    #[rhai_fn(return_raw)]
    pub fn sync_code(ctx: NativeCallContext, paths: Dynamic) -> RhaiResult<Map> {
        at(ctx.call_position(), sync_paths(&ctx, &paths, &Map::new()))
    }

    /// `sync_code` with options: `dest` (directory in the pod; relative ones are under its
    /// working directory; default `.`), `repo_root` (what `paths` are relative to),
    /// `timeout`, `namespace`, `infra`, `image`.
    #[rhai_fn(name = "sync_code", return_raw)]
    pub fn sync_code_with(ctx: NativeCallContext, paths: Dynamic, options: Map) -> RhaiResult<Map> {
        at(ctx.call_position(), sync_paths(&ctx, &paths, &options))
    }

    /// Delete your dev pod and wait until it is gone (the workspace volume stays) —
    /// `nrl dev stop`. Returns whether it existed. Recorded in plan mode.
    #[rhai_fn(return_raw)]
    pub fn stop(ctx: NativeCallContext) -> RhaiResult<bool> {
        at(ctx.call_position(), stop_pod(&ctx, &Map::new()))
    }

    /// `stop` with options: `force` (delete a pod labelled as another user's), `timeout`
    /// (seconds, default 120), `namespace`, `infra`.
    #[rhai_fn(name = "stop", return_raw)]
    pub fn stop_with(ctx: NativeCallContext, options: Map) -> RhaiResult<bool> {
        at(ctx.call_position(), stop_pod(&ctx, &options))
    }
}

/// Progress to the script's stderr, documents (a Role to apply) to its stdout.
struct ScriptReport(Arc<Host>);

impl Report for ScriptReport {
    fn progress(&mut self, line: &str) {
        self.0.line(Stream::Stderr, line);
    }
    fn document(&mut self, text: &str) {
        self.0.print(Stream::Stdout, text);
    }
}

fn allowed(extra: &[&'static str]) -> Vec<&'static str> {
    WHERE.iter().chain(extra).copied().collect()
}

/// The dev pod from the infra layers; the namespace defaults to `k8s::use_namespace`'s.
fn resolve(h: &Host, o: &Options) -> RhaiResult<DevPod> {
    let connect = h.connect_options();
    let namespace = o.str("namespace").or(connect.namespace.clone());
    let image = o.str("image");
    let mut req = InfraRequest::new(h.opts.env.clone())
        .flag("namespace option", "namespace", namespace.as_deref())
        .flag("image option", "dev.image", image.as_deref());
    req.infra = o.str("infra").map(|p| h.path(&p));
    req.namespace_fallback = crate::k8s::context::inferred_namespace(&connect, h.opts.env.as_ref());
    dev::resolve(&req).map_err(fail)
}

fn workdir(pod: &DevPod) -> Option<String> {
    pod.manifest
        .pointer("/spec/containers/0/workingDir")
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

fn describe(ctx: &NativeCallContext, options: &Map) -> RhaiResult<Map> {
    let h = host(ctx)?;
    let o = Options::new("dev::pod", options, &WHERE)?;
    let pod = resolve(&h, &o)?;
    let mut m = Map::new();
    m.insert("name".into(), pod.name.clone().into());
    m.insert("namespace".into(), pod.namespace.clone().into());
    m.insert("image".into(), pod.image.clone().into());
    m.insert("container".into(), pod.container.clone().into());
    m.insert("secret".into(), pod.secret_name.clone().into());
    m.insert("service_account".into(), pod.service_account.clone().into());
    m.insert(
        "workdir".into(),
        workdir(&pod).map(Dynamic::from).unwrap_or(Dynamic::UNIT),
    );
    m.insert("user".into(), pod.user.clone().into());
    Ok(m)
}

fn connect_options(o: &Options, command: Vec<String>) -> RhaiResult<ConnectOptions> {
    Ok(ConnectOptions {
        recreate: o.bool("recreate", false)?,
        skip_rbac_check: false,
        timeout: o.seconds("timeout", START_TIMEOUT)?,
        command,
        tty: false,
    })
}

fn secrets(ctx: &NativeCallContext, values: &Map, options: &Map) -> RhaiResult<Map> {
    let h = host(ctx)?;
    let o = Options::new("dev::setup_secrets", options, &["namespace", "infra"])?;
    let mut edits = Vec::with_capacity(values.len());
    for (key, value) in values {
        check_key(key).map_err(fail)?;
        edits.push(if value.is_unit() {
            SecretEdit::Remove(key.to_string())
        } else {
            SecretEdit::Set(key.to_string(), value.to_string().into_bytes())
        });
    }
    if edits.is_empty() {
        return Err(usage(
            "nrl::dev::secret_args",
            "nothing to do: no keys given",
            "e.g. dev::setup_secrets(#{HF_TOKEN: env(\"HF_TOKEN\")})",
        ));
    }
    check_unique(&edits).map_err(fail)?;
    let pod = resolve(&h, &o)?;
    if h.dry_run() {
        let keys: Vec<String> = edits
            .iter()
            .map(|e| match e {
                SecretEdit::Set(k, _) => format!("{k} (set)"),
                SecretEdit::Remove(k) => format!("{k} (remove)"),
            })
            .collect();
        h.plan.record(
            "apply",
            format!("Secret/{}", pod.secret_name),
            format!("namespace {}; keys {}", pod.namespace, keys.join(", ")),
        );
        let lines = edits
            .iter()
            .map(|e| key_line(e.key(), "planned", None))
            .collect();
        return Ok(secret_map(&pod, false, lines, true));
    }
    let k = h.k8s()?;
    h.announce(&k, &pod.namespace);
    let mut report = ScriptReport(h.clone());
    let outcome = h.block_on(dev::setup_secrets(&k, &pod, &edits, &mut report))?;
    h.print(Stream::Stderr, &outcome.summary);
    let lines = outcome
        .lines
        .iter()
        .map(|l| key_line(&l.key, l.state.word(), l.bytes))
        .collect();
    Ok(secret_map(&pod, outcome.created, lines, false))
}

fn key_line(key: &str, state: &str, bytes: Option<usize>) -> Dynamic {
    let mut m = Map::new();
    m.insert("key".into(), key.into());
    m.insert("state".into(), state.into());
    m.insert(
        "bytes".into(),
        bytes
            .map(|b| Dynamic::from_int(b as i64))
            .unwrap_or(Dynamic::UNIT),
    );
    Dynamic::from_map(m)
}

fn secret_map(pod: &DevPod, created: bool, keys: Array, planned: bool) -> Map {
    let mut m = Map::new();
    m.insert("secret".into(), pod.secret_name.clone().into());
    m.insert("namespace".into(), pod.namespace.clone().into());
    m.insert("created".into(), Dynamic::from_bool(created));
    m.insert("keys".into(), Dynamic::from_array(keys));
    m.insert("planned".into(), Dynamic::from_bool(planned));
    m
}

/// A command from a script: a string runs with `sh -c`, an array is the words.
fn command_words(command: &Dynamic) -> RhaiResult<Vec<String>> {
    if command.is_string() {
        return Ok(vec!["sh".into(), "-c".into(), command.to_string()]);
    }
    let words = crate::script::convert::string_list(command, "the command").map_err(fail)?;
    if words.is_empty() {
        return Err(usage(
            "nrl::dev::no_command",
            "the command is empty",
            "pass a string (run with sh -c) or an array of words",
        ));
    }
    Ok(words)
}

fn run_in_pod(ctx: &NativeCallContext, command: &Dynamic, options: &Map) -> RhaiResult<Map> {
    let h = host(ctx)?;
    let o = Options::new(
        "dev::connect_run",
        options,
        &allowed(&["stdin", "timeout", "recreate"]),
    )?;
    let words = command_words(command)?;
    let stdin = o.str("stdin");
    let opts = connect_options(&o, words.clone())?;
    let pod = resolve(&h, &o)?;
    let mut m = Map::new();
    if h.dry_run() {
        h.plan.record(
            "exec",
            format!("Pod/{}", pod.name),
            format!("namespace {}; {}", pod.namespace, shown(&words)),
        );
        m.insert("code".into(), Dynamic::from_int(0));
        m.insert("stdout".into(), "".into());
        m.insert("stderr".into(), "".into());
        m.insert("planned".into(), Dynamic::TRUE);
        return Ok(m);
    }
    let k = h.k8s()?;
    h.announce(&k, &pod.namespace);
    let mut report = ScriptReport(h.clone());
    let out = h.block_on(dev::run_captured(
        &k,
        &pod,
        &opts,
        stdin.as_deref().map(str::as_bytes),
        &mut report,
    ))?;
    m.insert("code".into(), Dynamic::from_int(i64::from(out.exit_code)));
    m.insert("stdout".into(), out.stdout_str().into());
    m.insert("stderr".into(), out.stderr_str().into());
    m.insert("planned".into(), Dynamic::FALSE);
    Ok(m)
}

/// The command as one line for the plan: `sh -c X` shows as X.
fn shown(words: &[String]) -> String {
    match words {
        [sh, c, script] if sh == "sh" && c == "-c" => script.clone(),
        _ => words.join(" "),
    }
}

fn sync_paths(ctx: &NativeCallContext, paths: &Dynamic, options: &Map) -> RhaiResult<Map> {
    let h = host(ctx)?;
    let o = Options::new(
        "dev::sync_code",
        options,
        &allowed(&["dest", "repo_root", "timeout"]),
    )?;
    let paths = crate::script::convert::string_list(paths, "the paths to sync").map_err(fail)?;
    let root = match o.str("repo_root") {
        Some(r) => super::util::confined(&h, &r).map_err(fail)?,
        None => h.opts.workdir.clone(),
    };
    for p in &paths {
        // Upload paths may not leave the root; checking here keeps the sandbox's rule.
        super::util::confined(&h, &root.join(p).display().to_string()).map_err(fail)?;
    }
    let set = UploadSet::from_include_paths(&root, &paths).map_err(fail)?;
    let dest = o.str("dest").unwrap_or_else(|| ".".to_string());
    let opts = connect_options(&o, Vec::new())?;
    let pod = resolve(&h, &o)?;
    let mut m = Map::new();
    m.insert("files".into(), Dynamic::from_int(set.file_count() as i64));
    m.insert("bytes".into(), Dynamic::from_int(set.total_bytes() as i64));
    m.insert("dest".into(), dest.clone().into());
    m.insert("pod".into(), pod.name.clone().into());
    if h.dry_run() {
        h.plan.record(
            "sync",
            format!("Pod/{}", pod.name),
            format!(
                "namespace {}; {} file(s) ({}) from {} to {dest}",
                pod.namespace,
                set.file_count(),
                crate::ray::package::mib(set.total_bytes()),
                paths.join(", ")
            ),
        );
        m.insert("planned".into(), Dynamic::TRUE);
        return Ok(m);
    }
    if set.is_empty() {
        return Err(fail(
            Diag::new(
                "nrl::dev::sync_empty",
                format!("nothing to sync: no files under {}", paths.join(", ")),
            )
            .help("name files or directories that exist (relative to the working directory)"),
        ));
    }
    let k = h.k8s()?;
    h.announce(&k, &pod.namespace);
    let mut report = ScriptReport(h.clone());
    h.block_on(dev::sync(&k, &pod, &opts, &set, &dest, &mut report))?;
    m.insert("planned".into(), Dynamic::FALSE);
    Ok(m)
}

fn stop_pod(ctx: &NativeCallContext, options: &Map) -> RhaiResult<bool> {
    let h = host(ctx)?;
    let o = Options::new(
        "dev::stop",
        options,
        &["namespace", "infra", "force", "timeout"],
    )?;
    let force = o.bool("force", false)?;
    let timeout = o.seconds("timeout", STOP_TIMEOUT)?;
    let pod = resolve(&h, &o)?;
    if h.dry_run() {
        h.plan.record(
            "delete",
            format!("Pod/{}", pod.name),
            format!("namespace {}; wait until gone", pod.namespace),
        );
        return Ok(true);
    }
    let k = h.k8s()?;
    h.announce(&k, &pod.namespace);
    let mut report = ScriptReport(h.clone());
    let stopped = h.block_on(dev::stop(&k, &pod, force, timeout, &mut report))?;
    Ok(stopped == Stopped::Deleted)
}
