//! The simulated cluster of `nrl script test`: what a test says the cluster holds and
//! how its jobs end, so the reads of a plan-mode run have answers without a cluster.
//!
//! It lives in the run's [`super::plan::Plan`]: in a test, the built-ins that read
//! (`k8s::get`, `k8s::list`, `k8s::wait`, `k8s::logs`, a planned RayJob's `status`,
//! `wait`, `follow` and `log`, a dashboard's `status`, `logs` and `wait`) ask the plan,
//! which answers from what the plan itself applied or deleted, then from here. A test
//! fills it with the `sim` built-ins ([`super::builtins::sim`]); nothing here ever
//! reaches a network.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value as Json;

use crate::config::env::Env;
use crate::diag::{Diag, Result};

/// The user a test runs as (`${user:}`, owner labels, default names).
pub const TEST_USER: &str = "tester";

/// A test's environment: nothing of the shell that runs `nrl script test`, so a test
/// passes or fails the same for everyone; `NRL_USER` is [`TEST_USER`], `HOME` an empty
/// place, and a test adds
/// variables with `sim::env`. Shared by the scripts a test runs (`run_script`).
#[derive(Debug)]
pub struct TestEnv {
    vars: Mutex<HashMap<String, String>>,
}

impl Default for TestEnv {
    fn default() -> Self {
        // HOME and the cache point at a directory that is not created: plan mode reads
        // run records (none there) and writes nothing.
        let home = std::env::temp_dir().join(format!("nrl-script-test-{}", std::process::id()));
        let vars = HashMap::from([
            ("NRL_USER".to_string(), TEST_USER.to_string()),
            ("HOME".to_string(), home.display().to_string()),
            (
                "XDG_CACHE_HOME".to_string(),
                home.join("cache").display().to_string(),
            ),
        ]);
        TestEnv {
            vars: Mutex::new(vars),
        }
    }
}

impl TestEnv {
    pub fn set(&self, name: &str, value: &str) {
        let mut vars = self.vars.lock().unwrap_or_else(|e| e.into_inner());
        vars.insert(name.to_string(), value.to_string());
    }
}

impl Env for TestEnv {
    fn var(&self, name: &str) -> Option<String> {
        let vars = self.vars.lock().unwrap_or_else(|e| e.into_inner());
        vars.get(name).cloned()
    }

    fn service_account_dir(&self) -> PathBuf {
        PathBuf::from("/nonexistent/nrl-script-test/serviceaccount")
    }
}

/// How a simulated job ends: its Ray job status and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnd {
    /// `SUCCEEDED`, `FAILED`, `STOPPED` (or a non-terminal status the job stays in).
    pub status: String,
    pub message: Option<String>,
}

/// Objects present, job ends and logs a test scripted.
#[derive(Debug, Clone, Default)]
pub struct Simulation {
    /// Objects as a server would return them, in the order added (a re-added object
    /// replaces the earlier one).
    objects: Vec<Json>,
    /// RayJob name or Ray submission id → how it ends.
    ends: HashMap<String, JobEnd>,
    /// RayJob name, Ray submission id or pod name → its log.
    logs: HashMap<String, String>,
    /// The environment the test's scripts see.
    env: Arc<TestEnv>,
}

/// The `kind`, `metadata.namespace` and `metadata.name` of an object.
fn identity(obj: &Json) -> (Option<&str>, Option<&str>, Option<&str>) {
    let meta = obj.get("metadata");
    (
        obj.get("kind").and_then(Json::as_str),
        meta.and_then(|m| m.get("namespace")).and_then(Json::as_str),
        meta.and_then(|m| m.get("name")).and_then(Json::as_str),
    )
}

