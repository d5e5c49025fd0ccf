//! Exec in a pod over the API's `pods/exec` subresource: run a command, feed stdin,
//! collect stdout/stderr and the exit code from the status channel.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::client::K8s;
use crate::diag::{Diag, Result};

/// Output of a finished exec.
#[derive(Debug, Clone, Default)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
}

impl ExecOutput {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

impl K8s {
    /// Run `cmd` in `pod` (container optional), optionally writing `stdin`, and wait.
    pub async fn exec(
        &self,
        ns: &str,
        pod: &str,
        container: Option<&str>,
        cmd: &[&str],
        stdin: Option<&[u8]>,
    ) -> Result<ExecOutput> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let mut ap = AttachParams::default()
            .stdin(stdin.is_some())
            .stdout(true)
            .stderr(true);
        if let Some(c) = container {
            ap = ap.container(c);
        }
        let mut proc = api
            .exec(pod, cmd.iter().copied(), &ap)
            .await
            .map_err(|e| exec_error(pod, cmd, e))?;
        if let (Some(data), Some(mut w)) = (stdin, proc.stdin()) {
            w.write_all(data)
                .await
                .map_err(|e| Diag::api("nrl::k8s::exec", format!("writing stdin: {e}")))?;
            w.shutdown().await.ok();
        }
        let mut out = ExecOutput::default();
        let mut so = proc.stdout();
        let mut se = proc.stderr();
        let status = proc.take_status();
        let read_out = async {
            if let Some(s) = so.as_mut() {
                let _ = s.read_to_end(&mut out.stdout).await;
            }
        };
        let mut err_buf = Vec::new();
        let read_err = async {
            if let Some(s) = se.as_mut() {
                let _ = s.read_to_end(&mut err_buf).await;
            }
        };
        tokio::join!(read_out, read_err);
        out.stderr = err_buf;
        let status = match status {
            Some(f) => f.await,
            None => None,
        };
        out.exit_code = exit_code_of(status.as_ref());
        let _ = proc.join().await;
        Ok(out)
    }
}

fn exec_error(pod: &str, cmd: &[&str], e: kube::Error) -> Diag {
    Diag::api(
        "nrl::k8s::exec",
        format!("exec `{}` in pod {pod} failed: {e}", cmd.join(" ")),
    )
    .help("check the pod is Running and you may `create pods/exec` in its namespace")
}

/// Exit code from the exec status: Success → 0, NonZeroExitCode → its `ExitCode` cause.
pub fn exit_code_of(
    status: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
) -> i32 {
    let Some(s) = status else {
        return -1;
    };
    if s.status.as_deref() == Some("Success") {
        return 0;
    }
    s.details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
                .and_then(|c| c.message.as_deref())
                .and_then(|m| m.trim().parse().ok())
        })
        .unwrap_or(1)
}
