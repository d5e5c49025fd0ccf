//! Server-side defaulting and the validation the fake enforces (names, immutable fields), for
//! the kinds nrl renders. Defaults are what make a naive "live == rendered" comparison report
//! drift on a real cluster, so they are filled in here the same way.

use serde_json::{Map, Value, json};

use super::meta::{ApiError, ApiResult, default_field, ensure_map, is_dns1123_subdomain, name_of};
use super::resources::ResourceType;

fn each_in<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flat_map(|a| a.iter_mut())
        .filter_map(Value::as_object_mut)
}

fn default_container(c: &mut Map<String, Value>) {
    default_field(c, "terminationMessagePath", json!("/dev/termination-log"));
    default_field(c, "terminationMessagePolicy", json!("File"));
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let last = image.rsplit('/').next().unwrap_or(image);
    let pull = if !last.contains(':') || last.ends_with(":latest") {
        "Always"
    } else {
        "IfNotPresent"
    };
    if !image.contains('@') {
        default_field(c, "imagePullPolicy", json!(pull));
    } else {
        default_field(c, "imagePullPolicy", json!("IfNotPresent"));
    }
    default_field(c, "resources", json!({}));
    for p in each_in(c, "ports") {
        default_field(p, "protocol", json!("TCP"));
    }
}

/// Pod spec defaults (also applied to pod templates in Deployments and Jobs).
pub fn default_pod_spec(spec: &mut Map<String, Value>, restart_policy: &str) {
    default_field(spec, "restartPolicy", json!(restart_policy));
    default_field(spec, "dnsPolicy", json!("ClusterFirst"));
    default_field(spec, "schedulerName", json!("default-scheduler"));
    default_field(spec, "terminationGracePeriodSeconds", json!(30));
    default_field(spec, "securityContext", json!({}));
    for key in ["containers", "initContainers"] {
        for c in each_in(spec, key) {
            default_container(c);
        }
    }
}

fn default_template(spec: &mut Map<String, Value>, restart_policy: &str) {
    if let Some(tmpl) = spec.get_mut("template") {
        let tspec = ensure_map(tmpl, "spec");
        default_pod_spec(tspec, restart_policy);
    }
}

/// Only the defaults the KubeRay CRD schemas declare (CRDs get no built-in pod defaulting).
fn default_ray_cluster_spec(spec: &mut Map<String, Value>) {
    for wg in each_in(spec, "workerGroupSpecs") {
        default_field(wg, "replicas", json!(0));
        default_field(wg, "minReplicas", json!(0));
        default_field(wg, "maxReplicas", json!(2147483647));
        default_field(wg, "numOfHosts", json!(1));
        default_field(wg, "priority", json!(0));
        crd_template_port_protocols(wg);
    }
    if let Some(head) = spec.get_mut("headGroupSpec").and_then(Value::as_object_mut) {
        crd_template_port_protocols(head);
        if let Some(svc) = head
            .get_mut("headService")
            .and_then(|s| s.get_mut("spec"))
            .and_then(Value::as_object_mut)
        {
            for p in each_in(svc, "ports") {
                default_field(p, "protocol", json!("TCP"));
            }
        }
    }
}

