//! Fault injection, the request log, authentication and authorization.

use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

use super::common::*;

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_5xx_burst_is_answered_and_logged() {
    let (fake, client) = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    fake.fail_next(FaultMatch::verb("list", "configmaps"), 503, 3);
    let mut attempts = 0;
    let listed = loop {
        attempts += 1;
        match cms.list(&ListParams::default()).await {
            Ok(l) => break l,
            Err(kube::Error::Api(s)) => {
                assert_eq!((s.code, s.reason.as_str()), (503, "ServiceUnavailable"))
            }
            Err(e) => panic!("unexpected error {e}"),
        }
        assert!(attempts < 10, "the burst never ended");
    };
    assert!(listed.items.is_empty());
    let statuses: Vec<u16> = fake
        .requests(|r| r.verb == "list")
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [503, 503, 503, 200]);
    let r = &fake.request_log()[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("GET", "/api/v1/namespaces/default/configmaps")
    );
    assert!(!r.watch);
}

#[tokio::test]
async fn throttling_delays_and_hangs() {
    let fake = FakeK8s::start();
    let url = format!("{}/api/v1/namespaces/default/pods", fake.url());
    let auth = format!("Bearer {TOKEN}");
    fake.fail_next(FaultMatch::verb("list", "pods"), 429, 1);
    let r = http()
        .get(&url)
        .header("authorization", &auth)
        .header("user-agent", "nrl/0.1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    assert_eq!(fake.request_log()[0].user_agent.as_deref(), Some("nrl/0.1"));
    assert_eq!(r.headers()["retry-after"], "1");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["reason"], "TooManyRequests");

    fake.inject(
        FaultMatch::verb("list", "pods"),
        FaultAction::Delay(Duration::from_millis(300)),
        Some(1),
    );
    let t = Instant::now();
    assert!(
        http()
            .get(&url)
            .header("authorization", &auth)
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );
    assert!(t.elapsed() >= Duration::from_millis(300));

    fake.inject(
        FaultMatch::any().path_contains("/pods"),
        FaultAction::Hang,
        None,
    );
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let err = quick
        .get(&url)
        .header("authorization", &auth)
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout());
    assert_eq!(
        fake.request_log().last().unwrap().status,
        0,
        "a hung request has no status"
    );
    fake.clear_faults();
    assert!(
        http()
            .get(&url)
            .header("authorization", &auth)
            .send()
            .await
            .unwrap()
            .status()
            .is_success()
    );

    // Without the kubeconfig's token: 401.
    let r = http().get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 401);
}

#[tokio::test]
async fn denied_verbs_get_403_and_access_reviews_agree() {
    let (fake, client) = setup().await;
    fake.deny("create", "pods/exec", "default");
    fake.deny("list", "secrets", "*");
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let review = |verb: &str, resource: &str, sub: &str| {
        serde_json::from_value::<SelfSubjectAccessReview>(json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": "default", "verb": verb, "resource": resource, "subresource": sub}}
        }))
        .unwrap()
    };
    let allowed = |r: SelfSubjectAccessReview| r.status.unwrap().allowed;
    assert!(allowed(
        reviews
            .create(&PostParams::default(), &review("get", "pods", ""))
            .await
            .unwrap()
    ));
    assert!(!allowed(
        reviews
            .create(&PostParams::default(), &review("create", "pods", "exec"))
            .await
            .unwrap()
    ));
    assert!(!allowed(
        reviews
            .create(&PostParams::default(), &review("list", "secrets", ""))
            .await
            .unwrap()
    ));

    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(client.clone(), "default");
    let err = secrets.list(&ListParams::default()).await.unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("expected an API error")
    };
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "secrets is forbidden: User \"fake-user\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
    );

    let pods: Api<Pod> = Api::namespaced(client, "default");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}});
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(pod).unwrap(),
    )
    .await
    .unwrap();
    assert!(
        fake.wait_until(Duration::from_secs(3), |f| f.field(
            "v1",
            "Pod",
            "default",
            "p",
            "status.phase"
        ) == Some(json!("Running")))
            .await
    );
    let err = pods
        .exec("p", ["true"], &Default::default())
        .await
        .err()
        .expect("exec is forbidden");
    assert!(
        err.to_string().contains("403") || matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );
    fake.allow_all();
    assert!(secrets.list(&ListParams::default()).await.is_ok());
}

#[tokio::test]
async fn impersonation_is_authorized_and_then_acts_as_the_impersonated_user() {
    let (fake, _client) = setup().await;
    let sa = "system:serviceaccount:default:builder";
    fake.deny_as(sa, "list", "secrets", "default");
    let url = format!("{}/api/v1/namespaces/default/secrets", fake.url());
    let get = |who: Option<&str>| {
        let mut r = http().get(&url).bearer_auth(TOKEN);
        if let Some(u) = who {
            r = r.header("Impersonate-User", u);
        }
        r.send()
    };
    assert_eq!(
        get(None).await.unwrap().status().as_u16(),
        200,
        "the real user may"
    );
    let denied = get(Some(sa)).await.unwrap();
    assert_eq!(denied.status().as_u16(), 403, "the service account may not");
    let body: serde_json::Value = denied.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains(&format!("User \"{sa}\" cannot list"))
    );
    let logged = fake.requests(|r| r.impersonate.as_deref() == Some(sa));
    assert_eq!(logged.len(), 1);

    // Impersonating needs `impersonate` on the service account.
    fake.deny("impersonate", "serviceaccounts", "default");
    let refused = get(Some(sa)).await.unwrap();
    assert_eq!(refused.status().as_u16(), 403);
    let body: serde_json::Value = refused.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("User \"fake-user\" cannot impersonate resource \"serviceaccounts\""),
        "{body}"
    );
}
