//! The test-facing methods of [`FakeK8s`]: direct state access, scripting the simulations,
//! faults, authorization, the request log, and waiting.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::access::Denial;
use super::config::{ClusterFate, ForwardRule, JobScript, PodFate, RayJobScript, Timings};
use super::delete::{DeleteOpts, Propagation};
use super::faults::{Fault, FaultAction, FaultMatch, RequestRecord};
use super::meta::{name_of, namespace_of};
use super::resources::{self, NAMESPACES, PODS, ResourceType};
use super::selectors::{LabelSelector, Selectors};
use super::state::{PatchType, WriteOpts, lock};
use super::{FakeK8s, logs, patch, sim};

/// The field manager direct state changes are recorded under.
pub const TEST_MANAGER: &str = "fake-k8s-test";

fn rt_for(api_version: &str, kind: &str) -> &'static ResourceType {
    resources::by_kind(api_version, kind)
        .unwrap_or_else(|| panic!("the fake does not serve {api_version} {kind}"))
}

impl FakeK8s {
    // ---- objects ------------------------------------------------------------------------

    /// An object as stored (status and managedFields included).
    pub fn get(&self, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
        self.state.get(rt_for(api_version, kind), ns, name).ok()
    }

    /// A typed object, e.g. `fake.get_as::<Pod>("default", "p")`.
    pub fn get_as<K>(&self, ns: &str, name: &str) -> Option<K>
    where
        K: kube::Resource<DynamicType = ()> + DeserializeOwned,
    {
        let v = self.get(&K::api_version(&()), &K::kind(&()), ns, name)?;
        serde_json::from_value(v).ok()
    }

    /// Objects of a kind (all namespaces when `ns` is `None`) matching a label selector.
    pub fn list(
        &self,
        api_version: &str,
        kind: &str,
        ns: Option<&str>,
        label_selector: &str,
    ) -> Vec<Value> {
        let sel = Selectors::parse(Some(label_selector), None)
            .unwrap_or_else(|e| panic!("bad selector: {:?}", e.status));
        self.state.list(rt_for(api_version, kind), ns, &sel).0
    }

    /// Pods in a namespace matching a label selector.
    pub fn pods(&self, ns: &str, label_selector: &str) -> Vec<Value> {
        self.list("v1", "Pod", Some(ns), label_selector)
    }

    /// Create or replace an object (status included), as a controller would. Namespaced
    /// objects without a namespace go to `default`.
    pub fn put(&self, mut obj: Value) -> Value {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = obj
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let rt = rt_for(&api_version, &kind);
        if rt.namespaced && namespace_of(&obj).is_empty() {
            obj["metadata"]["namespace"] = json!("default");
        }
        self.state
            .put_raw(rt, obj, TEST_MANAGER)
            .unwrap_or_else(|e| panic!("fake put {kind}: {}", e.status))
    }

    /// `put` for a typed object (k8s-openapi types serialize apiVersion and kind).
    pub fn put_as<K: Serialize>(&self, obj: &K) -> Value {
        self.put(serde_json::to_value(obj).unwrap_or_else(|e| panic!("serializing: {e}")))
    }

    /// Edit an object in place (status included).
    pub fn edit(
        &self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
        f: impl FnOnce(&mut Value),
    ) -> Value {
        self.state
            .mutate(rt_for(api_version, kind), ns, name, TEST_MANAGER, f)
            .map(|stored| Value::clone(&stored))
            .unwrap_or_else(|e| panic!("fake edit {kind} {name}: {}", e.status))
    }

    /// Merge-patch the status of an object.
    pub fn patch_status(
        &self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
        status: Value,
    ) -> Value {
        let opts = WriteOpts::status(TEST_MANAGER);
        self.state
            .patch(
                rt_for(api_version, kind),
                ns,
                name,
                PatchType::Merge,
                &json!({"status": status}),
                &opts,
            )
            .unwrap_or_else(|e| panic!("fake patch_status {kind} {name}: {}", e.status))
    }

