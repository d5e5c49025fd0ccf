//! The `doctor` built-ins and `nrl/rules`: nrl's offline rules as script data, a
//! playbook's own findings at config lines, reports that print as `nrl doctor` prints,
//! and the preflight against the fake API server.

use crate::support::context::nrl;
use crate::support::fake_k8s::FakeK8s;
use crate::support::script_host::{run, run_with};

/// A pair with one error (gpu_mismatch) and one warning (no_tolerations).
const PAIR: &str = r#"let cfg = recipe("tests/data/doctor/gpu_mismatch.recipe.yaml",
                                    #{infra: "tests/data/doctor/no_tolerations.infra.yaml"});"#;

#[test]
fn check_gives_nrls_findings_as_maps() {
    let r = run(&format!(
        r#"{PAIR}
           let f = doctor::check(cfg);
           for x in f {{ print(`${{x.code}} ${{x.severity}} ${{x.location}}`); }}
           print(f[0].fix.contains("gpus_per_node=4"));
           print(f[0].related.len());
           print(f[0].related[0].text);
           print(`${{type_of(f[0].span)}} ${{f[0].span.to_string() == f[0].location}}`);
           print(parse_json(dump_json(f[0])).span == f[0].location);"#
    ));
    r.ok();
    assert_eq!(
        r.stdout(),
        "nrl::doctor::gpu_mismatch error tests/data/doctor/gpu_mismatch.recipe.yaml:3:18\n\
         nrl::doctor::no_tolerations warning tests/data/doctor/no_tolerations.infra.yaml:17:46\n\
         true\n1\n4 GPU(s) per pod in gpu\nSpan true\ntrue\n"
    );
}

#[test]
fn rendered_findings_match_nrl_doctor_offline() {
    let cli = nrl()
        .args(["doctor", "tests/data/doctor/gpu_mismatch.recipe.yaml"])
        .args([
            "--infra",
            "tests/data/doctor/no_tolerations.infra.yaml",
            "--offline",
        ])
        .assert()
        .code(2);
    let expected = String::from_utf8_lossy(&cli.get_output().stdout).into_owned();
    let r = run_with(
        "render.rhai",
        &format!("{PAIR} print(doctor::render(doctor::check(cfg)));"),
        &[],
        |o| {
            o.env = std::sync::Arc::new(nrl::config::env::MapEnv::new([
                ("NRL_USER", "alice"),
                ("HOME", "/nonexistent/nrl-test-home"),
                ("COLUMNS", "100"),
            ]))
        },
    );
    r.ok();
    assert_eq!(r.stdout(), format!("{expected}\n"));
}

