//! The `k8s` and `launch` built-ins and `nrl/checklist`, `nrl/teardown` against the fake
//! Kubernetes API server (`support::fake_k8s`).

use crate::support;
use crate::support::context;
use crate::support::fake_k8s::{FakeK8s, RayJobScript};
use crate::support::script_host;
use crate::support::script_host::{Run, run_with};

const LOAD: &str = r#"let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml"});"#;

/// The quickstart with its code "in the image": KubeRay submits the entrypoint itself
/// (HTTPMode), so the fake's scripted runner runs it without a Ray dashboard. (With
/// `codeSource: upload` nrl uploads and submits through the head's dashboard.)
const LOAD_IMAGE: &str = r#"let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml", overrides: ["infra.launch.codeSource=image", "infra.launch.codePath=/opt/code"]});"#;

fn run_on(fake: &FakeK8s, text: &str) -> Run {
    let kubeconfig = fake.kubeconfig_path().to_path_buf();
    run_with("k8s.rhai", text, &[], move |o| {
        o.connect.kubeconfig = Some(kubeconfig)
    })
}

/// (action, target) of each recorded plan step.
fn plan_steps(r: &Run) -> Vec<(String, String)> {
    r.host
        .plan
        .steps()
        .into_iter()
        .map(|s| (s.action, s.target))
        .collect()
}

