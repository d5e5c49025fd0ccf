//! Injected mistakes: each gives the expected diagnostic, path and source location.

use super::tests::load_documents;
use super::{NAME, SCHEMA, SERVER_RULE, UNKNOWN_KIND, check_names, validate_all, validate_object};
use crate::config::node::{Node, Value};
use crate::diag::Diag;

/// A RayCluster as an infra file would render it, with one mistake of each kind.
const RAYCLUSTER: &str = r#"apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: alice-train
  namespace: nemo-rl
  labels:
    team: "a b"
    enabled: true
spec:
  rayVersion: 2.52.0
  headGroupSpec:
    rayStartParams: {}
    template:
      spec:
        serviceAccout: ray
        containers:
        - name: ray-head
          image: nvcr.io/x:y
          imagePullPolicy: Sometimes
          resources:
            limits:
              cpu: 0.5
  workerGroupSpecs:
  - groupName: gpu
    replicas: "four"
    minReplicas: 4
    maxReplicas: 4
    rayStartParams: {}
    template:
      spec:
        nodeSelecter:
          nodeGroup: gpu
        nodeSelector: null
        containers:
        - image: nvcr.io/x:y
          env:
          - name: X
            value: 0
        resourceClaims:
        - name: roce
          resourceClaimTemplateNmae: roce-alice
"#;

fn problems(name: &str, text: &str) -> Vec<Diag> {
    let docs = load_documents(name, text);
    assert_eq!(docs.len(), 1);
    validate_object(&docs[0])
}

/// The one problem whose message contains `needle`.
fn find<'d>(diags: &'d [Diag], needle: &str) -> &'d Diag {
    let hits: Vec<&Diag> = diags
        .iter()
        .filter(|d| d.message.contains(needle))
        .collect();
    match hits.as_slice() {
        [one] => one,
        _ => panic!(
            "expected one problem containing {needle:?}, found {}:\n{}",
            hits.len(),
            diags
                .iter()
                .map(|d| format!("  {}", d.message))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    }
}

fn help(d: &Diag) -> &str {
    d.help.as_deref().unwrap_or("")
}

#[test]
fn raycluster_reports_every_mistake_once() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let schema = diags.iter().filter(|d| d.code == SCHEMA).count();
    let names = diags.iter().filter(|d| d.code == NAME).count();
    let rules = diags.iter().filter(|d| d.code == SERVER_RULE).count();
    // label type, serviceAccout, imagePullPolicy, cpu, replicas, nodeSelecter, env value,
    // container name, resourceClaimTemplateNmae; the label value; and the misspelt claim
    // then names no source.
    assert_eq!((schema, names, rules), (9, 1, 1), "{diags:#?}");
}

#[test]
fn misspelt_node_selector_in_worker_template() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let d = find(
        &diags,
        "spec.workerGroupSpecs[0].template.spec.nodeSelecter",
    );
    assert_eq!(d.code, SCHEMA);
    assert_eq!(
        d.message,
        "RayCluster alice-train: spec.workerGroupSpecs[0].template.spec.nodeSelecter: unknown field"
    );
    assert_eq!(d.location().as_deref(), Some("infra.yaml:31:9"));
    assert!(
        help(d).starts_with("did you mean `nodeSelector`?"),
        "{}",
        help(d)
    );
    assert!(help(d).contains("silently drops"), "{}", help(d));
}

#[test]
fn quoted_word_where_an_integer_belongs() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let d = find(&diags, "spec.workerGroupSpecs[0].replicas");
    assert!(
        d.message
            .ends_with("expected integer, found string \"four\""),
        "{}",
        d.message
    );
    assert_eq!(d.location().as_deref(), Some("infra.yaml:25:15"));
    assert!(help(d).contains("whole number"), "{}", help(d));
}

#[test]
fn misspelt_resource_claim_template_name() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let d = find(&diags, "resourceClaims[0].resourceClaimTemplateNmae");
    assert_eq!(d.location().as_deref(), Some("infra.yaml:41:11"));
    assert!(help(d).starts_with("did you mean `resourceClaimTemplateName`?"));
}

#[test]
fn unknown_field_in_head_template() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let d = find(
        &diags,
        "spec.headGroupSpec.template.spec.serviceAccout: unknown field",
    );
    assert_eq!(d.location().as_deref(), Some("infra.yaml:15:9"));
    assert!(help(d).starts_with("did you mean `serviceAccount`?"));
}

#[test]
fn container_without_name() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let d = find(&diags, "missing required field `name`");
    assert!(
        d.message
            .contains("spec.workerGroupSpecs[0].template.spec.containers[0]:"),
        "{}",
        d.message
    );
    // The first key of the list item, since an item has no key of its own.
    assert_eq!(d.location().as_deref(), Some("infra.yaml:35:11"));
}