fn crd_template_port_protocols(group: &mut Map<String, Value>) {
    let Some(tspec) = group
        .get_mut("template")
        .and_then(|t| t.get_mut("spec"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for key in ["containers", "initContainers"] {
        for c in each_in(tspec, key) {
            for p in each_in(c, "ports") {
                default_field(p, "protocol", json!("TCP"));
            }
        }
    }
}

/// Fill in server defaults. `cluster_ip` is the address to give a new ClusterIP Service.
pub fn apply_defaults(rt: &ResourceType, obj: &mut Value, cluster_ip: &dyn Fn() -> String) {
    let kind = rt.kind;
    if kind == "Namespace" {
        let spec = ensure_map(obj, "spec");
        default_field(spec, "finalizers", json!(["kubernetes"]));
        let status = ensure_map(obj, "status");
        default_field(status, "phase", json!("Active"));
        return;
    }
    if kind == "Secret" {
        let Some(m) = obj.as_object_mut() else { return };
        default_field(m, "type", json!("Opaque"));
        if let Some(Value::Object(sd)) = m.remove("stringData") {
            use base64::Engine;
            let data = ensure_map(obj, "data");
            for (k, v) in sd {
                let text = v.as_str().unwrap_or_default();
                let enc = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
                data.insert(k, json!(enc));
            }
        }
        return;
    }
    let has_spec = obj.get("spec").is_some();
    if !has_spec && !matches!(kind, "Pod" | "Service" | "Deployment" | "Job") {
        return;
    }
    let spec = ensure_map(obj, "spec");
    match kind {
        "Pod" => default_pod_spec(spec, "Always"),
        "Service" => {
            default_field(spec, "type", json!("ClusterIP"));
            default_field(spec, "sessionAffinity", json!("None"));
            default_field(spec, "internalTrafficPolicy", json!("Cluster"));
            default_field(spec, "ipFamilyPolicy", json!("SingleStack"));
            default_field(spec, "ipFamilies", json!(["IPv4"]));
            if spec.get("clusterIP").is_none() {
                let ip = cluster_ip();
                spec.insert("clusterIP".into(), json!(ip));
                spec.insert("clusterIPs".into(), json!([ip]));
            }
            for p in each_in(spec, "ports") {
                default_field(p, "protocol", json!("TCP"));
                if let Some(port) = p.get("port").cloned() {
                    default_field(p, "targetPort", port);
                }
            }
        }
        "Deployment" => {
            default_field(spec, "replicas", json!(1));
            default_field(spec, "revisionHistoryLimit", json!(10));
            default_field(spec, "progressDeadlineSeconds", json!(600));
            default_field(
                spec,
                "strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
            );
            default_template(spec, "Always");
        }
        "Job" => {
            default_field(spec, "parallelism", json!(1));
            default_field(spec, "completions", json!(1));
            default_field(spec, "backoffLimit", json!(6));
            default_field(spec, "completionMode", json!("NonIndexed"));
            default_field(spec, "suspend", json!(false));
            default_field(spec, "manualSelector", json!(false));
            default_field(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
            default_template(spec, "Never");
        }
        "RayCluster" => default_ray_cluster_spec(spec),
        "RayJob" => {
            default_field(spec, "backoffLimit", json!(0));
            default_field(spec, "submissionMode", json!("K8sJobMode"));
            default_field(spec, "ttlSecondsAfterFinished", json!(0));
            if let Some(rc) = spec
                .get_mut("rayClusterSpec")
                .and_then(Value::as_object_mut)
            {
                default_ray_cluster_spec(rc);
            }
        }
        _ => {}
    }
}

/// Job selectors and labels the Job controller's admission adds on create.
pub fn default_job_selector(obj: &mut Value) {
    let uid = obj
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = name_of(obj).to_string();
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    spec.insert(
        "selector".into(),
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
    );
    if let Some(tmpl) = spec.get_mut("template") {
        let tmeta = ensure_map(tmpl, "metadata");
        let labels = tmeta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            for (k, v) in [
                ("batch.kubernetes.io/controller-uid", &uid),
                ("batch.kubernetes.io/job-name", &name),
                ("controller-uid", &uid),
                ("job-name", &name),
            ] {
                labels.insert(k.into(), json!(v));
            }
        }
    }
}

/// Name and basic shape checks on create.
pub fn validate_new(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    let name = name_of(obj);
    if name.is_empty() {
        return Err(ApiError::invalid(
            rt,
            "",
            "metadata.name",
            "Required value: name or generateName is required",
        ));
    }
    if !is_dns1123_subdomain(name) {
        return Err(ApiError::invalid(
            rt,
            name,
            "metadata.name",
            &format!(
                "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
            ),
        ));
    }
    if rt.kind == "Pod" {
        let has_containers = obj
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty());
        if !has_containers {
            return Err(ApiError::invalid(
                rt,
                name,
                "spec.containers",
                "Required value",
            ));
        }
    }
    Ok(())
}

/// Immutable fields on update, as the real validation rejects changes to them.
pub fn validate_update(
    rt: &ResourceType,
    old: &Value,
    new: &Value,
    binding: bool,
) -> ApiResult<()> {
    let name = name_of(new);
    if rt.kind == "Pod" {
        return pod_spec_update(name, old, new, binding);
    }
    let immutable: &[&str] = match rt.kind {
        "Job" => &["/spec/selector", "/spec/template", "/spec/completionMode"],
        "Deployment" => &["/spec/selector"],
        "Service" => &["/spec/clusterIP"],
        _ => &[],
    };
    for ptr in immutable.iter() {
        if let (Some(a), Some(b)) = (old.pointer(ptr), new.pointer(ptr))
            && a != b
        {
            let field = ptr.trim_start_matches('/').replace('/', ".");
            return Err(ApiError::invalid(rt, name, &field, "field is immutable"));
        }
    }
    Ok(())
}

/// What a Pod update may change in `spec` (kubernetes `pkg/apis/core/validation/validation.go`
/// `ValidatePodUpdate`, `updatablePodSpecFields`; spec §4.9): container and init container
/// images; `activeDeadlineSeconds` set from nothing to a positive value or lowered, never
/// unset; `tolerations` added to; `schedulingGates` removed from; `terminationGracePeriodSeconds`
/// from negative to 1; `nodeSelector` additions while the pod is still gated. Anything else
/// is 422 with a `Forbidden` cause at `spec`. `binding`: the scheduler's write of
/// `nodeName`, which really goes through the `pods/binding` subresource.
fn pod_spec_update(name: &str, old: &Value, new: &Value, binding: bool) -> ApiResult<()> {
    let (Some(o), Some(n)) = (old.get("spec"), new.get("spec")) else {
        return Ok(());
    };
    // `new` with every allowed change undone must equal `old`.
    let mut masked = n.clone();
    for list in ["containers", "initContainers"] {
        if let (Some(Value::Array(mc)), Some(Value::Array(oc))) =
            (masked.get_mut(list), o.get(list))
            && mc.len() == oc.len()
        {
            for (m, oc) in mc.iter_mut().zip(oc) {
                if let (Some(m), Some(img)) = (m.as_object_mut(), oc.get("image")) {
                    m.insert("image".into(), img.clone());
                }
            }
        }
    }
    let restore = |masked: &mut Value, k: &str| match o.get(k) {
        Some(v) => masked[k] = v.clone(),
        None => {
            if let Some(m) = masked.as_object_mut() {
                m.remove(k);
            }
        }
    };
    let int = |v: &Value, k: &str| v.get(k).and_then(Value::as_i64);
    match (
        int(o, "activeDeadlineSeconds"),
        int(n, "activeDeadlineSeconds"),
    ) {
        (None, Some(b)) if b > 0 => restore(&mut masked, "activeDeadlineSeconds"),
        (Some(a), Some(b)) if b > 0 && b <= a => restore(&mut masked, "activeDeadlineSeconds"),
        _ => {}
    }
    let list = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (ot, nt) = (list(o, "tolerations"), list(n, "tolerations"));
    if ot.iter().all(|t| nt.contains(t)) {
        restore(&mut masked, "tolerations");
    }
    let (og, ng) = (list(o, "schedulingGates"), list(n, "schedulingGates"));
    if ng.iter().all(|g| og.contains(g)) {
        restore(&mut masked, "schedulingGates");
    }
    if int(o, "terminationGracePeriodSeconds").is_some_and(|v| v < 0)
        && int(n, "terminationGracePeriodSeconds") == Some(1)
    {
        restore(&mut masked, "terminationGracePeriodSeconds");
    }
    if !og.is_empty() {
        let sel = |v: &Value| {
            v.get("nodeSelector")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let (os, ns) = (sel(o), sel(n));
        if os.iter().all(|(k, v)| ns.get(k) == Some(v)) {
            restore(&mut masked, "nodeSelector");
        }
    }
    if binding && o.get("nodeName").is_none() {
        restore(&mut masked, "nodeName");
    }
    if masked == *o {
        return Ok(());
    }
    let mut changed = Vec::new();
    let keys: std::collections::BTreeSet<&String> = masked
        .as_object()
        .into_iter()
        .flat_map(|m| m.keys())
        .chain(o.as_object().into_iter().flat_map(|m| m.keys()))
        .collect();
    for k in keys {
        if masked.get(k) != o.get(k) {
            changed.push(format!("spec.{k}"));
        }
    }
    let detail = format!(
        "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative) (changed: {})",
        changed.join(", ")
    );
    let mut e = ApiError::new(
        422,
        "Invalid",
        format!("Pod \"{name}\" is invalid: spec: Forbidden: {detail}"),
    );
    e.status["details"] = serde_json::json!({
        "name": name, "kind": "Pod",
        "causes": [{"reason": "FieldValueForbidden", "message": format!("Forbidden: {detail}"), "field": "spec"}]
    });
    Err(e)
}
