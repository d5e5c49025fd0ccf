//! tests/unit/test_manifest.py, cases 51-90 (one module per reference test class).

use super::fixtures::*;
use serde_json::json;

mod envelope {
    use super::*;

    /// 51
    #[test]
    fn test_apiversion_and_kind() {
        let m = raycluster(&Fixture::manifest());
        assert_eq!(m["apiVersion"], "ray.io/v1");
        assert_eq!(m["kind"], "RayCluster");
    }

    /// 52
    #[test]
    fn test_metadata_name_and_namespace() {
        let m = raycluster(Fixture::manifest().set("kuberay.training.name", json!("rc-x")));
        assert_eq!(m["metadata"]["name"], "rc-x");
        assert_eq!(m["metadata"]["namespace"], "ns-patched");
    }

    /// 53
    #[test]
    fn test_labels_merged_from_infra_and_cluster() {
        let m = raycluster(
            Fixture::manifest()
                .set("kuberay.training.labels", json!({"role": "training"}))
                .set("labels", json!({"team": "rl"})),
        );
        let labels = &m["metadata"]["labels"];
        assert_eq!(labels["role"], "training");
        assert_eq!(labels["team"], "rl");
        assert_eq!(labels["app.kubernetes.io/managed-by"], "nrl-k8s");
    }

    /// 54
    #[test]
    fn test_cluster_labels_win_on_collision() {
        let m = raycluster(
            Fixture::manifest()
                .set("kuberay.training.labels", json!({"team": "override"}))
                .set("labels", json!({"team": "rl"})),
        );
        assert_eq!(m["metadata"]["labels"]["team"], "override");
    }

    /// 55
    #[test]
    fn test_managed_by_label_always_present() {
        let m = raycluster(&Fixture::manifest());
        assert_eq!(
            m["metadata"]["labels"],
            json!({"app.kubernetes.io/managed-by": "nrl-k8s"})
        );
    }
}

mod patching {
    use super::*;

    /// 56
    #[test]
    fn test_image_propagates_to_every_container() {
        let m = raycluster(&Fixture::manifest());
        let images = images(&m["spec"]);
        assert_eq!(images.len(), 2);
        assert!(
            images.iter().all(|i| **i == "registry/img:new"),
            "{images:?}"
        );
    }

    /// 57
    #[test]
    fn test_image_pull_secrets_applied() {
        let m = raycluster(Fixture::manifest().set("imagePullSecrets", json!(["a", "b"])));
        for pod in pod_specs(&m["spec"]) {
            assert_eq!(
                pod["imagePullSecrets"],
                json!([{"name": "a"}, {"name": "b"}])
            );
        }
    }

    /// 58
    #[test]
    fn test_image_pull_secrets_skipped_when_empty() {
        let m = raycluster(Fixture::manifest().set(
            "kuberay.training.spec.headGroupSpec.template.spec.imagePullSecrets",
            json!([{"name": "pre"}]),
        ));
        assert_eq!(
            m["spec"]["headGroupSpec"]["template"]["spec"]["imagePullSecrets"],
            json!([{"name": "pre"}])
        );
    }

    /// 59
    #[test]
    fn test_service_account_patched_when_set() {
        let m = raycluster(Fixture::manifest().set("serviceAccount", json!("new-sa")));
        assert_eq!(
            m["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"],
            "new-sa"
        );
    }

    /// 60
    #[test]
    fn test_service_account_untouched_when_unset() {
        let m = raycluster(Fixture::manifest().set(
            "kuberay.training.spec.headGroupSpec.template.spec.serviceAccountName",
            json!("original"),
        ));
        assert_eq!(
            m["spec"]["headGroupSpec"]["template"]["spec"]["serviceAccountName"],
            "original"
        );
    }
}

mod immutability {
    use super::*;

    /// 61: nrl's renderers borrow the validated config immutably, so the caller's spec
    /// cannot change; checked anyway on the value itself.
    #[test]
    fn test_input_spec_not_mutated() {
        let cfg = Fixture::manifest().load();
        let cluster = training(&cfg);
        let before = cluster.spec.clone();
        nrl::render::raycluster::raycluster(&cfg, cluster, nrl::config::schema::Role::Training)
            .expect("renders");
        assert_eq!(cluster.spec, before);
        assert_eq!(
            cluster
                .spec
                .get_path("headGroupSpec.template.spec.containers.0.image")
                .and_then(|n| n.as_str()),
            Some("registry/img:old")
        );
    }