#[test]
fn image_pull_policy_enum_inside_a_crd_pod_template() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let d = find(&diags, "imagePullPolicy");
    assert!(d.message.ends_with("\"Sometimes\" is not an allowed value"));
    assert_eq!(d.location().as_deref(), Some("infra.yaml:19:28"));
    assert!(help(d).contains("`Always`, `Never`, `IfNotPresent`"));
}

#[test]
fn float_quantity_in_a_crd_must_be_quoted() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let d = find(&diags, "resources.limits.cpu");
    assert!(
        d.message
            .ends_with("expected integer or string, found number 0.5")
    );
    assert_eq!(d.location().as_deref(), Some("infra.yaml:22:20"));
    assert!(help(d).contains("`'0.5'`"), "{}", help(d));
}

#[test]
fn unquoted_values_where_strings_belong_mention_quoting() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let d = find(&diags, "env[0].value");
    assert_eq!(d.location().as_deref(), Some("infra.yaml:38:20"));
    assert!(
        help(d).starts_with("quote the value (`'0'`)"),
        "{}",
        help(d)
    );
    let d = find(&diags, "metadata.labels.enabled");
    assert!(help(d).contains("booleans"), "{}", help(d));
}

#[test]
fn invalid_label_value() {
    let diags = problems("infra.yaml", RAYCLUSTER);
    let d = find(&diags, "label value \"a b\"");
    assert_eq!(d.code, NAME);
    assert_eq!(d.location().as_deref(), Some("infra.yaml:7:11"));
    assert!(help(d).ends_with("e.g. `a-b`"), "{}", help(d));
}

#[test]
fn service_type_enum_with_suggestion() {
    let text = "apiVersion: v1\nkind: Service\nmetadata:\n  name: tools\nspec:\n  type: ClusterIp\n  ports:\n  - port: 6000\n    targetPort: http\n";
    let diags = problems("svc.yaml", text);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    let d = &diags[0];
    assert_eq!(
        d.message,
        "Service tools: spec.type: \"ClusterIp\" is not an allowed value"
    );
    assert_eq!(d.location().as_deref(), Some("svc.yaml:6:9"));
    assert!(
        help(d).starts_with("did you mean `ClusterIP`?"),
        "{}",
        help(d)
    );
}

#[test]
fn rayjob_name_of_48_characters() {
    let name = format!("alice-{}", "x".repeat(42));
    assert_eq!(name.len(), 48);
    let text = format!(
        "apiVersion: ray.io/v1\nkind: RayJob\nmetadata:\n  name: {name}\nspec:\n  entrypoint: python x.py\n"
    );
    let diags = problems("job.yaml", &text);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    let d = &diags[0];
    assert_eq!(d.code, NAME);
    assert!(
        d.message
            .ends_with("is 48 characters long, at most 47 allowed"),
        "{}",
        d.message
    );
    assert_eq!(d.location().as_deref(), Some("job.yaml:4:9"));
    assert!(
        help(d).contains("KubeRay derives other names from it"),
        "{}",
        help(d)
    );
    // 47 is fine.
    let ok = text.replacen(&name, &name[..47], 1);
    assert!(problems("job47.yaml", &ok).is_empty());
}

#[test]
fn raycluster_and_service_names_are_dns_1035_labels() {
    let text = "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: 1-Train\nspec:\n  headGroupSpec:\n    template: {}\n";
    let diags = problems("rc.yaml", text);
    let d = find(&diags, "name \"1-Train\"");
    assert_eq!(d.code, NAME);
    assert!(
        d.message.ends_with("contains an upper-case letter (`T`)"),
        "{}",
        d.message
    );
    assert!(help(d).ends_with("e.g. `train`"), "{}", help(d));
}

#[test]
fn label_and_annotation_keys_in_templates_and_selectors() {
    let text = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: tools
  annotations:
    "bad key!": x
spec:
  selector:
    matchLabels:
      app: tools
  template:
    metadata:
      labels:
        app: tools
        Example.com/x: y
    spec:
      nodeSelector:
        pool: "gpu pool"
      containers:
      - name: c
        image: i
"#;
    let docs = load_documents("dep.yaml", text);
    let diags = check_names(&docs[0]);
    assert_eq!(diags.len(), 3, "{diags:#?}");
    assert_eq!(
        find(&diags, "annotation key").location().as_deref(),
        Some("dep.yaml:6:5")
    );
    assert_eq!(
        find(&diags, "label key `Example.com/x`")
            .location()
            .as_deref(),
        Some("dep.yaml:15:9")
    );
    assert_eq!(
        find(&diags, "node selector value").location().as_deref(),
        Some("dep.yaml:18:15")
    );
}

