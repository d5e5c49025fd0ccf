//! ref-config-render §8, rendering items 16-23. Behaviour nrl keeps is pinned under the
//! item's name; where the reference crashed or produced an object Kubernetes refuses,
//! nrl reports a diagnostic instead and the test is named `..._regression_<what>`.

use nrl::render::validate::validate_object;
use serde_json::{Value, json};

use super::fixtures::*;

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Item 16: the reference printed the shared pull-secret list once with `&id001` and
/// then as `*id001`. nrl's trees are values: each pod spec prints the list in full.
#[test]
fn test_shared_pull_secrets_regression_no_yaml_anchors() {
    let cfg = Fixture::manifest()
        .set("imagePullSecrets", json!(["a"]))
        .load();
    let m = nrl::render::raycluster::raycluster(
        &cfg,
        training(&cfg),
        nrl::config::schema::Role::Training,
    )
    .expect("renders");
    let text = nrl::render::emit::to_yaml(&m);
    assert!(!text.contains("&id") && !text.contains("*id"), "{text}");
    assert_eq!(text.matches("imagePullSecrets:\n").count(), 2, "{text}");
    assert_eq!(text.matches("- name: a\n").count(), 2, "{text}");
}

/// Item 17: a RayCluster overwrites container images, a Deployment only fills missing
/// ones; init containers get nothing in either.
#[test]
fn test_images_overwritten_in_rayclusters_filled_in_deployments_never_in_init_containers() {
    let init = json!([{"name": "init", "image": "busybox:1"}]);
    let m = raycluster(Fixture::manifest().set(
        "kuberay.training.spec.headGroupSpec.template.spec.initContainers",
        init.clone(),
    ));
    let head = &m["spec"]["headGroupSpec"]["template"]["spec"];
    assert_eq!(head["containers"][0]["image"], "registry/img:new");
    assert_eq!(head["initContainers"], init);

    let d = deployment(
        Fixture::deployment()
            .set(
                "deployments.sidecar.spec.template.spec.containers.0.image",
                json!("custom:v1"),
            )
            .set(
                "deployments.sidecar.spec.template.spec.initContainers",
                json!([{"name": "init"}]),
            ),
    );
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], "custom:v1");
    assert_eq!(pod["initContainers"], json!([{"name": "init"}]));
}

/// Item 18: keys nrl adds go to the end of their mapping; existing keys keep their place.
#[test]
fn test_added_keys_are_appended_existing_keys_keep_their_place() {
    let mut f = Fixture::manifest();
    f.set(
        "kuberay.training.spec.headGroupSpec.template.spec.containers.0",
        json!({"name": "ray-head", "volumeMounts": []}),
    )
    .set(
        "kuberay.training.spec.workerGroupSpecs.0",
        json!({"template": {"spec": {"containers": [{"name": "w", "image": "old"}]}},
               "replicas": 2}),
    )
    .set("kuberay.training.segmentSize", json!(1));
    let m = raycluster(&f);
    let head = &m["spec"]["headGroupSpec"]["template"];
    assert_eq!(
        keys(head),
        ["spec", "metadata"],
        "template metadata after spec"
    );
    assert_eq!(
        keys(&head["spec"]["containers"][0]),
        ["name", "volumeMounts", "image"]
    );
    let w0 = &m["spec"]["workerGroupSpecs"][0];
    assert_eq!(
        keys(w0),
        [
            "template",
            "replicas",
            "groupName",
            "minReplicas",
            "maxReplicas"
        ],
        "replicas keeps its place; the rest is appended after template"
    );
    assert_eq!(
        w0["groupName"], "workers-segment-0",
        "an unnamed group is `workers`"
    );
    assert_eq!(
        keys(&w0["template"]["spec"]["containers"][0]),
        ["name", "image"]
    );
}

/// Item 19: on pod templates existing labels win; on object metadata the cluster's
/// labels win over infra's, and either may overwrite managed-by; annotations never
/// reach pod templates.
#[test]
fn test_label_precedence_and_annotations_stay_off_pod_templates() {
    let m = raycluster(
        Fixture::manifest()
            .set(
                "kuberay.training.spec.headGroupSpec.template.metadata",
                json!({"labels": {"team": "template"}}),
            )
            .set(
                "labels",
                json!({"team": "infra", "app.kubernetes.io/managed-by": "me"}),
            )
            .set("kuberay.training.labels", json!({"team": "cluster"}))
            .set("annotations", json!({"note": "x"})),
    );
    assert_eq!(
        m["metadata"]["labels"],
        json!({"app.kubernetes.io/managed-by": "me", "team": "cluster"})
    );
    let head_meta = &m["spec"]["headGroupSpec"]["template"]["metadata"];
    assert_eq!(head_meta["labels"]["team"], "template");
    assert_eq!(keys(head_meta), ["labels"]);
    let worker_meta = &m["spec"]["workerGroupSpecs"][0]["template"]["metadata"];
    assert_eq!(worker_meta["labels"]["team"], "cluster");
    assert!(worker_meta.get("annotations").is_none());
}

