//! The real control plane (`testbed/`): kube-apiserver, etcd, controller-manager, scheduler,
//! kwok and the real KubeRay operator, started by `testbed/up` (one per operator version,
//! side by side) before the tests run.
//!
//! A test asks for the testbed of one operator version ([`Testbed::get`]), makes itself a
//! namespace ([`Testbed::namespace`], deleted when dropped) and, where its flow reaches a
//! Ray dashboard, attaches one to the namespace ([`Namespace::attach_dashboard`]): a kwok
//! `ClusterPortForward` carries the apiserver's port-forward of every pod of the namespace to
//! it (nrl's path), and a route file tells the operator's dashboard proxy (the operator's
//! path). Commands run with [`Namespace::ctx`], a [`TestContext`] on the testbed's
//! kubeconfig.
//!
//! Under `CI=true` a testbed that is not running fails the test; otherwise the test is
//! skipped with a notice that names `make testbed-up`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::context::TestContext;
use super::data::repo;
use super::ray_head::in_ci;

/// The KubeRay versions the testbed runs (testbed/versions.env `KUBERAY_VERSIONS`).
pub fn kuberay_versions() -> Vec<String> {
    let text =
        std::fs::read_to_string(repo().join("testbed/versions.env")).expect("testbed/versions.env");
    text.lines()
        .find_map(|l| l.strip_prefix("KUBERAY_VERSIONS="))
        .expect("KUBERAY_VERSIONS in testbed/versions.env")
        .trim_matches('"')
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// One running testbed: what `testbed/up` wrote into its state directory.
pub struct Testbed {
    pub kuberay: String,
    pub dir: PathBuf,
    pub kubeconfig: PathBuf,
    info: BTreeMap<String, String>,
}

impl Testbed {
    /// The testbed running KubeRay `version` (`v1.5.1`), or `None` after a notice when it is
    /// not running outside CI. Under `CI=true` a missing testbed fails the test.
    pub fn get(version: &str) -> Option<&'static Testbed> {
        static FOUND: OnceLock<BTreeMap<String, Result<Testbed, String>>> = OnceLock::new();
        let found = FOUND.get_or_init(|| {
            kuberay_versions()
                .into_iter()
                .map(|v| {
                    let t = Testbed::open(&v);
                    (v, t)
                })
                .collect()
        });
        match found.get(version) {
            Some(Ok(t)) => Some(t),
            Some(Err(why)) if in_ci() => panic!(
                "the testbed (KubeRay {version}) is required under CI=true: {why}; start it with `make testbed-up`"
            ),
            None => {
                panic!("KubeRay {version} is not one of testbed/versions.env's KUBERAY_VERSIONS")
            }
            Some(Err(why)) => {
                static NOTICE: std::sync::Once = std::sync::Once::new();
                NOTICE.call_once(|| {
                    use std::io::Write;
                    let _ = writeln!(
                        std::io::stderr(),
                        "notice: skipping the real control plane scenarios ({why}); run `make testbed` then `make testbed-up`"
                    );
                });
                None
            }
        }
    }

    fn open(version: &str) -> Result<Testbed, String> {
        let runs = std::env::var_os("NRL_TESTBED_RUNS")
            .map(PathBuf::from)
            .unwrap_or_else(|| repo().join("target/testbed/run"));
        let dir = runs.join(format!("kuberay-{}", version.replace('.', "-")));
        let info_text = std::fs::read_to_string(dir.join("info"))
            .map_err(|_| format!("no testbed at {}", dir.display()))?;
        let info: BTreeMap<String, String> = info_text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let t = Testbed {
            kuberay: version.to_string(),
            kubeconfig: dir.join("kubeconfig"),
            dir,
            info,
        };
        // One cheap request: is the apiserver there?
        let out = t
            .kubectl()
            .args(["get", "--raw", "/readyz"])
            .output()
            .map_err(|e| format!("cannot run kubectl: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "the testbed at {} does not answer: {}",
                t.dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(t)
    }

    pub fn info(&self, key: &str) -> &str {
        self.info
            .get(key)
            .unwrap_or_else(|| panic!("testbed info has no {key}"))
    }

    /// kubectl of the testbed's Kubernetes version, on its kubeconfig (admin).
    pub fn kubectl(&self) -> Command {
        let kubectl = self
            .info
            .get("kubectl")
            .cloned()
            .unwrap_or_else(|| "kubectl".into());
        let mut c = Command::new(kubectl);
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--request-timeout=30s")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null());
        c
    }

    /// A fresh namespace `<prefix>-<kuberay digits>-<random>` (`rj-upload-151-042117`),
    /// deleted (without waiting) when dropped.
    pub fn namespace(&'static self, prefix: &str) -> Namespace {
        let version: String = self.kuberay.chars().filter(char::is_ascii_digit).collect();
        let name = format!("{prefix}-{version}-{:06}", fastrand::u32(..1_000_000));
        kubectl_ok(self.kubectl().args(["create", "namespace", &name]));
        Namespace {
            tb: self,
            name,
            cleanup: Vec::new(),
        }
    }
}

/// Runs `cmd`, panics with its output unless it succeeded, returns stdout.
pub fn kubectl_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("kubectl runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One test's namespace on a testbed.
pub struct Namespace {
    pub tb: &'static Testbed,
    pub name: String,
    cleanup: Vec<PathBuf>,
}

impl Namespace {
    /// A [`TestContext`] whose commands use the testbed's kubeconfig and act in this
    /// namespace unless told otherwise (the kubeconfig's context names no namespace, so
    /// `-n` or the infra's namespace decides; tests pass `-n`).
    pub fn ctx(&self) -> TestContext {
        TestContext::new()
            .env("KUBECONFIG", &self.tb.kubeconfig)
            .timeout(Duration::from_secs(300))
            .columns(200)
    }

    /// kubectl acting in this namespace.
    pub fn kubectl(&self) -> Command {
        let mut c = self.tb.kubectl();
        c.args(["-n", &self.name]);
        c
    }

    /// `kubectl get KIND NAME -o json` in this namespace, `None` when it does not exist.
    pub fn get(&self, kind: &str, name: &str) -> Option<Value> {
        let out = self
            .kubectl()
            .args(["get", kind, name, "-o", "json", "--ignore-not-found"])
            .output()
            .expect("kubectl runs");
        assert!(
            out.status.success(),
            "kubectl get {kind} {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if out.stdout.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        Some(serde_json::from_slice(&out.stdout).expect("kubectl prints JSON"))
    }

    /// `kubectl get KIND -l SELECTOR -o json` items in this namespace.
    pub fn list(&self, kind: &str, selector: &str) -> Vec<Value> {
        let mut cmd = self.kubectl();
        cmd.args(["get", kind, "-o", "json"]);
        if !selector.is_empty() {
            cmd.args(["-l", selector]);
        }
        let v: Value = serde_json::from_str(&kubectl_ok(&mut cmd)).expect("kubectl prints JSON");
        v["items"].as_array().cloned().unwrap_or_default()
    }

    /// Apply YAML to this namespace (server-side, field manager `test`).
    pub fn apply(&self, yaml: &str) -> Output {
        use std::io::Write;
        let mut child = self
            .kubectl()
            .args(["apply", "--server-side", "--field-manager=test", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(yaml.as_bytes())
            .expect("write the manifest");
        child.wait_with_output().expect("kubectl ends")
    }

    /// Poll `f` (a kubectl read, cheap against a local apiserver) until it returns `Some`
    /// or `timeout` passes. Test-side waiting only; nrl itself uses watches.
    pub fn eventually<T>(
        &self,
        timeout: Duration,
        what: &str,
        mut f: impl FnMut(&Namespace) -> Option<T>,
    ) -> T {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(t) = f(self) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?} waiting for {what} in namespace {}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Make `dashboard` (`http://127.0.0.1:PORT`, a real Ray head or the stub) stand for the
    /// dashboard of every Ray head in this namespace: for nrl, the apiserver's port-forward
    /// to port 8265 of any pod here reaches it (kwok `ClusterPortForward`); for the operator,
    /// `<svc>.<ns>.svc.cluster.local:8265` through the dashboard proxy reaches it.
    pub fn attach_dashboard(&mut self, dashboard: &str) {
        let target = dashboard
            .strip_prefix("http://")
            .expect("a http:// dashboard URL");
        let (host, port) = target.rsplit_once(':').expect("host:port");
        assert!(
            host == "127.0.0.1",
            "dashboards must be on loopback, not {host}"
        );
        let routes = Path::new(self.tb.info("routes")).join(&self.name);
        std::fs::create_dir_all(&routes).expect("the routes directory");
        std::fs::write(routes.join("_default"), format!("8265 {target}\n"))
            .expect("write the route");
        self.cleanup.push(routes);
        let cpf = format!(
            r#"apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterPortForward
metadata:
  name: dashboard-{ns}
spec:
  selector:
    matchNamespaces: [{ns}]
  forwards:
  - ports: [8265]
    target: {{address: 127.0.0.1, port: {port}}}
"#,
            ns = self.name
        );
        let out = self.apply(&cpf);
        assert!(
            out.status.success(),
            "ClusterPortForward: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Make `pods/exec` into any pod of this namespace run the command on this machine, in
    /// `workdir` (kwok `ClusterExec`, `local`): the exec submitter's and the dev pod's
    /// commands really run.
    pub fn attach_exec(&self, workdir: &Path) {
        let ce = format!(
            r#"apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: exec-{ns}
spec:
  selector:
    matchNamespaces: [{ns}]
  execs:
  - local:
      workDir: {dir}
"#,
            ns = self.name,
            dir = workdir.display()
        );
        let out = self.apply(&ce);
        assert!(
            out.status.success(),
            "ClusterExec: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self
            .tb
            .kubectl()
            .args([
                "delete",
                "clusterportforward",
                &format!("dashboard-{}", self.name),
                "--ignore-not-found",
                "--wait=false",
            ])
            .output();
        let _ = self
            .tb
            .kubectl()
            .args([
                "delete",
                "clusterexec",
                &format!("exec-{}", self.name),
                "--ignore-not-found",
                "--wait=false",
            ])
            .output();
        let _ = self
            .tb
            .kubectl()
            .args(["delete", "namespace", &self.name, "--wait=false"])
            .output();
        for p in &self.cleanup {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}
