//! The `dev` built-ins against the fake API server (whose exec runs real local
//! processes): the pod from the user defaults, secrets (values never shown), sync,
//! commands, stop, and plan mode.

use std::path::Path;
use std::sync::Arc;

use nrl::config::env::MapEnv;

use crate::support::dev_env::{DevEnv, SECRET};
use crate::support::script_host::{Run, run_with};

/// Run `text` as user alice with `env`'s home (its user defaults) and cluster.
fn run_in(env: &DevEnv, workdir: &Path, text: &str, dry_run: bool) -> Run {
    let kubeconfig = env.fake.kubeconfig_path().to_path_buf();
    let home = env.home().display().to_string();
    let workdir = workdir.to_path_buf();
    run_with("dev.rhai", text, &[], move |o| {
        o.env = Arc::new(MapEnv::new([
            ("NRL_USER", "alice"),
            ("HOME", home.as_str()),
        ]));
        o.connect.kubeconfig = Some(kubeconfig);
        o.workdir = workdir;
        o.dry_run = dry_run;
    })
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn the_pod_comes_from_the_user_defaults() {
    let env = DevEnv::new();
    let r = run_in(
        &env,
        env.home(),
        r#"let p = dev::pod();
           print(`${p.name} ${p.namespace} ${p.image} ${p.secret} ${p.user}`);
           print(dev::pod(#{namespace: "team-a", image: "img:2"}).namespace);"#,
        false,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "alice-dev-pod default busybox:1.36 alice-secrets alice\nteam-a\n"
    );
    assert!(
        env.fake.request_log().is_empty(),
        "describing contacts nothing"
    );
}

#[test]
fn secrets_are_set_and_removed_without_showing_values() {
    let env = DevEnv::new();
    let r = run_in(
        &env,
        env.home(),
        r#"let s = dev::setup_secrets(#{HF_TOKEN: "hf_secret_1", WANDB_API_KEY: "wb_secret_2",
                                         SSH_KEY_NAME: "id_test", SSH_KEY_CONTENT: "ssh_secret_3"});
           print(`${s.secret} ${s.created} ${s.planned}`);
           print(s.keys.map(|k| `${k.key}=${k.state}:${k.bytes}`));
           let t = dev::setup_secrets(#{WANDB_API_KEY: (), EXTRA: "x_secret_4"}, #{namespace: "default"});
           print(t.keys.filter(|k| k.state != "kept").map(|k| `${k.key}=${k.state}`));"#,
        false,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "alice-secrets true false\n\
         [\"HF_TOKEN=added:11\", \"SSH_KEY_CONTENT=added:12\", \"SSH_KEY_NAME=added:7\", \"WANDB_API_KEY=added:11\"]\n\
         [\"EXTRA=added\", \"WANDB_API_KEY=removed\"]\n"
    );
    let all = format!("{}{}", r.stdout(), r.stderr());
    for value in ["hf_secret_1", "wb_secret_2", "ssh_secret_3", "x_secret_4"] {
        assert!(!all.contains(value), "a value was shown: {all}");
    }
    assert!(
        r.stderr()
            .contains("created secret alice-secrets in namespace `default`"),
        "{}",
        r.stderr()
    );
    let data = env.secret_data();
    assert!(data.contains(&("HF_TOKEN".into(), "hf_secret_1".into())));
    assert!(data.contains(&("EXTRA".into(), "x_secret_4".into())));
    assert!(!data.iter().any(|(k, _)| k == "WANDB_API_KEY"));

    let bad = run_in(
        &env,
        env.home(),
        r#"try { dev::setup_secrets(#{"bad-key": "v"}) } catch (e) { print(e.code) }
           try { dev::setup_secrets(#{}) } catch (e) { print(e.code) }"#,
        false,
    );
    bad.ok();
    assert_eq!(
        bad.stdout(),
        "nrl::dev::secret_key\nnrl::dev::secret_args\n"
    );
    assert!(
        env.secret()
            .is_some_and(|s| s["metadata"]["name"] == SECRET)
    );
}

#[test]
fn sync_copies_code_into_the_pod_and_commands_run_there() {
    let env = DevEnv::new();
    let work = tempfile::tempdir().unwrap();
    write(work.path(), "pkg/mod.py", "print('v1')\n");
    write(
        work.path(),
        "pkg/__pycache__/mod.cpython-311.pyc",
        "bytecode",
    );
    write(work.path(), "tools/run.sh", "#!/bin/sh\necho ran \"$@\"\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let p = work.path().join("tools/run.sh");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let r = run_in(
        &env,
        work.path(),
        r#"let s = dev::sync_code(["pkg", "tools", "missing"]);
           print(`${s.files} ${s.dest} ${s.pod} ${s.planned}`);
           let x = dev::connect_run("cat pkg/mod.py; ls pkg; ./tools/run.sh a b; echo err >&2; exit 3");
           print(`${x.code}|${x.stdout}|${x.stderr}|${x.planned}`);
           print(dev::connect_run(["cat"], #{stdin: "fed"}).stdout);
           write_file("pkg/mod.py", "print('v2')\n");
           dev::sync_code("pkg", #{dest: "copy"});
           print(dev::connect_run(["cat", "copy/pkg/mod.py", "pkg/mod.py"]).stdout);
           try { dev::connect_run([]) } catch (e) { print(e.message) }
           try { dev::sync_code(["../outside"]) } catch (e) { print(e.code) }"#,
        false,
    );
    r.ok();
    assert_eq!(
        r.stdout(),
        "2 . alice-dev-pod false\n\
         3|print('v1')\nmod.py\nran a b\n|err\n|false\n\
         fed\n\
         print('v2')\nprint('v1')\n\n\
         the command is empty\n\
         nrl::script::file_access\n"
    );
    assert!(
        r.stderr()
            .contains("creating dev pod alice-dev-pod (image busybox:1.36)"),
        "{}",
        r.stderr()
    );
    assert!(r.stderr().contains("syncing 2 files"), "{}", r.stderr());
    assert!(env.pod().is_some());
}

#[test]
fn stop_deletes_the_pod_and_waits() {
    let env = DevEnv::new();
    let r = run_in(
        &env,
        env.home(),
        r#"print(dev::connect_run("true").code);
           print(dev::stop());
           print(dev::stop(#{timeout: 30}));"#,
        false,
    );
    r.ok();
    assert_eq!(r.stdout(), "0\ntrue\nfalse\n");
    assert!(env.pod().is_none());
}

#[test]
fn plan_mode_records_every_change_and_contacts_nothing() {
    let env = DevEnv::new();
    let work = tempfile::tempdir().unwrap();
    write(work.path(), "pkg/a.py", "a = 1\n");
    let r = run_in(
        &env,
        work.path(),
        r#"print(dev::setup_secrets(#{HF_TOKEN: "hf_plan_secret", OLD: ()}).keys.map(|k| k.state));
           print(dev::sync_code(["pkg"]).planned);
           print(dev::connect_run("make test").planned);
           print(dev::stop());"#,
        true,
    );
    r.ok();
    assert_eq!(r.stdout(), "[\"planned\", \"planned\"]\ntrue\ntrue\ntrue\n");
    let plan = r.host.plan.render();
    assert!(!plan.contains("hf_plan_secret"), "{plan}");
    assert_eq!(
        plan,
        "plan: 4 steps (dry run: nothing was changed)\n\
         #  ACTION  TARGET                DETAILS\n\
         1  apply   Secret/alice-secrets  namespace default; keys HF_TOKEN (set), OLD (remove)\n\
         2  sync    Pod/alice-dev-pod     namespace default; 1 file(s) (0.00 MiB) from pkg to .\n\
         3  exec    Pod/alice-dev-pod     namespace default; make test\n\
         4  delete  Pod/alice-dev-pod     namespace default; wait until gone\n"
    );
    assert!(env.fake.request_log().is_empty());
    assert!(env.pod().is_none() && env.secret().is_none());
}
