//! `nrl doctor` offline rules: for every rule a minimal failing input and a passing one
//! (small files under tests/data/doctor, most inheriting the passing `recipe.yaml` /
//! `infra.yaml` pair through `defaults:`), snapshots of the report, and the reference
//! examples.

use std::path::PathBuf;
use std::sync::Arc;

use nrl::config::env::MapEnv;
use nrl::config::layers::LoadRequest;
use nrl::doctor::{self, Options, Report, Severity};
use nrl::launch::check::{Checked, check};

use crate::support::data;
use crate::support::data::{golden_env, golden_request};

const DIR: &str = "tests/data/doctor";

fn request(recipe: &str, infra: &str, overrides: &[&str], env: MapEnv) -> LoadRequest {
    let mut r = LoadRequest::new(PathBuf::from(DIR).join(recipe), Arc::new(env));
    r.infra = Some(PathBuf::from(DIR).join(infra));
    r.overrides = overrides.iter().map(|s| s.to_string()).collect();
    r
}

fn checked(recipe: &str, infra: &str, overrides: &[&str]) -> Checked {
    let req = request(recipe, infra, overrides, golden_env());
    check(&req, true).unwrap_or_else(|e| panic!("{recipe} + {infra}: {}", e.render(false, 100)))
}

fn report_with(recipe: &str, infra: &str, overrides: &[&str], opts: &Options) -> Report {
    let c = checked(recipe, infra, overrides);
    doctor::offline_with(&c.config, &c.manifests, opts)
}

fn report(recipe: &str, infra: &str, overrides: &[&str]) -> Report {
    report_with(recipe, infra, overrides, &Options::default())
}

/// (short code, severity) of every reported finding.
fn found(r: &Report) -> Vec<(String, Severity)> {
    r.findings
        .iter()
        .map(|f| {
            (
                f.code.trim_start_matches("nrl::doctor::").to_string(),
                f.severity,
            )
        })
        .collect()
}

fn render(r: &Report) -> String {
    let cwd = std::env::current_dir()
        .unwrap_or_default()
        .display()
        .to_string();
    r.render(false, 100).replace(&cwd, "<repo>")
}

use Severity::{Error, Warning};

fn one(code: &str, sev: Severity) -> Vec<(String, Severity)> {
    vec![(code.to_string(), sev)]
}

#[test]
fn the_base_pair_is_clean() {
    let r = report("recipe.yaml", "infra.yaml", &[]);
    assert!(r.is_empty(), "{}", render(&r));
    assert_eq!(r.summary(), "doctor: no problems found");
}

#[test]
fn gpu_mismatch() {
    let r = report("gpu_mismatch.recipe.yaml", "infra.yaml", &[]);
    assert_eq!(found(&r), one("gpu_mismatch", Error));
    insta::assert_snapshot!("gpu_mismatch", render(&r));
    // Fewer GPUs than the pods have: idle GPUs, a warning.
    let r = report("gpu_fewer.recipe.yaml", "infra.yaml", &[]);
    assert_eq!(found(&r), one("gpu_mismatch", Warning));
    // Matching values, also when an override sets them.
    assert!(
        report(
            "gpu_mismatch.recipe.yaml",
            "infra.yaml",
            &["cluster.gpus_per_node=4"]
        )
        .is_empty()
    );
}

#[test]
fn node_count_mismatch() {
    let r = report("node_count.recipe.yaml", "infra.yaml", &[]);
    assert_eq!(found(&r), one("node_count_mismatch", Error));
    insta::assert_snapshot!("node_count_mismatch", render(&r));
    let r = report("recipe.yaml", "infra.yaml", &["cluster.num_nodes=1"]);
    assert_eq!(found(&r), one("node_count_mismatch", Warning));
    assert!(
        report(
            "node_count.recipe.yaml",
            "infra.yaml",
            &["cluster.num_nodes=2"]
        )
        .is_empty()
    );
}

