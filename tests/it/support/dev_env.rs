//! Shared helpers: a fake cluster plus a hermetic environment for the `nrl` binary.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
pub use serde_json::{Value, json};

use crate::support::context::{Nrl, TestContext};
pub use crate::support::fake_k8s::*;

pub const USER: &str = "alice";
pub const POD: &str = "alice-dev-pod";
pub const SECRET: &str = "alice-secrets";
pub const IMAGE: &str = "busybox:1.36";

/// A fake cluster and a home directory with user defaults for the dev pod.
pub struct DevEnv {
    pub fake: FakeK8s,
    /// The user's HOME (with their defaults) and the fake's kubeconfig.
    ctx: TestContext,
}

impl DevEnv {
    /// User defaults: `image` and a `dev:` section, as a user would write them once.
    pub fn new() -> DevEnv {
        let env = DevEnv::bare();
        env.write_defaults(&format!(
            "infra:\n  image: {IMAGE}\n  dev:\n    pvcName: home-ws\n    imagePullSecrets: [regcred]\n"
        ));
        env
    }

    /// No user defaults at all.
    pub fn bare() -> DevEnv {
        let fake = FakeK8s::start();
        let ctx = TestContext::with_fake(&fake)
            .user(USER)
            .columns(200)
            .timeout(Duration::from_secs(60));
        DevEnv { fake, ctx }
    }

    pub fn write_defaults(&self, text: &str) {
        let dir = self.home().join(".config/nrl");
        std::fs::create_dir_all(&dir).expect("config dir");
        std::fs::write(dir.join("defaults.yaml"), text).expect("defaults");
    }

    pub fn home(&self) -> &Path {
        self.ctx.home()
    }

    /// `nrl` with only this environment: user alice, the fake's kubeconfig.
    pub fn nrl(&self) -> Nrl {
        self.ctx.nrl()
    }

    /// The same, to spawn and interact with.
    pub fn command(&self) -> std::process::Command {
        self.ctx.command()
    }

    pub fn pod(&self) -> Option<Value> {
        self.fake.get("v1", "Pod", "default", POD)
    }

    pub fn secret(&self) -> Option<Value> {
        self.fake.get("v1", "Secret", "default", SECRET)
    }

    /// The secret's data, decoded.
    pub fn secret_data(&self) -> Vec<(String, String)> {
        let s = self.secret().expect("secret exists");
        let data = s["data"].as_object().cloned().unwrap_or_default();
        data.into_iter()
            .map(|(k, v)| {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(v.as_str().unwrap_or(""))
                    .expect("base64");
                (k, String::from_utf8(bytes).expect("utf-8"))
            })
            .collect()
    }
}

/// stdout, stderr and the exit code of a finished command.
pub struct Ran {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

pub fn run(cmd: &mut assert_cmd::Command) -> Ran {
    let out = cmd.output().expect("nrl runs");
    Ran {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

impl std::fmt::Debug for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

impl DevEnv {
    /// A merge patch of the secret by another field manager, as `kubectl edit` does.
    pub fn kubectl_patch_secret(&self, patch: Value) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let client = self.fake.client().await;
            let api: kube::Api<k8s_openapi::api::core::v1::Secret> =
                kube::Api::namespaced(client, "default");
            let pp = kube::api::PatchParams {
                field_manager: Some("kubectl-edit".into()),
                ..Default::default()
            };
            api.patch(SECRET, &pp, &kube::api::Patch::Merge(&patch))
                .await
                .expect("kubectl-like patch");
        });
    }
}