    /// 62
    #[test]
    fn test_two_builds_see_same_input() {
        let cfg = Fixture::manifest().load();
        let role = nrl::config::schema::Role::Training;
        let a = nrl::render::raycluster::raycluster(&cfg, training(&cfg), role).expect("first");
        let b = nrl::render::raycluster::raycluster(&cfg, training(&cfg), role).expect("second");
        assert_eq!(a.to_json(), b.to_json());
    }
}

mod labels_annotations_merge {
    use super::*;

    /// 63
    #[test]
    fn test_annotations_merged_from_infra_and_cluster() {
        let m = raycluster(
            Fixture::manifest()
                .set(
                    "kuberay.training.annotations",
                    json!({"kyverno.io/skip": "true"}),
                )
                .set("annotations", json!({"platform/team": "rl"})),
        );
        assert_eq!(
            m["metadata"]["annotations"],
            json!({"platform/team": "rl", "kyverno.io/skip": "true"})
        );
    }

    /// 64
    #[test]
    fn test_cluster_annotations_win_on_collision() {
        let m = raycluster(
            Fixture::manifest()
                .set("kuberay.training.annotations", json!({"team": "override"}))
                .set("annotations", json!({"team": "infra"})),
        );
        assert_eq!(m["metadata"]["annotations"], json!({"team": "override"}));
    }

    /// 65
    #[test]
    fn test_no_annotations_key_when_empty() {
        let m = raycluster(&Fixture::manifest());
        assert!(m["metadata"].get("annotations").is_none(), "{m}");
    }
}

mod service_account_override {
    use super::*;

    /// 66
    #[test]
    fn test_service_account_overrides_existing_on_head_and_worker() {
        let m = raycluster(
            Fixture::manifest()
                .set(
                    "kuberay.training.spec.headGroupSpec.template.spec.serviceAccountName",
                    json!("old-head"),
                )
                .set(
                    "kuberay.training.spec.workerGroupSpecs.0.template.spec.serviceAccountName",
                    json!("old-wg"),
                )
                .set("serviceAccount", json!("new-sa")),
        );
        for pod in pod_specs(&m["spec"]) {
            assert_eq!(pod["serviceAccountName"], "new-sa");
        }
    }
}

mod segment_splitting {
    use super::*;

    fn with_replicas(replicas: i64, segment: Option<i64>) -> Fixture {
        let mut f = Fixture::manifest();
        for k in ["replicas", "minReplicas", "maxReplicas"] {
            f.set(
                &format!("kuberay.training.spec.workerGroupSpecs.0.{k}"),
                json!(replicas),
            );
        }
        if let Some(s) = segment {
            f.set("kuberay.training.segmentSize", json!(s));
        }
        f
    }

    fn group_names(m: &serde_json::Value) -> Vec<&str> {
        m["spec"]["workerGroupSpecs"]
            .as_array()
            .expect("worker groups")
            .iter()
            .map(|g| g["groupName"].as_str().unwrap_or_default())
            .collect()
    }

    /// 67
    #[test]
    fn test_no_split_when_segment_size_is_none() {
        let m = raycluster(&with_replicas(64, None));
        assert_eq!(group_names(&m), ["gpu-workers"]);
    }

    /// 68
    #[test]
    fn test_split_64_into_4_segments_of_16() {
        let m = raycluster(&with_replicas(64, Some(16)));
        assert_eq!(
            group_names(&m),
            [
                "gpu-workers-segment-0",
                "gpu-workers-segment-1",
                "gpu-workers-segment-2",
                "gpu-workers-segment-3"
            ]
        );
        for g in m["spec"]["workerGroupSpecs"].as_array().expect("groups") {
            assert_eq!(g["replicas"], 16);
            assert_eq!(g["minReplicas"], 16);
            assert_eq!(g["maxReplicas"], 16);
        }
    }

    /// 69
    #[test]
    fn test_no_split_when_replicas_leq_segment_size() {
        let m = raycluster(&with_replicas(8, Some(16)));
        assert_eq!(group_names(&m), ["gpu-workers"]);
    }

    /// 70: a diagnostic (not an exception) that points at the replicas and segmentSize
    /// lines.
    #[test]
    fn test_indivisible_replicas_raises() {
        let f = with_replicas(65, Some(16));
        let e = try_raycluster(&f).expect_err("65 is not a multiple of 16");
        assert_eq!(e.code, "nrl::render::segments");
        assert!(e.message.contains("not evenly divisible"), "{}", e.message);
        let texts: Vec<String> = e.labels.iter().map(|l| l.span.text()).collect();
        assert_eq!(texts, ["65", "16"]);
        assert!(
            e.labels
                .iter()
                .all(|l| l.span.file().name == "catalog.infra.yaml")
        );
        assert!(
            e.help.as_deref().unwrap_or("").contains("80"),
            "{:?}",
            e.help
        );
    }

