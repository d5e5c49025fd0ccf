//! `cluster`: long-lived RayClusters and Deployments through `crate::launch` — the same
//! functions behind `nrl cluster up|down|list|dashboard`, `nrl status` and `nrl logs`.
//!
//! `up` and `down` are recorded in plan mode (`up` returns simulated `Cluster` handles);
//! the plan remembers those objects, so `status`, `logs` and `dashboard` later in the
//! same dry run answer for the planned clusters without asking the cluster. Everything
//! else reads the cluster. Progress lines (waiting for readiness, daemons) go to the
//! script's stderr.

use std::time::Duration;

use rhai::plugin::*;
use rhai::{Array, Dynamic, Map};

use super::cluster_io::{LogSink, role_row};
use super::cluster_plan::{daemon_map, plan_down, plan_up, planned_fate, planned_row};
use super::config::Config;
use super::options::Options;
use super::ray::Dashboard;
use crate::config::env::username;
use crate::config::node::Node;
use crate::config::schema::Role;
use crate::diag::Diag;
use crate::doctor::gate;
use crate::k8s::K8s;
use crate::launch::check::validate_manifests;
use crate::launch::dashboard::dashboard_session;
use crate::launch::inspect::{list_clusters, role_status};
use crate::launch::logs::{LogSource, RoleLogOptions, role_logs};
use crate::launch::raycluster::{
    DEFAULT_READY_TIMEOUT, DownOptions, EnsureAction, UpOptions, UpOutcome, cluster_down,
    cluster_of, cluster_up, up_objects,
};
use crate::render::targets::{Target, parse_targets};
use crate::script::convert::to_dynamic;
use crate::script::errors::{RhaiResult, at, fail, usage};
use crate::script::host::{Host, ScriptRay, host};
use crate::script::output::Stream;
use crate::script::plan::object_key;

/// Default deadline of each deletion wait of `down` (as `nrl cluster down`).
const DOWN_TIMEOUT: Duration = Duration::from_secs(600);

const UP_OPTIONS: [&str; 10] = [
    "targets",
    "wait",
    "timeout",
    "force",
    "recreate",
    "force_conflicts",
    "daemons",
    "repo_root",
    "validate",
    "doctor",
];
const DOWN_OPTIONS: [&str; 4] = ["targets", "wait", "timeout", "force"];
const LOG_OPTIONS: [&str; 4] = ["source", "tail", "container", "follow"];

/// A RayCluster or Deployment brought up by `cluster::up` (simulated in plan mode).
#[derive(Clone)]
pub struct Cluster {
    /// `kuberay.<role>` or `deployments.<key>`.
    pub target: String,
    /// `RayCluster` or `Deployment`.
    pub kind: &'static str,
    pub role: Option<Role>,
    pub name: String,
    pub namespace: String,
    /// `created`, `unchanged`, `updated`, `recreated`, `drifted` (left as is), `applied`
    /// (Deployments) or `planned`.
    pub action: &'static str,
    /// Paths that differed from the rendered manifest.
    pub drift: Vec<String>,
    pub ready: bool,
    /// `#{id, submitted}` of the role's daemon, when it has one and it was handled.
    pub daemon: Option<Map>,
    /// A Deployment's Service DNS name.
    pub dns: Option<String>,
    pub planned: bool,
    pub(super) cfg: Config,
}

#[export_module]
pub mod cluster_module {
    use super::*;

    /// Bring up every declared role's RayCluster (in order: generation, gym, training;
    /// DRA objects first), then every Deployment with its Service; wait until each is
    /// ready and submit the roles' daemons — `nrl cluster up`, doctor gate included.
    /// Returns a `Cluster` per target. Recorded in plan mode.
    #[rhai_fn(return_raw)]
    pub fn up(ctx: NativeCallContext, cfg: Config) -> RhaiResult<Array> {
        at(ctx.call_position(), bring_up(&ctx, &cfg, &Map::new()))
    }

