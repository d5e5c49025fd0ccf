//! `doctor`: the launch playbook's rules from a script, through `crate::doctor` — the
//! offline rules (`check`, what `nrl check` and `nrl doctor --offline` run), the cluster
//! preflight (`preflight`), and a playbook's own rules (`finding`, at the line of a
//! config path).
//!
//! Findings are maps, so scripts can filter, sort and count them:
//! `#{code, severity, message, location, fix, label, notes, related, span}`. `span` (a
//! `Span`: prints as `file:line:col`, becomes that text in JSON) and `related` carry the
//! source lines, so `doctor::render(findings)` shows them exactly as `nrl doctor` does.

use rhai::plugin::*;
use rhai::{Array, Dynamic, Map};

use super::config::Config;
use super::options::Options;
use crate::config::layers::LoadedConfig;
use crate::config::node::Node;
use crate::config::schema::{CodeSource, StrEnum};
use crate::config::source::Span;
use crate::diag::Diag;
use crate::doctor::allow::Allows;
use crate::doctor::{self, Finding, RULES, Related, Report, Severity, diagnose};
use crate::script::errors::{RhaiResult, at, fail, usage};
use crate::script::host::host;

const CODE_FINDING: &str = "nrl::script::finding";

#[export_module]
pub mod doctor_module {
    use super::*;

    /// The offline rules over the pair and its rendered objects (what `nrl check` and
    /// `nrl doctor --offline` report), allow comments applied: an array of findings,
    /// errors first.
    #[rhai_fn(return_raw)]
    pub fn check(ctx: NativeCallContext, cfg: Config) -> RhaiResult<Array> {
        at(ctx.call_position(), offline(&ctx, &cfg, &Map::new()))
    }

    /// `check` with options: `code_source` (`upload`, `image`, `lustre`: check as
    /// `run --code-source` would launch), `repo_root` (where an upload is read from),
    /// `rayjob` (the launch is a RayJob, which uploads nothing).
    #[rhai_fn(name = "check", return_raw)]
    pub fn check_with(ctx: NativeCallContext, cfg: Config, options: Map) -> RhaiResult<Array> {
        at(ctx.call_position(), offline(&ctx, &cfg, &options))
    }

    /// The read-only cluster checks of `nrl doctor` (referenced PVCs, Secrets and other
    /// objects exist, CRDs are served, you may create what the launch creates, KAI
    /// queues exist), allow comments applied: an array of findings.
    #[rhai_fn(return_raw)]
    pub fn preflight(ctx: NativeCallContext, cfg: Config) -> RhaiResult<Array> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Array> {
                let h = host(&ctx)?;
                let loaded = cfg.loaded();
                let rendered = crate::render::check_manifests(&loaded.infra).map_err(fail)?;
                let manifests = doctor::preflight_manifests(loaded, &rendered);
                let k = h.k8s()?;
                let report = h.block_on(doctor::preflight(&k, loaded, &manifests))?;
                Ok(report.findings.iter().map(finding_map).collect())
            })(),
        )
    }

    /// A finding of the playbook's own rule. `code` is yours (`team::gym_daemon`; the
    /// `nrl::` prefix is kept for nrl's rules), `severity` is `"error"` or `"warning"`.
    #[rhai_fn(return_raw)]
    pub fn finding(
        ctx: NativeCallContext,
        code: &str,
        severity: &str,
        message: &str,
    ) -> RhaiResult<Map> {
        at(
            ctx.call_position(),
            build(code, severity, message, &Map::new()),
        )
    }

    /// `finding` with options: `cfg` and `at` (a config path, `"infra.kuberay.gym"` or
    /// `"policy.optimizer.kwargs.lr"`: the finding points at the line that sets it, or
    /// at its nearest parent when it is not set), `fix` (how to fix it), `label` (text
    /// at the line), `notes` (extra facts), `also` (other lines that take part:
    /// `[#{at: "infra.kuberay.gym.name", label: "also here"}]`).
    #[rhai_fn(name = "finding", return_raw)]
    pub fn finding_with(
        ctx: NativeCallContext,
        code: &str,
        severity: &str,
        message: &str,
        options: Map,
    ) -> RhaiResult<Map> {
        at(
            ctx.call_position(),
            build(code, severity, message, &options),
        )
    }

    /// Findings as `nrl doctor` prints them: errors first, each with its source lines,
    /// then `doctor: N errors, M warnings`.
    #[rhai_fn(return_raw)]
    pub fn render(ctx: NativeCallContext, findings: Array) -> RhaiResult<String> {
        render_titled(ctx, findings, "doctor")
    }

    /// `render` with another title for the summary line (`"launch checks: 1 error, …"`).
    #[rhai_fn(name = "render", return_raw)]
    pub fn render_titled(
        ctx: NativeCallContext,
        findings: Array,
        title: &str,
    ) -> RhaiResult<String> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<String> {
                let h = host(&ctx)?;
                let list = findings
                    .iter()
                    .map(from_map)
                    .collect::<RhaiResult<Vec<_>>>()?;
                let report = Report::new(list, &Allows::default());
                let (color, width) = h.diag_style();
                Ok(report.render_as(color, width, title))
            })(),
        )
    }

    /// Every built-in rule: `[#{code, short, severity, preflight, stage, summary}, …]`
    /// (what `nrl doctor --rules` lists; `stage` is `offline`, `preflight` or `diagnose`).
    pub fn rules() -> Array {
        RULES
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("code".into(), r.code.into());
                m.insert("short".into(), r.short().into());
                m.insert("severity".into(), r.severity.as_str().into());
                m.insert("preflight".into(), Dynamic::from_bool(r.preflight));
                m.insert("stage".into(), r.stage.as_str().into());
                m.insert("summary".into(), r.summary.into());
                Dynamic::from_map(m)
            })
            .collect()
    }

    /// `file:line:col`.
    #[rhai_fn(global, name = "to_string", pure)]
    pub fn span_string(s: &mut Span) -> String {
        s.location()
    }
}