    /// 71
    #[test]
    fn test_preserves_pod_template() {
        let mut f = with_replicas(32, Some(16));
        f.set(
            "kuberay.training.spec.workerGroupSpecs.0.template.metadata",
            json!({"annotations": {"kai.scheduler/topology": "gb300-topology"}}),
        );
        let m = raycluster(&f);
        let groups = m["spec"]["workerGroupSpecs"].as_array().expect("groups");
        assert_eq!(groups.len(), 2);
        for g in groups {
            assert_eq!(
                g["template"]["metadata"]["annotations"]["kai.scheduler/topology"],
                "gb300-topology"
            );
        }
    }

    /// 72
    #[test]
    fn test_does_not_mutate_input() {
        let cfg = with_replicas(32, Some(16)).load();
        let cluster = training(&cfg);
        nrl::render::raycluster::raycluster(&cfg, cluster, nrl::config::schema::Role::Training)
            .expect("renders");
        let groups = cluster
            .spec
            .get("workerGroupSpecs")
            .and_then(|g| g.as_list())
            .expect("groups");
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].get("replicas").and_then(|r| r.as_i64()), Some(32));
    }

    /// 73
    #[test]
    fn test_images_patched_on_all_segments() {
        let m = raycluster(&with_replicas(32, Some(16)));
        let images = images(&m["spec"]);
        assert_eq!(images.len(), 3, "head + two segments");
        assert!(
            images.iter().all(|i| **i == "registry/img:new"),
            "{images:?}"
        );
    }

    /// 74
    #[test]
    fn test_dra_rewriting_on_all_segments() {
        let mut f = with_replicas(32, Some(16));
        f.set(
            "kuberay.training.spec.workerGroupSpecs.0.template.spec.resourceClaims",
            json!([{"name": "compute-domain-channel", "resourceClaimTemplateName": "placeholder"}]),
        );
        let m = raycluster(&f);
        let groups = m["spec"]["workerGroupSpecs"].as_array().expect("groups");
        assert_eq!(groups.len(), 2);
        for g in groups {
            assert_eq!(
                g["template"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"],
                "compute-domain-rc-test-training"
            );
        }
    }
}

mod build_deployment_manifest {
    use super::*;

    fn pod(m: &serde_json::Value) -> &serde_json::Value {
        &m["spec"]["template"]["spec"]
    }

    /// 75
    #[test]
    fn test_basic_structure() {
        let m = deployment(&Fixture::deployment());
        assert_eq!(m["apiVersion"], "apps/v1");
        assert_eq!(m["kind"], "Deployment");
        assert_eq!(m["metadata"]["name"], "my-sidecar");
        assert_eq!(m["metadata"]["namespace"], "ns-patched");
    }

    /// 76
    #[test]
    fn test_image_default_patched_onto_container() {
        let m = deployment(&Fixture::deployment());
        assert_eq!(pod(&m)["containers"][0]["image"], "registry/img:new");
    }

    /// 77
    #[test]
    fn test_explicit_image_not_overwritten() {
        let m = deployment(Fixture::deployment().set(
            "deployments.sidecar.spec.template.spec.containers.0.image",
            json!("custom:v1"),
        ));
        assert_eq!(pod(&m)["containers"][0]["image"], "custom:v1");
    }

    /// 78
    #[test]
    fn test_image_pull_secrets_patched() {
        let m = deployment(
            Fixture::deployment().set("imagePullSecrets", json!(["secret-a", "secret-b"])),
        );
        assert_eq!(
            pod(&m)["imagePullSecrets"],
            json!([{"name": "secret-a"}, {"name": "secret-b"}])
        );
    }

    /// 79
    #[test]
    fn test_service_account_patched() {
        let m = deployment(Fixture::deployment().set("serviceAccount", json!("my-sa")));
        assert_eq!(pod(&m)["serviceAccountName"], "my-sa");
    }

    /// 80
    #[test]
    fn test_service_account_not_patched_when_none() {
        let m = deployment(&Fixture::deployment());
        assert!(pod(&m).get("serviceAccountName").is_none(), "{m}");
    }

    /// 81
    #[test]
    fn test_labels_merged() {
        let m = deployment(
            Fixture::deployment()
                .set("deployments.sidecar.labels", json!({"team": "infra"}))
                .set("labels", json!({"env": "test"})),
        );
        assert_eq!(
            m["metadata"]["labels"],
            json!({"app.kubernetes.io/managed-by": "nrl-k8s", "env": "test", "team": "infra"})
        );
    }