    /// Delete (with the API's semantics: finalizers, propagation, garbage collection).
    /// Returns false when it did not exist.
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
        propagation: Option<Propagation>,
    ) -> bool {
        let opts = DeleteOpts {
            propagation,
            ..Default::default()
        };
        self.state
            .delete(rt_for(api_version, kind), ns, name, &opts)
            .is_ok()
    }

    pub fn create_namespace(&self, name: &str) {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let _ = self
            .state
            .create(&NAMESPACES, "", ns, &WriteOpts::manager(TEST_MANAGER));
    }

    // ---- pods ---------------------------------------------------------------------------

    /// Put a pod in a phase (Pending, Running, Succeeded, Failed) with matching container
    /// states; `Failed` exits with code 1.
    pub fn set_pod_phase(&self, ns: &str, name: &str, phase: &str) {
        let pod = self
            .state
            .get(&PODS, ns, name)
            .unwrap_or_else(|_| panic!("no pod {ns}/{name}"));
        let status = sim::kubelet::status_for_phase(
            &self.state,
            &pod,
            phase,
            if phase == "Failed" { 1 } else { 0 },
        );
        self.edit("v1", "Pod", ns, name, |o| o["status"] = status);
    }

    /// Append a line to a container's log (the pod's only container when `None`).
    pub fn append_pod_log(&self, ns: &str, pod: &str, container: Option<&str>, line: &str) {
        let container = match container {
            Some(c) => c.to_string(),
            None => {
                let p = self
                    .state
                    .get(&PODS, ns, pod)
                    .unwrap_or_else(|_| panic!("no pod {ns}/{pod}"));
                p.pointer("/spec/containers/0/name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            }
        };
        logs::append(&self.state, ns, pod, &container, &[line.to_string()]);
    }

    /// Lines of the log of the previous (terminated) run of `container`, served for
    /// `previous=true`.
    pub fn append_previous_log(&self, ns: &str, pod: &str, container: &str, lines: &[&str]) {
        let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        logs::append(&self.state, ns, pod, &logs::previous_key(container), &lines);
    }

    // ---- scripting the simulations --------------------------------------------------------

    pub fn set_timings(&self, f: impl FnOnce(&mut Timings)) {
        f(&mut lock(&self.state.timings));
    }

    /// What the KubeRay simulation does with RayClusters whose name matches `glob`.
    pub fn set_cluster_fate(&self, glob: &str, fate: ClusterFate) {
        lock(&self.state.rules).clusters.set(glob, fate);
    }

    /// Queue RayJobs whose name matches `glob` as Kueue would: they are created suspended
    /// and admitted (`spec.suspend: false`) `admit_after` later (`None`: never).
    pub fn set_kueue(&self, glob: &str, admit_after: Option<Duration>) {
        lock(&self.state.rules)
            .kueue
            .set(glob, Some(admit_after.unwrap_or(Duration::MAX)));
    }

    /// How Ray jobs of RayJobs whose name matches `glob` end (fake runner).
    pub fn set_rayjob_script(&self, glob: &str, script: RayJobScript) {
        lock(&self.state.rules).ray_jobs.set(glob, script);
    }

    /// How pods of batch Jobs whose name matches `glob` run and exit.
    pub fn set_job_script(&self, glob: &str, script: JobScript) {
        lock(&self.state.rules).jobs.set(glob, script);
    }

    /// What the kubelet does with pods matching a label selector (first rule set wins).
    pub fn set_pod_fate(&self, label_selector: &str, fate: PodFate) {
        let sel = LabelSelector::parse(label_selector)
            .unwrap_or_else(|e| panic!("bad selector: {:?}", e.status));
        lock(&self.state.rules).pods.insert(0, (sel, fate));
    }

    /// Use a real Ray dashboard (`http://127.0.0.1:PORT`): RayJobs are submitted to it, and
    /// port 8265 of every Ray head pod forwards to it. `None` goes back to the fake runner.
    pub fn use_ray_dashboard(&self, url: Option<&str>) {
        lock(&self.state.rules).ray_dashboard = url.map(str::to_string);
    }

    /// Forward `port` of pods whose name matches `pod_glob` in `ns` to a local address.
    pub fn forward_port(&self, ns: &str, pod_glob: &str, port: u16, target: SocketAddr) {
        lock(&self.state.forwards).insert(
            0,
            ForwardRule {
                namespace: ns.to_string(),
                pod_name: Some(pod_glob.to_string()),
                selector: None,
                port,
                target,
            },
        );
    }

    /// Forward `port` of pods matching a label selector (e.g. `ray.io/node-type=head`).
    pub fn forward_port_by_labels(
        &self,
        ns: &str,
        label_selector: &str,
        port: u16,
        target: SocketAddr,
    ) {
        let sel = LabelSelector::parse(label_selector)
            .unwrap_or_else(|e| panic!("bad selector: {:?}", e.status));
        lock(&self.state.forwards).insert(
            0,
            ForwardRule {
                namespace: ns.to_string(),
                pod_name: None,
                selector: Some(sel),
                port,
                target,
            },
        );
    }

    // ---- faults and authorization ---------------------------------------------------------

    /// Apply `action` to requests matching `matcher`, `times` times (`None`: until cleared).
    pub fn inject(&self, matcher: FaultMatch, action: FaultAction, times: Option<usize>) {
        lock(&self.state.faults).push(Fault {
            matcher,
            action,
            remaining: times,
        });
    }

    /// The next `times` matching requests fail with `status` (5xx) or 429.
    pub fn fail_next(&self, matcher: FaultMatch, status: u16, times: usize) {
        let action = if status == 429 {
            FaultAction::TooManyRequests {
                retry_after_secs: 1,
            }
        } else {
            FaultAction::Status(status)
        };
        self.inject(matcher, action, Some(times));
    }

    pub fn clear_faults(&self) {
        lock(&self.state.faults).clear();
    }

    /// Deny a verb on a resource (`pods`, `pods/exec`, `*`) in a namespace (`*` for all):
    /// requests get 403 and SelfSubjectAccessReview says not allowed.
    pub fn deny(&self, verb: &str, resource: &str, namespace: &str) {
        lock(&self.state.denials).push(Denial {
            user: None,
            verb: verb.to_string(),
            resource: resource.to_string(),
            namespace: namespace.to_string(),
        });
    }

    /// `deny` for one user only, e.g. an impersonated service account
    /// (`system:serviceaccount:default:default`). Deny `impersonate` on `serviceaccounts`
    /// (or `users`) to refuse impersonation itself.
    pub fn deny_as(&self, user: &str, verb: &str, resource: &str, namespace: &str) {
        lock(&self.state.denials).push(Denial {
            user: Some(user.to_string()),
            verb: verb.to_string(),
            resource: resource.to_string(),
            namespace: namespace.to_string(),
        });
    }

    pub fn allow_all(&self) {
        lock(&self.state.denials).clear();
    }

    // ---- request log and watch history ----------------------------------------------------

    pub fn request_log(&self) -> Vec<RequestRecord> {
        lock(&self.state.requests).clone()
    }

    pub fn clear_request_log(&self) {
        lock(&self.state.requests).clear();
    }

    /// Logged requests matching a predicate.
    pub fn requests(&self, f: impl Fn(&RequestRecord) -> bool) -> Vec<RequestRecord> {
        lock(&self.state.requests)
            .iter()
            .filter(|r| f(r))
            .cloned()
            .collect()
    }

    pub fn current_resource_version(&self) -> u64 {
        lock(&self.state.store).current_rv()
    }

    /// Forget the event history: watches from any older resourceVersion get 410 Gone.
    pub fn compact_history(&self) {
        lock(&self.state.store).compact_all();
    }

    pub fn set_history_window(&self, events: usize) {
        lock(&self.state.store).set_history_window(events);
    }

    // ---- waiting --------------------------------------------------------------------------

    /// Poll `f` every 10 ms until it holds or `timeout` passes; returns whether it held.
    pub async fn wait_until(&self, timeout: Duration, mut f: impl FnMut(&FakeK8s) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if f(self) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// `wait_until` for synchronous tests.
    pub fn wait_until_blocking(
        &self,
        timeout: Duration,
        mut f: impl FnMut(&FakeK8s) -> bool,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if f(self) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A JSON field of an object (`"status.state"`), for waits.
    pub fn field(
        &self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
        dotted: &str,
    ) -> Option<Value> {
        let obj = self.get(api_version, kind, ns, name)?;
        super::meta::get_path(&obj, dotted).cloned()
    }

    /// Apply a merge patch to a local JSON value (handy for building expected objects).
    pub fn merge(target: &mut Value, patch_doc: &Value) {
        patch::merge_patch(target, patch_doc);
    }

    /// The name of the first pod matching a label selector in `ns`.
    pub fn pod_name(&self, ns: &str, label_selector: &str) -> Option<String> {
        self.pods(ns, label_selector)
            .first()
            .map(|p| name_of(p).to_string())
    }
}
