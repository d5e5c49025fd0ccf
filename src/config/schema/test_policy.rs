//! The global policy of §2.1 (stripping, strict strings, lax ints and bools, nulls, enums,
//! unknown keys, aggregation, rule order) and the diagnostics' codes, spans and help.

use super::test_schema::{err, min_plus, ok, part, yaml};
use super::*;
use crate::config::node::{Node, Value};

fn codes(e: &Diag) -> Vec<&str> {
    std::iter::once(&*e.code)
        .chain(e.related.iter().map(|r| &*r.code))
        .collect()
}

fn help(e: &Diag) -> &str {
    e.help.as_deref().unwrap_or("")
}

mod stripping {
    use super::*;

    #[test]
    fn schema_strings_lists_and_map_entries_are_stripped() {
        let cfg = ok(validate(&min_plus(concat!(
            "imagePullSecrets: ['  nvcr-secret ']\n",
            "serviceAccount: '  sa '\n",
            "labels: {' team ': ' rl  '}\n",
            "launch:\n  entrypoint: |\n    set -eu\n    python run.py\n",
            "deployments: {' tools ': {name: ' d ', spec: {replicas: 1}}}\n",
        ))));
        assert_eq!(cfg.image_pull_secrets, ["nvcr-secret"]);
        assert_eq!(cfg.service_account.as_deref(), Some("sa"));
        assert_eq!(cfg.labels.get("team").map(String::as_str), Some("rl"));
        // A `|` block loses its final newline, as in the reference.
        assert_eq!(
            cfg.launch.entrypoint.as_deref(),
            Some("set -eu\npython run.py")
        );
        assert_eq!(cfg.deployments["tools"].name, "d");
    }

    #[test]
    fn blank_service_account_becomes_empty_not_null() {
        let cfg = ok(validate(&min_plus("serviceAccount: ' '\n")));
        assert_eq!(cfg.service_account.as_deref(), Some(""));
    }

    #[test]
    fn free_form_spec_is_kept_verbatim() {
        let cfg = ok(validate(&min_plus(
            "kuberay:\n  training:\n    name: rc\n    spec: {rayVersion: ' 2.52.0 ', replicas: 4}\n",
        )));
        let ray_version = cfg
            .kuberay
            .training
            .as_ref()
            .and_then(|c| c.spec.get("rayVersion"))
            .and_then(Node::as_str);
        assert_eq!(ray_version, Some(" 2.52.0 "));
    }

    #[test]
    fn enum_values_are_not_stripped() {
        let e = err(validate(&min_plus("scheduler: {kind: ' kai '}\n")));
        assert_eq!(e.code, "nrl::config::enum");
        assert!(help(&e).contains("did you mean `kai`"), "{}", help(&e));
    }
}

mod strict_strings {
    use super::*;

    #[test]
    fn unquoted_float_in_a_string_field_says_to_quote_it() {
        let e = err(validate(&min_plus("rayVersion: 2.52\n")));
        assert_eq!(e.code, "nrl::config::type");
        assert!(
            e.message.contains("`infra.rayVersion` must be a string"),
            "{}",
            e.message
        );
        assert!(help(&e).contains("`rayVersion: \"2.52\"`"), "{}", help(&e));
    }

    #[test]
    fn numbers_and_bools_in_string_maps_and_lists_fail() {
        let e = err(validate(&min_plus(concat!(
            "labels: {v: 1}\n",
            "launch: {env: {X: yes}}\n",
            "imagePullSecrets: [123]\n",
        ))));
        let all: Vec<&Diag> = std::iter::once(&e).chain(&e.related).collect();
        assert_eq!(all.len(), 3);
        assert!(all.iter().all(|d| d.code == "nrl::config::type"));
        assert!(all[0].message.contains("infra.imagePullSecrets.0"));
        assert!(help(all[0]).contains("`- \"123\"`"), "{}", help(all[0]));
        assert!(all[1].message.contains("infra.launch.env.X"));
        // The suggestion quotes what the user wrote (`yes`), not Python's `True`.
        assert!(help(all[1]).contains("`X: \"yes\"`"), "{}", help(all[1]));
        assert!(all[2].message.contains("infra.labels.v"));
    }

    #[test]
    fn override_values_get_shell_quoting_advice() {
        let id = crate::config::source::add_override_source(0, "2.52");
        let node = crate::config::node::Node::spanned(
            Value::Float(2.52),
            Some(crate::config::source::Span::new(id, 0, 4)),
        );
        let mut infra = min_plus("");
        if let Some(m) = infra.as_map_mut() {
            m.insert("rayVersion".into(), node);
        }
        let e = err(validate(&infra));
        assert!(
            help(&e).contains("`'infra.rayVersion=\"2.52\"'`"),
            "{}",
            help(&e)
        );
        assert_eq!(e.location().as_deref(), Some("<override #1>:1:1"));
    }