fn offline(ctx: &NativeCallContext, cfg: &Config, options: &Map) -> RhaiResult<Array> {
    let h = host(ctx)?;
    let o = Options::new(
        "doctor::check",
        options,
        &["code_source", "repo_root", "rayjob"],
    )?;
    let code_source = match o.str("code_source") {
        None => None,
        Some(s) => Some(CodeSource::parse(&s).ok_or_else(|| {
            usage(
                "nrl::script::option",
                format!("unknown code source `{s}`"),
                &format!("one of {}", CodeSource::VALUES.join(", ")),
            )
        })?),
    };
    let opts = doctor::Options {
        code_source,
        repo_root: match o.str("repo_root") {
            Some(p) => Some(super::util::confined(&h, &p).map_err(fail)?),
            None => Some(h.opts.workdir.clone()),
        },
        rayjob: o.bool("rayjob", false)?,
    };
    let loaded = cfg.loaded();
    let manifests = crate::render::check_manifests(&loaded.infra).map_err(fail)?;
    let report = doctor::offline_with(loaded, &manifests, &opts);
    Ok(report.findings.iter().map(finding_map).collect())
}

fn text_or_unit(s: &str) -> Dynamic {
    if s.is_empty() {
        Dynamic::UNIT
    } else {
        Dynamic::from(s.to_string())
    }
}

fn span_value(span: Option<Span>) -> Dynamic {
    span.map(Dynamic::from).unwrap_or(Dynamic::UNIT)
}

/// A finding as script data.
pub fn finding_map(f: &Finding) -> Dynamic {
    let mut m = Map::new();
    m.insert("code".into(), f.code.to_string().into());
    m.insert("severity".into(), f.severity.as_str().into());
    m.insert("message".into(), f.message.clone().into());
    m.insert(
        "location".into(),
        f.location().map(Dynamic::from).unwrap_or(Dynamic::UNIT),
    );
    m.insert("fix".into(), text_or_unit(&f.fix));
    m.insert("label".into(), text_or_unit(&f.label));
    m.insert(
        "notes".into(),
        Dynamic::from_array(f.notes.iter().map(|n| n.clone().into()).collect()),
    );
    let related = f
        .related
        .iter()
        .map(|r| {
            let mut rm = Map::new();
            rm.insert("location".into(), r.span.location().into());
            rm.insert("text".into(), r.text.clone().into());
            rm.insert("span".into(), Dynamic::from(r.span));
            Dynamic::from_map(rm)
        })
        .collect();
    m.insert("related".into(), Dynamic::from_array(related));
    m.insert("span".into(), span_value(f.span));
    Dynamic::from_map(m)
}

fn bad_finding(message: String) -> Box<rhai::EvalAltResult> {
    usage(
        CODE_FINDING,
        message,
        "build findings with doctor::finding(code, severity, message, #{…}) or take them from doctor::check",
    )
}

