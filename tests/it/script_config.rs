//! The `config` and `render` built-ins over the quickstart pair, through scripts.

use crate::support::script_host::{output_of, run};

const LOAD: &str = r#"let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml"});"#;

fn with_cfg(body: &str) -> String {
    output_of(&format!("{LOAD}\n{body}"))
}

#[test]
fn a_pair_loads_and_reads_resolved_values() {
    let out = with_cfg(
        r#"print(type_of(cfg));
           print(cfg.get("grpo.max_num_steps"));
           print(cfg.get("logger.log_dir"));
           print(cfg.get("policy.optimizer.kwargs.lr"));
           print(cfg.get("infra.kuberay.training.name"));
           print(cfg.get("infra.launch.env").QUICKSTART_GREETING);
           print(cfg.namespace); print(cfg.recipe_path); print(cfg.infra_path); print(cfg.overrides.len());
           print(cfg);"#,
    );
    assert_eq!(
        out,
        "Config\n3\nlogs/grpo-3-steps\n0.000001\nalice-quickstart\nhello from launch.env\ndefault\n\
         examples/quickstart/recipe.yaml\nexamples/quickstart/infra.yaml\n0\n\
         Config(examples/quickstart/recipe.yaml, infra examples/quickstart/infra.yaml)\n"
    );
}

#[test]
fn overrides_at_load_and_set_reload_the_pair() {
    let out = output_of(
        r#"let cfg = recipe("examples/quickstart/recipe.yaml",
                            #{infra: "examples/quickstart/infra.yaml", overrides: ["grpo.max_num_steps=7"]});
           print(cfg.get("logger.log_dir"));
           cfg.set("grpo.max_num_steps", 9);
           print(cfg.get("logger.log_dir"));
           cfg.set("infra.labels.team", "rl");
           print(cfg.get("infra.labels.team"));
           cfg.set("logger.log_dir", "odd: value with spaces");
           print(cfg.get("logger.log_dir"));
           cfg.override("+policy.extra=1");
           print(cfg.get("policy.extra"));
           print(cfg.overrides);"#,
    );
    assert_eq!(
        out,
        "logs/grpo-7-steps\nlogs/grpo-9-steps\nrl\nodd: value with spaces\n1\n\
         [\"grpo.max_num_steps=7\", \"grpo.max_num_steps=9\", \"infra.labels.team=rl\", \"logger.log_dir=odd: value with spaces\", \"+policy.extra=1\"]\n"
    );
}

#[test]
fn a_failed_set_leaves_the_handle_unchanged() {
    let out = with_cfg(
        r#"try { cfg.set("grpo.max_num_stpes", 5) } catch (e) { print(e.code); print(e.help) }
           print(cfg.get("grpo.max_num_steps"));
           print(cfg.overrides.len());"#,
    );
    assert_eq!(
        out,
        "nrl::override::missing_key\ndid you mean `grpo.max_num_steps=5`? \
         (to add `grpo.max_num_stpes` as a new key: +grpo.max_num_stpes=5)\n3\n0\n"
    );
}

