//! `nrl check` through the binary: outputs, exit codes, and the reference CLI cases of
//! ref-config-render §7.6 that concern `check`.

use predicates::prelude::*;

use crate::support::context::{RunToEnd, TestContext, nrl, snapshot};
use crate::support::data::*;

fn qwen_args() -> Vec<String> {
    vec![
        "check".into(),
        reference(QWEN_RECIPE).display().to_string(),
        "--infra".into(),
        infra_example("qwen3_30b_math_4n_4gpu")
            .display()
            .to_string(),
        "infra.namespace=nemo-rl".into(),
    ]
}

#[test]
fn manifests_only_stream_is_byte_identical_to_the_reference_without_aliases() {
    let out = nrl()
        .args(qwen_args())
        .arg("--manifests-only")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = std::fs::read_to_string(
        repo().join("tests/data/golden-no-aliases/qwen3_30b.check_manifests_only.yaml"),
    )
    .expect("golden");
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}

#[test]
fn bundle_json_is_byte_identical_to_the_reference() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The reference creates missing parent directories of -o; nrl names them instead
    // (docs/deviations.md, `output_never_replaces_an_input_file`).
    let out = dir.path().join("bundle.json");
    let mut args = qwen_args();
    args[1] = reference(TRIVIAL_RECIPE).display().to_string();
    nrl()
        .args(args)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "wrote full config + 3 manifest(s) to",
        ));
    let got = std::fs::read_to_string(&out).expect("written");
    let want = std::fs::read_to_string(golden("qwen3_30b.check_bundle.json")).expect("golden");
    assert_eq!(got, want);
}

#[test]
fn manifests_only_to_file_reports_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("m.yaml");
    nrl()
        .args(qwen_args())
        .args(["--manifests-only", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("wrote 3 manifest(s) to"));
    assert!(
        std::fs::read_to_string(&out)
            .expect("file")
            .contains("kind: RayCluster")
    );
}

#[test]
fn summary_prints_namespace_image_and_roles() {
    let ctx = TestContext::new();
    let ran = ctx.nrl().args(qwen_args()).run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, ran.stdout);
}

/// ref §7.6: summary with a head limit prints `training: rc-t` and `cpu=8`.
#[test]
fn summary_of_a_recipe_infra_block() {
    let ctx = TestContext::new();
    let r = ctx.home().join("r.yaml");
    std::fs::write(
        &r,
        "infra:\n  namespace: ns-a\n  image: img:1\n  kuberay:\n    training:\n      name: rc-t\n      spec:\n        headGroupSpec:\n          template:\n            spec:\n              containers:\n                - name: h\n                  resources: {limits: {cpu: '8', memory: 32Gi}}\n",
    )
    .expect("write");
    let ran = ctx.nrl().arg("check").arg(&r).run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, ran.stdout);
}

/// ref §7.6: no image → an error (nrl: exit 2, bad input).
#[test]
fn missing_image_is_bad_input() {
    let ctx = TestContext::new();
    let r = ctx.home().join("r.yaml");
    std::fs::write(&r, "infra:\n  namespace: ns-a\n").expect("write");
    let ran = ctx.nrl().arg("check").arg(&r).run();
    assert_eq!(ran.code, Some(2));
    snapshot!(ctx, ran.stderr);
}

/// ref §7.6: --infra and a recipe `infra:` both present → error mentioning infra.
#[test]
fn infra_twice_is_bad_input() {
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args([
            "check",
            "tests/data/diag/recipe-with-infra.yaml",
            "--infra",
            "tests/data/diag/base-infra.yaml",
        ])
        .run();
    assert_eq!(ran.code, Some(2));
    snapshot!(ctx, ran.stderr);
}

#[test]
fn explain_names_layers_and_lines() {
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args(qwen_args())
        .args([
            "--explain",
            "infra.kuberay.training.name",
            "--explain",
            "policy.optimizer",
        ])
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, ran.stdout);
}

#[test]
fn explain_of_an_override() {
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args(qwen_args())
        .args(["--explain", "infra.namespace"])
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, ran.stdout);
}

