//! `nrl schema infra|gym|defaults` checked by an independent validator: Python's
//! `jsonschema` (Draft 2020-12, from the CI venv) reads the schemas nrl prints and
//! validates every reference example and every example of `examples/` with them, the
//! files loaded by OmegaConf as NeMo-RL loads them. And the other way round: each typo or
//! wrong value the loader rejects, the schema rejects too.
//!
//! `NRL_PYTHON` names the venv python (the Makefile sets it); under `CI=true` a missing
//! python or module is a failure, elsewhere the tests say they skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::context::TestContext;
use crate::support::data::repo;

/// The venv python with `jsonschema` and `omegaconf`, or why not.
fn python() -> Result<String, String> {
    let py = std::env::var("NRL_PYTHON").map_err(|_| "NRL_PYTHON is not set".to_string())?;
    let out = Command::new(&py)
        .args(["-c", "import jsonschema, omegaconf"])
        .output()
        .map_err(|e| format!("cannot run {py}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{py} lacks jsonschema/omegaconf: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(py)
}

/// The python, or `None` when the test should skip (never under CI).
fn python_or_skip() -> Option<String> {
    match python() {
        Ok(p) => Some(p),
        Err(why) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("the JSON Schema checks need the venv python under CI: {why}")
        }
        Err(why) => {
            eprintln!("skipping the JSON Schema checks: {why}");
            None
        }
    }
}

/// `nrl schema KIND`, written into `dir`.
fn schema_file(ctx: &TestContext, kind: &str, dir: &Path) -> PathBuf {
    let path = dir.join(format!("{kind}.schema.json"));
    ctx.nrl()
        .args(["schema", kind, "-o"])
        .arg(&path)
        .assert()
        .success();
    path
}

/// Each file's validation errors (empty: valid), by the independent validator.
fn validate(py: &str, schema: &Path, files: &[PathBuf]) -> BTreeMap<String, Vec<String>> {
    let out = Command::new(py)
        .arg(repo().join("tests/oracle/validate_json_schema.py"))
        .arg(schema)
        .args(files)
        .output()
        .expect("run the validator");
    assert!(
        out.status.success(),
        "validator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("validator prints JSON")
}

fn files(rels: &[&str]) -> Vec<PathBuf> {
    rels.iter().map(|r| repo().join(r)).collect()
}

#[test]
fn every_example_validates_against_the_schema_nrl_prints() {
    let Some(py) = python_or_skip() else { return };
    let ctx = TestContext::new();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "infra",
            files(&[
                "examples/quickstart/infra.yaml",
                "tests/data/reference/nemo-rl/infra/nrl_k8s/examples/qwen3_30b_math_4n_4gpu.gb300.infra.yaml",
                "tests/data/reference/nemo-rl/infra/nrl_k8s/examples/ultra_48n_pipeclean.gb300.infra.yaml",
                "tests/data/reference/nemo-rl/infra/nrl_k8s/examples/ultra_64n_pipeclean.gb300.infra.yaml",
                "tests/data/run/longlived.infra.yaml",
                "tests/data/run/quickstart-dra.infra.yaml",
                "tests/data/doctor/kai_topology.infra.yaml",
                "tests/data/cluster/infra.yaml",
            ]),
        ),
        (
            "defaults",
            files(&[
                "src/config/shipped_defaults.yaml",
                "tests/data/reference/nemo-rl/infra/nrl_k8s/src/nrl_k8s/defaults/defaults.example.yaml",
            ]),
        ),
        (
            "gym",
            files(&[
                "examples/gym/gpqa.yaml",
                "tests/data/gym/k8s_vllm_single_node.yaml",
                "tests/data/gym/e2e_three.yaml",
            ]),
        ),
    ];
    // A Gym config with a parent may leave everything to it: the loader takes this child,
    // and so must the schema.
    let parent = dir.path().join("gpqa.yaml");
    std::fs::copy(repo().join("examples/gym/gpqa.yaml"), &parent).unwrap();
    let child = dir.path().join("gpqa-8.yaml");
    std::fs::write(
        &child,
        "defaults: gpqa.yaml\ndriver:\n  benchmarks:\n    gpqa:\n      run: {num_repeats: 8}\n",
    )
    .unwrap();
    ctx.nrl()
        .args(["gym", "render"])
        .arg(&child)
        .assert()
        .success();
    let mut cases = cases;
    cases[2].1.push(child);
    for (kind, examples) in cases {
        let schema = schema_file(&ctx, kind, dir.path());
        let errors = validate(&py, &schema, &examples);
        assert_eq!(errors.len(), examples.len(), "{kind}: {errors:?}");
        for (file, errs) in errors {
            assert!(
                errs.is_empty(),
                "{file} fails `nrl schema {kind}`: {errs:#?}"
            );
        }
    }
}

