//! A run's objects before anything is applied: a Job per benchmark (in config order) and
//! the Secret with the run's secret env values, each validated offline against the
//! bundled schemas.

use indexmap::IndexMap;

use crate::config::node::Node;
use crate::diag::{Diag, Result};
use crate::render::emit;
use crate::render::validate::validate_objects;

use super::config::{EnvMap, EnvOrigin, EnvValue, SubmitConfig, to_node};
use super::names::{job_name, parse_run_id, secret_name};
use super::render;
use super::script::{DriverScript, Install, driver_script, flatten_run_args, shlex_quote};

/// Linux refuses a single argument longer than this (MAX_ARG_STRLEN, 32 pages).
pub const MAX_ARG_BYTES: usize = 128 * 1024;

/// Who submits, and when (written into each benchmark's record stub).
#[derive(Debug, Clone)]
pub struct RunMeta {
    pub run_id: String,
    /// RFC 3339 UTC, seconds (`2026-09-01T12:00:00Z`).
    pub submitted_at: String,
    pub submitted_by: String,
}

/// One benchmark's Job.
#[derive(Debug, Clone)]
pub struct PlannedJob {
    pub benchmark: String,
    /// The Job's name.
    pub name: String,
    /// `<output_path>/<run id>/<benchmark>` inside the driver.
    pub run_dir: String,
    pub manifest: Node,
}

/// Everything a submit applies.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub run_id: String,
    pub namespace: String,
    pub context: Option<String>,
    /// `<output_path>/<run id>`.
    pub base_run_dir: String,
    pub jobs: Vec<PlannedJob>,
    /// The Secret holding secret env values (values inside: never print it).
    pub secret: Option<Node>,
}

impl RunPlan {
    pub fn secret_name(&self) -> Option<String> {
        self.secret.as_ref().map(|_| secret_name(&self.run_id))
    }
}

fn join_path(base: &str, leaf: &str) -> String {
    if base.ends_with('/') {
        format!("{base}{leaf}")
    } else {
        format!("{base}/{leaf}")
    }
}

/// The per-benchmark record stub written as `gym-job.json` by the driver (§2.6).
fn record_stub(
    cfg: &SubmitConfig,
    meta: &RunMeta,
    bench: &str,
    run_dir: &str,
    job: &str,
) -> String {
    let version = cfg
        .driver
        .gym_install
        .as_ref()
        .map_or("unknown", |g| g.git_ref.as_str());
    let v = serde_json::json!({
        "gym_job_id": meta.run_id,
        "gym_version": version,
        "gym_commit": null,
        "submitted_at": meta.submitted_at,
        "run_dir": run_dir,
        "cluster": cfg.compute_name,
        "executor": "kubernetes",
        "submitted_by": meta.submitted_by,
        "benchmarks": [{"benchmark": bench, "job_dir": run_dir, "job_id": job, "error": null}],
        "hostname": null,
        "executor_metadata": {
            "namespace": cfg.compute.namespace,
            "context": cfg.compute.context.clone().unwrap_or_default(),
        },
        "schema_version": 1,
    });
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
    text.push('\n');
    text
}

/// The driver's env: `driver.env`, plus for a `command` benchmark the `NEMO_GYM_*`
/// variables (which win over `driver.env` on a clash).
fn driver_env(cfg: &SubmitConfig, run: &Node, run_dir: &str, command: bool) -> EnvMap {
    let mut env = cfg.driver.env.clone();
    if !command {
        return env;
    }
    let lit = |v: &str| EnvValue {
        value: v.to_string(),
        origin: EnvOrigin::Literal,
        written: format!("lit:{v}"),
        span: None,
        unset_at: None,
    };
    env.insert("NEMO_GYM_BENCH_DIR".into(), lit(run_dir));
    for (key, var) in [
        ("policy_base_url", "NEMO_GYM_POLICY_BASE_URL"),
        ("policy_model_name", "NEMO_GYM_POLICY_MODEL_NAME"),
        ("policy_api_key", "NEMO_GYM_POLICY_API_KEY"),
    ] {
        if let Some(v) = run.get(key) {
            let mut value = lit(&crate::config::node::python_str(v));
            value.span = v.best_span();
            env.insert(var.into(), value);
        }
    }
    env
}