fn severity_of(s: &str) -> RhaiResult<Severity> {
    match s {
        "error" => Ok(Severity::Error),
        "warning" => Ok(Severity::Warning),
        other => Err(bad_finding(format!(
            "severity must be \"error\" or \"warning\", not `{other}`"
        ))),
    }
}

fn text_of(m: &Map, key: &str) -> String {
    m.get(key)
        .filter(|v| !v.is_unit())
        .map(|v| v.to_string())
        .unwrap_or_default()
}

fn notes_of(v: Option<&Dynamic>) -> RhaiResult<Vec<String>> {
    match v.filter(|v| !v.is_unit()) {
        None => Ok(Vec::new()),
        Some(v) => crate::script::convert::string_list(v, "`notes`").map_err(fail),
    }
}

/// A finding map back into a finding (for rendering); a script may have changed it.
fn from_map(d: &Dynamic) -> RhaiResult<Finding> {
    let Some(m) = d.read_lock::<Map>() else {
        return Err(bad_finding(format!(
            "a finding is a map, not a {}",
            d.type_name()
        )));
    };
    let code = text_of(&m, "code");
    if code.is_empty() {
        return Err(bad_finding("a finding has no `code`".to_string()));
    }
    let severity = severity_of(&text_of(&m, "severity"))?;
    let span = m
        .get("span")
        .and_then(|s| s.read_lock::<Span>().map(|s| *s));
    let mut f = Finding::custom(code, severity, text_of(&m, "message"))
        .at(span, text_of(&m, "label"))
        .fix(text_of(&m, "fix"));
    f.notes = notes_of(m.get("notes"))?;
    if let Some(related) = m.get("related").and_then(|r| r.read_lock::<Array>()) {
        for r in related.iter() {
            if let Some(rm) = r.read_lock::<Map>()
                && let Some(span) = rm
                    .get("span")
                    .and_then(|s| s.read_lock::<Span>().map(|s| *s))
            {
                f.related.push(Related {
                    span,
                    text: text_of(&rm, "text"),
                });
            }
        }
    }
    Ok(f)
}

/// Codes of playbook rules: words of letters, digits, `_` and `-`, joined by `::`.
fn check_code(code: &str) -> RhaiResult<()> {
    let word_ok = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    if !code.split("::").all(word_ok) {
        return Err(bad_finding(format!(
            "`{code}` is not a finding code: use words of letters, digits, `_` or `-` joined by `::` (e.g. `team::gym_daemon`)"
        )));
    }
    if code.starts_with("nrl::") {
        return Err(bad_finding(format!(
            "`{code}`: codes starting with `nrl::` are kept for nrl's own rules; use your own prefix"
        )));
    }
    Ok(())
}

fn build(code: &str, severity: &str, message: &str, options: &Map) -> RhaiResult<Map> {
    let o = Options::new(
        "doctor::finding",
        options,
        &["cfg", "at", "fix", "label", "notes", "also"],
    )?;
    check_code(code)?;
    let severity = severity_of(severity)?;
    let mut f = Finding::custom(code, severity, message);
    let cfg = o
        .value("cfg")
        .and_then(|c| c.read_lock::<Config>().map(|c| c.clone()));
    let needs_cfg = || {
        usage(
            "nrl::script::option",
            "options `at` and `also` need `cfg`: the Config the paths are looked up in",
            "e.g. doctor::finding(code, \"error\", msg, #{cfg: cfg, at: \"infra.kuberay.gym\"})",
        )
    };
    if let Some(path) = o.str("at") {
        let cfg = cfg.as_ref().ok_or_else(needs_cfg)?;
        let (span, missing) = locate(cfg.loaded(), &path);
        let label = match (o.str("label"), missing) {
            (Some(l), _) => l,
            (None, None) => "here".to_string(),
            (None, Some(m)) => format!("`{m}` is not set here"),
        };
        f = f.at(span, label);
    } else if let Some(label) = o.str("label") {
        f.label = label;
    }
    if let Some(also) = o.value("also") {
        let cfg = cfg.as_ref().ok_or_else(needs_cfg)?;
        let items = also
            .read_lock::<Array>()
            .map(|a| a.clone())
            .ok_or_else(|| bad_finding("`also` is an array of #{at, label} maps".to_string()))?;
        for item in items {
            let Some(m) = item.read_lock::<Map>() else {
                return Err(bad_finding(
                    "`also` is an array of #{at, label} maps".to_string(),
                ));
            };
            let (span, _) = locate(cfg.loaded(), &text_of(&m, "at"));
            let label = text_of(&m, "label");
            f = f.also(
                span,
                if label.is_empty() {
                    "also here".to_string()
                } else {
                    label
                },
            );
        }
    }
    if let Some(fix) = o.str("fix") {
        f = f.fix(fix);
    }
    f.notes = notes_of(o.value("notes"))?;
    match finding_map(&f).try_cast::<Map>() {
        Some(m) => Ok(m),
        None => Err(fail(Diag::new(CODE_FINDING, "cannot build the finding"))),
    }
}