#[test]
fn entrypoint_overrides_beat_the_recipe() {
    // The training script sees `cluster.num_nodes=2` from the entrypoint, not the recipe's 3.
    let ep = "infra.launch.entrypoint='python run_grpo.py --config r.yaml cluster.num_nodes=2'";
    assert!(report("node_count.recipe.yaml", "infra.yaml", &[ep]).is_empty());
    let ep = "infra.launch.entrypoint='python run_grpo.py cluster.gpus_per_node=8'";
    let r = report("recipe.yaml", "infra.yaml", &[ep]);
    assert_eq!(found(&r), one("gpu_mismatch", Error));
    assert!(
        r.findings[0].label.contains("the entrypoint sets"),
        "{}",
        render(&r)
    );
}

#[test]
fn literal_secret() {
    let r = report("recipe.yaml", "secret_env.infra.yaml", &[]);
    assert_eq!(found(&r), one("literal_secret", Error));
    let text = render(&r);
    assert!(
        !text.contains("0123456789abcdef0123456789abcdef01234567 in"),
        "the message masks the value"
    );
    insta::assert_snapshot!("literal_secret", text);
    // A container env value shaped like a token, whatever its name.
    let r = report(
        "recipe.yaml",
        "infra.yaml",
        &[
            "infra.kuberay.training.spec.workerGroupSpecs.0.template.spec.containers.0.env.0.value=hf_abcdefghijklmnopqrstuvwxyz0123456789",
        ],
    );
    assert_eq!(found(&r), one("literal_secret", Error));
    // The base pair reads HF_TOKEN through secretKeyRef; launch.env without secrets is fine.
    let ok = report(
        "recipe.yaml",
        "infra.yaml",
        &["infra.launch.env.WANDB_PROJECT=grpo"],
    );
    assert!(ok.is_empty(), "{}", render(&ok));
}

#[test]
fn shell_expansion_in_the_recipe() {
    let r = report("shell.recipe.yaml", "infra.yaml", &[]);
    assert_eq!(
        found(&r),
        vec![
            ("shell_expansion".to_string(), Error),
            ("shell_expansion".to_string(), Error)
        ]
    );
    insta::assert_snapshot!("shell_expansion", render(&r));
    // A command-line override is recipe text too.
    let r = report(
        "recipe.yaml",
        "infra.yaml",
        &["logger.log_dir=${HOME}/logs"],
    );
    assert_eq!(found(&r), one("shell_expansion", Error));
    // Escaped and OmegaConf forms are fine.
    assert!(
        report(
            "recipe.yaml",
            "infra.yaml",
            &["logger.log_dir=\\${HOME}/${oc.env:USER}/${policy.model_name}"]
        )
        .is_empty()
    );
}

/// In the infra file interpolation runs at load time, so the same mistakes already fail
/// `check` with the escape named in the help: the doctor rule is for the recipe.
#[test]
fn shell_expansion_in_infra_is_an_interpolation_error() {
    for (ov, needle) in [
        (
            "infra.launch.entrypoint=mkdir -p ${LOG_DIR}",
            "\\${LOG_DIR}",
        ),
        (
            "infra.kuberay.training.spec.workerGroupSpecs.0.template.spec.containers.0.env.0.value=${HF_HOME:-/tmp}",
            "\\${HF_HOME:-/tmp}",
        ),
    ] {
        let req = request("recipe.yaml", "infra.yaml", &[ov], golden_env());
        let err = check(&req, true).expect_err(ov);
        assert!(err.code.starts_with("nrl::interp::"), "{}", err.code);
        assert!(
            err.help.as_deref().unwrap_or("").contains(needle),
            "{:?}",
            err.help
        );
    }
}

#[test]
fn dtensor_only_override() {
    let r = report("megatron.recipe.yaml", "dtensor_only.infra.yaml", &[]);
    assert_eq!(
        found(&r),
        vec![
            ("dtensor_only_override".to_string(), Error),
            ("dtensor_only_override".to_string(), Error)
        ]
    );
    insta::assert_snapshot!("dtensor_only_override", render(&r));
    // nrl's own override on a Megatron recipe that kept policy.optimizer: loads, does nothing.
    let r = report(
        "recipe.yaml",
        "infra.yaml",
        &[
            "policy.megatron_cfg.enabled=true",
            "policy.dtensor_cfg.enabled=false",
            "~policy.optimizer.kwargs.foreach",
        ],
    );
    assert_eq!(found(&r), one("dtensor_only_override", Warning));
    // The same entrypoint on a DTensor recipe, and a Megatron recipe without them: clean.
    assert!(report("recipe.yaml", "dtensor_only.infra.yaml", &[]).is_empty());
    assert!(report("megatron.recipe.yaml", "infra.yaml", &[]).is_empty());
}

