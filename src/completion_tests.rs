use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::config::env::MapEnv;
use crate::launch::records::RunRecord;

/// A recipe whose keys come from two files (`defaults:`), and an infra file.
struct Files {
    dir: tempfile::TempDir,
}

const BASE: &str = "\
policy:
  model_name: tiny
  optimizer:
    name: adamw
    kwargs:
      lr: 1.0e-6
grpo:
  max_num_steps: 10
  num_prompts_per_step: 8
";

const RECIPE: &str = "\
defaults: base.yaml
grpo:
  max_num_steps: 3
logger:
  log_dir: logs
";

const INFRA: &str = "\
namespace: team-a
image: nvcr.io/nvidia/nemo-rl:latest
labels:
  kai.scheduler/queue: rl
kuberay:
  training:
    name: train
    spec:
      headGroupSpec: {}
deployments:
  vllm:
    name: vllm
    spec: {}
";

impl Files {
    fn new(infra: &str) -> Files {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("base.yaml"), BASE).unwrap();
        std::fs::write(dir.path().join("recipe.yaml"), RECIPE).unwrap();
        std::fs::write(dir.path().join("infra.yaml"), infra).unwrap();
        Files { dir }
    }

    fn path(&self, name: &str) -> std::path::PathBuf {
        self.dir.path().join(name)
    }

    fn env(&self) -> Arc<dyn Env> {
        Arc::new(MapEnv::new([
            ("HOME", &self.dir.path().display().to_string()),
            ("NRL_USER", "alice"),
        ]))
    }

    fn pair(&self) -> Pair {
        Pair {
            recipe: self.path("recipe.yaml"),
            infra: Some(self.path("infra.yaml")),
        }
    }

    fn keys(&self) -> KeySpace {
        KeySpace::load(&self.pair(), self.env()).expect("the pair loads")
    }
}

fn values(candidates: &[Candidate]) -> Vec<&str> {
    candidates.iter().map(|c| c.value.as_str()).collect()
}

#[test]
fn recipe_keys_complete_one_segment_at_a_time_across_the_defaults_chain() {
    let files = Files::new(INFRA);
    let keys = files.keys();
    // `policy` is only in the parent file.
    assert_eq!(values(&keys.complete("policy.opt")), ["policy.optimizer."]);
    assert_eq!(
        values(&keys.complete("policy.optimizer.")),
        ["policy.optimizer.name=", "policy.optimizer.kwargs."]
    );
    assert_eq!(
        values(&keys.complete("policy.optimizer.kwargs.")),
        ["policy.optimizer.kwargs.lr="]
    );
    // A key typed in full still gets its ending; the child's value is the one shown.
    let max = keys.complete("grpo.max_num_steps");
    assert_eq!(values(&max), ["grpo.max_num_steps="]);
    assert_eq!(max[0].help.as_deref(), Some("3"));
    assert_eq!(
        values(&keys.complete("")),
        ["policy.", "grpo.", "logger.", "infra."]
    );
    assert_eq!(values(&keys.complete("l")), ["logger."]);
    assert!(keys.complete("nope.").is_empty());
    assert!(keys.complete("grpo.max_num_steps.").is_empty());
}

#[test]
fn hydra_prefixes_are_kept_and_a_deletion_needs_no_value() {
    let keys = Files::new(INFRA).keys();
    assert_eq!(
        values(&keys.complete("+policy.opt")),
        ["+policy.optimizer."]
    );
    assert_eq!(
        values(&keys.complete("++grpo.num")),
        ["++grpo.num_prompts_per_step="]
    );
    assert_eq!(values(&keys.complete("~grpo.max")), ["~grpo.max_num_steps"]);
    assert_eq!(values(&keys.complete("~infra.lab")), ["~infra.labels."]);
}