/// The span of a config path (`infra.…` in the infra, anything else in the recipe), or
/// of its nearest parent that exists, with the part that is missing.
fn locate(cfg: &LoadedConfig, path: &str) -> (Option<Span>, Option<String>) {
    let (tree, rest): (&Node, &str) = match path.strip_prefix("infra.") {
        Some(rest) => (&cfg.infra.source, rest),
        None if path == "infra" => return (cfg.infra.source.best_span(), None),
        None => (&cfg.recipe, path),
    };
    let parts: Vec<&str> = rest.split('.').collect();
    for n in (1..=parts.len()).rev() {
        let prefix = parts[..n].join(".");
        // A null value (`gym: null` in the shipped defaults) is as good as unset.
        if let Some(node) = tree.get_path(&prefix).filter(|n| !n.is_null()) {
            // A block is best shown by its key; a value by itself.
            let span = if node.value.is_container() {
                node.key_span.or(node.span)
            } else {
                node.best_span()
            };
            let missing = (n < parts.len()).then(|| parts[n..].join("."));
            return (span, missing);
        }
    }
    (None, Some(rest.to_string()))
}

/// `diagnose`: what went wrong with a launched run, as data — the same library call as
/// `nrl diagnose` (`crate::doctor::diagnose`), read-only.
#[export_module]
pub mod diagnose_module {
    use super::*;

    /// Diagnose a run by its id (its record on this machine, else in the cluster's
    /// namespace): an array of findings (`#{code, severity, message, fix, notes, …}`, as
    /// `doctor::check` returns), empty when nothing is wrong.
    #[rhai_fn(return_raw)]
    pub fn run(ctx: NativeCallContext, id: &str) -> RhaiResult<Array> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Array> {
                let h = host(&ctx)?;
                let store =
                    crate::launch::records::RunStore::from_env(&*h.opts.env).map_err(fail)?;
                let k = h.k8s()?;
                let d = h.block_on(async {
                    let record = crate::launch::records::cluster_copy::find_run(
                        &store,
                        Some(&k),
                        &k.namespace,
                        id,
                    )
                    .await?;
                    diagnose::diagnose_run(&k, &record).await
                })?;
                Ok(d.report.findings.iter().map(finding_map).collect())
            })(),
        )
    }

    /// Collect every log of a run into `dir` (under the working directory; created,
    /// must be empty), as `nrl logs --collect DIR RUN_ID` does: the driver log, each
    /// pod's container logs (previous ones of restarted containers), objects, events,
    /// each Ray node's session logs, and `index.md`. Returns
    /// `#{dir, archive, bytes, files: [#{path, bytes, source, note}], skipped: [#{what, why}]}`.
    ///
    /// ```rhai
    /// let c = diagnose::collect("grpo-20260101-120000-ab12", "postmortem");
    /// print(`${c.files.len()} files, ${c.skipped.len()} not fetched`);
    /// ```
    #[rhai_fn(name = "collect", return_raw)]
    pub fn collect_run(ctx: NativeCallContext, id: &str, dir: &str) -> RhaiResult<Map> {
        at(
            ctx.call_position(),
            collect_run_with_impl(&ctx, id, dir, &Map::new()),
        )
    }

    /// `collect(id, dir)` with options: `tar` (write `dir.tar.gz` instead),
    /// `max_file_mib` (keep at most the last N MiB of each file; default 16).
    ///
    /// ```rhai
    /// let c = diagnose::collect(args.run, "postmortem", #{ tar: true });
    /// print(c.archive);
    /// ```
    #[rhai_fn(name = "collect", return_raw)]
    pub fn collect_run_with(
        ctx: NativeCallContext,
        id: &str,
        dir: &str,
        options: Map,
    ) -> RhaiResult<Map> {
        at(
            ctx.call_position(),
            collect_run_with_impl(&ctx, id, dir, &options),
        )
    }

    /// Collect the logs of what the recipe renders (its RayJob and RayClusters, by name)
    /// into `dir`. Options: `role` (only that role's cluster), `tar`, `max_file_mib`.
    ///
    /// ```rhai
    /// let cfg = recipe("recipe.yaml", #{ infra: "infra.yaml" });
    /// let c = diagnose::collect(cfg, "gen-logs", #{ role: "generation" });
    /// ```
    #[rhai_fn(name = "collect", return_raw)]
    pub fn collect_config(
        ctx: NativeCallContext,
        cfg: Config,
        dir: &str,
        options: Map,
    ) -> RhaiResult<Map> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Map> {
                let h = host(&ctx)?;
                let o = Options::new(
                    "diagnose::collect",
                    &options,
                    &["role", "tar", "max_file_mib"],
                )?;
                let opts = collect_options(&h, dir, &o)?;
                let role = match o.str("role") {
                    None => None,
                    Some(r) => Some(crate::config::schema::Role::parse(&r).ok_or_else(|| {
                        usage(
                            "nrl::script::option",
                            format!("unknown role `{r}`"),
                            "one of generation, gym, training",
                        )
                    })?),
                };
                let k = h.k8s()?;
                let target = crate::launch::collect::CollectTarget::Recipe {
                    cfg: cfg.loaded(),
                    recipe: cfg.request().recipe.display().to_string(),
                    role,
                };
                let report =
                    h.block_on(crate::launch::collect::collect(Some(&k), &target, &opts))?;
                Ok(report_map(&report))
            })(),
        )
    }

    /// Diagnose what the recipe renders on the cluster (its RayJob and RayClusters, by
    /// name): an array of findings, empty when nothing is wrong.
    #[rhai_fn(global, name = "diagnose", return_raw)]
    pub fn diagnose_config(ctx: NativeCallContext, cfg: Config) -> RhaiResult<Array> {
        at(
            ctx.call_position(),
            (|| -> RhaiResult<Array> {
                let h = host(&ctx)?;
                let k = h.k8s()?;
                let loaded = cfg.loaded();
                let recipe = cfg.request().recipe.display().to_string();
                let d = h.block_on(diagnose::diagnose_config(&k, loaded, &recipe))?;
                Ok(d.report.findings.iter().map(finding_map).collect())
            })(),
        )
    }
}

