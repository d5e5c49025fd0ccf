//! Link the `nrl` executable as a position-dependent (non-PIE) binary on Linux.
//!
//! A PIE `nrl` carries ~57,000 relative relocations (1.4 MB of `.rela.dyn`, mostly vtables
//! and static string tables) that the dynamic loader applies at every start, copying the
//! ~930 KB `.data.rel.ro` it writes into private pages. That was a fifth of the wall time
//! of `nrl check --manifests-only` (DESIGN §6: under 5 ms) and ~2.5 MB of its peak RSS
//! (under 10 MiB). A fixed load address gives up ASLR for the executable image only
//! (shared libraries, heap and stack stay randomised); `DT_RELR` packing would keep PIE
//! but needs glibc 2.36 on every machine that runs nrl. Only the binary is affected: the
//! library, tests and benches link as before.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bin=nrl=-no-pie");
    }
}
