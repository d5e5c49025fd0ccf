//! The owner guard: objects carry `nrl-k8s/owner: <user>` (set by nrl when the infra does
//! not set it), and commands that change or delete an object refuse one owned by another
//! user unless `--force`.

use serde_json::Value as Json;

use crate::config::node::Node;
use crate::diag::{Diag, Result};
use crate::render::meta::{ensure_map, set};

use crate::launch::progress::Progress;

pub const OWNER_LABEL: &str = "nrl-k8s/owner";

/// The owner label of a live object, if set and non-empty.
pub fn owner_of(obj: &Json) -> Option<&str> {
    obj.pointer("/metadata/labels/nrl-k8s~1owner")
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty())
}

/// The one owner check of every command that changes or deletes an object nrl made
/// (`cluster up|down`, `run --replace` in both modes, `job stop`, `gym cancel`, `dev stop`,
/// DRA objects): refuse `live` when another user owns it, or when it has no
/// `nrl-k8s/owner` label at all (made by kubectl or another tool), unless `force` (then
/// say so).
pub fn check_owner(live: &Json, me: &str, force: bool, progress: &Progress) -> Result<()> {
    let owner = owner_of(live);
    if owner == Some(me) {
        return Ok(());
    }
    let kind = live.get("kind").and_then(Json::as_str).unwrap_or("object");
    let name = live
        .pointer("/metadata/name")
        .and_then(Json::as_str)
        .unwrap_or("?");
    let ns = live
        .pointer("/metadata/namespace")
        .and_then(Json::as_str)
        .unwrap_or("?");
    let Some(owner) = owner else {
        if force {
            progress.line(format!(
                "warning: {kind} {name} in namespace `{ns}` has no `{OWNER_LABEL}` label; --force: acting anyway"
            ));
            return Ok(());
        }
        return Err(Diag::new(
            "nrl::cluster::owner",
            format!(
                "{kind} {name} in namespace `{ns}` has no `{OWNER_LABEL}` label, so nrl cannot \
                 tell whose it is (made by kubectl or another tool?)"
            ),
        )
        .help(format!(
            "pass --force to act on it anyway, or label it \
             (`kubectl label {} {name} -n {ns} {OWNER_LABEL}={me}`)",
            kind.to_ascii_lowercase()
        )));
    };
    if force {
        progress.line(format!(
            "warning: {kind} {name} in namespace `{ns}` is owned by '{owner}'; --force: acting anyway"
        ));
        return Ok(());
    }
    Err(Diag::new(
        "nrl::cluster::owner",
        format!("{kind} {name} in namespace `{ns}` is owned by '{owner}' (you are '{me}')"),
    )
    .help(format!(
        "use a different name, ask {owner} to tear it down, or pass --force to act anyway"
    )))
}

/// Label a rendered object with its owner, unless the infra already set the label or the
/// user name is not a valid label value.
pub fn stamp_owner(manifest: &mut Node, me: &str) {
    if !valid_label_value(me) {
        return;
    }
    let Some(meta) = ensure_map(manifest, "metadata") else {
        return;
    };
    let Some(labels) = ensure_map(meta, "labels") else {
        return;
    };
    if labels.get(OWNER_LABEL).is_none() {
        set(labels, OWNER_LABEL, Node::str(me));
    }
}

/// A Kubernetes label value: at most 63 characters, alphanumerics with `-`, `_`, `.`
/// inside, starting and ending alphanumeric.
pub fn valid_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    !s.is_empty()
        && s.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::meta::map_of;
    use serde_json::json;

    #[test]
    fn another_users_object_is_refused_unless_forced() {
        let live = json!({"kind": "RayCluster",
            "metadata": {"name": "rc", "namespace": "ns", "labels": {OWNER_LABEL: "bob"}}});
        let p = Progress::capture();
        let err = check_owner(&live, "alice", false, &p).unwrap_err();
        assert_eq!(
            err.message,
            "RayCluster rc in namespace `ns` is owned by 'bob' (you are 'alice')"
        );
        assert!(err.help.as_deref().unwrap().contains("--force"));
        check_owner(&live, "bob", false, &p).unwrap();
        check_owner(&live, "alice", true, &p).unwrap();
        assert_eq!(p.lines().len(), 1);
    }

    #[test]
    fn an_unlabelled_object_is_refused_naming_the_label_unless_forced() {
        let live = json!({"kind": "RayJob", "metadata": {"name": "rj", "namespace": "ns"}});
        let p = Progress::capture();
        let err = check_owner(&live, "alice", false, &p).unwrap_err();
        assert_eq!(
            err.message,
            "RayJob rj in namespace `ns` has no `nrl-k8s/owner` label, so nrl cannot tell \
             whose it is (made by kubectl or another tool?)"
        );
        assert!(err.help.as_deref().unwrap().contains("--force"));
        check_owner(&live, "alice", true, &p).unwrap();
        assert!(p.lines()[0].contains("no `nrl-k8s/owner` label"));
    }

    #[test]
    fn stamping_keeps_an_explicit_owner() {
        let mut m = map_of(vec![("metadata", map_of(vec![("name", Node::str("rc"))]))]);
        stamp_owner(&mut m, "alice");
        assert_eq!(m.to_json()["metadata"]["labels"][OWNER_LABEL], "alice");
        stamp_owner(&mut m, "bob");
        assert_eq!(m.to_json()["metadata"]["labels"][OWNER_LABEL], "alice");
        let mut n = map_of(vec![("metadata", Node::map())]);
        stamp_owner(&mut n, "not valid!");
        assert!(n.to_json()["metadata"].get("labels").is_none());
    }

    #[test]
    fn label_values() {
        assert!(valid_label_value("alice-b"));
        assert!(!valid_label_value("-x"));
        assert!(!valid_label_value("a@b"));
        assert!(!valid_label_value(&"a".repeat(64)));
    }
}
