//! tests/unit/test_rayjob.py, cases 91-102 (one module per reference test class).
//!
//! `render::rayjob::rayjob` is the port of `build_rayjob_manifest`: it puts the
//! entrypoint it is given into `spec.entrypoint` unchanged. nrl's staging preamble (run
//! id, `launch.env`, the resolved recipe) is added one level up, by
//! `launch::rayjob::manifest::rayjob_manifest`, which these cases do not go through (see
//! tests/it/launch_rayjob.rs for that path).

use indexmap::IndexMap;
use nrl::render::rayjob::RayJobOptions;
use serde_json::json;

use super::fixtures::*;

fn default_job(f: &Fixture) -> serde_json::Value {
    rayjob(f, "python -u foo.py", &RayJobOptions::default())
}

fn extra(pairs: &[(&str, &str)]) -> RayJobOptions {
    RayJobOptions {
        extra_labels: pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<IndexMap<_, _>>(),
        ..RayJobOptions::default()
    }
}

mod envelope {
    use super::*;

    /// 91
    #[test]
    fn test_apiversion_and_kind() {
        let j = default_job(&Fixture::rayjob());
        assert_eq!(j["apiVersion"], "ray.io/v1");
        assert_eq!(j["kind"], "RayJob");
    }

    /// 92
    #[test]
    fn test_name_defaults_to_cluster_name() {
        let j = default_job(Fixture::rayjob().set("kuberay.training.name", json!("rc-x")));
        assert_eq!(j["metadata"]["name"], "rc-x");
    }

    /// 93
    #[test]
    fn test_name_override_wins() {
        let opts = RayJobOptions {
            name: Some("sft-job".into()),
            ..RayJobOptions::default()
        };
        let j = rayjob(&Fixture::rayjob(), "python -u foo.py", &opts);
        assert_eq!(j["metadata"]["name"], "sft-job");
    }

    /// 94
    #[test]
    fn test_namespace_from_infra() {
        let j = default_job(Fixture::rayjob().set("namespace", json!("rl")));
        assert_eq!(j["metadata"]["namespace"], "rl");
    }
}

mod spec {
    use super::*;

    /// 95: the entrypoint is used as given (no preamble at this level).
    #[test]
    fn test_entrypoint_and_defaults() {
        let j = rayjob(
            &Fixture::rayjob(),
            "python run.py",
            &RayJobOptions::default(),
        );
        let spec = &j["spec"];
        assert_eq!(spec["entrypoint"], "python run.py");
        assert_eq!(spec["submissionMode"], "HTTPMode");
        assert_eq!(spec["shutdownAfterJobFinishes"], true);
        assert_eq!(spec["ttlSecondsAfterFinished"], 3600);
        let keys: Vec<&String> = spec.as_object().expect("spec").keys().collect();
        assert_eq!(
            keys,
            [
                "entrypoint",
                "submissionMode",
                "shutdownAfterJobFinishes",
                "ttlSecondsAfterFinished",
                "rayClusterSpec"
            ]
        );
    }

    /// 96
    #[test]
    fn test_shutdown_override() {
        let opts = RayJobOptions {
            shutdown_after_finishes: false,
            ttl_seconds_after_finished: 60,
            ..RayJobOptions::default()
        };
        let j = rayjob(&Fixture::rayjob(), "python run.py", &opts);
        assert_eq!(j["spec"]["shutdownAfterJobFinishes"], false);
        assert_eq!(j["spec"]["ttlSecondsAfterFinished"], 60);
    }

    /// 97
    #[test]
    fn test_ray_cluster_spec_carries_cluster_body() {
        let j = default_job(&Fixture::rayjob());
        let spec = &j["spec"]["rayClusterSpec"];
        assert_eq!(
            spec["headGroupSpec"]["template"]["spec"]["containers"][0]["image"],
            "registry/img:new"
        );
        assert_eq!(
            spec["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["image"],
            "registry/img:new"
        );
    }

    /// 98
    #[test]
    fn test_image_pull_secrets_propagate_inside_ray_cluster_spec() {
        let j = default_job(Fixture::rayjob().set("imagePullSecrets", json!(["secret-a"])));
        assert_eq!(
            j["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["imagePullSecrets"],
            json!([{"name": "secret-a"}])
        );
    }
}

mod labels {
    use super::*;

    /// 99
    #[test]
    fn test_labels_merged_from_infra_cluster_and_extra() {
        let f = {
            let mut f = Fixture::rayjob();
            f.set("kuberay.training.labels", json!({"role": "training"}))
                .set("labels", json!({"team": "rl"}));
            f
        };
        let j = rayjob(&f, "python run.py", &extra(&[("run-id", "r-1")]));
        assert_eq!(
            j["metadata"]["labels"],
            json!({
                "app.kubernetes.io/managed-by": "nrl-k8s",
                "team": "rl",
                "role": "training",
                "run-id": "r-1",
            })
        );
    }

    /// 100
    #[test]
    fn test_extra_labels_win_on_collision() {
        let f = {
            let mut f = Fixture::rayjob();
            f.set("kuberay.training.labels", json!({"team": "cluster"}))
                .set("labels", json!({"team": "infra"}));
            f
        };
        let j = rayjob(&f, "python run.py", &extra(&[("team", "extra")]));
        assert_eq!(j["metadata"]["labels"]["team"], "extra");
    }

    /// 101
    #[test]
    fn test_managed_by_label_always_present() {
        let j = default_job(&Fixture::rayjob());
        assert_eq!(
            j["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "nrl-k8s"
        );
    }
}

mod immutability {
    use super::*;

    /// 102
    #[test]
    fn test_input_spec_not_mutated() {
        let cfg = Fixture::rayjob().load();
        let cluster = training(&cfg);
        let before = cluster.spec.clone();
        nrl::render::rayjob::rayjob(
            &cfg,
            cluster,
            nrl::config::schema::Role::Training,
            nrl::config::node::Node::str("python run.py"),
            &RayJobOptions::default(),
        )
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
}
