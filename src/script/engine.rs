//! The one engine factory.

use std::sync::{Arc, OnceLock};

use rhai::packages::{Package, StandardPackage};
use rhai::{Dynamic, Engine, Module, Shared};

use super::builtins;
use super::errors::CANCELLED;
use super::host::{Host, HostRef};
use super::output::Stream;
use super::resolver::NrlResolver;

/// A sandboxed engine for one run of `host`: strict variables (undeclared names are
/// compile errors), reading a missing map property is an error, operation / call-depth /
/// expression-depth / size limits, cancellation through `on_progress`, `print` and
/// `debug` to the host's output, `import` through [`NrlResolver`], every built-in.
pub fn new_engine(host: &Arc<Host>) -> Engine {
    // `Engine::new()` minus its file resolver and stdout printing, with the standard
    // package and the built-in modules built once per process (they are immutable).
    let mut engine = Engine::new_raw();
    engine.set_max_strings_interned(256);
    engine.register_global_module(standard_package());
    configure(&mut engine, host);
    builtins::register_types(&mut engine);
    for (b, module) in builtins::BUILTINS.iter().zip(builtin_modules()) {
        if b.global {
            engine.register_global_module(module.clone());
        } else {
            engine.register_static_module(b.name, module.clone());
        }
    }
    // `sim::…` exists only where a simulated cluster answers (a test).
    if host.plan.is_simulated() {
        static SIM: OnceLock<Shared<Module>> = OnceLock::new();
        let sim = SIM.get_or_init(|| (builtins::SIM.build)().into());
        engine.register_static_module(builtins::SIM.name, sim.clone());
    }
    engine
}

fn standard_package() -> Shared<Module> {
    static STD: OnceLock<Shared<Module>> = OnceLock::new();
    STD.get_or_init(|| StandardPackage::new().as_shared_module())
        .clone()
}

/// The built-in modules, in [`builtins::BUILTINS`] order.
fn builtin_modules() -> &'static [Shared<Module>] {
    static MODULES: OnceLock<Vec<Shared<Module>>> = OnceLock::new();
    MODULES.get_or_init(|| {
        builtins::BUILTINS
            .iter()
            .map(|b| (b.build)().into())
            .collect()
    })
}

fn configure(engine: &mut Engine, host: &Arc<Host>) {
    let l = host.opts.limits;
    engine
        .set_strict_variables(true)
        .set_fail_on_invalid_map_property(true)
        .set_max_operations(l.max_operations)
        .set_max_call_levels(l.max_call_levels)
        .set_max_expr_depths(l.max_expr_depth, l.max_fn_expr_depth)
        .set_max_string_size(l.max_string_size)
        .set_max_array_size(l.max_array_size)
        .set_max_map_size(l.max_map_size)
        .set_max_modules(l.max_modules);

    // Through the slot, not a copy of today's token: a REPL renews it after Ctrl-C.
    let cancel = host.cancel_slot();
    engine.on_progress(move |_ops| {
        if cancel.is_cancelled() {
            Some(Dynamic::from(CANCELLED))
        } else {
            None
        }
    });

    let out = host.opts.output.clone();
    engine.on_print(move |text| {
        let mut line = String::with_capacity(text.len() + 1);
        line.push_str(text);
        line.push('\n');
        out.write(Stream::Stdout, &line);
    });
    let err = host.opts.output.clone();
    engine.on_debug(move |text, source, pos| {
        let at = match (source, pos.line()) {
            (Some(s), Some(l)) => format!("{s}:{l}: "),
            (None, Some(l)) => format!("line {l}: "),
            _ => String::new(),
        };
        err.write(Stream::Stderr, &format!("[debug] {at}{text}\n"));
    });

    engine.set_module_resolver(NrlResolver::new(host));
    engine.set_default_tag(Dynamic::from(HostRef(host.clone())));
}

/// An engine with the built-ins and no host, for metadata only (`--builtins`, docs):
/// every module is registered under its name so each function can be attributed.
pub fn metadata_engine() -> Engine {
    let mut engine = Engine::new_raw();
    builtins::register_types(&mut engine);
    for b in builtins::documented() {
        engine.register_static_module(b.name, (b.build)().into());
    }
    engine
}
