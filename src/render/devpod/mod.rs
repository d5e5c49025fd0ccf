//! The personal dev pod (`nrl dev connect`; ref-config-render §4.10, ref-orchestration
//! §9.2): a long-running Pod on a CPU node with the user's workspace PVC mounted and
//! their secrets as environment variables, for `exec`-ing into.
//!
//! Differences from the reference, on purpose (§11.F): every setting comes from
//! `infra.dev` (see [`DevSpec`]) with the reference's values as defaults, image and pull
//! secrets default to the infra's own, and the start-up command downloads nothing: the
//! reference's bootstrap installed kubectl and rclone from the internet and left the pod
//! Failed whenever that did not work. nrl's only writes the SSH key and rclone config the
//! user's secret carries (if any) and then waits, exiting promptly on SIGTERM.

use indexmap::IndexMap;

use crate::config::node::{Map, Node};
use crate::config::schema::{DevSpec, InfraConfig};
use crate::diag::{Diag, Result};

use super::meta::{StrLayer, labels_with_managed_by, map_of, merge_str_layers, str_at};

/// Name of the container (what `exec` attaches to).
pub const DEV_CONTAINER: &str = "dev";
/// Name of the workspace volume inside the pod.
const WORKSPACE_VOLUME: &str = "workspace";

/// The default start-up command: stays alive without touching the network. Keys of the
/// user's secret that the reference's `dev setup-secrets` writes (`SSH_KEY_NAME`,
/// `SSH_KEY_CONTENT`, `RCLONE_CONF`) are put where ssh and rclone look for them.
/// PID 1 ignores SIGTERM unless it traps it, hence the trap and the backgrounded sleep.
pub fn keep_alive_command() -> Vec<String> {
    let script = "\
trap 'exit 0' TERM INT
if [ -n \"${SSH_KEY_CONTENT:-}\" ]; then
  mkdir -p \"$HOME/.ssh\" && key=\"$HOME/.ssh/${SSH_KEY_NAME:-id_rsa}\" && printf '%s\\n' \"$SSH_KEY_CONTENT\" > \"$key\" && chmod 600 \"$key\"
fi
if [ -n \"${RCLONE_CONF:-}\" ]; then
  mkdir -p \"$HOME/.config/rclone\" && printf '%s\\n' \"$RCLONE_CONF\" > \"$HOME/.config/rclone/rclone.conf\"
fi
sleep infinity &
wait";
    vec!["sh".into(), "-c".into(), script.into()]
}

/// The default pod name for `user`.
pub fn default_pod_name(user: &str) -> String {
    format!("{user}-dev-pod")
}

/// The pod's name: `infra.dev.podName`, else `<user>-dev-pod`.
pub fn pod_name(infra: &InfraConfig, user: &str) -> String {
    infra
        .dev
        .as_ref()
        .and_then(|d| d.pod_name.clone())
        .unwrap_or_else(|| default_pod_name(user))
}

/// Render the dev pod for `user` (already normalised, as [`crate::config::env::username`]
/// gives it) from `infra.dev`, or the defaults when the section is absent.
pub fn dev_pod(infra: &InfraConfig, user: &str) -> Result<Node> {
    check_user(user)?;
    let defaults = DevSpec::default();
    let dev = infra.dev.as_ref().unwrap_or(&defaults);
    let src = &infra.source;
    let at = |field: &str| {
        src.get_path(&format!("dev.{field}"))
            .and_then(Node::best_span)
    };

    let name = match &dev.pod_name {
        Some(n) => str_at(n, at("podName")),
        None => Node::str(default_pod_name(user)),
    };
    let owner = IndexMap::from([(dev.owner_label.clone(), user.to_string())]);
    let labels = labels_with_managed_by(&[
        StrLayer::new(&infra.labels, src.get("labels")),
        StrLayer::new(&owner, None),
        StrLayer::new(&dev.labels, src.get_path("dev.labels")),
    ]);
    let mut meta = vec![
        ("name", name),
        (
            "namespace",
            str_at(&infra.namespace, src.get("namespace").and_then(|n| n.span)),
        ),
        ("labels", Node::from_map(labels)),
    ];
    let annotations = merge_str_layers(
        None,
        &[StrLayer::new(&infra.annotations, src.get("annotations"))],
    );
    if !annotations.is_empty() {
        meta.push(("annotations", Node::from_map(annotations)));
    }

    let mut pod = vec![("restartPolicy", Node::str("Never"))];
    let (secrets, secrets_src) = match &dev.image_pull_secrets {
        Some(s) => (s, src.get_path("dev.imagePullSecrets")),
        None => (&infra.image_pull_secrets, src.get("imagePullSecrets")),
    };
    if !secrets.is_empty() {
        pod.push(("imagePullSecrets", pull_secrets(secrets, secrets_src)));
    }
    if !dev.avoid_node_labels.is_empty() {
        pod.push((
            "affinity",
            avoid_nodes(dev, src.get_path("dev.avoidNodeLabels")),
        ));
    }
    pod.push(("containers", Node::list(vec![container(infra, dev, user)])));
    pod.push((
        "volumes",
        Node::list(vec![map_of(vec![
            ("name", Node::str(WORKSPACE_VOLUME)),
            (
                "persistentVolumeClaim",
                map_of(vec![("claimName", str_at(&dev.pvc_name, at("pvcName")))]),
            ),
        ])]),
    ));

    Ok(map_of(vec![
        ("apiVersion", Node::str("v1")),
        ("kind", Node::str("Pod")),
        ("metadata", map_of(meta)),
        ("spec", map_of(pod)),
    ]))
}

fn container(infra: &InfraConfig, dev: &DevSpec, user: &str) -> Node {
    let src = &infra.source;
    let at = |field: &str| {
        src.get_path(&format!("dev.{field}"))
            .and_then(Node::best_span)
    };
    let image = match &dev.image {
        Some(i) => str_at(i, at("image")),
        None => str_at(&infra.image, src.get("image").and_then(|n| n.span)),
    };
    let working_dir = match &dev.working_dir {
        Some(w) => str_at(w, at("workingDir")),
        None => Node::str(format!("{}/{user}", dev.mount_path.trim_end_matches('/'))),
    };
    let command = match &dev.command {
        Some(c) => spanned_list(c, src.get_path("dev.command")),
        None => Node::list(keep_alive_command().into_iter().map(Node::str).collect()),
    };
    let secret = match &dev.env_from_secret {
        Some(s) => str_at(s, at("envFromSecret")),
        None => Node::str(format!("{user}-secrets")),
    };
    let mut c = vec![
        ("name", Node::str(DEV_CONTAINER)),
        ("image", image),
        ("command", command),
        ("workingDir", working_dir),
        (
            "env",
            Node::list(vec![map_of(vec![
                ("name", Node::str("USER")),
                ("value", Node::str(user)),
            ])]),
        ),
        (
            "envFrom",
            Node::list(vec![map_of(vec![(
                "secretRef",
                map_of(vec![("name", secret), ("optional", Node::bool(true))]),
            )])]),
        ),
    ];
    let resources = resources(dev, src.get_path("dev.resources"));
    if resources.as_map().is_some_and(|m| !m.is_empty()) {
        c.push(("resources", resources));
    }
    c.push((
        "volumeMounts",
        Node::list(vec![map_of(vec![
            ("name", Node::str(WORKSPACE_VOLUME)),
            ("mountPath", str_at(&dev.mount_path, at("mountPath"))),
        ])]),
    ));
    map_of(c)
}

/// `requests`/`limits`, each only when non-empty; values keep the span of the line that
/// set them.
fn resources(dev: &DevSpec, source: Option<&Node>) -> Node {
    let mut out = Map::new();
    for (key, entries) in [
        ("requests", &dev.resources.requests),
        ("limits", &dev.resources.limits),
    ] {
        if entries.is_empty() {
            continue;
        }
        let layer = StrLayer::new(entries, source.and_then(|s| s.get(key)));
        out.insert(
            key.to_string(),
            Node::from_map(merge_str_layers(None, &[layer])),
        );
    }
    Node::from_map(out)
}

/// A required node affinity: none of the labels may exist on the node.
fn avoid_nodes(dev: &DevSpec, source: Option<&Node>) -> Node {
    let items = source.and_then(Node::as_list);
    let expressions = dev
        .avoid_node_labels
        .iter()
        .enumerate()
        .map(|(i, key)| {
            let span = items.and_then(|l| l.get(i)).and_then(|n| n.span);
            map_of(vec![
                ("key", str_at(key, span)),
                ("operator", Node::str("DoesNotExist")),
            ])
        })
        .collect();
    map_of(vec![(
        "nodeAffinity",
        map_of(vec![(
            "requiredDuringSchedulingIgnoredDuringExecution",
            map_of(vec![(
                "nodeSelectorTerms",
                Node::list(vec![map_of(vec![(
                    "matchExpressions",
                    Node::list(expressions),
                )])]),
            )]),
        )]),
    )])
}

fn pull_secrets(names: &[String], source: Option<&Node>) -> Node {
    let items = source.and_then(Node::as_list);
    Node::list(
        names
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let span = items.and_then(|l| l.get(i)).and_then(|n| n.span);
                map_of(vec![("name", str_at(s, span))])
            })
            .collect(),
    )
}

fn spanned_list(items: &[String], source: Option<&Node>) -> Node {
    let spans = source.and_then(Node::as_list);
    Node::list(
        items
            .iter()
            .enumerate()
            .map(|(i, s)| str_at(s, spans.and_then(|l| l.get(i)).and_then(|n| n.span)))
            .collect(),
    )
}

/// The user name becomes part of the pod, secret and directory names: it must be a
/// DNS-1123 label.
fn check_user(user: &str) -> Result<()> {
    let ok = !user.is_empty()
        && user.len() <= 63
        && user
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !user.starts_with('-')
        && !user.ends_with('-');
    if ok {
        return Ok(());
    }
    Err(Diag::new(
        "nrl::render::dev_user",
        format!("the user name {user:?} cannot name a dev pod"),
    )
    .help(
        "the user name goes into the pod, secret and directory names, so it must be lower-case \
         letters, digits and `-` (at most 63): set NRL_USER, e.g. `export NRL_USER=alice`",
    ))
}

#[cfg(test)]
mod tests;