    /// `up` with options: `targets` (`["kuberay.gym", "deployments.vllm"]`; a bare role
    /// name such as `"gym"` works too; default: everything declared), `wait` (default
    /// true), `timeout` (seconds per target, default 900), `force` (act on clusters
    /// labelled as another user's), `daemons` (default true; needs `wait`), `repo_root`
    /// (where daemons' upload paths are read; default the working directory), `validate`
    /// (offline schema check first, default true), `doctor` (default true: the offline
    /// rules and the read-only preflight run first, as for `nrl cluster up`; errors stop
    /// it; not run in plan mode).
    #[rhai_fn(name = "up", return_raw)]
    pub fn up_with(ctx: NativeCallContext, cfg: Config, options: Map) -> RhaiResult<Array> {
        at(ctx.call_position(), bring_up(&ctx, &cfg, &options))
    }

    /// Delete every declared RayCluster (with its DRA objects) and Deployment (with its
    /// Service), waiting until their pods are gone — `nrl cluster down`. Returns the
    /// targets that existed (in plan mode: every target, recorded).
    #[rhai_fn(return_raw)]
    pub fn down(ctx: NativeCallContext, cfg: Config) -> RhaiResult<Array> {
        at(ctx.call_position(), take_down(&ctx, &cfg, &Map::new()))
    }

    /// `down` with options: `targets`, `wait` (default true), `timeout` (seconds per
    /// deletion, default 600), `force`.
    #[rhai_fn(name = "down", return_raw)]
    pub fn down_with(ctx: NativeCallContext, cfg: Config, options: Map) -> RhaiResult<Array> {
        at(ctx.call_position(), take_down(&ctx, &cfg, &options))
    }

    /// The RayClusters of the current namespace, by name: `[#{name, namespace, state,
    /// created, owner, workers_ready, workers_desired}, …]` — `nrl cluster list`.
    #[rhai_fn(return_raw)]
    pub fn list(ctx: NativeCallContext) -> RhaiResult<Array> {
        at(ctx.call_position(), list_in(&ctx, &Map::new()))
    }

    /// `list` with options: `namespace`.
    #[rhai_fn(name = "list", return_raw)]
    pub fn list_with(ctx: NativeCallContext, options: Map) -> RhaiResult<Array> {
        at(ctx.call_position(), list_in(&ctx, &options))
    }

    /// Each declared role's status — `nrl status`: `[#{role, name, namespace, exists,
    /// state, workers_ready, workers_desired, pods: #{head, workers}, daemon: #{id,
    /// status}, planned}, …]`. Roles brought up or down earlier in a dry run show their
    /// planned state (`planned: true`, `state: "planned"`).
    #[rhai_fn(return_raw)]
    pub fn status(ctx: NativeCallContext, cfg: Config) -> RhaiResult<Array> {
        at(ctx.call_position(), statuses(&ctx, &cfg))
    }

    /// A dashboard client for RayCluster `name` in the current namespace, through a
    /// port-forward to its head Service (or cluster DNS in a pod); use it with the `ray`
    /// methods (`d.list()`, `d.submit(…)`). The forward stays open while the handle lives.
    #[rhai_fn(return_raw)]
    pub fn dashboard(ctx: NativeCallContext, name: &str) -> RhaiResult<Dashboard> {
        at(ctx.call_position(), open_dashboard(&ctx, name, None))
    }

    /// `dashboard` of a RayCluster in `namespace`.
    #[rhai_fn(name = "dashboard", return_raw)]
    pub fn dashboard_in(
        ctx: NativeCallContext,
        name: &str,
        namespace: &str,
    ) -> RhaiResult<Dashboard> {
        at(
            ctx.call_position(),
            open_dashboard(&ctx, name, Some(namespace)),
        )
    }