#[test]
fn two_backends() {
    let r = report("moe_both.recipe.yaml", "infra.yaml", &[]);
    assert_eq!(found(&r), one("two_backends", Error));
    insta::assert_snapshot!("two_backends", render(&r));
    // Expert parallelism marks MoE too.
    let r = report(
        "recipe.yaml",
        "infra.yaml",
        &[
            "policy.megatron_cfg.enabled=true",
            "policy.megatron_cfg.expert_model_parallel_size=8",
        ],
    );
    assert_eq!(found(&r), one("two_backends", Error));
    // MoE with DTensor off (as NeMo-RL's MoE recipes do) is clean.
    assert!(
        report(
            "moe_both.recipe.yaml",
            "infra.yaml",
            &["policy.dtensor_cfg.enabled=false"]
        )
        .is_empty()
    );
}

#[test]
fn webhook_conflict() {
    let r = report("recipe.yaml", "webhook.infra.yaml", &[]);
    assert_eq!(
        found(&r),
        vec![
            ("webhook_conflict".to_string(), Error),
            ("webhook_conflict".to_string(), Error)
        ]
    );
    insta::assert_snapshot!("webhook_conflict", render(&r));
    // Only those two fields: other requests and probes are fine.
    let ok = report(
        "recipe.yaml",
        "infra.yaml",
        &[
            "infra.kuberay.training.spec.headGroupSpec.template.spec.containers.0.resources.requests={cpu: '8'}",
            "infra.kuberay.training.spec.headGroupSpec.template.spec.containers.0.livenessProbe={exec: {command: ['true']}}",
        ],
    );
    assert!(ok.is_empty(), "{}", render(&ok));
}

#[test]
fn no_tolerations() {
    let r = report("recipe.yaml", "no_tolerations.infra.yaml", &[]);
    assert_eq!(found(&r), one("no_tolerations", Warning));
    assert!(!r.has_errors());
    insta::assert_snapshot!("no_tolerations", render(&r));
    let ok = report(
        "recipe.yaml",
        "no_tolerations.infra.yaml",
        &[
            "infra.kuberay.training.spec.workerGroupSpecs.0.template.spec.tolerations=[{key: nvidia.com/gpu, operator: Exists}]",
        ],
    );
    assert!(ok.is_empty(), "{}", render(&ok));
}

#[test]
fn kai_queue_label() {
    let r = report("recipe.yaml", "kai_no_queue.infra.yaml", &[]);
    assert_eq!(
        found(&r),
        vec![
            ("kai_queue_label".to_string(), Error),
            ("kai_queue_label".to_string(), Error)
        ]
    );
    insta::assert_snapshot!("kai_queue_label", render(&r));
    // The queue label may come from infra.labels instead.
    assert!(
        report(
            "recipe.yaml",
            "kai_no_queue.infra.yaml",
            &["infra.labels['kai.scheduler/queue']=rl"]
        )
        .is_empty()
    );
}

#[test]
fn kai_topology_partial() {
    let r = report("recipe.yaml", "kai_topology.infra.yaml", &[]);
    assert_eq!(found(&r), one("kai_topology_partial", Error));
    insta::assert_snapshot!("kai_topology_partial", render(&r));
    let ok = report(
        "recipe.yaml",
        "kai_topology.infra.yaml",
        &[
            "infra.kuberay.training.spec.workerGroupSpecs.1.template.metadata={annotations: {kai.scheduler/topology: gb300-topology}}",
        ],
    );
    assert!(ok.is_empty(), "{}", render(&ok));
}