#[test]
fn a_key_alone_has_no_equals_sign() {
    let keys = Files::new(INFRA).keys();
    assert_eq!(
        values(&keys.complete_key("grpo.max")),
        ["grpo.max_num_steps"]
    );
    assert_eq!(
        values(&keys.complete_key("infra.kuberay.tr")),
        ["infra.kuberay.training."]
    );
    assert_eq!(
        values(&keys.complete_key("infra.kuberay.training.n")),
        ["infra.kuberay.training.name"]
    );
}

#[test]
fn values_are_not_completed() {
    let keys = Files::new(INFRA).keys();
    assert!(keys.complete("grpo.max_num_steps=").is_empty());
    assert!(keys.complete("grpo.max_num_steps=4").is_empty());
}

#[test]
fn infra_keys_come_from_the_schema_and_the_loaded_infra() {
    let keys = Files::new(INFRA).keys();
    // A declared role has keys; an undeclared one is a value.
    assert_eq!(
        values(&keys.complete("infra.kuberay.")),
        [
            "infra.kuberay.training.",
            "infra.kuberay.generation=",
            "infra.kuberay.gym="
        ]
    );
    assert_eq!(
        values(&keys.complete("infra.kuberay.training.")),
        [
            "infra.kuberay.training.name=",
            "infra.kuberay.training.spec.",
            "infra.kuberay.training.labels.",
            "infra.kuberay.training.annotations.",
            "infra.kuberay.training.segmentSize=",
            "infra.kuberay.training.daemon=",
        ]
    );
    // Inside a free-form section: what the file wrote.
    assert_eq!(
        values(&keys.complete("infra.kuberay.training.spec.")),
        ["infra.kuberay.training.spec.headGroupSpec."]
    );
    // Defaults of the schema are there without being written.
    assert_eq!(values(&keys.complete("infra.sch")), ["infra.scheduler."]);
    assert_eq!(
        values(&keys.complete("infra.scheduler.")),
        ["infra.scheduler.kind=", "infra.scheduler.queue="]
    );
    // A section the file leaves out (the dev pod's) is still a section.
    assert_eq!(values(&keys.complete("infra.dev")), ["infra.dev."]);
    let ns = keys.complete("infra.namespace");
    assert_eq!(values(&ns), ["infra.namespace="]);
    assert_eq!(ns[0].help.as_deref(), Some("team-a"));
}

#[test]
fn a_key_with_a_dot_is_bracketed() {
    let keys = Files::new(INFRA).keys();
    assert_eq!(
        values(&keys.complete("infra.labels.")),
        ["infra.labels['kai.scheduler/queue']="]
    );
    assert_eq!(
        values(&keys.complete("infra.labels['kai")),
        ["infra.labels['kai.scheduler/queue']="]
    );
    assert_eq!(parent_of("a.b['x.y'].c"), "a.b['x.y']");
    assert_eq!(parent_of("labels['k.a"), "labels");
    assert_eq!(parent_of("top"), "");
}

#[test]
fn an_infra_that_does_not_validate_still_offers_the_recipe_and_the_schema() {
    let files = Files::new("namespace: team-a\nimage: 5\nkuberay: {training: {name: x}}\n");
    let keys = files.keys();
    assert_eq!(values(&keys.complete("policy.opt")), ["policy.optimizer."]);
    assert_eq!(values(&keys.complete("infra.sch")), ["infra.scheduler."]);
    assert_eq!(
        values(&keys.complete("infra.kuberay.")),
        [
            "infra.kuberay.training=",
            "infra.kuberay.generation=",
            "infra.kuberay.gym="
        ]
    );
}

#[test]
fn a_recipe_that_does_not_load_offers_nothing() {
    let files = Files::new(INFRA);
    let missing = Pair {
        recipe: files.path("missing.yaml"),
        infra: None,
    };
    assert!(KeySpace::load(&missing, files.env()).is_none());
    std::fs::write(files.path("broken.yaml"), "policy: [unclosed\n").unwrap();
    let broken = Pair {
        recipe: files.path("broken.yaml"),
        infra: None,
    };
    assert!(KeySpace::load(&broken, files.env()).is_none());
}