    /// A role's log — `nrl logs`: its daemon job's when it declares one, else its head
    /// pod's. Returns the text.
    #[rhai_fn(return_raw)]
    pub fn logs(ctx: NativeCallContext, cfg: Config, role: &str) -> RhaiResult<String> {
        at(ctx.call_position(), role_log(&ctx, &cfg, role, &Map::new()))
    }

    /// `logs` with options: `source` (`auto`, `daemon`, `head`, `worker`), `tail` (last
    /// N lines), `container`, `follow` (print the log as it grows until the pod or job
    /// ends; the text is returned too).
    #[rhai_fn(name = "logs", return_raw)]
    pub fn logs_with(
        ctx: NativeCallContext,
        cfg: Config,
        role: &str,
        options: Map,
    ) -> RhaiResult<String> {
        at(ctx.call_position(), role_log(&ctx, &cfg, role, &options))
    }

    /// `kuberay.<role>` or `deployments.<key>`.
    #[rhai_fn(global, get = "target", pure)]
    pub fn target(c: &mut Cluster) -> String {
        c.target.clone()
    }

    /// `RayCluster` or `Deployment`.
    #[rhai_fn(global, get = "kind", pure)]
    pub fn kind(c: &mut Cluster) -> String {
        c.kind.to_string()
    }

    /// The role (`generation`, `gym`, `training`), or `()` for a Deployment.
    #[rhai_fn(global, get = "role", pure)]
    pub fn role(c: &mut Cluster) -> Dynamic {
        c.role
            .map(|r| Dynamic::from(r.as_str().to_string()))
            .unwrap_or(Dynamic::UNIT)
    }

    /// The object's name.
    #[rhai_fn(global, get = "name", pure)]
    pub fn name(c: &mut Cluster) -> String {
        c.name.clone()
    }

    /// The namespace it lives in.
    #[rhai_fn(global, get = "namespace", pure)]
    pub fn namespace(c: &mut Cluster) -> String {
        c.namespace.clone()
    }

    /// What `up` did: `created`, `unchanged`, `updated`, `recreated`, `drifted` (left
    /// as is), `applied` (Deployments), or `planned`.
    #[rhai_fn(global, get = "action", pure)]
    pub fn action(c: &mut Cluster) -> String {
        c.action.to_string()
    }

    /// The paths that differed from the rendered manifest (empty when none).
    #[rhai_fn(global, get = "drift", pure)]
    pub fn drift(c: &mut Cluster) -> Array {
        c.drift.iter().map(|p| Dynamic::from(p.clone())).collect()
    }

    /// Whether it was seen ready (RayCluster) or available (Deployment).
    #[rhai_fn(global, get = "ready", pure)]
    pub fn ready(c: &mut Cluster) -> bool {
        c.ready
    }

    /// `#{id, submitted}` of the role's daemon job (`submitted: false` when a live one
    /// was kept), or `()`.
    #[rhai_fn(global, get = "daemon", pure)]
    pub fn daemon(c: &mut Cluster) -> Dynamic {
        c.daemon
            .clone()
            .map(Dynamic::from_map)
            .unwrap_or(Dynamic::UNIT)
    }

    /// A Deployment's Service DNS name, or `()`.
    #[rhai_fn(global, get = "dns", pure)]
    pub fn dns(c: &mut Cluster) -> Dynamic {
        c.dns.clone().map(Dynamic::from).unwrap_or(Dynamic::UNIT)
    }

    /// True in plan mode: nothing was applied.
    #[rhai_fn(global, get = "planned", pure)]
    pub fn planned(c: &mut Cluster) -> bool {
        c.planned
    }

    /// The RayCluster's status row (as `cluster::status` gives per role).
    #[rhai_fn(global, name = "status", pure, return_raw)]
    pub fn cluster_status(ctx: NativeCallContext, c: &mut Cluster) -> RhaiResult<Map> {
        let role = ray_role(c, "status")?;
        one_status(&*host(&ctx)?, &c.cfg, role)
    }