#[test]
fn unknown_override_key_suggests_and_exits_2() {
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args(qwen_args())
        .arg("grpo.max_num_stepz=3")
        .run();
    assert_eq!(ran.code, Some(2));
    snapshot!(ctx, ran.stderr);
}

#[test]
fn schema_error_points_at_the_infra_line() {
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args([
            "check",
            "tests/data/diag/recipe.yaml",
            "--infra",
            "tests/data/diag/schema_nodeselecter.yaml",
        ])
        .run();
    assert_eq!(ran.code, Some(2));
    snapshot!(ctx, ran.stderr);
}

#[test]
fn no_validate_skips_schema_checks() {
    nrl()
        .args([
            "check",
            "tests/data/diag/recipe.yaml",
            "--infra",
            "tests/data/diag/schema_nodeselecter.yaml",
            "--no-validate",
            "--manifests-only",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("nodeSelecter"));
}

#[test]
fn missing_recipe_file_is_bad_input() {
    let ctx = TestContext::new();
    let ran = ctx.nrl().args(["check", "does/not/exist.yaml"]).run();
    assert_eq!(ran.code, Some(2));
    snapshot!(ctx, ran.stderr);
}

#[cfg(target_os = "linux")]
/// nrl holds cluster and Ray tokens: its executable is position-independent, so ASLR
/// randomises its image like everything else in the process (issue 16 item 8: the
/// non-PIE link that saved about a millisecond is gone).
#[test]
fn the_binary_is_position_independent() {
    let path = crate::support::context::nrl_path();
    let elf = std::fs::read(&path).expect("read the nrl binary");
    assert_eq!(&elf[..4], b"\x7fELF", "{} is not ELF", path.display());
    // e_type, little-endian: 2 is ET_EXEC (fixed address), 3 is ET_DYN (PIE).
    assert_eq!(
        u16::from_le_bytes([elf[16], elf[17]]),
        3,
        "nrl is not a PIE"
    );
}

#[test]
fn an_error_far_along_a_minified_line_is_reported_not_a_crash() {
    // Regression (issue 15 item 2): a span past column 65,535 panicked in the renderer.
    let d = tempfile::tempdir().unwrap();
    let recipe = d.path().join("minified.yaml");
    let filler = "x".repeat(70_000);
    std::fs::write(
        &recipe,
        format!(
            "{{policy: {{note: {filler}}}, infra: {{namespace: ns, image: img, imagee: x}}}}\n"
        ),
    )
    .unwrap();
    let out = nrl().arg("check").arg(&recipe).output().expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("unknown"), "{err}");
    assert!(
        err.contains("characters long: showing columns"),
        "the line is shown clipped: {err}"
    );
    assert!(err.len() < 4_000, "{} bytes of stderr", err.len());
}

#[cfg(unix)]
#[test]
fn defaults_naming_a_fifo_and_an_infra_that_is_a_device_are_refused_at_once() {
    // Regression (issue 15 item 3): a FIFO in `defaults:` blocked forever and
    // `--infra /dev/zero` read gigabytes.
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("parent.yaml");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let recipe = d.path().join("recipe.yaml");
    std::fs::write(
        &recipe,
        "defaults: parent.yaml\npolicy: {x: 1}\ninfra: {namespace: ns, image: img}\n",
    )
    .unwrap();
    let out = nrl()
        .arg("check")
        .arg(&recipe)
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not a regular file: a FIFO"), "{err}");

    std::fs::write(&recipe, "policy: {x: 1}\n").unwrap();
    let out = nrl()
        .arg("check")
        .arg(&recipe)
        .args(["--infra", "/dev/zero"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not a regular file: a character device"),
        "{err}"
    );
}

/// KubeRay's CRDs default a worker group's `minReplicas`/`maxReplicas` and the API server
/// applies defaults before it checks `required`, so `check` accepts a group without them,
/// and the manifests leave them out as the reference's do (the server fills them in).
#[test]
fn a_worker_group_without_min_and_max_replicas_is_valid() {
    let out = nrl()
        .args([
            "check",
            "examples/quickstart/recipe.yaml",
            "--infra",
            "tests/data/run/quickstart-no-min-max.infra.yaml",
            "--manifests-only",
        ])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("groupName: cpu-workers"), "{stdout}");
    assert!(
        !stdout.contains("minReplicas") && !stdout.contains("maxReplicas"),
        "{stdout}"
    );
}

