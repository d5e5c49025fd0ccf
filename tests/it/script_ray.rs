//! The `ray` built-ins, `nrl/postmortem` and `scripts/postmortem.rhai` against a real Ray
//! head on 127.0.0.1 (the one the test run shares, see `support::ray_head`). Skipped with a
//! notice when Ray is not installed, failed under `CI=true`.

use crate::support::context::nrl;
use crate::support::ray_head::{self, RayHead};
use crate::support::script_host;
use crate::support::script_host::run_with;

fn head() -> Option<&'static RayHead> {
    ray_head::shared()
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}-{:08x}", std::process::id(), fastrand::u32(..))
}

/// Run `text` with `args.address` = the head and `args.id` = a fresh submission id.
fn run_against(head: &RayHead, id: &str, text: &str) -> script_host::Run {
    run_with(
        "ray_test.rhai",
        text,
        &["--address", head.address(), "--id", id],
        |_| {},
    )
}

#[test]
fn submit_wait_status_logs_and_list() {
    let Some(head) = head() else { return };
    let id = unique("script-submit");
    let r = run_against(
        head,
        &id,
        r#"let d = ray::dashboard(args.address);
           print(d.version().version);
           let job = d.submit(#{entrypoint: `echo "greeting=$NRL_GREETING"`, submission_id: args.id,
                                env: #{NRL_GREETING: "hi"}, metadata: #{owner: "nrl-test"}});
           print(job.id == args.id); print(job.planned);
           let done = job.wait(120);
           print(done.status);
           print(d.status(args.id).metadata.owner);
           print(job.status());
           print(d.logs(args.id).contains("greeting=hi"));
           print(d.list().some(|j| j.submission_id == args.id));"#,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "4\ntrue\nfalse\nSUCCEEDED\nnrl-test\nSUCCEEDED\ntrue\ntrue\n"
    );
    assert!(
        r.stderr().contains(&format!("submitted job {id}")),
        "{}",
        r.stderr()
    );
}

#[test]
fn tail_returns_lines_or_feeds_a_callback_and_follow_prints() {
    let Some(head) = head() else { return };
    let id = unique("script-tail");
    let r = run_against(
        head,
        &id,
        r#"let d = ray::dashboard(args.address);
           let job = d.submit(#{entrypoint: "for i in 1 2 3; do echo line-$i; sleep 0.2; done", submission_id: args.id});
           let lines = job.tail();
           print(lines.filter(|l| l.starts_with("line-")));
           let seen = [];
           let details = d.tail(args.id, |chunk| { seen.push(chunk); true });
           print(details.status);
           print(seen.reduce(|acc, c| acc + c, "").contains("line-3"));
           let first = [];
           print(d.tail(args.id, |chunk| { first.push(chunk); false }) == ());
           print(first.len());
           let f = d.follow(args.id);
           print(f.status);"#,
    );
    r.ok();
    let out = r.stdout();
    assert!(
        out.starts_with("[\"line-1\", \"line-2\", \"line-3\"]\nSUCCEEDED\ntrue\ntrue\n1\n"),
        "{out}"
    );
    // follow() printed the log itself (Ray interleaves its own lines) before the status.
    let printed: Vec<&str> = out.lines().filter(|l| l.starts_with("line-")).collect();
    assert_eq!(printed, ["line-1", "line-2", "line-3"], "{out}");
    assert!(out.ends_with("SUCCEEDED\n"), "{out}");
}

#[test]
fn stop_ends_a_running_job() {
    let Some(head) = head() else { return };
    let id = unique("script-stop");
    let r = run_against(
        head,
        &id,
        r#"let d = ray::dashboard(args.address);
           let job = d.submit(#{entrypoint: "echo started; sleep 300", submission_id: args.id});
           d.tail(args.id, |chunk| !chunk.contains("started"));
           print(job.stop().status);
           print(d.wait(args.id, 60).status);"#,
    );
    r.ok();
    assert_eq!(r.stdout(), "STOPPED\nSTOPPED\n");
}

#[test]
fn plan_mode_records_submit_and_stop_and_submits_nothing() {
    let Some(head) = head() else { return };
    let id = unique("script-plan");
    let r = run_with(
        "plan.rhai",
        r#"let d = ray::dashboard(args.address);
           let job = d.submit(#{entrypoint: "echo never", submission_id: args.id});
           print(job.planned); print(job.status()); print(job.logs() == "");
           print(job.stop().planned);
           // Reading the dashboard in a plan is refused unless the script allows it.
           try { d.list() } catch (e) { print(e.code) }
           plan_options(#{live_reads: true});
           print(d.list().some(|j| j.submission_id == args.id));"#,
        &["--address", head.address(), "--id", &id],
        |o| o.dry_run = true,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "true\nPLANNED\ntrue\ntrue\nnrl::script::plan_live_read\nfalse\n"
    );
    let steps = r.host.plan.steps();
    assert_eq!(steps.len(), 3);
    assert_eq!(steps[2].action, "read");
    assert_eq!(
        steps[2].target,
        format!("the Ray dashboard at {}", head.address())
    );
    assert_eq!(steps[0].action, "submit");
    assert_eq!(steps[0].details, "echo never");
    assert_eq!(steps[1].action, "stop");
    assert_eq!(steps[1].target, format!("ray job {id}"));
}

#[test]
fn a_working_dir_under_the_working_directory_is_uploaded() {
    let Some(head) = head() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proj")).unwrap();
    let marker = unique("payload");
    std::fs::write(dir.path().join("proj/data.txt"), format!("{marker}\n")).unwrap();
    let id = unique("script-wd");
    let r = run_with(
        "wd.rhai",
        r#"let d = ray::dashboard(args.address);
           let job = d.submit(#{entrypoint: "cat data.txt", working_dir: "proj", submission_id: args.id});
           job.wait(120);
           print(regex_find(job.logs(), `payload-\S+`));
           try { d.submit(#{entrypoint: "true", working_dir: "../"}) } catch (e) { print(e.code) }"#,
        &["--address", head.address(), "--id", &id],
        |o| o.workdir = dir.path().to_path_buf(),
    );
    r.ok();
    assert_eq!(r.stdout(), format!("{marker}\nnrl::script::file_access\n"));
}

#[test]
fn api_errors_are_catchable_with_their_codes() {
    let Some(head) = head() else { return };
    let r = run_against(
        head,
        "unused",
        r#"let d = ray::dashboard(args.address, #{timeout: 10});
           try { d.status("no-such-job-xyz") } catch (e) { print(e.code) }
           try { d.submit(#{entrypoint: "true", workdir: "x"}) } catch (e) { print(e.code) }
           try { ray::dashboard(args.address, #{tokn: "x"}) } catch (e) { print(e.code) }"#,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "nrl::ray::not_found\nnrl::script::option\nnrl::script::option\n"
    );
}

const FAILING_DRIVER: &str = r#"echo "wandb: View run at https://wandb.ai/team/proj/runs/run42"; echo "Processed prompts: 100%"; python3 -c "
def train():
    raise ValueError('lr must be positive')
train()
""#;

#[test]
fn postmortem_fetches_a_failed_driver_log() {
    let Some(head) = head() else { return };
    let id = unique("script-pm");
    let r = run_against(
        head,
        &id,
        &format!(
            r#"import "nrl/postmortem" as postmortem;
               let d = ray::dashboard(args.address);
               d.submit(#{{entrypoint: {FAILING:?}, submission_id: args.id}}).wait(120);
               let s = postmortem::fetch(d, args.id);
               print(s.status); print(s.wandb_url);
               print(s.traceback[0]); print(s.traceback[s.traceback.len() - 1]);"#,
            FAILING = FAILING_DRIVER
        ),
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "FAILED\nhttps://wandb.ai/team/proj/runs/run42\nTraceback (most recent call last):\nValueError: lr must be positive\n"
    );

    // The playbook through the binary: the same report, exit 1 for a FAILED job.
    let out = nrl()
        .args(["script", "scripts/postmortem.rhai", "--"])
        .args(["--address", head.address(), "--job", &id])
        .assert()
        .code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.starts_with(&format!("job {id}: FAILED\n")),
        "{stdout}"
    );
    assert!(
        stdout.contains("wandb: https://wandb.ai/team/proj/runs/run42\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  ValueError: lr must be positive\n"),
        "{stdout}"
    );
}

#[test]
fn retry_wraps_a_dashboard_call() {
    let Some(head) = head() else { return };
    let id = unique("script-retry");
    let r = run_against(
        head,
        &id,
        r#"import "nrl/retry" as retry;
           let d = ray::dashboard(args.address);
           d.submit(#{entrypoint: "true", submission_id: args.id});
           let details = retry::run(|| {
               let s = d.status(args.id);
               if s.status != "SUCCEEDED" { throw `still ${s.status}` }
               s
           }, #{attempts: 60, delay: 0.2, factor: 1.2, max_delay: 2.0});
           print(details.status);"#,
    );
    r.ok();
    assert_eq!(r.stdout(), "SUCCEEDED\n");
}
