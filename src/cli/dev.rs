//! `nrl dev …`: the personal dev pod. Parsing and printing only; the work is in
//! `crate::dev`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};

use super::value_parsers::parse_duration;
use crate::config::env::ProcessEnv;
use crate::config::infra_only::InfraRequest;
use crate::dev::{self, DevPod, Report, StdReport, secrets};
use crate::diag::{Diag, Exit, Result};
use crate::k8s::K8s;

/// A CPU pod of your own in the cluster, for syncing code and debugging.
#[derive(Debug, Args)]
#[command(after_help = "\
The pod (name, image, workspace PVC, pull secrets, working directory, node rule,
resources) comes from `dev:` in the infra layers: shipped defaults, then
~/.config/nrl/defaults.yaml, then --infra FILE.

Examples:
  nrl dev setup-secrets HF_TOKEN=hf_abc WANDB_API_KEY=123 --ssh-key ~/.ssh/id_ed25519
  nrl dev connect --image nvcr.io/nvidia/nemo-rl:latest
  nrl dev connect -- python -c 'import torch; print(torch.__version__)'
  nrl dev stop")]
pub struct DevArgs {
    #[command(subcommand)]
    pub command: DevCommand,
}

#[derive(Debug, Subcommand)]
pub enum DevCommand {
    /// Create or update your secret `<user>-secrets`; its keys are the pod's environment.
    #[command(after_help = "\
KEY=VALUE sets a key, KEY- removes it. Keys must be usable as environment variable names.
The first time, HF_TOKEN, WANDB_API_KEY and --ssh-key are required. Values are never
printed; the summary lists every key with its size.

Keys another tool wrote (kubectl, nrl-k8s) are kept unless you name them; KEY=VALUE takes
such a key over and KEY- removes it.

Examples:
  nrl dev setup-secrets HF_TOKEN=hf_abc WANDB_API_KEY=123 --ssh-key ~/.ssh/id_ed25519
  nrl dev setup-secrets --add-rclone
  nrl dev setup-secrets OLD_TOKEN- GITHUB_TOKEN=ghp_x -n team-a")]
    SetupSecrets(SetupSecretsArgs),
    /// Start your dev pod if needed, wait until it runs, and open a shell (or run CMD).
    #[command(after_help = "\
With a terminal you get an interactive shell (bash if the image has it); without one, or
with --no-tty, stdin is forwarded and stdout/stderr stay separate. The exit code is the
command's.

Examples:
  nrl dev connect
  nrl dev connect --image nvcr.io/nvidia/nemo-rl:latest --recreate
  nrl dev connect -- sh -c 'cd /mnt/rl-workspace && git status'
  echo 'uv sync' | nrl dev connect --no-tty")]
    Connect(ConnectArgs),
    /// Delete your dev pod and wait until it is gone (the workspace volume stays).
    #[command(after_help = "Examples:\n  nrl dev stop\n  nrl dev stop -n team-a")]
    Stop(StopArgs),
    /// Print the Role and RoleBinding the dev pod's service account needs (no cluster access).
    #[command(after_help = "\
A least-privilege, namespaced Role: RayJobs, RayClusters, Jobs, Deployments, Services,
ConfigMaps and DRA objects to manage; pods, logs and events to read; exec and
port-forward. Nothing cluster-wide, nothing aggregated into `edit`.

Example (as someone who may manage RBAC in the namespace):
  nrl dev rbac -n team-a | kubectl apply -f -")]
    Rbac(RbacArgs),
}

/// Where: namespace, context, infra file.
#[derive(Debug, Clone, Args)]
pub struct DevTargetArgs {
    /// Namespace (default: `namespace` from the infra layers, else the context's).
    #[arg(short, long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Kubeconfig context (default: the current one).
    #[arg(long, value_name = "NAME", add = super::completions::contexts())]
    pub context: Option<String>,
    /// Infra YAML whose `dev:` section (and namespace, pull secrets) apply.
    #[arg(long, value_name = "FILE")]
    pub infra: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SetupSecretsArgs {
    /// KEY=VALUE to set, KEY- to remove.
    #[arg(value_name = "KEY=VALUE|KEY-")]
    pub keys: Vec<String>,
    /// Private SSH key to install in the pod (sets SSH_KEY_NAME and SSH_KEY_CONTENT).
    #[arg(long, value_name = "FILE")]
    pub ssh_key: Option<PathBuf>,
    /// Add your rclone config ($RCLONE_CONFIG or ~/.config/rclone/rclone.conf) as RCLONE_CONF.
    #[arg(long)]
    pub add_rclone: bool,
    #[command(flatten)]
    pub target: DevTargetArgs,
}

#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// Image for a new pod (default: `dev.image`, else `image`); an existing pod with
    /// another image is refused unless --recreate.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Delete the existing pod first and start a fresh one.
    #[arg(long)]
    pub recreate: bool,
    /// Create the pod even if its service account lacks permissions.
    #[arg(long)]
    pub skip_rbac_check: bool,
    /// Do not allocate a terminal, even when stdin and stdout are one.
    #[arg(long)]
    pub no_tty: bool,
    /// How long to wait for the pod to run.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    #[command(flatten)]
    pub target: DevTargetArgs,
    /// Command to run instead of a shell, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct StopArgs {
    /// Delete the pod even if it is labelled as another user's.
    #[arg(long)]
    pub force: bool,
    /// How long to wait for the pod to go.
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_duration)]
    pub timeout: Duration,
    #[command(flatten)]
    pub target: DevTargetArgs,
}

