use super::*;
use serde_json::json;

fn target() -> SecretTarget {
    SecretTarget {
        name: "alice-secrets".into(),
        namespace: "team".into(),
        labels: [(
            "app.kubernetes.io/managed-by".to_string(),
            "nrl-k8s".to_string(),
        )]
        .into(),
    }
}

fn set(k: &str, v: &str) -> SecretEdit {
    SecretEdit::Set(k.into(), v.as_bytes().to_vec())
}

fn first_use_edits() -> Vec<SecretEdit> {
    vec![
        set("HF_TOKEN", "hf"),
        set("WANDB_API_KEY", "wb"),
        set("SSH_KEY_CONTENT", "key"),
    ]
}

/// A live secret: `nrl_keys` applied by nrl, `other_keys` written by kubectl.
fn live(nrl_keys: &[(&str, &str)], other_keys: &[(&str, &str)]) -> LiveSecret {
    let mut data = serde_json::Map::new();
    let fields = |keys: &[(&str, &str)]| {
        let mut m = serde_json::Map::new();
        for (k, _) in keys {
            m.insert(format!("f:{k}"), json!({}));
        }
        json!({"f:data": m})
    };
    for (k, v) in nrl_keys.iter().chain(other_keys) {
        data.insert(k.to_string(), json!(B64.encode(v)));
    }
    LiveSecret::from_json(&json!({
        "metadata": {"resourceVersion": "42", "managedFields": [
            {"manager": "nrl", "operation": "Apply", "fieldsV1": fields(nrl_keys)},
            {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": fields(other_keys)},
        ]},
        "data": data,
    }))
}

#[test]
fn arguments_set_remove_and_reject() {
    assert_eq!(parse_edit("A=b=c").unwrap(), set("A", "b=c"));
    assert_eq!(parse_edit("EMPTY=").unwrap(), set("EMPTY", ""));
    assert_eq!(
        parse_edit("OLD-").unwrap(),
        SecretEdit::Remove("OLD".into())
    );
    assert_eq!(
        parse_edit("JUSTKEY").unwrap_err().code,
        "nrl::dev::secret_args"
    );
    for bad in ["1ABC=x", "A-B=x", "a.b=x", "=x", "sp ace=x", "-"] {
        assert_eq!(
            parse_edit(bad).unwrap_err().code,
            "nrl::dev::secret_key",
            "{bad}"
        );
    }
    let dup = vec![set("A", "1"), SecretEdit::Remove("A".into())];
    assert_eq!(
        check_unique(&dup).unwrap_err().code,
        "nrl::dev::secret_args"
    );
}

#[test]
fn first_use_names_every_missing_key() {
    let e = plan(
        &target(),
        None,
        &[set("HF_TOKEN", "x"), set("WANDB_API_KEY", "")],
    )
    .unwrap_err();
    assert_eq!(e.code, "nrl::dev::secret_first_use");
    assert!(
        e.message
            .ends_with("requires: WANDB_API_KEY, SSH_KEY_CONTENT"),
        "{}",
        e.message
    );
    assert!(e.help.as_deref().unwrap().contains("--ssh-key"));
}

#[test]
fn a_new_secret_is_opaque_labelled_and_lists_its_keys() {
    let p = plan(&target(), None, &first_use_edits()).unwrap();
    assert!(p.create);
    assert_eq!(p.apply["type"], "Opaque");
    assert_eq!(
        p.apply["metadata"]["labels"]["app.kubernetes.io/managed-by"],
        "nrl-k8s"
    );
    assert_eq!(p.apply["data"]["HF_TOKEN"], B64.encode("hf"));
    assert!(p.lines.iter().all(|l| l.state == KeyState::Added));
    assert!(p.remove_by_patch.is_empty());
}

#[test]
fn an_update_keeps_owned_keys_and_never_sends_foreign_ones() {
    let l = live(&[("HF_TOKEN", "old"), ("KEEP", "k")], &[("OTHER", "o")]);
    let p = plan(
        &target(),
        Some(&l),
        &[set("HF_TOKEN", "new"), set("NEW", "n")],
    )
    .unwrap();
    assert!(!p.create);
    assert!(p.apply.get("type").is_none(), "type is immutable");
    let data = p.apply["data"].as_object().unwrap();
    let keys: Vec<&str> = data.keys().map(String::as_str).collect();
    assert_eq!(keys, ["HF_TOKEN", "KEEP", "NEW"]);
    let state = |k: &str| p.lines.iter().find(|l| l.key == k).unwrap().state;
    assert_eq!(state("HF_TOKEN"), KeyState::Changed);
    assert_eq!(state("KEEP"), KeyState::Kept);
    assert_eq!(state("NEW"), KeyState::Added);
    assert_eq!(state("OTHER"), KeyState::Kept);
    let other = p.lines.iter().find(|l| l.key == "OTHER").unwrap();
    assert_eq!(other.other_writers, ["kubectl-edit"]);
}

#[test]
fn removal_omits_owned_keys_and_patches_foreign_ones() {
    let l = live(&[("MINE", "m"), ("KEEP", "k")], &[("THEIRS", "t")]);
    let edits = [
        SecretEdit::Remove("MINE".into()),
        SecretEdit::Remove("THEIRS".into()),
        SecretEdit::Remove("NEVER".into()),
    ];
    let p = plan(&target(), Some(&l), &edits).unwrap();
    assert!(p.apply["data"].get("MINE").is_none());
    assert!(p.apply["data"].get("KEEP").is_some());
    assert_eq!(p.remove_by_patch, ["THEIRS"]);
    let state = |k: &str| p.lines.iter().find(|l| l.key == k).unwrap().state;
    assert_eq!(state("MINE"), KeyState::Removed);
    assert_eq!(state("THEIRS"), KeyState::Removed);
    assert_eq!(state("NEVER"), KeyState::Absent);
}

#[test]
fn setting_the_same_value_is_unchanged() {
    let l = live(&[("A", "same")], &[]);
    let p = plan(&target(), Some(&l), &[set("A", "same")]).unwrap();
    assert_eq!(p.lines[0].state, KeyState::Unchanged);
}

#[test]
fn finalize_reports_what_is_stored_and_failed_removals() {
    let l = live(&[("A", "a")], &[("B", "b")]);
    let p = plan(
        &target(),
        Some(&l),
        &[set("A", "four"), SecretEdit::Remove("B".into())],
    )
    .unwrap();
    let stored = json!({"data": {"A": B64.encode("four"), "B": B64.encode("b")}});
    let lines = finalize(p.lines, &stored);
    assert_eq!(lines[0].bytes, Some(4));
    assert_eq!(lines[1].state, KeyState::NotRemoved);
}

#[test]
fn the_summary_masks_values_and_covers_all_keys() {
    let l = live(
        &[("HF_TOKEN", "hf_secret_value")],
        &[("OTHER", "other_secret")],
    );
    let p = plan(&target(), Some(&l), &[set("NEW", "brand_new_secret")]).unwrap();
    let text = summary(&target(), false, &p.lines);
    assert!(
        text.starts_with("updated secret alice-secrets in namespace `team` (3 keys)\n"),
        "{text}"
    );
    for key in ["HF_TOKEN", "OTHER", "NEW"] {
        assert!(text.contains(key), "{text}");
    }
    for value in ["hf_secret_value", "other_secret", "brand_new_secret"] {
        assert!(!text.contains(value), "{text}");
        assert!(!text.contains(&B64.encode(value)), "{text}");
    }
    assert!(text.contains("(16 bytes)"), "{text}");
    assert!(text.contains("[also written by kubectl-edit]"), "{text}");
}

#[test]
fn ssh_key_and_rclone_inputs() {
    let d = tempfile::tempdir().unwrap();
    let key = d.path().join("id_ed25519");
    std::fs::write(&key, "-----BEGIN KEY-----\n").unwrap();
    let edits = ssh_key_edits(&key).unwrap();
    assert_eq!(edits[0], set("SSH_KEY_NAME", "id_ed25519"));
    assert_eq!(edits[1], set("SSH_KEY_CONTENT", "-----BEGIN KEY-----\n"));
    assert_eq!(
        ssh_key_edits(&d.path().join("nope")).unwrap_err().code,
        "nrl::dev::read"
    );

    let home = d.path().to_str().unwrap();
    let env = crate::config::env::MapEnv::new([("HOME", home)]);
    let e = rclone_edit(&env).unwrap_err();
    assert!(
        e.message.contains(".config/rclone/rclone.conf"),
        "{}",
        e.message
    );
    let conf = d.path().join("custom.conf");
    std::fs::write(&conf, "[remote]\ntype = s3\n").unwrap();
    let env = crate::config::env::MapEnv::new([
        ("HOME", home),
        ("RCLONE_CONFIG", conf.to_str().unwrap()),
    ]);
    assert_eq!(
        rclone_edit(&env).unwrap(),
        set("RCLONE_CONF", "[remote]\ntype = s3\n")
    );
}
