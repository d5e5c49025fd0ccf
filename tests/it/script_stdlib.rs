//! The embedded stdlib (`import "nrl/…"`) and module resolution.

use nrl::script::resolver::STDLIB;

use crate::support::script_host;
use crate::support::script_host::{output_of, plan, run, run_with};

#[test]
fn every_stdlib_module_imports() {
    for (name, _) in STDLIB {
        let r = run(&format!("import \"nrl/{name}\" as m;"));
        r.ok();
    }
    let d = run(r#"import "nrl/nope" as m;"#).result.unwrap_err();
    assert!(d.message.contains("nrl/nope"), "{}", d.message);
    assert!(d.help.as_deref().unwrap_or("").contains("stdlib"));
}

#[test]
fn retry_calls_until_success_with_backoff() {
    let r = run(r#"import "nrl/retry" as retry;
           let calls = [];
           let v = retry::run(|| { calls.push(1); if calls.len() < 3 { throw "flaky" } "done" },
                               #{attempts: 5, delay: 0.001});
           print(v); print(calls.len());"#);
    r.ok();
    assert_eq!(r.stdout(), "done\n3\n");
    assert_eq!(
        r.stderr().matches("retrying in").count(),
        2,
        "{}",
        r.stderr()
    );
}

#[test]
fn retry_gives_up_with_the_last_error() {
    let out = output_of(
        r#"import "nrl/retry" as retry;
           let n = [];
           try { retry::run(|| { n.push(0); throw `failure ${n.len()}` }, #{attempts: 2, delay: 0.001}) }
           catch (e) { print(e); print(n.len()) }
           try { retry::run(|| 1, #{atempts: 2}) } catch (e) { print(e) }"#,
    );
    assert_eq!(
        out,
        "failure 2\n2\nretry::run has no option \"atempts\" (options: attempts, delay, factor, max_delay)\n"
    );
}

#[test]
fn sweep_runs_points_with_bounded_concurrency() {
    let r = run(r#"import "nrl/sweep" as sweep;
           let events = [];
           let results = sweep::run(["a=1,2,3", "b=x"], #{
               concurrency: 2,
               launch: |ovs, i| { events.push(`launch ${i}`); #{id: i} },
               wait: |h| { events.push(`wait ${h.id}`); if h.id == 1 { throw "boom" } #{status: "SUCCEEDED"} },
           });
           print(events);
           sweep::report(results);"#);
    r.ok();
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    // Two in flight, then each new launch waits for the oldest.
    assert_eq!(
        lines[0],
        "[\"launch 0\", \"launch 1\", \"wait 0\", \"launch 2\", \"wait 1\", \"wait 2\"]"
    );
    assert_eq!(lines[1], "RUN  OVERRIDES  STATUS");
    assert_eq!(lines[2], "1    a=1 b=x    SUCCEEDED");
    assert_eq!(lines[3], "2    a=2 b=x    ERROR");
    assert_eq!(lines[4], "3    a=3 b=x    SUCCEEDED");
    // Why the failed run failed, after the table.
    assert_eq!(lines[5], "run 2 (a=2 b=x): boom");
    assert_eq!(lines[6], "3 run(s), 1 failed");
    assert!(r.stderr().contains("sweep: 3 run(s), at most 2 at a time"));
}

#[test]
fn sweep_without_wait_is_sequential_and_keeps_launch_results() {
    let out = output_of(
        r#"import "nrl/sweep" as sweep;
           print(sweep::points(["x=1,2"]));
           let rows = sweep::run(["x=1,2"], #{launch: |ovs, i| `job-${i}`});
           for r in rows { print(`${r.run} ${r.overrides} ${r.status} ${r.result}`); }
           try { sweep::run(["x=1"], #{}) } catch (e) { print(e) }
           try { sweep::run(["x=1"], #{launch: |o, i| 1, concurency: 2}) } catch (e) { print(e) }"#,
    );
    assert_eq!(
        out,
        "[[\"x=1\"], [\"x=2\"]]\n1 x=1 DONE job-0\n2 x=2 DONE job-1\n\
         sweep::run needs a `launch` closure: |overrides, index| -> handle\n\
         sweep::run has no option \"concurency\" (options: launch, wait, concurrency)\n"
    );
}

#[test]
fn sweep_launches_planned_rayjobs_per_point() {
    let r = plan(
        r#"import "nrl/sweep" as sweep;
           let rows = sweep::run(["grpo.max_num_steps=1,2"], #{
               launch: |ovs, i| launch::rayjob(
                   recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml", overrides: ovs}),
                   #{run_id: `sweep-${i}`, name: `alice-sweep-${i}`}),
               wait: |job| #{status: job.wait().deployment},
           });
           sweep::report(rows);"#,
    );
    r.ok();
    let steps = r.host.plan.steps();
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].target, "RayJob/alice-sweep-0");
    assert!(steps[1].details.contains("run sweep-1"));
    assert!(
        r.stdout().contains("2    grpo.max_num_steps=2  Planned"),
        "{}",
        r.stdout()
    );
}

const DRIVER_LOG: &str = r#"2026-01-01 starting
wandb: 🚀 View run at https://wandb.ai/team/proj/runs/abc123
Processed prompts: 100%|██████████| 8/8
Traceback (most recent call last):
  File "train.py", line 3, in <module>
    main()
ValueError: learning rate must be positive
Error: the run failed
"#;

#[test]
fn postmortem_finds_the_wandb_url_and_the_last_traceback() {
    let r = run_with(
        "t.rhai",
        r#"import "nrl/postmortem" as postmortem;
           let s = postmortem::summarize(args.positional[0]);
           print(s.wandb_url);
           print(s.traceback[0]); print(s.traceback[s.traceback.len() - 1]);
           print(s.error_lines.len());
           print(s.last_lines.len());
           postmortem::report(s);
           let empty = postmortem::summarize("all good\n");
           print(empty.wandb_url == ()); print(empty.traceback == ());
           postmortem::report(empty);"#,
        &["--", DRIVER_LOG],
        |_| {},
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "https://wandb.ai/team/proj/runs/abc123\n\
         Traceback (most recent call last):\nValueError: learning rate must be positive\n\
         3\n8\n\
         wandb: https://wandb.ai/team/proj/runs/abc123\nlast traceback:\n\
         \x20 Traceback (most recent call last):\n\x20   File \"train.py\", line 3, in <module>\n\
         \x20     main()\n\x20 ValueError: learning rate must be positive\n\
         true\ntrue\nwandb: no run URL in the log\nno traceback or error lines in the log\n"
    );
}

#[test]
fn checklist_and_teardown_skip_in_plan_mode() {
    let r = plan(
        r#"import "nrl/checklist" as checklist;
           import "nrl/teardown" as teardown;
           let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml"});
           let job = launch::rayjob(cfg, #{run_id: "plan-1"});
           let report = checklist::verify(job);
           print(report.ok); print(report.points.len());
           checklist::show(report);
           print(teardown::verify(job).detail);"#,
    );
    r.ok();
    let out = r.stdout();
    assert!(
        out.starts_with("true\n5\n[ok  ] objects present: skipped (plan mode)\n"),
        "{out}"
    );
    assert!(
        out.contains("checklist: skipped (plan mode)\nskipped (plan mode)\n"),
        "{out}"
    );
}

#[test]
fn user_modules_resolve_next_to_the_script_then_along_nrl_path() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let path_dir = dir.path().join("shared");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::create_dir_all(&path_dir).unwrap();
    std::fs::write(lib.join("near.rhai"), "fn hello() { \"near\" }").unwrap();
    std::fs::write(
        path_dir.join("far.rhai"),
        "import \"nrl/retry\" as r;\nfn hello() { \"far\" }",
    )
    .unwrap();
    let script = dir.path().join("main.rhai");
    std::fs::write(
        &script,
        "import \"lib/near\" as near;\nimport \"far\" as far;\nprint(near::hello() + \" \" + far::hello());",
    )
    .unwrap();
    let (mut opts, out) = script_host::options(dir.path());
    opts.search_path = vec![path_dir];
    let host = nrl::script::Host::new(opts);
    nrl::script::run_on_thread(host, script, vec![]).unwrap();
    assert_eq!(out.stdout(), "near far\n");
}