/// Pod validation (Kubernetes `validation.go` `validatePodResourceClaim`) refuses a claim
/// with two sources; the schema cannot say so, `check` does, at the infra line.
#[test]
fn a_resource_claim_with_a_claim_and_a_template_is_refused() {
    nrl()
        .args([
            "check",
            "tests/data/diag/recipe.yaml",
            "--infra",
            "tests/data/diag/claim_both.yaml",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nrl::render::server_rule"))
        .stderr(predicate::str::contains("at most one of"))
        .stderr(predicate::str::contains("this claim names both"))
        .stderr(predicate::str::contains("claim_both.yaml:20:19"));
}

#[test]
fn output_never_replaces_an_input_file() {
    // Regression (issue 15 item 6): `check --manifests-only -o infra.yaml` replaced the
    // infra file it had read; the same for any file of a `defaults:` chain.
    let d = tempfile::tempdir().unwrap();
    let parent = d.path().join("parent.yaml");
    std::fs::write(&parent, "policy: {x: 1}\n").unwrap();
    let recipe = d.path().join("recipe.yaml");
    std::fs::write(&recipe, "defaults: parent.yaml\npolicy: {y: 2}\n").unwrap();
    let infra = d.path().join("infra.yaml");
    std::fs::write(&infra, "namespace: ns\nimage: img\n").unwrap();
    for target in [&infra, &recipe, &parent] {
        let before = std::fs::read_to_string(target).unwrap();
        let out = nrl()
            .arg("check")
            .arg(&recipe)
            .arg("--infra")
            .arg(&infra)
            .args(["--manifests-only", "-o"])
            .arg(target)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("nrl::io::output_is_input"), "{err}");
        assert_eq!(std::fs::read_to_string(target).unwrap(), before);
    }
    // A missing directory is named, not created.
    let out = nrl()
        .arg("check")
        .arg(&recipe)
        .arg("--infra")
        .arg(&infra)
        .arg("-o")
        .arg(d.path().join("no/such/dir/bundle.json"))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(!d.path().join("no").exists());
}

#[test]
fn check_fails_where_nemo_rl_reads_a_top_level_value_before_the_merge() {
    // Issue 14 item 11: NeMo-RL's load_config_with_inheritance fails with
    // InterpolationKeyError here (checked with tests/oracle/nemo_rl_loader.py), so the
    // job would crash in the pod: `nrl check` fails first.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("parent.yaml"), "policy:\n  model_name: m\n").expect("write");
    std::fs::write(
        dir.path().join("child.yaml"),
        "defaults: parent.yaml\nmodel_alias: ${policy.model_name}\n",
    )
    .expect("write");
    nrl()
        .current_dir(dir.path())
        .args(["check", "child.yaml", "infra.image=i"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("nrl::config::read_before_merge"))
        .stderr(predicate::str::contains(
            "Interpolation key 'policy.model_name' not found",
        ));
}

/// Nine levels of nine-item lists, each aliasing the level below (600 bytes, 9^9 nodes).
fn alias_bomb() -> String {
    let mut text = String::from("policy:\n  a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for level in 1..9 {
        let items = vec![format!("*a{}", level - 1); 9].join(", ");
        text.push_str(&format!("  a{level}: &a{level} [{items}]\n"));
    }
    text
}

#[test]
fn an_alias_bomb_is_a_clear_error_naming_the_alias() {
    // Issue 15 item 1: this recipe took 24 GB in `check`; the loader stops at a budget.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bomb.yaml"), alias_bomb()).expect("write");
    let out = nrl()
        .current_dir(dir.path())
        .args(["check", "bomb.yaml", "infra.image=i", "infra.namespace=ns"])
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    insta::assert_snapshot!(err);
}

#[test]
fn a_written_bundle_that_holds_a_literal_secret_says_so() {
    // Issue 15 item 7: `check -o` wrote literal secrets into a file without a word, even
    // with the doctor skipped or the finding silenced.
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |infra: &str, out: &str, extra: &[&str]| {
        let path = dir.path().join(out);
        let o = nrl()
            .args([
                "check",
                "tests/data/doctor/recipe.yaml",
                "--infra",
                infra,
                "-o",
            ])
            .arg(&path)
            .args(extra)
            .output()
            .expect("runs");
        let stderr =
            String::from_utf8_lossy(&o.stderr).replace(&dir.path().display().to_string(), "<tmp>");
        (o.status.code(), stderr)
    };
    let (code, stderr) = run(
        "tests/data/doctor/secret_env.infra.yaml",
        "bundle.yaml",
        &["--skip-doctor"],
    );
    assert_eq!(code, Some(0), "{stderr}");
    insta::assert_snapshot!(stderr);
    let (_, stderr) = run(
        "tests/data/doctor/secret_env.infra.yaml",
        "manifests.yaml",
        &["--manifests-only", "--skip-doctor"],
    );
    assert!(
        stderr.starts_with("warning: <tmp>/manifests.yaml holds 1 secret value(s) in clear"),
        "{stderr}"
    );
    // No secret, no warning.
    let (code, stderr) = run(
        "tests/data/doctor/infra.yaml",
        "clean.yaml",
        &["--skip-doctor"],
    );
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
}

/// `nrl check … 2>&1 | head -1` panicked (exit 101) in 2 of 8 tries when the reader went
/// away: a closed stdout or stderr is the reader's choice, and the command ends with its
/// own exit code (issue 16 item 3).
#[test]
fn a_reader_that_goes_away_does_not_make_nrl_panic() {
    let ctx = TestContext::new();
    let run = |args: &[String]| {
        let mut child = ctx
            .command()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawns");
        // Both read ends closed before nrl writes a byte.
        drop(child.stdout.take());
        drop(child.stderr.take());
        child.wait().expect("waits").code()
    };
    let mut bad = qwen_args();
    bad.push("policy.no_such_key=1".into());
    let mut manifests = qwen_args();
    manifests.push("--manifests-only".into());
    for _ in 0..8 {
        assert_eq!(run(&qwen_args()), Some(0), "summary to a closed stdout");
        assert_eq!(run(&manifests), Some(0), "manifests to a closed stdout");
        assert_eq!(run(&bad), Some(2), "an error to a closed stderr");
    }
}

/// The README's quick-start commands need no cluster: each one runs here as written
/// (`cargo run -q --` is the binary under test), so the README cannot drift from nrl.
#[test]
fn the_readme_quick_start_commands_run_without_a_cluster() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("read README");
    let start = readme
        .find("## Quick start")
        .expect("a Quick start section");
    let end = start
        + readme[start..]
            .find("\n## Commands")
            .expect("the next section");
    let mut commands: Vec<Vec<String>> = Vec::new();
    let mut vars: Vec<(String, String)> = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    for line in readme[start..end].lines() {
        if line.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block || line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        pending.push_str(line.trim_end_matches('\\').trim());
        pending.push(' ');
        if line.ends_with('\\') {
            continue;
        }
        let full = std::mem::take(&mut pending);
        let mut text = full.trim().to_string();
        for (k, v) in &vars {
            text = text.replace(&format!("${k}"), v);
        }
        if let Some(rest) = text.strip_prefix("cargo run -q -- ") {
            commands.push(rest.split_whitespace().map(str::to_string).collect());
        } else if let Some((k, v)) = text.split_once('=')
            && !k.contains(' ')
        {
            vars.push((k.to_string(), v.to_string()));
        } else {
            assert_eq!(text, "make test", "a quick-start line this test cannot run");
        }
    }
    assert_eq!(commands.len(), 5, "{commands:?}");
    let ctx = TestContext::new();
    for args in &commands {
        let out = ctx
            .nrl()
            .args(args)
            .timeout(std::time::Duration::from_secs(120))
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "nrl {}\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `-o -` writes the bundle to stdout (JSON with `--format json`); a bare format word is
/// not taken as a file name (nrl-k8s would write a YAML file called `json`).
#[test]
fn output_dash_is_stdout_and_a_bare_format_word_is_refused() {
    let ctx = TestContext::new();
    let pair = [
        "check",
        "examples/quickstart/recipe.yaml",
        "--infra",
        "examples/quickstart/infra.yaml",
    ];
    let ran = ctx
        .nrl()
        .args(pair)
        .args(["-o", "-", "--format", "json"])
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let bundle: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(bundle["infra"]["namespace"], "default");
    assert!(
        bundle["manifests"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
    );

    let ran = ctx.nrl().args(pair).args(["-o", "json"]).run();
    assert_eq!(ran.code, Some(2));
    assert!(!ctx.home().join("json").exists() && !std::path::Path::new("json").exists());
    snapshot!(ctx, ran.stderr);
}

/// `--explain` takes a key with dots in it in brackets (a label such as
/// `kai.scheduler/queue`), and a recipe-side key that exists in the infra is pointed there.
#[test]
fn explain_takes_bracketed_keys_and_points_infra_keys_to_infra() {
    let ctx = TestContext::new();
    let pair = [
        "check",
        "tests/data/doctor/recipe.yaml",
        "--infra",
        "tests/data/doctor/infra.yaml",
        "--skip-doctor",
    ];
    let ran = ctx
        .nrl()
        .args(pair)
        .args([
            "--explain",
            "infra.kuberay.training.labels['kai.scheduler/queue']",
        ])
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, "explain_bracket_key", ran.stdout);
    let ran = ctx.nrl().args(pair).args(["--explain", "namespace"]).run();
    assert_eq!(ran.code, Some(2));
    assert!(
        ran.stderr.contains("did you mean `infra.namespace`?"),
        "{}",
        ran.stderr
    );
}

/// A typo in a worker group that `segmentSize` renders as four groups is one line of the
/// infra file: it is reported once, naming the four rendered places (issue 19 point 5),
/// with the exit code of any schema error.
#[test]
fn a_typo_copied_into_every_segment_is_reported_once() {
    let ctx = TestContext::new();
    let home = ctx.home().to_path_buf();
    let ctx = ctx.cwd(&home);
    let infra = std::fs::read_to_string(infra_example("qwen3_30b_math_4n_4gpu")).expect("infra");
    assert!(infra.contains("segmentSize: 1") && infra.contains("replicas: 4"));
    let typo = infra.replacen("minReplicas", "minReplica", 1);
    assert_ne!(typo, infra);
    std::fs::write(home.join("infra.yaml"), typo).expect("write");
    let ran = ctx
        .nrl()
        .arg("check")
        .arg(reference(
            "nemo-rl/examples/configs/recipes/llm/performance/grpo-qwen3-30ba3b-4n4g.yaml",
        ))
        .args(["--infra", "infra.yaml", "infra.namespace=nemo-rl"])
        .run();
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    // One report: one `×`.
    assert_eq!(ran.stderr.matches('×').count(), 1, "{}", ran.stderr);
    snapshot!(ctx, ran.stderr);

    // The doctor's findings over the segment copies too: no tolerations is one warning.
    let untolerated = infra.replacen(
        "              tolerations:\n                - operator: Exists\n",
        "",
        1,
    );
    assert_ne!(untolerated, infra);
    std::fs::write(home.join("infra.yaml"), untolerated).expect("write");
    let ran = ctx
        .nrl()
        .arg("check")
        .arg(reference(
            "nemo-rl/examples/configs/recipes/llm/performance/grpo-qwen3-30ba3b-4n4g.yaml",
        ))
        .args(["--infra", "infra.yaml", "infra.namespace=nemo-rl"])
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert_eq!(ran.stderr.matches('⚠').count(), 1, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("workerGroupSpecs[0..3]"),
        "{}",
        ran.stderr
    );
    snapshot!(ctx, "segments_doctor", ran.stderr);
}

/// Two roles sharing a cluster spec through a YAML alias, one of them split into segments,
/// and their DRA objects: each mistake of a shared line is one problem naming every object
/// and path it reaches (the namespace too: the DRA objects point at its line like the
/// clusters).
#[test]
fn a_line_shared_by_roles_segments_and_dra_objects_is_one_problem() {
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args([
            "check",
            "tests/data/diag/recipe.yaml",
            "--infra",
            "tests/data/diag/roles_shared.yaml",
        ])
        .run();
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    assert_eq!(ran.stderr.matches('×').count(), 3, "{}", ran.stderr);
    snapshot!(ctx, ran.stderr);
}