fn collect_options(
    h: &crate::script::host::Host,
    dir: &str,
    o: &Options,
) -> RhaiResult<crate::launch::collect::CollectOptions> {
    let mut opts =
        crate::launch::collect::CollectOptions::new(super::util::confined(h, dir).map_err(fail)?);
    opts.tar = o.bool("tar", false)?;
    if let Some(mib) = o.int("max_file_mib")? {
        if mib < 1 {
            return Err(usage(
                "nrl::script::option",
                format!("max_file_mib must be at least 1, not {mib}"),
                "e.g. #{ max_file_mib: 16 }",
            ));
        }
        opts.max_file_bytes = (mib as u64).saturating_mul(1 << 20);
    }
    Ok(opts)
}

fn collect_run_with_impl(
    ctx: &NativeCallContext,
    id: &str,
    dir: &str,
    options: &Map,
) -> RhaiResult<Map> {
    let h = host(ctx)?;
    let o = Options::new("diagnose::collect", options, &["tar", "max_file_mib"])?;
    let opts = collect_options(&h, dir, &o)?;
    let store = crate::launch::records::RunStore::from_env(&*h.opts.env).map_err(fail)?;
    let local = match store.load(id) {
        Ok(r) => Some(r),
        Err(e) if e.code == crate::launch::records::CODE_NOT_FOUND => None,
        Err(e) => return Err(fail(e)),
    };
    let report = match local {
        // A run off Kubernetes needs no cluster client.
        Some(record) if !record.kind.is_on_kubernetes() => {
            h.block_on(crate::launch::collect::collect(
                None,
                &crate::launch::collect::CollectTarget::Run(&record),
                &opts,
            ))?
        }
        local => {
            let k = h.k8s()?;
            h.block_on(async {
                let record = match local {
                    Some(r) => r,
                    None => {
                        crate::launch::records::cluster_copy::find_run(
                            &store,
                            Some(&k),
                            &k.namespace,
                            id,
                        )
                        .await?
                    }
                };
                crate::launch::collect::collect(
                    Some(&k),
                    &crate::launch::collect::CollectTarget::Run(&record),
                    &opts,
                )
                .await
            })?
        }
    };
    Ok(report_map(&report))
}

fn report_map(report: &crate::launch::collect::CollectReport) -> Map {
    crate::script::convert::json_to_dynamic(&report.to_json())
        .try_cast::<Map>()
        .unwrap_or_default()
}
