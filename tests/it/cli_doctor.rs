//! `nrl doctor` and the doctor rules inside `nrl check`, through the binary.

use predicates::prelude::*;

use crate::support::context::{RunToEnd, TestContext, nrl, snapshot};

fn pair(recipe: &str, infra: &str) -> Vec<String> {
    vec![
        format!("tests/data/doctor/{recipe}"),
        "--infra".into(),
        format!("tests/data/doctor/{infra}"),
    ]
}

#[test]
fn check_fails_on_doctor_errors_after_printing_its_output() {
    nrl()
        .arg("check")
        .args(pair("gpu_mismatch.recipe.yaml", "infra.yaml"))
        .assert()
        .code(2)
        .stdout(predicate::str::contains("namespace:   team-rl"))
        .stderr(predicate::str::contains("nrl::doctor::gpu_mismatch"))
        .stderr(predicate::str::contains("doctor: 1 error, 0 warnings"));
}

#[test]
fn check_skip_doctor_and_warnings_only() {
    nrl()
        .arg("check")
        .args(pair("gpu_mismatch.recipe.yaml", "infra.yaml"))
        .arg("--skip-doctor")
        .assert()
        .success()
        .stderr(predicate::str::is_empty());
    nrl()
        .arg("check")
        .args(pair("recipe.yaml", "no_tolerations.infra.yaml"))
        .arg("--manifests-only")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("apiVersion: ray.io/v1"))
        .stderr(predicate::str::contains("doctor: 0 errors, 1 warning"));
    // A clean pair prints nothing extra.
    nrl()
        .arg("check")
        .args(pair("recipe.yaml", "infra.yaml"))
        .assert()
        .success()
        .stderr(predicate::str::is_empty());
}

#[test]
fn doctor_offline_reports_and_exits_2_on_errors() {
    nrl()
        .args(["doctor", "--offline"])
        .args(pair("recipe.yaml", "infra.yaml"))
        .assert()
        .success()
        .stdout("doctor: no problems found\n");
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args(["doctor", "--offline"])
        .args(pair("shell.recipe.yaml", "webhook.infra.yaml"))
        .run();
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    snapshot!(ctx, "report", ran.stdout);
}

#[test]
fn doctor_code_source_flag_enables_the_upload_rules() {
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args(["doctor", "--offline", "--code-source", "upload"])
        .args(pair("recipe.yaml", "infra.yaml"))
        .run();
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    snapshot!(ctx, "upload_report", ran.stdout);
    nrl()
        .args(["doctor", "--offline", "--code-source", "floppy"])
        .args(pair("recipe.yaml", "infra.yaml"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "expected one of upload, image, lustre",
        ));
}

#[test]
fn doctor_without_a_cluster_shows_the_offline_report_then_fails_with_3() {
    let ctx = TestContext::new().env("KUBECONFIG", "/nonexistent/kubeconfig");
    let ran = ctx
        .nrl()
        .arg("doctor")
        .args(pair("gpu_fewer.recipe.yaml", "infra.yaml"))
        .run();
    assert_eq!(ran.code, Some(3));
    snapshot!(ctx, "offline_report", ran.stdout);
    snapshot!(ctx, "no_cluster", ran.stderr);
}

#[test]
fn doctor_rules_lists_codes_without_a_recipe() {
    nrl()
        .args(["doctor", "--rules"])
        .assert()
        .success()
        .stdout(predicate::str::contains("gpu_mismatch"))
        .stdout(predicate::str::contains("missing_object"))
        // `nrl diagnose`'s codes are in the same registry, in stage `diagnose`.
        .stdout(
            predicate::str::is_match(r"(?m)^crash_loop +error +diagnose +CrashLoopBackOff")
                .unwrap(),
        );
    nrl()
        .arg("doctor")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("RECIPE"));
}

/// `-o json` is the report as data: each finding's code, severity, message, the line it
/// points at, the fix; the exit code is the report's, as for the table.
#[test]
fn doctor_findings_as_data() {
    let ctx = TestContext::new();
    let ran = ctx
        .nrl()
        .args(["doctor", "--offline", "-o", "json"])
        .args(pair("gpu_mismatch.recipe.yaml", "infra.yaml"))
        .run();
    assert_eq!(ran.code, Some(2), "{}", ran.stderr);
    let report: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(report["ok"], false);
    assert_eq!(report["errors"], 1);
    let f = &report["findings"][0];
    assert_eq!(f["code"], "nrl::doctor::gpu_mismatch");
    assert_eq!(f["severity"], "error");
    assert!(
        f["location"]
            .as_str()
            .is_some_and(|l| l.starts_with("tests/data/doctor/")),
        "{f}"
    );
    assert!(!f["fix"].as_str().unwrap_or_default().is_empty(), "{f}");
    let ran = ctx
        .nrl()
        .args(["doctor", "--offline", "-o", "yaml"])
        .args(pair("recipe.yaml", "infra.yaml"))
        .run();
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    snapshot!(ctx, "clean_yaml", ran.stdout);
}

/// `nrl run` with no reachable cluster still shows what the offline rules found (they need
/// no cluster), then the connection error: the user fixes both in one go.
#[test]
fn run_without_a_cluster_shows_the_offline_findings_first() {
    let ctx = TestContext::new().env("KUBECONFIG", "/nonexistent/kubeconfig");
    let ran = ctx
        .nrl()
        .arg("run")
        .args(pair("gpu_fewer.recipe.yaml", "infra.yaml"))
        .run();
    assert_eq!(ran.code, Some(3), "{}", ran.stderr);
    let offline = ran
        .stderr
        .find("doctor (offline rules only): 0 errors, 1 warning")
        .expect("the offline report");
    let unreachable = ran
        .stderr
        .find("no Kubernetes configuration found")
        .expect("the connection error");
    assert!(offline < unreachable, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("nrl::doctor::gpu_mismatch"),
        "{}",
        ran.stderr
    );
}

/// A key a child recipe adds one edit away from a key of its parent (issue 19 point 5):
/// a warning pointing at both lines, the same in `doctor`, `check` and `run` (whose
/// offline report comes first when no cluster is reachable).
#[test]
fn a_recipe_key_one_edit_from_its_parents_key_warns_in_doctor_check_and_run() {
    let ctx = TestContext::new().env("KUBECONFIG", "/nonexistent/kubeconfig");
    let args = pair("key_typo/recipe.yaml", "infra.yaml");
    let doctor = ctx.nrl().args(["doctor", "--offline"]).args(&args).run();
    assert_eq!(doctor.code, Some(0), "{}", doctor.stderr);
    snapshot!(ctx, "recipe_key_typo", doctor.stdout);
    let findings = doctor
        .stdout
        .strip_suffix("doctor: 0 errors, 1 warning\n")
        .expect("one warning");

    let check = ctx.nrl().arg("check").args(&args).run();
    assert_eq!(check.code, Some(0), "{}", check.stderr);
    assert_eq!(check.stderr, doctor.stdout);

    // Kept on purpose: an allow comment on its line silences it.
    let allowed = ctx
        .nrl()
        .args(["doctor", "--offline"])
        .args(pair("key_typo/allowed.recipe.yaml", "infra.yaml"))
        .run();
    assert_eq!(
        (allowed.code, allowed.stdout.as_str()),
        (Some(0), "doctor: no problems found (1 silenced)\n")
    );

    let run = ctx.nrl().arg("run").args(&args).run();
    assert_eq!(run.code, Some(3), "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "{findings}doctor (offline rules only): 0 errors, 1 warning"
        )),
        "{}",
        run.stderr
    );
}
