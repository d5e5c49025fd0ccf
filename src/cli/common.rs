//! Arguments and helpers shared by commands: the recipe, where the cluster is, the
//! runtime with Ctrl-C handling, tables.

use std::future::Future;
use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;

use crate::config::layers::{LoadedConfig, load};
use crate::config::namespace::InferredNamespace;
use crate::diag::{Diag, Exit, Result};
use crate::k8s::{ClusterContext, ConnectOptions, K8s};
use crate::terminal_text::Wrap;

/// `RECIPE [--infra FILE] [OVERRIDES…]`
#[derive(Debug, Clone, Default, Args)]
pub struct RecipeArgs {
    /// The NeMo-RL recipe YAML (its `defaults:` chain is followed).
    #[arg(add = super::completions::recipe_or_run())]
    pub recipe: PathBuf,
    /// Infra YAML; alternatively the recipe may carry an `infra:` block (not both).
    #[arg(long, value_name = "FILE")]
    pub infra: Option<PathBuf>,
    /// Hydra-style overrides: `a.b=v`, `+a.b=v`, `++a.b=v`, `~a.b`; `infra.*` keys go to
    /// the infra layer.
    #[arg(value_name = "OVERRIDES", allow_hyphen_values = false,
          add = super::completions::overrides())]
    pub overrides: Vec<String>,
}

impl RecipeArgs {
    /// A load request over the real process environment.
    pub fn load_request(&self) -> crate::config::layers::LoadRequest {
        let mut req = crate::config::layers::LoadRequest::new(
            self.recipe.clone(),
            std::sync::Arc::new(crate::config::env::ProcessEnv),
        );
        req.infra = self.infra.clone();
        req.overrides = self.overrides.clone();
        // No cluster flags here (`nrl check`): the context the environment selects.
        req.namespace_fallback = crate::k8s::context::inferred_namespace(
            &ConnectOptions::default(),
            &crate::config::env::ProcessEnv,
        );
        req
    }
}

/// Where the cluster is: shared by every command that talks to Kubernetes.
#[derive(Debug, Clone, Args)]
pub struct KubeArgs {
    /// Kubeconfig context (default: the current context).
    #[arg(long, value_name = "NAME", add = super::completions::contexts())]
    pub context: Option<String>,
    /// Namespace. For recipe commands this overrides `infra.namespace`; otherwise the
    /// default is the context's namespace (in a pod: the service account's).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster
    /// service account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Deadline of each Kubernetes API call, retries included (e.g. 30s, 2m).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = super::value_parsers::parse_duration)]
    pub request_timeout: std::time::Duration,
    /// Server-side limit of each watch request (e.g. 60s). A watch or list that stays
    /// silent longer than this (plus a margin) is taken for dead and re-established, so a
    /// stalled connection does not hold a `--wait` until its deadline.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = super::value_parsers::parse_duration)]
    pub watch_timeout: std::time::Duration,
    /// The cluster context, resolved once per command: the namespace a recipe is rendered
    /// for and the client that applies it come from the same resolution.
    #[arg(skip)]
    resolved: std::sync::OnceLock<Result<ClusterContext>>,
}

impl KubeArgs {
    /// What the flags select.
    pub fn connect_options(&self) -> ConnectOptions {
        ConnectOptions {
            context: self.context.clone(),
            namespace: self.namespace.clone(),
            kubeconfig: self.kubeconfig.clone(),
            request_timeout: Some(self.request_timeout),
            watch_timeout: Some(self.watch_timeout),
            body_limits: None,
        }
    }

