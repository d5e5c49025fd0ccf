//! `nrl dev connect` and `nrl dev stop`.

use std::time::Duration;

use serde_json::Value as Json;

use super::pod::{DevPod, PodState, ended_error, pod_state, running_verdict};
use super::{Report, rbac};
use crate::diag::{Diag, Result};
use crate::k8s::resources::api_resource;
use crate::k8s::{ApplyOptions, ExecOutput, K8s};

/// How `connect` behaves.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Replace an existing pod (other image, ended, or just fresh).
    pub recreate: bool,
    /// Create the pod even if the service account lacks permissions.
    pub skip_rbac_check: bool,
    /// How long to wait for the pod to run (and for an old one to go).
    pub timeout: Duration,
    /// What to run; empty means [`super::DEFAULT_SHELL`].
    pub command: Vec<String>,
    /// Give the command a terminal (interactive use).
    pub tty: bool,
}

/// Make sure the dev pod runs the wanted image, then run the command in it; returns its
/// exit code.
pub async fn connect(
    k8s: &K8s,
    dev: &DevPod,
    opts: &ConnectOptions,
    report: &mut dyn Report,
) -> Result<i32> {
    ensure_running(k8s, dev, opts, report).await?;
    let command: Vec<&str> = if opts.command.is_empty() {
        super::DEFAULT_SHELL.to_vec()
    } else {
        opts.command.iter().map(String::as_str).collect()
    };
    if opts.tty {
        report.progress(&format!("connecting to {} ...", dev.name));
    }
    let code = k8s
        .exec_interactive(
            &dev.namespace,
            &dev.name,
            Some(&dev.container),
            &command,
            opts.tty,
        )
        .await?;
    if opts.tty {
        report.progress(&format!(
            "\npod {} is still running; stop it with: nrl dev stop -n {}",
            dev.name, dev.namespace
        ));
    }
    Ok(code)
}

/// `connect`'s non-interactive command path for callers that want the output (scripts):
/// make sure the pod runs, then run `opts.command` with `stdin` and collect its stdout,
/// stderr and exit code. A non-zero exit is not an error.
pub async fn run_captured(
    k8s: &K8s,
    dev: &DevPod,
    opts: &ConnectOptions,
    stdin: Option<&[u8]>,
    report: &mut dyn Report,
) -> Result<ExecOutput> {
    if opts.command.is_empty() {
        return Err(
            Diag::new("nrl::dev::no_command", "no command to run in the dev pod")
                .help("give the command as a list of words, e.g. [\"sh\", \"-c\", \"make test\"]"),
        );
    }
    ensure_running(k8s, dev, opts, report).await?;
    let command: Vec<&str> = opts.command.iter().map(String::as_str).collect();
    k8s.exec(
        &dev.namespace,
        &dev.name,
        Some(&dev.container),
        &command,
        stdin,
    )
    .await
}

/// Create the pod if needed (after the checks) and wait until it runs.
pub async fn ensure_running(
    k8s: &K8s,
    dev: &DevPod,
    opts: &ConnectOptions,
    report: &mut dyn Report,
) -> Result<()> {
    let ar = api_resource("v1", "Pod")?;
    let (ns, name) = (dev.namespace.as_str(), dev.name.as_str());
    let mut live = k8s.get(&ar, ns, name).await?;

    if let Some(p) = &live {
        let state = pod_state(Some(p), &dev.container);
        let running_image = container_image(p, &dev.container);
        let replace = if state == PodState::Terminating {
            report.progress(&format!(
                "waiting for the old {name} to finish terminating ..."
            ));
            Some(false)
        } else if opts.recreate {
            Some(true)
        } else if dev.image_configured && running_image.as_deref() != Some(dev.image.as_str()) {
            return Err(image_mismatch(dev, running_image.as_deref()));
        } else if matches!(state, PodState::Ended { .. }) {
            return Err(ended_error(&state, name, ns));
        } else {
            None
        };
        if let Some(delete) = replace {
            if delete {
                check_owner(p, dev, "replace")?;
                report.progress(&format!("deleting {name} to recreate it ..."));
                k8s.delete_and_wait(&ar, ns, name, opts.timeout).await?;
            } else {
                k8s.wait_deleted(&ar, ns, name, opts.timeout).await?;
            }
            live = None;
        }
    }

    if live.is_none() {
        if !dev.image_configured {
            return Err(Diag::new(
                "nrl::dev::no_image",
                format!("no image configured for the dev pod {name}"),
            )
            .help("pass --image IMAGE, or set `dev.image` (or `image`) in ~/.config/nrl/defaults.yaml"));
        }
        preflight(k8s, dev, opts, report).await?;
        report.progress(&format!(
            "creating dev pod {name} (image {}) ...",
            dev.image
        ));
        k8s.apply(&dev.manifest, ApplyOptions::default()).await?;
    }

    let mut last = String::new();
    let container = dev.container.clone();
    k8s.wait_for(&ar, ns, name, opts.timeout, "Running", |o| {
        let state = pod_state(o, &container);
        let text = state.describe();
        if text != last && state != PodState::Running {
            report.progress(&format!("waiting for {name}: {text}"));
            last = text;
        }
        running_verdict(&state, name, ns)
    })
    .await
}

