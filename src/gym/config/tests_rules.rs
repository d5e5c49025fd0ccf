//! Rules across models, including the ones the reference lacks (ref §7 #3, #4, #6, #7).

use crate::gym::testutil::{FIXTURE, VLLM, all_messages, load, load_err, try_load_from};

use super::{CODE_BENCH_NAME, CODE_COLLISION, CODE_GPUS, CODE_IDLE_GPUS, CODE_STARTUP};

const SECOND: &str =
    "services.judge={type: vllm, container: vllm/vllm-openai:v0.9.0, model: org/judge, port: 8001}";

#[test]
fn benchmark_names_must_fit_job_names() {
    let e = load_err(&[
        "driver.benchmarks.GPQA={}",
        "driver.benchmarks.bad_name_={}",
        "driver.benchmarks._x={}",
    ]);
    assert_eq!(e.code, CODE_BENCH_NAME);
    let all = all_messages(&e);
    assert!(all.contains("`GPQA`") && all.contains("`_x`"), "{all}");
    assert!(e.help.as_deref().unwrap_or("").contains("gpqa"));
}

// §7 #7: names that sanitise alike are refused before anything is applied.
#[test]
fn benchmark_label_collisions() {
    let text = FIXTURE.replace("    bench_a: {}", "    x.y: {}\n    x_y: {}");
    let e = try_load_from(&text, &[]).unwrap_err();
    assert_eq!(e.code, CODE_COLLISION);
    assert!(
        e.message.contains("`x.y` and `x_y`") && e.message.contains("`x-y`"),
        "{}",
        e.message
    );
    // Dotted names are keys, not paths: both entries are labelled.
    let labelled: Vec<String> = e.labels.iter().map(|l| l.span.text()).collect();
    assert_eq!(labelled, ["x_y", "x.y"]);
}

// §7 #6
#[test]
fn container_name_and_port_collisions() {
    let e = load_err(&[
        VLLM,
        "services.vllm-model={type: vllm, container: c, model: m, port: 8002}",
    ]);
    assert_eq!(e.code, CODE_COLLISION);
    assert!(
        e.message.contains("container named `vllm-model`"),
        "{}",
        e.message
    );
    let e = load_err(&["services.Driver={type: vllm, container: c, model: m}"]);
    assert!(
        e.message.contains("like the driver container"),
        "{}",
        e.message
    );
    let e = load_err(&[VLLM, "services.judge={type: vllm, container: c, model: m}"]);
    assert!(
        e.message.contains("both listen on port 8000"),
        "{}",
        e.message
    );
    assert!(e.help.as_deref().unwrap_or("").contains("port: 8001"));
    let e = load_err(&["services.___={type: vllm, container: c, model: m}"]);
    assert!(e.message.contains("no letters or digits"), "{}", e.message);
    load(&[VLLM, SECOND]);
}

// ref §1.7 rule 5: per service, with the reference's message.
#[test]
fn gpu_footprint_per_service() {
    let e = load_err(&[
        VLLM,
        "services.vllm_model.tensor_parallel_size=4",
        "services.vllm_model.number_of_instances=4",
        "compute.cluster.gpus_per_node=8",
    ]);
    assert_eq!(e.code, CODE_GPUS);
    assert!(
        e.message.contains("Service 'vllm_model' requires 16 GPUs (tensor_parallel_size=4 x pipeline_parallel_size=1 x number_of_instances=4), which exceeds the node pool's gpus_per_node (8) on compute 'cluster'"),
        "{}",
        e.message
    );
}

// §7 #4: summed over the pod's sidecars.
#[test]
fn gpu_total_across_sidecars() {
    let e = load_err(&[
        VLLM,
        SECOND,
        "services.vllm_model.tensor_parallel_size=8",
        "services.judge.tensor_parallel_size=8",
        "compute.cluster.gpus_per_node=8",
    ]);
    assert_eq!(e.code, CODE_GPUS);
    assert!(
        e.message
            .contains("together need 16 GPUs (vllm_model: 8, judge: 8)"),
        "{}",
        e.message
    );
    // Without gpus_per_node there is nothing to check against.
    load(&[
        VLLM,
        SECOND,
        "services.vllm_model.tensor_parallel_size=8",
        "services.judge.tensor_parallel_size=8",
    ]);
}

#[test]
fn idle_gpus_warn() {
    let l = load(&[
        VLLM,
        "services.vllm_model.tensor_parallel_size=2",
        "services.vllm_model.health_check.timeout_seconds=1200",
        "compute.cluster.gpus_per_node=8",
    ]);
    assert_eq!(l.warnings.len(), 1, "{:?}", l.warnings);
    let w = &l.warnings[0];
    assert_eq!(w.code, CODE_IDLE_GPUS);
    assert_eq!(w.severity, miette::Severity::Warning);
    assert!(
        w.message
            .contains("service `vllm_model` needs 2, leaving 6 GPU(s) idle"),
        "{}",
        w.message
    );
    let l = load(&[
        VLLM,
        SECOND,
        "services.vllm_model.health_check.timeout_seconds=1200",
        "services.judge.health_check.timeout_seconds=1200",
        "compute.cluster.gpus_per_node=4",
    ]);
    assert!(
        l.warnings[0]
            .message
            .contains("the services need 2 together (vllm_model: 1, judge: 1), leaving 2"),
        "{}",
        l.warnings[0].message
    );
    let l = load(&[
        VLLM,
        "services.vllm_model.health_check.timeout_seconds=1200",
        "compute.cluster.gpus_per_node=1",
    ]);
    assert!(l.warnings.is_empty());
}

// §7 #3
#[test]
fn short_startup_budget_warns() {
    let l = load(&[VLLM]);
    assert_eq!(l.warnings.len(), 1);
    assert_eq!(l.warnings[0].code, CODE_STARTUP);
    assert!(
        l.warnings[0].message.contains("gets 60 s to start"),
        "{}",
        l.warnings[0].message
    );
    let l = load(&[
        VLLM,
        "services.vllm_model.model=meta-llama/Llama-3.1-70B",
        "services.vllm_model.health_check.timeout_seconds=1200",
    ]);
    assert!(
        l.warnings[0].message.contains("~70B parameters")
            && l.warnings[0].message.contains("1400 s"),
        "{}",
        l.warnings[0].message
    );
    let l = load(&[VLLM, "services.vllm_model.health_check.timeout_seconds=300"]);
    assert!(l.warnings.is_empty());
}
