//! Typed documents from spanned config trees: the machinery the infra schema
//! (`config::schema`) and the Gym submit config (`gym::config`) share.
//!
//! - Unknown keys are rejected at every level, with a did-you-mean.
//! - Strings are strict (an unquoted `2.52` in a string field is an error); ints and bools
//!   are lax (`"4"`, `4.0`, `yes`), as pydantic's lax mode is.
//! - Every field-level problem is reported into a [`Cx`]; a model is withheld when any of
//!   its fields failed, so cross-field rules only ever see valid fields.

pub(crate) mod check;
pub(crate) mod convert;
pub mod json_schema;
pub(crate) mod shape;

/// A string-valued enum of a schema.
pub trait StrEnum: Copy + Sized + 'static {
    /// Every accepted spelling, in declaration order (used in error messages).
    const VALUES: &'static [&'static str];
    fn as_str(self) -> &'static str;
    /// The variant spelled exactly `s`.
    fn parse(s: &str) -> Option<Self>;
}
