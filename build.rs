//! Link options of the `nrl` executable on Linux (DESIGN §6: `nrl check` under 5 ms and
//! 10 MiB). Only the binary is affected: the library, tests and benches link as before.
//!
//! Non-PIE: a PIE `nrl` carries ~57,000 relative relocations (1.4 MB of `.rela.dyn`,
//! mostly vtables and static string tables) that the dynamic loader applies at every
//! start, copying the ~930 KB `.data.rel.ro` it writes into private pages. That was a fifth
//! of the wall time of `nrl check --manifests-only` and ~2.5 MB of its peak RSS. A fixed
//! load address gives up ASLR for the executable image only (shared libraries, heap and
//! stack stay randomised); `DT_RELR` packing would keep PIE but needs glibc 2.36 on every
//! machine that runs nrl.
//!
//! Hot text first (release builds, x86_64): `link/hot_text.ld` lays the functions
//! `nrl check` runs out together. The kernel maps text in whole page-cache folios, so the
//! ~900 KB of code a check runs, scattered over the 21 MB `.text`, cost ~6-7 MB of RSS;
//! together they cost ~2 MB. See `link/gen_hot_text.py`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link/hot_text.ld");
    println!("cargo:rerun-if-env-changed=NRL_HOT_TEXT");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" {
        return;
    }
    println!("cargo:rustc-link-arg-bin=nrl=-no-pie");
    // `NRL_HOT_TEXT=0` builds without it, to profile for link/gen_hot_text.py (valgrind
    // does not attribute code in a second text section to the binary).
    let hot_text = var("NRL_HOT_TEXT") != "0";
    if hot_text && var("CARGO_CFG_TARGET_ARCH") == "x86_64" && var("PROFILE") == "release" {
        println!(
            "cargo:rustc-link-arg-bin=nrl=-Wl,-T,{}/link/hot_text.ld",
            var("CARGO_MANIFEST_DIR")
        );
    }
}
