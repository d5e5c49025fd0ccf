//! `nrl gym render` and the offline behaviour of the other commands, through the binary.

use std::time::Duration;

use crate::support::context::{Nrl, TestContext};
use crate::support::data;

/// `nrl` from a fresh context; no kubeconfig (ref §5.1 test 11: rendering never needs a
/// cluster).
fn nrl() -> Nrl {
    TestContext::new()
        .columns(120)
        .env("KUBECONFIG", "/nonexistent/kubeconfig")
        .timeout(Duration::from_secs(30))
        .into_nrl()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const CONFIG: &str = "tests/data/gym/e2e_three.yaml";

#[test]
fn render_prints_every_job_and_no_secret() {
    let out = nrl()
        .args(["gym", "render", CONFIG, "--run-id", "gym-cli-1"])
        .env("HF_TOKEN", "hf_cli_secret")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let docs = data::parse_stream(&stdout);
    let names: Vec<String> = docs
        .iter()
        .map(|d| {
            d.get_path("metadata.name")
                .and_then(|n| n.as_str())
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        ["gym-cli-1-gpqa", "gym-cli-1-math", "gym-cli-1-tau2"]
    );
    assert!(!stdout.contains("hf_cli_secret"));
    assert!(
        stderr.contains("run gym-cli-1: 3 benchmark Job(s) in namespace `evals`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("Secret `gym-cli-1-env` with HF_TOKEN (values not shown)"),
        "{stderr}"
    );
    assert!(!stderr.contains("hf_cli_secret"));
}

#[test]
fn render_writes_a_file_and_applies_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jobs.yaml");
    let out = nrl()
        .args(["gym", "render", CONFIG, "--run-id", "gym-cli-2", "-o"])
        .arg(&file)
        .args(["compute.cluster.namespace=other", "~driver.benchmarks.tau2"])
        .env("HF_TOKEN", "x")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("wrote 2 Job(s)"));
    let docs = data::parse_stream(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(docs.len(), 2);
    assert_eq!(
        docs[0]
            .get_path("metadata.namespace")
            .and_then(|n| n.as_str()),
        Some("other")
    );
}

#[test]
fn config_errors_exit_2_with_the_line() {
    let out = nrl()
        .args([
            "gym",
            "render",
            CONFIG,
            "services.policy.tensor_paralel_size=2",
        ])
        .env("HF_TOKEN", "x")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nrl::config::unknown_key"), "{stderr}");
    assert!(
        stderr.contains("did you mean `services.policy.tensor_parallel_size=2`?"),
        "{stderr}"
    );
    // A `host:` value bound for the Job spec (not a secret) must be set, even offline.
    let out = nrl()
        .args([
            "gym",
            "render",
            CONFIG,
            "+driver.env.PLAIN=host:NOT_SET_ANYWHERE",
        ])
        .env("HF_TOKEN", "x")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nrl::gym::host_env_unset"), "{stderr}");
}

const EXAMPLE: &str = "examples/gym/gpqa.yaml";

/// Issue 19 point 6: the shipped example renders offline without HF_TOKEN; the Secret
/// holds a placeholder and stderr says which values are placeholders.
#[test]
fn render_without_the_secret_uses_placeholders_and_says_so() {
    let out = nrl()
        .args(["gym", "render", EXAMPLE, "--run-id", "gym-offline-1"])
        .env_remove("HF_TOKEN")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(data::parse_stream(&stdout).len(), 1, "{stdout}");
    let summary: String = stderr
        .lines()
        .skip_while(|l| !l.starts_with("run gym-offline-1"))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!(summary);
}

/// ... while a submit still needs them, and says so before contacting any cluster.
#[test]
fn submit_without_the_secret_is_refused_before_connecting() {
    let out = nrl()
        .args(["gym", "submit", EXAMPLE, "--run-id", "gym-offline-2"])
        .env_remove("HF_TOKEN")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("nrl::gym::host_env_unset") && stderr.contains("gpqa.yaml:26"),
        "{stderr}"
    );
    assert!(!stderr.contains("kubeconfig"), "{stderr}");
}

#[test]
fn warnings_go_to_stderr() {
    let out = nrl()
        .args([
            "gym",
            "render",
            CONFIG,
            "services.policy.health_check.timeout_seconds=60",
        ])
        .env("HF_TOKEN", "x")
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("nrl::gym::startup_budget") && stderr.contains("gets 60 s to start"),
        "{stderr}"
    );
}