    #[test]
    fn integer_namespace_is_rejected() {
        let e = err(validate(&yaml("namespace: 123\nimage: x\n")));
        assert_eq!(e.code, "nrl::config::type");
    }

    #[test]
    fn non_string_label_keys_are_rejected() {
        let e = err(validate(&min_plus("labels: {8080: http}\n")));
        assert_eq!(e.code, "nrl::config::type");
        assert!(e.message.contains("key `8080`"), "{}", e.message);
        assert!(help(&e).contains("\"8080\""), "{}", help(&e));
    }
}

mod lax_numbers_and_bools {
    use super::*;
    use crate::config::schema::parse::{cluster, submit};

    #[test]
    fn ints_accept_numeric_strings_integral_floats_and_bools() {
        for (text, want) in [("'18265'", 18265), ("4.0", 4), ("true", 1), ("' 7 '", 7)] {
            let s = ok(part(
                submit,
                "submit",
                &format!("{{localDashboardPort: {text}}}"),
            ));
            assert_eq!(s.local_dashboard_port, want, "{text}");
        }
        for text in ["'4'", "4.0", "true"] {
            let c = ok(part(
                cluster,
                "kuberay.training",
                &format!("{{name: x, spec: {{}}, segmentSize: {text}}}"),
            ));
            assert!(c.segment_size.is_some(), "{text}");
        }
    }

    #[test]
    fn ints_reject_fractions_and_words() {
        for text in ["1.5", "abc", "[1]", "null"] {
            let e = err(part(
                submit,
                "submit",
                &format!("{{localDashboardPort: {text}}}"),
            ));
            assert_eq!(e.code, "nrl::config::type", "{text}");
        }
        let e = err(part(submit, "submit", "{localDashboardPort: 1.5}"));
        assert!(help(&e).contains("fractional part"), "{}", help(&e));
    }

    #[test]
    fn bools_accept_pydantic_spellings() {
        let cases = [
            ("'yes'", true),
            ("'Off'", false),
            ("'T'", true),
            ("'n'", false),
            ("1", true),
            ("0", false),
            ("1.0", true),
            ("on", true),
        ];
        for (text, want) in cases {
            let cfg = ok(validate(&min_plus(&format!(
                "networking: {{hostNetwork: {text}}}\n"
            ))));
            assert_eq!(cfg.networking.host_network, want, "{text}");
        }
    }

    #[test]
    fn bools_reject_other_values() {
        for text in ["2", "'maybe'", "null"] {
            let e = err(validate(&min_plus(&format!(
                "networking: {{nccl_ib_disable: {text}}}\n"
            ))));
            assert_eq!(e.code, "nrl::config::type", "{text}");
        }
    }
}

mod nulls {
    use super::*;

    #[test]
    fn null_is_rejected_for_maps_lists_and_models() {
        for field in [
            "labels",
            "kuberay",
            "scheduler",
            "imagePullSecrets",
            "deployments",
        ] {
            let e = err(validate(&min_plus(&format!("{field}: null\n"))));
            assert_eq!(e.code, "nrl::config::type", "{field}");
            assert!(e.message.contains("not null"), "{}", e.message);
        }
    }

    #[test]
    fn null_in_a_required_field_is_a_missing_value() {
        let e = err(validate(&yaml("namespace: ns\nimage: null\n")));
        assert_eq!(e.code, "nrl::config::required");
        assert!(
            e.message
                .contains("`infra.image` is required, but it is null")
        );
        assert_eq!(e.location().as_deref(), Some("infra.yaml:2:8"));
    }

    #[test]
    fn null_is_accepted_where_optional() {
        let cfg = ok(validate(&min_plus(concat!(
            "rayVersion: null\nserviceAccount: null\n",
            "networking: {nccl_net: null}\n",
            "placement: {affinity: null}\n",
            "kuberay: {training: null, gym: null}\n",
        ))));
        assert_eq!(cfg.ray_version, None);
        assert_eq!(cfg.networking.nccl_net, None);
        assert_eq!(cfg.kuberay.roles().count(), 0);
    }

    #[test]
    fn mandatory_missing_marker_is_an_error_not_a_value() {
        // The reference accepts `image: ???` as the image "???" (§8 item 13); nrl reports
        // OmegaConf's marker as a value that was never set.
        let e = err(validate(&yaml("namespace: ns\nimage: ???\n")));
        assert_eq!(e.code, "nrl::config::required");
        assert!(
            e.message.contains("`infra.image` is `???`"),
            "{}",
            e.message
        );
        assert_eq!(
            e.location().as_deref().map(|l| l.ends_with(":2:8")),
            Some(true)
        );
    }
}

mod enums_and_unknown_keys {
    use super::*;

