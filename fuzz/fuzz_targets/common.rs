//! What every target shares: each input's texts are forgotten after it (the source
//! registry would otherwise grow with every execution), and diagnostics are rendered,
//! since a report that panics is a crash too (issue 15 item 2).

// Each target uses part of this module.
#![allow(dead_code)]

use nrl::config::source::{forget_sources_since, source_count};
use nrl::diag::Diag;

/// Run `f` and forget the texts it registered.
pub fn scratch<R>(f: impl FnOnce() -> R) -> R {
    let mark = source_count();
    let out = f();
    forget_sources_since(mark);
    out
}

/// Render a diagnostic as `nrl` prints it, narrow and wide.
pub fn render(d: &Diag) {
    let _ = d.render(false, 60);
    let _ = d.render(true, 200);
}

/// Run `f` on the input as text, forgetting what it registered. Fuzzers hand over bytes;
/// nrl reads text (a file that is not UTF-8 is refused before any parser sees it).
pub fn on_text(data: &[u8], f: impl FnOnce(&str)) {
    if let Ok(text) = std::str::from_utf8(data) {
        scratch(|| f(text));
    }
}
