//! Connecting: kubeconfig contexts and namespaces, exec credential plugins, and the
//! banner mutating commands print.

use nrl::k8s::{ConnectOptions, K8s};

use super::common::*;

#[tokio::test]
async fn kubeconfig_context_and_namespace() {
    let fake = FakeK8s::start();
    let k8s = connect(&fake, None).await;
    assert_eq!(
        (k8s.context.as_str(), k8s.namespace.as_str()),
        ("fake", "default")
    );
    assert!(!k8s.in_cluster);
    assert_eq!(k8s.banner(), "context `fake`, namespace `default`");
    let other = K8s::connect(&ConnectOptions {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        namespace: Some("team-a".into()),
        context: Some("fake".into()),
        ..ConnectOptions::default()
    })
    .await
    .unwrap();
    assert_eq!(other.namespace, "team-a");
    let err = K8s::connect(&ConnectOptions {
        kubeconfig: Some(fake.kubeconfig_path().to_path_buf()),
        context: Some("nope".into()),
        ..ConnectOptions::default()
    })
    .await
    .unwrap_err();
    assert_eq!(err.code, "nrl::k8s::kubeconfig");
}

#[tokio::test]
async fn exec_credential_plugins_supply_the_token() {
    let fake = FakeK8s::start();
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("cred.sh");
    std::fs::write(
        &plugin,
        format!(
            "#!/bin/sh\necho '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"{TOKEN}\"}}}}'\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&plugin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let kubeconfig = dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1
kind: Config
clusters: [{{name: fake, cluster: {{server: \"{}\"}}}}]
users: [{{name: plugin, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1, command: \"{}\", interactiveMode: Never}}}}}}]
contexts: [{{name: via-plugin, context: {{cluster: fake, user: plugin, namespace: default}}}}]
current-context: via-plugin
",
            fake.url(),
            plugin.display()
        ),
    )
    .unwrap();
    let k8s = K8s::connect(&ConnectOptions {
        kubeconfig: Some(kubeconfig),
        ..ConnectOptions::default()
    })
    .await
    .unwrap();
    assert_eq!(k8s.context, "via-plugin");
    let cms = ar("ConfigMap");
    k8s.list(&cms, "default", None).await.unwrap();
    assert!(fake.request_log().iter().all(|r| r.status != 401));
}
