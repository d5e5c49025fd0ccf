//! `nrl dev setup-secrets`: create, update, remove, first use, foreign keys, races.

use crate::support::dev_env::*;

fn ssh_key(env: &DevEnv) -> std::path::PathBuf {
    let p = env.home().join("id_test");
    std::fs::write(&p, "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n").unwrap();
    p
}

fn first_setup(env: &DevEnv) -> Ran {
    let key = ssh_key(env);
    run(env
        .nrl()
        .args([
            "dev",
            "setup-secrets",
            "HF_TOKEN=hf_first",
            "WANDB_API_KEY=wb_first",
            "--ssh-key",
        ])
        .arg(&key))
}

#[test]
fn first_use_requires_the_keys_and_writes_nothing_without_them() {
    let env = DevEnv::new();
    let r = run(env.nrl().args(["dev", "setup-secrets", "HF_TOKEN=hf_x"]));
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("requires: WANDB_API_KEY, SSH_KEY_CONTENT"),
        "{r:?}"
    );
    assert!(env.secret().is_none());
    assert!(env.fake.requests(|q| q.method == "PATCH").is_empty());
}

#[test]
fn creates_then_updates_and_removes_keys_by_server_side_apply() {
    let env = DevEnv::new();
    let r = first_setup(&env);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr.contains("context `fake`, namespace `default`"),
        "{r:?}"
    );
    assert!(
        r.stdout
            .starts_with("created secret alice-secrets in namespace `default` (4 keys)"),
        "{r:?}"
    );
    for value in ["hf_first", "wb_first", "abc"] {
        assert!(
            !r.stdout.contains(value) && !r.stderr.contains(value),
            "a value leaked: {r:?}"
        );
    }
    let s = env.secret().unwrap();
    assert_eq!(s["type"], "Opaque");
    assert_eq!(
        s["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "nrl-k8s"
    );
    let data = env.secret_data();
    assert!(data.contains(&("HF_TOKEN".into(), "hf_first".into())));
    assert!(data.contains(&("SSH_KEY_NAME".into(), "id_test".into())));
    let applies = env
        .fake
        .requests(|q| q.is_apply() && q.resource.as_deref() == Some("secrets"));
    assert_eq!(applies.len(), 1);
    assert_eq!(
        applies[0].query_param("fieldManager").as_deref(),
        Some("nrl")
    );

    // Update one key, add one, remove one; the rest is kept, and listed.
    let r = run(env.nrl().args([
        "dev",
        "setup-secrets",
        "HF_TOKEN=hf_second",
        "GITHUB_TOKEN=ghp",
        "WANDB_API_KEY-",
    ]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout
            .starts_with("updated secret alice-secrets in namespace `default` (4 keys)"),
        "{r:?}"
    );
    for (key, state) in [
        ("HF_TOKEN", "changed"),
        ("GITHUB_TOKEN", "added"),
        ("WANDB_API_KEY", "removed"),
        ("SSH_KEY_CONTENT", "kept"),
        ("SSH_KEY_NAME", "kept"),
    ] {
        let line = r
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with(key))
            .unwrap_or_else(|| panic!("{key}: {r:?}"));
        assert!(line.contains(state), "{key} should be {state}: {line}");
    }
    let mut keys: Vec<String> = env.secret_data().into_iter().map(|(k, _)| k).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "GITHUB_TOKEN",
            "HF_TOKEN",
            "SSH_KEY_CONTENT",
            "SSH_KEY_NAME"
        ]
    );
    assert!(
        env.secret_data()
            .contains(&("HF_TOKEN".into(), "hf_second".into()))
    );
    // The update carried the resourceVersion it was planned against.
    assert_eq!(env.fake.requests(|q| q.method == "PATCH").len(), 2);
}

#[test]
fn keys_written_by_someone_else_are_kept_unless_named() {
    let env = DevEnv::new();
    assert_eq!(first_setup(&env).code, 0);
    // kubectl (any other field manager) adds a key.
    env.kubectl_patch_secret(json!({"data": {"TEAM_TOKEN": "dGVhbQ=="}}));
    let r = run(env
        .nrl()
        .args(["dev", "setup-secrets", "HF_TOKEN=hf_again"]));
    assert_eq!(r.code, 0, "{r:?}");
    let line = r
        .stdout
        .lines()
        .find(|l| l.contains("TEAM_TOKEN"))
        .expect("listed");
    assert!(
        line.contains("kept") && line.contains("also written by kubectl-edit"),
        "{line}"
    );
    assert!(
        env.secret_data()
            .contains(&("TEAM_TOKEN".into(), "team".into()))
    );

    // Removing it takes a guarded JSON patch (leaving it out of an apply would not).
    let r = run(env.nrl().args(["dev", "setup-secrets", "TEAM_TOKEN-"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout
            .lines()
            .any(|l| l.contains("TEAM_TOKEN") && l.contains("removed")),
        "{r:?}"
    );
    assert!(!env.secret_data().iter().any(|(k, _)| k == "TEAM_TOKEN"));
    let json_patches = env
        .fake
        .requests(|q| q.content_type.as_deref() == Some("application/json-patch+json"));
    assert_eq!(json_patches.len(), 1);
}

#[test]
fn a_concurrent_change_is_retried_not_overwritten() {
    let env = DevEnv::new();
    assert_eq!(first_setup(&env).code, 0);
    // The next apply of the secret meets a conflict, as when someone wrote in between.
    env.fake.inject(
        FaultMatch {
            method: Some("PATCH".into()),
            resource: Some("secrets".into()),
            ..FaultMatch::default()
        },
        FaultAction::Status(409),
        Some(1),
    );
    env.fake.clear_request_log();
    let r = run(env.nrl().args(["dev", "setup-secrets", "NEW_KEY=v"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("reading it again"), "{r:?}");
    assert_eq!(
        env.fake
            .requests(|q| q.method == "GET" && q.resource.as_deref() == Some("secrets"))
            .len(),
        2
    );
    assert!(env.secret_data().contains(&("NEW_KEY".into(), "v".into())));
}

#[test]
fn bad_keys_and_missing_files_fail_before_any_request() {
    let env = DevEnv::new();
    for args in [
        vec!["dev", "setup-secrets", "9LIVES=x"],
        vec!["dev", "setup-secrets", "NOEQUALS"],
        vec!["dev", "setup-secrets", "A=1", "A-"],
        vec!["dev", "setup-secrets", "--ssh-key", "/nonexistent/key"],
        vec!["dev", "setup-secrets", "--add-rclone"],
        vec!["dev", "setup-secrets"],
    ] {
        let r = run(env.nrl().args(&args));
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
    }
    assert!(env.fake.request_log().is_empty());
}