#[test]
fn unknown_kind_and_version() {
    let diags = problems(
        "k.yaml",
        "apiVersion: ray.io/v1\nkind: RayClustr\nmetadata:\n  name: x\n",
    );
    let d = find(&diags, "no bundled schema");
    assert_eq!(d.code, UNKNOWN_KIND);
    assert_eq!(d.location().as_deref(), Some("k.yaml:2:7"));
    assert!(
        help(d).starts_with("did you mean `RayCluster`?"),
        "{}",
        help(d)
    );

    let diags = problems(
        "v.yaml",
        "apiVersion: ray.io/v1alpha1\nkind: RayJob\nmetadata:\n  name: x\n",
    );
    let d = find(&diags, "no bundled schema");
    assert_eq!(d.location().as_deref(), Some("v.yaml:1:13"));
    assert!(
        help(d).contains("use `apiVersion: ray.io/v1`"),
        "{}",
        help(d)
    );
}

#[test]
fn secret_data_must_be_base64_and_int32_in_range() {
    let text = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  token: not base64!\n  ok: aGVsbG8=\n";
    let diags = problems("secret.yaml", text);
    let d = find(&diags, "data.token: is not base64");
    assert!(help(d).contains("stringData"));
    assert_eq!(diags.len(), 1);

    let text = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports:\n  - port: 5000000000\n";
    let diags = problems("port.yaml", text);
    let d = find(&diags, "spec.ports[0].port");
    assert!(
        d.message.ends_with("does not fit a 32-bit integer"),
        "{}",
        d.message
    );
}

#[test]
fn crd_minimum_min_items_and_quantity_pattern() {
    let text = r#"apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: alice-job
spec:
  entrypoint: python train.py
  preRunningDeadlineSeconds: 0
  deletionStrategy:
    deletionRules: []
  submitterPodTemplate:
    spec:
      containers:
      - name: submit
        image: x
        resources:
          requests:
            memory: 10 GB
"#;
    let diags = problems("rayjob.yaml", text);
    assert_eq!(diags.len(), 3, "{diags:#?}");
    let d = find(&diags, "spec.preRunningDeadlineSeconds");
    assert!(
        d.message.ends_with("0 is below the minimum 1"),
        "{}",
        d.message
    );
    assert_eq!(d.location().as_deref(), Some("rayjob.yaml:7:30"));
    let d = find(&diags, "spec.deletionStrategy.deletionRules");
    assert!(
        d.message.ends_with("needs at least 1 item(s), has 0"),
        "{}",
        d.message
    );
    let d = find(&diags, "resources.requests.memory");
    assert!(
        d.message
            .ends_with("\"10 GB\" is not a Kubernetes quantity"),
        "{}",
        d.message
    );
    assert_eq!(d.location().as_deref(), Some("rayjob.yaml:17:21"));
}

#[test]
fn null_counts_as_missing_for_required_fields() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  nodeSelector: null\n  containers:\n  - name: null\n    image: x\n";
    let diags = problems("pod.yaml", text);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    let d = find(&diags, "spec.containers[0]: missing required field `name`");
    assert_eq!(d.location().as_deref(), Some("pod.yaml:8:5"));
}

#[test]
fn synthesised_values_point_at_the_nearest_spanned_ancestor() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: x\n";
    let mut doc = load_documents("cm.yaml", text).remove(0);
    // nrl adds a value of its own (no span) with the wrong type.
    let data = doc
        .get_mut("data")
        .and_then(Node::as_map_mut)
        .expect("data");
    data.insert("n".into(), Node::new(Value::Int(3)));
    let diags = validate_object(&doc);
    let d = find(&diags, "data.n: expected string");
    assert_eq!(d.location().as_deref(), Some("cm.yaml:6:3"));
    assert!(d.labels[0].text.ends_with("(inside this)"));
}

#[test]
fn validate_all_aggregates_with_the_first_leading() {
    let docs = load_documents("infra.yaml", RAYCLUSTER);
    let svc = load_documents(
        "svc.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  typo: 1\n",
    );
    let all = [docs[0].clone(), svc[0].clone()];
    let err = validate_all(&all).expect_err("problems");
    assert!(
        err.message.contains("metadata.labels.enabled"),
        "{}",
        err.message
    );
    assert_eq!(err.related.len(), 11);
    assert!(
        err.related
            .last()
            .is_some_and(|d| d.message.contains("spec.typo"))
    );
}

#[test]
fn node_selecter_diagnostic_snapshot() {
    let text = "apiVersion: ray.io/v1\nkind: RayCluster\nmetadata:\n  name: alice-ultra\nspec:\n  headGroupSpec:\n    template:\n      spec:\n        containers:\n        - name: ray-head\n          image: nvcr.io/nvidian/nemo-rl:nightly\n  workerGroupSpecs:\n  - groupName: gpu\n    replicas: 64\n    minReplicas: 64\n    maxReplicas: 64\n    template:\n      spec:\n        nodeSelecter:\n          nodeGroup: customer-gpu\n        containers:\n        - name: ray-worker\n          image: nvcr.io/nvidian/nemo-rl:nightly\n";
    let diags = problems("ultra_64n.infra.yaml", text);
    assert_eq!(diags.len(), 1, "{diags:#?}");
    insta::assert_snapshot!(diags[0].render(false, 80));
}