    /// 82
    #[test]
    fn test_pod_template_labels_merged() {
        let m = deployment(
            Fixture::deployment()
                .set(
                    "deployments.sidecar.spec.template.metadata",
                    json!({"labels": {"existing": "keep"}}),
                )
                .set("deployments.sidecar.labels", json!({"dep": "v1"}))
                .set("labels", json!({"infra": "v2"})),
        );
        let labels = &m["spec"]["template"]["metadata"]["labels"];
        assert_eq!(labels["existing"], "keep");
        assert_eq!(labels["dep"], "v1");
        assert_eq!(labels["infra"], "v2");
        assert_eq!(labels["app.kubernetes.io/managed-by"], "nrl-k8s");
    }

    /// 83
    #[test]
    fn test_existing_pod_label_wins_over_infra() {
        let m = deployment(
            Fixture::deployment()
                .set(
                    "deployments.sidecar.spec.template.metadata",
                    json!({"labels": {"env": "original"}}),
                )
                .set("labels", json!({"env": "overridden"})),
        );
        assert_eq!(
            m["spec"]["template"]["metadata"]["labels"]["env"],
            "original"
        );
    }

    /// 84: `yes` is a string here (quoted in the YAML the schema reads; unquoted it
    /// would be a YAML 1.1 boolean and rejected by the strict string rule).
    #[test]
    fn test_annotations_merged() {
        let f = {
            let mut f = Fixture::deployment();
            f.set("deployments.sidecar.annotations", json!({"note": "hi"}))
                .set("annotations", json!({"global": "yes"}));
            f
        };
        assert!(f.yaml().contains("global: 'yes'"), "{}", f.yaml());
        let m = deployment(&f);
        assert_eq!(m["metadata"]["annotations"]["note"], "hi");
        assert_eq!(m["metadata"]["annotations"]["global"], "yes");
    }

    /// 85
    #[test]
    fn test_does_not_mutate_original_spec() {
        let cfg = Fixture::deployment().load();
        let dep = sidecar(&cfg);
        nrl::render::deployment::deployment(&cfg, "sidecar", dep).expect("renders");
        assert!(
            dep.spec
                .get_path("template.spec.containers.0.image")
                .is_none()
        );
    }
}

mod build_service_for_deployment {
    use super::*;

    /// 86
    #[test]
    fn test_returns_none_when_no_selector() {
        let s = service(Fixture::deployment().remove("deployments.sidecar.spec.selector"));
        assert_eq!(s, None);
    }

    /// 87
    #[test]
    fn test_returns_none_when_no_ports() {
        let s = service(
            Fixture::deployment()
                .remove("deployments.sidecar.spec.template.spec.containers.0.ports"),
        );
        assert_eq!(s, None);
    }

    /// 88
    #[test]
    fn test_basic_service() {
        let s = service(&Fixture::deployment()).expect("a Service");
        assert_eq!(s["apiVersion"], "v1");
        assert_eq!(s["kind"], "Service");
        assert_eq!(s["spec"]["type"], "ClusterIP");
        assert_eq!(s["spec"]["selector"], json!({"app": "sidecar"}));
        assert_eq!(s["metadata"]["name"], "my-sidecar");
        assert_eq!(s["metadata"]["namespace"], "ns-patched");
    }

    /// 89
    #[test]
    fn test_ports_extracted_from_containers() {
        let s = service(Fixture::deployment().set(
            "deployments.sidecar.spec.template.spec.containers.0.ports",
            json!([{"containerPort": 8080, "name": "http"}, {"containerPort": 9090}]),
        ))
        .expect("a Service");
        assert_eq!(
            s["spec"]["ports"],
            json!([
                {"port": 8080, "targetPort": 8080, "protocol": "TCP", "name": "http"},
                {"port": 9090, "targetPort": 9090, "protocol": "TCP", "name": "port-1"},
            ])
        );
    }

    /// 90
    #[test]
    fn test_service_has_managed_by_label() {
        let s = service(
            Fixture::deployment()
                .set("labels", json!({"team": "rl"}))
                .set("deployments.sidecar.labels", json!({"dep": "x"}))
                .set("annotations", json!({"a": "b"})),
        )
        .expect("a Service");
        assert_eq!(
            s["metadata"]["labels"],
            json!({"app.kubernetes.io/managed-by": "nrl-k8s"})
        );
        assert!(s["metadata"].get("annotations").is_none());
    }
}
