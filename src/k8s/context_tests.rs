//! Every precedence case of the kubeconfig loading rules kubectl documents
//! (<https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/>,
//! "Merging kubeconfig files"), plus the in-cluster rules.

use std::path::{Path, PathBuf};

use super::*;
use crate::config::env::MapEnv;

fn kubeconfig(current: Option<&str>, contexts: &[(&str, Option<&str>)]) -> String {
    let mut s = String::from("apiVersion: v1\nkind: Config\n");
    if let Some(c) = current {
        s.push_str(&format!("current-context: {c}\n"));
    }
    s.push_str("clusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:6443'}\n");
    s.push_str("users:\n- name: u\n  user: {token: t}\ncontexts:\n");
    for (name, ns) in contexts {
        match ns {
            Some(ns) => s.push_str(&format!(
                "- name: {name}\n  context: {{cluster: c, user: u, namespace: {ns}}}\n"
            )),
            None => s.push_str(&format!(
                "- name: {name}\n  context: {{cluster: c, user: u}}\n"
            )),
        }
    }
    s
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

fn env_with(vars: &[(&str, &str)]) -> MapEnv {
    let mut env = MapEnv::default();
    env.set("HOME", "/nonexistent/home");
    for (k, v) in vars {
        env.set(k, v);
    }
    env
}

fn opts() -> ConnectOptions {
    ConnectOptions::default()
}

fn joined(paths: &[&Path]) -> String {
    std::env::join_paths(paths).unwrap().into_string().unwrap()
}

#[test]
fn the_kubeconfig_flag_alone_is_used_even_when_kubeconfig_is_set() {
    let d = tempfile::tempdir().unwrap();
    let flag = write(
        d.path(),
        "flag",
        &kubeconfig(Some("a"), &[("a", Some("team-a"))]),
    );
    let env_file = write(
        d.path(),
        "env",
        &kubeconfig(Some("b"), &[("b", Some("team-b"))]),
    );
    let env = env_with(&[("KUBECONFIG", env_file.to_str().unwrap())]);
    let ctx = resolve(
        &ConnectOptions {
            kubeconfig: Some(flag.clone()),
            ..opts()
        },
        &env,
    )
    .unwrap();
    assert_eq!(
        (ctx.context.as_str(), ctx.namespace.as_str()),
        ("a", "team-a")
    );
    assert_eq!(
        ctx.inferred.origin,
        NamespaceOrigin::KubeContext {
            context: "a".into(),
            file: flag
        }
    );
}

#[test]
fn a_missing_kubeconfig_flag_file_is_an_error() {
    let env = env_with(&[]);
    let e = resolve(
        &ConnectOptions {
            kubeconfig: Some("/nonexistent/kubeconfig".into()),
            ..opts()
        },
        &env,
    )
    .unwrap_err();
    assert_eq!(e.code, "nrl::k8s::kubeconfig");
    assert!(
        e.message.contains("/nonexistent/kubeconfig"),
        "{}",
        e.message
    );
}

#[test]
fn kubeconfig_files_merge_and_the_first_to_set_a_value_wins() {
    let d = tempfile::tempdir().unwrap();
    // The first file sets no current-context; the second does. Both define `shared`:
    // the first definition wins.
    let first = write(
        d.path(),
        "first",
        &kubeconfig(None, &[("shared", Some("from-first"))]),
    );
    let second = write(
        d.path(),
        "second",
        &kubeconfig(
            Some("shared"),
            &[("shared", Some("from-second")), ("only-second", Some("x"))],
        ),
    );
    let env = env_with(&[("KUBECONFIG", &joined(&[&first, &second]))]);
    let ctx = resolve(&opts(), &env).unwrap();
    assert_eq!(ctx.context, "shared");
    assert_eq!(ctx.namespace, "from-first");
    assert_eq!(
        ctx.inferred.origin,
        NamespaceOrigin::KubeContext {
            context: "shared".into(),
            file: first.clone()
        }
    );
    let ContextSource::Kubeconfig { files, .. } = &ctx.source else {
        panic!("expected kubeconfig source");
    };
    assert_eq!(files, &vec![first, second]);
}

#[test]
fn the_first_current_context_wins_the_merge() {
    let d = tempfile::tempdir().unwrap();
    let first = write(
        d.path(),
        "first",
        &kubeconfig(Some("one"), &[("one", Some("ns-one"))]),
    );
    let second = write(
        d.path(),
        "second",
        &kubeconfig(Some("two"), &[("two", Some("ns-two"))]),
    );
    let env = env_with(&[("KUBECONFIG", &joined(&[&first, &second]))]);
    let ctx = resolve(&opts(), &env).unwrap();
    assert_eq!(
        (ctx.context.as_str(), ctx.namespace.as_str()),
        ("one", "ns-one")
    );
    // Contexts of later files are still selectable.
    let ctx = resolve(
        &ConnectOptions {
            context: Some("two".into()),
            ..opts()
        },
        &env,
    )
    .unwrap();
    assert_eq!(ctx.namespace, "ns-two");
}

#[test]
fn kubeconfig_files_that_do_not_exist_are_skipped() {
    let d = tempfile::tempdir().unwrap();
    let real = write(
        d.path(),
        "real",
        &kubeconfig(Some("a"), &[("a", Some("team-a"))]),
    );
    let missing = d.path().join("missing");
    let env = env_with(&[("KUBECONFIG", &joined(&[&missing, &real]))]);
    let ctx = resolve(&opts(), &env).unwrap();
    assert_eq!(ctx.namespace, "team-a");
}

#[test]
fn no_kubeconfig_at_all_is_an_error_naming_what_was_tried() {
    let env = env_with(&[("KUBECONFIG", "/nonexistent/a:/nonexistent/b")]);
    let e = resolve(&opts(), &env).unwrap_err();
    assert_eq!(e.code, "nrl::k8s::config");
    assert!(
        e.message.contains("/nonexistent/a, /nonexistent/b"),
        "{}",
        e.message
    );
}

#[test]
fn without_kubeconfig_the_home_config_is_read() {
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        ".kube/config",
        &kubeconfig(Some("home"), &[("home", Some("from-home"))]),
    );
    let env = env_with(&[("HOME", d.path().to_str().unwrap())]);
    let ctx = resolve(&opts(), &env).unwrap();
    assert_eq!(
        (ctx.context.as_str(), ctx.namespace.as_str()),
        ("home", "from-home")
    );
}