    /// A dashboard client for the RayCluster (see `cluster::dashboard`).
    #[rhai_fn(global, name = "dashboard", pure, return_raw)]
    pub fn cluster_dashboard(ctx: NativeCallContext, c: &mut Cluster) -> RhaiResult<Dashboard> {
        ray_role(c, "dashboard")?;
        open_dashboard(&ctx, &c.name, Some(&c.namespace))
    }

    /// The role's log (see `cluster::logs`).
    #[rhai_fn(global, name = "logs", pure, return_raw)]
    pub fn cluster_logs(ctx: NativeCallContext, c: &mut Cluster) -> RhaiResult<String> {
        let role = ray_role(c, "logs")?;
        role_log(&ctx, &c.cfg, role.as_str(), &Map::new())
    }

    /// The role's log with options (see `cluster::logs`).
    #[rhai_fn(global, name = "logs", pure, return_raw)]
    pub fn cluster_logs_with(
        ctx: NativeCallContext,
        c: &mut Cluster,
        options: Map,
    ) -> RhaiResult<String> {
        let role = ray_role(c, "logs")?;
        role_log(&ctx, &c.cfg, role.as_str(), &options)
    }

    #[rhai_fn(global, name = "to_string", pure)]
    pub fn to_string(c: &mut Cluster) -> String {
        let planned = if c.planned { ", planned" } else { "" };
        format!(
            "{}({}/{}, {}{planned})",
            c.kind, c.namespace, c.name, c.action
        )
    }
}

/// Targets from script words: `kuberay.gym`, `deployments.vllm`, or a bare role name.
fn targets_of(cfg: &Config, o: &Options) -> RhaiResult<Vec<Target>> {
    let words: Vec<String> = o
        .strings("targets")?
        .unwrap_or_default()
        .into_iter()
        .map(|t| match Role::parse(&t) {
            Some(r) => format!("kuberay.{}", r.as_str()),
            None => t,
        })
        .collect();
    parse_targets(&cfg.loaded().infra, &words).map_err(fail)
}

fn bring_up(ctx: &NativeCallContext, cfg: &Config, options: &Map) -> RhaiResult<Array> {
    let h = host(ctx)?;
    let o = Options::new("cluster::up", options, &UP_OPTIONS)?;
    let loaded = cfg.loaded();
    let targets = targets_of(cfg, &o)?;
    let objects = up_objects(loaded, &targets, &username(&*loaded.env)).map_err(fail)?;
    if o.bool("validate", true)? {
        validate_manifests(&objects).map_err(fail)?;
    }
    let run_doctor = o.bool("doctor", true)?;
    let opts = UpOptions {
        wait: o.bool("wait", true)?,
        timeout: o.seconds("timeout", DEFAULT_READY_TIMEOUT)?,
        force: o.bool("force", false)?,
        recreate: o.bool("recreate", false)?,
        force_conflicts: o.bool("force_conflicts", false)?,
        daemons: o.bool("daemons", true)?,
        repo_root: match o.str("repo_root") {
            Some(p) => super::util::confined(&h, &p).map_err(fail)?,
            None => h.opts.workdir.clone(),
        },
    };
    if h.dry_run() {
        return targets.iter().map(|t| plan_up(&h, cfg, t, &opts)).collect();
    }
    let k = h.k8s()?;
    h.announce(&k, &loaded.infra.namespace);
    if run_doctor {
        doctor_gate(&h, &k, cfg, &objects, &opts)?;
    }
    let progress = h.progress();
    let outcomes = h.block_on(cluster_up(&k, loaded, &targets, &opts, &progress))?;
    Ok(outcomes
        .iter()
        .map(|o| Dynamic::from(handle_of(cfg, o)))
        .collect())
}

