//! The `cluster` built-ins against the fake API server, with a stand-in Ray dashboard
//! behind the head pods: up (per target, readiness, daemons), status, list, dashboard,
//! logs, down; plan mode; errors.

use crate::support::fake_k8s::FakeK8s;
use crate::support::script_host::{Run, run_with};
use crate::support::stub_ray::StubRay;

const LOAD: &str = r#"let cfg = recipe("tests/data/cluster/recipe.yaml", #{infra: "tests/data/cluster/infra.yaml"});"#;

fn run_on(fake: &FakeK8s, text: &str, dry_run: bool) -> Run {
    let kubeconfig = fake.kubeconfig_path().to_path_buf();
    run_with("cluster.rhai", text, &[], move |o| {
        o.connect.kubeconfig = Some(kubeconfig);
        o.dry_run = dry_run;
    })
}

#[test]
fn up_status_list_dashboard_logs_down() {
    let fake = FakeK8s::start();
    let ray = StubRay::start();
    fake.use_ray_dashboard(Some(&ray.url()));
    let r = run_on(
        &fake,
        &format!(
            r#"{LOAD}
               let up = cluster::up(cfg, #{{targets: ["generation", "kuberay.gym"], timeout: 60,
                                            repo_root: "tests/data/cluster"}});
               for c in up {{ print(`${{c}} ready=${{c.ready}} role=${{c.role}} daemon=${{c.daemon}}`); }}
               for row in cluster::status(cfg) {{
                   print(`${{row.role}} ${{row.name}} ${{row.state}} exists=${{row.exists}} planned=${{row.planned}} workers=${{row.workers_ready}}/${{row.workers_desired}} head=${{row.pods.head?.phase}}`);
               }}
               print(up[1].status().daemon.status);
               print(cluster::list().map(|r| `${{r.name}}:${{r.owner}}`));
               let d = cluster::dashboard("rc-gym");
               print(d.list().map(|j| j.submission_id));
               print(up[1].dashboard().job("gym-daemon").status());
               print(cluster::logs(cfg, "gym", #{{source: "daemon", tail: 1}}));
               print(up[1].logs(#{{source: "daemon", tail: 1}}) == up[1].logs().split("\n")[1] + "\n");
               print(`${{up[0].namespace}} ${{up[0].drift}} ${{cluster::list(#{{namespace: "default"}}).len()}}`);
               print(cluster::dashboard("rc-gym", "default").address.starts_with("http://127.0.0.1:"));
               print(cluster::down(cfg, #{{targets: ["gym"]}}));
               print(cluster::status(cfg)[1].exists);"#
        ),
        false,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "RayCluster(default/rc-gen, created) ready=true role=generation daemon=\n\
         RayCluster(default/rc-gym, created) ready=true role=gym daemon=#{\"id\": \"gym-daemon\", \"submitted\": true}\n\
         generation rc-gen ready exists=true planned=false workers=2/2 head=Running\n\
         gym rc-gym ready exists=true planned=false workers=1/1 head=Running\n\
         training rc-train  exists=false planned=false workers=0/0 head=\n\
         RUNNING\n\
         [\"rc-gen:alice\", \"rc-gym:alice\"]\n\
         [\"gym-daemon\"]\n\
         RUNNING\n\
         line 2\n\n\
         true\n\
         default [] 2\n\
         true\n\
         [\"kuberay.gym\"]\n\
         false\n"
    );
    // The context is announced before the first change; progress goes to stderr.
    let err = r.stderr();
    assert!(
        err.starts_with("acting on context `fake`, namespace `default`\n"),
        "{err}"
    );
    assert!(
        err.contains("[gym] daemon submitted as job gym-daemon"),
        "{err}"
    );
    // The daemon was staged from the given repo root.
    let submitted = ray.submitted();
    assert_eq!(submitted.len(), 1);
    assert!(
        submitted[0]["runtime_env"]["working_dir"]
            .as_str()
            .is_some_and(|w| w.starts_with("gcs://_ray_pkg_")),
        "{submitted:?}"
    );
    assert!(
        fake.get("ray.io/v1", "RayCluster", "default", "rc-gym")
            .is_none()
    );
    assert!(
        fake.get("ray.io/v1", "RayCluster", "default", "rc-gen")
            .is_some()
    );
}

#[test]
fn head_logs_and_deployments() {
    let fake = FakeK8s::start();
    let r = run_on(
        &fake,
        &format!(
            r#"{LOAD}
               let up = cluster::up(cfg, #{{targets: ["training", "deployments.vllm"], timeout: 60}});
               print(up.map(|c| `${{c.kind}} ${{c.target}} ${{c.action}} ${{c.ready}} ${{c.dns}}`));
               try {{ up[1].status() }} catch (e) {{ print(e.message) }}
               print(cluster::up(cfg, #{{targets: ["training"], wait: false}})[0].action);"#
        ),
        false,
    );
    r.ok();
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "[\"RayCluster kuberay.training created true \", \"Deployment deployments.vllm applied true vllm.default.svc.cluster.local\"]"
    );
    assert_eq!(
        lines[1],
        "status() is for RayClusters; vllm is a Deployment"
    );
    assert_eq!(lines[2], "unchanged");

    let head = fake
        .pod_name("default", "ray.io/cluster=rc-train,ray.io/node-type=head")
        .expect("head pod");
    for line in ["one", "two", "three"] {
        fake.append_pod_log("default", &head, None, line);
    }
    let r = run_on(
        &fake,
        &format!(
            r#"{LOAD}
               print(cluster::logs(cfg, "training"));
               print(cluster::logs(cfg, "training", #{{source: "head", tail: 2}}));"#
        ),
        false,
    );
    r.ok();
    assert_eq!(r.stdout(), "one\ntwo\nthree\n\ntwo\nthree\n\n");

    // Following prints the log as it comes and ends with the pod.
    fake.set_pod_phase("default", &head, "Succeeded");
    let r = run_on(
        &fake,
        &format!(
            r#"{LOAD}
               let text = cluster::logs(cfg, "training", #{{source: "head", follow: true}});
               print(`returned ${{text.len()}} bytes`);"#
        ),
        false,
    );
    r.ok();
    assert_eq!(r.stdout(), "one\ntwo\nthree\nreturned 14 bytes\n");
}

#[test]
fn plan_mode_records_and_answers_for_planned_clusters() {
    let fake = FakeK8s::start();
    let r = run_on(
        &fake,
        &format!(
            r#"{LOAD}
               let up = cluster::up(cfg);
               print(up.map(|c| `${{c.name}} ${{c.action}} ${{c.planned}}`));
               print(up[1].daemon);
               let rows = cluster::status(cfg);
               print(rows.map(|r| `${{r.role}} ${{r.state}} ${{r.planned}}`));
               print(rows[1].daemon.id);
               print(cluster::logs(cfg, "gym") == "");
               try {{ cluster::dashboard("rc-gym") }} catch (e) {{ print(e.code) }}
               print(cluster::down(cfg, #{{targets: ["training"], wait: false}}));
               print(cluster::status(cfg)[2].state);"#
        ),
        true,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "[\"rc-gen planned true\", \"rc-gym planned true\", \"rc-train planned true\", \"vllm planned true\"]\n\
         #{\"id\": \"gym-daemon\", \"submitted\": false}\n\
         [\"generation planned true\", \"gym planned true\", \"training planned true\"]\n\
         gym-daemon\n\
         true\n\
         nrl::script::planned\n\
         [\"kuberay.training\"]\n\
         \n"
    );
    assert!(
        r.stderr()
            .contains("(plan) RayCluster rc-gym is only planned in this dry run: no log to read"),
        "{}",
        r.stderr()
    );
    let plan = r.host.plan.render();
    assert_eq!(
        plan,
        "plan: 5 steps (dry run: nothing was changed)\n\
         #  ACTION  TARGET               DETAILS\n\
         1  apply   RayCluster/rc-gen    kuberay.generation in namespace default; 2 DRA object(s) first; wait until ready (900s)\n\
         2  apply   RayCluster/rc-gym    kuberay.gym in namespace default; wait until ready (900s); then daemon gym-daemon\n\
         3  apply   RayCluster/rc-train  kuberay.training in namespace default; wait until ready (900s)\n\
         4  apply   Deployment/vllm      deployments.vllm in namespace default; with its Service; wait until available (900s)\n\
         5  delete  RayCluster/rc-train  kuberay.training in namespace default; with its DRA objects\n"
    );
    // The dashboard check connects (to learn the namespace) but nothing was sent.
    let writes = fake.requests(|q| q.method != "GET");
    assert!(writes.is_empty(), "{writes:?}");
}

#[test]
fn the_doctor_gates_up_as_it_does_for_nrl_cluster_up() {
    let fake = FakeK8s::builder().namespace("team-rl").start();
    let pair = r#"let cfg = recipe("tests/data/doctor/gpu_mismatch.recipe.yaml",
                                    #{infra: "tests/data/doctor/infra.yaml"});"#;
    let r = run_on(
        &fake,
        &format!(
            r#"{pair}
               try {{ cluster::up(cfg, #{{wait: false}}) }} catch (e) {{ print(e.code); print(e.help) }}
               print(cluster::up(cfg, #{{wait: false, doctor: false}})[0].action);"#
        ),
        false,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "nrl::doctor::gate\n\
         fix the errors above, silence a rule with `# nrl: allow CODE`, or pass `doctor: false` to cluster::up\n\
         created\n"
    );
    let err = r.stderr();
    assert!(err.contains("nrl::doctor::gpu_mismatch"), "{err}");
    assert!(
        err.contains("nrl::doctor::missing_object"),
        "the preflight ran: {err}"
    );
    // Only the second call applied anything.
    let applies = fake.requests(|q| {
        q.is_apply() && !q.is_dry_run() && q.resource.as_deref() == Some("rayclusters")
    });
    assert_eq!(applies.len(), 1);
}

#[test]
fn bad_targets_and_options_fail_at_the_call() {
    let fake = FakeK8s::start();
    let r = run_on(
        &fake,
        &format!(
            r#"{LOAD}
               try {{ cluster::up(cfg, #{{targets: ["kuberay.nope"]}}) }} catch (e) {{ print(e.code) }}
               try {{ cluster::up(cfg, #{{timout: 5}}) }} catch (e) {{ print(e.help) }}
               try {{ cluster::up(cfg, #{{wait: "yes"}}) }} catch (e) {{ print(e.message) }}
               try {{ cluster::up(cfg, #{{repo_root: "/etc"}}) }} catch (e) {{ print(e.code) }}
               try {{ cluster::logs(cfg, "trainer") }} catch (e) {{ print(e.message) }}
               try {{ cluster::logs(cfg, "gym", #{{source: "stdout"}}) }} catch (e) {{ print(e.message) }}"#
        ),
        false,
    );
    r.ok();
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("nrl::"), "{out}");
    assert!(lines[1].starts_with("did you mean `timeout`?"), "{out}");
    assert_eq!(
        lines[2],
        "option `wait` of cluster::up() must be true or false (got string)"
    );
    assert_eq!(lines[3], "nrl::script::file_access");
    assert_eq!(lines[4], "unknown role `trainer`");
    assert_eq!(lines[5], "unknown log source `stdout`");
    assert!(fake.request_log().is_empty(), "{:?}", fake.request_log());
}