/// Run ids follow `nrl run --run-id`'s rule (issue 19 point 6: `Bad_ID` used to become
/// the label `bad-id` silently), for every gym command, before any cluster is contacted.
#[test]
fn bad_run_ids_are_refused_before_connecting() {
    let out = nrl().args(["gym", "status", "bad id"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("nrl::run::run_id"));
    for cmd in ["render", "submit"] {
        let out = nrl()
            .args(["gym", cmd, CONFIG, "--run-id", "Bad_ID"])
            .env("HF_TOKEN", "x")
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(
            stderr.contains("nrl::run::run_id") && stderr.contains("run id `Bad_ID` contains `B`"),
            "{cmd}: {stderr}"
        );
    }
    for cmd in ["status", "logs", "cancel"] {
        let out = nrl().args(["gym", cmd, "Bad_ID"]).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(stderr.contains("nrl::run::run_id"), "{cmd}: {stderr}");
    }
    // `nrl run` says the same thing about the same id.
    let run = nrl()
        .args(["run", "examples/quickstart/recipe.yaml", "--dry-run"])
        .args([
            "--infra",
            "examples/quickstart/infra.yaml",
            "--run-id",
            "Bad_ID",
        ])
        .output()
        .unwrap();
    let gym = nrl().args(["gym", "status", "Bad_ID"]).output().unwrap();
    let first = |b: &[u8]| {
        text(b)
            .lines()
            .find(|l| l.contains("run id `Bad_ID`"))
            .map(str::trim)
            .map(String::from)
    };
    assert_eq!(
        first(&gym.stderr),
        first(&run.stderr),
        "{}",
        text(&run.stderr)
    );
    assert!(first(&gym.stderr).is_some());
}

#[test]
fn every_command_has_examples() {
    for sub in ["render", "submit", "status", "logs", "cancel"] {
        let out = nrl().args(["gym", sub, "--help"]).output().unwrap();
        assert!(text(&out.stdout).contains("nrl gym"), "{sub}");
    }
}

#[test]
fn the_example_config_renders() {
    let out = nrl()
        .args(["gym", "render", "examples/gym/gpqa.yaml"])
        .env("HF_TOKEN", "x")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(data::parse_stream(&text(&out.stdout)).len(), 1);
}

#[test]
fn render_never_writes_over_its_config_or_into_a_missing_directory() {
    // Regression (issue 15 item 6): `gym render CONFIG -o CONFIG` replaced the config.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("run.yaml");
    let original = std::fs::read_to_string(data::repo().join(CONFIG)).unwrap();
    std::fs::write(&config, &original).unwrap();
    let out = nrl()
        .args(["gym", "render"])
        .arg(&config)
        .arg("-o")
        .arg(&config)
        .env("HF_TOKEN", "x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("nrl::io::output_is_input"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), original);

    let missing = dir.path().join("missing/deeper/jobs.yaml");
    let out = nrl()
        .args(["gym", "render", CONFIG, "-o"])
        .arg(&missing)
        .env("HF_TOKEN", "x")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("does not exist"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("missing").exists());
}

#[test]
fn render_refuses_an_alias_bomb() {
    // Issue 15 item 1: `gym render` on nested aliases exhausted memory.
    let dir = tempfile::tempdir().unwrap();
    let mut bomb = String::from("x0: &x0 [a, a, a, a, a, a, a, a, a]\n");
    for level in 1..9 {
        let items = vec![format!("*x{}", level - 1); 9].join(", ");
        bomb.push_str(&format!("x{level}: &x{level} [{items}]\n"));
    }
    std::fs::write(dir.path().join("gym.yaml"), bomb).unwrap();
    let out = nrl()
        .current_dir(dir.path())
        .args(["gym", "render", "gym.yaml"])
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("nrl::config::yaml_alias_budget") && stderr.contains("gym.yaml:7:10"),
        "{stderr}"
    );
}

#[test]
fn render_refuses_a_secret_read_by_interpolation_and_never_shows_it() {
    // Issue 15 item 7: `${oc.env:HF_TOKEN}` in `run:` resolved on the laptop into the
    // driver's command line and the resolved config on the PVC.
    let out = nrl()
        .args([
            "gym",
            "render",
            CONFIG,
            "driver.benchmarks.gpqa.run.hf_token='${oc.env:HF_TOKEN}'",
        ])
        .env("HF_TOKEN", "hf_cli_secret")
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("nrl::gym::secret_interpolation")
            && stderr.contains("`HF_TOKEN: secret:HF_TOKEN` under `driver.env`"),
        "{stderr}"
    );
    assert!(!stderr.contains("hf_cli_secret"), "{stderr}");
}
