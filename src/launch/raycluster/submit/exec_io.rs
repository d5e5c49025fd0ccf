//! Exec helpers the exec submitter needs beyond `K8s::exec`: a cluster's Running head
//! pod, and a command whose stdout is streamed as it comes (for `tail -F`).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

use crate::diag::{Diag, Result};
use crate::k8s::K8s;
use crate::k8s::exec::exit_code_of;
use crate::launch::dashboard::require_running_head;

/// The Running head pod of `cluster` in `ns` (errors say whether it is missing or not
/// running yet).
pub async fn head_pod(k8s: &K8s, ns: &str, cluster: &str) -> Result<String> {
    Ok(require_running_head(k8s, ns, cluster).await?.name)
}

/// Run `cmd` in `pod`, sending stdout to `out` as it arrives (stderr is dropped); returns
/// the exit code.
pub async fn exec_stream(
    k8s: &K8s,
    ns: &str,
    pod: &str,
    cmd: &[&str],
    out: mpsc::UnboundedSender<String>,
) -> Result<i32> {
    // The streams' client: a command may stay silent for longer than any read timeout.
    let api: Api<Pod> = Api::namespaced(k8s.stream_client.clone(), ns);
    let ap = AttachParams::default()
        .stdin(false)
        .stdout(true)
        .stderr(true);
    let mut proc = api.exec(pod, cmd.iter().copied(), &ap).await.map_err(|e| {
        Diag::api(
            "nrl::k8s::exec",
            format!("exec `{}` in pod {pod} failed: {e}", cmd.join(" ")),
        )
        .help("check the pod is Running and you may `create pods/exec` in its namespace")
    })?;
    let status = proc.take_status();
    let mut stdout = proc.stdout();
    let mut stderr = proc.stderr();
    let pump_out = async {
        let Some(s) = stdout.as_mut() else { return };
        let mut buf = vec![0u8; 16 * 1024];
        // Multi-byte characters may straddle reads: keep an incomplete tail for later.
        let mut pending: Vec<u8> = Vec::new();
        loop {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    pending.extend_from_slice(&buf[..n]);
                    let valid = match std::str::from_utf8(&pending) {
                        Ok(_) => pending.len(),
                        Err(e) if e.error_len().is_none() => e.valid_up_to(),
                        Err(_) => pending.len(),
                    };
                    let chunk: Vec<u8> = pending.drain(..valid).collect();
                    if out
                        .send(String::from_utf8_lossy(&chunk).into_owned())
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
        if !pending.is_empty() {
            let _ = out.send(String::from_utf8_lossy(&pending).into_owned());
        }
    };
    let drain_err = async {
        if let Some(s) = stderr.as_mut() {
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink).await;
        }
    };
    tokio::join!(pump_out, drain_err);
    let status = match status {
        Some(f) => f.await,
        None => None,
    };
    let _ = proc.join().await;
    if let Some(d) = crate::k8s::exec::failure_diag(status.as_ref(), pod, cmd) {
        return Err(d);
    }
    Ok(exit_code_of(status.as_ref()))
}