/// The caller's permissions, then the pod's service account's (unless skipped).
async fn preflight(
    k8s: &K8s,
    dev: &DevPod,
    opts: &ConnectOptions,
    report: &mut dyn Report,
) -> Result<()> {
    let ns = dev.namespace.as_str();
    rbac::check_caller(k8s, ns).await?;
    if opts.skip_rbac_check {
        return Ok(());
    }
    match rbac::check_pod_account(k8s, ns, &dev.service_account).await? {
        rbac::PodAccess::Granted => Ok(()),
        rbac::PodAccess::Unknown => {
            report.progress(&format!(
                "warning: cannot check what the service account `{}` may do (you may not impersonate it); if `nrl` inside the pod is refused, `nrl dev rbac -n {ns}` prints the Role it needs",
                dev.service_account
            ));
            Ok(())
        }
        rbac::PodAccess::Missing(missing) => {
            report.document(&rbac::role_yaml(ns, &dev.service_account));
            Err(rbac::missing_error(ns, &dev.service_account, &missing))
        }
    }
}

fn container_image(pod: &Json, container: &str) -> Option<String> {
    pod.pointer("/spec/containers")
        .and_then(Json::as_array)?
        .iter()
        .find(|c| c.get("name").and_then(Json::as_str) == Some(container))
        .and_then(|c| c.get("image"))
        .and_then(Json::as_str)
        .map(str::to_string)
}

fn image_mismatch(dev: &DevPod, running: Option<&str>) -> Diag {
    Diag::new(
        "nrl::dev::image_mismatch",
        format!(
            "dev pod {} runs image {}, not {}",
            dev.name,
            running.unwrap_or("(none)"),
            dev.image
        ),
    )
    .help(format!(
        "`nrl dev connect --recreate -n {}` replaces the pod with the new image (the workspace volume is kept; processes in the pod are lost), or pass --image {} to keep it",
        dev.namespace,
        running.unwrap_or("IMAGE")
    ))
}

/// Destructive actions refuse a pod labelled as another user's.
fn check_owner(pod: &Json, dev: &DevPod, action: &str) -> Result<()> {
    let owner = pod
        .pointer("/metadata/labels")
        .and_then(|l| l.get(&dev.owner_label))
        .and_then(Json::as_str);
    match owner {
        Some(o) if o != dev.user => Err(Diag::new(
            "nrl::dev::not_owner",
            format!(
                "pod {} belongs to `{o}` (label {}), not to you (`{}`); refusing to {action} it",
                dev.name, dev.owner_label, dev.user
            ),
        )
        .help("check NRL_USER and `dev.podName`; `nrl dev stop --force` deletes it anyway")),
        Some(_) => Ok(()),
        // Not made by nrl (kubectl, another tool): whose it is cannot be told.
        None => Err(Diag::new(
            "nrl::dev::not_owner",
            format!(
                "pod {} has no `{}` label, so nrl cannot tell whose it is (made by kubectl or \
                 another tool?); refusing to {action} it",
                dev.name, dev.owner_label
            ),
        )
        .help("check `dev.podName`; `nrl dev stop --force` deletes it anyway")),
    }
}

/// What `stop` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    Deleted,
    NotFound,
}

/// Delete the dev pod and wait until it is gone.
pub async fn stop(
    k8s: &K8s,
    dev: &DevPod,
    force: bool,
    timeout: Duration,
    report: &mut dyn Report,
) -> Result<Stopped> {
    let ar = api_resource("v1", "Pod")?;
    let (ns, name) = (dev.namespace.as_str(), dev.name.as_str());
    let Some(live) = k8s.get(&ar, ns, name).await? else {
        return Ok(Stopped::NotFound);
    };
    if !force {
        check_owner(&live, dev, "delete")?;
    }
    report.progress(&format!("deleting {name} ..."));
    if k8s.delete_and_wait(&ar, ns, name, timeout).await? {
        Ok(Stopped::Deleted)
    } else {
        Ok(Stopped::NotFound)
    }
}