/// Namespaces match when both are known and equal, or either is left open (a test's
/// object without a namespace is in every namespace, as is a read of the current one).
fn same_namespace(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

impl Simulation {
    /// Add an object (a map with `kind` and `metadata.name`); one of the same kind,
    /// namespace and name is replaced.
    pub fn add_object(&mut self, obj: Json) -> Result<()> {
        let (kind, ns, name) = identity(&obj);
        let (Some(kind), Some(name)) = (kind, name) else {
            return Err(Diag::new(
                "nrl::script::sim",
                "a simulated object needs `kind` and `metadata.name`",
            )
            .help("e.g. sim::object(#{kind: \"Pod\", metadata: #{name: \"p\"}, status: #{phase: \"Pending\"}})"));
        };
        let (kind, ns, name) = (kind.to_string(), ns.map(str::to_string), name.to_string());
        self.objects.retain(|o| {
            let (k, n, m) = identity(o);
            !(k == Some(kind.as_str()) && m == Some(name.as_str()) && n == ns.as_deref())
        });
        self.objects.push(obj);
        Ok(())
    }

    /// Remove every object of `kind` named `name` (a planned delete).
    pub fn remove(&mut self, kind: &str, name: &str) {
        self.objects.retain(|o| {
            let (k, _, m) = identity(o);
            !(k == Some(kind) && m == Some(name))
        });
    }

    /// The object of `kind` named `name` (in `namespace` when given).
    pub fn get(&self, kind: &str, namespace: Option<&str>, name: &str) -> Option<Json> {
        self.objects
            .iter()
            .rev()
            .find(|o| {
                let (k, n, m) = identity(o);
                k == Some(kind) && m == Some(name) && same_namespace(n, namespace)
            })
            .cloned()
    }

    /// The objects of `kind` (in `namespace` when given) whose labels match `selector`.
    pub fn list(
        &self,
        kind: &str,
        namespace: Option<&str>,
        selector: Option<&str>,
    ) -> Result<Vec<Json>> {
        let terms = match selector {
            Some(s) => parse_selector(s)?,
            None => Vec::new(),
        };
        Ok(self
            .objects
            .iter()
            .filter(|o| {
                let (k, n, _) = identity(o);
                k == Some(kind) && same_namespace(n, namespace) && terms.iter().all(|t| t.holds(o))
            })
            .cloned()
            .collect())
    }

    /// The RayJob or Ray job `name` ends with `status`.
    pub fn end_job(&mut self, name: &str, status: &str, message: Option<String>) {
        self.ends.insert(
            name.to_string(),
            JobEnd {
                status: status.to_string(),
                message,
            },
        );
    }

    /// How job `name` ends, if the test said.
    pub fn job_end(&self, name: &str) -> Option<JobEnd> {
        self.ends.get(name).cloned()
    }

    /// The log of a RayJob, Ray job or pod named `name`.
    pub fn set_log(&mut self, name: &str, text: &str) {
        self.logs.insert(name.to_string(), text.to_string());
    }

    pub fn log(&self, name: &str) -> Option<String> {
        self.logs.get(name).cloned()
    }

    /// The environment the test's scripts see (give it to their host).
    pub fn env(&self) -> Arc<TestEnv> {
        self.env.clone()
    }

    /// Whether the test scripted anything about job `name` (an end or a log).
    pub fn knows_job(&self, name: &str) -> bool {
        self.ends.contains_key(name) || self.logs.contains_key(name)
    }
}

/// One term of an equality-based label selector.
enum Term {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    Absent(String),
}

impl Term {
    fn holds(&self, obj: &Json) -> bool {
        let label = |k: &str| {
            obj.pointer("/metadata/labels")
                .and_then(|l| l.get(k))
                .and_then(Json::as_str)
                .map(str::to_string)
        };
        match self {
            Term::Equals(k, v) => label(k).as_deref() == Some(v.as_str()),
            Term::NotEquals(k, v) => label(k).as_deref() != Some(v.as_str()),
            Term::Exists(k) => label(k).is_some(),
            Term::Absent(k) => label(k).is_none(),
        }
    }
}

/// `a=b,c!=d,e,!f` (the equality-based selectors; set-based `in (…)` is refused).
fn parse_selector(selector: &str) -> Result<Vec<Term>> {
    let mut terms = Vec::new();
    for raw in selector.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let term = if let Some((k, v)) = raw.split_once("!=") {
            Term::NotEquals(k.trim().to_string(), v.trim().to_string())
        } else if let Some((k, v)) = raw.split_once("==").or_else(|| raw.split_once('=')) {
            Term::Equals(k.trim().to_string(), v.trim().to_string())
        } else if let Some(k) = raw.strip_prefix('!') {
            Term::Absent(k.trim().to_string())
        } else if raw.contains(' ') || raw.contains('(') {
            return Err(Diag::new(
                "nrl::script::sim",
                format!("the simulated cluster does not evaluate the selector term `{raw}`"),
            )
            .help("use equality terms: `a=b`, `a!=b`, `a`, `!a`"));
        } else {
            Term::Exists(raw.to_string())
        };
        terms.push(term);
    }
    Ok(terms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, ns: Option<&str>, labels: Json) -> Json {
        let mut meta = json!({"name": name, "labels": labels});
        if let Some(ns) = ns {
            meta["namespace"] = json!(ns);
        }
        json!({"kind": "Pod", "metadata": meta})
    }

    #[test]
    fn objects_are_found_by_kind_name_and_namespace_and_replaced() {
        let mut s = Simulation::default();
        s.add_object(pod("a", Some("ns1"), json!({"app": "x"})))
            .unwrap();
        s.add_object(pod("b", None, json!({"app": "y"}))).unwrap();
        assert!(s.get("Pod", Some("ns1"), "a").is_some());
        assert!(s.get("Pod", Some("ns2"), "a").is_none());
        assert!(s.get("Pod", Some("ns2"), "b").is_some());
        assert!(s.get("RayJob", None, "a").is_none());
        s.add_object(pod("a", Some("ns1"), json!({"app": "z"})))
            .unwrap();
        assert_eq!(s.list("Pod", None, None).unwrap().len(), 2);
        let z = s.list("Pod", None, Some("app=z")).unwrap();
        assert_eq!(z.len(), 1);
        assert_eq!(s.list("Pod", None, Some("app!=z,app")).unwrap().len(), 1);
        assert_eq!(s.list("Pod", None, Some("!app")).unwrap().len(), 0);
        assert!(s.list("Pod", None, Some("app in (x)")).is_err());
        assert!(s.add_object(json!({"kind": "Pod"})).is_err());
    }

    #[test]
    fn job_ends_and_logs_are_kept_by_name() {
        let mut s = Simulation::default();
        assert!(!s.knows_job("j"));
        s.end_job("j", "FAILED", Some("boom".into()));
        s.set_log("j", "line\n");
        assert!(s.knows_job("j"));
        assert_eq!(s.job_end("j").unwrap().status, "FAILED");
        assert_eq!(s.log("j").as_deref(), Some("line\n"));
    }
}
