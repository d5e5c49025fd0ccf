//! The `run` built-ins: the quickstart as a local run (output, record, failure, quiet,
//! Ctrl-C), on a real Ray head (skipped with a notice when Ray is not installed, failed
//! under `CI=true`), the run records, and plan mode. Every test has its own cache.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nrl::config::env::MapEnv;

use crate::support;
use crate::support::script_host::{Run, run_with};

const LOAD: &str = r#"let cfg = recipe("examples/quickstart/recipe.yaml", #{infra: "examples/quickstart/infra.yaml", overrides: args.overrides});"#;

/// Run `text` as user alice with run records under `cache`.
fn run_in(
    cache: &Path,
    text: &str,
    args: &[&str],
    setup: impl FnOnce(&mut nrl::script::HostOptions),
) -> Run {
    let cache = cache.display().to_string();
    run_with("run.rhai", text, args, move |o| {
        o.env = Arc::new(MapEnv::new([
            ("NRL_USER", "alice"),
            ("HOME", "/nonexistent/nrl-test-home"),
            ("XDG_CACHE_HOME", cache.as_str()),
        ]));
        setup(o);
    })
}

#[test]
fn a_local_run_streams_its_output_and_keeps_a_record() {
    let cache = tempfile::tempdir().unwrap();
    let r = run_in(
        cache.path(),
        &format!(
            r#"{LOAD}
               let run = run::local(cfg, #{{run_id: "s-local-1"}});
               print(`${{run}} ok=${{run.ok}} exit=${{run.exit_code}} planned=${{run.planned}}`);
               print(run.log(2));
               print(run.log_path.ends_with("s-local-1/driver.log") && run.log_path.starts_with(run.run_dir));
               print(run.record().status == run.status);
               print(run::records().map(|r| `${{r.id}}:${{r.kind}}:${{r.status}}`));
               print(run::record("s-local-1").exit_code);
               try {{ run::record("nope") }} catch (e) {{ print(e.code) }}
               try {{ run.submission() }} catch (e) {{ print(e.message) }}"#
        ),
        &["grpo.max_num_steps=2"],
        |_| {},
    );
    r.ok();
    let out = r.stdout();
    assert!(out.starts_with("loaded recipe nrl_run.yaml"), "{out}");
    assert!(out.contains("step 2/2: loss=0.5000 reward=0.20\n"), "{out}");
    let tail = out
        .split_once("training finished\n")
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(
        tail,
        "Run(s-local-1, local, succeeded) ok=true exit=0 planned=false\n\
         step 2/2: loss=0.5000 reward=0.20\ntraining finished\n\n\
         true\n\
         true\n\
         [\"s-local-1:local:succeeded\"]\n\
         0\n\
         nrl::run::not_found\n\
         run s-local-1 is a local run: it has no Ray job\n"
    );
    let log = std::fs::read_to_string(cache.path().join("nrl/runs/s-local-1/driver.log")).unwrap();
    assert!(log.contains("step 2/2"), "{log}");
}

#[test]
fn a_failed_local_run_is_data_not_an_error_and_quiet_keeps_the_output_in_the_log() {
    let cache = tempfile::tempdir().unwrap();
    let r = run_in(
        cache.path(),
        &format!(
            r#"{LOAD}
               let run = run::local(cfg, #{{quiet: true}});
               print(`${{run.status}} ${{run.exit_code}} ${{run.ok}} ${{run.message}}`);
               print(run.log().contains("failing on purpose"));
               print(run.refresh());
               print(run.id.starts_with("recipe-"));"#
        ),
        &["infra.launch.env.QUICKSTART_FAIL=\"1\""],
        |_| {},
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "failed 3 false exited with code 3\ntrue\nfailed\ntrue\n"
    );
}

#[test]
fn ctrl_c_stops_a_local_run_and_records_it() {
    let cache = tempfile::tempdir().unwrap();
    let records = cache.path().join("nrl/runs/s-stop-1.json");
    let (opts_tx, opts_rx) = std::sync::mpsc::channel();
    let watcher = {
        let records = records.clone();
        std::thread::spawn(move || {
            let cancel: tokio_util::sync::CancellationToken = opts_rx.recv().unwrap();
            // Cancel once the child is running (its pid is recorded).
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while std::time::Instant::now() < deadline {
                let text = std::fs::read_to_string(&records).unwrap_or_default();
                if text.contains("\"pid\"") {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            cancel.cancel();
        })
    };
    let r = run_in(
        cache.path(),
        &format!(
            r#"{LOAD}
               run::local(cfg, #{{run_id: "s-stop-1"}});
               print("not reached");"#
        ),
        &["infra.launch.entrypoint='echo started; sleep 60'"],
        move |o| opts_tx.send(o.cancel.clone()).unwrap(),
    );
    watcher.join().unwrap();
    assert_eq!(r.err().code, "nrl::script::interrupted");
    assert!(!r.stdout().contains("not reached"));
    assert!(
        r.stderr().contains("interrupted: run s-stop-1 stopped"),
        "{}",
        r.stderr()
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&records).unwrap()).unwrap();
    assert_eq!(record["status"], "stopped");
}

#[test]
fn plan_mode_records_runs_without_staging_or_submitting() {
    let cache = tempfile::tempdir().unwrap();
    let r = run_in(
        cache.path(),
        &format!(
            r#"{LOAD}
               let a = run::local(cfg, #{{run_id: "s-plan-1"}});
               let b = run::on_ray(cfg, "http://127.0.0.1:9", #{{run_id: "s-plan-2"}});
               print(`${{a}} ${{a.ok}} ${{a.log()}}|`);
               print(`${{b}} ${{b.submission().planned}}`);
               try {{ run::local(cfg, #{{repo_root: "/"}}) }} catch (e) {{ print(e.code) }}"#
        ),
        &[],
        |o| o.dry_run = true,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "Run(s-plan-1, local, planned) true |\nRun(s-plan-2, ray, planned) true\nnrl::script::file_access\n"
    );
    let plan = r.host.plan.render();
    assert_eq!(
        plan,
        "plan: 2 steps (dry run: nothing was changed)\n\
         #  ACTION  TARGET              DETAILS\n\
         1  run     local run s-plan-1  5 files; python3 examples/quickstart/train.py --config nrl_run.yaml\n\
         2  submit  run s-plan-2        to http://127.0.0.1:9; 5 files; python3 examples/quickstart/train.py --config nrl_run.yaml\n"
    );
    assert!(!cache.path().join("nrl").exists(), "nothing was written");
}

#[test]
fn a_run_on_a_ray_head_is_followed_and_recorded() {
    let Some(head) = support::ray_head::shared() else {
        return;
    };
    let cache = tempfile::tempdir().unwrap();
    let id = format!("s-ray-{}-{:04x}", std::process::id(), fastrand::u16(..));
    let r = run_in(
        cache.path(),
        &format!(
            r#"{LOAD}
               let run = run::on_ray(cfg, args.address, #{{run_id: args.id}});
               print(`${{run.kind}} ${{run.status}} ${{run.exit_code}}`);
               print(run.log().contains("training finished"));
               print(run.submission().status());
               let later = run::on_ray(cfg, args.address, #{{run_id: args.id + "-b", follow: false, quiet: true}});
               print(later.status);
               print(later.follow());
               print(run::record(args.id + "-b").status);"#
        ),
        &[
            "--address",
            head.address(),
            "--id",
            &id,
            "grpo.max_num_steps=1",
        ],
        |_| {},
    );
    r.ok();
    let out = r.stdout();
    // The first run's log is printed while followed; the quiet one's is not.
    assert_eq!(out.matches("step 1/1: loss=1.0000").count(), 1, "{out}");
    assert!(
        out.ends_with("ray succeeded 0\ntrue\nSUCCEEDED\nrunning\nsucceeded\nsucceeded\n"),
        "{out}"
    );
    assert!(
        r.stderr().contains(&format!("submitted run {id} to")),
        "{}",
        r.stderr()
    );
}
