//! The built-in modules scripts see. Each is a Rhai plugin module (`#[export_module]`)
//! whose doc comments and parameter names feed the metadata behind
//! `nrl script --builtins` (and, later, REPL completion).
//!
//! `util`, `data`, `interact` and `config`/`render` functions are global (`sleep(1)`,
//! `recipe(path)`, `cfg.manifests()`); `k8s`, `ray`, `launch` and `gym` are namespaced
//! (`k8s::get(…)`, `ray::dashboard(…)`, `launch::rayjob(…)`). Methods and properties of
//! the handle types are global whatever their module.

use rhai::{Engine, Module, exported_module};

pub mod cli;
pub mod cluster;
mod cluster_io;
mod cluster_plan;
pub mod config;
pub mod data;
pub mod dev;
pub mod doctor;
pub mod gym;
mod gym_run;
pub mod interact;
pub mod k8s;
pub mod k8s_wait;
pub mod launch;
pub mod options;
pub mod ray;
pub mod render;
pub mod run;
pub mod sim;
pub mod stream;
pub mod testing;
pub mod top;
pub mod util;

/// One built-in module.
pub struct Builtin {
    pub name: &'static str,
    /// One line for `--builtins`.
    pub about: &'static str,
    /// Functions are called without a `name::` prefix.
    pub global: bool,
    pub build: fn() -> Module,
}

/// Every built-in module, in the order `--builtins` lists them.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "util",
        about: "environment, files under the working directory, time, sleep, log lines, plan mode, exit",
        global: true,
        build: || exported_module!(util::util_module),
    },
    Builtin {
        name: "cli",
        about: "a playbook's declared arguments: cli(#{…}) with flag, string, int, float, file, path, list, overrides, positional",
        global: true,
        build: || exported_module!(cli::cli_module),
    },
    Builtin {
        name: "data",
        about: "regular expressions, JSON and YAML in and out, tables",
        global: true,
        build: || exported_module!(data::data_module),
    },
    Builtin {
        name: "interact",
        about: "prompt and confirm, shell commands, progress",
        global: true,
        build: || exported_module!(interact::interact_module),
    },
    Builtin {
        name: "testing",
        about: "assertions (assert, assert_eq, assert_planned, planned) and run_script, for `nrl script test`",
        global: true,
        build: || exported_module!(testing::testing_module),
    },
    Builtin {
        name: "config",
        about: "load a recipe + infra pair; get, set, override, explain, the resolved view",
        global: true,
        build: || exported_module!(config::config_module),
    },
    Builtin {
        name: "render",
        about: "the manifests of a Config, offline validation, the RayJob of a run",
        global: true,
        build: || exported_module!(render::render_module),
    },
    Builtin {
        name: "k8s",
        about: "the cluster: get, list, apply, delete, wait, logs, exec, port-forward",
        global: false,
        build: || exported_module!(k8s::k8s_module),
    },
    Builtin {
        name: "ray",
        about: "a Ray dashboard: submit, status, logs, tail, follow, stop, list, wait",
        global: false,
        build: || exported_module!(ray::ray_module),
    },
    Builtin {
        name: "launch",
        about: "ephemeral RayJob runs: launch, wait, follow the driver log",
        global: false,
        build: || exported_module!(launch::launch_module),
    },
    Builtin {
        name: "cluster",
        about: "long-lived RayClusters and Deployments: up, down, list, status, dashboard, logs",
        global: false,
        build: || exported_module!(cluster::cluster_module),
    },
    Builtin {
        name: "dev",
        about: "your dev pod: describe it, set its secrets, sync code into it, run commands, stop it",
        global: false,
        build: || exported_module!(dev::dev_module),
    },
    Builtin {
        name: "doctor",
        about: "the launch playbook's rules: offline checks, cluster preflight, your own findings, reports",
        global: false,
        build: || exported_module!(doctor::doctor_module),
    },
    Builtin {
        name: "diagnose",
        about: "what went wrong with a launched run (pods, events, nodes, RayJob state, driver log), as findings",
        global: false,
        build: || exported_module!(doctor::diagnose_module),
    },
    Builtin {
        name: "run",
        about: "runs here or on a Ray dashboard (nrl run --local / --ray-address) and their records",
        global: false,
        build: || exported_module!(run::run_module),
    },
    Builtin {
        name: "gym",
        about: "NeMo Gym benchmark runs as Kubernetes Jobs: load, submit, attach, status, wait, logs, cancel",
        global: false,
        build: || exported_module!(gym::gym_module),
    },
    Builtin {
        name: "top",
        about: "what `nrl top` shows, as data: your runs, the selected run's pods, events, log and training progress",
        global: false,
        build: || exported_module!(top::top_module),
    },
];

/// The `sim` module: registered only on the engines of `nrl script test` (and listed
/// by `--builtins` after [`BUILTINS`]).
pub const SIM: Builtin = Builtin {
    name: "sim",
    about: "only in `nrl script test`: script the simulated cluster a test's plan reads (objects, how jobs end, logs, env)",
    global: false,
    build: || exported_module!(sim::sim_module),
};

/// The modules `--builtins` documents: every one a script has, then the test-only ones.
pub fn documented() -> impl Iterator<Item = &'static Builtin> {
    BUILTINS.iter().chain(std::iter::once(&SIM))
}

/// Give the handle types their script names (`type_of(cfg) == "Config"`).
pub fn register_types(engine: &mut Engine) {
    engine
        .register_type_with_name::<config::Config>("Config")
        .register_type_with_name::<render::Manifest>("Manifest")
        .register_type_with_name::<ray::Dashboard>("Dashboard")
        .register_type_with_name::<ray::Submission>("Submission")
        .register_type_with_name::<launch::RayJob>("RayJob")
        .register_type_with_name::<cluster::Cluster>("Cluster")
        .register_type_with_name::<run::Run>("Run")
        .register_type_with_name::<crate::config::source::Span>("Span")
        .register_type_with_name::<gym::GymConfig>("GymConfig")
        .register_type_with_name::<gym::GymRun>("GymRun")
        .register_type_with_name::<k8s::PortForward>("PortForward")
        .register_type_with_name::<interact::Progress>("Progress")
        .register_type_with_name::<crate::script::declared::Arg>("Arg")
        .register_type_with_name::<crate::script::errors::ScriptError>("Error");
}
