//! The owner guard: another user's objects are refused without --force, before anything
//! is changed.

use serde_json::json;

use super::common::*;

#[test]
fn another_users_cluster_is_refused_unless_forced() {
    let fake = FakeK8s::start();
    ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "gym", "--role", "training", "--no-wait"],
    ));
    fake.edit("ray.io/v1", "RayCluster", "default", "rc-train", |o| {
        o["metadata"]["labels"]["nrl-k8s/owner"] = json!("bob");
    });

    let err = fails(
        with_recipe(
            &fake,
            &["cluster", "up"],
            &["--role", "training", "--no-wait"],
        ),
        2,
    );
    assert!(
        err.contains(
            "RayCluster rc-train in namespace `default` is owned by 'bob' (you are 'alice')"
        ),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");

    // Down refuses before deleting anything, even the targets alice owns.
    fake.clear_request_log();
    let err = fails(
        with_recipe(
            &fake,
            &["cluster", "down"],
            &["--role", "gym", "--role", "training"],
        ),
        2,
    );
    assert!(err.contains("owned by 'bob'"), "{err}");
    assert!(fake.requests(|r| r.verb == "delete").is_empty());
    assert!(
        fake.get("ray.io/v1", "RayCluster", "default", "rc-gym")
            .is_some()
    );

    let (_, err) = ok(with_recipe(
        &fake,
        &["cluster", "down"],
        &["--role", "training", "--force"],
    ));
    assert!(
        err.contains("is owned by 'bob'; --force: acting anyway"),
        "{err}"
    );
    assert!(
        fake.get("ray.io/v1", "RayCluster", "default", "rc-train")
            .is_none()
    );

    // Another user running nrl sees alice's cluster as hers.
    let mut c = with_recipe(&fake, &["cluster", "down"], &["--role", "gym"]);
    c.env("NRL_USER", "carol");
    let err = fails(c, 2);
    assert!(err.contains("owned by 'alice' (you are 'carol')"), "{err}");
}

/// A cluster without the `nrl-k8s/owner` label (made by kubectl or another tool) is not
/// assumed to be the caller's: `cluster down` refuses it naming the label, unless --force
/// (issue 15 item 8).
#[test]
fn an_unlabelled_cluster_is_refused_naming_the_label_unless_forced() {
    let fake = FakeK8s::start();
    ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "training", "--no-wait"],
    ));
    fake.edit("ray.io/v1", "RayCluster", "default", "rc-train", |o| {
        if let Some(l) = o["metadata"]["labels"].as_object_mut() {
            l.remove("nrl-k8s/owner");
        }
    });
    fake.clear_request_log();
    let err = fails(
        with_recipe(&fake, &["cluster", "down"], &["--role", "training"]),
        2,
    );
    assert!(
        err.contains("RayCluster rc-train in namespace `default` has no `nrl-k8s/owner` label"),
        "{err}"
    );
    assert!(fake.requests(|r| r.verb == "delete").is_empty());
    let (_, err) = ok(with_recipe(
        &fake,
        &["cluster", "down"],
        &["--role", "training", "--force"],
    ));
    assert!(err.contains("no `nrl-k8s/owner` label; --force"), "{err}");
    assert!(
        fake.get("ray.io/v1", "RayCluster", "default", "rc-train")
            .is_none()
    );
}

/// `cluster down` deletes a role's DRA objects with its RayCluster: another user's DRA
/// object (a shared ComputeDomain, a claim template by the same name) is refused by the
/// same owner check, before anything is deleted (issue 15 item 8).
#[test]
fn down_refuses_another_users_dra_object_before_deleting_anything() {
    let fake = FakeK8s::start();
    ok(with_recipe(
        &fake,
        &["cluster", "up"],
        &["--role", "generation", "--no-wait"],
    ));
    let (av, kind, name) = (
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        "roce-rc-gen-generation",
    );
    fake.edit(av, kind, "default", name, |o| {
        o["metadata"]["labels"]["nrl-k8s/owner"] = json!("bob");
    });
    fake.clear_request_log();
    let err = fails(
        with_recipe(&fake, &["cluster", "down"], &["--role", "generation"]),
        2,
    );
    assert!(
        err.contains(
            "ResourceClaimTemplate roce-rc-gen-generation in namespace `default` is owned by 'bob' (you are 'alice')"
        ),
        "{err}"
    );
    assert!(fake.requests(|r| r.verb == "delete").is_empty());
    assert!(
        fake.get("ray.io/v1", "RayCluster", "default", "rc-gen")
            .is_some()
    );

    let (_, err) = ok(with_recipe(
        &fake,
        &["cluster", "down"],
        &["--role", "generation", "--force"],
    ));
    assert!(
        err.contains("ResourceClaimTemplate roce-rc-gen-generation in namespace `default` is owned by 'bob'; --force: acting anyway"),
        "{err}"
    );
    assert!(
        fake.get("ray.io/v1", "RayCluster", "default", "rc-gen")
            .is_none()
    );
}