/// Render and validate every object of a run.
pub fn plan(cfg: &SubmitConfig, meta: &RunMeta) -> Result<RunPlan> {
    parse_run_id(&meta.run_id)?;
    let base_run_dir = join_path(&cfg.job.output_path, &meta.run_id);
    let secret = render::secret(cfg, &meta.run_id);
    let secret_ref = secret_name(&meta.run_id);
    let install = cfg.driver.gym_install.as_ref().map(|g| Install {
        repo: &g.repo,
        git_ref: &g.git_ref,
    });
    let mut jobs = Vec::with_capacity(cfg.driver.benchmarks.len());
    let mut names: IndexMap<String, String> = IndexMap::new();
    for (bench, b) in &cfg.driver.benchmarks {
        let name = job_name(&meta.run_id, bench);
        if let Some(other) = names.insert(name.clone(), bench.clone()) {
            return Err(Diag::new(
                super::config::CODE_COLLISION,
                format!("benchmarks `{other}` and `{bench}` would both be Job `{name}`"),
            )
            .label(
                cfg.key_span_of(&["driver", "benchmarks", bench]),
                "same Job name",
            )
            .help("rename one of them"));
        }
        let run_dir = join_path(&base_run_dir, bench);
        let resolved = emit::to_yaml(&to_node(cfg, Some(bench)));
        let record = record_stub(cfg, meta, bench, &run_dir, &name);
        let run_args = match &b.command {
            Some(_) => None,
            None => {
                let mut args = Vec::new();
                if cfg.driver.policy_model.is_some() && !cfg.driver.policy_model_type.is_empty() {
                    args.push(format!(
                        "--model-type {}",
                        shlex_quote(&cfg.driver.policy_model_type)
                    ));
                }
                args.extend(flatten_run_args(&b.run)?);
                Some(args)
            }
        };
        let prepare = if b.prepare_is_empty() {
            None
        } else {
            Some(format!(
                "gym eval prepare {}",
                flatten_run_args(&b.prepare)?.join(" ")
            ))
        };
        let script = driver_script(&DriverScript {
            run_dir: &run_dir,
            resolved_config: &resolved,
            record_json: &record,
            run_args,
            install,
            prepare,
            command: b.command.as_deref(),
        });
        if script.len() >= MAX_ARG_BYTES {
            return Err(Diag::new(
                "nrl::gym::argv_too_long",
                format!(
                    "the driver script of benchmark `{bench}` is {} KiB; Linux refuses a single argument over 128 KiB",
                    script.len() / 1024
                ),
            )
            .label(cfg.key_span_of(&["driver", "benchmarks", bench]), "this benchmark")
            .help("shorten its `command`, `run` or `prepare`; ship large inputs on the PVC and pass their paths"));
        }
        let env = driver_env(cfg, &b.run, &run_dir, b.command.is_some());
        let driver = render::driver_container(cfg, script, &env, &secret_ref);
        let manifest = render::job(cfg, &meta.run_id, bench, &name, driver)?;
        jobs.push(PlannedJob {
            benchmark: bench.clone(),
            name,
            run_dir,
            manifest,
        });
    }
    // All Jobs at once: a config line every Job copies is reported once, naming them.
    let manifests = jobs.iter().map(|j| &j.manifest).chain(secret.as_ref());
    if let Some(d) = Diag::aggregate(validate_objects(manifests)) {
        return Err(d);
    }
    Ok(RunPlan {
        run_id: meta.run_id.clone(),
        namespace: cfg.compute.namespace.clone(),
        context: cfg.compute.context.clone(),
        base_run_dir,
        jobs,
        secret,
    })
}