/// One edit of an example that the loader rejects.
struct Typo {
    what: &'static str,
    from: &'static str,
    to: &'static str,
}

const INFRA_TYPOS: &[Typo] = &[
    Typo {
        what: "a misspelt top-level key",
        from: "namespace: default",
        to: "namepsace: default",
    },
    Typo {
        what: "a misspelt nested key",
        from: "  rayUploadPaths:",
        to: "  rayUploadPath:",
    },
    Typo {
        what: "an enum value in the wrong case",
        from: "namespace: default",
        to: "namespace: default\nscheduler: {kind: Kai, queue: q}",
    },
    Typo {
        what: "a mapping where a list goes",
        from: "namespace: default",
        to: "namespace: default\nimagePullSecrets: {a: b}",
    },
    Typo {
        what: "a key of a section one level too high",
        from: "namespace: default",
        to: "namespace: default\nentrypoint: python train.py",
    },
];

const GYM_TYPOS: &[Typo] = &[
    Typo {
        what: "a misspelt benchmark key",
        from: "      prepare:",
        to: "      prepair:",
    },
    Typo {
        what: "a misspelt service key",
        from: "    tensor_parallel_size: 2",
        to: "    tensor_parallel_sizes: 2",
    },
    Typo {
        what: "a service type Kubernetes cannot run",
        from: "    type: vllm",
        to: "    type: ray",
    },
    Typo {
        what: "a tensor parallel size of zero",
        from: "    tensor_parallel_size: 2",
        to: "    tensor_parallel_size: 0",
    },
    Typo {
        what: "an env value without a prefix",
        from: "HF_TOKEN: host:HF_TOKEN     #",
        to: "HF_TOKEN: HF_TOKEN     #",
    },
];

/// Writes each typo'd copy of `example` into `dir`, asserts the loader rejects it with
/// `command`, and returns the copies.
fn typo_variants(
    ctx: &TestContext,
    dir: &Path,
    example: &str,
    typos: &[Typo],
    command: impl Fn(&Path) -> Vec<String>,
) -> Vec<PathBuf> {
    let text = std::fs::read_to_string(repo().join(example)).unwrap();
    typos
        .iter()
        .enumerate()
        .map(|(i, typo)| {
            assert!(
                text.contains(typo.from),
                "{}: `{}` not in {example}",
                typo.what,
                typo.from
            );
            let path = dir.join(format!(
                "typo{i}-{}",
                Path::new(example).file_name().unwrap().to_string_lossy()
            ));
            std::fs::write(&path, text.replacen(typo.from, typo.to, 1)).unwrap();
            let out = ctx.nrl().args(command(&path)).output().unwrap();
            assert!(
                !out.status.success(),
                "the loader accepts {} ({}):\n{}",
                typo.what,
                path.display(),
                String::from_utf8_lossy(&out.stdout)
            );
            path
        })
        .collect()
}

#[test]
fn what_the_loader_rejects_the_schema_rejects() {
    let Some(py) = python_or_skip() else { return };
    let ctx = TestContext::new();
    let dir = tempfile::tempdir().unwrap();
    let infra = typo_variants(
        &ctx,
        dir.path(),
        "examples/quickstart/infra.yaml",
        INFRA_TYPOS,
        |p| {
            vec![
                "check".into(),
                "examples/quickstart/recipe.yaml".into(),
                "--infra".into(),
                p.display().to_string(),
            ]
        },
    );
    let gym = typo_variants(&ctx, dir.path(), "examples/gym/gpqa.yaml", GYM_TYPOS, |p| {
        vec!["gym".into(), "render".into(), p.display().to_string()]
    });
    for (kind, variants, typos) in [("infra", infra, INFRA_TYPOS), ("gym", gym, GYM_TYPOS)] {
        let schema = schema_file(&ctx, kind, dir.path());
        let errors = validate(&py, &schema, &variants);
        for (path, typo) in variants.iter().zip(typos) {
            let errs = &errors[&path.display().to_string()];
            assert!(
                !errs.is_empty(),
                "`nrl schema {kind}` accepts {} that the loader rejects",
                typo.what
            );
        }
    }
}

#[test]
fn schema_help_and_output() {
    let ctx = TestContext::new();
    let out = ctx.nrl().args(["schema", "infra"]).output().unwrap();
    assert!(out.status.success());
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    // Docs, enums and defaults come from the model declaration.
    let submit = &schema["$defs"]["SubmitSpec"]["properties"]["submitter"];
    insta::assert_json_snapshot!("schema_infra_submitter", submit);
    let bad = ctx.nrl().args(["schema", "recipe"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
