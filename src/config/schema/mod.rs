//! The typed infra schema: the merged, interpolation-resolved `infra` mapping validated
//! into [`InfraConfig`] with the reference's semantics (ref-nrl-k8s-config-render §2).
//!
//! - Unknown keys are rejected at every level, with a did-you-mean.
//! - Schema strings are stripped; strings are strict (an unquoted `2.52` in a string
//!   field is an error), ints and bools are lax (`"4"`, `4.0`, `yes`).
//! - Enums are exact; null is accepted only where a field is optional.
//! - Every field-level problem is reported, in one [`Diag`] whose `related` holds the rest;
//!   a model's cross-field rules run only when its fields are valid, first failure wins.
//!
//! nrl departs from the reference in two places: OmegaConf's `???` marker left in a typed
//! field is reported as a missing mandatory value instead of being accepted as text; and
//! an optional `dev:` section configures the dev pod (see [`DevSpec`]), absent from
//! `to_node` unless the config sets it.

mod declare;
mod dev;
mod dump;
mod enums;
pub mod json;
mod models;
mod parse;

#[cfg(test)]
mod test_dev;
#[cfg(test)]
mod test_policy;
#[cfg(test)]
mod test_reference;
#[cfg(test)]
mod test_round_trip;
#[cfg(test)]
mod test_schema;

pub use dev::{DEV_COMPONENT_LABEL, DevResources, DevSpec};
pub use enums::*;
pub use models::*;

use crate::config::node::Node;
use crate::diag::{Diag, Result};

/// Validate the resolved infra mapping. The loader fills `namespace` before calling this;
/// here a missing namespace is an ordinary required-field error.
pub fn validate(infra: &Node) -> Result<InfraConfig> {
    let mut cx = crate::config::typed::check::Cx::default();
    let cfg = models::infra(&mut cx, infra, &crate::config::typed::check::Path::ROOT);
    match cfg {
        Some(cfg) if cx.errors.is_empty() => Ok(cfg),
        _ => Err(report(cx.errors)),
    }
}

/// All problems as one diagnostic: the first leads, the others are related.
fn report(errors: Vec<Diag>) -> Diag {
    let more = errors.len().saturating_sub(1);
    match Diag::aggregate(errors) {
        Some(d) if more > 0 => d.note(format!(
            "{more} more infra problem{} listed below",
            if more == 1 { " is" } else { "s are" }
        )),
        Some(d) => d,
        // A model is only withheld after a reported problem; keep a sane error anyway.
        None => Diag::new(
            crate::config::typed::check::TYPE,
            "the infra config is invalid",
        ),
    }
}