/// `nrl cluster up`'s doctor gate: the report on the script's stderr, errors stop.
fn doctor_gate(
    h: &Host,
    k: &K8s,
    cfg: &Config,
    objects: &[Node],
    opts: &UpOptions,
) -> RhaiResult<()> {
    let options = crate::doctor::Options {
        repo_root: Some(opts.repo_root.clone()),
        ..crate::doctor::Options::default()
    };
    let report = h.block_on(gate::report(k, cfg.loaded(), objects, &options))?;
    if !report.is_empty() {
        let (color, width) = h.diag_style();
        h.print(Stream::Stderr, &report.render(color, width));
    }
    gate::verdict(&report).map_err(|d| {
        fail(d.help(
            "fix the errors above, silence a rule with `# nrl: allow CODE`, or pass `doctor: false` to cluster::up",
        ))
    })
}

fn handle_of(cfg: &Config, o: &UpOutcome) -> Cluster {
    let namespace = cfg.loaded().infra.namespace.clone();
    match o {
        UpOutcome::Cluster { cluster, daemon } => {
            let (action, mut drift) = match &cluster.action {
                EnsureAction::Created => ("created", Vec::new()),
                EnsureAction::Unchanged if !cluster.template_drift.is_empty() => {
                    ("drifted", Vec::new())
                }
                EnsureAction::Unchanged => ("unchanged", Vec::new()),
                EnsureAction::Updated(p) => ("updated", p.clone()),
                EnsureAction::DriftIgnored(p) => ("drifted", p.clone()),
                EnsureAction::Recreated(p) => ("recreated", p.clone()),
            };
            // Pod-template drift is left alone in place (only `recreate: true` applies it).
            drift.extend(cluster.template_drift.iter().cloned());
            Cluster {
                target: format!("kuberay.{}", cluster.role.as_str()),
                kind: "RayCluster",
                role: Some(cluster.role),
                name: cluster.name.clone(),
                namespace: cluster.namespace.clone(),
                action,
                drift,
                ready: cluster.ready.is_some(),
                daemon: daemon
                    .as_ref()
                    .map(|d| daemon_map(&d.submission_id, Dynamic::from_bool(d.submitted))),
                dns: None,
                planned: false,
                cfg: cfg.clone(),
            }
        }
        UpOutcome::Deployment(d) => Cluster {
            target: format!("deployments.{}", d.key),
            kind: "Deployment",
            role: None,
            name: d.name.clone(),
            namespace,
            action: "applied",
            drift: Vec::new(),
            ready: d.available,
            daemon: None,
            dns: d.dns.clone(),
            planned: false,
            cfg: cfg.clone(),
        },
    }
}

fn take_down(ctx: &NativeCallContext, cfg: &Config, options: &Map) -> RhaiResult<Array> {
    let h = host(ctx)?;
    let o = Options::new("cluster::down", options, &DOWN_OPTIONS)?;
    let loaded = cfg.loaded();
    let targets = targets_of(cfg, &o)?;
    let opts = DownOptions {
        wait: o.bool("wait", true)?,
        timeout: o.seconds("timeout", DOWN_TIMEOUT)?,
        force: o.bool("force", false)?,
    };
    if h.dry_run() {
        return plan_down(&h, cfg, &targets, &opts);
    }
    let k = h.k8s()?;
    h.announce(&k, &loaded.infra.namespace);
    let progress = h.progress();
    let gone = h.block_on(cluster_down(&k, loaded, &targets, &opts, &progress))?;
    Ok(gone.into_iter().map(Dynamic::from).collect())
}

fn list_in(ctx: &NativeCallContext, options: &Map) -> RhaiResult<Array> {
    let h = host(ctx)?;
    let o = Options::new("cluster::list", options, &["namespace"])?;
    let k = h.k8s()?;
    let ns = o.str("namespace").unwrap_or_else(|| k.namespace.clone());
    let rows = h.block_on(list_clusters(&k, &ns))?;
    Ok(rows.iter().map(to_dynamic).collect())
}