#[test]
fn targets_and_roles_are_the_declared_ones() {
    let files = Files::new(INFRA);
    let cfg = files.pair().load(files.env()).unwrap();
    assert_eq!(
        values(&targets(&cfg.infra, "")),
        ["kuberay.training", "deployments.vllm"]
    );
    assert_eq!(values(&targets(&cfg.infra, "dep")), ["deployments.vllm"]);
    assert_eq!(values(&roles(Some(&cfg.infra), "")), ["training"]);
    assert_eq!(values(&roles(None, "g")), ["generation", "gym"]);
}

#[test]
fn run_ids_are_the_records_newest_first_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let store = RunStore::new(dir.path().join("runs"));
    for (id, kind, at) in [
        ("grpo-1", RunKind::Local, "2026-01-01T10:00:00Z"),
        ("grpo-2", RunKind::Rayjob, "2026-01-02T10:00:00Z"),
        ("gym-1", RunKind::Gym, "2026-01-03T10:00:00Z"),
        ("sft-1", RunKind::Ray, "2026-01-04T10:00:00Z"),
    ] {
        let mut record = RunRecord::new(id, kind);
        record.created_at = at.to_string();
        record.recipe = Some("/r/grpo.yaml".into());
        store.save(&record).unwrap();
    }
    let all = run_ids(&store, Runs::Launches, "");
    assert_eq!(values(&all), ["sft-1", "grpo-2", "grpo-1"]);
    assert_eq!(all[1].help.as_deref(), Some("rayjob, running, grpo.yaml"));
    assert_eq!(
        values(&run_ids(&store, Runs::Launches, "gr")),
        ["grpo-2", "grpo-1"]
    );
    assert_eq!(values(&run_ids(&store, Runs::Gym, "")), ["gym-1"]);
    let empty = RunStore::new(dir.path().join("none"));
    assert!(run_ids(&empty, Runs::Launches, "").is_empty());
}

#[test]
fn contexts_are_the_kubeconfigs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config");
    std::fs::write(
        &file,
        "apiVersion: v1\nkind: Config\ncurrent-context: lab\n\
         clusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]\n\
         users: [{name: u, user: {}}]\n\
         contexts:\n\
         - {name: lab, context: {cluster: c, user: u, namespace: team-a}}\n\
         - {name: prod, context: {cluster: c, user: u}}\n",
    )
    .unwrap();
    let env = MapEnv::new([("KUBECONFIG", &file.display().to_string())]);
    let all = contexts(None, &env, "");
    assert_eq!(values(&all), ["lab", "prod"]);
    assert_eq!(all[0].help.as_deref(), Some("namespace team-a"));
    assert_eq!(
        values(&contexts(Some(&file), &MapEnv::new([]), "p")),
        ["prod"]
    );
    assert!(contexts(Some(Path::new("/nonexistent/kubeconfig")), &env, "").is_empty());
}

#[test]
fn gym_config_keys_follow_its_defaults_chain_and_have_no_infra() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("base.yaml"),
        "driver:\n  container: python:3.12\n  benchmarks:\n    gpqa: {run: {num_repeats: 4}}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("gym.yaml"),
        "defaults: base.yaml\ncompute:\n  cluster: {namespace: evals}\n",
    )
    .unwrap();
    let keys = KeySpace::gym(&dir.path().join("gym.yaml")).unwrap();
    assert_eq!(values(&keys.complete("")), ["driver.", "compute."]);
    assert_eq!(
        values(&keys.complete("driver.benchmarks.gpqa.run.")),
        ["driver.benchmarks.gpqa.run.num_repeats="]
    );
    assert!(keys.complete("infra.").is_empty());
    assert!(KeySpace::gym(&dir.path().join("missing.yaml")).is_none());
}
