//! HTTP health checks of daemons and Deployments (ref-orchestration §7.2 with the
//! reference's intent restored: any answer below 500 counts as up). URLs naming a
//! Service by cluster DNS (`<svc>.<ns>.svc[.cluster.local]`, or a bare `<svc>`) cannot be
//! resolved from a laptop, so outside the cluster they are reached through a port-forward
//! to that Service.

use std::time::{Duration, Instant};

use reqwest::Url;

use crate::diag::{Diag, Result};
use crate::k8s::{K8s, PodTarget};

use super::progress::Progress;

const CODE: &str = "nrl::health";

/// The Service (name, namespace) a cluster-DNS host names, if it names one.
pub fn service_of_host<'a>(host: &'a str, default_ns: &'a str) -> Option<(&'a str, &'a str)> {
    let parts: Vec<&str> = host.split('.').collect();
    match parts.as_slice() {
        [svc, ns, "svc"] | [svc, ns, "svc", "cluster", "local"] => Some((svc, ns)),
        [svc] if *svc != "localhost" && svc.parse::<u8>().is_err() => Some((svc, default_ns)),
        _ => None,
    }
}

/// Poll `url` every 2 s until it answers below 500 or `timeout` passes; the status.
pub async fn health_check(
    k8s: &K8s,
    url: &str,
    timeout: Duration,
    tag: &str,
    progress: &Progress,
) -> Result<u16> {
    let parsed = Url::parse(url).map_err(|e| {
        Diag::new(CODE, format!("health-check URL `{url}` is not a URL: {e}"))
            .help("write it as http://<service>.<namespace>.svc.cluster.local:<port>/<path>")
    })?;
    let host = parsed.host_str().unwrap_or_default().to_string();
    let port = parsed.port_or_known_default().unwrap_or(80);
    // Keep the forward alive for the whole check.
    let mut _forward = None;
    let target = match service_of_host(&host, &k8s.namespace) {
        Some((svc, ns)) if !k8s.in_cluster => {
            let pf = k8s
                .port_forward(ns, PodTarget::Service(svc.to_string()), port)
                .await?;
            let mut local = parsed.clone();
            let _ = local.set_host(Some("127.0.0.1"));
            let _ = local.set_port(Some(pf.local.port()));
            _forward = Some(pf);
            local
        }
        _ => parsed.clone(),
    };
    progress.line(format!(
        "[{tag}] waiting for health-check {url} (timeout {}s)",
        timeout.as_secs()
    ));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| Diag::api(CODE, format!("cannot build an HTTP client: {e}")))?;
    let deadline = Instant::now() + timeout;
    loop {
        let last = match http.get(target.clone()).send().await {
            Ok(r) if r.status().as_u16() < 500 => {
                let status = r.status().as_u16();
                progress.line(format!("[{tag}] health-check {url} responded {status}"));
                return Ok(status);
            }
            Ok(r) => format!("HTTP {}", r.status().as_u16()),
            Err(e) => e.to_string(),
        };
        if Instant::now() + Duration::from_secs(2) > deadline {
            return Err(Diag::api(
                CODE,
                format!(
                    "health-check {url} did not respond within {}s (last: {last})",
                    timeout.as_secs()
                ),
            )
            .help("check the service's logs (`nrl logs … --role R`) and raise healthCheckTimeoutS if it starts slowly"));
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_dns_names_map_to_services() {
        assert_eq!(
            service_of_host("vllm.team.svc.cluster.local", "d"),
            Some(("vllm", "team"))
        );
        assert_eq!(
            service_of_host("vllm.team.svc", "d"),
            Some(("vllm", "team"))
        );
        assert_eq!(service_of_host("vllm", "d"), Some(("vllm", "d")));
        assert_eq!(service_of_host("localhost", "d"), None);
        assert_eq!(service_of_host("example.com", "d"), None);
        assert_eq!(service_of_host("127.0.0.1", "d"), None);
    }
}