#[test]
fn explain_shows_the_layers() {
    let out = with_cfg(r#"print(cfg.explain("infra.kuberay.training.name"));"#);
    assert!(
        out.starts_with("infra.kuberay.training.name = \"alice-quickstart\""),
        "{out}"
    );
    assert!(out.contains("examples/quickstart/infra.yaml:"), "{out}");
}

#[test]
fn resolved_views_and_serialisations() {
    let out = with_cfg(
        r#"let r = cfg.resolved();
           print(r.recipe.logger.log_dir);
           print(r.infra.namespace);
           print(cfg.infra().image);
           let y = cfg.to_yaml();
           print(y.index_of("infra:") < y.index_of("recipe:"));
           print(parse_yaml(y).recipe.grpo.max_num_steps);
           print(parse_json(cfg.to_json()).recipe.grpo.max_num_steps);"#,
    );
    assert_eq!(
        out,
        "logs/grpo-3-steps\ndefault\npython:3.11-slim\ntrue\n3\n3\n"
    );
}

#[test]
fn loading_errors_are_diagnostics() {
    let d = run(r#"recipe("examples/quickstart/nope.yaml")"#)
        .result
        .unwrap_err();
    assert_eq!(d.code, "nrl::script::runtime");
    assert!(d.message.contains("cannot read recipe"), "{}", d.message);
    let out = output_of(
        r#"try { recipe("examples/quickstart/recipe.yaml", #{infar: "x"}) } catch (e) { print(e.code); print(e.help) }"#,
    );
    assert_eq!(
        out,
        "nrl::script::option\ndid you mean `infra`? (options: infra, overrides, context)\n"
    );
}

#[test]
fn an_uncaught_config_error_keeps_its_yaml_label() {
    let d = run(
        r#"recipe("examples/quickstart/recipe.yaml", #{infra: "tests/data/diag/unknown_key.yaml"})"#,
    )
    .result
    .unwrap_err();
    let text = d.render(false, 120);
    assert!(text.contains("nrl::script::runtime"), "{text}");
    assert!(text.contains("nrl::config::unknown_key"), "{text}");
    assert!(text.contains("unknown_key.yaml:"), "{text}");
    assert!(text.contains("test.rhai:1:1"), "{text}");
}

#[test]
fn sweeps_expand_into_runs() {
    let out = output_of(r#"print(expand_sweeps(["a=1,2", "b=x,y", "c=3"]));"#);
    assert_eq!(
        out,
        "[[\"a=1\", \"b=x\", \"c=3\"], [\"a=1\", \"b=y\", \"c=3\"], [\"a=2\", \"b=x\", \"c=3\"], [\"a=2\", \"b=y\", \"c=3\"]]\n"
    );
}

#[test]
fn manifests_have_kind_name_yaml_and_validate_clean() {
    let out = with_cfg(
        r#"let ms = cfg.manifests();
           for m in ms { print(`${m} ${m.api_version} ${m.namespace} ${m.metadata.name}`); }
           print(ms[0].validate().len());
           print(cfg.problems().len());
           cfg.validate();
           print(ms[0].yaml().starts_with("apiVersion: ray.io/v1\nkind: RayCluster\n"));
           print(parse_json(ms[0].json()).kind);
           print(ms[0].get("spec.workerGroupSpecs")[0].groupName);
           print(ms[0].get("spec.nothing") == ());
           print(ms[0].to_map().metadata.labels["nrl-k8s/owner"]);
           print(yaml_stream(ms) == ms[0].yaml());
           print(of_kind(ms, "Service").len());"#,
    );
    assert_eq!(
        out,
        "RayCluster/alice-quickstart ray.io/v1 default alice-quickstart\n0\n0\ntrue\nRayCluster\ncpu-workers\ntrue\nalice\ntrue\n0\n"
    );
}

#[test]
fn the_rayjob_of_a_run_stages_the_recipe() {
    let out = with_cfg(
        r#"let j = cfg.rayjob(#{run_id: "r-1", ttl: 60, shutdown: false, labels: #{sweep: "s1"}});
           print(j); print(j.spec.ttlSecondsAfterFinished); print(j.spec.shutdownAfterJobFinishes);
           print(j.metadata.labels.sweep);
           print(j.spec.entrypoint.contains("export NRL_RUN_ID=r-1"));
           print(j.validate().len());
           let generated = cfg.rayjob();
           print(generated.spec.entrypoint.contains("NRL_RUN_ID=recipe-"));
           try { cfg.rayjob(#{ttll: 5}) } catch (e) { print(e.help) }
           try { cfg.rayjob(#{ttl: "soon"}) } catch (e) { print(e.message) }"#,
    );
    assert_eq!(
        out,
        "RayJob/alice-quickstart\n60\nfalse\ns1\ntrue\n0\ntrue\n\
         did you mean `ttl`? (options: run_id, name, ttl, shutdown, labels)\n\
         option `ttl` must be a number of seconds (got string)\n"
    );
}

#[test]
fn invalid_manifests_report_problems() {
    let out = with_cfg(
        r#"let j = cfg.rayjob(#{run_id: "r", name: "a-very-long-rayjob-name-that-is-over-the-forty-seven-limit"});
           let p = j.validate();
           print(p.len() > 0);
           print(p[0].code);"#,
    );
    assert_eq!(out, "true\nnrl::render::name\n");
}