#[test]
fn an_empty_kubeconfig_variable_means_the_home_config() {
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        ".kube/config",
        &kubeconfig(Some("home"), &[("home", Some("from-home"))]),
    );
    let env = env_with(&[("HOME", d.path().to_str().unwrap()), ("KUBECONFIG", "")]);
    assert_eq!(resolve(&opts(), &env).unwrap().namespace, "from-home");
}

#[test]
fn the_context_flag_beats_current_context() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "config",
        &kubeconfig(
            Some("dev"),
            &[("dev", Some("team-a")), ("prod", Some("team-p"))],
        ),
    );
    let env = env_with(&[("KUBECONFIG", f.to_str().unwrap())]);
    let ctx = resolve(
        &ConnectOptions {
            context: Some("prod".into()),
            ..opts()
        },
        &env,
    )
    .unwrap();
    assert_eq!(
        (ctx.context.as_str(), ctx.namespace.as_str()),
        ("prod", "team-p")
    );
}

#[test]
fn an_unknown_context_is_an_error_listing_the_known_ones() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "config",
        &kubeconfig(Some("dev"), &[("dev", None), ("prod", None)]),
    );
    let env = env_with(&[("KUBECONFIG", f.to_str().unwrap())]);
    let e = resolve(
        &ConnectOptions {
            context: Some("nope".into()),
            ..opts()
        },
        &env,
    )
    .unwrap_err();
    assert!(
        e.message.contains("context `nope` is not defined"),
        "{}",
        e.message
    );
    assert_eq!(e.help.as_deref(), Some("the contexts there: dev, prod"));
}

#[test]
fn no_current_context_and_no_flag_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "config", &kubeconfig(None, &[("dev", None)]));
    let env = env_with(&[("KUBECONFIG", f.to_str().unwrap())]);
    let e = resolve(&opts(), &env).unwrap_err();
    assert!(e.message.contains("no context selected"), "{}", e.message);
}

#[test]
fn a_context_without_a_namespace_means_default() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "config",
        &kubeconfig(Some("dev"), &[("dev", None)]),
    );
    let env = env_with(&[("KUBECONFIG", f.to_str().unwrap())]);
    let ctx = resolve(&opts(), &env).unwrap();
    assert_eq!(ctx.namespace, "default");
    assert_eq!(ctx.inferred, InferredNamespace::default());
}

