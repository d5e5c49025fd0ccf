//! `nrl logs RECIPE … --role R`: a role's daemon job log (through the Ray dashboard), or
//! its head or first worker pod's log (through the API).

use clap::{Args, ValueEnum};

use super::common::{KubeArgs, RecipeArgs, run_async};
use crate::config::schema::Role;
use crate::diag::{Diag, Exit, Result};
use crate::launch::Progress;
use crate::launch::logs::{LogSource, RoleLogOptions, role_logs};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Source {
    /// The daemon when the role declares one, else the head pod.
    Auto,
    /// The role's daemon Ray job (the newest `<id>` or `<id>-<ts>`).
    Daemon,
    /// The head pod.
    Head,
    /// The first worker pod.
    Worker,
}

/// Print (or follow) a role's daemon, head or worker log.
#[derive(Debug, Args)]
#[command(after_help = "\
Examples:
  nrl logs recipe.yaml --infra infra.yaml --role gym
  nrl logs recipe.yaml --infra infra.yaml --role training --source head -f
  nrl logs recipe.yaml --infra infra.yaml --role generation --source worker --tail 50 --container ray-worker")]
pub struct LogsArgs {
    #[command(flatten)]
    pub recipe: RecipeArgs,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// generation, gym or training.
    #[arg(long, value_name = "ROLE")]
    pub role: String,
    /// Which log.
    #[arg(long, value_enum, default_value = "auto")]
    pub source: Source,
    /// Keep streaming (reconnecting if the stream drops) until the pod or job ends.
    #[arg(short, long)]
    pub follow: bool,
    /// Only the last N lines.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub tail: i64,
    /// Container of the pod (default: its default or first container).
    #[arg(long, value_name = "NAME")]
    pub container: Option<String>,
}

pub fn run(args: LogsArgs) -> Result<Exit> {
    let role = Role::parse(&args.role).ok_or_else(|| {
        Diag::new("nrl::logs::role", format!("unknown role `{}`", args.role))
            .help("use generation, gym or training")
    })?;
    let cfg = args.kube.load(&args.recipe)?;
    let opts = RoleLogOptions {
        source: match args.source {
            Source::Auto => LogSource::Auto,
            Source::Daemon => LogSource::Daemon,
            Source::Head => LogSource::Head,
            Source::Worker => LogSource::Worker,
        },
        follow: args.follow,
        tail: Some(args.tail),
        container: args.container.clone(),
    };
    run_async("stopped following; the job keeps running", async move {
        let k8s = args.kube.connect(Some(&cfg.infra.namespace)).await?;
        let mut out = std::io::stdout();
        role_logs(&k8s, &cfg, role, &opts, &mut out, &Progress::auto()).await
    })
}