    /// The cluster context the flags and the environment select (resolved on first use).
    pub fn cluster_context(&self) -> Result<&ClusterContext> {
        self.resolved
            .get_or_init(|| {
                crate::k8s::context::resolve(
                    &self.connect_options(),
                    &crate::config::env::ProcessEnv,
                )
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The namespace a recipe without one is rendered for (`default` when no context
    /// resolves; connecting reports why).
    pub fn inferred_namespace(&self) -> InferredNamespace {
        self.cluster_context()
            .map(|c| c.inferred.clone())
            .unwrap_or_default()
    }

    /// Connect, acting in `namespace` (default: `-n`, else the context's).
    pub async fn connect(&self, namespace: Option<&str>) -> Result<K8s> {
        let mut ctx = self.cluster_context()?.clone();
        if let Some(ns) = namespace {
            ctx.namespace = ns.to_string();
        }
        K8s::connect_to(&ctx, &self.connect_options()).await
    }

    /// Load a recipe + infra pair for a cluster command: `-n` becomes an
    /// `infra.namespace` override and `--context` picks the context a missing namespace
    /// is inferred from.
    pub fn load(&self, recipe: &RecipeArgs) -> Result<LoadedConfig> {
        let mut req = recipe.load_request();
        if let Some(ns) = &self.namespace {
            req.overrides.push(format!("infra.namespace='{ns}'"));
        }
        req.namespace_fallback = self.inferred_namespace();
        load(&req)
    }
}

/// Print "<command>: context `c`, namespace `n`" on stderr, before a command changes
/// anything.
pub fn banner(command: &str, k8s: &K8s) {
    crate::errln!("{command}: {} (server {})", k8s.banner(), k8s.server);
}

/// The runtime every command runs on: two workers (the machines nrl runs on are
/// laptops and CI runners; the work is waiting on the network).
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("nrl-io")
        .enable_all()
        .build()
        .map_err(|e| {
            Diag::new(
                "nrl::runtime",
                format!("cannot start the async runtime: {e}"),
            )
        })
}

/// Run a command's future to its end on [`runtime`]: the one `block_on` of the commands.
/// Open port-forwards and watches left behind are not waited for.
pub fn block_on<T>(fut: impl Future<Output = Result<T>>) -> Result<T> {
    let runtime = runtime()?;
    let out = runtime.block_on(fut);
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    out
}

/// The one Ctrl-C behaviour: SIGINT, SIGTERM and SIGHUP cancel the returned token. Call
/// it (inside [`block_on`]) before the command starts anything, so an early Ctrl-C is
/// not lost; what an interrupt means (stop waiting, detach, clean up) is the command's
/// to decide through the token.
pub fn cancel_on_signals() -> Result<tokio_util::sync::CancellationToken> {
    let token = tokio_util::sync::CancellationToken::new();
    let mut interrupts = crate::launch::local::process::Interrupts::from_signals()?;
    let t = token.clone();
    tokio::spawn(async move {
        interrupts.recv().await;
        t.cancel();
    });
    Ok(token)
}

/// [`block_on`] for a command whose interrupt means "stop waiting": Ctrl-C (or SIGTERM,
/// SIGHUP) drops the future (whatever was started on the cluster keeps running), prints
/// `on_interrupt` and exits 130.
pub fn run_async<F>(on_interrupt: &str, fut: F) -> Result<Exit>
where
    F: Future<Output = Result<Exit>>,
{
    block_on(async move {
        let cancel = cancel_on_signals()?;
        tokio::select! {
            r = fut => r,
            _ = cancel.cancelled() => {
                crate::errln!("\ninterrupted: {on_interrupt}");
                Ok(Exit::Interrupted)
            }
        }
    })
}

/// Output format of read-only commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
    Yaml,
}

impl Output {
    /// `value` as JSON or YAML (same field names); `None` for the table, which each
    /// command prints its own way.
    pub fn data<T: serde::Serialize>(self, value: &T) -> Option<String> {
        let json = serde_json::to_value(value).unwrap_or_default();
        match self {
            Output::Table => None,
            Output::Json => Some(serde_json::to_string_pretty(&json).unwrap_or_default()),
            Output::Yaml => Some(
                crate::render::emit::to_yaml(&crate::config::node::Node::from_json(&json))
                    .trim_end()
                    .to_string(),
            ),
        }
    }
}

/// A borderless table, columns two spaces apart, cells escaped; wrapped to the terminal
/// when there is one, never truncated otherwise.
pub fn plain_table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let wrap = if std::io::stdout().is_terminal() {
        Wrap::ToTerminal
    } else {
        Wrap::Never
    };
    crate::terminal_text::plain_table(header, rows, wrap)
}