#[test]
fn upload_unused() {
    let r = report("recipe.yaml", "upload_cd.infra.yaml", &[]);
    assert_eq!(found(&r), one("upload_unused", Error));
    insta::assert_snapshot!("upload_unused", render(&r));
    // `--code-source upload` on the command line counts as asking.
    let flag = Options {
        code_source: Some(nrl::config::schema::CodeSource::Upload),
        ..Options::default()
    };
    let r = report_with("recipe.yaml", "infra.yaml", &[], &flag);
    assert_eq!(found(&r), one("upload_unused", Error));
    // A RayJob uploads nothing; the shipped default `upload` is not a request.
    let rayjob = Options {
        rayjob: true,
        ..flag.clone()
    };
    assert!(report_with("recipe.yaml", "upload_cd.infra.yaml", &[], &rayjob).is_empty());
    assert!(
        report(
            "recipe.yaml",
            "infra.yaml",
            &["~infra.launch.codeSource", "~infra.launch.codePath"]
        )
        .is_empty()
    );
    assert!(report("recipe.yaml", "upload_ok.infra.yaml", &[]).is_empty());
}

#[test]
fn upload_too_large() {
    let root = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(root.path().join("code")).expect("mkdir");
    let big = std::fs::File::create(root.path().join("code/weights.bin")).expect("create");
    // Sparse: the size is what counts, nothing is written or read.
    big.set_len(101 * 1024 * 1024).expect("set_len");
    let opts = Options {
        repo_root: Some(root.path().to_path_buf()),
        ..Options::default()
    };
    let r = report_with("recipe.yaml", "upload_ok.infra.yaml", &[], &opts);
    assert_eq!(found(&r), one("upload_too_large", Error));
    let f = &r.findings[0];
    assert!(
        f.message.contains("101.0 MiB") || f.message.contains("101"),
        "{}",
        f.message
    );
    assert!(
        f.notes.iter().any(|n| n.contains("code/weights.bin")),
        "{:?}",
        f.notes
    );
    big.set_len(1024).expect("set_len");
    assert!(report_with("recipe.yaml", "upload_ok.infra.yaml", &[], &opts).is_empty());
}

#[test]
fn report_groups_errors_first_and_summarises() {
    let r = report(
        "gpu_fewer.recipe.yaml",
        "no_tolerations.infra.yaml",
        &["cluster.num_nodes=3"],
    );
    assert_eq!(
        found(&r),
        vec![
            ("node_count_mismatch".to_string(), Error),
            ("gpu_mismatch".to_string(), Warning),
            ("no_tolerations".to_string(), Warning),
        ]
    );
    assert_eq!(r.summary(), "doctor: 1 error, 2 warnings");
    assert_eq!(r.exit(), nrl::diag::Exit::Input);
    insta::assert_snapshot!("grouped_report", render(&r));
}

/// The reference examples give no errors; the ultra pairs give one warning each: their
/// entrypoints pass `cluster.num_nodes` 42/58 while the cluster has 48/64 GPU workers (the
/// rest host Gym's judges).
#[test]
fn reference_examples_have_no_errors() {
    for (recipe, infra, warnings) in [
        (data::QWEN_RECIPE, "qwen3_30b_math_4n_4gpu", vec![]),
        (
            data::TRIVIAL_RECIPE,
            "ultra_48n_pipeclean",
            vec!["nrl::doctor::node_count_mismatch"],
        ),
        (
            data::TRIVIAL_RECIPE,
            "ultra_64n_pipeclean",
            vec!["nrl::doctor::node_count_mismatch"],
        ),
    ] {
        let c = check(&golden_request(recipe, infra), true).expect("reference pair loads");
        let r = doctor::offline(&c.config, &c.manifests);
        assert!(!r.has_errors(), "{infra}: {}", render(&r));
        let got: Vec<_> = r.warnings().map(|f| f.code.as_ref()).collect();
        assert_eq!(got, warnings, "{infra}: {}", render(&r));
    }
}

#[test]
fn rules_table_lists_every_code() {
    let t = nrl::cli::doctor::rules_table();
    for r in doctor::RULES {
        assert!(t.contains(r.short()), "{}", r.code);
    }
}