    #[test]
    fn enum_error_lists_allowed_values_and_suggests_case() {
        let e = err(validate(&min_plus("scheduler: {kind: Kai, queue: q}\n")));
        assert_eq!(e.code, "nrl::config::enum");
        assert!(
            e.message
                .contains("must be 'kai', 'kueue' or 'default', got `Kai`"),
            "{}",
            e.message
        );
        assert!(help(&e).contains("did you mean `kai`?"), "{}", help(&e));
    }

    #[test]
    fn did_you_mean_for_typical_typos() {
        let cases = [
            ("hfCache: {}\n", "hf_cache"),
            ("image_pull_secrets: []\n", "imagePullSecrets"),
            ("imagePullSecret: [s]\n", "imagePullSecrets"),
            ("placement: {nodeSelecter: {}}\n", "nodeSelector"),
            ("kuberay: {trainin: null}\n", "training"),
        ];
        for (text, want) in cases {
            let e = err(validate(&min_plus(text)));
            assert_eq!(e.code, "nrl::config::unknown_key", "{text}");
            let h = help(&e);
            assert!(
                h.contains(&format!("did you mean `{want}`?")),
                "{text}: {h}"
            );
            assert!(
                h.contains(&format!("Write `{want}:` instead")),
                "{text}: {h}"
            );
        }
    }

    #[test]
    fn unknown_key_without_a_near_match_lists_the_fields() {
        let e = err(validate(&min_plus(
            "scheduler: {kind: default, xyzzy: 1}\n",
        )));
        assert!(
            help(&e).contains("accepts only: kind, queue"),
            "{}",
            help(&e)
        );
    }

    #[test]
    fn key_written_one_level_too_high_points_at_its_section() {
        let e = err(validate(&min_plus("queue: team-a\n")));
        assert!(
            help(&e).contains(
                "`queue` belongs under `infra.scheduler`: write it as `scheduler: {queue: ...}`"
            ),
            "{}",
            help(&e)
        );
        let e = err(validate(&min_plus("pvcName: x\n")));
        assert!(
            help(&e).contains("`infra.workspace`, `infra.hf_cache`, `infra.checkpoints`"),
            "{}",
            help(&e)
        );
    }

    /// Only sections with one obvious home are hints: `resources`, its profiles and the
    /// `kuberay` roles are not, so `training:` too high means `kuberay.training`.
    #[test]
    fn section_hints_skip_the_per_role_sections() {
        let e = err(validate(&min_plus("training: {name: t}\n")));
        assert!(
            help(&e).contains("`training` belongs under `infra.kuberay`"),
            "{}",
            help(&e)
        );
        let e = err(validate(&min_plus("resources: {head: {}}\n")));
        assert!(
            help(&e).contains("accepts only: training, generation, gym"),
            "{}",
            help(&e)
        );
        let e = err(validate(&min_plus("kuberay: {name: x}\n")));
        assert!(
            help(&e).contains("accepts only: training, generation, gym"),
            "{}",
            help(&e)
        );
    }

    #[test]
    fn unknown_key_label_points_at_the_key() {
        let e = err(validate(&min_plus(
            "workspace:\n  kind: auto\n  pvc_nam: x\n",
        )));
        assert_eq!(e.location().as_deref(), Some("infra.yaml:5:3"));
        assert_eq!(e.labels[0].span.text(), "pvc_nam");
    }
}

mod aggregation_and_rules {
    use super::*;

    #[test]
    fn three_mistakes_give_three_reports() {
        let e = err(validate(&yaml(concat!(
            "namespace: ns\n",
            "image: img\n",
            "rayVersion: 2.52\n",
            "hfCache: {}\n",
            "kuberay:\n  training:\n    name: rc\n    spec: {}\n    segmentSize: 0\n",
        ))));
        // Unknown keys of a model come first, then its fields in declaration order.
        assert_eq!(
            codes(&e),
            [
                "nrl::config::unknown_key",
                "nrl::config::type",
                "nrl::config::rule"
            ]
        );
        let locs: Vec<String> = std::iter::once(&e)
            .chain(&e.related)
            .filter_map(Diag::location)
            .collect();
        assert_eq!(
            locs,
            ["infra.yaml:4:1", "infra.yaml:3:13", "infra.yaml:9:18"]
        );
        assert!(
            e.related[1]
                .message
                .contains("kuberay.training.segmentSize")
        );
        assert!(
            e.notes[0].contains("2 more infra problems"),
            "{:?}",
            e.notes
        );
    }

    #[test]
    fn nested_rule_failure_is_reported_with_sibling_field_errors() {
        let e = err(validate(&yaml(
            "namespace: ns\nimage: 5\nscheduler: {kind: kai}\n",
        )));
        assert_eq!(codes(&e), ["nrl::config::type", "nrl::config::rule"]);
    }

