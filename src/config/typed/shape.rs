//! `shape!`: the keys of a hand-read model (the Gym submit config's sections) declared once,
//! as a table that gives both the [`Shape`] its reader opens (the keys it accepts, with
//! did-you-mean) and its JSON Schema (each key's type, default, doc and whether it is
//! required). A key cannot be accepted without being in the schema, or the reverse.
//!
//! ```text
//! shape! {
//!     /// Doc of the model.
//!     pub(super) const NAME: "Title", fn name_schema(cx) {
//!         /// Doc of the key.
//!         "key" mode: schema_expr;
//!         ...
//!     }
//!     [sections [("key", OTHER_SHAPE), ...]]
//! }
//! ```
//!
//! - `mode`: `req` (required), `opt` (may be absent or null: the schema also takes null)
//!   or `or(default)` (absent is `default`, a JSON value; the reader's default, checked
//!   against it by the Gym tests).
//! - `Title`: the name of the model's definition in the schema (`$defs/Title`).
//! - `schema_expr`: a [`serde_json::Value`], built with the helpers of
//!   [`json_schema`](super::json_schema); `cx` (named by the table) is the
//!   [`SchemaCx`](super::json_schema::SchemaCx), for references to other models.
//!
//! [`Shape`]: super::check::Shape

macro_rules! shape {
    (@default or($default:tt)) => {
        Some(serde_json::json!($default))
    };
    (@default $mode:ident) => {
        None
    };
    (@value opt, $schema:expr) => {
        $crate::config::typed::json_schema::nullable($schema)
    };
    (@value $mode:ident, $schema:expr) => {
        $schema
    };
    (@required req) => {
        true
    };
    (@required $mode:ident) => {
        false
    };
    (
        $(#[doc = $doc:literal])*
        $vis:vis const $name:ident: $title:literal, fn $schema_fn:ident($cx:ident) {
            $(
                $(#[doc = $fdoc:literal])*
                $key:literal $mode:ident $(($default:tt))?: $schema:expr;
            )*
        }
        $(sections [$( ($skey:literal, $sshape:path) ),* $(,)?])?
    ) => {
        $(#[doc = $doc])*
        $vis const $name: $crate::config::typed::check::Shape = $crate::config::typed::check::Shape {
            fields: &[$($key),*],
            sections: &[$($( ($skey, &$sshape) ),*)?],
        };

        $(#[doc = $doc])*
        ///
        /// Its JSON Schema: a reference to its definition.
        $vis fn $schema_fn(
            $cx: &mut $crate::config::typed::json_schema::SchemaCx,
        ) -> serde_json::Value {
            $cx.reference($title, |$cx| {
                let fields = vec![$(
                    $crate::config::typed::json_schema::FieldSchema {
                        key: $key,
                        doc: &[$($fdoc),*],
                        schema: $crate::config::typed::shape::shape!(@value $mode, $schema),
                        default: $crate::config::typed::shape::shape!(@default $mode $(($default))?),
                        required: $crate::config::typed::shape::shape!(@required $mode),
                    },
                )*];
                $crate::config::typed::json_schema::object_schema($cx, &[$($doc),*], fields)
            })
        }
    };
}

pub(crate) use shape;
