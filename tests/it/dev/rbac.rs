//! The access reviews before a dev pod is created.

use crate::support::dev_env::*;

const SA: &str = "system:serviceaccount:default:default";

#[test]
fn a_denied_review_prints_the_role_and_creates_nothing() {
    let env = DevEnv::new();
    env.fake.deny_as(SA, "create", "rayjobs", "default");
    env.fake.deny_as(SA, "get", "pods/log", "default");
    let r = run(env.nrl().args(["dev", "connect", "--", "true"]));
    assert_eq!(r.code, 3, "{r:?}");
    assert!(r.stderr.contains("service account `default` may not create rayjobs.ray.io, get pods/log in namespace `default`"), "{r:?}");
    // A least-privilege namespaced Role and its binding, ready for `kubectl apply -f -`.
    assert!(r.stdout.contains("kind: Role\n"), "{r:?}");
    assert!(r.stdout.contains("kind: RoleBinding\n"), "{r:?}");
    assert!(r.stdout.contains("namespace: default"), "{r:?}");
    assert!(
        !r.stdout.contains("ClusterRole") && !r.stdout.contains("aggregate"),
        "{r:?}"
    );
    assert!(env.pod().is_none());
    // Every review was asked as the service account, by impersonation.
    let reviews = env
        .fake
        .requests(|q| q.resource.as_deref() == Some("selfsubjectaccessreviews"));
    let as_sa = reviews
        .iter()
        .filter(|q| q.impersonate.as_deref() == Some(SA))
        .count();
    assert!(as_sa > 40, "one review per permission: {as_sa}");

    // --skip-rbac-check starts it anyway.
    let r = run(env
        .nrl()
        .args(["dev", "connect", "--skip-rbac-check", "--", "true"]));
    assert_eq!(r.code, 0, "{r:?}");
}

#[test]
fn the_printed_role_grants_exactly_what_was_reviewed() {
    let env = DevEnv::new();
    let r = run(env.nrl().args(["dev", "rbac", "-n", "team-a"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        env.fake.request_log().is_empty(),
        "printing the Role needs no cluster"
    );
    assert!(r.stdout.contains("name: nrl-dev-pod-default"), "{r:?}");
    assert!(r.stdout.contains("namespace: team-a"), "{r:?}");
    let r = run(env
        .nrl()
        .args(["dev", "rbac", "--service-account", "builder"]));
    assert!(r.stdout.contains("name: builder"), "{r:?}");
}

#[test]
fn when_impersonation_is_refused_connect_warns_and_goes_on() {
    let env = DevEnv::new();
    env.fake.deny("impersonate", "serviceaccounts", "*");
    let r = run(env.nrl().args(["dev", "connect", "--", "true"]));
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stderr
            .contains("warning: cannot check what the service account `default` may do"),
        "{r:?}"
    );
    assert!(env.pod().is_some());
}

#[test]
fn the_callers_own_missing_permissions_stop_connect_before_it_creates() {
    let env = DevEnv::new();
    env.fake.deny("create", "pods/exec", "default");
    let r = run(env.nrl().args(["dev", "connect", "--", "true"]));
    assert_eq!(r.code, 3, "{r:?}");
    assert!(
        r.stderr
            .contains("you may not create pods/exec in namespace `default`"),
        "{r:?}"
    );
    assert!(env.pod().is_none());
}
