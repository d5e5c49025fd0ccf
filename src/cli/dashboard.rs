//! `nrl cluster dashboard NAME`: forward a RayCluster's dashboard (port 8265 of its head
//! Service) to 127.0.0.1 over the API — no kubectl — print the URL, open a browser when
//! there is one, and keep forwarding until Ctrl-C.

use std::time::Duration;

use clap::Args;

use super::common::{KubeArgs, banner, run_async};
use crate::diag::{Exit, Result};
use crate::k8s::{K8s, PodTarget, PortForward};
use crate::launch::Progress;
use crate::launch::dashboard::{DASHBOARD_PORT, fix_dashboard_assets, require_running_head};
use crate::launch::raycluster::head_service;
use crate::ray::{RayClient, RayClientOptions};

/// Port-forward a RayCluster's Ray dashboard to localhost.
#[derive(Debug, Args)]
#[command(after_help = "\
The forward runs inside nrl (no kubectl) and follows the head pod if it restarts.
Ctrl-C stops it (exit 130).

Examples:
  nrl cluster dashboard rc-train
  nrl cluster dashboard rc-train -n my-team --port 0 --no-open
  nrl cluster dashboard rc-train --fix      # blank page? reinstall Ray's assets as files")]
pub struct DashboardArgs {
    /// The RayCluster's name.
    pub name: String,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Local port on 127.0.0.1 (0: a free one). A busy port is an error.
    #[arg(long, default_value_t = DASHBOARD_PORT)]
    pub port: u16,
    /// Do not open a browser.
    #[arg(long)]
    pub no_open: bool,
    /// First repair a blank dashboard: when Ray's static assets on the head are symlinks
    /// (uv's default), reinstall Ray there with copied files (about 30 s; the lasting fix
    /// is UV_LINK_MODE=copy in the image).
    #[arg(long)]
    pub fix: bool,
}

pub fn run(args: DashboardArgs) -> Result<Exit> {
    run_async("[dashboard] forward stopped", async move {
        let k8s = args.kube.connect(None).await?;
        banner("cluster dashboard", &k8s);
        let ns = k8s.namespace.clone();
        let progress = Progress::auto();
        let head = require_running_head(&k8s, &ns, &args.name).await?;
        if args.fix {
            fix_dashboard_assets(&k8s, &ns, &head.name, &progress).await;
        }
        let pf = forward(&k8s, &ns, &args.name, &head.name, args.port).await?;
        let url = pf.url();
        // Verify the route before handing out the URL.
        match probe(&url).await {
            Ok(v) => crate::errln!("[dashboard] Ray {v} is answering"),
            Err(e) => crate::errln!(
                "warning: the dashboard does not answer yet ({}); the forward stays open",
                e.message
            ),
        }
        crate::outln!(
            "[dashboard] forwarding {} head :{DASHBOARD_PORT} → {url}",
            args.name
        );
        if !args.no_open && open_browser(&url) {
            crate::errln!("[dashboard] opened {url} in a browser");
        }
        crate::errln!("[dashboard] Ctrl+C to stop.");
        std::future::pending::<Result<Exit>>().await
    })
}

/// The head Service's 8265, else (no Service) the head pod's.
async fn forward(
    k8s: &K8s,
    ns: &str,
    cluster: &str,
    head: &str,
    port: u16,
) -> Result<std::sync::Arc<PortForward>> {
    let svc = PodTarget::Service(head_service(cluster));
    match k8s.port_forward_at(ns, svc, DASHBOARD_PORT, port).await {
        Ok(pf) => Ok(pf),
        Err(e) if e.message.starts_with("service ") => {
            k8s.port_forward_at(ns, PodTarget::Name(head.to_string()), DASHBOARD_PORT, port)
                .await
        }
        Err(e) => Err(e),
    }
}

/// The Ray version behind the forward (10 s, retries included).
async fn probe(url: &str) -> Result<String> {
    let client = RayClient::new(
        url,
        RayClientOptions {
            timeout: Duration::from_secs(10),
            ..RayClientOptions::default()
        },
    )?;
    Ok(client.version().await?.ray_version)
}

/// Open `url` when a graphical session is likely; whether a browser was launched.
fn open_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") {
        Some("open")
    } else if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
    {
        Some("xdg-open")
    } else {
        None
    };
    let Some(cmd) = opener else {
        return false;
    };
    std::process::Command::new(cmd)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}
