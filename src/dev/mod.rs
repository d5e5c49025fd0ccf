//! The personal dev pod (`nrl dev …`): a long-running CPU pod with the user's workspace
//! and secrets, for syncing code and debugging inside the cluster.
//!
//! Differences from the reference (ref-orchestration §9, §11.F), on purpose:
//! - the pod comes from the infra/user defaults (`infra.dev`), not hard-coded values, and
//!   its start-up downloads nothing;
//! - the secret is written by server-side apply (see [`secrets`]); keys can be removed
//!   and are validated; the summary lists every key;
//! - RBAC is checked with access reviews for every permission, and a denial prints a
//!   least-privilege Role (see [`rbac`]);
//! - `connect` waits with a watch, refuses an image mismatch instead of warning, waits for
//!   a terminating pod to go, passes the remote exit code through and needs no kubectl;
//! - `stop` waits until the pod is gone and refuses another user's pod without `--force`.

pub mod lifecycle;
pub mod pod;
pub mod rbac;
pub mod secrets;
pub mod sync;

use serde_json::Value as Json;

use crate::config::env::username;
use crate::config::infra_only::{InfraRequest, load_infra_only};
use crate::diag::{Diag, Result};
use crate::k8s::resources::api_resource;
use crate::k8s::{ApplyOptions, K8s};
pub use lifecycle::{ConnectOptions, Stopped, connect, ensure_running, run_captured, stop};
pub use pod::DevPod;
use secrets::{LiveSecret, SecretEdit, SecretTarget};
pub use sync::{SyncOutcome, sync};

/// Load the infra layers and render the user's dev pod from them.
pub fn resolve(req: &InfraRequest) -> Result<DevPod> {
    let loaded = load_infra_only(req)?;
    let user = username(loaded.env.as_ref());
    pod::resolve(&loaded, &user)
}

/// Where the dev commands report: progress (stderr in the CLI) and documents worth
/// keeping, such as a Role to apply (stdout).
pub trait Report {
    fn progress(&mut self, line: &str);
    fn document(&mut self, text: &str);
}

/// Progress to stderr, documents to stdout.
#[derive(Debug, Default)]
pub struct StdReport;

impl Report for StdReport {
    fn progress(&mut self, line: &str) {
        crate::errln!("{line}");
    }
    fn document(&mut self, text: &str) {
        crate::out!("{text}");
    }
}

/// The default command of `connect`: bash if the image has it, else sh.
pub const DEFAULT_SHELL: &[&str] = &[
    "sh",
    "-c",
    "if command -v bash >/dev/null 2>&1; then exec bash; else exec sh; fi",
];

// ---- setup-secrets ------------------------------------------------------------------------

/// What `setup-secrets` did.
#[derive(Debug, Clone)]
pub struct SecretsOutcome {
    pub created: bool,
    pub lines: Vec<secrets::KeyLine>,
    /// The summary to print (values masked).
    pub summary: String,
}

/// Attempts when a concurrent writer changes the secret between our read and our write.
const SECRET_ATTEMPTS: usize = 5;

/// Create or update the user's secret (see [`secrets`] for the semantics).
pub async fn setup_secrets(
    k8s: &K8s,
    dev: &DevPod,
    edits: &[SecretEdit],
    report: &mut dyn Report,
) -> Result<SecretsOutcome> {
    secrets::check_unique(edits)?;
    let ar = api_resource("v1", "Secret")?;
    let target = SecretTarget {
        name: dev.secret_name.clone(),
        namespace: dev.namespace.clone(),
        labels: [(
            crate::render::meta::MANAGED_BY_KEY.to_string(),
            crate::render::meta::MANAGED_BY.to_string(),
        )]
        .into(),
    };
    for _ in 0..SECRET_ATTEMPTS {
        let live = k8s.get(&ar, &target.namespace, &target.name).await?;
        let mut live = live.as_ref().map(LiveSecret::from_json);
        let plan = secrets::plan(&target, live.as_ref(), edits)?;
        if let Some(l) = live.as_mut()
            && !plan.remove_by_patch.is_empty()
        {
            match remove_keys(k8s, &target, l, &plan.remove_by_patch).await? {
                Some(rv) => l.resource_version = rv,
                None => continue,
            }
        }
        let mut body = plan.apply.clone();
        if let Some(l) = &live {
            // Optimistic lock: fail rather than overwrite a change made since our read.
            body["metadata"]["resourceVersion"] = Json::String(l.resource_version.clone());
        }
        let force = ApplyOptions {
            dry_run: false,
            force: true,
        };
        match k8s.apply(&body, force).await {
            Ok(stored) => {
                let lines = secrets::finalize(plan.lines, &stored);
                let summary = secrets::summary(&target, plan.create, &lines);
                return Ok(SecretsOutcome {
                    created: plan.create,
                    lines,
                    summary,
                });
            }
            Err(d) if d.code == "nrl::k8s::conflict" => {
                report.progress(&format!(
                    "secret {} changed while updating it; reading it again",
                    target.name
                ));
            }
            Err(d) => return Err(d),
        }
    }
    Err(Diag::api(
        "nrl::dev::secret_busy",
        format!(
            "secret {} kept changing while nrl updated it ({SECRET_ATTEMPTS} attempts)",
            target.name
        ),
    )
    .help("something else is writing the secret right now; retry in a moment"))
}

/// Remove keys another writer owns with a JSON patch guarded by the resourceVersion we
/// planned against. `Ok(None)`: the secret changed meanwhile (plan again).
async fn remove_keys(
    k8s: &K8s,
    target: &SecretTarget,
    live: &LiveSecret,
    keys: &[String],
) -> Result<Option<String>> {
    let mut ops = vec![serde_json::json!({
        "op": "test", "path": "/metadata/resourceVersion", "value": live.resource_version
    })];
    for k in keys {
        ops.push(
            serde_json::json!({"op": "remove", "path": format!("/data/{}", pointer_escape(k))}),
        );
    }
    // A raw request: kube's typed JSON-patch support needs a feature nrl does not enable.
    let path = format!(
        "/api/v1/namespaces/{}/secrets/{}?fieldManager={}",
        target.namespace,
        target.name,
        crate::k8s::objects::FIELD_MANAGER
    );
    let body = serde_json::to_vec(&Json::Array(ops))
        .map_err(|e| Diag::api("nrl::k8s::decode", e.to_string()))?;
    let request = http::Request::patch(path)
        .header(http::header::CONTENT_TYPE, "application/json-patch+json")
        .header(http::header::ACCEPT, "application/json")
        .body(body)
        .map_err(|e| Diag::api("nrl::k8s::request", e.to_string()))?;
    match k8s.client.request::<Json>(request).await {
        Ok(s) => Ok(Some(
            s.pointer("/metadata/resourceVersion")
                .and_then(Json::as_str)
                .unwrap_or("")
                .to_string(),
        )),
        // A failed `test` (422) or a vanished secret (404): the secret changed.
        Err(e) if matches!(crate::k8s::errors::status_code(&e), Some(404 | 409 | 422)) => Ok(None),
        Err(e) => Err(crate::k8s::errors::to_diag(
            e,
            &crate::k8s::errors::Action {
                verb: "patch",
                resource: "secrets",
                name: Some(&target.name),
                namespace: Some(&target.namespace),
            },
        )),
    }
}

/// JSON pointer escaping (RFC 6901).
fn pointer_escape(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}