#[test]
fn the_namespace_flag_beats_the_context_namespace() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "config",
        &kubeconfig(Some("dev"), &[("dev", Some("team-a"))]),
    );
    let env = env_with(&[("KUBECONFIG", f.to_str().unwrap())]);
    let ctx = resolve(
        &ConnectOptions {
            namespace: Some("mine".into()),
            ..opts()
        },
        &env,
    )
    .unwrap();
    assert_eq!(ctx.namespace, "mine");
    // What a recipe without a namespace would get is still the context's.
    assert_eq!(ctx.inferred.namespace, "team-a");
}

/// A pod: service variables, and a service-account directory with a token.
fn pod_env(dir: &Path, namespace_file: Option<&str>) -> MapEnv {
    let sa = dir.join("sa");
    write(&sa, "token", "t0ken");
    if let Some(ns) = namespace_file {
        write(&sa, "namespace", ns);
    }
    let mut env = env_with(&[
        ("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
        ("KUBERNETES_SERVICE_PORT", "443"),
    ]);
    env.sa_dir = Some(sa);
    env
}

#[test]
fn in_a_pod_the_service_account_is_used_with_its_namespace() {
    let d = tempfile::tempdir().unwrap();
    let env = pod_env(d.path(), Some("  from-sa\n"));
    let ctx = resolve(&opts(), &env).unwrap();
    assert!(ctx.in_cluster());
    assert_eq!(
        (ctx.context.as_str(), ctx.namespace.as_str()),
        ("in-cluster", "from-sa")
    );
    assert_eq!(
        ctx.inferred.origin,
        NamespaceOrigin::ServiceAccount(d.path().join("sa/namespace"))
    );
}

#[test]
fn in_a_pod_pod_namespace_comes_before_the_service_account_file() {
    let d = tempfile::tempdir().unwrap();
    let mut env = pod_env(d.path(), Some("from-sa"));
    env.set("POD_NAMESPACE", "from-env");
    let ctx = resolve(&opts(), &env).unwrap();
    assert_eq!(ctx.namespace, "from-env");
    assert_eq!(ctx.inferred.origin, NamespaceOrigin::PodNamespaceEnv);
}

#[test]
fn in_a_pod_without_a_namespace_file_the_namespace_is_default() {
    let d = tempfile::tempdir().unwrap();
    let env = pod_env(d.path(), None);
    let ctx = resolve(&opts(), &env).unwrap();
    assert!(ctx.in_cluster());
    assert_eq!(ctx.namespace, "default");
}

#[test]
fn in_a_pod_an_explicit_kubeconfig_or_context_wins() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "config",
        &kubeconfig(Some("dev"), &[("dev", Some("team-a"))]),
    );
    // KUBECONFIG
    let mut env = pod_env(d.path(), Some("from-sa"));
    env.set("KUBECONFIG", f.to_str().unwrap());
    let ctx = resolve(&opts(), &env).unwrap();
    assert!(!ctx.in_cluster());
    assert_eq!(ctx.namespace, "team-a");
    // --kubeconfig
    let env = pod_env(d.path(), Some("from-sa"));
    let ctx = resolve(
        &ConnectOptions {
            kubeconfig: Some(f.clone()),
            ..opts()
        },
        &env,
    )
    .unwrap();
    assert_eq!(ctx.namespace, "team-a");
    // --context (read from ~/.kube/config)
    let home = d.path().join("home");
    write(
        &home,
        ".kube/config",
        &kubeconfig(None, &[("dev", Some("home-ns"))]),
    );
    let mut env = pod_env(d.path(), Some("from-sa"));
    env.set("HOME", home.to_str().unwrap());
    let ctx = resolve(
        &ConnectOptions {
            context: Some("dev".into()),
            ..opts()
        },
        &env,
    )
    .unwrap();
    assert_eq!(ctx.namespace, "home-ns");
}

#[test]
fn service_variables_without_a_token_are_not_a_pod() {
    let d = tempfile::tempdir().unwrap();
    write(
        d.path(),
        "home/.kube/config",
        &kubeconfig(Some("dev"), &[("dev", Some("team-a"))]),
    );
    let mut env = env_with(&[
        ("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
        ("KUBERNETES_SERVICE_PORT", "443"),
        ("HOME", d.path().join("home").to_str().unwrap()),
    ]);
    env.sa_dir = Some(d.path().join("no-sa"));
    let ctx = resolve(&opts(), &env).unwrap();
    assert!(!ctx.in_cluster());
    assert_eq!(ctx.namespace, "team-a");
}

#[test]
fn inference_without_any_configuration_is_default_not_an_error() {
    let env = env_with(&[]);
    assert_eq!(
        inferred_namespace(&opts(), &env),
        InferredNamespace::default()
    );
}