#[test]
fn objects_are_applied_read_listed_and_deleted() {
    let fake = FakeK8s::start();
    let r = run_on(
        &fake,
        r#"print(k8s::context()); print(k8s::namespace()); print(k8s::banner());
           let cm = #{apiVersion: "v1", kind: "ConfigMap",
                      metadata: #{name: "cfg-a", labels: #{app: "x"}}, data: #{k: "v"}};
           print(k8s::apply(cm).metadata.namespace);
           print(k8s::get("ConfigMap", "cfg-a").data.k);
           print(k8s::get("ConfigMap", "cfg-a", "default").metadata.labels.app);
           print(k8s::get("ConfigMap", "nope") == ());
           print(k8s::list("ConfigMap", #{selector: "app=x"}).len());
           print(k8s::list("ConfigMap", #{selector: "app=y"}).len());
           print(k8s::delete("ConfigMap", "cfg-a"));
           print(k8s::wait("ConfigMap", "cfg-a", "deleted", 10) == ());
           print(k8s::delete("ConfigMap", "cfg-a"));"#,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "fake\ndefault\ncontext `fake`, namespace `default`\ndefault\nv\nx\ntrue\n1\n0\ntrue\ntrue\nfalse\n"
    );
    // The context is announced once, before the first change.
    assert_eq!(
        r.stderr(),
        "acting on context `fake`, namespace `default`\n"
    );
    let applies = fake.requests(|q| q.is_apply());
    assert_eq!(applies.len(), 1);
    assert_eq!(applies[0].name.as_deref(), Some("cfg-a"));
}

#[test]
fn a_raycluster_becomes_ready_and_its_pods_answer_exec_and_logs() {
    let fake = FakeK8s::start();
    let r = run_on(
        &fake,
        &format!(
            r#"{LOAD}
               let applied = k8s::apply(cfg.manifests());
               print(applied.len());
               let rc = k8s::wait("RayCluster", "alice-quickstart", "ready", 30);
               print(rc.status.state);
               let same = k8s::wait("RayCluster", "alice-quickstart",
                                    |o| o != () && "status" in o && o.status.get("state") == "ready", 30);
               print(same.metadata.name);
               let head = k8s::list("Pod", #{{selector: "ray.io/cluster=alice-quickstart,ray.io/node-type=head"}})[0];
               print(head.metadata.labels["ray.io/node-type"]);
               let x = k8s::exec(head.metadata.name, "echo out; echo err >&2; exit 3");
               print(`${{x.code}}|${{x.stdout}}|${{x.stderr}}|${{x.planned}}`);
               let y = k8s::exec(head.metadata.name, ["cat"], #{{stdin: "fed"}});
               print(y.stdout);"#
        ),
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "1\nready\nalice-quickstart\nhead\n3|out\n|err\n|false\nfed\n"
    );

    let head = fake
        .pod_name(
            "default",
            "ray.io/cluster=alice-quickstart,ray.io/node-type=head",
        )
        .expect("head pod");
    for line in ["first line", "second line", "third line"] {
        fake.append_pod_log("default", &head, None, line);
    }
    let r = run_on(
        &fake,
        &format!(
            r#"print(k8s::logs({head:?}));
               print(k8s::logs({head:?}, #{{tail: 1}}));
               let seen = [];
               k8s::logs({head:?}, #{{}}, |line| {{ seen.push(line); line != "second line" }});
               print(seen);"#
        ),
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "first line\nsecond line\nthird line\n\nthird line\n\n[\"first line\", \"second line\"]\n"
    );
}

#[test]
fn plan_mode_records_changes_without_contacting_the_cluster() {
    let fake = FakeK8s::start();
    let kubeconfig = fake.kubeconfig_path().to_path_buf();
    let r = run_with(
        "plan.rhai",
        &format!(
            r#"{LOAD}
               let back = k8s::apply(cfg.manifests()[0]);
               print(back.kind);
               print(k8s::delete("RayCluster", "old"));
               print(k8s::exec("pod-1", ["ls", "/"]).planned);
               let job = launch::rayjob(cfg, #{{run_id: "plan-1"}});
               print(job.status().deployment);
               print(job.delete());"#
        ),
        &[],
        move |o| {
            o.dry_run = true;
            o.connect.kubeconfig = Some(kubeconfig);
        },
    );
    r.ok();
    assert_eq!(r.stdout(), "RayCluster\ntrue\ntrue\nPlanned\ntrue\n");
    assert_eq!(
        plan_steps(&r),
        [
            ("apply".into(), "RayCluster/alice-quickstart".into()),
            ("delete".into(), "RayCluster/old".into()),
            ("exec".into(), "Pod/pod-1".into()),
            ("apply".into(), "RayJob/alice-quickstart".into()),
            ("delete".into(), "RayJob/alice-quickstart".into()),
        ]
    );
    assert!(fake.request_log().is_empty(), "{:?}", fake.request_log());
}

/// Issue 15 item 13: a read in plan mode is refused (no request reaches the API
/// server) unless reads are allowed; then the plan lists it.
#[test]
fn plan_mode_reads_nothing_from_the_cluster_unless_reads_are_allowed() {
    let fake = FakeK8s::start();
    let script = r#"print(k8s::namespace());
        try { k8s::get("ConfigMap", "settings") } catch (e) { print(e.code); print(e.message) }
        try { k8s::list("Pod") } catch (e) { print(e.code) }
        plan_options(#{live_reads: true});
        print(k8s::get("ConfigMap", "settings"));
        print(k8s::list("Pod").len());"#;
    let kubeconfig = fake.kubeconfig_path().to_path_buf();
    let r = run_with("peek.rhai", script, &[], move |o| {
        o.dry_run = true;
        o.connect.kubeconfig = Some(kubeconfig);
    });
    r.ok();
    assert_eq!(
        r.stdout(),
        "default\n\
         nrl::script::plan_live_read\n\
         plan mode: this call would read the Kubernetes API, and a plan touches nothing\n\
         nrl::script::plan_live_read\n\
         \n\
         0\n"
    );
    let verbs: Vec<String> = fake
        .request_log()
        .iter()
        .map(|q| format!("{} {}", q.verb, q.resource.clone().unwrap_or_default()))
        .collect();
    // Only the two reads after `plan_options` reached the server; the plan says so once.
    assert_eq!(verbs, ["get configmaps", "list pods"]);
    assert_eq!(
        plan_steps(&r),
        [("read".to_string(), "the Kubernetes API".to_string())]
    );
}

#[test]
fn a_rayjob_launch_waits_for_the_end_and_the_cluster_goes_away() {
    let fake = FakeK8s::start();
    fake.set_rayjob_script("alice-quickstart", RayJobScript::succeeds());
    let r = run_on(
        &fake,
        &format!(
            r#"import "nrl/checklist" as checklist;
               import "nrl/teardown" as teardown;
               {LOAD_IMAGE}
               let job = launch::rayjob(cfg, #{{run_id: "fake-1", ttl: 0}});
               print(`${{job}} ${{job.planned}} ${{job.shutdown}} ${{job.wandb}}`);
               let st = job.wait(60);
               print(`${{st.deployment}} ${{st.job}} ${{st.exists}}`);
               print(teardown::verify(job, 30).ok);
               let report = checklist::verify(job);
               for p in report.points {{ print(`${{p.ok}} ${{p.point}}: ${{p.detail}}`); }}
               print(report.ok);"#
        ),
    );
    r.ok();
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "RayJob(default/alice-quickstart, run fake-1) false true false"
    );
    assert_eq!(lines[1], "Complete SUCCEEDED true");
    assert_eq!(lines[2], "true");
    assert_eq!(
        lines[3],
        "true objects present: RayJob alice-quickstart in default"
    );
    assert_eq!(
        lines[4],
        "true Ray job RUNNING or SUCCEEDED: job=SUCCEEDED, deployment=Complete"
    );
    assert_eq!(
        lines[5],
        "true wandb run URL: wandb is off (logger.wandb_enabled)"
    );
    // No follow(): no driver log was seen.
    assert!(lines[6].starts_with("false generation finished"), "{out}");
    assert!(
        lines[7].starts_with("true no RayCluster left: RayCluster alice-quickstart-"),
        "{out}"
    );
    assert_eq!(lines[8], "false");
    let stderr = r.stderr();
    assert!(
        stderr.starts_with("acting on context `fake`, namespace `default`\n"),
        "{stderr}"
    );
    // The launch library's start (as `nrl run`), then the script's summary line.
    let applying = stderr
        .find("[rayjob] applying RayJob alice-quickstart in namespace default (HTTPMode)")
        .expect(&stderr);
    let applied = stderr
        .find("applied RayJob/alice-quickstart")
        .expect(&stderr);
    assert!(applying < applied, "{stderr}");
    assert!(
        stderr.contains("[rayjob] alice-quickstart deployment=Complete job=SUCCEEDED"),
        "{stderr}"
    );
    let applied = fake
        .get("ray.io/v1", "RayJob", "default", "alice-quickstart")
        .expect("the RayJob");
    assert!(
        applied["spec"]["entrypoint"]
            .as_str()
            .unwrap()
            .contains("export NRL_RUN_ID=fake-1")
    );
}

#[test]
fn a_failed_rayjob_fails_the_checklist_and_wait_reports_it() {
    let fake = FakeK8s::start();
    fake.set_rayjob_script("alice-quickstart", RayJobScript::fails("OOM"));
    let r = run_on(
        &fake,
        &format!(
            r#"import "nrl/checklist" as checklist;
               {LOAD_IMAGE}
               let job = launch::rayjob(cfg, #{{run_id: "fake-2", shutdown: false}});
               let st = job.wait(60);
               print(`${{st.deployment}} ${{st.job}}`);
               let report = checklist::verify(job);
               print(report.points[1].ok); print(report.points[4].detail);
               print(report.ok);"#
        ),
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "Failed FAILED\nfalse\nskipped: the RayJob keeps its cluster (shutdown: false)\nfalse\n"
    );
}

#[test]
fn cluster_errors_are_diagnostics() {
    let fake = FakeK8s::start();
    let r = run_on(
        &fake,
        r#"try { k8s::get("Gadget", "x") } catch (e) { print(e.code) }
           try { k8s::wait("ConfigMap", "x", "ready", 1) } catch (e) { print(e.code) }
           try { k8s::list("Pod", #{labels: "a=b"}) } catch (e) { print(e.code) }
           try { k8s::wait("ConfigMap", "never", "exists", 1) } catch (e) { print(e.code) }"#,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "nrl::k8s::kind\nnrl::script::condition\nnrl::script::option\nnrl::k8s::timeout\n"
    );
    let r = run_with("k8s.rhai", r#"k8s::get("Pod", "x")"#, &[], |o| {
        o.connect.kubeconfig = Some("/nonexistent/kubeconfig".into())
    });
    let d = r.err();
    let text = d.render(false, 200);
    assert!(text.contains("(nrl::k8s::kubeconfig)"), "{text}");
    assert!(
        d.message
            .starts_with("cannot read kubeconfig /nonexistent/kubeconfig")
    );
}

/// `scripts/launch.rhai` end to end: the fake cluster's KubeRay submits the RayJob's staged
/// entrypoint (the quickstart's stand-in driver) to a real Ray head, the playbook follows
/// the driver log through a port-forward to the head pod (which the fake routes to that
/// dashboard), and the checklist passes.
#[test]
fn the_launch_playbook_runs_on_the_fake_cluster_with_a_real_ray_head() {
    let Some(head) = support::ray_head::shared() else {
        return;
    };
    let fake = FakeK8s::start();
    fake.use_ray_dashboard(Some(head.address()));
    let run_id = format!("e2e-{:08x}", fastrand::u32(..));
    let train = script_host::repo().join("examples/quickstart/train.py");
    let out = context::nrl()
        .envs(fake.env())
        .args(["script", "scripts/launch.rhai", "--"])
        .args(["--recipe", "examples/quickstart/recipe.yaml"])
        .args(["--infra", "examples/quickstart/infra.yaml"])
        .args(["--run-id", &run_id, "--ttl", "0"])
        .arg(format!(
            "infra.launch.entrypoint='python3 {} --config examples/quickstart/recipe.yaml'",
            train.display()
        ))
        .assert();
    let o = out.get_output();
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    let _ = std::fs::remove_dir_all(format!("/tmp/nrl-{run_id}"));
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains(&format!("run id: {run_id}")), "{stdout}");
    assert!(
        stdout.contains("greeting: hello from launch.env"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Processed prompts: 100%| 8/8 [step 3/3]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("deployment=Complete job=SUCCEEDED"),
        "{stdout}"
    );
    assert!(
        stdout.contains("[ok  ] generation finished (Processed prompts: 100%): "),
        "{stdout}"
    );
    assert!(
        stdout.contains("[ok  ] no RayCluster left: RayCluster alice-quickstart-"),
        "{stdout}"
    );
    assert!(
        stdout.ends_with("checklist: all points passed\n"),
        "{stdout}"
    );
    assert!(
        stderr.starts_with("acting on context `fake`, namespace `default`\n"),
        "{stderr}"
    );
}

#[test]
fn a_port_forward_reaches_the_dashboard_behind_a_head_pod() {
    let Some(head) = support::ray_head::shared() else {
        return;
    };
    let fake = FakeK8s::start();
    fake.use_ray_dashboard(Some(head.address()));
    let r = run_on(
        &fake,
        &format!(
            r#"{LOAD}
               k8s::apply(cfg.manifests());
               k8s::wait("RayCluster", "alice-quickstart", "ready", 30);
               let pf = k8s::port_forward(#{{selector: "ray.io/cluster=alice-quickstart,ray.io/node-type=head"}}, 8265);
               print(pf.url == `http://127.0.0.1:${{pf.port}}`);
               let d = ray::dashboard(pf.url);
               print(d.version().version);
               let by_name = k8s::port_forward(k8s::list("Pod", #{{selector: "ray.io/node-type=head"}})[0].metadata.name, 8265);
               print(ray::dashboard(by_name.url).version().version);
               pf.close();
               try {{ k8s::port_forward(1, 8265) }} catch (e) {{ print(e.code) }}"#
        ),
    );
    r.ok();
    assert_eq!(r.stdout(), "true\n4\n4\nnrl::script::type\n");
}

/// Issue 14 item 5: `job.wait()` goes on through `Suspended` (Kueue admits the RayJob
/// later) instead of returning it as the end.
#[test]
fn a_suspended_rayjob_is_waited_on_until_admitted() {
    let fake = FakeK8s::start();
    fake.set_rayjob_script("alice-quickstart", RayJobScript::succeeds());
    fake.set_kueue("alice-quickstart", Some(std::time::Duration::from_secs(1)));
    let r = run_on(
        &fake,
        &format!(
            r#"{LOAD_IMAGE}
               let job = launch::rayjob(cfg, #{{run_id: "fake-q", ttl: 0}});
               let st = job.wait(60);
               print(`${{st.deployment}} ${{st.job}}`);"#
        ),
    );
    r.ok();
    assert_eq!(r.stdout().trim(), "Complete SUCCEEDED");
    let err = r.stderr();
    assert!(
        err.contains("[rayjob] alice-quickstart deployment=Suspended job=None"),
        "{err}"
    );
    assert!(
        err.contains("[rayjob] alice-quickstart waiting for admission (suspended)"),
        "{err}"
    );
}