    #[test]
    fn rules_do_not_run_when_the_model_has_field_errors() {
        let e = err(validate(&min_plus("scheduler: {kind: kai, typo: x}\n")));
        assert_eq!(codes(&e), ["nrl::config::unknown_key"]);
    }

    #[test]
    fn only_the_first_failing_rule_is_reported() {
        let e = err(validate(&min_plus(
            "launch: {mode: attach, codeSource: image}\n",
        )));
        assert_eq!(codes(&e), ["nrl::config::rule"]);
        assert!(e.message.contains("mode=attach"), "{}", e.message);
    }

    #[test]
    fn rule_points_at_the_field_that_decides_it() {
        let e = err(validate(&min_plus(
            "scheduler:\n  kind: kueue\n  queue: ''\n",
        )));
        assert_eq!(e.location().as_deref(), Some("infra.yaml:5:10"));
        let e = err(validate(&min_plus("scheduler:\n  kind: kai\n")));
        assert_eq!(e.location().as_deref(), Some("infra.yaml:4:9"));
    }

    #[test]
    fn missing_required_field_points_at_its_model() {
        let e = err(validate(&min_plus("kuberay:\n  gym:\n    spec: {}\n")));
        assert_eq!(e.code, "nrl::config::required");
        assert!(e.message.contains("`infra.kuberay.gym.name` is required"));
        assert_eq!(e.location().as_deref(), Some("infra.yaml:4:3"));
    }
}

mod cluster_spec_body {
    use super::*;
    use crate::config::schema::parse::cluster;

    #[test]
    fn spec_must_be_a_mapping() {
        for text in ["{name: x}", "{name: x, spec: null}", "{name: x, spec: [1]}"] {
            let e = err(part(cluster, "kuberay.training", text));
            assert!(
                ["nrl::config::required", "nrl::config::type"].contains(&&*e.code),
                "{text}: {}",
                e.code
            );
            assert!(
                e.message.contains("infra.kuberay.training.spec"),
                "{}",
                e.message
            );
        }
    }

    #[test]
    fn spec_top_level_keys_must_be_strings_nested_ones_need_not() {
        let e = err(part(cluster, "kuberay.training", "{name: x, spec: {1: a}}"));
        assert_eq!(e.code, "nrl::config::type");
        let c = ok(part(
            cluster,
            "kuberay.training",
            "{name: x, spec: {ports: {8080: http}}}",
        ));
        assert!(matches!(
            c.spec.get("ports").map(|n| &n.value),
            Some(Value::Map(_))
        ));
    }

    #[test]
    fn blank_cluster_name_is_accepted_as_empty() {
        // §8 item 14: names are checked (DNS-1123, length) before apply, not here.
        let c = ok(part(cluster, "kuberay.training", "{name: '  ', spec: {}}"));
        assert_eq!(c.name, "");
    }

    #[test]
    fn daemon_needs_an_entrypoint() {
        let e = err(part(
            cluster,
            "kuberay.gym",
            "{name: x, spec: {}, daemon: {env: {A: b}}}",
        ));
        assert!(
            e.message
                .contains("`infra.kuberay.gym.daemon.entrypoint` is required")
        );
        let c = ok(part(
            cluster,
            "kuberay.gym",
            "{name: x, spec: {}, daemon: {entrypoint: ' python serve.py ', healthCheckTimeoutS: '60'}}",
        ));
        let d = c
            .daemon
            .as_ref()
            .map(|d| (d.entrypoint.as_str(), d.health_check_timeout_s));
        assert_eq!(d, Some(("python serve.py", 60)));
    }
}

mod roles {
    use super::*;

    #[test]
    fn roles_iterate_generation_gym_training_declared_only() {
        let cfg = ok(validate(&min_plus(
            "kuberay:\n  training: {name: t, spec: {}}\n  generation: {name: g, spec: {}}\n",
        )));
        let seen: Vec<(&str, &str)> = cfg
            .kuberay
            .roles()
            .map(|(r, c)| (r.as_str(), c.name.as_str()))
            .collect();
        assert_eq!(seen, [("generation", "g"), ("training", "t")]);
        assert_eq!(Role::parse("gym"), Some(Role::Gym));
        assert_eq!(Role::parse("Gym"), None);
    }

    #[test]
    fn span_of_finds_infra_paths() {
        let cfg = ok(validate(&min_plus(
            "kuberay:\n  training:\n    name: t\n    spec: {rayVersion: '2.52.0'}\n",
        )));
        let sp = cfg.span_of("kuberay.training.spec.rayVersion");
        assert_eq!(sp.map(|s| s.text()).as_deref(), Some("'2.52.0'"));
        assert_eq!(cfg.span_of("kuberay.gym"), None);
    }
}