fn statuses(ctx: &NativeCallContext, cfg: &Config) -> RhaiResult<Array> {
    let h = host(ctx)?;
    let roles: Vec<Role> = cfg.loaded().infra.kuberay.roles().map(|(r, _)| r).collect();
    roles
        .into_iter()
        .map(|r| one_status(&h, cfg, r).map(Dynamic::from_map))
        .collect()
}

fn one_status(h: &Host, cfg: &Config, role: Role) -> RhaiResult<Map> {
    let loaded = cfg.loaded();
    if let Some(fate) = planned_fate(h, cfg, role)? {
        let c = cluster_of(loaded, role).map_err(fail)?;
        return Ok(planned_row(loaded, role, c, &fate));
    }
    let k = h.k8s()?;
    let row = h.block_on(role_status(&k, loaded, role))?;
    Ok(role_row(&row))
}

fn open_dashboard(
    ctx: &NativeCallContext,
    name: &str,
    namespace: Option<&str>,
) -> RhaiResult<Dashboard> {
    let h = host(ctx)?;
    // The namespace comes from the kubeconfig: a planned cluster is answered without a read.
    let ns = match namespace {
        Some(ns) => ns.to_string(),
        None => h.k8s_offline()?.namespace,
    };
    if h.dry_run() && h.plan.fate(&object_key("RayCluster", &ns, name)).is_some() {
        return Err(fail(
            Diag::new(
                "nrl::script::planned",
                format!("RayCluster {name} is only planned in this dry run: it has no dashboard"),
            )
            .help("check `dry_run()` before talking to a cluster the script brings up"),
        ));
    }
    let k = h.k8s()?;
    let session = h.block_on(dashboard_session(&k, &ns, name))?;
    Ok(Dashboard {
        client: ScriptRay::new(session.client),
        forward: session.forward,
    })
}

fn ray_role(c: &Cluster, what: &str) -> RhaiResult<Role> {
    c.role.ok_or_else(|| {
        usage(
            "nrl::script::type",
            format!("{what}() is for RayClusters; {} is a Deployment", c.name),
            "read a Deployment with k8s::get(\"Deployment\", name)",
        )
    })
}

fn role_log(
    ctx: &NativeCallContext,
    cfg: &Config,
    role: &str,
    options: &Map,
) -> RhaiResult<String> {
    let h = host(ctx)?;
    let o = Options::new("cluster::logs", options, &LOG_OPTIONS)?;
    let role = Role::parse(role).ok_or_else(|| {
        usage(
            "nrl::logs::role",
            format!("unknown role `{role}`"),
            "use generation, gym or training",
        )
    })?;
    let source = match o.str("source").as_deref() {
        None | Some("auto") => LogSource::Auto,
        Some("daemon") => LogSource::Daemon,
        Some("head") => LogSource::Head,
        Some("worker") => LogSource::Worker,
        Some(other) => {
            return Err(usage(
                "nrl::script::option",
                format!("unknown log source `{other}`"),
                "use auto, daemon, head or worker",
            ));
        }
    };
    let opts = RoleLogOptions {
        source,
        follow: o.bool("follow", false)?,
        tail: o.int("tail")?,
        container: o.str("container"),
    };
    let loaded = cfg.loaded();
    if let Some(fate) = planned_fate(&h, cfg, role)? {
        let name = &cluster_of(loaded, role).map_err(fail)?.name;
        let what = if fate == "deleted" {
            "deleted"
        } else {
            "only planned"
        };
        h.line(
            Stream::Stderr,
            &format!("(plan) RayCluster {name} is {what} in this dry run: no log to read"),
        );
        return Ok(String::new());
    }
    let k = h.k8s()?;
    let progress = h.progress();
    let echo = opts.follow.then(|| h.opts.output.clone());
    let mut sink = LogSink::new(echo);
    h.block_on(role_logs(&k, loaded, role, &opts, &mut sink, &progress))?;
    Ok(sink.into_text())
}