#[test]
fn check_options_change_which_rules_apply() {
    let r = run(r#"let cfg = recipe("tests/data/doctor/recipe.yaml",
                                     #{infra: "tests/data/doctor/upload_cd.infra.yaml"});
           print(doctor::check(cfg).map(|f| f.code));
           print(doctor::check(cfg, #{rayjob: true}).map(|f| f.code));
           try { doctor::check(cfg, #{code_source: "ftp"}) } catch (e) { print(e.message) }
           try { doctor::check(cfg, #{code_sorce: "upload"}) } catch (e) { print(e.help) }
           try { doctor::check(cfg, #{repo_root: ".."}) } catch (e) { print(e.code) }"#);
    r.ok();
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "[\"nrl::doctor::upload_unused\"]", "{out}");
    assert_eq!(lines[1], "[]", "a RayJob uploads nothing: {out}");
    assert_eq!(lines[2], "unknown code source `ftp`");
    assert!(lines[3].starts_with("did you mean `code_source`?"), "{out}");
    assert_eq!(lines[4], "nrl::script::file_access");
}

#[test]
fn playbook_findings_point_at_config_lines() {
    let r = run(r#"let cfg = recipe("examples/quickstart/recipe.yaml",
                                     #{infra: "examples/quickstart/infra.yaml"});
           let at = |path| doctor::finding("team::x", "warning", "m", #{cfg: cfg, at: path});
           let a = at.call("infra.kuberay.training.name");
           print(`${a.location} ${a.label}`);
           let b = at.call("policy.optimizer.kwargs.lr");
           print(`${b.location} ${b.label}`);
           let c = at.call("infra.kuberay.gym.daemon");
           print(`${c.location} ${c.label}`);
           let e = doctor::finding("team::z", "error", "m", #{cfg: cfg, at: "infra.namespace",
                                   also: [#{at: "infra.image", label: "and here"}, #{at: "infra.kuberay"}]});
           print(e.related.map(|r| `${r.location} ${r.text}`));
           let d = doctor::finding("team::y", "error", "free", #{fix: "do it", notes: ["n1"]});
           print(`${d.location == ()} ${d.fix} ${d.notes} ${d.severity} ${d.code}`);"#);
    r.ok();
    assert_eq!(
        r.stdout(),
        "examples/quickstart/infra.yaml:18:11 here\n\
         examples/quickstart/base.yaml:8:11 here\n\
         examples/quickstart/infra.yaml:16:1 `gym.daemon` is not set here\n\
         [\"examples/quickstart/infra.yaml:4:8 and here\", \"examples/quickstart/infra.yaml:16:1 also here\"]\n\
         true do it [\"n1\"] error team::y\n"
    );
}

#[test]
fn bad_findings_are_refused_at_the_call() {
    let r = run(
        r#"for args in [["", "error"], ["nrl::doctor::mine", "error"], ["team::a b", "error"],
                                ["team::ok", "fatal"]] {
               try { doctor::finding(args[0], args[1], "m"); print("accepted") }
               catch (e) { print(e.message) }
           }
           try { doctor::finding("team::a", "error", "m", #{at: "infra.namespace"}) }
           catch (e) { print(e.message) }
           try { doctor::render([#{severity: "error"}]) } catch (e) { print(e.message) }"#,
    );
    r.ok();
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("is not a finding code"), "{out}");
    assert!(lines[1].contains("kept for nrl's own rules"), "{out}");
    assert!(lines[2].contains("is not a finding code"), "{out}");
    assert_eq!(
        lines[3],
        "severity must be \"error\" or \"warning\", not `fatal`"
    );
    assert!(lines[4].contains("need `cfg`"), "{out}");
    assert_eq!(lines[5], "a finding has no `code`");
}

#[test]
fn rules_reports_group_and_stop_on_errors() {
    let r = run(&format!(
        r#"import "nrl/rules" as rules;
           {PAIR}
           let f = doctor::check(cfg);
           f.push(doctor::finding("team::gym", "warning", "no gym cluster",
                                  #{{cfg: cfg, at: "infra.kuberay.gym", fix: "declare it"}}));
           print(rules::summary(f));
           print(rules::summary([], "launch checks"));
           print(rules::errors(f).len());
           print(rules::warnings(f).len());
           let n = rules::report(f, "launch checks");
           print(`errors=${{n}}`);
           rules::fail_on_errors(f);
           print("not reached");"#
    ));
    assert_eq!(r.exit(), nrl::diag::Exit::Code(2));
    let out = r.stdout();
    assert!(
        out.starts_with(
            "doctor: 1 error, 2 warnings\nlaunch checks: no problems found\n1\n2\nnrl::doctor::gpu_mismatch\n"
        ),
        "{out}"
    );
    // Errors first, then warnings in order, then the summary with the given title.
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("no {s} in {out}"));
    assert!(at("nrl::doctor::gpu_mismatch") < at("nrl::doctor::no_tolerations"));
    assert!(at("nrl::doctor::no_tolerations") < at("team::gym"));
    assert!(out.contains("`gym` is not set here"), "{out}");
    assert!(
        out.ends_with("launch checks: 1 error, 2 warnings\nerrors=1\n"),
        "{out}"
    );
    assert!(!out.contains("not reached"));
    assert!(
        r.stderr().contains("stopping: 1 error finding(s)"),
        "{}",
        r.stderr()
    );

    let clean = run(r#"import "nrl/rules" as rules;
           print(rules::fail_on_errors([doctor::finding("team::w", "warning", "m")]));"#);
    assert_eq!(clean.stdout(), "1\n");
}

#[test]
fn rules_lists_the_registered_rules() {
    let r = run(r#"let all = doctor::rules();
           print(all.filter(|r| r.stage != "diagnose").len() == all.filter(|r| r.code.starts_with("nrl::doctor::")).len());
           print(all.filter(|r| r.stage == "diagnose").all(|r| r.code.starts_with("nrl::diagnose::")));
           let g = all.filter(|r| r.short == "gpu_mismatch")[0];
           print(`${g.severity} ${g.preflight} ${g.stage}`);"#);
    r.ok();
    assert_eq!(r.stdout(), "true\ntrue\nerror false offline\n");
}

#[test]
fn preflight_reports_missing_objects_from_the_cluster() {
    let fake = FakeK8s::builder().namespace("team-rl").start();
    let kubeconfig = fake.kubeconfig_path().to_path_buf();
    let r = run_with(
        "preflight.rhai",
        r#"let cfg = recipe("tests/data/doctor/recipe.yaml", #{infra: "tests/data/doctor/infra.yaml"});
           let f = doctor::preflight(cfg);
           let missing = f.filter(|x| x.code == "nrl::doctor::missing_object");
           print(missing.len() > 0);
           print(missing.some(|x| x.message.contains("rl-data")));"#,
        &[],
        move |o| o.connect.kubeconfig = Some(kubeconfig),
    );
    r.ok();
    assert_eq!(r.stdout(), "true\ntrue\n");
    let writes: Vec<_> = fake
        .request_log()
        .into_iter()
        .filter(|q| q.method != "GET")
        .filter(|q| q.base_resource() != Some("selfsubjectaccessreviews"))
        .collect();
    assert!(writes.is_empty(), "the preflight only reads: {writes:?}");
}

/// `doctor::check` runs the recipe-key rule through the same library function as
/// `nrl doctor`: the child's line first, the parent's as related.
#[test]
fn check_reports_a_recipe_key_one_edit_from_its_parent() {
    let r = run(
        r#"let cfg = recipe("tests/data/doctor/key_typo/recipe.yaml",
                            #{infra: "tests/data/doctor/infra.yaml"});
           for x in doctor::check(cfg) {
               print(`${x.code} ${x.severity} ${x.location} ${x.related[0].location}`);
           }"#,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "nrl::doctor::recipe_key_typo warning tests/data/doctor/key_typo/recipe.yaml:5:3 \
         tests/data/doctor/key_typo/parent.yaml:4:3\n"
    );
}