#[derive(Debug, Args)]
pub struct RbacArgs {
    /// The service account to bind (default: the dev pod's, `default` unless configured).
    #[arg(long, value_name = "NAME")]
    pub service_account: Option<String>,
    #[command(flatten)]
    pub target: DevTargetArgs,
}

pub fn run(args: DevArgs) -> Result<Exit> {
    if let DevCommand::Rbac(a) = &args.command {
        let pod = resolve(&a.target, None)?;
        let sa = a.service_account.as_deref().unwrap_or(&pod.service_account);
        crate::out!("{}", dev::rbac::role_yaml(&pod.namespace, sa));
        return Ok(Exit::Ok);
    }
    // An interactive session's Ctrl-C goes to the pod (the terminal is raw); a signal to
    // nrl itself stops it.
    super::common::run_async("stopped; the dev pod keeps running", async move {
        match args.command {
            DevCommand::SetupSecrets(a) => setup_secrets(a).await,
            DevCommand::Connect(a) => connect(a).await,
            DevCommand::Stop(a) => stop(a).await,
            DevCommand::Rbac(_) => Ok(Exit::Ok),
        }
    })
}

fn resolve(t: &DevTargetArgs, image: Option<&str>) -> Result<DevPod> {
    let mut req = InfraRequest::new(Arc::new(ProcessEnv))
        .flag("--namespace", "namespace", t.namespace.as_deref())
        .flag("--image", "dev.image", image);
    req.infra = t.infra.clone();
    req.namespace_fallback = crate::k8s::context::inferred_namespace(
        &crate::k8s::ConnectOptions {
            context: t.context.clone(),
            ..Default::default()
        },
        &ProcessEnv,
    );
    dev::resolve(&req)
}

/// Connect and say where we act (every command here changes the cluster).
async fn cluster(t: &DevTargetArgs, pod: &DevPod) -> Result<K8s> {
    let k8s = K8s::connect(&crate::k8s::ConnectOptions {
        context: t.context.clone(),
        namespace: Some(pod.namespace.clone()),
        ..Default::default()
    })
    .await?;
    crate::errln!("{}", k8s.banner());
    Ok(k8s)
}

async fn setup_secrets(a: SetupSecretsArgs) -> Result<Exit> {
    // Everything local is read and checked before the cluster is contacted.
    let mut edits = a
        .keys
        .iter()
        .map(|k| secrets::parse_edit(k))
        .collect::<Result<Vec<_>>>()?;
    if let Some(path) = &a.ssh_key {
        edits.extend(secrets::ssh_key_edits(path)?);
    }
    if a.add_rclone {
        edits.push(secrets::rclone_edit(&ProcessEnv)?);
    }
    if edits.is_empty() {
        return Err(
            Diag::new("nrl::dev::secret_args", "nothing to do: no keys given").help(
                "e.g. `nrl dev setup-secrets HF_TOKEN=hf_abc`, `--ssh-key FILE` or `--add-rclone`",
            ),
        );
    }
    secrets::check_unique(&edits)?;
    let pod = resolve(&a.target, None)?;
    let k8s = cluster(&a.target, &pod).await?;
    let outcome = dev::setup_secrets(&k8s, &pod, &edits, &mut StdReport).await?;
    crate::out!("{}", outcome.summary);
    Ok(Exit::Ok)
}

async fn connect(a: ConnectArgs) -> Result<Exit> {
    let pod = resolve(&a.target, a.image.as_deref())?;
    let k8s = cluster(&a.target, &pod).await?;
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let opts = dev::ConnectOptions {
        recreate: a.recreate,
        skip_rbac_check: a.skip_rbac_check,
        timeout: a.timeout,
        command: a.command,
        tty: interactive && !a.no_tty,
    };
    let code = dev::connect(&k8s, &pod, &opts, &mut StdReport).await?;
    Ok(Exit::Code(code))
}

async fn stop(a: StopArgs) -> Result<Exit> {
    let pod = resolve(&a.target, None)?;
    let k8s = cluster(&a.target, &pod).await?;
    let mut report = StdReport;
    match dev::stop(&k8s, &pod, a.force, a.timeout, &mut report).await? {
        dev::Stopped::Deleted => report.progress(&format!("{} deleted.", pod.name)),
        dev::Stopped::NotFound => report.progress(&format!(
            "no dev pod {} in namespace `{}`",
            pod.name, pod.namespace
        )),
    }
    Ok(Exit::Ok)
}