/// Item 20: only worker groups and the two magic claim names count; one object per
/// kind; names embed cluster and role; RoCE asks for 8 `roce.networking.k8s.aws` devices.
#[test]
fn test_dra_objects_from_worker_claims_only() {
    let claims = json!([
        {"name": "roce-channel", "resourceClaimTemplateName": "x"},
        {"name": "compute-domain-channel"},
        {"name": "other", "resourceClaimTemplateName": "keep"},
        {"name": "roce-channel"},
    ]);
    let f = {
        let mut f = Fixture::manifest();
        f.set(
            "kuberay.training.spec.headGroupSpec.template.spec.resourceClaims",
            json!([{"name": "compute-domain-channel", "resourceClaimTemplateName": "head"}]),
        )
        .set(
            "kuberay.training.spec.workerGroupSpecs.0.template.spec.resourceClaims",
            claims,
        );
        f
    };
    let all: Vec<Value> = nrl::render::check_manifests(&f.load())
        .expect("renders")
        .iter()
        .map(|n| n.to_json())
        .collect();
    let kinds: Vec<&str> = all
        .iter()
        .map(|d| d["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        ["ResourceClaimTemplate", "ComputeDomain", "RayCluster"]
    );
    assert_eq!(all[0]["metadata"]["name"], "roce-rc-test-training");
    assert_eq!(
        all[0]["spec"]["spec"]["devices"]["requests"],
        json!([{"exactly": {"count": 8, "deviceClassName": "roce.networking.k8s.aws"}, "name": "roce"}])
    );
    assert_eq!(
        all[1]["metadata"]["name"],
        "compute-domain-rc-test-training"
    );
    assert_eq!(
        all[1]["metadata"]["labels"],
        json!({"app.kubernetes.io/managed-by": "nrl-k8s"})
    );
    let spec = &all[2]["spec"];
    assert_eq!(
        spec["headGroupSpec"]["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"],
        "head"
    );
    let rewritten: Vec<&Value> = spec["workerGroupSpecs"][0]["template"]["spec"]["resourceClaims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| &c["resourceClaimTemplateName"])
        .collect();
    assert_eq!(
        rewritten,
        [
            "roce-rc-test-training",
            "compute-domain-rc-test-training",
            "keep",
            "roce-rc-test-training"
        ]
    );
}

/// Item 21: groups at or under the segment size stay as written (even with disagreeing
/// min/max); `numOfHosts` is ignored; a numeric-string replica count is read.
#[test]
fn test_segment_expansion_edges() {
    let m = raycluster(
        Fixture::manifest()
            .set(
                "kuberay.training.spec.workerGroupSpecs",
                json!([
                    {"groupName": "small", "replicas": 2, "minReplicas": 0, "maxReplicas": 9,
                     "numOfHosts": 4},
                    {"groupName": "big", "replicas": "4", "numOfHosts": 4},
                ]),
            )
            .set("kuberay.training.segmentSize", json!(2)),
    );
    let groups = m["spec"]["workerGroupSpecs"].as_array().expect("groups");
    assert_eq!(groups.len(), 3);
    assert_eq!(groups[0]["maxReplicas"], 9);
    assert_eq!(groups[0]["groupName"], "small");
    for g in &groups[1..] {
        assert_eq!(g["replicas"], 2);
        assert_eq!(g["numOfHosts"], 4);
    }
    assert_eq!(groups[2]["groupName"], "big-segment-1");
}

/// Item 21, where the reference raised a bare ValueError: a replica count that is not a
/// number is a diagnostic at its line.
#[test]
fn test_non_numeric_replicas_regression_segments_diagnostic() {
    let e = try_raycluster(
        Fixture::manifest()
            .set(
                "kuberay.training.spec.workerGroupSpecs.0.replicas",
                json!("many"),
            )
            .set("kuberay.training.segmentSize", json!(2)),
    )
    .expect_err("`many` is not a number");
    assert_eq!(e.code, "nrl::render::segments");
    assert_eq!(e.labels[0].span.text(), "many");
}

/// Item 22: `template: null` in the head group crashed the reference.
#[test]
fn test_head_template_null_regression_template() {
    let f = {
        let mut f = Fixture::manifest();
        f.set("kuberay.training.spec.headGroupSpec.template", json!(null));
        f
    };
    let e = try_raycluster(&f).expect_err("a null template is refused");
    assert_eq!(e.code, "nrl::render::template");
    assert!(
        e.message.contains("headGroupSpec.template"),
        "{}",
        e.message
    );
    assert_eq!(e.labels[0].span.text(), "null");
    assert_eq!(e.labels[0].span.file().name, "catalog.infra.yaml");
    assert!(e.help.is_some());
}

/// Item 22: the same in a worker group.
#[test]
fn test_worker_template_null_regression_template() {
    let e = try_raycluster(Fixture::manifest().set(
        "kuberay.training.spec.workerGroupSpecs.0.template",
        json!(null),
    ))
    .expect_err("a null template is refused");
    assert_eq!(e.code, "nrl::render::template");
    assert!(
        e.message.contains("workerGroupSpecs[0].template"),
        "{}",
        e.message
    );
}

/// Item 22: a Deployment `template: null` is refused the same way (a Deployment without
/// a pod template cannot be created).
#[test]
fn test_deployment_template_null_regression_template() {
    let e =
        try_deployment(Fixture::deployment().set("deployments.sidecar.spec.template", json!(null)))
            .expect_err("a null template is refused");
    assert_eq!(e.code, "nrl::render::template");
    assert_eq!(e.labels[0].span.text(), "null");
}

/// Item 22: a Deployment spec without any template renders without pod labels, image or
/// secrets; its selector is not reconciled (validation then reports the missing template).
#[test]
fn test_deployment_without_template_renders_bare() {
    let f = {
        let mut f = Fixture::deployment();
        f.remove("deployments.sidecar.spec.template")
            .set("imagePullSecrets", json!(["s"]));
        f
    };
    let d = deployment(&f);
    assert_eq!(
        d["spec"],
        json!({"selector": {"matchLabels": {"app": "sidecar"}}})
    );
    let cfg = f.load();
    let node =
        nrl::render::deployment::deployment(&cfg, "sidecar", sidecar(&cfg)).expect("renders");
    let problems = validate_object(&node);
    assert!(
        problems.iter().any(|p| p.message.contains("template")),
        "{:?}",
        problems.iter().map(|p| &p.message).collect::<Vec<_>>()
    );
}

/// Item 23: a port without `containerPort` crashed the reference.
#[test]
fn test_port_without_container_port_regression_service_port() {
    for port in [json!({"name": "http"}), json!({"containerPort": null})] {
        let e = try_service(Fixture::deployment().set(
            "deployments.sidecar.spec.template.spec.containers.0.ports",
            json!([port]),
        ))
        .expect_err("no containerPort");
        assert_eq!(e.code, "nrl::render::service_port");
        assert_eq!(e.labels[0].span.file().name, "catalog.infra.yaml");
        assert!(e.help.as_deref().unwrap_or("").contains("containerPort"));
    }
}

/// Item 23: every container's first unnamed port is `port-0`, so two containers gave the
/// reference a Service Kubernetes refuses ("Duplicate value"); nrl says so before apply.
#[test]
fn test_colliding_port_names_regression_service_port() {
    let e = try_service(Fixture::deployment().set(
        "deployments.sidecar.spec.template.spec.containers",
        json!([
            {"name": "a", "ports": [{"containerPort": 8080}]},
            {"name": "b", "ports": [{"containerPort": 9090}]},
        ]),
    ))
    .expect_err("two ports named port-0");
    assert_eq!(e.code, "nrl::render::service_port");
    assert!(
        e.message.contains("two ports named `port-0`"),
        "{}",
        e.message
    );
    assert!(
        e.labels[0].span.text().contains("9090"),
        "{}",
        e.labels[0].span.text()
    );

    let e = try_service(Fixture::deployment().set(
        "deployments.sidecar.spec.template.spec.containers",
        json!([
            {"name": "a", "ports": [{"containerPort": 8080, "name": "a"}]},
            {"name": "b", "ports": [{"containerPort": 8080, "name": "b"}]},
        ]),
    ))
    .expect_err("port 8080 twice");
    assert!(e.message.contains("port 8080 twice"), "{}", e.message);

    let ok = service(Fixture::deployment().set(
        "deployments.sidecar.spec.template.spec.containers",
        json!([
            {"name": "a", "ports": [{"containerPort": 8080}]},
            {"name": "b", "ports": [{"containerPort": 8080, "protocol": "UDP", "name": "b"}]},
        ]),
    ))
    .expect("a Service");
    assert_eq!(ok["spec"]["ports"][1]["protocol"], "UDP");
}

/// Item 23: protocol defaults to TCP; the Service never gets infra labels.
#[test]
fn test_service_protocol_default_and_labels() {
    let s = service(
        Fixture::deployment()
            .set(
                "deployments.sidecar.spec.template.spec.containers.0.ports",
                json!([{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 80}]),
            )
            .set("labels", json!({"team": "rl"})),
    )
    .expect("a Service");
    let protocols: Vec<&Value> = s["spec"]["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| &p["protocol"])
        .collect();
    assert_eq!(protocols, ["UDP", "TCP"]);
    assert_eq!(
        s["metadata"]["labels"],
        json!({"app.kubernetes.io/managed-by": "nrl-k8s"})
    );
}

/// Everything the catalogue's default fixtures render passes offline validation.
#[test]
fn test_catalogue_fixtures_validate_clean() {
    let mut f = Fixture::manifest();
    for k in ["replicas", "minReplicas", "maxReplicas"] {
        f.set(
            &format!("kuberay.training.spec.workerGroupSpecs.0.{k}"),
            json!(1),
        );
    }
    f.set(
        "deployments.sidecar",
        json!({"name": "my-sidecar", "spec": dbase()}),
    )
    .set("imagePullSecrets", json!(["a"]))
    .set("serviceAccount", json!("sa"));
    let all = nrl::render::check_manifests(&f.load()).expect("renders");
    assert_eq!(all.len(), 3);
    nrl::render::validate::validate_all(&all)
        .unwrap_or_else(|e| panic!("{}", e.render(false, 100)));
}
